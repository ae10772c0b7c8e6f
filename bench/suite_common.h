// Pieces shared by the allreduce, create, poll and fanin suites: worker
// processes and JSON output. Temp dirs, free ports and statistics are the
// lab's (tools/lab/temp_dir.h, ports.h, stats.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <multiworld/multiworld.h>

#include "bench/bench_options.h"
#include "tools/lab/private_redis.h"

namespace gloo {
namespace rendezvous {
class Context;
}
}  // namespace gloo

namespace mwbench {

using mwlab::PrivateRedis;

namespace common {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string machineName();
std::string jsonString(const std::string& s);
double nowSeconds();       // steady clock
// opt.min_bytes, 4x that, ... up to opt.max_bytes: the sizes every
// size-sweeping suite measures.
std::vector<std::size_t> sizesOf(const BenchOptions& opt);
double cpuSeconds();       // user + system of this process (getrusage)

// Forks n workers (call before any multiworld context or Gloo object
// exists in this process). Worker i runs fn(i, fd) and exits with its
// return value (an exception is printed and exits 1); records of rec_size
// bytes it writes to fd reach on_record in the parent. When a worker fails
// the others get a grace period, then SIGKILL. True when all exited 0.
bool runWorkers(const char* suite, int n, std::size_t rec_size, const std::function<int(int, int)>& fn,
                const std::function<void(const char*)>& on_record);
void writeRecord(int fd, const void* p, std::size_t n);

// OURS' host backend (--backend), its name, and the name a suite's results
// go under: `suite` with the UCX backend, "<suite> (gloo)" with Gloo, and
// "... (heartbeat 50/200)" with heartbeat settings given, so that one
// report can hold them all.
mw_backend_t backendOf(const BenchOptions& opt);
const char* backendName(const BenchOptions& opt);
std::string resultsName(const std::string& suite, const BenchOptions& opt);
// UCX_TLS as set, or "default" when it is not: what a UCX run is named by.
// (Every endpoint of ours and of the raw UCX baseline is in error mode
// PEER, so on one host both move data over tcp on loopback either way.)
std::string ucxTls();
// OURS' spin_us as given, or "default".
std::string spinText(const BenchOptions& opt);
// This process's threads (/proc/self/task).
int threadCount();

// A multiworld context for benchmarks on 127.0.0.1; spin_us < 0 leaves the
// library's default.
mw_context_t* newContext(const std::string& redis_url, const std::string& ns, int op_timeout_ms, int spin_us = -1,
                         bool metrics = true);
[[noreturn]] void mwFail(const std::string& what);
inline void mwCheck(mw_status_t s, const char* what) {
  if (s != MW_OK) mwFail(what);
}
void mwWait(mw_request_t* r, int timeout_ms, const char* what);  // frees r

// Finds the Redis for multiworld: opt.redis_url, MW_REDIS_URL or empty.
std::string redisFromEnv(const std::string& given);

// The Redis a suite talks to: `given` (--redis), else MW_REDIS_URL, else a
// private redis-server in `dir`, stopped when this goes away.
class SuiteRedis {
 public:
  SuiteRedis(const std::string& given, const std::string& dir);
  ~SuiteRedis();
  const std::string& url() const { return url_; }

 private:
  std::unique_ptr<PrivateRedis> own_;
  std::string url_;
};

// The raw baseline: a Gloo context of `size` over a TCP device on
// 127.0.0.1, fully connected through a FileStore in `store_dir`.
std::shared_ptr<gloo::rendezvous::Context> rawGlooContext(int rank, int size, const std::string& store_dir,
                                                          int timeout_ms);

// {"bench": ..., "command": ..., "machine": ..., <top>..., "rows": [...]};
// each row, and `top`, is (key, already formatted JSON value) pairs.
using JsonRow = std::vector<std::pair<std::string, std::string>>;
bool writeJson(const std::string& path, const std::string& bench, const std::string& command,
               const std::string& machine, const std::vector<JsonRow>& rows, const JsonRow& top = {});
std::string jnum(double v);
// The JSON fields every host suite's results carry at the top: backend,
// with UCX ucx_tls (ucxTls()), `raw` (what the raw_* columns measured:
// "ucx" or "gloo") when given, and loadavg_at_start (/proc/loadavg when
// the process started).
JsonRow backendFields(const BenchOptions& opt, const char* raw = nullptr);

// The heartbeat settings asked for (--heartbeat-interval-ms,
// --heartbeat-timeout-ms) as context settings: only those given.
std::vector<std::pair<std::string, std::string>> heartbeatSettings(const BenchOptions& opt);
// The heartbeat settings in force, given or the library's defaults; as
// "heartbeat_interval_ms 50, heartbeat_timeout_ms 200"; and as the JSON
// fields heartbeat_interval_ms and heartbeat_timeout_ms.
struct Heartbeat {
  std::chrono::milliseconds interval, timeout;
};
Heartbeat heartbeatInForce(const BenchOptions& opt);  // throws mw::Error for settings a context refuses
std::string heartbeatText(const BenchOptions& opt);
JsonRow heartbeatFields(const BenchOptions& opt);
// Why a context would refuse those settings, or "".
std::string heartbeatProblem(const BenchOptions& opt);

}  // namespace common
}  // namespace mwbench
