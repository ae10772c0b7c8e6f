#include "core/delivery/receive_order.h"

#include <algorithm>
#include <cstring>

namespace mw {
namespace {

// Empty messages may come with null buffers on either side.
void copyOut(void* to, const char* from, size_t n) {
  if (n > 0) std::memcpy(to, from, n);
}

DeliveryOutcome fits(size_t length, size_t bytes, bool lent) {
  if (length > bytes) return DeliveryOutcome::Truncated;
  return lent ? DeliveryOutcome::Lent : DeliveryOutcome::Delivered;
}

}  // namespace

ReceiveOrder::Taken ReceiveOrder::arrive(uint64_t seq, uint64_t channel, const char* data, size_t length,
                                         void* lender, bool lent, uint64_t note) {
  if (seq <= delivered_ || early_.count(seq)) return Taken::Duplicate;
  if (striped_.count(seq)) return Taken::Refused;
  Arrival a;
  a.channel = channel;
  a.length = length;
  a.lent = lent;
  a.note = note;
  if (seq != delivered_ + 1) {
    keep(a, data, lender);
    const Taken taken = a.lender ? Taken::Held : Taken::Copied;
    early_.emplace(seq, std::move(a));
    // Its channel is known now: striped messages after it may bind.
    bindStriped();
    return taken;
  }
  ++delivered_;
  auto posted = posted_.find(channel);
  if (posted != posted_.end() && !posted->second.empty()) {
    a.data = data;  // copied out at once
  } else {
    keep(a, data, lender);
  }
  const Taken taken = a.lender ? Taken::Held : Taken::Copied;
  next(std::move(a));
  advance();
  // The head moved: the striped messages now next may bind.
  bindStriped();
  return taken;
}

ReceiveOrder::Taken ReceiveOrder::arriveChunk(uint64_t seq, uint64_t channel, size_t total, size_t offset,
                                              const char* data, size_t length, void* lender) {
  if (seq <= delivered_) return Taken::Duplicate;
  if (early_.count(seq)) return Taken::Refused;
  auto it = striped_.find(seq);
  const bool fresh = it == striped_.end();
  if (fresh) {
    it = striped_.emplace(seq, Striped(channel, total)).first;
  } else if (it->second.channel != channel || it->second.assembly.total() != total) {
    return Taken::Refused;
  }
  Striped& m = it->second;
  switch (m.assembly.take(offset, length)) {
    case ChunkAssembly::Take::Duplicate:
      return Taken::Duplicate;
    case ChunkAssembly::Take::Refused:
      if (fresh) striped_.erase(it);
      return Taken::Refused;
    case ChunkAssembly::Take::New:
      break;
  }
  // Its channel is known now: it, or striped messages after it, may bind.
  if (fresh) bindStriped();
  Taken taken = Taken::Copied;
  if (m.bound) {
    place(m, offset, data, length);
  } else {
    Arrival a;
    a.channel = channel;
    a.length = length;
    keep(a, data, lender);
    if (a.lender) taken = Taken::Held;
    m.chunks.emplace(offset, std::move(a));
  }
  if (m.assembly.complete()) advance();
  return taken;
}

void ReceiveOrder::advance() {
  for (;;) {
    const uint64_t seq = delivered_ + 1;
    if (auto e = early_.find(seq); e != early_.end()) {
      Arrival a = std::move(e->second);
      early_.erase(e);
      ++delivered_;
      next(std::move(a));
      continue;
    }
    auto s = striped_.find(seq);
    if (s == striped_.end() || !s->second.assembly.complete()) return;
    Striped m = std::move(s->second);
    striped_.erase(s);
    ++delivered_;
    const size_t total = m.assembly.total();
    if (m.bound) {
      m.receive.done(fits(total, m.receive.bytes, false), total);
      continue;
    }
    // No receive for it yet: it waits as one copy.
    Arrival a;
    a.channel = m.channel;
    a.length = total;
    a.copy.resize(total);
    for (auto& [offset, chunk] : m.chunks) {
      copyOut(a.copy.data() + offset, chunk.data, chunk.length);
      release(chunk);
    }
    a.data = a.copy.data();
    next(std::move(a));
  }
}

void ReceiveOrder::bindStriped() {
  if (striped_.empty()) return;
  // By channel: the messages ahead, known and unbound, that take that
  // channel's receives first.
  std::map<uint64_t, size_t> ahead;
  for (uint64_t seq = delivered_ + 1;; ++seq) {
    if (auto e = early_.find(seq); e != early_.end()) {
      ++ahead[e->second.channel];
      continue;
    }
    auto s = striped_.find(seq);
    // A message that has not announced its channel: nothing after it can
    // be placed.
    if (s == striped_.end()) return;
    Striped& m = s->second;
    if (m.bound) continue;
    size_t& k = ahead[m.channel];
    auto q = posted_.find(m.channel);
    if (q == posted_.end() || q->second.size() <= k) {
      ++k;
      continue;
    }
    Posted r = std::move(q->second[k]);
    q->second.erase(q->second.begin() + static_cast<long>(k));
    if (q->second.empty()) posted_.erase(q);
    channel_of_.erase(r.id);
    bind(m, std::move(r));
  }
}

void ReceiveOrder::bind(Striped& m, Posted r) {
  m.bound = true;
  m.receive = std::move(r);
  for (auto& [offset, chunk] : m.chunks) {
    place(m, offset, chunk.data, chunk.length);
    release(chunk);
  }
  m.chunks.clear();
}

void ReceiveOrder::place(const Striped& m, size_t offset, const char* data, size_t length) {
  // What falls past a shorter receive is cut off: it ends Truncated.
  if (offset >= m.receive.bytes) return;
  copyOut(static_cast<char*>(m.receive.buffer) + offset, data, std::min(length, m.receive.bytes - offset));
}

void ReceiveOrder::next(Arrival a) {
  auto queue = posted_.find(a.channel);
  if (queue == posted_.end() || queue->second.empty()) {
    waiting_[a.channel].push_back(std::move(a));
    return;
  }
  Posted r = std::move(queue->second.front());
  queue->second.pop_front();
  if (queue->second.empty()) posted_.erase(queue);
  channel_of_.erase(r.id);
  copyOut(r.buffer, a.data, std::min(r.bytes, a.length));
  release(a);
  if (a.note && matched_) matched_(a.note);
  r.done(fits(a.length, r.bytes, a.lent), a.length);
}

void ReceiveOrder::keep(Arrival& a, const char* data, void* lender) {
  if (lender && release_) {
    a.data = data;
    a.lender = lender;
  } else {
    a.copy.assign(data, data + a.length);
    a.data = a.copy.data();
  }
}

void ReceiveOrder::release(Arrival& a) {
  if (a.lender) release_(a.lender, a.data, a.length);
  a.lender = nullptr;
  a.data = nullptr;
  a.copy.clear();
}

uint64_t ReceiveOrder::post(uint64_t channel, void* buffer, size_t bytes, Done done) {
  auto waiting = waiting_.find(channel);
  if (waiting != waiting_.end() && !waiting->second.empty()) {
    Arrival a = std::move(waiting->second.front());
    waiting->second.pop_front();
    if (waiting->second.empty()) waiting_.erase(waiting);
    copyOut(buffer, a.data, std::min(bytes, a.length));
    const size_t length = a.length;
    const bool lent = a.lent;
    const uint64_t note = a.note;
    release(a);
    if (note && matched_) matched_(note);
    done(fits(length, bytes, lent), length);
    return 0;
  }
  const uint64_t id = next_id_++;
  posted_[channel].push_back(Posted{id, buffer, bytes, std::move(done)});
  channel_of_[id] = channel;
  bindStriped();
  return id;
}

bool ReceiveOrder::cancel(uint64_t id) {
  auto known = channel_of_.find(id);
  if (known == channel_of_.end()) return false;
  const uint64_t channel = known->second;
  channel_of_.erase(known);
  auto queue = posted_.find(channel);
  if (queue == posted_.end()) return false;
  for (auto r = queue->second.begin(); r != queue->second.end(); ++r) {
    if (r->id != id) continue;
    Done done = std::move(r->done);
    queue->second.erase(r);
    if (queue->second.empty()) posted_.erase(queue);
    done(DeliveryOutcome::GivenUp, 0);
    return true;
  }
  return false;
}

bool ReceiveOrder::waiting(uint64_t channel) const {
  auto waiting = waiting_.find(channel);
  return waiting != waiting_.end() && !waiting->second.empty();
}

void ReceiveOrder::releaseAll() {
  for (auto& [channel, queue] : waiting_) {
    for (Arrival& a : queue) release(a);
  }
  waiting_.clear();
  for (auto& [seq, a] : early_) release(a);
  early_.clear();
  for (auto& [seq, m] : striped_) {
    for (auto& [offset, chunk] : m.chunks) release(chunk);
  }
  striped_.clear();
}

void ReceiveOrder::endStriped() {
  std::vector<Done> ending;
  for (auto& [seq, m] : striped_) {
    for (auto& [offset, chunk] : m.chunks) release(chunk);
    if (m.bound) ending.push_back(std::move(m.receive.done));
  }
  striped_.clear();
  for (Done& done : ending) done(DeliveryOutcome::GivenUp, 0);
}

void ReceiveOrder::dropArrivals() {
  endStriped();
  releaseAll();
}

void ReceiveOrder::giveUp() {
  endStriped();
  auto ending = std::move(posted_);
  posted_.clear();
  channel_of_.clear();
  for (auto& [channel, queue] : ending) {
    for (Posted& r : queue) r.done(DeliveryOutcome::GivenUp, 0);
  }
}

}  // namespace mw
