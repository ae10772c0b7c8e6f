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
  Arrival a;
  a.channel = channel;
  a.length = length;
  a.lent = lent;
  a.note = note;
  if (seq != delivered_ + 1) {
    keep(a, data, lender);
    const Taken taken = a.lender ? Taken::Held : Taken::Copied;
    early_.emplace(seq, std::move(a));
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
  // What came early follows, in order.
  for (auto e = early_.find(delivered_ + 1); e != early_.end(); e = early_.find(delivered_ + 1)) {
    Arrival following = std::move(e->second);
    early_.erase(e);
    ++delivered_;
    next(std::move(following));
  }
  return taken;
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

void ReceiveOrder::dropArrivals() {
  for (auto& [channel, queue] : waiting_) {
    for (Arrival& a : queue) release(a);
  }
  waiting_.clear();
  for (auto& [seq, a] : early_) release(a);
  early_.clear();
}

void ReceiveOrder::giveUp() {
  auto ending = std::move(posted_);
  posted_.clear();
  channel_of_.clear();
  for (auto& [channel, queue] : ending) {
    for (Posted& r : queue) r.done(DeliveryOutcome::GivenUp, 0);
  }
}

}  // namespace mw
