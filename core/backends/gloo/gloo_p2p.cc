#include "core/backends/gloo/gloo_p2p.h"

#include <algorithm>
#include <cstring>

#include <gloo/types.h>

namespace mw {
namespace {

constexpr uint32_t kHeaderMagic = 0x6d776864;  // "mwhd"
constexpr uint32_t kNackMagic = 0x6d776e6b;    // "mwnk"

// A header (sender to receiver: the size of the payload it sent) or a NACK
// (receiver to sender: the size the receiver expected instead).
struct Control {
  uint32_t magic = 0;
  uint32_t seq = 0;  // low bits of the message's sequence number
  uint64_t bytes = 0;
};
static_assert(sizeof(Control) == 16, "one control message is 16 bytes on the wire");

Control control(uint32_t magic, uint64_t seq, uint64_t bytes) {
  Control c;
  c.magic = magic;
  c.seq = static_cast<uint32_t>(seq);
  c.bytes = bytes;
  return c;
}

void checkControl(const Control& c, uint32_t magic, int peer) {
  if (c.magic != magic || c.bytes > kMaxP2pBytes) {
    throw TransportError(std::string("corrupt point-to-point ") + (magic == kHeaderMagic ? "header" : "NACK") +
                             " from rank " + std::to_string(peer),
                         peer);
  }
}

uint64_t fixedSlot(uint8_t prefix) { return gloo::Slot::build(prefix, 0); }

// Prefix byte, 20 bits of sequence number, 36 bits of size.
uint64_t dataSlot(uint64_t seq, uint64_t bytes) {
  return (uint64_t{kDataSlot} << 56) | ((seq & 0xFFFFF) << 36) | (bytes & kMaxP2pBytes);
}

std::string mismatch(const char* self, size_t mine, const char* other, size_t theirs, int peer) {
  return std::string(self) + " of " + std::to_string(mine) + " bytes met a " + other + " of " +
         std::to_string(theirs) + " bytes on rank " + std::to_string(peer);
}

}  // namespace

struct GlooP2p::Peer {
  uint64_t sent = 0, received = 0;  // messages issued; on the issuing thread only

  // The NACK receive from this peer, shared by the sends to it: whichever
  // checks first takes the NACK, and keeps it for the send it names.
  std::mutex m;
  Control nack;
  std::unique_ptr<GlooBuffer> nack_buffer;
  bool nack_held = false;  // `nack` arrived and has not been claimed yet

  // True, with the receiver's size, when the peer NACKed message `seq`;
  // the NACK receive is then posted again.
  bool takeNack(GlooLink& link, int peer, uint64_t seq, uint64_t* theirs) {
    std::lock_guard<std::mutex> lock(m);
    try {
      if (!nack_held) nack_held = nack_buffer->takeRecv();
    } catch (const std::exception& e) {
      link.rethrow(e, peer);
    }
    if (!nack_held) return false;
    checkControl(nack, kNackMagic, peer);
    // At most one NACK is in flight per direction (the receiver sends the
    // next only after this one's filler); one for a later message waits.
    if (nack.seq != static_cast<uint32_t>(seq)) return false;
    *theirs = nack.bytes;
    nack_held = false;
    try {
      nack_buffer->recv(peer, fixedSlot(kNackSlot), 0, sizeof nack);
    } catch (const std::exception& e) {
      link.rethrow(e, peer);
    }
    return true;
  }
};

namespace {

class GlooSend : public PendingOp {
 public:
  GlooSend(GlooLink& link, std::shared_ptr<GlooP2p::Peer> peer, const void* buf, size_t bytes, int dst)
      : link_(link), peer_(std::move(peer)), bytes_(bytes), dst_(dst), seq_(peer_->sent++) {
    header_ = control(kHeaderMagic, seq_, bytes_);
    data_ = link_.buffer(const_cast<void*>(buf), bytes);
    head_ = link_.buffer(&header_, sizeof header_);
    try {
      // Payload first, so that the header the receiver waits for finds it
      // already there.
      data_->send(dst_, dataSlot(seq_, bytes_), 0, bytes_);
      head_->send(dst_, fixedSlot(kHeaderSlot), 0, sizeof header_);
    } catch (const std::exception& e) {
      link_.rethrow(e, dst_);
    }
  }

  bool finished(OpResult& r) override {
    if (!takeSent() || nacked()) return false;
    r = {};
    return true;
  }

  OpResult run(Deadline d) override {
    if (!data_sent_) link_.waitSend(*data_, dst_, d);
    data_sent_ = true;
    if (!head_sent_) link_.waitSend(*head_, dst_, d);
    head_sent_ = true;
    if (!nacked()) return {};
    // The receiver waits on the slot of its own size: feed it.
    std::vector<char> filler(theirs_, 0);
    auto feed = link_.buffer(filler.data(), filler.size());
    try {
      feed->send(dst_, dataSlot(seq_, theirs_), 0, filler.size());
    } catch (const std::exception& e) {
      link_.rethrow(e, dst_);
    }
    link_.waitSend(*feed, dst_, d);
    return {Status::InvalidArgument, mismatch("send", bytes_, "recv", theirs_, dst_)};
  }

 private:
  bool takeSent() {
    try {
      if (!data_sent_) data_sent_ = data_->takeSend();
      if (data_sent_ && !head_sent_) head_sent_ = head_->takeSend();
    } catch (const std::exception& e) {
      link_.rethrow(e, dst_);
    }
    return data_sent_ && head_sent_;
  }

  // Only once the payload has gone: a receiver that NACKs does so before
  // it drains the payload, so the NACK has arrived by then.
  bool nacked() {
    if (!nack_checked_) nacked_ = peer_->takeNack(link_, dst_, seq_, &theirs_);
    nack_checked_ = true;
    return nacked_;
  }

  GlooLink& link_;
  const std::shared_ptr<GlooP2p::Peer> peer_;
  const size_t bytes_;
  const int dst_;
  const uint64_t seq_;
  Control header_;
  std::unique_ptr<GlooBuffer> data_, head_;
  bool data_sent_ = false, head_sent_ = false;
  bool nack_checked_ = false, nacked_ = false;
  uint64_t theirs_ = 0;
};

class GlooRecv : public PendingOp {
 public:
  GlooRecv(GlooLink& link, std::shared_ptr<GlooP2p::Peer> peer, void* buf, size_t bytes, int src)
      : link_(link), peer_(std::move(peer)), bytes_(bytes), src_(src), seq_(peer_->received++) {
    data_ = link_.buffer(buf, bytes);
    head_ = link_.buffer(&theirs_, sizeof theirs_);
    try {
      // In the sender's order, so that a sender that was first writes the
      // payload before the header here too.
      data_->recv(src_, dataSlot(seq_, bytes_), 0, bytes_);
      head_->recv(src_, fixedSlot(kHeaderSlot), 0, sizeof theirs_);
    } catch (const std::exception& e) {
      link_.rethrow(e, src_);
    }
  }

  bool finished(OpResult& r) override {
    try {
      if (!head_done_) head_done_ = head_->takeRecv();
      if (!head_done_) return false;
      checkHeader();
      if (theirs_.bytes != bytes_) return false;
      if (!data_done_) data_done_ = data_->takeRecv();
    } catch (const TransportError&) {
      throw;
    } catch (const std::exception& e) {
      link_.rethrow(e, src_);
    }
    if (!data_done_) return false;
    r = {};
    return true;
  }

  OpResult run(Deadline d) override {
    if (!head_done_) link_.waitRecv(*head_, src_, d);
    head_done_ = true;
    checkHeader();
    if (theirs_.bytes == bytes_) {
      if (!data_done_) link_.waitRecv(*data_, src_, d);
      data_done_ = true;
      return {};
    }
    // Tell the sender, and only then take its payload away: the sender
    // looks for the NACK once its payload has gone.
    Control nack = control(kNackMagic, seq_, bytes_);
    auto told = link_.buffer(&nack, sizeof nack);
    std::vector<char> sink(theirs_.bytes);
    auto drain = link_.buffer(sink.data(), sink.size());
    try {
      told->send(src_, fixedSlot(kNackSlot), 0, sizeof nack);
      link_.waitSend(*told, src_, d);
      drain->recv(src_, dataSlot(seq_, theirs_.bytes), 0, sink.size());
    } catch (const TransportError&) {
      throw;
    } catch (const std::exception& e) {
      link_.rethrow(e, src_);
    }
    link_.waitRecv(*drain, src_, d);
    link_.waitRecv(*data_, src_, d);  // the sender's filler
    return {Status::InvalidArgument, mismatch("recv", bytes_, "send", theirs_.bytes, src_)};
  }

 private:
  void checkHeader() const {
    checkControl(theirs_, kHeaderMagic, src_);
    if (theirs_.seq != static_cast<uint32_t>(seq_)) {
      throw TransportError("point-to-point header out of order from rank " + std::to_string(src_), src_);
    }
  }

  GlooLink& link_;
  const std::shared_ptr<GlooP2p::Peer> peer_;
  const size_t bytes_;
  const int src_;
  const uint64_t seq_;
  Control theirs_;
  std::unique_ptr<GlooBuffer> data_, head_;
  bool head_done_ = false, data_done_ = false;
};

class Done : public PendingOp {
 public:
  explicit Done(OpResult r) : r_(std::move(r)) {}
  OpResult run(Deadline) override { return r_; }
  bool finished(OpResult& r) override {
    r = r_;
    return true;
  }

 private:
  OpResult r_;
};

}  // namespace

GlooP2p::GlooP2p(GlooLink& link) : link_(link), peers_(static_cast<size_t>(link.size())) {
  for (int rank = 0; rank < link_.size(); ++rank) {
    if (rank == link_.rank()) continue;
    auto peer = std::make_shared<Peer>();
    peer->nack_buffer = link_.buffer(&peer->nack, sizeof peer->nack);
    peer->nack_buffer->recv(rank, fixedSlot(kNackSlot), 0, sizeof peer->nack);
    peers_[static_cast<size_t>(rank)] = std::move(peer);
  }
}

GlooP2p::~GlooP2p() = default;

std::unique_ptr<PendingOp> GlooP2p::postSend(const void* buf, size_t bytes, int dst) {
  return std::make_unique<GlooSend>(link_, peers_.at(static_cast<size_t>(dst)), buf, bytes, dst);
}

std::unique_ptr<PendingOp> GlooP2p::postRecv(void* buf, size_t bytes, int src) {
  return std::make_unique<GlooRecv>(link_, peers_.at(static_cast<size_t>(src)), buf, bytes, src);
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
