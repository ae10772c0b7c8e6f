// UCX 1.13.1's libucs with the patch of third_party/ucx: an async event
// "missed" by a socket's handler is never dispatched to a later handler that
// got the same fd number. Each test makes UCX miss an event the way a busy
// worker does (its async context held while the event comes), removes the
// handler and closes its fd, registers a new handler on the reused number,
// and then has the first context take in what it missed. The system's
// libucs aborts in the first case and calls the wrong handler in the second.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <ucs/async/async_fwd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

namespace {

constexpr ucs_async_mode_t kMode = UCS_ASYNC_MODE_THREAD_SPINLOCK;

void sleepBriefly() { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }

// An async context whose event handler, run on UCX's async thread, holds
// the context until released: while it does, every event of that context
// dispatched from elsewhere is queued as missed.
class HeldContext {
 public:
  HeldContext() {
    EXPECT_EQ(ucs_async_context_create(kMode, &async_), UCS_OK);
    fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    EXPECT_EQ(ucs_async_set_event_handler(kMode, fd_, UCS_EVENT_SET_EVREAD, &HeldContext::onEvent, this, async_),
              UCS_OK);
  }
  ~HeldContext() {
    release();
    ucs_async_remove_handler(fd_, 1);
    ::close(fd_);
    ucs_async_context_destroy(async_);
  }
  ucs_async_context_t* async() const { return async_; }
  void hold() {
    const uint64_t one = 1;
    ASSERT_EQ(::write(fd_, &one, sizeof one), static_cast<ssize_t>(sizeof one));
    while (!held_) sleepBriefly();
  }
  void release() {
    released_ = true;
    while (held_) sleepBriefly();
  }

 private:
  static void onEvent(int fd, ucs_event_set_types_t, void* arg) {
    auto* self = static_cast<HeldContext*>(arg);
    uint64_t value;
    if (::read(fd, &value, sizeof value) != static_cast<ssize_t>(sizeof value) || self->released_) return;
    self->held_ = true;
    while (!self->released_) sleepBriefly();
    self->held_ = false;
  }
  ucs_async_context_t* async_ = nullptr;
  int fd_ = -1;
  std::atomic<bool> held_{false}, released_{false};
};

std::atomic<int> g_new_handler_calls{0};
void countCall(int, ucs_event_set_types_t, void*) { ++g_new_handler_calls; }
void ignoreEvent(int, ucs_event_set_types_t, void*) {}

// Makes `held`'s context miss `events` of a handler on a new eventfd,
// removes that handler and closes the fd, and registers countCall for
// `new_events` on the same fd number in `next` (a context). Returns the
// number the fd had, or -1 when it was not reused.
int missThenReuse(HeldContext& held, ucs_event_set_types_t events, ucs_async_context_t* next,
                  ucs_event_set_types_t new_events) {
  const int fd = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);  // readable and writable at once
  EXPECT_EQ(ucs_async_set_event_handler(kMode, fd, events, &ignoreEvent, nullptr, held.async()), UCS_OK);
  held.hold();
  ucs_async_poll(held.async());  // dispatching while held: queued as missed
  ucs_async_remove_handler(fd, 1);
  ::close(fd);
  const int reused = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (reused != fd) {
    ::close(reused);
    held.release();
    return -1;
  }
  EXPECT_EQ(ucs_async_set_event_handler(kMode, reused, new_events, &countCall, nullptr, next), UCS_OK);
  held.release();
  return reused;
}

TEST(UcxLibucs, AMissedEventOfAClosedSocketIsNotDispatchedToAnotherContext) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // In a child: the system's libucs aborts ("handler->async == async").
  EXPECT_EXIT(
      {
        ucs_async_context_t* other = nullptr;
        if (ucs_async_context_create(kMode, &other) != UCS_OK) std::_Exit(2);
        int reused;
        {
          HeldContext held;
          reused = missThenReuse(held, UCS_EVENT_SET_EVREAD, other, UCS_EVENT_SET_EVREAD);
          if (reused < 0) std::_Exit(3);
          __ucs_async_poll_missed(held.async());
        }
        ucs_async_remove_handler(reused, 1);
        ::close(reused);
        ucs_async_context_destroy(other);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(UcxLibucs, AMissedWriteEventOfAClosedSocketIsNotDispatchedToANewReader) {
  // The connection manager's case (tcp_sockcm_ep.c): a socket that waited
  // to write missed its event, and an accepted one that only reads got its
  // number. The system's libucs calls the reader with the stale write event.
  g_new_handler_calls = 0;
  HeldContext held;
  const int reused = missThenReuse(held, UCS_EVENT_SET_EVWRITE, held.async(), UCS_EVENT_SET_EVREAD);
  ASSERT_GE(reused, 0) << "the fd number was not reused";
  __ucs_async_poll_missed(held.async());
  EXPECT_EQ(g_new_handler_calls.load(), 0) << "the new handler got the closed socket's write event";
  ucs_async_remove_handler(reused, 1);
  ::close(reused);
}

TEST(UcxLibucs, TheLinkedLibucsIsThePatchedCopy) {
#ifdef MW_PATCHED_LIBUCS
  Dl_info info{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&ucs_async_poll), &info), 0);
  char* loaded = realpath(info.dli_fname, nullptr);
  char* built = realpath(MW_PATCHED_LIBUCS, nullptr);
  ASSERT_NE(loaded, nullptr);
  ASSERT_NE(built, nullptr);
  EXPECT_EQ(std::string(loaded), std::string(built));
  free(loaded);
  free(built);
#else
  GTEST_SKIP() << "built with the system's libucs (MW_UCX_PATCHED_LIBUCS, cmake/UcxLibucs.cmake)";
#endif
}

}  // namespace
