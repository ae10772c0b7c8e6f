// The soak's judge of breaks: every break a member records, of an
// incarnation formed before the fault under way, is either explained by it (a member of the world killed, stopped
// past the timeout, cut off, crashed; or the world churned, or a receive
// of it cancelled) and names the member at fault, or it is a false break.
// Every member that should learn of a fault's breaks must have done so
// within the bound of its kind, or it is a missed break.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <string>
#include <vector>

#include "bench/soak/soak_board.h"
#include "bench/soak/soak_schedule.h"
#include "bench/soak/soak_topology.h"

namespace mwbench {
namespace soak {

// How soon each kind of break must be known to every member that should
// know it, from the moment of the fault.
struct DetectBounds {
  int kill_ms = 100;
  int stop_ms = 1100;  // heartbeat_timeout_ms + heartbeat_interval_ms
  int cut_ms = 1100;
};

class Referee {
 public:
  Referee(const std::vector<WorldSpec>& worlds, DetectBounds bounds);

  // A fault is injected at `start_ns`.
  void begin(const Fault& f, int64_t start_ns);
  // Its end action (SIGCONT, link back, replacement started) at `ns`: a
  // world of the member at fault formed before then may still break of it.
  void restored(int64_t ns);
  // kill9: the kernel finished the member's exit at `ns` (the driver reaped
  // it). Nothing on the host can know of the death before then, so the
  // kill's bound counts from here; how long the exit took is reported.
  void exited(int64_t ns);
  const std::vector<double>& exitMs() const { return exit_ms_; }
  // Every world formed again and moving: the fault's window closes, and
  // who missed its breaks is judged. All records must be judged first.
  void close(int64_t now_ns);
  // A member process that exited on its own, first seen dying at `ns`: a
  // crash. Breaks of its worlds near then are its doing.
  void crashed(int member, int64_t ns, const std::string& how);

  // One break record of `member`.
  void judge(int member, const BreakRecord& r);
  // Something the run found wrong that is not a break (a crash, a note, a
  // leak): recorded with the seed and the fault under way.
  void violation(const std::string& what);

  int falseBreaks() const { return false_breaks_; }
  int missedBreaks() const { return missed_breaks_; }
  int crashes() const { return crashes_; }
  int churnBreaks() const { return churn_breaks_; }
  int cancelBreaks() const { return cancel_breaks_; }
  int faultBreaks() const { return fault_breaks_; }
  const std::vector<std::string>& violations() const { return violations_; }
  // Detection times (ms) per breaking kind: kill9, sigstop_long, cut_all_rails.
  const std::map<std::string, std::vector<double>>& detections() const { return detect_; }
  // "fault 3 (+12.4 s): sigstop_long member 2 for 1834 ms" for each fault
  // so far: the schedule up to a violation.
  const std::vector<std::string>& faultLog() const { return log_; }
  // The index of the fault during or before the first violation, -1 = none.
  int firstViolationFault() const { return first_violation_fault_; }

  void setOrigin(int64_t ns) { origin_ns_ = ns; }
  double secondsAt(int64_t ns) const { return (ns - origin_ns_) / 1e9; }

 private:
  struct Learner {
    int member, world;
    int64_t seen_ns = 0;
  };
  std::string context() const;
  bool explainedByCrash(const BreakRecord& r) const;

  const std::vector<WorldSpec>& worlds_;
  DetectBounds bounds_;
  const bool trace_;  // MW_SOAK_TRACE set: every break is printed as it is judged
  int64_t origin_ns_ = 0;

  bool open_ = false;
  Fault fault_;
  int64_t start_ns_ = 0, restored_ns_ = 0, exited_ns_ = 0;
  std::vector<double> exit_ms_;  // kill9: from the SIGKILL to the reaped exit
  std::vector<Learner> learners_;
  struct Crash {
    int member;
    int64_t ns;
  };
  std::vector<Crash> crashes_at_;

  int false_breaks_ = 0, missed_breaks_ = 0, crashes_ = 0;
  int churn_breaks_ = 0, cancel_breaks_ = 0, fault_breaks_ = 0;
  int first_violation_fault_ = -1;
  std::vector<std::string> violations_, log_;
  std::map<std::string, std::vector<double>> detect_;
  std::map<std::pair<int, int>, BreakRecord> last_;  // (member, world) -> its latest break
};

}  // namespace soak
}  // namespace mwbench
