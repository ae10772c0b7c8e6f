// What /proc says about the soak's member processes: whether one is
// exiting, and the leak watch: fds, threads and RSS read
// from /proc at quiet moments (every world formed and moving, no fault
// under way). Samples count once a process has run for the warm-up. Its
// growth is the least of its last few samples against the least of its
// first few: a message burst or a socket UCX closes a moment later is
// not a leak, and a leak still shows once it outgrows them.
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

struct Growth {
  int processes = 0;  // sampled long enough to tell
  int fds = 0, threads = 0;
  double rss_pct = 0;
  std::string worst;  // "member 2 (pid 123): fds 40 -> 41, threads 9 -> 9, rss 51200 -> 52000 KiB over 610 s"
};

class LeakWatch {
 public:
  explicit LeakWatch(int64_t warmup_ns) : warmup_ns_(warmup_ns) {}
  // A member process started at `started_ns`.
  void started(int member, pid_t pid, int64_t started_ns);
  // A quiet moment: samples every process that is past its warm-up.
  void sample(int member, pid_t pid, int64_t now_ns);
  // The largest growth of each kind over the processes sampled long
  // enough to tell.
  Growth growth() const;

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
