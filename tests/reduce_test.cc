#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/dtype.h"
#include "core/reduce.h"

namespace mw {
namespace {

template <typename T>
std::vector<T> reduce(DType dt, RedOp op, const std::vector<T>& a,
                      const std::vector<T>& b) {
  std::vector<T> c(a.size());
  ReduceFn fn = reduceFunction(dt, op);
  EXPECT_NE(fn, nullptr);
  fn(c.data(), a.data(), b.data(), a.size());
  return c;
}

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

bool isHalfNaN(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }
bool isBf16NaN(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0; }

// ---------------------------------------------------------------- metadata

TEST(DType, Metadata) {
  const size_t sizes[kNumDTypes] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
  const char* names[kNumDTypes] = {"int8",    "uint8",    "int32",   "uint32",
                                   "int64",   "uint64",   "float16", "bfloat16",
                                   "float32", "float64"};
  for (int d = 0; d < kNumDTypes; ++d) {
    EXPECT_EQ(dtypeSize(static_cast<DType>(d)), sizes[d]);
    EXPECT_STREQ(dtypeName(static_cast<DType>(d)), names[d]);
    EXPECT_TRUE(isValidDType(d));
  }
  EXPECT_FALSE(isValidDType(-1));
  EXPECT_FALSE(isValidDType(kNumDTypes));
  const char* ops[kNumRedOps] = {"sum", "prod", "min", "max", "avg"};
  for (int o = 0; o < kNumRedOps; ++o) {
    EXPECT_STREQ(redopName(static_cast<RedOp>(o)), ops[o]);
    EXPECT_TRUE(isValidRedOp(o));
  }
  EXPECT_FALSE(isValidRedOp(-1));
  EXPECT_FALSE(isValidRedOp(kNumRedOps));
  EXPECT_EQ(static_cast<int>(DType::Float64), 9);
  EXPECT_EQ(static_cast<int>(RedOp::Avg), 4);
}

TEST(Reduce, TableComplete) {
  for (int d = 0; d < kNumDTypes; ++d)
    for (int o = 0; o < kNumRedOps; ++o)
      EXPECT_NE(reduceFunction(static_cast<DType>(d), static_cast<RedOp>(o)), nullptr);
  EXPECT_EQ(reduceFunction(static_cast<DType>(kNumDTypes), RedOp::Sum), nullptr);
  EXPECT_EQ(reduceFunction(DType::Int8, static_cast<RedOp>(kNumRedOps)), nullptr);
}

// ---------------------------------------------------------------- integers

TEST(Reduce, Int8) {
  using V = std::vector<int8_t>;
  V a = {100, -128, 16, -7, 3};
  V b = {100, -1, 16, 5, -3};
  EXPECT_EQ(reduce(DType::Int8, RedOp::Sum, a, b), (V{-56, 127, 32, -2, 0}));
  EXPECT_EQ(reduce(DType::Int8, RedOp::Prod, a, b), (V{16, -128, 0, -35, -9}));
  EXPECT_EQ(reduce(DType::Int8, RedOp::Min, a, b), (V{100, -128, 16, -7, -3}));
  EXPECT_EQ(reduce(DType::Int8, RedOp::Max, a, b), (V{100, -1, 16, 5, 3}));
  V s = reduce(DType::Int8, RedOp::Avg, a, b);
  EXPECT_EQ(s, (V{-56, 127, 32, -2, 0}));
  divideInPlace(s.data(), s.size(), DType::Int8, 2);
  EXPECT_EQ(s, (V{-28, 63, 16, -1, 0}));
  V big = {-128, 127, 100};
  divideInPlace(big.data(), big.size(), DType::Int8, 200);
  EXPECT_EQ(big, (V{0, 0, 0}));
}

TEST(Reduce, UInt8) {
  using V = std::vector<uint8_t>;
  V a = {200, 16, 255, 0, 7};
  V b = {100, 17, 255, 9, 3};
  EXPECT_EQ(reduce(DType::UInt8, RedOp::Sum, a, b), (V{44, 33, 254, 9, 10}));
  EXPECT_EQ(reduce(DType::UInt8, RedOp::Prod, a, b), (V{32, 16, 1, 0, 21}));
  EXPECT_EQ(reduce(DType::UInt8, RedOp::Min, a, b), (V{100, 16, 255, 0, 3}));
  EXPECT_EQ(reduce(DType::UInt8, RedOp::Max, a, b), (V{200, 17, 255, 9, 7}));
  V s = reduce(DType::UInt8, RedOp::Avg, a, b);
  divideInPlace(s.data(), s.size(), DType::UInt8, 3);
  EXPECT_EQ(s, (V{14, 11, 84, 3, 3}));
}

TEST(Reduce, Int32) {
  using V = std::vector<int32_t>;
  const int32_t mx = std::numeric_limits<int32_t>::max();
  const int32_t mn = std::numeric_limits<int32_t>::min();
  V a = {mx, 65536, -7, mn, 46341};
  V b = {1, 65536, 0, -1, 46341};
  EXPECT_EQ(reduce(DType::Int32, RedOp::Sum, a, b), (V{mn, 131072, -7, mx, 92682}));
  // 46341^2 = 2147488281 wraps to 2147488281 - 2^32.
  EXPECT_EQ(reduce(DType::Int32, RedOp::Prod, a, b), (V{mx, 0, 0, mn, -2147479015}));
  EXPECT_EQ(reduce(DType::Int32, RedOp::Min, a, b), (V{1, 65536, -7, mn, 46341}));
  EXPECT_EQ(reduce(DType::Int32, RedOp::Max, a, b), (V{mx, 65536, 0, -1, 46341}));
  V s = reduce(DType::Int32, RedOp::Avg, a, b);
  divideInPlace(s.data(), s.size(), DType::Int32, 2);
  EXPECT_EQ(s, (V{mn / 2, 65536, -3, mx / 2, 46341}));
  V t = {-7, 7, -1, 1};
  divideInPlace(t.data(), t.size(), DType::Int32, 2);
  EXPECT_EQ(t, (V{-3, 3, 0, 0}));
}

TEST(Reduce, UInt32) {
  using V = std::vector<uint32_t>;
  V a = {0xFFFFFFFFu, 0x10000u, 5u, 0u};
  V b = {2u, 0x10000u, 3u, 0xFFFFFFFFu};
  EXPECT_EQ(reduce(DType::UInt32, RedOp::Sum, a, b), (V{1u, 0x20000u, 8u, 0xFFFFFFFFu}));
  EXPECT_EQ(reduce(DType::UInt32, RedOp::Prod, a, b), (V{0xFFFFFFFEu, 0u, 15u, 0u}));
  EXPECT_EQ(reduce(DType::UInt32, RedOp::Min, a, b), (V{2u, 0x10000u, 3u, 0u}));
  EXPECT_EQ(reduce(DType::UInt32, RedOp::Max, a, b), (V{0xFFFFFFFFu, 0x10000u, 5u, 0xFFFFFFFFu}));
  V s = {0xFFFFFFFFu, 7u};
  divideInPlace(s.data(), s.size(), DType::UInt32, 2);
  EXPECT_EQ(s, (V{0x7FFFFFFFu, 3u}));
}

TEST(Reduce, Int64) {
  using V = std::vector<int64_t>;
  const int64_t mx = std::numeric_limits<int64_t>::max();
  const int64_t mn = std::numeric_limits<int64_t>::min();
  V a = {-5, mx, int64_t(1) << 32, -3000000000LL, mn};
  V b = {3, 1, int64_t(1) << 32, -2, -1};
  EXPECT_EQ(reduce(DType::Int64, RedOp::Sum, a, b), (V{-2, mn, int64_t(1) << 33, -3000000002LL, mx}));
  EXPECT_EQ(reduce(DType::Int64, RedOp::Prod, a, b), (V{-15, mx, 0, 6000000000LL, mn}));
  EXPECT_EQ(reduce(DType::Int64, RedOp::Min, a, b), (V{-5, 1, int64_t(1) << 32, -3000000000LL, mn}));
  EXPECT_EQ(reduce(DType::Int64, RedOp::Max, a, b), (V{3, mx, int64_t(1) << 32, -2, -1}));
  V s = {-7, 7, -3000000001LL};
  divideInPlace(s.data(), s.size(), DType::Int64, 2);
  EXPECT_EQ(s, (V{-3, 3, -1500000000LL}));
}

TEST(Reduce, UInt64) {
  using V = std::vector<uint64_t>;
  const uint64_t mx = std::numeric_limits<uint64_t>::max();
  V a = {mx, uint64_t(1) << 32, 10, 0};
  V b = {1, uint64_t(1) << 32, 20, mx};
  EXPECT_EQ(reduce(DType::UInt64, RedOp::Sum, a, b), (V{0, uint64_t(1) << 33, 30, mx}));
  EXPECT_EQ(reduce(DType::UInt64, RedOp::Prod, a, b), (V{mx, 0, 200, 0}));
  EXPECT_EQ(reduce(DType::UInt64, RedOp::Min, a, b), (V{1, uint64_t(1) << 32, 10, 0}));
  EXPECT_EQ(reduce(DType::UInt64, RedOp::Max, a, b), (V{mx, uint64_t(1) << 32, 20, mx}));
  V s = {mx, 9};
  divideInPlace(s.data(), s.size(), DType::UInt64, 4);
  EXPECT_EQ(s, (V{mx / 4, 2}));
}

// ------------------------------------------------------------------ floats

template <typename T>
void checkNativeFloat(DType dt) {
  using V = std::vector<T>;
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const T inf = std::numeric_limits<T>::infinity();
  V a = {1.5, -2, 0.25, inf, 3};
  V b = {2.5, 4, -0.5, 1, -inf};
  EXPECT_EQ(reduce(dt, RedOp::Sum, a, b), (V{4, 2, -0.25, inf, -inf}));
  EXPECT_EQ(reduce(dt, RedOp::Prod, a, b), (V{3.75, -8, -0.125, inf, -inf}));
  EXPECT_EQ(reduce(dt, RedOp::Min, a, b), (V{1.5, -2, -0.5, 1, -inf}));
  EXPECT_EQ(reduce(dt, RedOp::Max, a, b), (V{2.5, 4, 0.25, inf, 3}));
  V s = reduce(dt, RedOp::Avg, a, b);
  divideInPlace(s.data(), s.size(), dt, 4);
  EXPECT_EQ(s, (V{1, 0.5, -0.0625, inf, -inf}));

  V na = {nan, 1, nan};
  V nb = {1, nan, nan};
  for (RedOp op : {RedOp::Sum, RedOp::Prod, RedOp::Min, RedOp::Max, RedOp::Avg}) {
    V c = reduce(dt, op, na, nb);
    for (size_t i = 0; i < c.size(); ++i)
      EXPECT_TRUE(std::isnan(c[i])) << redopName(op) << " " << i;
  }
}

TEST(Reduce, Float32) { checkNativeFloat<float>(DType::Float32); }
TEST(Reduce, Float64) { checkNativeFloat<double>(DType::Float64); }

// ---------------------------------------------------------------- float16

TEST(Half, KnownBits) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(floatToHalf(2.0f), 0x4000);
  EXPECT_EQ(floatToHalf(3.0f), 0x4200);
  EXPECT_EQ(floatToHalf(-2.0f), 0xC000);
  EXPECT_EQ(floatToHalf(0.0f), 0x0000);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(0.1f), 0x2E66);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65519.0f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7C00);  // tie rounds to even -> inf
  EXPECT_EQ(floatToHalf(1e10f), 0x7C00);
  EXPECT_EQ(floatToHalf(-1e10f), 0xFC00);
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(floatToHalf(-std::numeric_limits<float>::infinity()), 0xFC00);
  EXPECT_TRUE(isHalfNaN(floatToHalf(std::numeric_limits<float>::quiet_NaN())));
  // A NaN whose payload lies only in bits dropped by the conversion.
  EXPECT_TRUE(isHalfNaN(floatToHalf(floatOf(0x7F800001u))));
  EXPECT_TRUE(isHalfNaN(floatToHalf(floatOf(0xFF800001u))));

  EXPECT_EQ(halfToFloat(0x3C00), 1.0f);
  EXPECT_EQ(halfToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(halfToFloat(0x2E66), 0.0999755859375f);
  EXPECT_EQ(bitsOf(halfToFloat(0x8000)), 0x80000000u);
  EXPECT_EQ(halfToFloat(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(halfToFloat(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(halfToFloat(0x7E00)));
  EXPECT_TRUE(std::isnan(halfToFloat(0x7C01)));

  // 1 + 2^-11 is a tie between 1 and 1 + 2^-10: even wins.
  EXPECT_EQ(floatToHalf(1.0f + 0.00048828125f), 0x3C00);
  // (1 + 2^-10) + 2^-11 ties to 1 + 2^-9.
  EXPECT_EQ(floatToHalf(1.0f + 0.0009765625f + 0.00048828125f), 0x3C02);
}

TEST(Half, Subnormals) {
  const float tiny = std::ldexp(1.0f, -24);
  EXPECT_EQ(halfToFloat(0x0001), tiny);
  EXPECT_EQ(floatToHalf(tiny), 0x0001);
  EXPECT_EQ(floatToHalf(-tiny), 0x8001);
  EXPECT_EQ(halfToFloat(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_EQ(floatToHalf(std::ldexp(1023.0f, -24)), 0x03FF);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -14)), 0x0400);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);  // tie -> even 0
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25) * 1.0001f), 0x0001);
  EXPECT_EQ(floatToHalf(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 units -> 2
  EXPECT_EQ(floatToHalf(std::ldexp(5.0f, -25)), 0x0002);  // 2.5 units -> 2
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -30)), 0x0000);
  EXPECT_EQ(floatToHalf(std::ldexp(2047.0f, -25)), 0x0400);  // rounds up to normal
}

TEST(Half, RoundTripAllValues) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const uint16_t v = static_cast<uint16_t>(h);
    if (isHalfNaN(v)) {
      EXPECT_TRUE(isHalfNaN(floatToHalf(halfToFloat(v)))) << h;
    } else {
      EXPECT_EQ(floatToHalf(halfToFloat(v)), v) << h;
    }
  }
}

#if defined(__FLT16_MAX__) && (defined(__x86_64__) || defined(__aarch64__))
// Cross-check against the compiler's own _Float16 conversion.
TEST(Half, MatchesCompilerFloat16) {
  std::mt19937 rng(12345);
  for (int i = 0; i < 200000; ++i) {
    uint32_t bits = rng();
    // Bias towards the half range so most samples are interesting.
    if (i % 2 == 0) bits = (bits & 0x807FFFFFu) | ((100u + rng() % 48u) << 23);
    const float f = floatOf(bits);
    if (std::isnan(f)) continue;
    const _Float16 ref = static_cast<_Float16>(f);
    uint16_t refBits;
    std::memcpy(&refBits, &ref, sizeof refBits);
    ASSERT_EQ(floatToHalf(f), refBits) << std::hex << bits;
  }
}
#endif

TEST(Reduce, Float16) {
  using V = std::vector<uint16_t>;
  // 1+2, 65504+65504, -0.5+0.25, 0x0001+0x0001, inf+1
  V a = {0x3C00, 0x7BFF, 0xB800, 0x0001, 0x7C00};
  V b = {0x4000, 0x7BFF, 0x3400, 0x0001, 0x3C00};
  EXPECT_EQ(reduce(DType::Float16, RedOp::Sum, a, b), (V{0x4200, 0x7C00, 0xB400, 0x0002, 0x7C00}));
  // 2, inf (overflow), -0.125, 0 (underflow, 2^-48), inf
  EXPECT_EQ(reduce(DType::Float16, RedOp::Prod, a, b), (V{0x4000, 0x7C00, 0xB000, 0x0000, 0x7C00}));
  EXPECT_EQ(reduce(DType::Float16, RedOp::Min, a, b), (V{0x3C00, 0x7BFF, 0xB800, 0x0001, 0x3C00}));
  EXPECT_EQ(reduce(DType::Float16, RedOp::Max, a, b), (V{0x4000, 0x7BFF, 0x3400, 0x0001, 0x7C00}));

  // 0x2E66 + 0x3266 = 0.0999755859375 + 0.199951171875 = 0.2999267578125,
  // exactly halfway between 0x34CC (0.2998046875) and 0x34CD: even wins.
  EXPECT_EQ(reduce(DType::Float16, RedOp::Sum, V{0x2E66}, V{0x3266}), (V{0x34CC}));

  V s = reduce(DType::Float16, RedOp::Avg, V{0x3C00, 0x4000, 0x0001}, V{0x4000, 0x4000, 0x0000});
  EXPECT_EQ(s, (V{0x4200, 0x4400, 0x0001}));
  divideInPlace(s.data(), s.size(), DType::Float16, 2);
  // 3/2 = 1.5, 4/2 = 2, 2^-24 / 2 ties to 0.
  EXPECT_EQ(s, (V{0x3E00, 0x4000, 0x0000}));

  V na = {0x7E00, 0x3C00, 0x7C01};
  V nb = {0x3C00, 0xFE00, 0x7C00};
  for (RedOp op : {RedOp::Sum, RedOp::Prod, RedOp::Min, RedOp::Max, RedOp::Avg}) {
    V c = reduce(DType::Float16, op, na, nb);
    for (size_t i = 0; i < c.size(); ++i) EXPECT_TRUE(isHalfNaN(c[i])) << redopName(op) << " " << i;
  }
}

// --------------------------------------------------------------- bfloat16

TEST(BFloat16, KnownBits) {
  EXPECT_EQ(floatToBfloat16(1.0f), 0x3F80);
  EXPECT_EQ(floatToBfloat16(-2.0f), 0xC000);
  EXPECT_EQ(floatToBfloat16(3.0f), 0x4040);
  EXPECT_EQ(floatToBfloat16(floatOf(0x3F808000u)), 0x3F80);  // tie -> even down
  EXPECT_EQ(floatToBfloat16(floatOf(0x3F818000u)), 0x3F82);  // tie -> even up
  EXPECT_EQ(floatToBfloat16(floatOf(0x3F808001u)), 0x3F81);
  EXPECT_EQ(floatToBfloat16(floatOf(0x3F807FFFu)), 0x3F80);
  EXPECT_EQ(floatToBfloat16(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(floatToBfloat16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(floatToBfloat16(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_EQ(floatToBfloat16(floatOf(0x00000001u)), 0x0000);  // float subnormal
  EXPECT_EQ(floatToBfloat16(floatOf(0x00018000u)), 0x0002);
  EXPECT_TRUE(isBf16NaN(floatToBfloat16(std::numeric_limits<float>::quiet_NaN())));
  const uint16_t sn = floatToBfloat16(floatOf(0x7F800001u));
  EXPECT_TRUE(isBf16NaN(sn));
  EXPECT_NE(sn & 0x0040, 0);  // quiet
  EXPECT_TRUE(isBf16NaN(floatToBfloat16(floatOf(0xFFFFFFFFu))));

  EXPECT_EQ(bfloat16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(bfloat16ToFloat(0xC000), -2.0f);
  EXPECT_EQ(bfloat16ToFloat(0x7F80), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(bfloat16ToFloat(0x7FC0)));
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const uint16_t v = static_cast<uint16_t>(b);
    if (isBf16NaN(v)) {
      EXPECT_TRUE(isBf16NaN(floatToBfloat16(bfloat16ToFloat(v))));
    } else {
      EXPECT_EQ(floatToBfloat16(bfloat16ToFloat(v)), v);
    }
  }
}

TEST(Reduce, BFloat16) {
  using V = std::vector<uint16_t>;
  // 1+2, 1+2^-8 (tie, down), (1+2^-7)+2^-8 (tie, up), max+max, -1+0.5
  V a = {0x3F80, 0x3F80, 0x3F81, 0x7F7F, 0xBF80};
  V b = {0x4000, 0x3B80, 0x3B80, 0x7F7F, 0x3F00};
  EXPECT_EQ(reduce(DType::BFloat16, RedOp::Sum, a, b), (V{0x4040, 0x3F80, 0x3F82, 0x7F80, 0xBF00}));
  EXPECT_EQ(reduce(DType::BFloat16, RedOp::Prod, a, b), (V{0x4000, 0x3B80, 0x3B81, 0x7F80, 0xBF00}));
  EXPECT_EQ(reduce(DType::BFloat16, RedOp::Min, a, b), (V{0x3F80, 0x3B80, 0x3B80, 0x7F7F, 0xBF80}));
  EXPECT_EQ(reduce(DType::BFloat16, RedOp::Max, a, b), (V{0x4000, 0x3F80, 0x3F81, 0x7F7F, 0x3F00}));
  V s = reduce(DType::BFloat16, RedOp::Avg, V{0x3F80, 0x4040}, V{0x4000, 0x4040});
  EXPECT_EQ(s, (V{0x4040, 0x40C0}));
  divideInPlace(s.data(), s.size(), DType::BFloat16, 4);
  EXPECT_EQ(s, (V{0x3F40, 0x3FC0}));  // 0.75, 1.5

  V na = {0x7FC0, 0x3F80};
  V nb = {0x3F80, 0xFFC0};
  for (RedOp op : {RedOp::Sum, RedOp::Prod, RedOp::Min, RedOp::Max, RedOp::Avg}) {
    V c = reduce(DType::BFloat16, op, na, nb);
    for (size_t i = 0; i < c.size(); ++i) EXPECT_TRUE(isBf16NaN(c[i])) << redopName(op) << " " << i;
  }
}

// ---------------------------------------------- aliasing, n = 0, alignment

// Deterministic byte patterns that are valid, non-NaN values for every dtype
// (floats get a bounded exponent so Prod stays finite and comparable).
std::vector<unsigned char> makeInput(DType dt, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  const size_t sz = dtypeSize(dt);
  std::vector<unsigned char> out(n * sz);
  for (size_t i = 0; i < n; ++i) {
    unsigned char* p = out.data() + i * sz;
    switch (dt) {
      case DType::Float16: {
        const uint16_t v = floatToHalf(static_cast<float>(static_cast<int>(rng() % 200) - 100) / 8.0f);
        std::memcpy(p, &v, 2);
        break;
      }
      case DType::BFloat16: {
        const uint16_t v = floatToBfloat16(static_cast<float>(static_cast<int>(rng() % 200) - 100) / 8.0f);
        std::memcpy(p, &v, 2);
        break;
      }
      case DType::Float32: {
        const float v = static_cast<float>(static_cast<int>(rng() % 2000) - 1000) / 7.0f;
        std::memcpy(p, &v, 4);
        break;
      }
      case DType::Float64: {
        const double v = static_cast<double>(static_cast<int>(rng() % 2000) - 1000) / 7.0;
        std::memcpy(p, &v, 8);
        break;
      }
      default:
        for (size_t k = 0; k < sz; ++k) p[k] = static_cast<unsigned char>(rng());
    }
  }
  return out;
}

TEST(Reduce, AliasingAndUnaligned) {
  const size_t n = 203;  // several 64-byte blocks for every dtype plus a tail
  for (int d = 0; d < kNumDTypes; ++d) {
    const DType dt = static_cast<DType>(d);
    const size_t bytes = n * dtypeSize(dt);
    const auto a = makeInput(dt, n, 1u + static_cast<uint32_t>(d));
    const auto b = makeInput(dt, n, 100u + static_cast<uint32_t>(d));
    for (int o = 0; o < kNumRedOps; ++o) {
      const RedOp op = static_cast<RedOp>(o);
      ReduceFn fn = reduceFunction(dt, op);
      SCOPED_TRACE(std::string(dtypeName(dt)) + " " + redopName(op));

      std::vector<unsigned char> ref(bytes);
      fn(ref.data(), a.data(), b.data(), n);

      std::vector<unsigned char> ca = a;  // c == a
      fn(ca.data(), ca.data(), b.data(), n);
      EXPECT_EQ(ca, ref);

      std::vector<unsigned char> cb = b;  // c == b
      fn(cb.data(), a.data(), cb.data(), n);
      EXPECT_EQ(cb, ref);

      // All three buffers offset by one byte from an aligned base.
      std::vector<unsigned char> ua(bytes + 1), ub(bytes + 1), uc(bytes + 1);
      std::memcpy(ua.data() + 1, a.data(), bytes);
      std::memcpy(ub.data() + 1, b.data(), bytes);
      fn(uc.data() + 1, ua.data() + 1, ub.data() + 1, n);
      EXPECT_EQ(0, std::memcmp(uc.data() + 1, ref.data(), bytes));

      // Unaligned and aliased at once.
      fn(ua.data() + 1, ua.data() + 1, ub.data() + 1, n);
      EXPECT_EQ(0, std::memcmp(ua.data() + 1, ref.data(), bytes));

      // divideInPlace on an unaligned buffer matches the aligned result.
      std::vector<unsigned char> da = ref;
      divideInPlace(da.data(), n, dt, 3);
      std::vector<unsigned char> du(bytes + 1);
      std::memcpy(du.data() + 1, ref.data(), bytes);
      divideInPlace(du.data() + 1, n, dt, 3);
      EXPECT_EQ(0, std::memcmp(du.data() + 1, da.data(), bytes));
    }
  }
}

// Long enough to run the blocked (vectorised) loops; expected values are
// computed element by element here.
template <typename T, typename F>
void checkLong(DType dt, RedOp op, F expect) {
  const size_t n = 203;
  std::vector<T> a(n), b(n), want(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = static_cast<T>(static_cast<int>(i * 37 % 251) - 125);
    b[i] = static_cast<T>(static_cast<int>(i * 91 % 241) - 120);
    want[i] = expect(a[i], b[i]);
  }
  SCOPED_TRACE(std::string(dtypeName(dt)) + " " + redopName(op));
  EXPECT_EQ(reduce(dt, op, a, b), want);
  std::vector<T> c = a;
  reduceFunction(dt, op)(c.data(), c.data(), b.data(), n);
  EXPECT_EQ(c, want);
  c = b;
  reduceFunction(dt, op)(c.data(), a.data(), c.data(), n);
  EXPECT_EQ(c, want);
}

template <typename T>
void checkLongAllOps(DType dt) {
  checkLong<T>(dt, RedOp::Sum, [](T x, T y) { return static_cast<T>(x + y); });
  checkLong<T>(dt, RedOp::Avg, [](T x, T y) { return static_cast<T>(x + y); });
  checkLong<T>(dt, RedOp::Prod, [](T x, T y) { return static_cast<T>(x * y); });
  checkLong<T>(dt, RedOp::Min, [](T x, T y) { return x < y ? x : y; });
  checkLong<T>(dt, RedOp::Max, [](T x, T y) { return x > y ? x : y; });
}

TEST(Reduce, LongVectors) {
  checkLongAllOps<int32_t>(DType::Int32);
  checkLongAllOps<int64_t>(DType::Int64);
  checkLongAllOps<float>(DType::Float32);
  checkLongAllOps<double>(DType::Float64);
  // 8-bit: compute the expectation wide, then wrap explicitly.
  checkLong<int8_t>(DType::Int8, RedOp::Sum, [](int8_t x, int8_t y) {
    int v = (x + y) & 0xFF;
    return static_cast<int8_t>(v >= 128 ? v - 256 : v);
  });
  checkLong<int8_t>(DType::Int8, RedOp::Prod, [](int8_t x, int8_t y) {
    int v = (x * y) & 0xFF;
    return static_cast<int8_t>(v >= 128 ? v - 256 : v);
  });
  checkLong<int8_t>(DType::Int8, RedOp::Max, [](int8_t x, int8_t y) { return x > y ? x : y; });
  checkLong<uint8_t>(DType::UInt8, RedOp::Sum,
                     [](uint8_t x, uint8_t y) { return static_cast<uint8_t>((x + y) % 256); });
  checkLong<uint8_t>(DType::UInt8, RedOp::Min, [](uint8_t x, uint8_t y) { return x < y ? x : y; });
}

TEST(Reduce, ZeroLengthDoesNothing) {
  for (int d = 0; d < kNumDTypes; ++d) {
    const DType dt = static_cast<DType>(d);
    for (int o = 0; o < kNumRedOps; ++o) {
      std::vector<unsigned char> a(16, 0x11), b(16, 0x22), c(16, 0xAB);
      reduceFunction(dt, static_cast<RedOp>(o))(c.data(), a.data(), b.data(), 0);
      EXPECT_EQ(c, std::vector<unsigned char>(16, 0xAB));
    }
    std::vector<unsigned char> buf(16, 0x33);
    divideInPlace(buf.data(), 0, dt, 2);
    EXPECT_EQ(buf, std::vector<unsigned char>(16, 0x33));
  }
}

TEST(Reduce, DivideByOneIsIdentity) {
  std::vector<int32_t> v = {-7, 0, 7, std::numeric_limits<int32_t>::min()};
  const auto before = v;
  divideInPlace(v.data(), v.size(), DType::Int32, 1);
  EXPECT_EQ(v, before);
}

}  // namespace
}  // namespace mw
