// Element types and reduction operators shared by the core and the C API.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mw {

// Values must equal the C API's enum order so the boundary converts by cast.
enum class DType : int {
  Int8,
  UInt8,
  Int32,
  UInt32,
  Int64,
  UInt64,
  Float16,
  BFloat16,
  Float32,
  Float64,
};

enum class RedOp : int { Sum, Prod, Min, Max, Avg };

constexpr int kNumDTypes = 10;
constexpr int kNumRedOps = 5;

// Unknown values give 0 / "unknown".
size_t dtypeSize(DType dt) noexcept;
const char* dtypeName(DType dt) noexcept;
const char* redopName(RedOp op) noexcept;

bool isValidDType(int v) noexcept;
bool isValidRedOp(int v) noexcept;

// IEEE binary16 <-> binary32. Round-to-nearest-even; subnormals, infinities
// and NaNs are handled (a NaN stays a NaN).
float halfToFloat(uint16_t h) noexcept;
uint16_t floatToHalf(float f) noexcept;

// bfloat16 <-> binary32. Round-to-nearest-even; a NaN becomes a quiet NaN.
float bfloat16ToFloat(uint16_t b) noexcept;
uint16_t floatToBfloat16(float f) noexcept;

}  // namespace mw
