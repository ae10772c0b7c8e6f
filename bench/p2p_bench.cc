#include "bench/p2p_bench.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include "bench/p2p_state.h"
#include "tools/lab/stats.h"

namespace mwbench {
namespace p2p {
namespace {

uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

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

RoundTrips::RoundTrips(uint64_t timed) { laps_.reserve(timed); }

void RoundTrips::done(uint64_t j) {
  const Clock::time_point t = Clock::now();
  if (j > 0) laps_.push_back(std::chrono::duration<double>(t - last_).count());
  last_ = t;
}

double RoundTrips::medianTotal() { return mwlab::median(laps_) * static_cast<double>(laps_.size()); }

Buffer::Buffer(size_t n) {
  size_t rounded = std::max<size_t>(4096, (n + 4095) / 4096 * 4096);
  p_ = static_cast<char*>(std::aligned_alloc(4096, rounded));
  if (!p_) throw BenchError("out of memory allocating " + std::to_string(n) + " bytes");
  std::memset(p_, 0, rounded);
}

Buffer::~Buffer() { std::free(p_); }

}  // namespace p2p

namespace {

using p2p::Clock;
using p2p::fillPattern;
using p2p::kCtrlSlot;
using p2p::kPoison;
using p2p::kSyncSlot;
using p2p::payloadSeed;
using p2p::secondsSince;
using p2p::verifyPattern;

// mw_last_error() starts with the status name.
[[noreturn]] void mwFail(const char* what) {
  throw BenchError(std::string(what) + " failed: " + mw_last_error());
}

void mwCheck(mw_status_t s, const char* what) {
  if (s != MW_OK) mwFail(what);
}

}  // namespace

P2pPeer::State::State(const PeerSetup& setup)
    : rank(setup.rank),
      peer(1 - setup.rank),
      // The library's default spin_us is 20.
      spin_s_((setup.spin_us >= 0 ? setup.spin_us : 20) * 1e-6),
      timeout_(setup.timeout_ms),
      timeout_ms_(setup.timeout_ms) {
  // OURS: defaults except where a benchmark on a shared loopback needs
  // otherwise. The heartbeat timeout is raised so that a starved machine
  // does not break the world mid-run; it does not touch the data path.
  mw_config_t* cfg = nullptr;
  mwCheck(mw_config_new(&cfg), "mw_config_new");
  std::vector<std::pair<const char*, std::string>> settings = {
      {"redis_url", setup.redis_url},
      {"namespace", setup.mw_namespace},
      {"bind_address", "127.0.0.1"},
      {"op_timeout_ms", std::to_string(setup.timeout_ms)},
      {"heartbeat_timeout_ms", "10000"},
      {"log_level", "error"},
  };
  if (setup.spin_us >= 0) settings.push_back({"spin_us", std::to_string(setup.spin_us)});
  for (const auto& [key, value] : settings) {
    mw_status_t s = mw_config_set(cfg, key, value.c_str());
    if (s != MW_OK) {
      mw_config_free(cfg);
      mwFail((std::string("mw_config_set ") + key).c_str());
    }
  }
  // --metrics compare: a second context, metrics off, with a world of its own.
  auto newOurs = [&](Ours& o, bool metrics) {
    mw_status_t s = mw_config_set(cfg, "metrics", metrics ? "on" : "off");
    if (s == MW_OK) s = mw_context_new(cfg, &o.ctx);
    return s == MW_OK;
  };
  const bool made = newOurs(on_, setup.metrics != "off") && (setup.metrics != "compare" || newOurs(off_, false));
  mw_config_free(cfg);
  if (!made) mwFail("mw_context_new");
  mwCheck(mw_world_create(on_.ctx, "p2p", rank, 2, setup.backend, 0, setup.timeout_ms, &on_.world), "mw_world_create");
  if (off_.ctx) {
    mwCheck(mw_world_create(off_.ctx, "p2p-off", rank, 2, setup.backend, 0, setup.timeout_ms, &off_.world),
            "mw_world_create");
  }

  // GLOO: TCP on 127.0.0.1, rendezvous through a file store.
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  device_ = gloo::transport::tcp::CreateDevice(attr);
  raw_ = std::make_shared<gloo::rendezvous::Context>(rank, 2);
  raw_->setTimeout(timeout_);
  gloo::rendezvous::FileStore store(setup.file_store_dir);
  raw_->connectFullMesh(store, device_);
  ub_cmd_ = raw_->createUnboundBuffer(&cmd_, sizeof cmd_);
  ub_sync_ = raw_->createUnboundBuffer(&sync_word_, sizeof sync_word_);

  // UCX and UCX_SHM: worker addresses through the same file store.
  auto connectRaw = [&](RawUcx& u, const std::string& key) {
    const std::string& mine = u.address();
    store.set(key + std::to_string(rank), std::vector<char>(mine.begin(), mine.end()));
    const std::vector<char> theirs = store.get(key + std::to_string(peer));
    u.connect(std::string(theirs.begin(), theirs.end()));
  };
  if (setup.backend == MW_BACKEND_UCX) {
    ucx_ = std::make_unique<RawUcx>(UCP_ERR_HANDLING_MODE_PEER);
    connectRaw(*ucx_, "ucx-");
    if (RawUcx::sharedMemoryAllowed()) {
      ucx_shm_ = std::make_unique<RawUcx>(UCP_ERR_HANDLING_MODE_NONE);
      connectRaw(*ucx_shm_, "ucx-shm-");
    }
  }
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
  ucx_.reset();
  ucx_shm_.reset();
  for (Ours* o : {&on_, &off_}) {
    if (o->world) mw_world_destroy(o->world);  // the peer may already be gone: ignore
    mw_context_free(o->ctx);
  }
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
  fillPattern(tx_->data(), bytes, payloadSeed(bytes, 2 + rank));

  for (size_t i = 0; i < kWindow; ++i) ub_tx_.push_back(raw_->createUnboundBuffer(tx_->data(), bytes));
  for (auto& b : rx_) ub_rx_.push_back(raw_->createUnboundBuffer(b->data(), bytes));
  ub_final_tx_ = raw_->createUnboundBuffer(final_tx_->data(), bytes);
  ub_final_rx_ = raw_->createUnboundBuffer(final_rx_->data(), bytes);
}

// ---- control over the GLOO context -----------------------------------------

void P2pPeer::State::glooWaitSend(UB& b, const char* what) {
  if (!b.waitSend(nullptr, timeout_)) throw BenchError(std::string(what) + ": gloo send aborted");
}

void P2pPeer::State::glooWaitRecv(UB& b, const char* what) {
  if (!b.waitRecv(nullptr, timeout_)) throw BenchError(std::string(what) + ": gloo recv aborted");
}

void P2pPeer::State::sendCmd(const P2pCommand& c) {
  cmd_ = c;
  ub_cmd_->send(peer, kCtrlSlot);
  glooWaitSend(*ub_cmd_, "command");
}

P2pCommand P2pPeer::State::recvCmd() {
  ub_cmd_->recv(peer, kCtrlSlot);
  glooWaitRecv(*ub_cmd_, "command");
  return cmd_;
}

void P2pPeer::State::sendSync() {
  sync_word_ = 0x73796e63;
  ub_sync_->send(peer, kSyncSlot);
  glooWaitSend(*ub_sync_, "sync");
}

void P2pPeer::State::recvSync() {
  ub_sync_->recv(peer, kSyncSlot);
  glooWaitRecv(*ub_sync_, "sync");
  if (sync_word_ != 0x73796e63) throw BenchError("corrupt sync message");
}

void P2pPeer::State::closeRaw() {
  // Both ranks are here, between the quit command and the last syncs: a
  // flushing close finds its peer up.
  if (ucx_) ucx_->closeAll(5.0);
  if (ucx_shm_) ucx_shm_->closeAll(5.0);
}

// ---- OURS helpers ------------------------------------------------------------

mw_request_t* P2pPeer::State::oursSend(const void* buf, size_t n) {
  mw_request_t* r = nullptr;
  mwCheck(mw_send_async(ours_->world, buf, n, MW_UINT8, peer, &r), "mw_send_async");
  return r;
}

mw_request_t* P2pPeer::State::oursRecv(void* buf, size_t n) {
  mw_request_t* r = nullptr;
  mwCheck(mw_recv_async(ours_->world, buf, n, MW_UINT8, peer, &r), "mw_recv_async");
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
  mwCheck(mw_poll(ours_->ctx, c, kWindow, timeout_ms_, &n), "mw_poll");
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
// Every implementation runs the same pattern (the raw ones in p2p_raw.cc).
//
// Bandwidth, as ucx_perftest's tag_bw: rank 1 posts kWindow receives, tells
// rank 0 it is ready (a sync message over GLOO, for every implementation),
// rank 0 starts the clock and streams `iters` messages keeping kWindow
// sends outstanding, reaping whichever completed; rank 1 reposts each
// receive as it completes and acknowledges the last (GLOO sync again);
// rank 0 stops the clock at the acknowledgement.
//
// Latency, as ucx_perftest's tag_lat: one untimed ping-pong, then `iters`
// timed ones; each side posts its receive before it sends, so the receive
// for the next message is always posted before that message can arrive
// (receives are matched apart from sends on our worlds too). Half the
// round trip is reported.

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

double P2pPeer::State::oursLatency(const P2pCommand& c) {
  const size_t bytes = c.bytes;
  const uint64_t total = c.iters + 1;  // the first round trip is untimed
  fillPattern(final_tx_->data(), bytes, payloadSeed(c.seed, rank));
  std::memset(final_rx_->data(), kPoison, bytes);
  if (rank == 0) {
    p2p::RoundTrips clock(c.iters);
    for (uint64_t j = 0; j < total; ++j) {
      const bool last = j + 1 == total;
      mw_request_t* r = oursRecv(last ? final_rx_->data() : rxBuf(0), bytes);
      mw_request_t* s = oursSend(last ? final_tx_->data() : tx_->data(), bytes);
      oursWait(s, "ours ping");
      oursWait(r, "ours pong");
      clock.done(j);
    }
    double t = clock.medianTotal();
    verifyPattern(final_rx_->data(), bytes, payloadSeed(c.seed, 1), "ours latency (pong)");
    return t;
  }
  auto rbuf = [&](uint64_t j) { return j + 1 == total ? final_rx_->data() : rxBuf(j % 2); };
  mw_request_t* r = oursRecv(rbuf(0), bytes);
  for (uint64_t j = 0; j < total; ++j) {
    oursWait(r, "ours ping");
    r = j + 1 < total ? oursRecv(rbuf(j + 1), bytes) : nullptr;
    mw_request_t* s = oursSend(j + 1 == total ? final_tx_->data() : tx_->data(), bytes);
    oursWait(s, "ours pong");
  }
  verifyPattern(final_rx_->data(), bytes, payloadSeed(c.seed, 0), "ours latency (ping)");
  return 0;
}

double P2pPeer::State::execute(const P2pCommand& c) {
  if (c.bytes == 0 || c.iters == 0) throw BenchError("empty measurement");
  ensureBuffers(c.bytes);
  const auto m = static_cast<Measure>(c.measure);
  const auto impl = static_cast<Impl>(c.impl);
  const bool bw = m == Measure::Bandwidth, lat = m == Measure::Latency;
  if (impl == Impl::Ours || impl == Impl::OursMetricsOff) {
    if (impl == Impl::OursMetricsOff && !off_.world) throw BenchError("ours with metrics off was not set up");
    ours_ = impl == Impl::Ours ? &on_ : &off_;
    if (bw) return oursBandwidth(c);
    if (lat) return oursLatency(c);
  }
  if (impl == Impl::Gloo && bw) return glooBandwidth(c);
  if (impl == Impl::Gloo && lat) return glooLatency(c);
  RawUcx* u = impl == Impl::Ucx || impl == Impl::UcxSleep ? ucx_.get() : impl == Impl::UcxShm ? ucx_shm_.get() : nullptr;
  const double sleep_spin_s = impl == Impl::UcxSleep ? spin_s_ : -1;
  if (u && bw) return ucxBandwidth(c, *u, sleep_spin_s);
  if (u && lat) return ucxLatency(c, *u, sleep_spin_s);
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
  s_->closeRaw();
  s_->recvSync();
  s_->sendSync();
}

std::string P2pPeer::ucxLanes() const { return s_->ucx() ? s_->ucx()->lanes(0) : ""; }

std::string P2pPeer::ucxShmLanes() const { return s_->ucxShm() ? s_->ucxShm()->lanes(0) : ""; }

bool P2pPeer::hasUcxShm() const { return s_->ucxShm() != nullptr; }

void P2pPeer::serve() {
  if (s_->rank != 1) throw BenchError("only rank 1 serves");
  for (;;) {
    P2pCommand c = s_->recvCmd();
    if (static_cast<Measure>(c.measure) == Measure::Quit) {
      s_->closeRaw();
      s_->sendSync();
      s_->recvSync();
      return;
    }
    s_->execute(c);
  }
}

}  // namespace mwbench
