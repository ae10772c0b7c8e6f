#include "tools/multiworld/metrics.h"

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "core/error.h"
#include "core/metrics/endpoint.h"
#include "core/metrics/exposition.h"
#include "core/metrics/merge.h"
#include "core/metrics/wire.h"
#include "core/store/directory.h"

namespace mwcli {
namespace {

std::string urlOrDefault(const std::string& url) {
  if (!url.empty()) return url;
  const char* env = std::getenv("MW_REDIS_URL");
  return env && *env ? env : "redis://127.0.0.1:6379";
}

}  // namespace

std::string scrapeNamespace(const std::string& redis_url, const std::string& ns) {
  mw::Directory dir(redis_url, ns, std::chrono::seconds(5));
  mw::metrics::Merge merge;
  double read = 0, missing = 0, unreadable = 0;
  for (const mw::MemberMetrics& m : dir.memberMetrics()) {
    if (!m.snapshot) {
      ++missing;  // metrics off, or not yet published
      continue;
    }
    mw::metrics::Snapshot s;
    try {
      s = mw::metrics::decode(*m.snapshot);
    } catch (const mw::Error& e) {
      ++unreadable;
      std::fprintf(stderr, "multiworld metrics: member %s: %s\n", m.id.c_str(), e.what());
      continue;
    }
    ++read;
    const std::string host = m.heartbeat ? m.heartbeat->host : "";
    const std::string pid = m.heartbeat ? std::to_string(m.heartbeat->pid) : "";
    merge.add(s, {"member", "host", "pid"}, {m.id, host, pid});
  }
  mw::metrics::Snapshot out = merge.result();
  out.families.push_back({"mw_scrape_members",
                          "Live members of the namespace, by whether their published metrics were read.",
                          mw::metrics::Kind::Gauge,
                          {"snapshot"},
                          {},
                          {{{"read"}, read, 0, {}}, {{"missing"}, missing, 0, {}}, {{"unreadable"}, unreadable, 0, {}}}});
  out.families.push_back({"mw_scrape_conflicts",
                          "Members' families left out: another member's family of that name has other labels, kind "
                          "or buckets (another version).",
                          mw::metrics::Kind::Gauge,
                          {},
                          {},
                          {{{}, static_cast<double>(merge.conflicts()), 0, {}}}});
  return mw::metrics::exposition(out);
}

int runMetrics(const MetricsOptions& opt) {
  const std::string url = urlOrDefault(opt.redis_url);
  if (opt.listen.empty()) {
    try {
      std::fputs(scrapeNamespace(url, opt.ns).c_str(), stdout);
      return 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "multiworld metrics: %s\n", e.what());
      return 1;
    }
  }
  // Blocked before the endpoint's thread starts, so only sigwait takes them.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  const std::string ns = opt.ns;
  std::unique_ptr<mw::metrics::Endpoint> endpoint;
  try {
    endpoint = std::make_unique<mw::metrics::Endpoint>(
        opt.listen, [url, ns] { return scrapeNamespace(url, ns); }, "mw-metrics");
  } catch (const mw::Error& e) {
    std::fprintf(stderr, "multiworld metrics: %s\n", e.what());
    return 2;
  }
  std::printf("multiworld metrics: namespace %s at http://%s/metrics (port %d); Ctrl-C stops\n", ns.c_str(),
              opt.listen.c_str(), endpoint->port());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  return 0;
}

}  // namespace mwcli
