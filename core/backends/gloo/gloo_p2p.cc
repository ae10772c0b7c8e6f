#include "core/backends/gloo/gloo_p2p.h"

#include <algorithm>
#include <cstring>

#include <gloo/types.h>

namespace mw {
namespace {

constexpr uint32_t kHeaderMagic = 0x6d776864;  // "mwhd"

// What precedes every message on the header slot.
struct Header {
  uint32_t magic = kHeaderMagic;
  uint32_t seq = 0;    // low bits of the message's sequence number
  uint64_t bytes = 0;  // the sender's size; the payload follows when eager
};
static_assert(sizeof(Header) == 16, "the header is 16 bytes on the wire");
constexpr size_t kHeaderRoom = sizeof(Header) + kEagerBytes;

bool eager(uint64_t bytes) { return bytes <= kEagerBytes; }

uint64_t headerSlot() { return gloo::Slot::build(kHeaderSlot, 0); }

// Prefix byte, 20 bits of sequence number, 36 bits of size.
uint64_t dataSlot(uint64_t seq, uint64_t bytes) {
  return (uint64_t{kDataSlot} << 56) | ((seq & 0xFFFFF) << 36) | (bytes & kMaxP2pBytes);
}

}  // namespace

// Staging buffers of kHeaderRoom bytes, kept for reuse: a fresh one costs
// its pages' faults on every message, more than the copy through it.
class GlooP2p::StagingPool {
 public:
  std::unique_ptr<char[]> take() {
    {
      std::lock_guard<std::mutex> lock(m_);
      if (!free_.empty()) {
        std::unique_ptr<char[]> b = std::move(free_.back());
        free_.pop_back();
        return b;
      }
    }
    return std::unique_ptr<char[]>(new char[kHeaderRoom]);  // not zeroed: only what arrived is read
  }
  void give(std::unique_ptr<char[]> b) {
    std::lock_guard<std::mutex> lock(m_);
    if (b && free_.size() < kKept) free_.push_back(std::move(b));
  }

 private:
  static constexpr size_t kKept = 16;  // per world: at most 1 MiB idle
  std::mutex m_;
  std::vector<std::unique_ptr<char[]>> free_;
};

namespace {

class GlooSend : public PendingOp {
 public:
  GlooSend(GlooLink& link, std::shared_ptr<GlooP2p::StagingPool> pool, const void* buf, size_t bytes, int dst,
           uint64_t seq)
      : link_(link), pool_(std::move(pool)), dst_(dst), staging_(pool_->take()) {
    Header h;
    h.seq = static_cast<uint32_t>(seq);
    h.bytes = bytes;
    const size_t carried = eager(bytes) ? bytes : 0;
    const size_t size = sizeof h + carried;
    std::memcpy(staging_.get(), &h, sizeof h);
    if (carried > 0) std::memcpy(staging_.get() + sizeof h, buf, carried);
    head_ = link_.buffer(staging_.get(), size);
    if (!eager(bytes)) data_ = link_.buffer(const_cast<void*>(buf), bytes);
    try {
      head_->send(dst_, headerSlot(), 0, size);
      if (data_) data_->send(dst_, dataSlot(seq, bytes), 0, bytes);
    } catch (const std::exception& e) {
      link_.rethrow(e, dst_);
    }
  }

  bool finished(OpResult& r) override {
    try {
      if (!head_sent_) head_sent_ = head_->takeSend();
      if (head_sent_ && data_ && !data_sent_) data_sent_ = data_->takeSend();
    } catch (const std::exception& e) {
      link_.rethrow(e, dst_);
    }
    if (!head_sent_ || (data_ && !data_sent_)) return false;
    r = {};
    return true;
  }

  OpResult run(Deadline d) override {
    if (!head_sent_) link_.waitSend(*head_, dst_, d);
    if (data_ && !data_sent_) link_.waitSend(*data_, dst_, d);
    return {};
  }

  ~GlooSend() override {
    head_.reset();  // Gloo no longer reads the staging buffer after this
    pool_->give(std::move(staging_));
  }

 private:
  GlooLink& link_;
  const std::shared_ptr<GlooP2p::StagingPool> pool_;
  const int dst_;
  std::unique_ptr<char[]> staging_;  // header, and the payload when eager
  std::unique_ptr<GlooBuffer> head_, data_;
  bool head_sent_ = false, data_sent_ = false;
};

class GlooRecv;

}  // namespace

// The receives from one peer whose header has not been taken yet, in issue
// order (the order their headers arrive in).
class GlooP2p::Inbox {
 public:
  void add(GlooRecv* r) {
    std::lock_guard<std::mutex> lock(m_);
    waiting_.push_back(r);
  }
  void forget(GlooRecv* r) {
    std::lock_guard<std::mutex> lock(m_);
    waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), r), waiting_.end());
  }
  // Takes every header that has arrived and posts the receive its payload
  // calls for. Throws TransportError for `caller`, or for a receive ahead
  // of it. A receive behind it that fails (its pair closed before its
  // header came) stays waiting, and its own wait reports that: `caller`'s
  // message is in, and a peer that ends gracefully closes right after its
  // last message.
  void advance(const GlooRecv* caller);
  std::mutex& mutex() { return m_; }

 private:
  std::mutex m_;
  std::deque<GlooRecv*> waiting_;
};

namespace {

class GlooRecv : public PendingOp {
 public:
  GlooRecv(GlooLink& link, std::shared_ptr<GlooP2p::Inbox> inbox, std::shared_ptr<GlooP2p::StagingPool> pool,
           void* buf, size_t bytes, int src, uint64_t seq)
      : link_(link), inbox_(std::move(inbox)), pool_(std::move(pool)), buf_(buf), bytes_(bytes), src_(src),
        seq_(seq), staging_(pool_->take()) {
    head_ = link_.buffer(staging_.get(), kHeaderRoom);
    try {
      head_->recv(src_, headerSlot(), 0, kHeaderRoom);
    } catch (const std::exception& e) {
      link_.rethrow(e, src_);
    }
    inbox_->add(this);
  }

  ~GlooRecv() override {
    inbox_->forget(this);
    head_.reset();  // Gloo no longer writes the staging buffer after this
    pool_->give(std::move(staging_));
  }

  bool finished(OpResult& r) override {
    inbox_->advance(this);
    if (!admitted()) return false;
    if (!eager(h_.bytes)) {
      try {
        if (!data_->takeRecv()) return false;
      } catch (const std::exception& e) {
        link_.rethrow(e, src_);
      }
      data_done_ = true;
    }
    r = result();
    return true;
  }

  OpResult run(Deadline d) override {
    inbox_->advance(this);
    if (!admitted()) {
      link_.waitRecv(*head_, src_, d);
      {
        std::lock_guard<std::mutex> lock(inbox_->mutex());
        head_in_ = true;
      }
      inbox_->advance(this);  // admits this receive and those whose headers came along
    }
    if (!eager(h_.bytes) && !data_done_) link_.waitRecv(*data_, src_, d);
    data_done_ = true;
    return result();
  }

  // Under the inbox's lock: takes the header if it has arrived and posts
  // the receive for a payload that follows it. False while it is out.
  bool admit() {
    if (!head_in_) {
      try {
        head_in_ = head_->takeRecv();
      } catch (const std::exception& e) {
        link_.rethrow(e, src_);
      }
      if (!head_in_) return false;
    }
    std::memcpy(&h_, staging_.get(), sizeof h_);
    if (h_.magic != kHeaderMagic || h_.bytes > kMaxP2pBytes) {
      throw TransportError("corrupt point-to-point header from rank " + std::to_string(src_), src_);
    }
    if (h_.seq != static_cast<uint32_t>(seq_)) {
      throw TransportError("point-to-point header out of order from rank " + std::to_string(src_), src_);
    }
    if (!eager(h_.bytes)) {
      // Into the caller's buffer when the sizes agree, else into scratch:
      // the payload must leave its slot either way.
      void* into = buf_;
      if (h_.bytes != bytes_) {
        sink_.reset(new char[h_.bytes]);
        into = sink_.get();
      }
      data_ = link_.buffer(into, h_.bytes);
      try {
        data_->recv(src_, dataSlot(seq_, h_.bytes), 0, h_.bytes);
      } catch (const std::exception& e) {
        link_.rethrow(e, src_);
      }
    }
    admitted_ = true;
    return true;
  }

 private:
  bool admitted() {
    std::lock_guard<std::mutex> lock(inbox_->mutex());
    return admitted_;
  }

  // Once admitted and, for a large message, its payload has arrived.
  OpResult result() {
    if (h_.bytes != bytes_) {
      return {Status::InvalidArgument, "recv of " + std::to_string(bytes_) + " bytes met a send of " +
                                           std::to_string(h_.bytes) + " bytes on rank " + std::to_string(src_)};
    }
    if (eager(h_.bytes) && h_.bytes > 0) std::memcpy(buf_, staging_.get() + sizeof h_, h_.bytes);
    return {};
  }

  GlooLink& link_;
  const std::shared_ptr<GlooP2p::Inbox> inbox_;
  const std::shared_ptr<GlooP2p::StagingPool> pool_;
  void* const buf_;
  const size_t bytes_;
  const int src_;
  const uint64_t seq_;
  std::unique_ptr<char[]> staging_;  // the header, and an eager payload
  std::unique_ptr<char[]> sink_;     // a mismatched large payload
  std::unique_ptr<GlooBuffer> head_, data_;
  // Under the inbox's lock until admitted, then the lane's.
  bool head_in_ = false, admitted_ = false;
  Header h_;
  bool data_done_ = false;
};

}  // namespace

void GlooP2p::Inbox::advance(const GlooRecv* caller) {
  std::lock_guard<std::mutex> lock(m_);
  bool caller_admitted = std::find(waiting_.begin(), waiting_.end(), caller) == waiting_.end();
  while (!waiting_.empty()) {
    GlooRecv* r = waiting_.front();
    try {
      if (!r->admit()) return;
    } catch (const TransportError&) {
      if (caller_admitted) return;
      throw;
    }
    waiting_.pop_front();
    if (r == caller) caller_admitted = true;
  }
}

namespace {

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

GlooP2p::GlooP2p(GlooLink& link)
    : link_(link),
      sent_to_(static_cast<size_t>(link.size()), 0),
      received_from_(static_cast<size_t>(link.size()), 0) {
  for (int rank = 0; rank < link.size(); ++rank) inboxes_.push_back(std::make_shared<Inbox>());
  staging_ = std::make_shared<StagingPool>();
}

GlooP2p::~GlooP2p() = default;

std::unique_ptr<PendingOp> GlooP2p::postSend(const void* buf, size_t bytes, int dst) {
  return std::make_unique<GlooSend>(link_, staging_, buf, bytes, dst, sent_to_.at(static_cast<size_t>(dst))++);
}

std::unique_ptr<PendingOp> GlooP2p::postRecv(void* buf, size_t bytes, int src) {
  const auto peer = static_cast<size_t>(src);
  return std::make_unique<GlooRecv>(link_, inboxes_.at(peer), staging_, buf, bytes, src, received_from_.at(peer)++);
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
