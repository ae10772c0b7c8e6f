// The collective algorithms of UCX worlds as step schedules (see
// ucx_collective.h). Ranks inside rooted trees are relative to the root
// ("vr"); reductions run in a fixed order, so every member that ends with a
// reduced block holds the same bits.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/backends/ucx/ucx_collective.h"
#include "core/backends/ucx/ucx_schedule_shape.h"
#include "core/error.h"
#include "core/reduce.h"

namespace mw {
namespace {

// At or above this many bytes, allreduce moves (n-1)/n of the data twice
// around a ring rather than all of it log2(n) times.
constexpr size_t kRingBytes = 256 << 10;

int lowbit(int v) { return v & -v; }
using schedule::at;
using schedule::mod;
using schedule::Shape;

// Runs schedules one after the other (reduce then broadcast, say).
class Sequence : public UcxSchedule {
 public:
  void add(std::unique_ptr<UcxSchedule> s) { parts_.push_back(std::move(s)); }
  bool next(std::vector<UcxXfer>& out) override {
    while (current_ < parts_.size()) {
      if (parts_[current_]->next(out)) return true;
      ++current_;
    }
    return false;
  }

 private:
  std::vector<std::unique_ptr<UcxSchedule>> parts_;
  size_t current_ = 0;
};

class Dissemination : public UcxSchedule {
 public:
  Dissemination(int rank, int size) : rank_(rank), size_(size) {}
  bool next(std::vector<UcxXfer>& out) override {
    if (distance_ >= size_) return false;
    out.push_back({mod(rank_ + distance_, size_), false, nullptr, 0});
    out.push_back({mod(rank_ - distance_, size_), true, nullptr, 0});
    distance_ <<= 1;
    return true;
  }

 private:
  const int rank_, size_;
  int distance_ = 1;
};

// A binomial tree over ranks relative to the root ("vr"): the parent of vr
// is vr without its lowest set bit; its children are vr + m for every power
// of two m below that bit (every m below the size for the root), and their
// subtrees are contiguous in relative order.
struct BinomialTree {
  BinomialTree(int rank, int size, int root) : size(size), root(root), vr(mod(rank - root, size)) {
    const int top = vr == 0 ? size : lowbit(vr);
    for (int m = 1; m < top && vr + m < size; m <<= 1) children.push_back(vr + m);
    subtree = std::min(top, size - vr);
  }
  int real(int relative) const { return mod(relative + root, size); }
  int parent() const { return real(vr - lowbit(vr)); }
  // Members in the subtree of `child`, itself included.
  int subtreeOf(int child) const { return std::min(child - vr, size - child); }

  const int size, root, vr;
  std::vector<int> children;  // relative ranks, nearest first
  int subtree = 1;            // members in this one's subtree, itself included
};

// `buf` (bytes) from root to everyone: receive from the parent, then send
// to every child at once, the largest subtree first.
class BinomialBroadcast : public UcxSchedule {
 public:
  BinomialBroadcast(int rank, int size, int root, void* buf, size_t bytes)
      : tree_(rank, size, root), buf_(buf), bytes_(bytes) {}
  bool next(std::vector<UcxXfer>& out) override {
    switch (step_++) {
      case 0:
        if (tree_.vr != 0) {
          out.push_back({tree_.parent(), true, buf_, bytes_});
          return true;
        }
        step_++;
        [[fallthrough]];
      case 1:
        for (auto c = tree_.children.rbegin(); c != tree_.children.rend(); ++c) {
          out.push_back({tree_.real(*c), false, buf_, bytes_});
        }
        return !out.empty();
      default:
        return false;
    }
  }

 private:
  const BinomialTree tree_;
  void* const buf_;
  const size_t bytes_;
  int step_ = 0;
};

// The reduction of every member's input at root: receive from every child
// at once, combine in a fixed order, send the partial result up.
class BinomialReduce : public UcxSchedule {
 public:
  BinomialReduce(const Shape& s, int root, const void* in, void* out, size_t count)
      : s_(s), tree_(s.rank, s.size, root), count_(count) {
    acc_ = tree_.vr == 0 ? out : (scratch_.resize(s.bytes(count)), scratch_.data());
    if (acc_ != in) std::memcpy(acc_, in, s.bytes(count));
    parts_.resize(tree_.children.size(), std::vector<char>(s.bytes(count)));
  }
  bool next(std::vector<UcxXfer>& out) override {
    switch (step_++) {
      case 0:
        for (size_t i = 0; i < tree_.children.size(); ++i) {
          out.push_back({tree_.real(tree_.children[i]), true, parts_[i].data(), s_.bytes(count_)});
        }
        if (!out.empty()) return true;
        step_++;
        [[fallthrough]];
      case 1:
        for (auto& part : parts_) s_.reduce(acc_, part.data(), count_);
        if (tree_.vr == 0) {
          s_.average(acc_, count_);
          return false;
        }
        out.push_back({tree_.parent(), false, acc_, s_.bytes(count_)});
        return true;
      default:
        return false;
    }
  }

 private:
  const Shape s_;
  const BinomialTree tree_;
  const size_t count_;
  void* acc_;
  std::vector<char> scratch_;
  std::vector<std::vector<char>> parts_;
  int step_ = 0;
};

// Small allreduce on a power-of-two world: log2(n) exchanges with the
// partner across each bit.
class RecursiveDoubling : public UcxSchedule {
 public:
  RecursiveDoubling(const Shape& s, const void* in, void* out, size_t count)
      : s_(s), out_(out), count_(count), other_(s.bytes(count)) {
    if (out != in) std::memcpy(out, in, s.bytes(count));
  }
  bool next(std::vector<UcxXfer>& out) override {
    if (mask_ > 1) s_.reduce(out_, other_.data(), count_);
    if (mask_ >= s_.size) {
      s_.average(out_, count_);
      return false;
    }
    const int partner = s_.rank ^ mask_;
    out.push_back({partner, false, out_, s_.bytes(count_)});
    out.push_back({partner, true, other_.data(), s_.bytes(count_)});
    mask_ <<= 1;
    return true;
  }

 private:
  const Shape s_;
  void* const out_;
  const size_t count_;
  std::vector<char> other_;
  int mask_ = 1;
};

// The ring over n blocks of `buf`: n-1 reduce-scatter steps after which
// rank r holds block r reduced, then (allreduce) n-1 allgather steps.
// Block i spans elements [first(i), first(i+1)).
class Ring : public UcxSchedule {
 public:
  Ring(const Shape& s, void* buf, size_t count, bool gather, size_t block_elements = 0)
      : s_(s), buf_(buf), count_(count), block_(block_elements), gather_(gather) {
    size_t largest = 0;
    for (int i = 0; i < s.size; ++i) largest = std::max(largest, first(i + 1) - first(i));
    incoming_.resize(s.bytes(largest));
  }
  bool next(std::vector<UcxXfer>& out) override {
    const int n = s_.size, r = s_.rank;
    const int right = mod(r + 1, n), left = mod(r - 1, n);
    if (step_ > 0 && step_ < n) {  // a reduce-scatter step came in
      const int b = mod(r - step_ - 1, n);
      s_.reduce(at(buf_, s_.bytes(first(b))), incoming_.data(), first(b + 1) - first(b));
    }
    if (step_ == n - 1) s_.average(at(buf_, s_.bytes(first(r))), first(r + 1) - first(r));
    const int total = gather_ ? 2 * (n - 1) : n - 1;
    if (step_ >= total) return false;
    if (step_ < n - 1) {
      const int send = mod(r - step_ - 1, n), recv = mod(r - step_ - 2, n);
      out.push_back({right, false, block(send), size(send)});
      out.push_back({left, true, incoming_.data(), size(recv)});
    } else {
      const int s = step_ - (n - 1);
      const int send = mod(r - s, n), recv = mod(r - s - 1, n);
      out.push_back({right, false, block(send), size(send)});
      out.push_back({left, true, block(recv), size(recv)});
    }
    ++step_;
    return true;
  }

 private:
  size_t first(int i) const {
    if (block_) return block_ * static_cast<size_t>(i);
    return count_ / static_cast<size_t>(s_.size) * static_cast<size_t>(i) +
           std::min(static_cast<size_t>(i), count_ % static_cast<size_t>(s_.size));
  }
  void* block(int i) const { return at(buf_, s_.bytes(first(i))); }
  size_t size(int i) const { return s_.bytes(first(i + 1) - first(i)); }

  const Shape s_;
  void* const buf_;
  const size_t count_, block_;
  const bool gather_;
  std::vector<char> incoming_;
  int step_ = 0;
};

class ReduceScatter : public UcxSchedule {
 public:
  ReduceScatter(const Shape& s, const void* in, void* out, size_t recvcount)
      : s_(s), out_(out), count_(recvcount),
        work_(static_cast<const char*>(in), static_cast<const char*>(in) + s.bytes(recvcount) * s.size),
        ring_(s, work_.data(), recvcount * s.size, false, recvcount) {}
  bool next(std::vector<UcxXfer>& out) override {
    if (ring_.next(out)) return true;
    std::memmove(out_, work_.data() + s_.bytes(count_) * s_.rank, s_.bytes(count_));
    return false;
  }

 private:
  const Shape s_;
  void* const out_;
  const size_t count_;
  std::vector<char> work_;
  Ring ring_;
};

class RingAllgather : public UcxSchedule {
 public:
  RingAllgather(const Shape& s, const void* in, void* out, size_t count) : s_(s), out_(out), count_(count) {
    void* own = at(out, s.bytes(count) * s.rank);
    if (in != out && in != own) std::memcpy(own, in, s.bytes(count));
  }
  bool next(std::vector<UcxXfer>& out) override {
    const int n = s_.size, r = s_.rank;
    if (step_ >= n - 1) return false;
    const int send = mod(r - step_, n), recv = mod(r - step_ - 1, n);
    out.push_back({mod(r + 1, n), false, at(out_, s_.bytes(count_) * send), s_.bytes(count_)});
    out.push_back({mod(r - 1, n), true, at(out_, s_.bytes(count_) * recv), s_.bytes(count_)});
    ++step_;
    return true;
  }

 private:
  const Shape s_;
  void* const out_;
  const size_t count_;
  int step_ = 0;
};

// Blocks of one subtree travel together; `tree_` holds them in relative
// rank order, from this member's own block on.
class BinomialGather : public UcxSchedule {
 public:
  BinomialGather(const Shape& s, int root, const void* in, void* out, size_t count)
      : s_(s), tree_(s.rank, s.size, root), out_(out), block_(s.bytes(count)),
        blocks_(block_ * static_cast<size_t>(tree_.subtree)) {
    const void* own = in == out ? at(out, block_ * s.rank) : in;
    std::memcpy(blocks_.data(), own, block_);
  }
  bool next(std::vector<UcxXfer>& out) override {
    switch (step_++) {
      case 0:
        for (int c : tree_.children) {
          out.push_back({tree_.real(c), true, blocks_.data() + block_ * (c - tree_.vr), block_ * tree_.subtreeOf(c)});
        }
        if (!out.empty()) return true;
        step_++;
        [[fallthrough]];
      case 1:
        if (tree_.vr != 0) {
          out.push_back({tree_.parent(), false, blocks_.data(), blocks_.size()});
          return true;
        }
        for (int j = 0; j < s_.size; ++j) std::memcpy(at(out_, block_ * tree_.real(j)), blocks_.data() + block_ * j, block_);
        return false;
      default:
        return false;
    }
  }

 private:
  const Shape s_;
  const BinomialTree tree_;
  void* const out_;
  const size_t block_;
  std::vector<char> blocks_;
  int step_ = 0;
};

class BinomialScatter : public UcxSchedule {
 public:
  BinomialScatter(const Shape& s, int root, const void* in, void* out, size_t count)
      : s_(s), tree_(s.rank, s.size, root), in_(in), out_(out), block_(s.bytes(count)),
        blocks_(block_ * static_cast<size_t>(tree_.subtree)) {
    if (tree_.vr == 0) {
      for (int j = 0; j < s.size; ++j) {
        std::memcpy(blocks_.data() + block_ * j, at(const_cast<void*>(in), block_ * tree_.real(j)), block_);
      }
    }
  }
  bool next(std::vector<UcxXfer>& out) override {
    switch (step_++) {
      case 0:
        if (tree_.vr != 0) {
          out.push_back({tree_.parent(), true, blocks_.data(), blocks_.size()});
          return true;
        }
        step_++;
        [[fallthrough]];
      case 1:
        for (int c : tree_.children) {
          out.push_back({tree_.real(c), false, blocks_.data() + block_ * (c - tree_.vr), block_ * tree_.subtreeOf(c)});
        }
        if (!out.empty()) return true;
        step_++;
        [[fallthrough]];
      case 2:
        // In place at root, its block already sits where it belongs.
        if (!(tree_.vr == 0 && in_ == out_)) std::memcpy(out_, blocks_.data(), block_);
        return false;
      default:
        return false;
    }
  }

 private:
  const Shape s_;
  const BinomialTree tree_;
  const void* const in_;
  void* const out_;
  const size_t block_;
  std::vector<char> blocks_;
  int step_ = 0;
};

// Every pair exchanges its blocks at once.
class AllPairs : public UcxSchedule {
 public:
  AllPairs(const Shape& s, const void* in, void* out, size_t count) : s_(s), out_(out), block_(s.bytes(count)) {
    if (in == out) {
      copy_.assign(static_cast<const char*>(in), static_cast<const char*>(in) + block_ * s.size);
      in_ = copy_.data();
    } else {
      in_ = in;
      std::memcpy(at(out, block_ * s.rank), at(const_cast<void*>(in), block_ * s.rank), block_);
    }
  }
  bool next(std::vector<UcxXfer>& out) override {
    if (done_) return false;
    done_ = true;
    for (int j = 1; j < s_.size; ++j) {
      const int to = mod(s_.rank + j, s_.size), from = mod(s_.rank - j, s_.size);
      out.push_back({to, false, at(const_cast<void*>(in_), block_ * to), block_});
      out.push_back({from, true, at(out_, block_ * from), block_});
    }
    return !out.empty();
  }

 private:
  const Shape s_;
  void* const out_;
  const size_t block_;
  const void* in_;
  std::vector<char> copy_;
  bool done_ = false;
};

class Nothing : public UcxSchedule {
 public:
  bool next(std::vector<UcxXfer>&) override { return false; }
};

bool powerOfTwo(int n) { return (n & (n - 1)) == 0; }

}  // namespace

std::unique_ptr<UcxSchedule> makeUcxSchedule(const OpDesc& op, int rank, int size) {
  const Shape s(op, rank, size);
  const size_t n = op.count;
  if (op.kind != OpKind::Barrier && n == 0) return std::make_unique<Nothing>();
  switch (op.kind) {
    case OpKind::Barrier:
      return std::make_unique<Dissemination>(rank, size);
    case OpKind::Broadcast:
      return std::make_unique<BinomialBroadcast>(rank, size, op.peer, op.recvbuf, s.bytes(n));
    case OpKind::Reduce:
      return std::make_unique<BinomialReduce>(s, op.peer, op.sendbuf, op.recvbuf, n);
    case OpKind::Allreduce:
      if (size == 1) return std::make_unique<RecursiveDoubling>(s, op.sendbuf, op.recvbuf, n);
      if (s.bytes(n) >= kRingBytes && size > 2) {
        if (op.sendbuf != op.recvbuf) std::memcpy(op.recvbuf, op.sendbuf, s.bytes(n));
        return std::make_unique<Ring>(s, op.recvbuf, n, true);
      }
      if (powerOfTwo(size)) return std::make_unique<RecursiveDoubling>(s, op.sendbuf, op.recvbuf, n);
      {
        auto seq = std::make_unique<Sequence>();
        seq->add(std::make_unique<BinomialReduce>(s, 0, op.sendbuf, op.recvbuf, n));
        seq->add(std::make_unique<BinomialBroadcast>(rank, size, 0, op.recvbuf, s.bytes(n)));
        return seq;
      }
    case OpKind::ReduceScatter:
      return std::make_unique<ReduceScatter>(s, op.sendbuf, op.recvbuf, n);
    case OpKind::Allgather:
      return std::make_unique<RingAllgather>(s, op.sendbuf, op.recvbuf, n);
    case OpKind::Gather:
      return std::make_unique<BinomialGather>(s, op.peer, op.sendbuf, op.recvbuf, n);
    case OpKind::Scatter:
      return std::make_unique<BinomialScatter>(s, op.peer, op.sendbuf, op.recvbuf, n);
    case OpKind::Alltoall:
      return std::make_unique<AllPairs>(s, op.sendbuf, op.recvbuf, n);
    case OpKind::Send:
    case OpKind::Recv:
      break;
  }
  throw Error(Status::Internal, std::string("no UCX schedule for ") + opName(op.kind));
}

}  // namespace mw
