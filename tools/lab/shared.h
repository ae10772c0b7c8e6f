// An anonymous shared mapping made before fork: how a lab's parent and its
// forked processes see each other's progress (lock-free atomics only).
#pragma once

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

namespace mwlab {

template <typename T>
class Shared {
 public:
  Shared() {
    void* p = mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap failed: " + std::string(std::strerror(errno)));
    t_ = new (p) T();
  }
  ~Shared() {
    t_->~T();
    munmap(t_, sizeof(T));
  }
  Shared(const Shared&) = delete;
  Shared& operator=(const Shared&) = delete;
  T* operator->() { return t_; }
  const T* operator->() const { return t_; }
  T& operator*() { return *t_; }
  const T& operator*() const { return *t_; }
  T* get() { return t_; }

 private:
  T* t_;
};

}  // namespace mwlab
