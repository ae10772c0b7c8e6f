// The raw baselines of the point-to-point benchmark, in the pattern of
// OURS (p2p_bench.cc): GLOO through unbound buffers, UCX and UCX_SHM
// through a plain ucp tag loop (bench/raw_ucx.h) polled on the calling
// thread.
#include <algorithm>
#include <cstring>
#include <deque>
#include <vector>

#include "bench/p2p_state.h"

namespace mwbench {

using p2p::Clock;
using p2p::fillPattern;
using p2p::kDataSlot;
using p2p::kPoison;
using p2p::kUcxTag;
using p2p::payloadSeed;
using p2p::secondsSince;
using p2p::verifyPattern;

namespace {

// A wait longer than this fails the run (as OURS' and GLOO's timeout).
constexpr double kUcxTimeoutS = 120;

}  // namespace

// ---- GLOO ----------------------------------------------------------------------

double P2pPeer::State::glooBandwidth(const P2pCommand& c) {
  const size_t bytes = c.bytes;
  const uint64_t n = c.iters;
  if (rank == 0) {
    fillPattern(final_tx_->data(), bytes, payloadSeed(c.seed, 0));
    std::deque<UB*> inflight;
    recvSync();
    auto t0 = Clock::now();
    for (uint64_t i = 0; i < n; ++i) {
      if (inflight.size() >= kWindow) {
        glooWaitSend(*inflight.front(), "gloo bandwidth send");
        inflight.pop_front();
      }
      UB* b = i + 1 == n ? ub_final_tx_.get() : ub_tx_[i % kWindow].get();
      b->send(peer, kDataSlot, 0, bytes);
      inflight.push_back(b);
    }
    while (!inflight.empty()) {
      glooWaitSend(*inflight.front(), "gloo bandwidth send");
      inflight.pop_front();
    }
    recvSync();
    return secondsSince(t0);
  }
  std::memset(final_rx_->data(), kPoison, bytes);
  auto buf = [&](uint64_t i) { return i + 1 == n ? ub_final_rx_.get() : ub_rx_[i % ub_rx_.size()].get(); };
  const uint64_t first = std::min<uint64_t>(kWindow, n);
  for (uint64_t i = 0; i < first; ++i) buf(i)->recv(peer, kDataSlot, 0, bytes);
  sendSync();
  for (uint64_t i = 0; i < n; ++i) {
    glooWaitRecv(*buf(i), "gloo bandwidth recv");
    if (i + kWindow < n) buf(i + kWindow)->recv(peer, kDataSlot, 0, bytes);
  }
  sendSync();
  verifyPattern(final_rx_->data(), bytes, payloadSeed(c.seed, 0), "gloo bandwidth");
  return 0;
}

double P2pPeer::State::glooLatency(const P2pCommand& c) {
  const size_t bytes = c.bytes;
  const uint64_t total = c.iters + 1;
  fillPattern(final_tx_->data(), bytes, payloadSeed(c.seed, rank));
  std::memset(final_rx_->data(), kPoison, bytes);
  if (rank == 0) {
    p2p::RoundTrips clock(c.iters);
    for (uint64_t j = 0; j < total; ++j) {
      const bool last = j + 1 == total;
      UB* r = last ? ub_final_rx_.get() : ub_rx_[0].get();
      UB* s = last ? ub_final_tx_.get() : ub_tx_[0].get();
      r->recv(peer, kDataSlot, 0, bytes);
      s->send(peer, kDataSlot, 0, bytes);
      glooWaitSend(*s, "gloo ping");
      glooWaitRecv(*r, "gloo pong");
      clock.done(j);
    }
    double t = clock.medianTotal();
    verifyPattern(final_rx_->data(), bytes, payloadSeed(c.seed, 1), "gloo latency (pong)");
    return t;
  }
  auto rbuf = [&](uint64_t j) { return j + 1 == total ? ub_final_rx_.get() : ub_rx_[j % 2].get(); };
  rbuf(0)->recv(peer, kDataSlot, 0, bytes);
  for (uint64_t j = 0; j < total; ++j) {
    glooWaitRecv(*rbuf(j), "gloo ping");
    if (j + 1 < total) rbuf(j + 1)->recv(peer, kDataSlot, 0, bytes);
    UB* s = j + 1 == total ? ub_final_tx_.get() : ub_tx_[0].get();
    s->send(peer, kDataSlot, 0, bytes);
    glooWaitSend(*s, "gloo pong");
  }
  verifyPattern(final_rx_->data(), bytes, payloadSeed(c.seed, 0), "gloo latency (ping)");
  return 0;
}


// ---- UCX -----------------------------------------------------------------------

void P2pPeer::State::ucxCheck(const RawUcxOp& op, size_t bytes, const char* what) {
  if (op.status != UCS_OK) throw BenchError(std::string(what) + ": " + ucs_status_string(op.status));
  if (op.length != bytes) {
    throw BenchError(std::string(what) + ": received " + std::to_string(op.length) + " bytes, expected " +
                     std::to_string(bytes));
  }
}

namespace {

void waitOp(RawUcx& u, RawUcxOp& op, double sleep_spin_s) {
  if (sleep_spin_s < 0) {
    u.wait(op, kUcxTimeoutS);
  } else {
    u.waitSleeping(op, sleep_spin_s, kUcxTimeoutS);
  }
}

void pollOps(RawUcx& u, std::vector<RawUcxOp*>& done, double sleep_spin_s) {
  if (sleep_spin_s < 0) {
    u.poll(done, kUcxTimeoutS);
  } else {
    u.pollSleeping(done, sleep_spin_s, kUcxTimeoutS);
  }
}

}  // namespace

double P2pPeer::State::ucxBandwidth(const P2pCommand& c, RawUcx& u, double sleep_spin_s) {
  const size_t bytes = c.bytes;
  const uint64_t n = c.iters;
  std::vector<RawUcxOp> ops(kWindow);
  for (RawUcxOp& op : ops) op.queue = true;
  std::vector<RawUcxOp*> done;
  if (rank == 0) {
    fillPattern(final_tx_->data(), bytes, payloadSeed(c.seed, 0));
    std::vector<RawUcxOp*> free_ops;
    for (RawUcxOp& op : ops) free_ops.push_back(&op);
    auto reap = [&] {
      pollOps(u, done, sleep_spin_s);
      for (RawUcxOp* op : done) {
        if (op->status != UCS_OK) throw BenchError(std::string("ucx bandwidth send: ") + ucs_status_string(op->status));
        free_ops.push_back(op);
      }
    };
    recvSync();
    auto t0 = Clock::now();
    for (uint64_t i = 0; i < n; ++i) {
      while (free_ops.empty()) reap();
      RawUcxOp* op = free_ops.back();
      free_ops.pop_back();
      u.send(0, i + 1 == n ? final_tx_->data() : tx_->data(), bytes, kUcxTag, *op);
    }
    while (free_ops.size() < kWindow) reap();
    recvSync();
    return secondsSince(t0);
  }
  std::memset(final_rx_->data(), kPoison, bytes);
  auto post = [&](RawUcxOp& op, uint64_t i) {
    op.id = i;
    u.recv(i + 1 == n ? final_rx_->data() : rxBuf(i), bytes, kUcxTag, op);
  };
  const uint64_t first = std::min<uint64_t>(kWindow, n);
  for (uint64_t i = 0; i < first; ++i) post(ops[i], i);
  sendSync();
  uint64_t received = 0;
  while (received < n) {
    pollOps(u, done, sleep_spin_s);
    for (RawUcxOp* op : done) {
      ucxCheck(*op, bytes, "ucx bandwidth recv");
      ++received;
      if (op->id + kWindow < n) post(*op, op->id + kWindow);  // reuses the buffer of op->id
    }
  }
  sendSync();
  verifyPattern(final_rx_->data(), bytes, payloadSeed(c.seed, 0), "ucx bandwidth");
  return 0;
}

double P2pPeer::State::ucxLatency(const P2pCommand& c, RawUcx& u, double sleep_spin_s) {
  const size_t bytes = c.bytes;
  const uint64_t total = c.iters + 1;  // the first round trip is untimed
  fillPattern(final_tx_->data(), bytes, payloadSeed(c.seed, rank));
  std::memset(final_rx_->data(), kPoison, bytes);
  RawUcxOp s, r[2];
  if (rank == 0) {
    p2p::RoundTrips clock(c.iters);
    for (uint64_t j = 0; j < total; ++j) {
      const bool last = j + 1 == total;
      u.recv(last ? final_rx_->data() : rxBuf(0), bytes, kUcxTag, r[0]);
      u.send(0, last ? final_tx_->data() : tx_->data(), bytes, kUcxTag, s);
      waitOp(u, s, sleep_spin_s);
      waitOp(u, r[0], sleep_spin_s);
      ucxCheck(r[0], bytes, "ucx pong");
      clock.done(j);
    }
    double t = clock.medianTotal();
    verifyPattern(final_rx_->data(), bytes, payloadSeed(c.seed, 1), "ucx latency (pong)");
    return t;
  }
  auto rbuf = [&](uint64_t j) { return j + 1 == total ? final_rx_->data() : rxBuf(j % 2); };
  u.recv(rbuf(0), bytes, kUcxTag, r[0]);
  for (uint64_t j = 0; j < total; ++j) {
    RawUcxOp& now = r[j % 2];
    waitOp(u, now, sleep_spin_s);
    ucxCheck(now, bytes, "ucx ping");
    if (j + 1 < total) u.recv(rbuf(j + 1), bytes, kUcxTag, r[(j + 1) % 2]);
    u.send(0, j + 1 == total ? final_tx_->data() : tx_->data(), bytes, kUcxTag, s);
    waitOp(u, s, sleep_spin_s);
  }
  verifyPattern(final_rx_->data(), bytes, payloadSeed(c.seed, 0), "ucx latency (ping)");
  return 0;
}

}  // namespace mwbench
