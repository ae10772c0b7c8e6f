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

uint64_t slot(uint8_t prefix) { return gloo::Slot::build(prefix, 0); }

void checkAnnounce(const Announce& a, int peer) {
  if (a.magic != kAnnounceMagic) {
    throw TransportError("corrupt point-to-point announcement from rank " + std::to_string(peer), peer);
  }
}

std::string mismatch(const char* self, size_t mine, const char* other, size_t theirs, int peer) {
  return std::string(self) + " of " + std::to_string(mine) + " bytes met a " + other + " of " +
         std::to_string(theirs) + " bytes on rank " + std::to_string(peer);
}

class GlooSend : public PendingOp {
 public:
  GlooSend(GlooLink& link, const void* buf, size_t bytes, int dst)
      : link_(link), buf_(const_cast<void*>(buf)), bytes_(bytes), dst_(dst) {
    mine_.bytes = bytes;
    room_ = link_.context().createUnboundBuffer(&theirs_, sizeof theirs_);
    told_ = link_.context().createUnboundBuffer(&mine_, sizeof mine_);
    try {
      room_->recv(dst_, slot(kRecvAnnounceSlot));
      told_->send(dst_, slot(kSendAnnounceSlot));
    } catch (const std::exception& e) {
      link_.rethrow(e, dst_);
    }
  }

  OpResult run(Deadline d) override {
    link_.waitRecv(*room_, dst_, d);
    checkAnnounce(theirs_, dst_);
    size_t n = std::min<uint64_t>(bytes_, theirs_.bytes);
    auto data = link_.context().createUnboundBuffer(buf_, n);
    try {
      data->send(dst_, slot(kDataSlot), 0, n);
    } catch (const std::exception& e) {
      link_.rethrow(e, dst_);
    }
    link_.waitSend(*data, dst_, d);
    link_.waitSend(*told_, dst_, d);
    if (theirs_.bytes != bytes_) {
      return {Status::InvalidArgument, mismatch("send", bytes_, "recv", theirs_.bytes, dst_)};
    }
    return {};
  }

 private:
  GlooLink& link_;
  void* buf_;
  size_t bytes_;
  int dst_;
  Announce mine_, theirs_;
  std::unique_ptr<gloo::transport::UnboundBuffer> room_, told_;
};

class GlooRecv : public PendingOp {
 public:
  GlooRecv(GlooLink& link, void* buf, size_t bytes, int src)
      : link_(link), bytes_(bytes), src_(src) {
    mine_.bytes = bytes;
    told_ = link_.context().createUnboundBuffer(&theirs_, sizeof theirs_);
    room_ = link_.context().createUnboundBuffer(&mine_, sizeof mine_);
    data_ = link_.context().createUnboundBuffer(buf, bytes);
    try {
      told_->recv(src_, slot(kSendAnnounceSlot));
      data_->recv(src_, slot(kDataSlot), 0, bytes);
      room_->send(src_, slot(kRecvAnnounceSlot));
    } catch (const std::exception& e) {
      link_.rethrow(e, src_);
    }
  }

  OpResult run(Deadline d) override {
    link_.waitRecv(*told_, src_, d);
    checkAnnounce(theirs_, src_);
    link_.waitRecv(*data_, src_, d);
    link_.waitSend(*room_, src_, d);
    if (theirs_.bytes != bytes_) {
      return {Status::InvalidArgument, mismatch("recv", bytes_, "send", theirs_.bytes, src_)};
    }
    return {};
  }

 private:
  GlooLink& link_;
  size_t bytes_;
  int src_;
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

std::unique_ptr<PendingOp> postGlooSend(GlooLink& link, const void* buf, size_t bytes, int dst) {
  return std::make_unique<GlooSend>(link, buf, bytes, dst);
}

std::unique_ptr<PendingOp> postGlooRecv(GlooLink& link, void* buf, size_t bytes, int src) {
  return std::make_unique<GlooRecv>(link, buf, bytes, src);
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
