#include "bench/soak/soak_member.h"

#include <poll.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "bench/soak/soak_traffic.h"
#include "bench/soak/soak_world_slot.h"
#include "tools/lab/checked_traffic.h"

namespace mwbench {
namespace soak {

namespace {

using mwlab::monotonicNs;

constexpr int64_t kMs = 1000000;
// How long a broken world waits for its MW_EVENT_WORLD_BROKEN once a
// request showed the break: every member hears of a break through an event.
constexpr int64_t kEventWaitNs = 3000 * kMs;
constexpr int64_t kEndLimitNs = 20000 * kMs;  // a graceful end
constexpr int64_t kDepartureGraceNs = 500 * kMs;
constexpr int64_t kCreateRetryNs = 200 * kMs;
// Creation fails while a peer is dead, stopped or cut off, or Redis fails
// over (MW_ERR_STORE until the new master is found); failing for this long
// is said once.
constexpr int64_t kCreateStuckNs = 60000 * kMs;
constexpr int64_t kContextLimitNs = 60000 * kMs;

class BoardNotes : public Notes {
 public:
  BoardNotes(MemberSlot& slot, int id) : slot_(slot), id_(id) {}
  void note(const char* fmt, ...) override {
    char text[kNoteBytes];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    std::fprintf(stderr, "soak member %d: %s\n", id_, text);
    std::lock_guard<std::mutex> lock(mu_);
    const int n = slot_.n_notes.load();
    if (n >= kMaxNotes) return;
    std::snprintf(slot_.notes[n], kNoteBytes, "%s", text);
    slot_.n_notes.store(n + 1);
  }

 private:
  MemberSlot& slot_;
  const int id_;
  std::mutex mu_;
};

class Member {
 public:
  Member(const MemberSpec& spec, Board& board)
      : spec_(spec), board_(board), slot_(board.members[spec.id]), notes_(slot_, spec.id) {}

  int run() {
    if (!openContext()) return 1;
    slot_.ready.store(1);
    for (int w : worldsOf(spec_.worlds, spec_.id)) {
      slots_.push_back(std::make_unique<WorldSlot>(w, spec_.worlds[static_cast<size_t>(w)], spec_.id, slot_.cells[w],
                                                   notes_));
    }
    std::thread events([this] { eventLoop(); });
    for (auto& s : slots_) {
      WorldSlot* ws = s.get();
      ws->creator = std::thread([this, ws] { createLoop(*ws); });
      ws->requestCreate();
    }
    loop();
    quit_.store(true);
    for (auto& s : slots_) {
      s->wake();
      s->creator.join();
      // A world formed after the end was decided goes unused.
      if (mw_world_t* w = s->takeCreated()) mw_world_destroy(w);
    }
    events.join();
    mw_context_free(ctx_);
    slot_.exiting.store(1);
    return 0;
  }

 private:
  bool openContext() {
    const int64_t end = monotonicNs() + kContextLimitNs;
    std::string last;
    while (monotonicNs() < end) {
      mw_config_t* cfg = nullptr;
      if (mw_config_new(&cfg) != MW_OK) break;
      bool ok = true;
      for (const auto& [k, v] : spec_.settings) ok = ok && mw_config_set(cfg, k.c_str(), v.c_str()) == MW_OK;
      ok = ok && mw_context_new(cfg, &ctx_) == MW_OK;
      mw_config_free(cfg);
      if (ok) return true;
      ctx_ = nullptr;
      last = mw_last_error();
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    notes_.note("no context within %lld s: %s", static_cast<long long>(kContextLimitNs / 1000000000), last.c_str());
    return false;
  }

  // The creator thread of one world: forms an incarnation whenever asked,
  // retrying until it forms (a peer may be dead, stopped or cut off for a
  // while) or the run ends; or shrinks or grows the current one.
  void createLoop(WorldSlot& s) {
    while (s.awaitRequest(quit_)) {
      mw_world_t* from = nullptr;
      int new_size = 0;
      if (s.takeResize(&from, &new_size) && resize(s, from, new_size)) {
        s.done();
        continue;
      }
      // A replacement of a shrink fault waits until the survivors shrank
      // the world, then joins their grow as its newcomer.
      while (s.cell.hold.load() && !quit_.load() && !board_.stop.load()) s.pause(10 * kMs, quit_);
      const bool newcomer = s.cell.joins.load() != 0;
      const int size = static_cast<int>(s.spec.members.size());
      const int64_t began = monotonicNs();
      for (bool said = false; !quit_.load() && !board_.stop.load();) {
        mw_world_t* w = nullptr;
        const mw_status_t st = mw_world_create(ctx_, s.spec.name.c_str(), newcomer ? size - 1 : s.rank, size,
                                               spec_.backend, 0, spec_.create_timeout_ms, &w);
        if (st == MW_OK) {
          if (newcomer) {
            std::vector<int> order;
            for (int r = 0; r < std::min(s.cell.order_size.load(), kMaxWorldMembers); ++r) {
              order.push_back(s.cell.order[r].load());
            }
            s.setOrder(std::move(order));
            s.cell.joins.store(0);
          } else {
            s.setOrder(s.spec.members);
          }
          s.publish(w);
          break;
        }
        s.cell.create_failures.fetch_add(1);
        if (!said && monotonicNs() - began > kCreateStuckNs) {
          said = true;
          notes_.note("world %s: creates failed for %lld s, the last with %s: %s", s.spec.name.c_str(),
                      static_cast<long long>((monotonicNs() - began) / 1000000000), mw_status_string(st),
                      mw_last_error());
        }
        s.pause(kCreateRetryNs, quit_);
      }
      s.done();
    }
  }

  // A shrink (new_size < 0: the members the break named leave) or a grow
  // of `from`, on the creator thread: the successor is published as a
  // created world, and `from`, retired, destroyed. False when it failed
  // (said in a note): the world then forms again.
  bool resize(WorldSlot& s, mw_world_t* from, int new_size) {
    mw_world_t* next = nullptr;
    const bool shrink = new_size < 0;
    const mw_status_t st = shrink ? mw_world_shrink(from, nullptr, 0, MW_SHRINK_ABORT, spec_.create_timeout_ms, &next)
                                  : mw_world_grow(from, new_size, spec_.create_timeout_ms, &next);
    const std::string why = st == MW_OK ? "" : mw_last_error();
    if (mw_world_destroy(from) != MW_OK) {
      notes_.note("world %s: mw_world_destroy: %s", s.spec.name.c_str(), mw_last_error());
    }
    s.destroyed();
    if (shrink) {
      s.cell.shrink_done.store(s.cell.shrink_request.load());
    } else {
      s.cell.grow_done.store(s.cell.grow_request.load());
    }
    if (st != MW_OK) {
      notes_.note("world %s: mw_world_%s: %s (%s)", s.spec.name.c_str(), shrink ? "shrink" : "grow",
                  mw_status_string(st), why.c_str());
      s.setOrder(s.spec.members);
      return false;
    }
    s.publish(next);
    return true;
  }

  // The event thread: times each break when it is announced, whatever the
  // main thread is doing.
  void eventLoop() {
    mw_event_t ev;
    std::vector<uint64_t> closes(slots_.size());
    int fd = -1;
    if (mw_context_fd(ctx_, &fd) != MW_OK) {
      notes_.note("mw_context_fd: %s", mw_last_error());
      return;
    }
    while (!quit_.load()) {
      // Waits outside the library, so that what `closes` says is read at
      // the moment the event is taken, not before a long wait.
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      for (size_t i = 0; i < slots_.size(); ++i) closes[i] = slots_[i]->closeCount();
      if (mw_next_event(ctx_, &ev, 0) != MW_OK) {
        // Readable for completions the main thread has yet to take.
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        continue;
      }
      const int64_t now = monotonicNs();
      switch (ev.type) {
        case MW_EVENT_WORLD_BROKEN:
          for (size_t i = 0; i < slots_.size(); ++i) {
            if (slots_[i]->offer(ev, closes[i], now)) break;
          }
          break;
        case MW_EVENT_PATH_DOWN: slot_.path_down.fetch_add(1); break;
        case MW_EVENT_PATH_UP: slot_.path_up.fetch_add(1); break;
        case MW_EVENT_STORE_DOWN: slot_.store_down.fetch_add(1); break;
        case MW_EVENT_STORE_UP: slot_.store_up.fetch_add(1); break;
        default: break;
      }
    }
  }

  void loop() {
    mw_completion_t done[64];
    for (;;) {
      const int64_t now = monotonicNs();
      const bool stop = board_.stop.load() != 0;
      bool all_closed = true;
      int64_t due = now + 5 * kMs;
      for (auto& s : slots_) {
        step(*s, now, stop);
        all_closed = all_closed && s->cell.state.load() == kClosed;
        due = std::min(due, s->traffic->nextDueNs());
      }
      if (stop && all_closed) return;
      const int64_t wait_ns = std::max<int64_t>(0, due - monotonicNs());
      size_t n = 0;
      if (mw_poll(ctx_, done, 64, static_cast<int>((wait_ns + kMs - 1) / kMs), &n) != MW_OK) {
        notes_.note("mw_poll: %s", mw_last_error());
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      const int64_t at = monotonicNs();
      for (size_t k = 0; k < n; ++k) {
        WorldSlot* s = slotOf(worldOfUserData(done[k].user_data));
        if (s && s->world) {
          s->traffic->complete(done[k], at);
        } else {
          mw_request_free(done[k].request);
        }
      }
    }
  }

  WorldSlot* slotOf(int index) {
    for (auto& s : slots_) {
      if (s->index == index) return s.get();
    }
    return nullptr;
  }

  // One world's state machine, on the main thread.
  void step(WorldSlot& s, int64_t now, bool stop) {
    Cell& cell = s.cell;
    switch (cell.state.load()) {
      case kForming: {
        mw_world_t* w = s.takeCreated();
        if (!w) {
          // An attempt under way finishes first: if it forms, the
          // incarnation ends gracefully with its peers.
          if (stop && s.idle()) cell.state.store(kClosed);
          return;
        }
        s.world = w;
        s.first_sign_ns = 0;
        s.break_in_end_ns = 0;
        s.during_end = false;
        // Whose rank is whose, for the driver (a shrink fault's newcomer).
        const std::vector<int> order = s.order();
        for (size_t r = 0; r < order.size() && r < static_cast<size_t>(kMaxWorldMembers); ++r) {
          cell.order[r].store(order[r]);
        }
        cell.order_size.store(static_cast<int>(std::min(order.size(), static_cast<size_t>(kMaxWorldMembers))));
        cell.incarnations.fetch_add(1);
        cell.formed_ns.store(now);
        s.traffic->start(w, now);
        cell.state.store(kRunning);
        return;
      }
      case kRunning:
        if (s.traffic->brokenNs() || s.eventCame()) {
          toBroken(s, now);
          return;
        }
        if (stop || cell.churn_request.load() != cell.churn_done.load() || s.traffic->peerEnding() ||
            growAsked(s)) {
          s.traffic->beginEnd();
          s.end_began_ns = now;
          cell.state.store(kEnding);
        } else if (cell.cancel_request.load() != cell.cancel_done.load()) {
          s.traffic->cancelNewestReceive();
          cell.cancel_done.store(cell.cancel_request.load());
        }
        s.traffic->tick(now);
        return;
      case kEnding:
        if (s.traffic->done()) {
          cell.ended.fetch_add(1);
          // Every member voted to end after the same iteration: nothing is
          // pending on any of them, as a grow needs.
          if (!stop && growAsked(s)) {
            resizeIncarnation(s, false);
          } else {
            endIncarnation(s, stop);
          }
          return;
        }
        if (s.traffic->brokenNs() || s.eventCame()) {
          // A peer that finished its end leaves at once, and its leaving
          // may be announced before the completions that finish this side's
          // end are polled: those get a moment.
          if (!s.break_in_end_ns) s.break_in_end_ns = now;
          if (now - s.break_in_end_ns >= kDepartureGraceNs) {
            s.during_end = true;
            toBroken(s, now);
            return;
          }
        }
        if (now - s.end_began_ns > kEndLimitNs) {
          notes_.note("world %s: its graceful end did not finish within %lld s", s.spec.name.c_str(),
                      static_cast<long long>(kEndLimitNs / 1000000000));
          endIncarnation(s, stop);
          return;
        }
        s.traffic->tick(now);
        return;
      case kBroken:
        if (s.eventCame() || now - s.first_sign_ns > kEventWaitNs) {
          record(s);
          s.traffic->afterBreak();
          cell.broke.fetch_add(1);
          if (!stop && cell.shrink_request.load() != cell.shrink_done.load()) {
            resizeIncarnation(s, true);
          } else {
            endIncarnation(s, stop);
          }
        }
        return;
      default:
        return;
    }
  }

  // The incarnation is over, however it ended (a churn it ended is over
  // too): the next one forms unless the run is over.
  void endIncarnation(WorldSlot& s, bool stop) {
    closeWorld(s);
    s.cell.churn_done.store(s.cell.churn_request.load());
    if (stop) {
      s.cell.state.store(kClosed);
    } else {
      s.requestCreate();
    }
  }

  bool growAsked(WorldSlot& s) const { return s.cell.grow_request.load() != s.cell.grow_done.load() && s.left >= 0; }

  // A shrink fault: the broken world shrinks without the member its break
  // named, or grows back to take it again, on the creator thread. Where
  // that member is not known, the world forms again as after any break.
  void resizeIncarnation(WorldSlot& s, bool shrink) {
    std::vector<int> order = s.order();
    int new_size = -1;
    if (shrink) {
      const int gone = s.eventBlamed();
      auto it = std::find(order.begin(), order.end(), gone);
      if (gone < 0 || it == order.end()) {
        s.cell.shrink_done.store(s.cell.shrink_request.load());
        return endIncarnation(s, false);
      }
      order.erase(it);
      s.left = gone;
    } else {
      order.push_back(s.left);
      s.left = -1;
      new_size = static_cast<int>(order.size());
    }
    s.forget();
    // What was posted on it completes unheard (a freed request's
    // completion is never delivered).
    s.traffic->releaseAfterDestroy();
    mw_world_t* w = s.world;
    s.world = nullptr;
    s.cell.churn_done.store(s.cell.churn_request.load());
    s.requestResize(w, new_size, std::move(order));
  }

  void toBroken(WorldSlot& s, int64_t now) {
    int64_t first = s.traffic->brokenNs();
    const int64_t event = s.eventNs();
    if (event && (!first || event < first)) first = event;
    s.first_sign_ns = first ? first : now;
    s.cell.state.store(kBroken);
  }

  // Publishes the break to the driver.
  void record(WorldSlot& s) {
    const int n = slot_.n_breaks.load();
    if (n >= kMaxBreaks) return;
    BreakRecord& r = slot_.breaks[n];
    r.world = s.index;
    r.incarnation = s.cell.incarnations.load();
    r.formed_ns = s.cell.formed_ns.load();
    r.seen_ns = s.first_sign_ns;
    r.during_end = s.during_end ? 1 : 0;
    s.describeBreak(r);
    slot_.n_breaks.store(n + 1);
  }

  // Destroys the current world; what was still posted completes cancelled
  // and is freed here, so no completion of it reaches the next incarnation.
  void closeWorld(WorldSlot& s) {
    s.forget();
    if (mw_world_destroy(s.world) != MW_OK) {
      notes_.note("world %s: mw_world_destroy: %s", s.spec.name.c_str(), mw_last_error());
    }
    s.destroyed();
    s.world = nullptr;
    s.traffic->releaseAfterDestroy();
  }

  const MemberSpec& spec_;
  Board& board_;
  MemberSlot& slot_;
  BoardNotes notes_;
  mw_context_t* ctx_ = nullptr;
  std::vector<std::unique_ptr<WorldSlot>> slots_;
  std::atomic<bool> quit_{false};
};

}  // namespace

int runMember(const MemberSpec& spec, Board& board) {
  Member m(spec, board);
  return m.run();
}

}  // namespace soak
}  // namespace mwbench
