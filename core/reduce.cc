#include "core/reduce.h"

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace mw {

namespace {

// memcpy loads/stores: buffers may be unaligned, and the compiler lowers
// these to plain (vectorisable) moves.
template <typename T>
inline T load(const unsigned char* p, size_t i) noexcept {
  T v;
  std::memcpy(&v, p + i * sizeof(T), sizeof(T));
  return v;
}

template <typename T>
inline void store(unsigned char* p, size_t i, T v) noexcept {
  std::memcpy(p + i * sizeof(T), &v, sizeof(T));
}

// Integer sum/product wrap modulo 2^bits: computing in the unsigned type
// avoids signed-overflow UB. Types narrower than int are promoted first;
// their products still fit in int (255 * 255), so no UB there either.
template <typename T>
struct SumOp {
  static T apply(T a, T b) noexcept {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    } else {
      return a + b;
    }
  }
};

template <typename T>
struct ProdOp {
  static T apply(T a, T b) noexcept {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    } else {
      return a * b;
    }
  }
};

// For floats a NaN in either operand must propagate; a plain comparison
// would silently pick the other operand when `a` is NaN. This particular
// shape (select, then NaN-check b) is the one GCC -O2 vectorises for double.
template <typename T>
struct MinOp {
  static T apply(T a, T b) noexcept {
    if constexpr (std::is_floating_point_v<T>) {
      const T r = b < a ? b : a;
      return b != b ? b : r;
    } else {
      return a < b ? a : b;
    }
  }
};

template <typename T>
struct MaxOp {
  static T apply(T a, T b) noexcept {
    if constexpr (std::is_floating_point_v<T>) {
      const T r = b > a ? b : a;
      return b != b ? b : r;
    } else {
      return a > b ? a : b;
    }
  }
};

bool disjoint(const void* p, const void* q, size_t bytes) noexcept {
  const auto x = reinterpret_cast<uintptr_t>(p);
  const auto y = reinterpret_cast<uintptr_t>(q);
  return x + bytes <= y || y + bytes <= x;
}

// Two things keep these loops vectorised at plain -O2 (GCC's "very cheap"
// cost model): __restrict parameters, so no runtime alias check is needed,
// and fixed-size inner blocks, so the vector body needs no epilogue. run()
// therefore dispatches on how c overlaps a and b.
template <typename T, template <typename> class Op>
struct Native {
  static constexpr size_t kBlock = 64 / sizeof(T);

  static void disjointLoop(unsigned char* __restrict c,
                           const unsigned char* __restrict a,
                           const unsigned char* __restrict b, size_t n) {
    size_t i = 0;
    for (; i + kBlock <= n; i += kBlock) {
      for (size_t k = 0; k < kBlock; ++k) {
        store<T>(c, i + k, Op<T>::apply(load<T>(a, i + k), load<T>(b, i + k)));
      }
    }
    for (; i < n; ++i) store<T>(c, i, Op<T>::apply(load<T>(a, i), load<T>(b, i)));
  }

  // c is also one operand; kCFirst keeps operand order (min/max of NaNs or
  // signed zeros is not symmetric bit-for-bit).
  template <bool kCFirst>
  static void inPlaceLoop(unsigned char* __restrict c,
                          const unsigned char* __restrict x, size_t n) {
    size_t i = 0;
    for (; i + kBlock <= n; i += kBlock) {
      for (size_t k = 0; k < kBlock; ++k) {
        const T cv = load<T>(c, i + k);
        const T xv = load<T>(x, i + k);
        store<T>(c, i + k, kCFirst ? Op<T>::apply(cv, xv) : Op<T>::apply(xv, cv));
      }
    }
    for (; i < n; ++i) {
      const T cv = load<T>(c, i);
      const T xv = load<T>(x, i);
      store<T>(c, i, kCFirst ? Op<T>::apply(cv, xv) : Op<T>::apply(xv, cv));
    }
  }

  // Any other overlap (c == a == b, or partial): element-by-element, each
  // element read before it is written.
  static void scalarLoop(unsigned char* c, const unsigned char* a,
                         const unsigned char* b, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      store<T>(c, i, Op<T>::apply(load<T>(a, i), load<T>(b, i)));
    }
  }

  static void run(void* c, const void* a, const void* b, size_t n) {
    auto* cp = static_cast<unsigned char*>(c);
    const auto* ap = static_cast<const unsigned char*>(a);
    const auto* bp = static_cast<const unsigned char*>(b);
    const size_t bytes = n * sizeof(T);
    const bool cb = disjoint(cp, bp, bytes);
    const bool ca = disjoint(cp, ap, bytes);
    if (ca && cb) {
      disjointLoop(cp, ap, bp, n);
    } else if (cp == ap && cb) {
      inPlaceLoop<true>(cp, bp, n);
    } else if (cp == bp && ca) {
      inPlaceLoop<false>(cp, ap, n);
    } else {
      scalarLoop(cp, ap, bp, n);
    }
  }
};

struct HalfConv {
  static float toFloat(uint16_t v) noexcept { return halfToFloat(v); }
  static uint16_t fromFloat(float f) noexcept { return floatToHalf(f); }
};

struct BF16Conv {
  static float toFloat(uint16_t v) noexcept { return bfloat16ToFloat(v); }
  static uint16_t fromFloat(float f) noexcept { return floatToBfloat16(f); }
};

// Computing in float then rounding to 16 bits gives the correctly rounded
// result for + * / : float's 24-bit significand is >= 2*11+2, so the double
// rounding is innocuous.
template <typename Conv, template <typename> class Op>
void reduce16(void* c, const void* a, const void* b, size_t n) {
  auto* cp = static_cast<unsigned char*>(c);
  const auto* ap = static_cast<const unsigned char*>(a);
  const auto* bp = static_cast<const unsigned char*>(b);
  for (size_t i = 0; i < n; ++i) {
    const float x = Conv::toFloat(load<uint16_t>(ap, i));
    const float y = Conv::toFloat(load<uint16_t>(bp, i));
    store<uint16_t>(cp, i, Conv::fromFloat(Op<float>::apply(x, y)));
  }
}

template <template <typename> class Op>
constexpr ReduceFn forDType(int dt) {
  switch (static_cast<DType>(dt)) {
    case DType::Int8: return &Native<int8_t, Op>::run;
    case DType::UInt8: return &Native<uint8_t, Op>::run;
    case DType::Int32: return &Native<int32_t, Op>::run;
    case DType::UInt32: return &Native<uint32_t, Op>::run;
    case DType::Int64: return &Native<int64_t, Op>::run;
    case DType::UInt64: return &Native<uint64_t, Op>::run;
    case DType::Float16: return &reduce16<HalfConv, Op>;
    case DType::BFloat16: return &reduce16<BF16Conv, Op>;
    case DType::Float32: return &Native<float, Op>::run;
    case DType::Float64: return &Native<double, Op>::run;
  }
  return nullptr;
}

struct FnTable {
  ReduceFn fn[kNumDTypes][kNumRedOps];
};

constexpr FnTable makeTable() {
  FnTable t{};
  for (int d = 0; d < kNumDTypes; ++d) {
    t.fn[d][static_cast<int>(RedOp::Sum)] = forDType<SumOp>(d);
    t.fn[d][static_cast<int>(RedOp::Prod)] = forDType<ProdOp>(d);
    t.fn[d][static_cast<int>(RedOp::Min)] = forDType<MinOp>(d);
    t.fn[d][static_cast<int>(RedOp::Max)] = forDType<MaxOp>(d);
    t.fn[d][static_cast<int>(RedOp::Avg)] = forDType<SumOp>(d);
  }
  return t;
}

constexpr FnTable kTable = makeTable();

template <typename T>
void divideNative(void* buf, size_t n, int divisor) {
  auto* p = static_cast<unsigned char*>(buf);
  // Integers divide in a 64-bit type of the same signedness: the divisor may
  // not fit in a narrow T (int8 / 200 must be 0), and signed division
  // truncates toward zero as required.
  using W = std::conditional_t<
      std::is_floating_point_v<T>, T,
      std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;
  const W d = static_cast<W>(divisor);
  for (size_t i = 0; i < n; ++i) {
    store<T>(p, i, static_cast<T>(static_cast<W>(load<T>(p, i)) / d));
  }
}

template <typename Conv>
void divide16(void* buf, size_t n, int divisor) {
  auto* p = static_cast<unsigned char*>(buf);
  const float d = static_cast<float>(divisor);
  for (size_t i = 0; i < n; ++i) {
    store<uint16_t>(p, i, Conv::fromFloat(Conv::toFloat(load<uint16_t>(p, i)) / d));
  }
}

}  // namespace

ReduceFn reduceFunction(DType dt, RedOp op) noexcept {
  const int d = static_cast<int>(dt);
  const int o = static_cast<int>(op);
  if (!isValidDType(d) || !isValidRedOp(o)) return nullptr;
  return kTable.fn[d][o];
}

void divideInPlace(void* buf, size_t n, DType dt, int divisor) noexcept {
  if (divisor < 1 || n == 0) return;
  switch (dt) {
    case DType::Int8: divideNative<int8_t>(buf, n, divisor); return;
    case DType::UInt8: divideNative<uint8_t>(buf, n, divisor); return;
    case DType::Int32: divideNative<int32_t>(buf, n, divisor); return;
    case DType::UInt32: divideNative<uint32_t>(buf, n, divisor); return;
    case DType::Int64: divideNative<int64_t>(buf, n, divisor); return;
    case DType::UInt64: divideNative<uint64_t>(buf, n, divisor); return;
    case DType::Float16: divide16<HalfConv>(buf, n, divisor); return;
    case DType::BFloat16: divide16<BF16Conv>(buf, n, divisor); return;
    case DType::Float32: divideNative<float>(buf, n, divisor); return;
    case DType::Float64: divideNative<double>(buf, n, divisor); return;
  }
}

}  // namespace mw
