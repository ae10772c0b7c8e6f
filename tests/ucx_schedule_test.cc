// The UCX collective schedules run by every member of a world at once, in
// memory, with no transport (ucx_schedules.cc, ucx_degraded_schedules.cc):
// each step's sends match the peer's receives in the order both posted
// them, as tag matching on one channel does; a send completes only when
// its receive is posted (the rendezvous protocol), so a schedule that
// could deadlock on a large message deadlocks here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "core/backends/ucx/ucx_collective.h"
#include "core/backends/ucx/ucx_degraded_schedules.h"

namespace {

using mw::DType;
using mw::OpDesc;
using mw::OpKind;
using mw::RedOp;
using mw::UcxSchedule;
using mw::UcxXfer;

struct Traffic {
  std::vector<size_t> sent, received;  // bytes, by rank
  std::vector<size_t> steps;           // by rank
};

bool overlaps(const UcxXfer& a, const UcxXfer& b) {
  const char* pa = static_cast<const char*>(a.buffer);
  const char* pb = static_cast<const char*>(b.buffer);
  return a.bytes > 0 && b.bytes > 0 && pa < pb + b.bytes && pb < pa + a.bytes;
}

// Runs the members' schedules to their end. Empty on success, else what
// went wrong.
std::string runAll(std::vector<std::unique_ptr<UcxSchedule>>& members, Traffic* traffic = nullptr) {
  const int n = static_cast<int>(members.size());
  struct Member {
    std::vector<UcxXfer> step;
    std::vector<bool> finished;
    size_t left = 0;
    bool done = false;
  };
  std::vector<Member> m(static_cast<size_t>(n));
  // Per (from, to): the posted sends and the posted receives not matched
  // yet, in posting order, as (member, index in its step).
  std::map<std::pair<int, int>, std::deque<size_t>> sends, recvs;
  Traffic t{std::vector<size_t>(n), std::vector<size_t>(n), std::vector<size_t>(n)};
  for (;;) {
    bool moved = false;
    for (int r = 0; r < n; ++r) {
      Member& me = m[static_cast<size_t>(r)];
      if (me.done || me.left > 0) continue;
      me.step.clear();
      if (!members[static_cast<size_t>(r)]->next(me.step)) {
        me.done = true;
        moved = true;
        continue;
      }
      moved = true;
      ++t.steps[static_cast<size_t>(r)];
      me.finished.assign(me.step.size(), false);
      me.left = me.step.size();
      for (size_t i = 0; i < me.step.size(); ++i) {
        const UcxXfer& x = me.step[i];
        if (x.peer < 0 || x.peer >= n || x.peer == r) return "rank " + std::to_string(r) + " posted to peer " + std::to_string(x.peer);
        for (size_t k = 0; k < me.step.size(); ++k) {
          if (k != i && (x.recv || me.step[k].recv) && overlaps(x, me.step[k])) {
            return "rank " + std::to_string(r) + " receives into a buffer another transfer of its step uses";
          }
        }
        (x.recv ? recvs[{x.peer, r}] : sends[{r, x.peer}]).push_back(i);
      }
      if (me.step.empty()) return "rank " + std::to_string(r) + " posted an empty step";
    }
    // Match in order, per pair.
    for (auto& [pair, q] : sends) {
      auto& rq = recvs[pair];
      while (!q.empty() && !rq.empty()) {
        Member& from = m[static_cast<size_t>(pair.first)];
        Member& to = m[static_cast<size_t>(pair.second)];
        const UcxXfer& s = from.step[q.front()];
        const UcxXfer& rv = to.step[rq.front()];
        if (s.bytes != rv.bytes) {
          return "rank " + std::to_string(pair.first) + " sent " + std::to_string(s.bytes) + " bytes to rank " +
                 std::to_string(pair.second) + ", which received " + std::to_string(rv.bytes);
        }
        if (s.bytes) std::memcpy(rv.buffer, s.buffer, s.bytes);
        t.sent[static_cast<size_t>(pair.first)] += s.bytes;
        t.received[static_cast<size_t>(pair.second)] += s.bytes;
        from.finished[q.front()] = true;
        to.finished[rq.front()] = true;
        --from.left;
        --to.left;
        q.pop_front();
        rq.pop_front();
        moved = true;
      }
    }
    bool all_done = true;
    for (const auto& me : m) all_done = all_done && me.done;
    if (all_done) break;
    if (!moved) return "deadlock";
  }
  for (auto& [pair, q] : sends) {
    if (!q.empty()) return "rank " + std::to_string(pair.first) + " sent more than was received";
  }
  if (traffic) *traffic = t;
  return "";
}

// Member r's input: element i is r * 1000 + i (mod 2^31), distinct per
// member and position.
std::vector<int32_t> input(int r, size_t count) {
  std::vector<int32_t> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = static_cast<int32_t>((r * 1000 + static_cast<int64_t>(i)) % 1000003);
  return v;
}

OpDesc allreduce(std::vector<int32_t>& in, std::vector<int32_t>& out) {
  OpDesc op;
  op.kind = OpKind::Allreduce;
  op.sendbuf = in.data();
  op.recvbuf = out.data();
  op.count = in.size();
  op.dtype = DType::Int32;
  op.redop = RedOp::Sum;
  return op;
}

// An allreduce of int32 sums over `n` members with the schedules `make`
// gives; every member's result checked against the sum.
template <typename Make>
void checkAllreduce(int n, size_t count, bool in_place, Make make, Traffic* traffic = nullptr) {
  std::vector<std::vector<int32_t>> in(n), out(n);
  std::vector<std::unique_ptr<UcxSchedule>> members;
  for (int r = 0; r < n; ++r) {
    in[r] = input(r, count);
    out[r].assign(count, -1);
    OpDesc op = allreduce(in[r], in_place ? in[r] : out[r]);
    members.push_back(make(op, r));
    ASSERT_TRUE(members.back()) << "rank " << r;
  }
  ASSERT_EQ(runAll(members, traffic), "");
  std::vector<int32_t> want(count, 0);
  for (int k = 0; k < n; ++k) {
    const auto v = input(k, count);
    for (size_t i = 0; i < count; ++i) want[i] = static_cast<int32_t>(static_cast<uint32_t>(want[i]) + static_cast<uint32_t>(v[i]));
  }
  for (int r = 0; r < n; ++r) {
    const auto& got = in_place ? in[r] : out[r];
    const auto first = std::mismatch(got.begin(), got.end(), want.begin());
    ASSERT_TRUE(first.first == got.end()) << "rank " << r << " element " << (first.first - got.begin());
  }
}

TEST(UcxSchedules, AllreduceOfEverySizeAndShape) {
  for (int n : {1, 2, 3, 4, 5, 7, 8}) {
    for (size_t count : {size_t{1}, size_t{5}, size_t{1000}, size_t{70000}, size_t{70001}}) {
      for (bool in_place : {false, true}) {
        SCOPED_TRACE(std::to_string(n) + " members, " + std::to_string(count) + " elements" +
                     (in_place ? ", in place" : ""));
        checkAllreduce(n, count, in_place, [n](const OpDesc& op, int r) { return mw::makeUcxSchedule(op, r, n); });
      }
    }
  }
}

// Every member's buffers for one operation of int32: `in` of `in_count`
// elements (member r's input) and `out` of `out_count` (-1 each), run
// with today's schedule for `kind` (`root`: its peer).
struct Buffers {
  std::vector<std::vector<int32_t>> in, out;
};
Buffers runToday(OpKind kind, int n, size_t in_count, size_t out_count, size_t count, int root = -1) {
  Buffers b{std::vector<std::vector<int32_t>>(n), std::vector<std::vector<int32_t>>(n)};
  std::vector<std::unique_ptr<UcxSchedule>> members;
  for (int r = 0; r < n; ++r) {
    b.in[r] = input(r, in_count);
    b.out[r].assign(out_count, -1);
    OpDesc op;
    op.kind = kind;
    op.sendbuf = b.in[r].data();
    op.recvbuf = kind == OpKind::Broadcast ? b.in[r].data() : b.out[r].data();
    op.count = count;
    op.dtype = DType::Int32;
    op.peer = root;
    members.push_back(mw::makeUcxSchedule(op, r, n));
  }
  EXPECT_EQ(runAll(members), "") << mw::opName(kind);
  return b;
}

TEST(UcxSchedules, BroadcastAllgatherAndReduceScatter) {
  for (int n : {2, 3, 5, 8}) {
    SCOPED_TRACE(std::to_string(n) + " members");
    const size_t count = 1001;
    // Broadcast from the last rank, in place.
    const Buffers bcast = runToday(OpKind::Broadcast, n, count, 0, count, n - 1);
    for (int r = 0; r < n; ++r) EXPECT_EQ(bcast.in[r], input(n - 1, count)) << "broadcast, rank " << r;
    // Allgather: rank k's block at k.
    const Buffers gather = runToday(OpKind::Allgather, n, count, count * n, count);
    for (int r = 0; r < n; ++r) {
      for (int k = 0; k < n; ++k) {
        EXPECT_TRUE(std::equal(gather.in[k].begin(), gather.in[k].end(),
                               gather.out[r].begin() + static_cast<long>(count * k)))
            << "allgather, rank " << r << " block " << k;
      }
    }
    // Reduce-scatter: rank r gets block r of the sum.
    const Buffers scatter = runToday(OpKind::ReduceScatter, n, count * n, count, count);
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < count; ++i) {
        int64_t want = 0;
        for (int k = 0; k < n; ++k) want += scatter.in[k][count * r + i];
        ASSERT_EQ(scatter.out[r][i], static_cast<int32_t>(want)) << "reduce-scatter, rank " << r << " element " << i;
      }
    }
  }
}

TEST(DegradedSchedules, AllreduceIsRightForEverySlowMemberAndShape) {
  for (int n : {3, 4, 5, 8}) {
    for (int slow : {0, n / 2, n - 1}) {
      for (size_t count : {size_t{65536}, size_t{65537}, size_t{1000003}}) {
        for (bool in_place : {false, true}) {
          SCOPED_TRACE(std::to_string(n) + " members, slow " + std::to_string(slow) + ", " + std::to_string(count) +
                       " elements" + (in_place ? ", in place" : ""));
          checkAllreduce(n, count, in_place,
                         [&](const OpDesc& op, int r) { return mw::makeDegradedUcxSchedule(op, r, n, slow); });
        }
      }
    }
  }
}

TEST(DegradedSchedules, TheSlowMemberSendsItsBufferOnceAndReceivesTheResultOnce) {
  for (int n : {3, 4, 8}) {
    const size_t count = 1 << 20, bytes = count * 4;
    const int slow = 1;
    Traffic t;
    checkAllreduce(n, count, false, [&](const OpDesc& op, int r) { return mw::makeDegradedUcxSchedule(op, r, n, slow); },
                   &t);
    SCOPED_TRACE(std::to_string(n) + " members");
    EXPECT_EQ(t.sent[slow], bytes);
    EXPECT_EQ(t.received[slow], bytes);
    const size_t chunks = mw::degradedChunks(bytes);
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(t.steps[r], chunks + 1) << "rank " << r;
      if (r == slow) continue;
      // (2p - 3) / (p - 1) of the buffer, give or take a piece's rounding.
      const double want = static_cast<double>(bytes) * (2 * n - 3) / (n - 1);
      EXPECT_NEAR(static_cast<double>(t.sent[r]), want, 4.0 * chunks * n) << "rank " << r;
    }
  }
}

TEST(DegradedSchedules, EveryMemberHoldsTheSameBitsOfAFloatSum) {
  for (int n : {3, 4, 6}) {
    const size_t count = 300000;
    const int slow = n - 2;
    std::mt19937 rng(47);
    std::uniform_real_distribution<float> value(-1e6f, 1e6f);
    for (RedOp redop : {RedOp::Sum, RedOp::Avg}) {
      std::vector<std::vector<float>> in(n), out(n);
      std::vector<std::unique_ptr<UcxSchedule>> members;
      for (int r = 0; r < n; ++r) {
        in[r].resize(count);
        for (auto& x : in[r]) x = value(rng);
        out[r].assign(count, 0);
        OpDesc op;
        op.kind = OpKind::Allreduce;
        op.sendbuf = in[r].data();
        op.recvbuf = out[r].data();
        op.count = count;
        op.dtype = DType::Float32;
        op.redop = redop;
        members.push_back(mw::makeDegradedUcxSchedule(op, r, n, slow));
      }
      ASSERT_EQ(runAll(members), "");
      for (int r = 1; r < n; ++r) {
        ASSERT_EQ(std::memcmp(out[r].data(), out[0].data(), count * sizeof(float)), 0) << "rank " << r;
      }
      // And it is the sum (or mean), to float's precision.
      for (size_t i = 0; i < count; i += 997) {
        double want = 0;
        for (int k = 0; k < n; ++k) want += in[k][i];
        if (redop == RedOp::Avg) want /= n;
        EXPECT_NEAR(out[0][i], want, 1.0) << "element " << i;
      }
    }
  }
}

TEST(DegradedSchedules, BroadcastMakesTheSlowMemberALeaf) {
  for (int n : {3, 4, 5, 8, 9}) {
    for (int root : {0, n - 1}) {
      for (int slow = 0; slow < n; ++slow) {
        if (slow == root) continue;
        SCOPED_TRACE(std::to_string(n) + " members, root " + std::to_string(root) + ", slow " + std::to_string(slow));
        const size_t count = 100003;
        std::vector<std::vector<int32_t>> buf(n);
        std::vector<std::unique_ptr<UcxSchedule>> members;
        for (int r = 0; r < n; ++r) {
          buf[r] = r == root ? input(r, count) : std::vector<int32_t>(count, -1);
          OpDesc op;
          op.kind = OpKind::Broadcast;
          op.sendbuf = op.recvbuf = buf[r].data();
          op.count = count;
          op.dtype = DType::Int32;
          op.peer = root;
          members.push_back(mw::makeDegradedUcxSchedule(op, r, n, slow));
          ASSERT_TRUE(members.back());
        }
        Traffic t;
        ASSERT_EQ(runAll(members, &t), "");
        for (int r = 0; r < n; ++r) EXPECT_EQ(buf[r], input(root, count)) << "rank " << r;
        EXPECT_EQ(t.sent[slow], 0u);
        EXPECT_EQ(t.received[slow], count * 4);
      }
    }
  }
}

TEST(DegradedSchedules, NoneWhereItDoesNotPay) {
  std::vector<int32_t> small(1000), big(1 << 20), out(1 << 20);
  EXPECT_FALSE(mw::makeDegradedUcxSchedule(allreduce(small, small), 0, 4, 1)) << "latency bound";
  EXPECT_FALSE(mw::makeDegradedUcxSchedule(allreduce(big, out), 0, 2, 1)) << "two members";
  EXPECT_FALSE(mw::makeDegradedUcxSchedule(allreduce(big, out), 0, 4, 4)) << "no such member";
  EXPECT_FALSE(mw::makeDegradedUcxSchedule(allreduce(big, out), 0, 4, -1));
  OpDesc op = allreduce(big, out);
  for (OpKind kind : {OpKind::Gather, OpKind::Allgather, OpKind::ReduceScatter}) {
    op.kind = kind;
    EXPECT_FALSE(mw::makeDegradedUcxSchedule(op, 0, 4, 1)) << mw::opName(kind);
  }
  op.kind = OpKind::Broadcast;
  op.peer = 1;
  EXPECT_FALSE(mw::makeDegradedUcxSchedule(op, 0, 4, 1)) << "a slow root";
  EXPECT_TRUE(mw::makeDegradedUcxSchedule(allreduce(big, out), 0, 4, 1));
}

}  // namespace
