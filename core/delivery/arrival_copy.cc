#include "core/delivery/arrival_copy.h"

#include <sys/mman.h>

#include <cstring>
#include <new>
#include <utility>

namespace mw {

ArrivalCopy::ArrivalCopy(const char* data, size_t bytes) {
  if (bytes == 0) return;
  if (bytes >= kMappedBytes) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    data_ = static_cast<char*>(p);
    mapped_ = true;
  } else {
    data_ = new char[bytes];
  }
  size_ = bytes;
  std::memcpy(data_, data, bytes);
}

ArrivalCopy::ArrivalCopy(ArrivalCopy&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, false)) {}

ArrivalCopy& ArrivalCopy::operator=(ArrivalCopy&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, false);
  }
  return *this;
}

void ArrivalCopy::reset() noexcept {
  if (mapped_) {
    ::munmap(data_, size_);
  } else {
    delete[] data_;
  }
  data_ = nullptr;
  size_ = 0;
  mapped_ = false;
}

}  // namespace mw
