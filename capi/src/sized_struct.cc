#include "capi/src/sized_struct.h"

#include <cstring>
#include <string>

#include "core/error.h"

namespace mw::capi {

void checkStructSize(size_t given, size_t known, size_t first, const char* type) {
  if (given < first || given > kMaxStructSize) {
    throw Error(Status::InvalidArgument, std::string(type) + " size " + std::to_string(given) + " is not sizeof(" +
                                             type + ") (" + std::to_string(known) +
                                             " in this library's header, at least " + std::to_string(first) + ")");
  }
}

void readSized(void* dst, size_t known, const void* src, size_t given, size_t first, const char* type) {
  checkStructSize(given, known, first, type);
  const auto* bytes = static_cast<const unsigned char*>(src);
  for (size_t i = known; i < given; ++i) {
    if (bytes[i] != 0) {
      throw Error(Status::Unsupported, std::string(type) + " of size " + std::to_string(given) +
                                           " sets byte " + std::to_string(i) + ", past the " +
                                           std::to_string(known) + " bytes this library knows");
    }
  }
  std::memset(dst, 0, known);
  std::memcpy(dst, src, given < known ? given : known);
}

void writeSized(void* dst, size_t given, const void* src, size_t known, size_t first, const char* type) {
  checkStructSize(given, known, first, type);
  auto* out = static_cast<unsigned char*>(dst);
  std::memcpy(out, src, given < known ? given : known);
  if (given > known) std::memset(out + known, 0, given - known);
}

}  // namespace mw::capi
