#include "bench/fault_processes.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

namespace mwbench {
namespace {

volatile sig_atomic_t g_signal = 0;
void onSignal(int sig) { g_signal = sig; }

}  // namespace

void checkSignal() {
  if (g_signal) throw SuiteError("interrupted by signal " + std::to_string(static_cast<int>(g_signal)));
}

void sleepUntilNs(int64_t deadline_ns) {
  timespec ts;
  ts.tv_sec = static_cast<time_t>(deadline_ns / 1000000000);
  ts.tv_nsec = static_cast<long>(deadline_ns % 1000000000);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) checkSignal();
  checkSignal();
}

void sleepMs(int ms) { sleepUntilNs(monotonicNs() + static_cast<int64_t>(ms) * 1000000); }

SignalGuard::SignalGuard() {
  g_signal = 0;
  struct sigaction sa {};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &sa, &old_[i]);
}

SignalGuard::~SignalGuard() {
  for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &old_[i], nullptr);
}

Child::Child(std::string name, const std::function<int()>& body) : name_(std::move(name)) {
  std::fflush(nullptr);
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) throw SuiteError("fork failed: " + std::string(std::strerror(errno)));
  if (pid_ == 0) {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(98);
    int code = 99;
    try {
      code = body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "mw_bench: %s: %s\n", name_.c_str(), e.what());
    }
    std::fflush(nullptr);
    _exit(code);
  }
}

bool Child::running() {
  if (reaped_) return false;
  if (waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
  return !reaped_;
}

void Child::signal(int sig) {
  if (!reaped_) kill(pid_, sig);
}

void Child::kill9() {
  if (reaped_ || pid_ <= 0) return;
  kill(pid_, SIGKILL);
  while (waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
}

bool Child::join(std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (running() && std::chrono::steady_clock::now() < end) {
    checkSignal();
    sleepMs(5);
  }
  if (running()) {
    kill9();
    std::fprintf(stderr, "mw_bench: %s did not exit within %lld ms and was killed\n", name_.c_str(),
                 static_cast<long long>(limit.count()));
    return false;
  }
  return WIFEXITED(status_) && WEXITSTATUS(status_) == 0;
}

std::string Child::describe() const {
  if (!reaped_) return name_ + " is running";
  if (WIFEXITED(status_)) return name_ + " exited with status " + std::to_string(WEXITSTATUS(status_));
  if (WIFSIGNALED(status_)) return name_ + " died of signal " + std::to_string(WTERMSIG(status_));
  return name_ + " ended";
}

}  // namespace mwbench
