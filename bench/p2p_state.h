// Inside one rank of the point-to-point benchmark (p2p_bench.h): the
// connections, the payload buffers and the measurements. OURS lives in
// p2p_bench.cc, the raw baselines (GLOO, UCX) in p2p_raw.cc.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <gloo/rendezvous/context.h>
#include <gloo/transport/device.h>
#include <gloo/transport/unbound_buffer.h>

#include <multiworld/multiworld.h>

#include "bench/p2p_bench.h"
#include "bench/raw_ucx.h"

namespace mwbench {
namespace p2p {

using Clock = std::chrono::steady_clock;
using UB = gloo::transport::UnboundBuffer;

constexpr unsigned char kPoison = 0xA5;
// GLOO's slots (a context of its own, so no clash with ours).
constexpr uint64_t kDataSlot = 0x1000;
constexpr uint64_t kCtrlSlot = 0x1001;
constexpr uint64_t kSyncSlot = 0x1002;
// UCX's tag (the raw worker carries nothing else).
constexpr uint64_t kUcxTag = 0x6d77;

double secondsSince(Clock::time_point t0);
// Content of the payload sent by `sender` for a command seed.
uint64_t payloadSeed(uint64_t seed, int sender);
void fillPattern(char* p, std::size_t n, uint64_t seed);
// Throws BenchError naming the first wrong byte.
void verifyPattern(const char* p, std::size_t n, uint64_t seed, const char* what);

// Rank 0's clock for a latency measurement: times every round trip but
// the first (untimed), so that a preemption on a shared machine, which can
// stall a polling loop for a whole scheduler slice, moves the median and
// not the result.
class RoundTrips {
 public:
  explicit RoundTrips(uint64_t timed);
  // Round trip `j` (from 0) is complete.
  void done(uint64_t j);
  // The seconds the timed round trips take at the median one's duration.
  double medianTotal();

 private:
  std::vector<double> laps_;
  Clock::time_point last_;
};

// Page-aligned, first-touched memory.
class Buffer {
 public:
  explicit Buffer(std::size_t n);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  char* data() { return p_; }

 private:
  char* p_;
};

}  // namespace p2p

class P2pPeer::State {
 public:
  explicit State(const PeerSetup& setup);
  ~State();

  double execute(const P2pCommand& c);
  void sendCmd(const P2pCommand& c);
  P2pCommand recvCmd();
  void sendSync();
  void recvSync();
  // Closes the UCX endpoints, with the peer doing the same.
  void closeRaw();
  // The raw UCX workers: UCX (error mode PEER) and UCX_SHM (mode NONE);
  // null where absent.
  const RawUcx* ucx() const { return ucx_.get(); }
  const RawUcx* ucxShm() const { return ucx_shm_.get(); }

  const int rank;
  const int peer;

 private:
  using Buffer = p2p::Buffer;
  using UB = p2p::UB;

  void ensureBuffers(std::size_t bytes);
  char* rxBuf(std::size_t i) { return rx_[i % rx_.size()]->data(); }

  // Each returns the seconds of the timed part on rank 0, 0 on rank 1.
  double oursBandwidth(const P2pCommand& c);
  double oursLatency(const P2pCommand& c);
  double glooBandwidth(const P2pCommand& c);
  double glooLatency(const P2pCommand& c);
  // `sleep_spin_s` >= 0: wait as UcxSleep does, polling that long first.
  double ucxBandwidth(const P2pCommand& c, RawUcx& u, double sleep_spin_s);
  double ucxLatency(const P2pCommand& c, RawUcx& u, double sleep_spin_s);

  mw_request_t* oursSend(const void* buf, std::size_t n);
  mw_request_t* oursRecv(void* buf, std::size_t n);
  void oursWait(mw_request_t* r, const char* what);
  // Reaps at least one completion; returns their user_data.
  std::vector<uint64_t> oursReap(const char* what);
  void glooWaitSend(UB& b, const char* what);
  void glooWaitRecv(UB& b, const char* what);
  // Throws unless `op` received exactly `bytes`.
  void ucxCheck(const RawUcxOp& op, std::size_t bytes, const char* what);

  const double spin_s_;  // ours' spin_us, for UcxSleep
  const std::chrono::milliseconds timeout_;
  const int timeout_ms_;

  // OURS, and OURS with metrics off (--metrics compare); the helpers run
  // on `ours_`, one of the two.
  struct Ours {
    mw_context_t* ctx = nullptr;
    mw_world_t* world = nullptr;
  };
  Ours on_, off_;
  Ours* ours_ = &on_;

  // GLOO, which also carries the commands and syncs of every measurement
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::rendezvous::Context> raw_;
  P2pCommand cmd_;
  uint64_t sync_word_ = 0;
  std::unique_ptr<UB> ub_cmd_, ub_sync_;

  // UCX and UCX_SHM (UCX backend only; UCX_SHM only where UCX_TLS allows
  // shared memory)
  std::unique_ptr<RawUcx> ucx_, ucx_shm_;

  // Payload buffers of the current size, shared by every implementation.
  // The last payload of every measurement goes from final_tx_ to
  // final_rx_, which is poisoned first, and is verified.
  std::size_t bytes_ = 0;
  std::unique_ptr<Buffer> tx_, final_tx_, final_rx_;
  std::vector<std::unique_ptr<Buffer>> rx_;
  std::vector<std::unique_ptr<UB>> ub_tx_, ub_rx_;  // GLOO views of tx_ (kWindow of them) and rx_
  std::unique_ptr<UB> ub_final_tx_, ub_final_rx_;
};

}  // namespace mwbench
