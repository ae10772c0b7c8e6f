// An anonymous shared mapping created before fork, so the test parent and
// its worker processes can publish progress to each other.
#pragma once

#include <sys/mman.h>

#include <new>
#include <stdexcept>

namespace mwtest {

template <typename T>
class Shared {
 public:
  Shared() {
    void* p = mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap failed");
    t_ = new (p) T();
  }
  ~Shared() {
    t_->~T();
    munmap(t_, sizeof(T));
  }
  Shared(const Shared&) = delete;
  Shared& operator=(const Shared&) = delete;
  T* operator->() { return t_; }
  T& operator*() { return *t_; }

 private:
  T* t_;
};

}  // namespace mwtest
