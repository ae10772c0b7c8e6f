#include "bench/suite_common.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/config.h"
#include "core/error.h"

#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

namespace mwbench {
namespace common {

std::string machineName() {
  struct utsname u {};
  std::string host = uname(&u) == 0 ? u.nodename : "unknown";
  cpu_set_t set;
  CPU_ZERO(&set);
  long cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : sysconf(_SC_NPROCESSORS_ONLN);
  return host + " (nproc " + std::to_string(cpus) + ")";
}

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", c);
      out += esc;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string jnum(double v) {
  if (!std::isfinite(v)) return "null";
  char b[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(b, sizeof b, "%.0f", v);
  } else {
    std::snprintf(b, sizeof b, "%.6g", v);
  }
  return b;
}

double nowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double cpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

void writeRecord(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw Error("lost the pipe to the parent");
    c += w;
    n -= static_cast<size_t>(w);
  }
}

bool runWorkers(const char* suite, int n, size_t rec_size, const std::function<int(int, int)>& fn,
                const std::function<void(const char*)>& on_record) {
  std::fflush(stdout);
  std::fflush(stderr);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw Error("pipe failed: " + std::string(std::strerror(errno)));
  std::vector<pid_t> pids(static_cast<size_t>(n), -1);
  for (int i = 0; i < n; ++i) {
    pid_t pid = fork();
    if (pid < 0) {
      for (int r = 0; r < i; ++r) kill(pids[static_cast<size_t>(r)], SIGKILL);
      for (int r = 0; r < i; ++r) waitpid(pids[static_cast<size_t>(r)], nullptr, 0);
      close(fds[0]);
      close(fds[1]);
      throw Error("fork failed: " + std::string(std::strerror(errno)));
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      close(fds[0]);
      int rc = 1;
      try {
        rc = fn(i, fds[1]);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "mw_bench %s: worker %d: %s\n", suite, i, e.what());
        rc = 1;
      }
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(rc);
    }
    pids[static_cast<size_t>(i)] = pid;
  }
  close(fds[1]);
  std::string pending;
  bool eof = false, ok = true, killed = false;
  int failed = -1;
  std::vector<bool> reaped(static_cast<size_t>(n), false);
  size_t left = static_cast<size_t>(n);
  std::chrono::steady_clock::time_point kill_at;
  while (!eof || left > 0) {
    if (!eof) {
      pollfd p{fds[0], POLLIN, 0};
      if (poll(&p, 1, 100) > 0) {
        char buf[4096];
        ssize_t r = read(fds[0], buf, sizeof buf);
        if (r > 0) {
          pending.append(buf, static_cast<size_t>(r));
        } else if (r == 0 || errno != EINTR) {
          eof = true;
        }
        while (rec_size > 0 && pending.size() >= rec_size) {
          on_record(pending.data());
          pending.erase(0, rec_size);
        }
      }
    } else {
      poll(nullptr, 0, 100);
    }
    for (int i = 0; i < n; ++i) {
      int status = 0;
      if (reaped[static_cast<size_t>(i)] || waitpid(pids[static_cast<size_t>(i)], &status, WNOHANG) != pids[static_cast<size_t>(i)])
        continue;
      reaped[static_cast<size_t>(i)] = true;
      --left;
      if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        if (WIFSIGNALED(status) && !killed) {
          std::fprintf(stderr, "mw_bench %s: worker %d died of signal %d\n", suite, i, WTERMSIG(status));
        }
        if (ok) {
          ok = false;
          failed = i;
          kill_at = std::chrono::steady_clock::now() + std::chrono::seconds(3);
        }
      }
    }
    if (!ok && !killed && std::chrono::steady_clock::now() >= kill_at) {
      for (int i = 0; i < n; ++i)
        if (!reaped[static_cast<size_t>(i)]) kill(pids[static_cast<size_t>(i)], SIGKILL);
      killed = true;
    }
  }
  (void)failed;
  close(fds[0]);
  return ok;
}

[[noreturn]] void mwFail(const std::string& what) { throw Error(what + " failed: " + mw_last_error()); }

mw_context_t* newContext(const std::string& redis_url, const std::string& ns, int op_timeout_ms, int spin_us,
                         bool metrics) {
  mw_config_t* cfg = nullptr;
  mwCheck(mw_config_new(&cfg), "mw_config_new");
  std::vector<std::pair<const char*, std::string>> settings = {
      {"redis_url", redis_url},
      {"namespace", ns},
      {"bind_address", "127.0.0.1"},
      {"op_timeout_ms", std::to_string(op_timeout_ms)},
      {"heartbeat_timeout_ms", "10000"},
      {"log_level", "error"},
  };
  if (spin_us >= 0) settings.push_back({"spin_us", std::to_string(spin_us)});
  if (!metrics) settings.push_back({"metrics", "off"});
  for (const auto& [key, value] : settings) {
    if (mw_config_set(cfg, key, value.c_str()) != MW_OK) {
      mw_config_free(cfg);
      mwFail(std::string("mw_config_set ") + key);
    }
  }
  mw_context_t* ctx = nullptr;
  mw_status_t s = mw_context_new(cfg, &ctx);
  mw_config_free(cfg);
  if (s != MW_OK) mwFail("mw_context_new");
  return ctx;
}

void mwWait(mw_request_t* r, int timeout_ms, const char* what) {
  mw_status_t s = mw_wait(r, timeout_ms);
  if (s != MW_OK) {
    std::string msg = std::string(what) + ": mw_wait failed: " + mw_last_error();
    mw_request_free(r);
    throw Error(msg);
  }
  mw_request_free(r);
}

std::string redisFromEnv(const std::string& given) {
  if (!given.empty()) return given;
  const char* env = std::getenv("MW_REDIS_URL");
  return env && *env ? env : "";
}

SuiteRedis::SuiteRedis(const std::string& given, const std::string& dir) : url_(redisFromEnv(given)) {
  if (url_.empty()) {
    own_ = std::make_unique<PrivateRedis>(dir);
    url_ = own_->url();
  }
}

SuiteRedis::~SuiteRedis() = default;

std::shared_ptr<gloo::rendezvous::Context> rawGlooContext(int rank, int size, const std::string& store_dir,
                                                          int timeout_ms) {
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto raw = std::make_shared<gloo::rendezvous::Context>(rank, size);
  raw->setTimeout(std::chrono::milliseconds(timeout_ms));
  gloo::rendezvous::FileStore store(store_dir);
  raw->connectFullMesh(store, device);
  return raw;
}

bool writeJson(const std::string& path, const std::string& bench, const std::string& command,
               const std::string& machine, const std::vector<JsonRow>& rows, const JsonRow& top) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "mw_bench %s: cannot write %s: %s\n", bench.c_str(), path.c_str(), std::strerror(errno));
    return false;
  }
  std::fprintf(f, "{\"bench\": %s, \"command\": %s, \"machine\": %s, ", jsonString(bench).c_str(),
               jsonString(command).c_str(), jsonString(machine).c_str());
  for (const auto& [key, value] : top) std::fprintf(f, "%s: %s, ", jsonString(key).c_str(), value.c_str());
  std::fprintf(f, "\"rows\": [");
  for (size_t i = 0; i < rows.size(); ++i) {
    std::fprintf(f, "%s\n  {", i ? "," : "");
    for (size_t k = 0; k < rows[i].size(); ++k) {
      std::fprintf(f, "%s%s: %s", k ? ", " : "", jsonString(rows[i][k].first).c_str(), rows[i][k].second.c_str());
    }
    std::fprintf(f, "}");
  }
  std::fprintf(f, "\n]}\n");
  bool ok = std::fflush(f) == 0 && !std::ferror(f);
  ok = std::fclose(f) == 0 && ok;
  if (!ok) std::fprintf(stderr, "mw_bench %s: writing %s failed\n", bench.c_str(), path.c_str());
  return ok;
}

mw_backend_t backendOf(const BenchOptions& opt) { return opt.ucx ? MW_BACKEND_UCX : MW_BACKEND_GLOO; }

const char* backendName(const BenchOptions& opt) { return opt.ucx ? "ucx" : "gloo"; }

std::string resultsName(const std::string& suite, const BenchOptions& opt) {
  std::string name = opt.ucx ? suite : suite + " (gloo)";
  if (!heartbeatSettings(opt).empty()) {
    const Heartbeat hb = heartbeatInForce(opt);
    name += " (heartbeat " + std::to_string(hb.interval.count()) + "/" + std::to_string(hb.timeout.count()) + ")";
  }
  return name;
}

std::string ucxTls() {
  const char* tls = std::getenv("UCX_TLS");
  return tls && *tls ? tls : "default";
}

namespace {

// The machine's load average (1, 5 and 15 minutes) when this process
// started: benchmarks share the machine, and a polling baseline suffers
// most when there are fewer idle cores than processes.
const std::string kLoadAtStart = [] {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return in ? one + " " + five + " " + fifteen : std::string();
}();

}  // namespace

JsonRow backendFields(const BenchOptions& opt, const char* raw) {
  JsonRow top = {{"backend", jsonString(backendName(opt))}};
  if (raw) top.push_back({"raw", jsonString(raw)});
  if (opt.spin_us >= 0) top.push_back({"spin_us", jnum(opt.spin_us)});
  if (opt.ucx) top.push_back({"ucx_tls", jsonString(ucxTls())});
  if (!kLoadAtStart.empty()) top.push_back({"loadavg_at_start", jsonString(kLoadAtStart)});
  return top;
}

std::string spinText(const BenchOptions& opt) {
  return opt.spin_us >= 0 ? std::to_string(opt.spin_us) : "default";
}

int threadCount() {
  std::error_code ec;
  int n = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/task", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n;
}

std::vector<std::size_t> sizesOf(const BenchOptions& opt) {
  std::vector<std::size_t> sizes;
  for (std::size_t b = opt.min_bytes; b <= opt.max_bytes; b *= 4) {
    sizes.push_back(b);
    if (b > opt.max_bytes / 4) break;
  }
  return sizes;
}

Heartbeat heartbeatInForce(const BenchOptions& opt) {
  mw::Config cfg;
  for (const auto& [key, value] : heartbeatSettings(opt)) cfg.set(key, value);
  cfg.validate();
  return {cfg.heartbeat_interval, cfg.heartbeat_timeout};
}

std::vector<std::pair<std::string, std::string>> heartbeatSettings(const BenchOptions& opt) {
  std::vector<std::pair<std::string, std::string>> out;
  if (opt.heartbeat_interval_ms > 0) out.push_back({"heartbeat_interval_ms", std::to_string(opt.heartbeat_interval_ms)});
  if (opt.heartbeat_timeout_ms > 0) out.push_back({"heartbeat_timeout_ms", std::to_string(opt.heartbeat_timeout_ms)});
  return out;
}

std::string heartbeatProblem(const BenchOptions& opt) {
  try {
    heartbeatInForce(opt);
  } catch (const mw::Error& e) {
    return e.what();
  }
  return "";
}

std::string heartbeatText(const BenchOptions& opt) {
  const Heartbeat hb = heartbeatInForce(opt);
  return "heartbeat_interval_ms " + std::to_string(hb.interval.count()) + ", heartbeat_timeout_ms " +
         std::to_string(hb.timeout.count()) + (heartbeatSettings(opt).empty() ? " (library defaults)" : "");
}

JsonRow heartbeatFields(const BenchOptions& opt) {
  const Heartbeat hb = heartbeatInForce(opt);
  return {{"heartbeat_interval_ms", jnum(static_cast<double>(hb.interval.count()))},
          {"heartbeat_timeout_ms", jnum(static_cast<double>(hb.timeout.count()))}};
}

}  // namespace common
}  // namespace mwbench
