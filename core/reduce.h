// Element-wise reduction kernels used by the collective algorithms.
#pragma once

#include <cstddef>

#include "core/dtype.h"

namespace mw {

// c[i] = a[i] (op) b[i] for n elements. c may alias a or b exactly; buffers
// need not be aligned. For RedOp::Avg this computes the SUM: the division
// happens once at the end via divideInPlace.
using ReduceFn = void (*)(void* c, const void* a, const void* b, size_t n);

// Never null for valid enums; null for out-of-range values.
ReduceFn reduceFunction(DType dt, RedOp op) noexcept;

// buf[i] /= divisor (the final step of Avg). Integers truncate toward zero
// like C '/'; float16/bfloat16 go through float and round back RNE.
// A divisor < 1 leaves buf untouched (avoids division by zero and the
// INT_MIN / -1 overflow; averages are always over a positive count).
void divideInPlace(void* buf, size_t n, DType dt, int divisor) noexcept;

}  // namespace mw
