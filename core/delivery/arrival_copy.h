// The bytes of an arrival that waits for its receive, copied out of the
// transport's buffer, which goes back at once: what UCX lends is its own
// receive descriptor, or for a message of several segments a buffer it
// took from the heap.
//
// A large copy is mapped on its own and unmapped when taken. From the
// heap, a burst of waiting arrivals (a receiver that posts late while its
// peer streams) would stay in the process's resident memory after the
// burst drained: glibc keeps freed memory of its arenas unless it lies at
// their top.
#pragma once

#include <cstddef>

namespace mw {

class ArrivalCopy {
 public:
  // Copies of at least this many bytes are mapped.
  static constexpr size_t kMappedBytes = 64 * 1024;

  ArrivalCopy() = default;
  // Throws std::bad_alloc when no memory is left.
  ArrivalCopy(const char* data, size_t bytes);
  ~ArrivalCopy() { reset(); }
  ArrivalCopy(ArrivalCopy&& other) noexcept;
  ArrivalCopy& operator=(ArrivalCopy&& other) noexcept;
  ArrivalCopy(const ArrivalCopy&) = delete;
  ArrivalCopy& operator=(const ArrivalCopy&) = delete;

  const char* data() const { return data_; }
  size_t size() const { return size_; }
  bool mapped() const { return mapped_; }
  // Gives the memory back.
  void reset() noexcept;

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
};

}  // namespace mw
