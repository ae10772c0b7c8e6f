// Debian's Prometheus for tests: promtool's checks of an exposition, a
// plain HTTP GET, and a real prometheus server scraping a target, asked
// through its HTTP API.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "tools/lab/temp_dir.h"

namespace mwtest {

// The promtool and prometheus programs, "" when not installed
// (apt-get install prometheus; scripts/packages/core.list).
std::string promtoolPath();
std::string prometheusPath();

// What `promtool check metrics` says of `text`: "" when it finds nothing
// wrong (no error and no lint warning), else its output.
std::string promtoolProblems(const std::string& text);

struct HttpReply {
  int status = 0;  // 0: no answer
  std::string content_type;
  std::string body;
};
HttpReply httpGet(const std::string& host, int port, const std::string& path);

// A prometheus server on a free loopback port scraping
// http://`target`/metrics every `interval_ms`, its data in a temp dir.
class PrometheusServer {
 public:
  PrometheusServer(const std::string& target, int interval_ms);
  ~PrometheusServer();  // SIGTERM, reaped
  PrometheusServer(const PrometheusServer&) = delete;
  PrometheusServer& operator=(const PrometheusServer&) = delete;

  // Waits until it answers /-/ready; false after `timeout_ms`.
  bool ready(int timeout_ms);
  // The value of a PromQL query that yields one sample (an instant query
  // at now), nullopt when it yields none or fails.
  std::optional<double> scalar(const std::string& promql);
  // The raw JSON of an instant query.
  std::string query(const std::string& promql);

 private:
  mwlab::TempDir dir_{"mwtest-prom-"};
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace mwtest
