#include "bench/soak/soak_referee.h"

#include <cstdio>
#include <cstdlib>

namespace mwbench {
namespace soak {

namespace {

// A crash is noticed by the driver when it reaps the process, a moment
// after the peers may have seen the break; a peer learns of it at the
// latest by its heartbeats, and then may wait for the break's event.
constexpr int64_t kCrashBeforeNs = 1000000000LL;
constexpr int64_t kCrashAfterNs = 10000000000LL;
constexpr size_t kMaxViolations = 200;

int boundOf(FaultKind k, const DetectBounds& b) {
  switch (k) {
    case FaultKind::Kill9:
    case FaultKind::Shrink: return b.kill_ms;
    case FaultKind::SigstopLong: return b.stop_ms;
    case FaultKind::CutAllRails: return b.cut_ms;
    default: return 0;
  }
}

}  // namespace

Referee::Referee(const std::vector<WorldSpec>& worlds, DetectBounds bounds)
    : worlds_(worlds), bounds_(bounds), trace_(std::getenv("MW_SOAK_TRACE") != nullptr) {}

void Referee::begin(const Fault& f, int64_t start_ns) {
  open_ = true;
  fault_ = f;
  start_ns_ = start_ns;
  restored_ns_ = 0;
  exited_ns_ = 0;
  learners_.clear();
  char line[200];
  std::snprintf(line, sizeof line, "fault %d (+%.1f s): %s", f.index, secondsAt(start_ns), f.text().c_str());
  log_.push_back(line);
  if (!breaksWorlds(f.kind)) return;
  for (int w : worldsOf(worlds_, f.member)) {
    for (int m : worlds_[static_cast<size_t>(w)].members) {
      // A stopped member cannot learn anything; one cut off can.
      if (m != f.member || f.kind == FaultKind::CutAllRails) learners_.push_back({m, w});
    }
  }
}

void Referee::restored(int64_t ns) { restored_ns_ = ns; }

void Referee::exited(int64_t ns) {
  exited_ns_ = ns;
  exit_ms_.push_back((ns - start_ns_) / 1e6);
}

void Referee::close(int64_t now_ns) {
  if (!open_) return;
  open_ = false;
  const int bound = boundOf(fault_.kind, bounds_);
  for (const Learner& l : learners_) {
    const std::string who = "member " + std::to_string(l.member) + " on " + worlds_[static_cast<size_t>(l.world)].name;
    if (!l.seen_ns) {
      ++missed_breaks_;
      std::string last = "no break of it judged before";
      auto it = last_.find({l.member, l.world});
      if (it != last_.end()) {
        char text[300];
        std::snprintf(text, sizeof text, "its last break: formed +%.3f s, seen +%.3f s, blames %d: '%s'",
                      secondsAt(it->second.formed_ns), secondsAt(it->second.seen_ns), it->second.blamed,
                      it->second.detail);
        last = text;
      }
      violation("missed break: " + who + " never saw its world break (" +
                std::to_string((now_ns - start_ns_) / 1000000) + " ms after the fault; " + last + ")");
      continue;
    }
    const double ms = (l.seen_ns - start_ns_) / 1e6;
    detect_[faultName(fault_.kind)].push_back(ms);
    const double judged = exited_ns_ ? (l.seen_ns - exited_ns_) / 1e6 : ms;
    if (judged > bound) {
      ++missed_breaks_;
      char text[200];
      if (exited_ns_) {
        std::snprintf(text, sizeof text, " saw the break %.1f ms after the kill, %.1f ms after the exit (bound %d ms)",
                      ms, judged, bound);
      } else {
        std::snprintf(text, sizeof text, " saw the break after %.1f ms (bound %d ms)", ms, bound);
      }
      violation("missed break: " + who + text);
    }
  }
}

void Referee::crashed(int member, int64_t ns, const std::string& how) {
  ++crashes_;
  crashes_at_.push_back({member, ns});
  violation("crash: member " + std::to_string(member) + " " + how);
}

bool Referee::explainedByCrash(const BreakRecord& r) const {
  const WorldSpec& w = worlds_[static_cast<size_t>(r.world)];
  for (const Crash& c : crashes_at_) {
    if (w.rankOf(c.member) >= 0 && r.formed_ns < c.ns && r.seen_ns >= c.ns - kCrashBeforeNs &&
        r.seen_ns <= c.ns + kCrashAfterNs) {
      return true;
    }
  }
  return false;
}

void Referee::judge(int member, const BreakRecord& r) {
  last_[{member, r.world}] = r;
  const WorldSpec& w = worlds_[static_cast<size_t>(r.world)];
  char where[400];
  std::snprintf(where, sizeof where, "member %d on %s (incarnation %d formed +%.3f s, seen +%.3f s, blames %d%s: '%s')",
                member, w.name.c_str(), r.incarnation, secondsAt(r.formed_ns), secondsAt(r.seen_ns), r.blamed,
                r.has_event ? "" : ", no event", r.detail);
  if (trace_) std::printf("#     break: %s\n", where);
  if (!r.has_event) violation(std::string("no MW_EVENT_WORLD_BROKEN within 3 s of a failed request: ") + where);
  const bool in_window = open_ && r.formed_ns < start_ns_ && r.seen_ns >= start_ns_;
  // A world of the member at fault that formed while the fault still held
  // (its peers could reach Redis) breaks for the same reason.
  const bool during_fault = open_ && r.formed_ns < (restored_ns_ ? restored_ns_ : INT64_MAX) && r.seen_ns >= start_ns_;
  const bool of_fault = during_fault && breaksWorlds(fault_.kind) && w.rankOf(fault_.member) >= 0;
  for (Learner& l : learners_) {
    if (of_fault && in_window && l.member == member && l.world == r.world && !l.seen_ns) l.seen_ns = r.seen_ns;
  }
  if (explainedByCrash(r)) return;
  if (of_fault) {
    // The member at fault (cut off, or back from a stop) may name any peer:
    // what counts is that its peers name it.
    if (member != fault_.member && r.blamed != fault_.member) {
      ++false_breaks_;
      violation("false break: " + std::string(where) + (r.blamed < 0 ? ": it names no member" : "") +
                ": the fault was on member " + std::to_string(fault_.member));
      return;
    }
    ++fault_breaks_;
    return;
  }
  if (in_window && fault_.kind == FaultKind::Churn && fault_.world == r.world) {
    ++churn_breaks_;
    return;
  }
  if (in_window && fault_.kind == FaultKind::Cancel && fault_.world == r.world && r.blamed == fault_.member) {
    ++cancel_breaks_;
    return;
  }
  ++false_breaks_;
  violation("false break: " + std::string(where) + (r.during_end ? " during a graceful end" : ""));
}

std::string Referee::context() const {
  if (log_.empty()) return "before the first fault";
  return (open_ ? "during " : "after ") + log_.back();
}

void Referee::violation(const std::string& what) {
  if (first_violation_fault_ < 0) first_violation_fault_ = log_.empty() ? 0 : fault_.index;
  if (violations_.size() >= kMaxViolations) return;
  violations_.push_back(what + " [" + context() + "]");
}

}  // namespace soak
}  // namespace mwbench
