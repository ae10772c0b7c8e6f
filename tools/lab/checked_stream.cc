#include <algorithm>
#include <cstdio>
#include <cstring>

#include "tools/lab/checked_member.h"
#include "tools/lab/checked_payload.h"
#include "tools/lab/checked_traffic.h"

namespace mwlab {

namespace {

using checked::Member;

// ---- the p2p stream -----------------------------------------------------------

struct Header {
  uint64_t seq;
  int64_t posted_ns;
  uint32_t from;
  uint32_t last;  // 1: the sender's last message; seq = how many came before it
};
constexpr size_t kHeaderWords = sizeof(Header) / 4;

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
    for (size_t w = kHeaderWords; w < s.buf.size(); ++w) s.buf[w] = patternWord(h.from, h.seq, w);
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
      if (s.buf[w] != patternWord(h.from, h.seq, w)) {
        std::fprintf(stderr, "checked stream %s rank %d: message %llu corrupt at word %zu\n", spec_.world.c_str(),
                     spec_.rank, static_cast<unsigned long long>(h.seq), w);
        board_.corrupt.fetch_add(1);
        return;
      }
    }
    switch (seen_.add(h.seq)) {
      case SequenceCheck::Again:
        board_.duplicated.fetch_add(1);
        return;
      case SequenceCheck::Early:
        board_.reordered.fetch_add(1);
        break;
      case SequenceCheck::InOrder:
        break;
    }
    m_.delivered(h.posted_ns);
  }

  int64_t distinctSeen() const { return static_cast<int64_t>(seen_.distinct()); }

  const TrafficSpec& spec_;
  MemberBoard& board_;
  Member m_;
  std::vector<Slot> sends_, recvs_;
  uint64_t next_seq_ = 0, peer_total_ = 0;
  SequenceCheck seen_;
  bool ending_ = false, end_posted_ = false, end_acked_ = false, end_received_ = false;
};

}  // namespace

int runCheckedStream(const TrafficSpec& spec, MemberBoard& board, const std::atomic<int>& stop) {
  if (spec.size != 2 || spec.window < 1 || spec.message_bytes < sizeof(Header)) {
    std::fprintf(stderr, "checked stream: two members, a window of at least 1 and %zu bytes\n", sizeof(Header));
    return 1;
  }
  Stream s(spec, board);
  return s.run(stop);
}
}  // namespace mwlab
