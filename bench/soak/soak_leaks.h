// What /proc says about the soak's member processes: whether one is
// exiting, and the leak watch: fds, threads and RSS read from /proc at
// quiet moments (every world formed and moving, no fault under way).
// Samples count once a process has run for the warm-up (at least a
// minute). A process's samples fall into three thirds, each taken at its
// least (a message burst or a socket UCX closes a moment later is not a
// leak). Growth is the last third against the first; a leak is growth
// past its bound that goes on in the last third, so a step while the
// process warms up and then levels off is told apart from a trend.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mwbench {
namespace soak {

struct ProcSample {
  int fds = 0, threads = 0;
  long rss_kib = 0;
};

// False when the process is gone or /proc could not be read.
bool sampleProc(pid_t pid, ProcSample* out);
// Whether the kernel has begun to end the process (PF_EXITING in field 9
// of /proc/<pid>/stat), which is what its peers on this host go by.
bool processExiting(pid_t pid);

// How much each kind may grow before it counts as a leak, if it still grows.
struct LeakBounds {
  int fds = 0, threads = 0;
  double rss_pct = 0;
};

struct Growth {
  int processes = 0;  // sampled long enough to tell
  int fds = 0, threads = 0;  // the largest growths over those processes
  double rss_pct = 0;
  double rss_pct_per_hour = 0;  // of the process whose RSS grew most
  // A process grew past a bound and was still growing in its last third.
  bool leak = false;
  // The process that leaks, else the one that grew most: "member 2 (pid
  // 123) over 610 s: fds 40 -> 41 -> 41, threads 9 -> 9 -> 9, rss 51200 ->
  // 52000 -> 52010 KiB (+1.6%, +9.4%/h), levelled off"
  std::string worst;
};

class LeakWatch {
 public:
  explicit LeakWatch(int64_t warmup_ns) : warmup_ns_(warmup_ns) {}
  // A member process started at `started_ns`.
  void started(int member, pid_t pid, int64_t started_ns);
  // A quiet moment: samples the process if it is past its warm-up.
  void sample(int member, pid_t pid, int64_t now_ns);
  // What sample() read, or a sample made up (tests).
  void record(int member, pid_t pid, int64_t now_ns, const ProcSample& s);
  // The largest growth of each kind over the processes sampled long
  // enough to tell, and whether one of them leaks.
  Growth growth(const LeakBounds& bounds) const;

 private:
  struct Proc {
    int member = 0;
    int64_t started_ns = 0;
    std::vector<int64_t> at_ns;
    std::vector<ProcSample> samples;
  };
  int64_t warmup_ns_;
  std::map<pid_t, Proc> procs_;
};

}  // namespace soak
}  // namespace mwbench
