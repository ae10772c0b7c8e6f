// Structs that carry their own size as their first field (mw_op_t,
// mw_world_params_t, mw_event_info_t), so that they can grow at their end
// without breaking callers built against another version of the header:
// the kernel's copy_struct_from_user (clone3, openat2) and NCCL's
// ncclConfig_t do the same.
#pragma once

#include <cstddef>

namespace mw::capi {

// A size past this is no struct of any version, only a caller's bug.
constexpr size_t kMaxStructSize = 4096;

// Throws Error(InvalidArgument) naming `type` and `given` when it is below
// `first` (the first version's size) or above kMaxStructSize; `known` is
// this library's sizeof, for the message.
void checkStructSize(size_t given, size_t known, size_t first, const char* type);

// Copies the caller's `given` bytes at `src` into `dst`, this library's
// struct of `known` bytes. A caller built against an older header
// (`first` <= given < known) leaves the fields it does not know zero; a
// newer one (given > known) may pass fields this library does not know only
// while they are zero. Throws Error: InvalidArgument naming `type` and the
// size when it is below `first` or above kMaxStructSize, Unsupported when
// an unknown trailing byte is set.
void readSized(void* dst, size_t known, const void* src, size_t given, size_t first, const char* type);

// Checks the caller's `given` (as readSized, minus the trailing bytes) and
// fills its struct at `dst` with `src`, this library's struct of `known`
// bytes: a caller built against an older header gets the prefix it knows,
// a newer one gets zero past `known`. A struct with a size field gets it
// from `src`: set it to `given` there.
void writeSized(void* dst, size_t given, const void* src, size_t known, size_t first, const char* type);

}  // namespace mw::capi
