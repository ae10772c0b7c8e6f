#include "tests/support/process.h"

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>

#include "tools/lab/process_exit.h"

namespace mwtest {

bool stopProcess(pid_t pid) {
  if (kill(pid, SIGSTOP) != 0) return false;
  int status = 0;
  return waitpid(pid, &status, WUNTRACED) == pid && WIFSTOPPED(status);
}

pid_t spawn(const std::function<int()>& body) {
  fflush(nullptr);
  pid_t pid = fork();
  if (pid != 0) return pid;
  int code = 99;
  try {
    code = body();
  } catch (const std::exception& e) {
    fprintf(stderr, "worker %d: exception: %s\n", getpid(), e.what());
  }
  fflush(nullptr);
  _exit(code);
}

int waitExit(pid_t pid, std::chrono::milliseconds timeout) {
  if (mwlab::waitForExit(pid, timeout) == mwlab::ExitWait::TimedOut) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    fprintf(stderr, "worker %d timed out and was killed\n", pid);
    return -1;
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -2;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -3;
}

bool runRanks(int size, const std::function<int(int rank)>& body, std::chrono::milliseconds timeout) {
  Workers w;
  for (int r = 0; r < size; ++r) w.add([&, r] { return body(r); });
  return w.join(timeout);
}

Workers::~Workers() {
  for (pid_t p : pids_) {
    kill(p, SIGCONT);
    kill(p, SIGKILL);
    waitpid(p, nullptr, 0);
  }
}

pid_t Workers::add(const std::function<int()>& body) {
  pid_t p = spawn(body);
  pids_.push_back(p);
  return p;
}

bool Workers::join(std::chrono::milliseconds timeout) {
  bool ok = true;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (pid_t p : pids_) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    int code = waitExit(p, std::max(left, std::chrono::milliseconds(1)));
    if (code != 0) {
      fprintf(stderr, "worker %d exited with %d\n", p, code);
      ok = false;
    }
  }
  pids_.clear();
  return ok;
}

int openFds() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return -1;
  while (readdir(d)) ++n;
  closedir(d);
  return n - 3;  // ".", ".." and the DIR's own fd
}

int settledFds(int most, std::chrono::milliseconds limit) {
  int n = openFds();
  eventually([&] { return (n = openFds()) <= most; }, limit);
  return n;
}

std::string describeFds() {
  std::string out;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return "(cannot read /proc/self/fd)";
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d)) continue;
    char target[256];
    ssize_t len = readlink((std::string("/proc/self/fd/") + e->d_name).c_str(), target, sizeof(target) - 1);
    target[len < 0 ? 0 : len] = '\0';
    if (!out.empty()) out += ", ";
    out += std::string(e->d_name) + " -> " + target;
  }
  closedir(d);
  return out;
}

static long statusField(const char* name) {
  std::ifstream in("/proc/self/status");
  std::string line;
  size_t len = std::strlen(name);
  while (std::getline(in, line)) {
    if (line.compare(0, len, name) == 0) return std::stol(line.substr(len + 1));
  }
  return -1;
}

int threadCount() { return static_cast<int>(statusField("Threads")); }
long rssKiB() { return statusField("VmRSS"); }

std::map<std::string, int> threadsByName() {
  std::map<std::string, int> names;
  DIR* d = opendir("/proc/self/task");
  if (!d) return names;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string name;
    std::getline(comm, name);
    ++names[name];
  }
  closedir(d);
  return names;
}

int ourThreads(const std::map<std::string, int>& names) {
  int n = 0;
  for (const auto& [name, count] : names) {
    if (name.rfind("mw", 0) == 0) n += count;
  }
  return n;
}

std::string describeThreads(const std::map<std::string, int>& names) {
  std::string s;
  for (const auto& [name, count] : names) s += (s.empty() ? "" : ", ") + name + " x" + std::to_string(count);
  return s;
}

}  // namespace mwtest
