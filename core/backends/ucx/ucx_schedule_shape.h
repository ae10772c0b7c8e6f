// What every collective schedule needs to know of its operation and its
// member (ucx_schedules.cc, ucx_degraded_schedules.cc).
#pragma once

#include <cstddef>

#include "core/dtype.h"
#include "core/op.h"
#include "core/reduce.h"

namespace mw {
namespace schedule {

inline int mod(int a, int n) { return ((a % n) + n) % n; }
inline char* at(void* base, size_t offset) { return static_cast<char*>(base) + offset; }

struct Shape {
  Shape(const OpDesc& o, int r, int n) : op(o), rank(r), size(n), width(dtypeSize(o.dtype)) {}
  size_t bytes(size_t elements) const { return elements * width; }
  void reduce(void* into, const void* other, size_t elements) const {
    reduceFunction(op.dtype, op.redop)(into, into, other, elements);
  }
  void average(void* buf, size_t elements) const {
    if (op.redop == RedOp::Avg) divideInPlace(buf, elements, op.dtype, size);
  }
  const OpDesc op;
  const int rank, size;
  const size_t width;
};

}  // namespace schedule
}  // namespace mw
