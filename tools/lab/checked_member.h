// One member of the checked traffic (checked_stream.cc,
// checked_allreduce.cc): its context and world, the events it sees and its
// stall bookkeeping. Internal to tools/lab.
#pragma once

#include <algorithm>
#include <cstdio>

#include "tools/lab/checked_traffic.h"

namespace mwlab {
namespace checked {

// bookkeeping.
class Member {
 public:
  Member(const TrafficSpec& spec, MemberBoard& board) : spec_(spec), board_(board) {}
  ~Member() {
    if (world_) mw_world_destroy(world_);
    if (ctx_) mw_context_free(ctx_);
  }
  Member(const Member&) = delete;
  Member& operator=(const Member&) = delete;

  bool open() {
    mw_config_t* cfg = nullptr;
    if (mw_config_new(&cfg) != MW_OK) return fail("mw_config_new");
    bool ok = mw_config_set(cfg, "redis_url", spec_.redis_url.c_str()) == MW_OK;
    for (const auto& [k, v] : spec_.settings) ok = ok && mw_config_set(cfg, k.c_str(), v.c_str()) == MW_OK;
    ok = ok && mw_context_new(cfg, &ctx_) == MW_OK;
    mw_config_free(cfg);
    if (!ok) return fail("context");
    if (mw_world_create(ctx_, spec_.world.c_str(), spec_.rank, spec_.size, MW_BACKEND_UCX, 0, 60000, &world_) !=
        MW_OK) {
      world_ = nullptr;
      return fail("mw_world_create");
    }
    return true;
  }

  mw_world_t* world() const { return world_; }
  // Destroys the world; what is still posted completes with
  // MW_ERR_CANCELLED.
  void closeWorld() {
    if (world_) mw_world_destroy(world_);
    world_ = nullptr;
  }
  bool broken() const { return broken_; }
  bool failed() const { return board_.errors.load() != 0; }

  // Up to `max` completions within timeout_ms. The caller handles them
  // before it drains the events: a member that leaves once its last
  // message arrived breaks the world right after that message's completion.
  size_t poll(mw_completion_t* out, size_t max, int timeout_ms) {
    size_t n = 0;
    if (mw_poll(ctx_, out, max, timeout_ms, &n) != MW_OK) {
      fail("mw_poll");
      n = 0;
    }
    return n;
  }

  // Records every event queued; with wait_ms > 0, also waits up to that
  // long for this world's break event (when a request was first to show the
  // break).
  void drainEvents(int wait_ms = 0) {
    mw_event_info_t ev;
    const int64_t end = monotonicNs() + wait_ms * 1000000LL;
    for (;;) {
      const int64_t left_ms = (end - monotonicNs()) / 1000000;
      const bool waiting = broken_ && !break_event_ && left_ms > 0;
      ev.size = sizeof ev;
      if (mw_next_event_info(ctx_, &ev, waiting ? static_cast<int>(left_ms) : 0) != MW_OK) break;
      int i = board_.n_events.load();
      if (i < MemberBoard::kMaxEvents) {
        BoardEvent& e = board_.events[i];
        e.type = ev.type;
        e.peer_rank = ev.peer_rank;
        e.at_ns = monotonicNs();
        std::snprintf(e.detail, sizeof e.detail, "%.*s", static_cast<int>(sizeof e.detail - 1), ev.detail);
        e.path_index = ev.path_index;
        std::snprintf(e.local_address, sizeof e.local_address, "%.*s", static_cast<int>(sizeof e.local_address - 1),
                      ev.local_address);
        std::snprintf(e.remote_address, sizeof e.remote_address, "%.*s",
                      static_cast<int>(sizeof e.remote_address - 1), ev.remote_address);
        e.outstanding_messages = ev.outstanding_messages;
        e.outstanding_bytes = ev.outstanding_bytes;
        board_.n_events.store(i + 1);
      }
      if (ev.type == MW_EVENT_WORLD_BROKEN && ev.world == world_) {
        markBroken();
        break_event_ = true;
      }
    }
  }

  // The world broke while the traffic still needed it (a break after the
  // traffic ended is how the other member leaves).
  void markBroken() {
    if (broken_) return;
    broken_ = true;
    if (!done_) {
      int64_t zero = 0;
      board_.broken_ns.compare_exchange_strong(zero, monotonicNs());
    }
  }
  void markDone() { done_ = true; }

  // A delivery of something posted at posted_ns: the end of the stall of
  // the latest cut, if posted after it.
  void delivered(int64_t posted_ns) {
    board_.delivered.fetch_add(1);
    int c = board_.cuts.load();
    if (c == 0) return;
    if (board_.resumed_ns[c - 1].load() == 0 && posted_ns >= board_.cut_ns[c - 1].load()) {
      board_.resumed_ns[c - 1].store(monotonicNs());
    }
  }

  bool fail(const char* what) {
    std::fprintf(stderr, "checked traffic %s rank %d: %s failed: %s\n", spec_.world.c_str(), spec_.rank, what,
                 mw_last_error());
    board_.errors.fetch_add(1);
    return false;
  }

  // How long to wait for completions before the next post is due.
  int pollTimeoutMs(int64_t next_post_ns) const {
    int64_t wait = next_post_ns - monotonicNs();
    if (wait <= 0) return 0;
    return static_cast<int>(std::min<int64_t>(50, (wait + 999999) / 1000000));
  }

 private:
  const TrafficSpec& spec_;
  MemberBoard& board_;
  mw_context_t* ctx_ = nullptr;
  mw_world_t* world_ = nullptr;
  bool broken_ = false;
  bool break_event_ = false;
  bool done_ = false;
};

}  // namespace checked
}  // namespace mwlab
