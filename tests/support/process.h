// Real worker processes for multi-process tests. A worker is a forked child
// that runs a function and exits with its return value; the parent must not
// have created a multiworld context (or any thread) before forking.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace mwtest {

// Exit codes of workers: 0 success; anything else is a failure the worker
// described on stderr.
pid_t spawn(const std::function<int()>& body);

// Exit code, or 128+signal when killed. A child still running after
// `timeout` is killed with SIGKILL and reported as -1.
int waitExit(pid_t pid, std::chrono::milliseconds timeout);

// Spawns one worker per rank and waits for all; true when every one exited 0.
bool runRanks(int size, const std::function<int(int rank)>& body,
              std::chrono::milliseconds timeout = std::chrono::seconds(60));

// Stops `pid` (SIGSTOP) and returns once every one of its threads has
// stopped; false when it could not.
bool stopProcess(pid_t pid);

// Kills (SIGKILL) and reaps whatever it still holds when it goes away.
class Workers {
 public:
  ~Workers();
  pid_t add(const std::function<int()>& body);
  // Waits for all; true when every one exited 0.
  bool join(std::chrono::milliseconds timeout = std::chrono::seconds(60));
  const std::vector<pid_t>& pids() const { return pids_; }

 private:
  std::vector<pid_t> pids_;
};

// Milliseconds from `t` to now, on the steady clock.
inline long msSince(std::chrono::steady_clock::time_point t) {
  return static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t).count());
}

// Waits (by sleeping between looks) for `cond`, up to `limit`.
template <typename F>
bool eventually(F cond, std::chrono::milliseconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return cond();
}

// Counts of this process's resources, for leak checks.
int openFds();
// How many more fds than before a leak-check loop may be open after it: UCX
// closes a force-closed TCP endpoint's sockets from its progress thread
// later, up to eight of them for the last world, and a few only seconds
// later. A leak of one per cycle still shows as hundreds.
constexpr int kLateClosedFds = 4;
// Waits up to `limit` for the open fds to come down to `most`; returns the
// last count, so that a check after a loop does not race those late closes.
int settledFds(int most, std::chrono::milliseconds limit = std::chrono::seconds(3));
// "fd -> target, ..." of every open fd, for a report.
std::string describeFds();
int threadCount();
// This process's threads by name (/proc/self/task/*/comm).
std::map<std::string, int> threadsByName();
// Ours are named "mw..."; NCCL, CUDA and UCX start threads of their own.
int ourThreads(const std::map<std::string, int>& names);
// "name xN, ..." for a report.
std::string describeThreads(const std::map<std::string, int>& names);
long rssKiB();

// How much RSS may grow over a leak-check loop: `plain` normally; more
// under the sanitizers, whose bookkeeping grows with every thread created
// (TSan) and whose quarantine holds freed memory (ASan, capped at 8 MiB by
// the tests' ASAN_OPTIONS; LeakSanitizer checks real leaks at exit).
constexpr long rssGrowthLimitKiB(long plain) {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  return plain + 16 * 1024;
#else
  return plain;
#endif
}

}  // namespace mwtest
