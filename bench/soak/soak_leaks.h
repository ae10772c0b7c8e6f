// What /proc says about the soak's member processes: whether one is
// exiting, and the leak watch: fds, threads, mappings and memory read from
// /proc at quiet moments (every world formed and moving, no fault under
// way). Samples count once a process has run for the warm-up (at least a
// minute). A process's samples fall into three thirds, each taken at its
// least (a message burst or a socket UCX closes a moment later is not a
// leak). Growth is the last third against the first; a leak is growth
// past its bound that goes on in the last third, so a step while the
// process warms up and then levels off is told apart from a trend.
//
// Memory is judged on the private (anonymous) part of RSS, where the heap
// lives. The rest of RSS is mostly the same-host rings' shared pages,
// which become resident as their writers first go round them (a ring is
// mapped twice, so counts twice): bounded by the live rings, and it
// climbs for minutes as incarnations come and go. A mapping that leaks
// shows in the count of mappings.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mwbench {
namespace soak {

struct ProcSample {
  int fds = 0, threads = 0, maps = 0;
  long rss_kib = 0;      // VmRSS
  long private_kib = 0;  // RssAnon
};

// False when the process is gone or /proc could not be read.
bool sampleProc(pid_t pid, ProcSample* out);
// Whether the kernel has begun to end the process (PF_EXITING in field 9
// of /proc/<pid>/stat), which is what its peers on this host go by.
bool processExiting(pid_t pid);

// How much each kind may grow before it counts as a leak, if it still
// grows; private memory as a share of the process's whole RSS.
struct LeakBounds {
  int fds = 0, threads = 0, maps = 0;
  double private_pct = 0;
};

struct Growth {
  int processes = 0;  // sampled long enough to tell
  // The largest growths over those processes.
  int fds = 0, threads = 0, maps = 0;
  double rss_pct = 0;      // VmRSS, rings' pages included
  double private_pct = 0;  // private memory's growth, as a share of RSS
  double private_kib_per_hour = 0;  // of the process whose private memory grew most
  // A process grew past a bound and was still growing in its last third.
  bool leak = false;
  // The process that leaks, else the one that grew most: "member 2 (pid
  // 123) over 610 s: fds 40 -> 41 -> 41, threads 9 -> 9 -> 9, maps ...,
  // private 4096 -> 4190 -> 4192 KiB (+0.6% of RSS, +560 KiB/h), rss ...
  // KiB, levelled off"
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
