// A two-member world's checked stream: each side keeps a window of sends
// and receives posted, paced; every message carries its sender, world and
// sequence number and a pattern derived from them, and is checked on
// arrival (exactly once, in order, correct bytes). A graceful end is a
// marked last message each way that says how many came before it.
#include <algorithm>
#include <cstring>
#include <vector>

#include "bench/soak/soak_traffic.h"
#include "tools/lab/checked_payload.h"
#include "tools/lab/clock.h"

namespace mwbench {
namespace soak {

namespace {

struct Header {
  uint64_t seq;
  uint32_t from;   // member id
  uint32_t world;  // topology index
  uint32_t last;   // 1: the sender's last message; seq = how many came before it
  uint32_t pad;
  uint64_t unused;
};
constexpr size_t kHeaderWords = sizeof(Header) / 4;
constexpr int kWindow = 4;

// The pattern's key: the sender in its world.
uint64_t patternKey(uint32_t world, uint32_t from) { return static_cast<uint64_t>(world) << 8 | from; }

class Stream : public WorldTraffic {
 public:
  Stream(const WorldSpec& spec, int world_index, int member, Cell& cell, Notes& notes)
      : spec_(spec), index_(world_index), member_(member), cell_(cell), notes_(notes) {
    const int rank = spec.rankOf(member);
    peer_rank_ = 1 - rank;
    peer_ = spec.members[static_cast<size_t>(peer_rank_)];
    const size_t words = std::max(spec.bytes, sizeof(Header)) / 4;
    for (auto* v : {&sends_, &recvs_}) {
      v->resize(kWindow);
      for (auto& s : *v) s.buf.resize(words);
    }
  }

  void start(mw_world_t* w, int64_t now) override {
    world_ = w;
    tag_ = (tag_ + 1) & 0xffff;
    next_seq_ = peer_total_ = 0;
    seen_.reset();
    ending_ = end_posted_ = end_acked_ = end_received_ = false;
    broken_ns_ = 0;
    next_post_ = now;
    for (int i = 0; i < kWindow; ++i) postRecv(i);
  }

  void tick(int64_t now) override {
    if (broken_ns_ || !world_) return;
    if (!ending_) {
      while (now >= next_post_ && postSend(false)) {
        next_post_ = std::max(next_post_ + spec_.interval_us * 1000LL, now - spec_.interval_us * 1000LL);
      }
    } else if (!end_posted_ && busySends() == 0) {
      end_posted_ = postSend(true);
    }
  }

  int64_t nextDueNs() const override {
    if (broken_ns_ || !world_ || ending_ || busySends() == kWindow) return INT64_MAX;
    return next_post_;
  }

  void complete(const mw_completion_t& c, int64_t now) override {
    const uint32_t token = static_cast<uint32_t>(c.user_data);
    const bool recv = (token & 0x8000) != 0;
    const int i = static_cast<int>(token & 0xff);
    Slot* s = (token >> 16) == tag_ && i < kWindow ? &(recv ? recvs_ : sends_)[static_cast<size_t>(i)] : nullptr;
    if (!s || s->req != c.request) {
      mw_request_free(c.request);  // not of this incarnation: never expected
      notes_.note("world %s: a completion that belongs to no pending request", spec_.name.c_str());
      return;
    }
    mw_request_free(s->req);
    s->req = nullptr;
    const bool cancel = s->cancelled;
    s->cancelled = false;
    if (c.status == MW_ERR_WORLD_BROKEN) {
      if (!broken_ns_) broken_ns_ = now;
      return;
    }
    if (c.status == MW_ERR_CANCELLED) {
      if (cancel) {
        cell_.cancels_taken_back.fetch_add(1);
        if (!end_received_) postRecv(i);
      }
      return;
    }
    if (c.status != MW_OK) {
      notes_.note("world %s: a %s completed with %s", spec_.name.c_str(), recv ? "receive" : "send",
                  mw_status_string(c.status));
      return;
    }
    if (cancel) cell_.cancels_too_late.fetch_add(1);
    if (!recv) {
      Header h;
      std::memcpy(&h, s->buf.data(), sizeof h);
      if (h.last) {
        end_acked_ = true;
      } else {
        cell_.sent.fetch_add(1);
      }
      return;
    }
    check(*s);
    if (!end_received_) postRecv(i);
  }

  void beginEnd() override { ending_ = true; }
  bool peerEnding() const override { return end_received_; }
  bool done() const override { return end_received_ && end_acked_; }
  int64_t brokenNs() const override { return broken_ns_; }

  bool cancelNewestReceive() override {
    Slot* newest = nullptr;
    for (auto& s : recvs_) {
      if (s.req && !s.cancelled && (!newest || s.posted > newest->posted)) newest = &s;
    }
    if (!newest) return false;
    newest->cancelled = true;
    const mw_status_t st = mw_request_cancel(newest->req);
    if (st != MW_OK) notes_.note("world %s: mw_request_cancel: %s", spec_.name.c_str(), mw_last_error());
    return true;
  }

  void afterBreak() override {
    // A message after a hole arrived, the one in the hole never did.
    cell_.lost.fetch_add(static_cast<int64_t>(seen_.holes()));
  }

  void releaseAfterDestroy() override {
    for (auto* v : {&sends_, &recvs_}) {
      for (auto& s : *v) {
        mw_request_free(s.req);
        s.req = nullptr;
        s.cancelled = false;
      }
    }
    world_ = nullptr;
  }

 private:
  struct Slot {
    std::vector<uint32_t> buf;
    mw_request_t* req = nullptr;
    uint64_t posted = 0;  // order of posting, for the newest
    bool cancelled = false;
  };

  int busySends() const {
    return static_cast<int>(std::count_if(sends_.begin(), sends_.end(), [](const Slot& s) { return s.req; }));
  }

  bool postSend(bool last) {
    auto it = std::find_if(sends_.begin(), sends_.end(), [](const Slot& s) { return !s.req; });
    if (it == sends_.end()) return false;
    Slot& s = *it;
    const Header h{next_seq_, static_cast<uint32_t>(member_), static_cast<uint32_t>(index_), last ? 1u : 0u, 0, 0};
    std::memcpy(s.buf.data(), &h, sizeof h);
    for (size_t w = kHeaderWords; w < s.buf.size(); ++w) s.buf[w] = mwlab::patternWord(patternKey(h.world, h.from), h.seq, w);
    const mw_status_t st = mw_send_async(world_, s.buf.data(), s.buf.size(), MW_UINT32, peer_rank_, &s.req);
    if (st != MW_OK) {
      s.req = nullptr;
      failedPost(st, "mw_send_async");
      return false;
    }
    mw_request_set_user_data(s.req, userData(index_, tag_ << 16 | static_cast<uint32_t>(it - sends_.begin())));
    if (!last) ++next_seq_;
    return true;
  }

  void postRecv(int i) {
    Slot& s = recvs_[static_cast<size_t>(i)];
    const mw_status_t st = mw_recv_async(world_, s.buf.data(), s.buf.size(), MW_UINT32, peer_rank_, &s.req);
    if (st != MW_OK) {
      s.req = nullptr;
      failedPost(st, "mw_recv_async");
      return;
    }
    s.posted = ++posts_;
    mw_request_set_user_data(s.req, userData(index_, tag_ << 16 | 0x8000 | static_cast<uint32_t>(i)));
  }

  void failedPost(mw_status_t st, const char* what) {
    if (st == MW_ERR_WORLD_BROKEN) {
      // Timed now: the loop's `now` may predate a fault the driver began.
      if (!broken_ns_) broken_ns_ = mwlab::monotonicNs();
      return;
    }
    notes_.note("world %s: %s: %s (%s)", spec_.name.c_str(), what, mw_status_string(st), mw_last_error());
  }

  void check(const Slot& s) {
    Header h;
    std::memcpy(&h, s.buf.data(), sizeof h);
    if (h.from != static_cast<uint32_t>(peer_) || h.world != static_cast<uint32_t>(index_)) {
      cell_.corrupt.fetch_add(1);
      notes_.note("world %s: a message from member %u of world %u", spec_.name.c_str(), h.from, h.world);
      return;
    }
    if (h.last) {
      end_received_ = true;
      peer_total_ = h.seq;
      if (peer_total_ > seen_.distinct()) cell_.lost.fetch_add(static_cast<int64_t>(peer_total_ - seen_.distinct()));
      return;
    }
    for (size_t w = kHeaderWords; w < s.buf.size(); ++w) {
      if (s.buf[w] != mwlab::patternWord(patternKey(h.world, h.from), h.seq, w)) {
        cell_.corrupt.fetch_add(1);
        notes_.note("world %s: message %llu corrupt at word %zu", spec_.name.c_str(),
                    static_cast<unsigned long long>(h.seq), w);
        return;
      }
    }
    const uint64_t expected = seen_.expected();
    switch (seen_.add(h.seq)) {
      case mwlab::SequenceCheck::Again:
        cell_.duplicated.fetch_add(1);
        notes_.note("world %s: message %llu again (expected %llu)", spec_.name.c_str(),
                    static_cast<unsigned long long>(h.seq), static_cast<unsigned long long>(expected));
        return;
      case mwlab::SequenceCheck::Early:
        cell_.reordered.fetch_add(1);
        notes_.note("world %s: message %llu before %llu", spec_.name.c_str(), static_cast<unsigned long long>(h.seq),
                    static_cast<unsigned long long>(expected));
        break;
      case mwlab::SequenceCheck::InOrder:
        break;
    }
    cell_.delivered.fetch_add(1);
  }

  const WorldSpec& spec_;
  const int index_, member_;
  Cell& cell_;
  Notes& notes_;
  int peer_rank_ = 0, peer_ = 0;
  mw_world_t* world_ = nullptr;
  uint32_t tag_ = 0;
  std::vector<Slot> sends_, recvs_;
  uint64_t next_seq_ = 0, peer_total_ = 0, posts_ = 0;
  mwlab::SequenceCheck seen_;
  bool ending_ = false, end_posted_ = false, end_acked_ = false, end_received_ = false;
  int64_t broken_ns_ = 0, next_post_ = 0;
};

}  // namespace

std::unique_ptr<WorldTraffic> makeStream(const WorldSpec& spec, int world_index, int member, Cell& cell,
                                         Notes& notes) {
  return std::make_unique<Stream>(spec, world_index, member, cell, notes);
}

}  // namespace soak
}  // namespace mwbench
