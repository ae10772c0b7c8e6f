#include "core/dtype.h"

#include <cstring>

namespace mw {

namespace {

uint32_t floatBits(float f) noexcept {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float bitsFloat(uint32_t u) noexcept {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace

size_t dtypeSize(DType dt) noexcept {
  switch (dt) {
    case DType::Int8:
    case DType::UInt8:
      return 1;
    case DType::Float16:
    case DType::BFloat16:
      return 2;
    case DType::Int32:
    case DType::UInt32:
    case DType::Float32:
      return 4;
    case DType::Int64:
    case DType::UInt64:
    case DType::Float64:
      return 8;
  }
  return 0;
}

const char* dtypeName(DType dt) noexcept {
  switch (dt) {
    case DType::Int8: return "int8";
    case DType::UInt8: return "uint8";
    case DType::Int32: return "int32";
    case DType::UInt32: return "uint32";
    case DType::Int64: return "int64";
    case DType::UInt64: return "uint64";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
  }
  return "unknown";
}

const char* redopName(RedOp op) noexcept {
  switch (op) {
    case RedOp::Sum: return "sum";
    case RedOp::Prod: return "prod";
    case RedOp::Min: return "min";
    case RedOp::Max: return "max";
    case RedOp::Avg: return "avg";
  }
  return "unknown";
}

bool isValidDType(int v) noexcept { return v >= 0 && v < kNumDTypes; }
bool isValidRedOp(int v) noexcept { return v >= 0 && v < kNumRedOps; }

float halfToFloat(uint16_t h) noexcept {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    // Subnormal or zero: mant * 2^-24 is exact in float.
    const float mag = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return bitsFloat(floatBits(mag) | sign);
  }
  if (exp == 0x1f) return bitsFloat(sign | 0x7f800000u | (mant << 13));
  return bitsFloat(sign | ((exp + 112u) << 23) | (mant << 13));
}

uint16_t floatToHalf(float f) noexcept {
  const uint32_t x = floatBits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7fffffffu;

  if (a >= 0x7f800000u) {
    if (a == 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u);
    // Force the quiet bit: truncating the payload could otherwise leave an
    // all-zero mantissa, which would read back as infinity.
    return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  }
  // 65520 is the midpoint between 65504 (odd mantissa) and 2^16, so ties
  // from there upward round to infinity.
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);

  if (a < 0x38800000u) {
    // Result is subnormal (or zero) in half: express the value in units of
    // 2^-24 and round the shifted-out bits to nearest even.
    const uint32_t e = a >> 23;
    const uint32_t shift = 126u - e;
    if (shift > 24u) return sign;  // below half of the smallest subnormal
    const uint32_t mant = (a & 0x7fffffu) | 0x800000u;
    uint32_t r = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (r & 1u))) ++r;
    // A carry into bit 10 correctly yields the smallest normal.
    return static_cast<uint16_t>(sign | r);
  }

  // Normal: rebias the exponent; a rounding carry may propagate into the
  // exponent, which is the correct result (the overflow case was excluded).
  uint32_t r = (a - 0x38000000u) >> 13;
  const uint32_t rem = a & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;
  return static_cast<uint16_t>(sign | r);
}

float bfloat16ToFloat(uint16_t b) noexcept {
  return bitsFloat(static_cast<uint32_t>(b) << 16);
}

uint16_t floatToBfloat16(float f) noexcept {
  const uint32_t x = floatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    // Set the quiet bit so a payload living only in the low half survives
    // as a NaN rather than collapsing to infinity.
    return static_cast<uint16_t>((x >> 16) | 0x0040u);
  }
  // Adding 0x7fff plus the kept LSB rounds to nearest even; overflow past
  // the largest finite value carries into the exponent and yields infinity.
  const uint32_t bias = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + bias) >> 16);
}

}  // namespace mw
