#include "core/backends/ucx/ucx_degraded_schedules.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/backends/ucx/ucx_schedule_shape.h"

namespace mw {
namespace {

using schedule::at;
using schedule::Shape;

// Below this an allreduce is latency bound, and today's schedules serve.
constexpr size_t kDegradedMinBytes = 256 << 10;
// A chunk's size, and how many at most: the pipeline fills and drains in
// one chunk's time.
constexpr size_t kChunkBytes = 256 << 10;
constexpr size_t kMaxChunks = 64;

// [first, first + n) elements.
struct Span {
  size_t first = 0, n = 0;
};

// `count` elements cut into `parts` nearly equal spans, the longer first.
Span split(size_t first, size_t count, size_t parts, size_t i) {
  const size_t base = count / parts, extra = count % parts;
  return {first + base * i + std::min(i, extra), base + (i < extra ? 1 : 0)};
}

class DegradedAllreduce : public UcxSchedule {
 public:
  DegradedAllreduce(const Shape& s, int slow, const void* in, void* out, size_t count)
      : s_(s), slow_(slow), in_(in), out_(out), count_(count), chunks_(degradedChunks(s.bytes(count))),
        owners_(static_cast<size_t>(s.size - 1)) {
    for (int r = 0; r < s.size; ++r) {
      if (r != slow) healthy_.push_back(r);
    }
    mine_ = s.rank == slow ? -1 : static_cast<int>(std::find(healthy_.begin(), healthy_.end(), s.rank) - healthy_.begin());
    if (mine_ >= 0) {
      const size_t largest = s.bytes(piece(0, 0).n);
      from_.assign(static_cast<size_t>(s.size), std::vector<char>(largest));
      acc_.resize(largest);
    }
  }

  bool next(std::vector<UcxXfer>& out) override {
    // Steps 0..K: step t sends chunk t's pieces (t < K) and chunk t - 1's
    // results (t > 0).
    if (step_ > chunks_) return false;
    if (mine_ >= 0 && step_ > 0) reduceOwned(step_ - 1);
    if (mine_ < 0) {
      slowStep(out);
    } else {
      healthyStep(out);
    }
    ++step_;
    return true;
  }

 private:
  Span piece(size_t chunk, size_t owner) const {
    const Span c = split(0, count_, chunks_, chunk);
    return split(c.first, c.n, owners_, owner);
  }
  void* inAt(const Span& p) const { return at(const_cast<void*>(in_), s_.bytes(p.first)); }
  void* outAt(const Span& p) const { return at(out_, s_.bytes(p.first)); }
  void add(std::vector<UcxXfer>& out, int peer, bool recv, void* buf, const Span& p) const {
    if (p.n > 0) out.push_back({peer, recv, buf, s_.bytes(p.n)});
  }

  // Step t: this chunk's pieces to their owners, the last chunk's results
  // back.
  void slowStep(std::vector<UcxXfer>& out) const {
    for (size_t j = 0; j < owners_; ++j) {
      const int owner = healthy_[j];
      if (step_ < chunks_) add(out, owner, false, inAt(piece(step_, j)), piece(step_, j));
      if (step_ > 0) add(out, owner, true, outAt(piece(step_ - 1, j)), piece(step_ - 1, j));
    }
  }

  // Step t: the pieces of chunk t to their owners and this one's own in
  // (from every member), chunk t - 1's result piece out to every member
  // and the others' in. Toward each peer the piece goes before the result,
  // on both sides, so the two match in order.
  void healthyStep(std::vector<UcxXfer>& out) {
    const size_t j = static_cast<size_t>(mine_);
    for (size_t i = 0; i < owners_; ++i) {
      if (i == j) continue;
      const int peer = healthy_[i];
      if (step_ < chunks_) {
        add(out, peer, false, inAt(piece(step_, i)), piece(step_, i));
        add(out, peer, true, from_[static_cast<size_t>(peer)].data(), piece(step_, j));
      }
      if (step_ > 0) {
        add(out, peer, false, outAt(piece(step_ - 1, j)), piece(step_ - 1, j));
        add(out, peer, true, outAt(piece(step_ - 1, i)), piece(step_ - 1, i));
      }
    }
    if (step_ < chunks_) add(out, slow_, true, from_[static_cast<size_t>(slow_)].data(), piece(step_, j));
    if (step_ > 0) add(out, slow_, false, outAt(piece(step_ - 1, j)), piece(step_ - 1, j));
  }

  // This owner's piece of `chunk`, reduced over every member in rank
  // order, into the output.
  void reduceOwned(size_t chunk) {
    const Span p = piece(chunk, static_cast<size_t>(mine_));
    if (p.n == 0) return;
    auto contribution = [&](int r) -> const void* {
      return r == s_.rank ? inAt(p) : from_[static_cast<size_t>(r)].data();
    };
    std::memcpy(acc_.data(), contribution(0), s_.bytes(p.n));
    for (int r = 1; r < s_.size; ++r) s_.reduce(acc_.data(), contribution(r), p.n);
    s_.average(acc_.data(), p.n);
    std::memcpy(outAt(p), acc_.data(), s_.bytes(p.n));
  }

  const Shape s_;
  const int slow_;
  const void* const in_;
  void* const out_;
  const size_t count_, chunks_, owners_;
  std::vector<int> healthy_;  // every rank but the slow one, in order
  int mine_ = -1;             // this member's index among them; -1: the slow one
  std::vector<std::vector<char>> from_;  // by rank: its piece of the chunk this one owns
  std::vector<char> acc_;
  size_t step_ = 0;
};

// Another schedule run over ranks renumbered: it sees member order[v] as
// rank v.
class Renumbered : public UcxSchedule {
 public:
  Renumbered(std::unique_ptr<UcxSchedule> inner, std::vector<int> order)
      : inner_(std::move(inner)), order_(std::move(order)) {}
  bool next(std::vector<UcxXfer>& out) override {
    const size_t first = out.size();
    const bool more = inner_->next(out);
    for (size_t i = first; i < out.size(); ++i) out[i].peer = order_[static_cast<size_t>(out[i].peer)];
    return more;
  }

 private:
  std::unique_ptr<UcxSchedule> inner_;
  const std::vector<int> order_;
};

// Broadcast: today's binomial tree over the members renumbered so that
// the root comes first and the slow member last, where the tree makes it
// a leaf: it receives the buffer once and forwards nothing.
std::unique_ptr<UcxSchedule> degradedBroadcast(const OpDesc& op, int rank, int size, int slow) {
  std::vector<int> order{op.peer};
  for (int r = 0; r < size; ++r) {
    if (r != op.peer && r != slow) order.push_back(r);
  }
  order.push_back(slow);
  const int mine = static_cast<int>(std::find(order.begin(), order.end(), rank) - order.begin());
  OpDesc renumbered = op;
  renumbered.peer = 0;
  return std::make_unique<Renumbered>(makeUcxSchedule(renumbered, mine, size), std::move(order));
}

}  // namespace

size_t degradedChunks(size_t bytes) { return std::clamp<size_t>(bytes / kChunkBytes, 1, kMaxChunks); }

std::unique_ptr<UcxSchedule> makeDegradedUcxSchedule(const OpDesc& op, int rank, int size, int slow) {
  if (size < 3 || slow < 0 || slow >= size) return nullptr;
  const Shape s(op, rank, size);
  if (s.bytes(op.count) < kDegradedMinBytes) return nullptr;
  if (op.kind == OpKind::Allreduce) return std::make_unique<DegradedAllreduce>(s, slow, op.sendbuf, op.recvbuf, op.count);
  // A slow root sends the buffer whatever the tree.
  if (op.kind == OpKind::Broadcast && op.peer != slow) return degradedBroadcast(op, rank, size, slow);
  return nullptr;
}

}  // namespace mw
