#include "core/delivery/chunk_assembly.h"

#include <iterator>

namespace mw {

ChunkAssembly::Take ChunkAssembly::take(size_t offset, size_t bytes) {
  if (offset > total_ || bytes > total_ - offset) return Take::Refused;
  // A message of 0 bytes is one chunk of 0 bytes.
  if (bytes == 0 && total_ != 0) return Take::Refused;
  auto next = chunks_.lower_bound(offset);
  if (next != chunks_.end() && next->first == offset) {
    return next->second == bytes ? Take::Duplicate : Take::Refused;
  }
  if (next != chunks_.end() && next->first < offset + bytes) return Take::Refused;
  if (next != chunks_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second > offset) return Take::Refused;
  }
  chunks_.emplace_hint(next, offset, bytes);
  have_ += bytes;
  return Take::New;
}

}  // namespace mw
