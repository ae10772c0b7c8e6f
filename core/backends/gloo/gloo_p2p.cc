#include "core/backends/gloo/gloo_p2p.h"

#include <algorithm>
#include <cstring>

#include <gloo/types.h>

namespace mw {
namespace {

constexpr uint64_t kAnnounceMagic = 0x6d77616e6e6f756eULL;  // "mwannoun"

struct Announce {
  uint64_t bytes = 0;
  uint64_t magic = kAnnounceMagic;
};

uint64_t fixedSlot(uint8_t prefix) { return gloo::Slot::build(prefix, 0); }

// Prefix byte, 20 bits of sequence number, 36 bits of size.
uint64_t dataSlot(uint64_t seq, uint64_t bytes) {
  return (uint64_t{kDataSlot} << 56) | ((seq & 0xFFFFF) << 36) | (bytes & kMaxP2pBytes);
}

void checkAnnounce(const Announce& a, int peer) {
  if (a.magic != kAnnounceMagic || a.bytes > kMaxP2pBytes) {
    throw TransportError("corrupt point-to-point announcement from rank " + std::to_string(peer), peer);
  }
}

std::string mismatch(const char* self, size_t mine, const char* other, size_t theirs, int peer) {
  return std::string(self) + " of " + std::to_string(mine) + " bytes met a " + other + " of " +
         std::to_string(theirs) + " bytes on rank " + std::to_string(peer);
}

class GlooSend : public PendingOp {
 public:
  GlooSend(GlooLink& link, const void* buf, size_t bytes, int dst, uint64_t seq)
      : link_(link), bytes_(bytes), dst_(dst), seq_(seq) {
    mine_.bytes = bytes;
    room_ = link_.context().createUnboundBuffer(&theirs_, sizeof theirs_);
    told_ = link_.context().createUnboundBuffer(&mine_, sizeof mine_);
    data_ = link_.context().createUnboundBuffer(const_cast<void*>(buf), bytes);
    try {
      room_->recv(dst_, fixedSlot(kRecvAnnounceSlot));
      told_->send(dst_, fixedSlot(kSendAnnounceSlot));
      data_->send(dst_, dataSlot(seq_, bytes_), 0, bytes_);
    } catch (const std::exception& e) {
      link_.rethrow(e, dst_);
    }
  }

  OpResult run(Deadline d) override {
    // The filler must go out before waiting for our payload: on a mismatch
    // the receiver drains our payload only after its own slot was fed.
    link_.waitRecv(*room_, dst_, d);
    checkAnnounce(theirs_, dst_);
    std::vector<char> filler;
    std::unique_ptr<gloo::transport::UnboundBuffer> feed;
    if (theirs_.bytes != bytes_) {
      // The receiver waits on the slot of its own size: feed it.
      filler.assign(theirs_.bytes, 0);
      feed = link_.context().createUnboundBuffer(filler.data(), filler.size());
      try {
        feed->send(dst_, dataSlot(seq_, theirs_.bytes), 0, filler.size());
      } catch (const std::exception& e) {
        link_.rethrow(e, dst_);
      }
    }
    link_.waitSend(*data_, dst_, d);
    if (feed) link_.waitSend(*feed, dst_, d);
    link_.waitSend(*told_, dst_, d);
    if (feed) return {Status::InvalidArgument, mismatch("send", bytes_, "recv", theirs_.bytes, dst_)};
    return {};
  }

 private:
  GlooLink& link_;
  size_t bytes_;
  int dst_;
  uint64_t seq_;
  Announce mine_, theirs_;
  std::unique_ptr<gloo::transport::UnboundBuffer> room_, told_, data_;
};

class GlooRecv : public PendingOp {
 public:
  GlooRecv(GlooLink& link, void* buf, size_t bytes, int src, uint64_t seq)
      : link_(link), bytes_(bytes), src_(src), seq_(seq) {
    mine_.bytes = bytes;
    told_ = link_.context().createUnboundBuffer(&theirs_, sizeof theirs_);
    room_ = link_.context().createUnboundBuffer(&mine_, sizeof mine_);
    data_ = link_.context().createUnboundBuffer(buf, bytes);
    try {
      told_->recv(src_, fixedSlot(kSendAnnounceSlot));
      data_->recv(src_, dataSlot(seq_, bytes_), 0, bytes_);
      room_->send(src_, fixedSlot(kRecvAnnounceSlot));
    } catch (const std::exception& e) {
      link_.rethrow(e, src_);
    }
  }

  OpResult run(Deadline d) override {
    // The payload (or, on a mismatch, the sender's filler, which it sends
    // without waiting for us) arrives after the sender's announcement:
    // waiting for it first wakes the worker once rather than twice.
    link_.waitRecv(*data_, src_, d);
    link_.waitRecv(*told_, src_, d);
    checkAnnounce(theirs_, src_);
    std::vector<char> sink;
    std::unique_ptr<gloo::transport::UnboundBuffer> drain;
    if (theirs_.bytes != bytes_) {
      // The sender's payload sits on the slot of its size: take it away.
      sink.resize(theirs_.bytes);
      drain = link_.context().createUnboundBuffer(sink.data(), sink.size());
      try {
        drain->recv(src_, dataSlot(seq_, theirs_.bytes), 0, sink.size());
      } catch (const std::exception& e) {
        link_.rethrow(e, src_);
      }
    }
    if (drain) link_.waitRecv(*drain, src_, d);
    link_.waitSend(*room_, src_, d);
    if (drain) return {Status::InvalidArgument, mismatch("recv", bytes_, "send", theirs_.bytes, src_)};
    return {};
  }

 private:
  GlooLink& link_;
  size_t bytes_;
  int src_;
  uint64_t seq_;
  Announce mine_, theirs_;
  std::unique_ptr<gloo::transport::UnboundBuffer> told_, room_, data_;
};

class Done : public PendingOp {
 public:
  explicit Done(OpResult r) : r_(std::move(r)) {}
  OpResult run(Deadline) override { return r_; }

 private:
  OpResult r_;
};

}  // namespace

std::unique_ptr<PendingOp> postGlooSend(GlooLink& link, const void* buf, size_t bytes, int dst, uint64_t seq) {
  return std::make_unique<GlooSend>(link, buf, bytes, dst, seq);
}

std::unique_ptr<PendingOp> postGlooRecv(GlooLink& link, void* buf, size_t bytes, int src, uint64_t seq) {
  return std::make_unique<GlooRecv>(link, buf, bytes, src, seq);
}

struct SelfChannel::Slot {
  void* buf;
  size_t bytes;
  bool filled = false;
  OpResult result;
};

namespace {

OpResult copyInto(void* dst, size_t room, const void* src, size_t bytes) {
  size_t n = std::min(room, bytes);
  if (n > 0) std::memcpy(dst, src, n);  // count 0 may come with NULL buffers
  if (room != bytes) {
    return {Status::InvalidArgument,
            "recv of " + std::to_string(room) + " bytes met a send of " + std::to_string(bytes) +
                " bytes from this same rank"};
  }
  return {};
}

}  // namespace

class SelfRecv : public PendingOp {
 public:
  SelfRecv(SelfChannel& ch, std::shared_ptr<SelfChannel::Slot> slot) : ch_(ch), slot_(std::move(slot)) {}
  OpResult run(Deadline d) override {
    std::unique_lock<std::mutex> lock(ch_.m_);
    if (!ch_.cv_.wait_until(lock, d, [&] { return slot_->filled || ch_.aborted_; })) {
      throw TransportError("recv from self ran past op_timeout_ms", -1);
    }
    if (!slot_->filled) throw TransportError("world aborted", -1);
    return slot_->result;
  }

 private:
  SelfChannel& ch_;
  std::shared_ptr<SelfChannel::Slot> slot_;
};

std::unique_ptr<PendingOp> SelfChannel::postSend(const void* buf, size_t bytes) {
  std::lock_guard<std::mutex> lock(m_);
  if (!waiting_.empty()) {
    auto slot = std::move(waiting_.front());
    waiting_.pop_front();
    slot->result = copyInto(slot->buf, slot->bytes, buf, bytes);
    slot->filled = true;
    cv_.notify_all();
    OpResult mine;
    if (slot->bytes != bytes) {
      mine = {Status::InvalidArgument, "send of " + std::to_string(bytes) + " bytes met a recv of " +
                                           std::to_string(slot->bytes) + " bytes on this same rank"};
    }
    return std::make_unique<Done>(mine);
  }
  const char* p = static_cast<const char*>(buf);
  unclaimed_.emplace_back(p, p + bytes);
  return std::make_unique<Done>(OpResult{});
}

std::unique_ptr<PendingOp> SelfChannel::postRecv(void* buf, size_t bytes) {
  std::lock_guard<std::mutex> lock(m_);
  if (!unclaimed_.empty()) {
    std::vector<char> data = std::move(unclaimed_.front());
    unclaimed_.pop_front();
    return std::make_unique<Done>(copyInto(buf, bytes, data.data(), data.size()));
  }
  auto slot = std::make_shared<Slot>();
  slot->buf = buf;
  slot->bytes = bytes;
  waiting_.push_back(slot);
  return std::make_unique<SelfRecv>(*this, std::move(slot));
}

void SelfChannel::abort() {
  {
    std::lock_guard<std::mutex> lock(m_);
    aborted_ = true;
  }
  cv_.notify_all();
}

}  // namespace mw
