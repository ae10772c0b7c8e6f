// One rank of the point-to-point benchmark: the traffic itself, over our
// library (OURS: a 2-rank multiworld world, UCX or Gloo, through the C
// API), over a raw Gloo context on TCP (GLOO) and, with the UCX backend,
// over a raw ucp worker (UCX, bench/raw_ucx.h) with peer error handling,
// as ours, and over one without error handling (UCX_SHM: shared memory,
// the reference for what peer mode gives up; absent when UCX_TLS excludes
// shared memory).
// Rank 0 drives: each measurement it runs is first sent to rank 1 as a
// command over the raw Gloo context, so both ranks always run the same
// measurement with the same iteration count. Process management and
// reporting live in p2p_suite.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include <multiworld/multiworld.h>

namespace mwbench {

// A failed call, a timeout or a payload that arrived wrong.
class BenchError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// UcxSleep: raw UCX (as Ucx) that waits as multiworld does: polls for
// ours' spin_us, then sleeps on the worker's event fd.
// OursMetricsOff: OURS on a second context with metrics off
// (--metrics compare).
enum class Impl : uint32_t { Ours = 1, Gloo = 2, Ucx = 3, UcxShm = 4, UcxSleep = 5, OursMetricsOff = 6 };
enum class Measure : uint32_t { Bandwidth = 1, Latency = 2, Quit = 3 };

// Outstanding transfers per direction in the bandwidth measurement.
constexpr std::size_t kWindow = 8;

struct P2pCommand {
  uint32_t measure = 0;  // Measure
  uint32_t impl = 0;     // Impl
  uint64_t bytes = 0;
  uint64_t iters = 0;    // messages (bandwidth) or timed round trips (latency)
  uint64_t seed = 0;     // content of the verified last payloads
};

struct PeerSetup {
  int rank = 0;               // 0 or 1
  std::string redis_url;      // for OURS
  std::string mw_namespace;   // Redis key prefix of this run
  std::string file_store_dir; // existing, empty directory for the raw FileStore
  mw_backend_t backend = MW_BACKEND_UCX;  // OURS' world; UCX also sets up the raw UCX side
  int spin_us = -1;           // OURS' spin_us; < 0: the library's default
  std::string metrics = "on";  // OURS' metrics: on, off, or compare (OursMetricsOff as well)
  int timeout_ms = 120000;    // any single wait longer than this fails the run
};

class P2pPeer {
 public:
  // Connects OURS (context + world "p2p"), GLOO (full mesh) and, with the
  // UCX backend, UCX to the other rank. Throws BenchError or std::exception.
  explicit P2pPeer(const PeerSetup& setup);
  ~P2pPeer();
  P2pPeer(const P2pPeer&) = delete;
  P2pPeer& operator=(const P2pPeer&) = delete;

  // Rank 0 only: has rank 1 run `cmd` alongside and runs rank 0's side.
  // Returns the seconds of the timed part: `iters` messages streamed with
  // kWindow outstanding, up to rank 1's acknowledgement (Bandwidth), or
  // `iters` ping-pong round trips after one untimed one, each taking the
  // median one's time (Latency: p2p::RoundTrips).
  // The last payload of each direction is checked byte for byte; a wrong
  // byte throws BenchError on the receiving rank.
  double run(const P2pCommand& cmd);
  // Rank 0 only: ends rank 1's serve() and waits for its acknowledgement.
  void quit();
  // The lanes UCX chose for UCX's endpoint and UCX_SHM's (RawUcx::lanes()),
  // empty where that implementation is absent.
  std::string ucxLanes() const;
  std::string ucxShmLanes() const;
  bool hasUcxShm() const;
  // Rank 1 only: runs rank 0's commands until quit().
  void serve();

 private:
  class State;
  std::unique_ptr<State> s_;
};

}  // namespace mwbench
