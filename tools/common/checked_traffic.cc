#include "tools/common/checked_traffic.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>

namespace mwtools {

int64_t monotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void MemberBoard::markCut(int64_t at_ns) {
  int c = cuts.load();
  if (c >= kMaxCuts) return;
  resumed_ns[c].store(0);
  cut_ns[c].store(at_ns);
  cuts.store(c + 1);
}

int MemberBoard::countEvents(mw_event_type_t type, int64_t since_ns) const {
  int n = std::min(n_events.load(), kMaxEvents), count = 0;
  for (int i = 0; i < n; ++i) count += events[i].type == type && events[i].at_ns >= since_ns;
  return count;
}

std::string MemberBoard::eventText(int64_t origin_ns) const {
  static const char* const kNames[] = {"?", "WORLD_BROKEN", "STORE_DOWN", "STORE_UP", "PATH_DOWN", "PATH_UP"};
  int n = std::min(n_events.load(), kMaxEvents);
  std::string out;
  for (int i = 0; i < n; ++i) {
    const BoardEvent& e = events[i];
    char line[256];
    std::snprintf(line, sizeof line, "%s%s peer %d '%s' @%+.1fms", out.empty() ? "" : ", ",
                  e.type >= 1 && e.type <= 5 ? kNames[e.type] : kNames[0], e.peer_rank, e.detail,
                  (e.at_ns - origin_ns) / 1e6);
    out += line;
  }
  return out.empty() ? "(no events)" : out;
}

namespace {

// One member's context and world, the events it sees and its stall
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
    mw_event_t ev;
    const int64_t end = monotonicNs() + wait_ms * 1000000LL;
    for (;;) {
      const int64_t left_ms = (end - monotonicNs()) / 1000000;
      const bool waiting = broken_ && !break_event_ && left_ms > 0;
      if (mw_next_event(ctx_, &ev, waiting ? static_cast<int>(left_ms) : 0) != MW_OK) break;
      int i = board_.n_events.load();
      if (i < MemberBoard::kMaxEvents) {
        BoardEvent& e = board_.events[i];
        e.type = ev.type;
        e.peer_rank = ev.peer_rank;
        e.at_ns = monotonicNs();
        std::snprintf(e.detail, sizeof e.detail, "%.*s", static_cast<int>(sizeof e.detail - 1), ev.detail);
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

// ---- the p2p stream -----------------------------------------------------------

struct Header {
  uint64_t seq;
  int64_t posted_ns;
  uint32_t from;
  uint32_t last;  // 1: the sender's last message; seq = how many came before it
};
constexpr size_t kHeaderWords = sizeof(Header) / 4;

uint32_t streamWord(uint32_t from, uint64_t seq, size_t i) {
  uint64_t x = (static_cast<uint64_t>(from) << 56) ^ (seq << 16) ^ i;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return static_cast<uint32_t>(x);
}

struct Slot {
  std::vector<uint32_t> buf;
  mw_request_t* req = nullptr;
};

// user_data: slot index * 2 + (0 send, 1 receive)
class Stream {
 public:
  Stream(const TrafficSpec& spec, MemberBoard& board) : spec_(spec), board_(board), m_(spec, board) {
    const size_t words = std::max(spec.message_bytes, sizeof(Header)) / 4;
    sends_.resize(static_cast<size_t>(spec.window));
    recvs_.resize(static_cast<size_t>(spec.window));
    for (auto* v : {&sends_, &recvs_}) {
      for (auto& s : *v) s.buf.resize(words);
    }
  }

  int run(const std::atomic<int>& stop) {
    if (!m_.open()) return 1;
    for (size_t i = 0; i < recvs_.size(); ++i) {
      if (!postRecv(i)) return 1;
    }
    board_.ready.store(1);
    int64_t next_post = monotonicNs();
    mw_completion_t done[32];
    while (!(end_received_ && end_acked_) && !m_.broken() && !m_.failed()) {
      if (stop.load()) ending_ = true;
      while (!ending_ && monotonicNs() >= next_post && postSend(false)) {
        next_post = std::max(next_post + spec_.interval_us * 1000LL, monotonicNs() - spec_.interval_us * 1000LL);
      }
      if (ending_ && !end_posted_ && busySends() == 0) end_posted_ = postSend(true);
      int timeout = ending_ || busySends() == sends_.size() ? 50 : m_.pollTimeoutMs(next_post);
      size_t n = m_.poll(done, 32, timeout);
      for (size_t k = 0; k < n; ++k) complete(done[k]);
      m_.drainEvents();
    }
    if (m_.broken()) m_.drainEvents(2000);
    board_.lost.store(end_received_ ? static_cast<int64_t>(peer_total_) - distinctSeen() : 0);
    // What is still posted (the receives beyond the last message, or all
    // of it after a break) points into the slots: the world goes first.
    m_.closeWorld();
    for (auto* v : {&sends_, &recvs_}) {
      for (auto& s : *v) mw_request_free(s.req);
    }
    board_.finished.store(1);
    return m_.failed() ? 1 : 0;
  }

 private:
  size_t busySends() const {
    return static_cast<size_t>(std::count_if(sends_.begin(), sends_.end(), [](const Slot& s) { return s.req; }));
  }

  bool postSend(bool last) {
    size_t i = 0;
    while (i < sends_.size() && sends_[i].req) ++i;
    if (i == sends_.size()) return false;
    Slot& s = sends_[i];
    Header h{next_seq_, monotonicNs(), static_cast<uint32_t>(spec_.rank), last ? 1u : 0u};
    std::memcpy(s.buf.data(), &h, sizeof h);
    for (size_t w = kHeaderWords; w < s.buf.size(); ++w) s.buf[w] = streamWord(h.from, h.seq, w);
    mw_status_t st = mw_send_async(m_.world(), s.buf.data(), s.buf.size(), MW_UINT32, 1 - spec_.rank, &s.req);
    if (st != MW_OK) {
      s.req = nullptr;
      if (st == MW_ERR_WORLD_BROKEN) {
        m_.markBroken();
      } else {
        m_.fail("mw_send_async");
      }
      return false;
    }
    mw_request_set_user_data(s.req, i * 2);
    if (!last) ++next_seq_;
    return true;
  }

  bool postRecv(size_t i) {
    Slot& s = recvs_[i];
    mw_status_t st = mw_recv_async(m_.world(), s.buf.data(), s.buf.size(), MW_UINT32, 1 - spec_.rank, &s.req);
    if (st != MW_OK) {
      s.req = nullptr;
      if (st == MW_ERR_WORLD_BROKEN) {
        m_.markBroken();
        return true;
      }
      return m_.fail("mw_recv_async");
    }
    mw_request_set_user_data(s.req, i * 2 + 1);
    return true;
  }

  void complete(const mw_completion_t& c) {
    const size_t i = c.user_data / 2;
    const bool recv = c.user_data % 2 == 1;
    Slot& s = recv ? recvs_[i] : sends_[i];
    mw_request_free(s.req);
    s.req = nullptr;
    if (c.status == MW_ERR_WORLD_BROKEN) {
      m_.markBroken();
      return;
    }
    if (c.status == MW_ERR_CANCELLED) return;
    if (c.status != MW_OK) {
      std::fprintf(stderr, "checked stream %s rank %d: %s completed with %s\n", spec_.world.c_str(), spec_.rank,
                   recv ? "receive" : "send", mw_status_string(c.status));
      board_.errors.fetch_add(1);
      return;
    }
    if (!recv) {
      Header h;
      std::memcpy(&h, s.buf.data(), sizeof h);
      if (h.last) {
        end_acked_ = true;
      } else {
        board_.sent.fetch_add(1);
      }
      return;
    }
    check(s);
    if (!end_received_) postRecv(i);
  }

  void check(const Slot& s) {
    Header h;
    std::memcpy(&h, s.buf.data(), sizeof h);
    if (h.from != static_cast<uint32_t>(1 - spec_.rank)) {
      board_.corrupt.fetch_add(1);
      return;
    }
    if (h.last) {
      // The peer sent all it will and leaves once our last message is in:
      // a break from now on is its departure.
      end_received_ = true;
      peer_total_ = h.seq;
      m_.markDone();
      return;
    }
    for (size_t w = kHeaderWords; w < s.buf.size(); ++w) {
      if (s.buf[w] != streamWord(h.from, h.seq, w)) {
        std::fprintf(stderr, "checked stream %s rank %d: message %llu corrupt at word %zu\n", spec_.world.c_str(),
                     spec_.rank, static_cast<unsigned long long>(h.seq), w);
        board_.corrupt.fetch_add(1);
        return;
      }
    }
    if (h.seq < expected_ || ahead_.count(h.seq)) {
      board_.duplicated.fetch_add(1);
      return;
    }
    if (h.seq > expected_) {
      board_.reordered.fetch_add(1);
      ahead_.insert(h.seq);
    } else {
      ++expected_;
      while (!ahead_.empty() && *ahead_.begin() == expected_) {
        ahead_.erase(ahead_.begin());
        ++expected_;
      }
    }
    m_.delivered(h.posted_ns);
  }

  int64_t distinctSeen() const { return static_cast<int64_t>(expected_ + ahead_.size()); }

  const TrafficSpec& spec_;
  MemberBoard& board_;
  Member m_;
  std::vector<Slot> sends_, recvs_;
  uint64_t next_seq_ = 0, expected_ = 0, peer_total_ = 0;
  std::set<uint64_t> ahead_;  // received beyond a gap
  bool ending_ = false, end_posted_ = false, end_acked_ = false, end_received_ = false;
};

// ---- the allreduce loop -----------------------------------------------------------

// Each rank's contribution sits in a 20-bit field of its own: the sum shows
// each member's part separately. A part is ((iteration % 1024) << 3 | i % 7) + 1.
constexpr int kFieldBits = 20;
constexpr uint64_t kFieldMask = (1ULL << kFieldBits) - 1;

uint64_t part(int64_t iteration, size_t i) { return ((static_cast<uint64_t>(iteration % 1024) << 3) | (i % 7)) + 1; }

int runAllreduce(const TrafficSpec& spec, MemberBoard& board, const std::atomic<int>& stop) {
  if (spec.size * kFieldBits > 64 || spec.message_bytes < 16) {
    std::fprintf(stderr, "checked allreduce: at most 3 members and 16 bytes\n");
    return 1;
  }
  Member m(spec, board);
  if (!m.open()) return 1;
  // The last element is the vote to stop: all ranks see the same sum and
  // leave after the same iteration.
  const size_t n = spec.message_bytes / 8, votes = n - 1;
  std::vector<uint64_t> in(n), out(n);
  board.ready.store(1);
  int64_t next_post = monotonicNs();
  mw_completion_t done[4];
  for (int64_t it = 0;; ++it) {
    while (spec.interval_us > 0 && monotonicNs() < next_post) {
      m.poll(done, 4, m.pollTimeoutMs(next_post));
      m.drainEvents();
    }
    next_post = std::max(next_post + spec.interval_us * 1000LL, monotonicNs() - spec.interval_us * 1000LL);
    for (size_t i = 0; i < votes; ++i) in[i] = part(it, i) << (kFieldBits * spec.rank);
    in[votes] = stop.load() ? 1 : 0;
    std::fill(out.begin(), out.end(), 0);
    const int64_t posted = monotonicNs();
    mw_request_t* req = nullptr;
    mw_status_t st = mw_allreduce_async(m.world(), in.data(), out.data(), n, MW_UINT64, MW_SUM, &req);
    board.sent.fetch_add(1);
    if (st == MW_OK) {
      mw_request_set_user_data(req, 1);
      size_t got = 0;
      int64_t broken_at = 0;
      while (got == 0 && !m.failed()) {
        got = m.poll(done, 4, 50);
        if (got) break;
        m.drainEvents();
        if (m.broken() && !broken_at) broken_at = monotonicNs();
        // The break event comes first; the request must follow it.
        if (broken_at && monotonicNs() - broken_at > 10000000000LL) {
          m.fail("the allreduce completing 10 s after its world broke");
          mw_request_free(req);
          break;
        }
      }
      st = got ? done[0].status : MW_ERR_INTERNAL;
      if (got) mw_request_free(done[0].request);
    }
    if (st == MW_ERR_WORLD_BROKEN) {
      m.markBroken();
      m.drainEvents(2000);
      break;
    }
    if (st != MW_OK) {
      std::fprintf(stderr, "checked allreduce %s rank %d: iteration %lld: %s\n", spec.world.c_str(), spec.rank,
                   static_cast<long long>(it), mw_status_string(st));
      board.errors.fetch_add(1);
      break;
    }
    bool lost = false, dup = false, other = false, corrupt = false;
    for (size_t i = 0; i < votes; ++i) {
      const uint64_t want = part(it, i);
      for (int r = 0; r < spec.size; ++r) {
        const uint64_t f = (out[i] >> (kFieldBits * r)) & kFieldMask;
        if (f == want) continue;
        if (f == 0) {
          lost = true;
        } else if (f % want == 0) {
          dup = true;
        } else if (((f - 1) & 7) == i % 7) {
          other = true;
        } else {
          corrupt = true;
        }
      }
    }
    board.lost.fetch_add(lost);
    board.duplicated.fetch_add(dup);
    board.reordered.fetch_add(other);
    board.corrupt.fetch_add(corrupt);
    if (!(lost || dup || other || corrupt)) m.delivered(posted);
    if (out[votes] > 0) break;
  }
  m.markDone();
  m.closeWorld();
  board.finished.store(1);
  return m.failed() ? 1 : 0;
}

}  // namespace

int runCheckedStream(const TrafficSpec& spec, MemberBoard& board, const std::atomic<int>& stop) {
  if (spec.size != 2 || spec.window < 1 || spec.message_bytes < sizeof(Header)) {
    std::fprintf(stderr, "checked stream: two members, a window of at least 1 and %zu bytes\n", sizeof(Header));
    return 1;
  }
  Stream s(spec, board);
  return s.run(stop);
}

int runCheckedAllreduce(const TrafficSpec& spec, MemberBoard& board, const std::atomic<int>& stop) {
  return runAllreduce(spec, board, stop);
}

}  // namespace mwtools
