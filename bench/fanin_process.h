// One process of the fan-in suite (fanin_suite.cc): a leader (rank 0)
// receiving from K senders (ranks 1..K), each sender streaming checked
// kMsgBytes messages with kWindow outstanding, over three implementations
// that share the buffers:
//   OURS  K two-rank multiworld worlds "fan-<k>", the leader completing
//         through mw_poll;
//   UCX   one raw ucp worker per process (bench/raw_ucx.h), the leader's
//         receives matched by the sender's tag and reaped by polling, the
//         senders spinning briefly and then sleeping, as OURS' do;
//   GLOO  one gloo::rendezvous::Context of K+1, the leader waiting round
//         robin (it also carries the barriers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gloo/rendezvous/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <multiworld/multiworld.h>

#include "bench/bench_options.h"
#include "bench/raw_ucx.h"

namespace mwbench {
namespace fanin {

constexpr std::size_t kMsgBytes = 64 << 10;
constexpr std::size_t kWindow = 4;  // per sender: sends outstanding, receives posted at the leader
constexpr int kTimeoutMs = 120000;

enum class Impl { Ours, Ucx, Gloo };

class Process {
 public:
  // Forms OURS (on opt's backend and spin_us), GLOO and, with the UCX
  // backend, UCX; rendezvous of the raw ones through a file store in
  // `store_dir`. Throws.
  Process(int rank, int senders, std::size_t messages, const BenchOptions& opt, const std::string& redis_url,
          const std::string& ns, const std::string& store_dir);
  // Meets the others at a barrier, then tears everything down.
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  // One pass of `impl`, all processes together: the leader's seconds from
  // the senders' start to its last checked message; 0 on a sender. A
  // message arriving wrong throws.
  double pass(Impl impl);

 private:
  using UB = gloo::transport::UnboundBuffer;

  char* buf(std::size_t i) { return mem_.data() + i * kMsgBytes; }
  std::size_t slotOf(int sender, uint64_t seq) const {
    return static_cast<std::size_t>(sender - 1) * kWindow + seq % kWindow;
  }
  void barrier();
  void senderOurs();
  void senderUcx();
  void senderGloo();

  const int rank_, senders_;
  const uint64_t m_;
  mw_context_t* ctx_ = nullptr;
  std::vector<mw_world_t*> worlds_;
  std::shared_ptr<gloo::rendezvous::Context> gloo_;
  std::unique_ptr<RawUcx> ucx_;
  std::vector<char> mem_;
  std::vector<std::unique_ptr<UB>> ubs_;  // GLOO views of the buffers
};

}  // namespace fanin
}  // namespace mwbench
