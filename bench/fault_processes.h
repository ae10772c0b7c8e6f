// The process machinery of the suites that inflict faults (faults,
// falsebreaks): forked processes that die with the run, waits that end the
// run on SIGINT/SIGTERM/SIGHUP, and the error that fails a suite. Their
// shared memory is the lab's (tools/lab/shared.h).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "bench/fault_traffic.h"

namespace mwbench {

// A failure of the suite itself (not of a measurement's expectations).
class SuiteError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws SuiteError once a signal that ends the run has arrived.
void checkSignal();
// Sleeps until CLOCK_MONOTONIC reaches `deadline_ns`; a signal for us ends
// the run.
void sleepUntilNs(int64_t deadline_ns);
void sleepMs(int ms);

// Our handlers for the signals that end a run, so that every process (and
// what the suite made: a namespace, a redis-server) goes away with it.
class SignalGuard {
 public:
  SignalGuard();
  ~SignalGuard();
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;

 private:
  static constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction old_[3];
};

// A forked process running `body`, which exits with body's return value.
// Killed (SIGKILL) and reaped when the object goes away, so no error path
// leaves one behind; each also dies with the parent (PR_SET_PDEATHSIG).
class Child {
 public:
  Child(std::string name, const std::function<int()>& body);
  ~Child() { kill9(); }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& name() const { return name_; }

  // Still running (reaps it if it just ended).
  bool running();
  void signal(int sig);
  void kill9();
  // Waits up to `limit` for it to end by itself; true when it exited 0.
  // One still running then is killed.
  bool join(std::chrono::milliseconds limit);
  std::string describe() const;

 private:
  std::string name_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
};

// Waits (looking every millisecond) for `cond`; a watched process that ends
// meanwhile fails the suite. False when `limit` passed without it.
template <typename F>
bool waitUntil(F cond, std::chrono::milliseconds limit, std::initializer_list<Child*> watch) {
  const int64_t end = monotonicNs() + std::chrono::duration_cast<std::chrono::nanoseconds>(limit).count();
  for (;;) {
    if (cond()) return true;
    for (Child* c : watch) {
      if (!c->running()) {
        if (cond()) return true;
        throw SuiteError(c->describe() + " (see stderr above)");
      }
    }
    if (monotonicNs() >= end) return cond();
    sleepMs(1);
  }
}

}  // namespace mwbench
