#include "tests/support/prometheus.h"

#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tools/lab/ports.h"

extern char** environ;

namespace mwtest {
namespace {

std::string found(const char* name) {
  for (const char* dir : {"/usr/bin", "/usr/local/bin"}) {
    const std::string p = std::string(dir) + "/" + name;
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

// Runs `argv` with `input` on its stdin; its stdout and stderr together.
std::string run(const std::vector<std::string>& argv, const std::string& input, int* status) {
  mwlab::TempDir dir("mwtest-run-");
  const std::string in = dir.path() + "/in", out = dir.path() + "/out";
  std::ofstream(in) << input;
  std::string cmd;
  for (const auto& a : argv) cmd += "'" + a + "' ";
  cmd += "<'" + in + "' >'" + out + "' 2>&1";
  *status = std::system(cmd.c_str());
  std::ifstream f(out);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

}  // namespace

std::string promtoolPath() { return found("promtool"); }
std::string prometheusPath() { return found("prometheus"); }

std::string promtoolProblems(const std::string& text) {
  int status = 0;
  const std::string said = run({promtoolPath(), "check", "metrics"}, text, &status);
  // It exits 0 with lint warnings on stdout: those count too.
  if (status == 0 && said.find_first_not_of(" \n") == std::string::npos) return "";
  return said.empty() ? "promtool exited " + std::to_string(status) : said;
}

HttpReply httpGet(const std::string& host, int port, const std::string& path) {
  httplib::Client c(host, port);
  c.set_connection_timeout(std::chrono::seconds(5));
  c.set_read_timeout(std::chrono::seconds(10));
  HttpReply reply;
  if (auto r = c.Get(path.c_str())) {
    reply.status = r->status;
    reply.content_type = r->get_header_value("Content-Type");
    reply.body = r->body;
  }
  return reply;
}

PrometheusServer::PrometheusServer(const std::string& target, int interval_ms) {
  port_ = mwlab::freeLoopbackPort();
  const std::string config = dir_.path() + "/prometheus.yml";
  std::ofstream(config) << "global:\n  scrape_interval: " << interval_ms << "ms\n  scrape_timeout: " << interval_ms
                        << "ms\n  evaluation_interval: " << interval_ms << "ms\n"
                        << "scrape_configs:\n  - job_name: multiworld\n    static_configs:\n      - targets: ['"
                        << target << "']\n";
  const std::vector<std::string> args = {prometheusPath(),
                                         "--config.file=" + config,
                                         "--storage.tsdb.path=" + dir_.path() + "/data",
                                         "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                                         "--log.level=warn"};
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  if (posix_spawn(&pid_, argv[0], nullptr, nullptr, argv.data(), environ) != 0) {
    throw std::runtime_error("cannot start " + args[0]);
  }
}

PrometheusServer::~PrometheusServer() {
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
}

bool PrometheusServer::ready(int timeout_ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < end) {
    if (httpGet("127.0.0.1", port_, "/-/ready").status == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

std::string PrometheusServer::query(const std::string& promql) {
  httplib::Client c("127.0.0.1", port_);
  c.set_read_timeout(std::chrono::seconds(10));
  httplib::Params params{{"query", promql}};
  auto r = c.Post("/api/v1/query", params);
  return r ? r->body : "";
}

std::optional<double> PrometheusServer::scalar(const std::string& promql) {
  // {"status":"success","data":{"resultType":"vector","result":[{"metric":{...},"value":[1700000000.1,"2"]}]}}
  const std::string json = query(promql);
  static const std::regex one(R"re("result":\[\{"metric":\{[^}]*\},"value":\[[0-9.e+]+,"([^"]+)"\]\}\])re");
  std::smatch m;
  if (!std::regex_search(json, m, one)) return std::nullopt;
  return std::strtod(m[1].str().c_str(), nullptr);
}

}  // namespace mwtest
