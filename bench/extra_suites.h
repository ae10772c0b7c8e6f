// The allreduce, create, control, poll, fanin, failover and nccl suites. Each forks its own
// worker processes or a redis-server (when no Redis is given), so call them
// before this process made any multiworld context, Gloo object or CUDA
// call. They return 0 on success, 1 when a process failed or a result was
// wrong, 2 for unusable options; never non-zero because of timings.
#pragma once

#include "bench/bench_options.h"

namespace mwbench {

// OURS mw_allreduce_async + mw_wait against raw gloo::allreduce, float32
// SUM, 2 and 4 processes, opt.min_bytes..opt.max_bytes by powers of 4.
int runAllreduceSuite(const BenchOptions& opt);
// World creation latency: sequential creates of sizes 2 and 8 (opt.trials
// each) and 64 worlds created at once by 2 processes; raw = connectFullMesh
// over a RedisStore on the same redis-server.
int runCreateSuite(const BenchOptions& opt);
// Shrink after a kill and grow by one, against destroy + create under the
// same name (shrink) or a create of the new size (grow), each with its first
// allreduce: UCX at 4, 16 and 64 members with same_host_path auto and off,
// Gloo at 4 and 16 (bench/resize_suite.cc).
int runResizeSuite(const BenchOptions& opt);
// The control plane's load on Redis: commands/s per member and the
// heartbeat round trip for 1, 4, 100 and 1000 simulated members at the
// default heartbeat settings, Redis's capacity for that load, and the
// members one Redis serves at <= 50% of it (bench/control_suite.cc).
int runControlSuite(const BenchOptions& opt);
// Cost per completion through mw_poll and mw_test with 1 and 256 worlds open.
int runPollSuite(const BenchOptions& opt);
// One leader, K senders each in its own 2-rank world, against one raw Gloo
// context of K+1.
int runFaninSuite(const BenchOptions& opt);
// Cut links under UCX worlds with two paths per member (root; network
// namespaces): the stall of each cut (p50/p99 over opt.trials cuts) and the
// messages lost, duplicated and reordered, for a p2p stream and a 3-member
// allreduce, each with links taken down and with packets dropped; and p2p
// throughput with path_failover on against off, opt.min_bytes..max_bytes
// (bench/failover_suite.cc). Without root it says why and exits 0.
int runFailoverSuite(const BenchOptions& opt);
// OURS mw_allreduce_async / self mw_send_async + mw_recv_async on a size-1
// NCCL world against the same calls on a raw size-1 ncclComm, one GPU
// (opt.device); then 2 ranks in processes of their own (allreduce,
// broadcast, p2p) against a raw 2-rank ncclComm, and a kill -9 of a peer
// next to a world that must not notice (bench/nccl_parts.h); 0 with a
// "skipped" line (and JSON) when no GPU is usable. Defined only when built
// with CUDA and NCCL (MWBENCH_HAVE_NCCL).
int runNcclSuite(const BenchOptions& opt);

}  // namespace mwbench
