#include "bench/p2p_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <vector>

#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>

#include <multiworld/multiworld.h>

namespace mwbench {
namespace {

using Clock = std::chrono::steady_clock;
using UB = gloo::transport::UnboundBuffer;

// Slots of the raw context (a context of its own, so no clash with ours).
constexpr uint64_t kDataSlot = 0x1000;
constexpr uint64_t kCtrlSlot = 0x1001;
constexpr uint64_t kSyncSlot = 0x1002;

constexpr unsigned char kPoison = 0xA5;

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Content of the payload sent by `sender` for a command seed.
uint64_t payloadSeed(uint64_t seed, int sender) { return splitmix(seed * 2 + static_cast<uint64_t>(sender)); }

void fillPattern(char* p, size_t n, uint64_t seed) {
  const size_t words = n / 8;
  for (size_t k = 0; k < words; ++k) {
    uint64_t v = splitmix(seed + k * 0x9e3779b97f4a7c15ULL);
    std::memcpy(p + 8 * k, &v, 8);
  }
  if (n % 8) {
    uint64_t v = splitmix(seed + words * 0x9e3779b97f4a7c15ULL);
    std::memcpy(p + 8 * words, &v, n % 8);
  }
}

void verifyPattern(const char* p, size_t n, uint64_t seed, const char* what) {
  const size_t words = (n + 7) / 8;
  for (size_t k = 0; k < words; ++k) {
    uint64_t v = splitmix(seed + k * 0x9e3779b97f4a7c15ULL);
    const size_t len = std::min<size_t>(8, n - 8 * k);
    if (std::memcmp(p + 8 * k, &v, len) != 0) {
      size_t off = 8 * k;
      const char* expect = reinterpret_cast<const char*>(&v);
      while (p[off] == expect[off - 8 * k]) ++off;
      char detail[64];
      std::snprintf(detail, sizeof detail, " (got 0x%02x, expected 0x%02x)", static_cast<unsigned char>(p[off]),
                    static_cast<unsigned char>(expect[off - 8 * k]));
      throw BenchError(std::string(what) + ": payload of " + std::to_string(n) + " bytes is wrong at byte " +
                       std::to_string(off) + detail);
    }
  }
}

// Page-aligned, first-touched memory.
class Buffer {
 public:
  explicit Buffer(size_t n) : n_(n) {
    size_t rounded = std::max<size_t>(4096, (n + 4095) / 4096 * 4096);
    p_ = static_cast<char*>(std::aligned_alloc(4096, rounded));
    if (!p_) throw BenchError("out of memory allocating " + std::to_string(n) + " bytes");
    std::memset(p_, 0, rounded);
  }
  ~Buffer() { std::free(p_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  char* data() { return p_; }
  size_t size() const { return n_; }

 private:
  char* p_;
  size_t n_;
};

// mw_last_error() starts with the status name.
[[noreturn]] void mwFail(const char* what) {
  throw BenchError(std::string(what) + " failed: " + mw_last_error());
}

void mwCheck(mw_status_t s, const char* what) {
  if (s != MW_OK) mwFail(what);
}

}  // namespace

class P2pPeer::State {
 public:
  explicit State(const PeerSetup& setup);
  ~State();

  double execute(const P2pCommand& c);
  void sendCmd(const P2pCommand& c);
  P2pCommand recvCmd();
  void sendSync();
  void recvSync();

  const int rank;
  const int peer;

 private:
  void ensureBuffers(size_t bytes);
  char* rxBuf(size_t i) { return rx_[i % rx_.size()]->data(); }

  double oursBandwidth(const P2pCommand& c);
  double rawBandwidth(const P2pCommand& c);
  double oursLatency(const P2pCommand& c);
  double rawLatency(const P2pCommand& c);

  mw_request_t* oursSend(const void* buf, size_t n);
  mw_request_t* oursRecv(void* buf, size_t n);
  void oursWait(mw_request_t* r, const char* what);
  // Reaps at least one completion; returns their user_data.
  std::vector<uint64_t> oursReap(const char* what);
  void rawWaitSend(UB& b, const char* what);
  void rawWaitRecv(UB& b, const char* what);

  const std::chrono::milliseconds timeout_;
  const int timeout_ms_;

  // OURS
  mw_context_t* ctx_ = nullptr;
  mw_world_t* world_ = nullptr;

  // RAW
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::rendezvous::Context> raw_;
  P2pCommand cmd_;
  uint64_t sync_word_ = 0;
  std::unique_ptr<UB> ub_cmd_, ub_sync_;

  // Payload buffers of the current size, shared by OURS and RAW. The last
  // payload of every measurement goes from final_tx_ to final_rx_, which is
  // poisoned first, and is verified.
  size_t bytes_ = 0;
  std::unique_ptr<Buffer> tx_, final_tx_, final_rx_;
  std::vector<std::unique_ptr<Buffer>> rx_;
  std::vector<std::unique_ptr<UB>> ub_tx_, ub_rx_;  // RAW views of tx_ (kWindow of them) and rx_
  std::unique_ptr<UB> ub_final_tx_, ub_final_rx_;
};

P2pPeer::State::State(const PeerSetup& setup)
    : rank(setup.rank),
      peer(1 - setup.rank),
      timeout_(setup.timeout_ms),
      timeout_ms_(setup.timeout_ms) {
  // OURS: defaults except where a benchmark on a shared loopback needs
  // otherwise. The heartbeat timeout is raised so that a starved machine
  // does not break the world mid-run; it does not touch the data path.
  mw_config_t* cfg = nullptr;
  mwCheck(mw_config_new(&cfg), "mw_config_new");
  const std::pair<const char*, std::string> settings[] = {
      {"redis_url", setup.redis_url},
      {"namespace", setup.mw_namespace},
      {"bind_address", "127.0.0.1"},
      {"op_timeout_ms", std::to_string(setup.timeout_ms)},
      {"heartbeat_timeout_ms", "10000"},
      {"log_level", "error"},
  };
  for (const auto& [key, value] : settings) {
    mw_status_t s = mw_config_set(cfg, key, value.c_str());
    if (s != MW_OK) {
      mw_config_free(cfg);
      mwFail((std::string("mw_config_set ") + key).c_str());
    }
  }
  mw_status_t s = mw_context_new(cfg, &ctx_);
  mw_config_free(cfg);
  if (s != MW_OK) mwFail("mw_context_new");
  mwCheck(mw_world_create(ctx_, "p2p", rank, 2, MW_BACKEND_GLOO, 0, setup.timeout_ms, &world_),
          "mw_world_create");

  // RAW: the same TCP transport, rendezvous through a file store.
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  device_ = gloo::transport::tcp::CreateDevice(attr);
  raw_ = std::make_shared<gloo::rendezvous::Context>(rank, 2);
  raw_->setTimeout(timeout_);
  gloo::rendezvous::FileStore store(setup.file_store_dir);
  raw_->connectFullMesh(store, device_);
  ub_cmd_ = raw_->createUnboundBuffer(&cmd_, sizeof cmd_);
  ub_sync_ = raw_->createUnboundBuffer(&sync_word_, sizeof sync_word_);
}

P2pPeer::State::~State() {
  ub_tx_.clear();
  ub_rx_.clear();
  ub_final_tx_.reset();
  ub_final_rx_.reset();
  ub_cmd_.reset();
  ub_sync_.reset();
  raw_.reset();
  device_.reset();
  if (world_) mw_world_destroy(world_);  // the peer may already be gone: ignore
  mw_context_free(ctx_);
}

void P2pPeer::State::ensureBuffers(size_t bytes) {
  if (bytes == bytes_ && tx_) return;
  ub_tx_.clear();
  ub_rx_.clear();
  ub_final_tx_.reset();
  ub_final_rx_.reset();
  tx_.reset();
  final_tx_.reset();
  final_rx_.reset();
  rx_.clear();

  bytes_ = bytes;
  tx_ = std::make_unique<Buffer>(bytes);
  final_tx_ = std::make_unique<Buffer>(bytes);
  final_rx_ = std::make_unique<Buffer>(bytes);
  // Rank 1 receives the bandwidth stream (kWindow outstanding); rank 0 only
  // receives pongs, and rank 1's pings alternate between two buffers.
  const size_t nrx = rank == 1 ? kWindow : 1;
  for (size_t i = 0; i < nrx; ++i) rx_.push_back(std::make_unique<Buffer>(bytes));
  fillPattern(tx_->data(), bytes, splitmix(bytes * 4 + static_cast<uint64_t>(rank)));

  for (size_t i = 0; i < kWindow; ++i) ub_tx_.push_back(raw_->createUnboundBuffer(tx_->data(), bytes));
  for (auto& b : rx_) ub_rx_.push_back(raw_->createUnboundBuffer(b->data(), bytes));
  ub_final_tx_ = raw_->createUnboundBuffer(final_tx_->data(), bytes);
  ub_final_rx_ = raw_->createUnboundBuffer(final_rx_->data(), bytes);
}

// ---- control over the raw context ------------------------------------------

void P2pPeer::State::rawWaitSend(UB& b, const char* what) {
  if (!b.waitSend(nullptr, timeout_)) throw BenchError(std::string(what) + ": raw send aborted");
}

void P2pPeer::State::rawWaitRecv(UB& b, const char* what) {
  if (!b.waitRecv(nullptr, timeout_)) throw BenchError(std::string(what) + ": raw recv aborted");
}

void P2pPeer::State::sendCmd(const P2pCommand& c) {
  cmd_ = c;
  ub_cmd_->send(peer, kCtrlSlot);
  rawWaitSend(*ub_cmd_, "command");
}

P2pCommand P2pPeer::State::recvCmd() {
  ub_cmd_->recv(peer, kCtrlSlot);
  rawWaitRecv(*ub_cmd_, "command");
  return cmd_;
}

void P2pPeer::State::sendSync() {
  sync_word_ = 0x73796e63;
  ub_sync_->send(peer, kSyncSlot);
  rawWaitSend(*ub_sync_, "sync");
}

void P2pPeer::State::recvSync() {
  ub_sync_->recv(peer, kSyncSlot);
  rawWaitRecv(*ub_sync_, "sync");
  if (sync_word_ != 0x73796e63) throw BenchError("corrupt sync message");
}

// ---- OURS helpers ------------------------------------------------------------

mw_request_t* P2pPeer::State::oursSend(const void* buf, size_t n) {
  mw_request_t* r = nullptr;
  mwCheck(mw_send_async(world_, buf, n, MW_UINT8, peer, &r), "mw_send_async");
  return r;
}

mw_request_t* P2pPeer::State::oursRecv(void* buf, size_t n) {
  mw_request_t* r = nullptr;
  mwCheck(mw_recv_async(world_, buf, n, MW_UINT8, peer, &r), "mw_recv_async");
  return r;
}

void P2pPeer::State::oursWait(mw_request_t* r, const char* what) {
  mw_status_t s = mw_wait(r, timeout_ms_);
  if (s != MW_OK) {
    std::string msg = std::string(what) + ": mw_wait failed: " + mw_last_error();
    mw_request_free(r);
    throw BenchError(msg);
  }
  mw_request_free(r);
}

std::vector<uint64_t> P2pPeer::State::oursReap(const char* what) {
  mw_completion_t c[kWindow];
  size_t n = 0;
  mwCheck(mw_poll(ctx_, c, kWindow, timeout_ms_, &n), "mw_poll");
  if (n == 0) throw BenchError(std::string(what) + ": no completion within " + std::to_string(timeout_ms_) + " ms");
  std::vector<uint64_t> done;
  std::string error;
  for (size_t i = 0; i < n; ++i) {
    if (c[i].status != MW_OK && error.empty()) {
      error = std::string(what) + ": request failed: " + mw_status_string(c[i].status);
    }
    done.push_back(c[i].user_data);
    mw_request_free(c[i].request);
  }
  if (!error.empty()) throw BenchError(error);
  return done;
}

// ---- measurements ------------------------------------------------------------
//
// Bandwidth: rank 1 posts kWindow receives, tells rank 0 it is ready (raw
// sync message, for both implementations), rank 0 starts the clock and
// streams `iters` messages keeping kWindow sends outstanding, rank 1 reposts
// each receive as it completes and acknowledges the last (raw sync again);
// rank 0 stops the clock at the acknowledgement.
//
// Latency: one untimed ping-pong, then `iters` timed ones; the receive for
// the next message is always posted before it can arrive. RAW posts the
// receive before the send. OURS issues the send first: operations of one
// world run in issue order, so a receive issued before the send would hold
// the send back until the reply it waits for, which never comes. Our
// receive still reaches the peer at issue time (its size announcement is
// posted then), long before the reply can.

double P2pPeer::State::oursBandwidth(const P2pCommand& c) {
  const size_t bytes = c.bytes;
  const uint64_t n = c.iters;
  if (rank == 0) {
    fillPattern(final_tx_->data(), bytes, payloadSeed(c.seed, 0));
    recvSync();
    auto t0 = Clock::now();
    size_t inflight = 0;
    for (uint64_t i = 0; i < n; ++i) {
      while (inflight >= kWindow) inflight -= oursReap("ours bandwidth send").size();
      oursSend(i + 1 == n ? final_tx_->data() : tx_->data(), bytes);
      ++inflight;
    }
    while (inflight > 0) inflight -= oursReap("ours bandwidth send").size();
    recvSync();
    return secondsSince(t0);
  }
  std::memset(final_rx_->data(), kPoison, bytes);
  auto post = [&](uint64_t i) {
    mw_request_t* r = oursRecv(i + 1 == n ? final_rx_->data() : rxBuf(i), bytes);
    mw_request_set_user_data(r, i);
  };
  const uint64_t first = std::min<uint64_t>(kWindow, n);
  for (uint64_t i = 0; i < first; ++i) post(i);
  sendSync();
  uint64_t done = 0;
  while (done < n) {
    for (uint64_t i : oursReap("ours bandwidth recv")) {
      ++done;
      if (i + kWindow < n) post(i + kWindow);  // reuses the buffer of i
    }
  }
  sendSync();
  verifyPattern(final_rx_->data(), bytes, payloadSeed(c.seed, 0), "ours bandwidth");
  return 0;
}

double P2pPeer::State::rawBandwidth(const P2pCommand& c) {
  const size_t bytes = c.bytes;
  const uint64_t n = c.iters;
  if (rank == 0) {
    fillPattern(final_tx_->data(), bytes, payloadSeed(c.seed, 0));
    std::deque<UB*> inflight;
    recvSync();
    auto t0 = Clock::now();
    for (uint64_t i = 0; i < n; ++i) {
      if (inflight.size() >= kWindow) {
        rawWaitSend(*inflight.front(), "raw bandwidth send");
        inflight.pop_front();
      }
      UB* b = i + 1 == n ? ub_final_tx_.get() : ub_tx_[i % kWindow].get();
      b->send(peer, kDataSlot, 0, bytes);
      inflight.push_back(b);
    }
    while (!inflight.empty()) {
      rawWaitSend(*inflight.front(), "raw bandwidth send");
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
    rawWaitRecv(*buf(i), "raw bandwidth recv");
    if (i + kWindow < n) buf(i + kWindow)->recv(peer, kDataSlot, 0, bytes);
  }
  sendSync();
  verifyPattern(final_rx_->data(), bytes, payloadSeed(c.seed, 0), "raw bandwidth");
  return 0;
}

double P2pPeer::State::oursLatency(const P2pCommand& c) {
  const size_t bytes = c.bytes;
  const uint64_t total = c.iters + 1;  // the first round trip is untimed
  fillPattern(final_tx_->data(), bytes, payloadSeed(c.seed, rank));
  std::memset(final_rx_->data(), kPoison, bytes);
  if (rank == 0) {
    Clock::time_point t0 = Clock::now();
    for (uint64_t j = 0; j < total; ++j) {
      if (j == 1) t0 = Clock::now();
      const bool last = j + 1 == total;
      mw_request_t* s = oursSend(last ? final_tx_->data() : tx_->data(), bytes);
      mw_request_t* r = oursRecv(last ? final_rx_->data() : rxBuf(0), bytes);
      oursWait(r, "ours pong");
      oursWait(s, "ours ping");
    }
    double t = secondsSince(t0);
    verifyPattern(final_rx_->data(), bytes, payloadSeed(c.seed, 1), "ours latency (pong)");
    return t;
  }
  auto rbuf = [&](uint64_t j) { return j + 1 == total ? final_rx_->data() : rxBuf(j % 2); };
  mw_request_t* r = oursRecv(rbuf(0), bytes);
  for (uint64_t j = 0; j < total; ++j) {
    oursWait(r, "ours ping");
    r = nullptr;
    mw_request_t* s = oursSend(j + 1 == total ? final_tx_->data() : tx_->data(), bytes);
    if (j + 1 < total) r = oursRecv(rbuf(j + 1), bytes);
    oursWait(s, "ours pong");
  }
  verifyPattern(final_rx_->data(), bytes, payloadSeed(c.seed, 0), "ours latency (ping)");
  return 0;
}

double P2pPeer::State::rawLatency(const P2pCommand& c) {
  const size_t bytes = c.bytes;
  const uint64_t total = c.iters + 1;
  fillPattern(final_tx_->data(), bytes, payloadSeed(c.seed, rank));
  std::memset(final_rx_->data(), kPoison, bytes);
  if (rank == 0) {
    Clock::time_point t0 = Clock::now();
    for (uint64_t j = 0; j < total; ++j) {
      if (j == 1) t0 = Clock::now();
      const bool last = j + 1 == total;
      UB* r = last ? ub_final_rx_.get() : ub_rx_[0].get();
      UB* s = last ? ub_final_tx_.get() : ub_tx_[0].get();
      r->recv(peer, kDataSlot, 0, bytes);
      s->send(peer, kDataSlot, 0, bytes);
      rawWaitSend(*s, "raw ping");
      rawWaitRecv(*r, "raw pong");
    }
    double t = secondsSince(t0);
    verifyPattern(final_rx_->data(), bytes, payloadSeed(c.seed, 1), "raw latency (pong)");
    return t;
  }
  auto rbuf = [&](uint64_t j) { return j + 1 == total ? ub_final_rx_.get() : ub_rx_[j % 2].get(); };
  rbuf(0)->recv(peer, kDataSlot, 0, bytes);
  for (uint64_t j = 0; j < total; ++j) {
    rawWaitRecv(*rbuf(j), "raw ping");
    if (j + 1 < total) rbuf(j + 1)->recv(peer, kDataSlot, 0, bytes);
    UB* s = j + 1 == total ? ub_final_tx_.get() : ub_tx_[0].get();
    s->send(peer, kDataSlot, 0, bytes);
    rawWaitSend(*s, "raw pong");
  }
  verifyPattern(final_rx_->data(), bytes, payloadSeed(c.seed, 0), "raw latency (ping)");
  return 0;
}

double P2pPeer::State::execute(const P2pCommand& c) {
  if (c.bytes == 0 || c.iters == 0) throw BenchError("empty measurement");
  ensureBuffers(c.bytes);
  const auto m = static_cast<Measure>(c.measure);
  const auto impl = static_cast<Impl>(c.impl);
  if (m == Measure::Bandwidth && impl == Impl::Ours) return oursBandwidth(c);
  if (m == Measure::Bandwidth && impl == Impl::Raw) return rawBandwidth(c);
  if (m == Measure::Latency && impl == Impl::Ours) return oursLatency(c);
  if (m == Measure::Latency && impl == Impl::Raw) return rawLatency(c);
  throw BenchError("unknown command " + std::to_string(c.measure) + "/" + std::to_string(c.impl));
}

// ---- P2pPeer -----------------------------------------------------------------

P2pPeer::P2pPeer(const PeerSetup& setup) {
  if (setup.rank != 0 && setup.rank != 1) throw BenchError("rank must be 0 or 1");
  s_ = std::make_unique<State>(setup);
}

P2pPeer::~P2pPeer() = default;

double P2pPeer::run(const P2pCommand& cmd) {
  if (s_->rank != 0) throw BenchError("only rank 0 drives the benchmark");
  s_->sendCmd(cmd);
  return s_->execute(cmd);
}

void P2pPeer::quit() {
  P2pCommand c;
  c.measure = static_cast<uint32_t>(Measure::Quit);
  s_->sendCmd(c);
  s_->recvSync();
}

void P2pPeer::serve() {
  if (s_->rank != 1) throw BenchError("only rank 1 serves");
  for (;;) {
    P2pCommand c = s_->recvCmd();
    if (static_cast<Measure>(c.measure) == Measure::Quit) {
      s_->sendSync();
      return;
    }
    s_->execute(c);
  }
}

}  // namespace mwbench
