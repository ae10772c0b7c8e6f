// `multiworld metrics`: every live member of a namespace, as one Prometheus
// scrape. Each context writes its snapshot next to its heartbeat every
// metrics_publish_ms; this reads them back, labels each member's series
// with member, host and pid, and serves them on one HTTP endpoint
// (--listen) or prints them once (--once).
#pragma once

#include <string>

namespace mwcli {

struct MetricsOptions {
  std::string redis_url;  // empty: MW_REDIS_URL, else redis://127.0.0.1:6379
  std::string ns = "mw";
  std::string listen;     // host:port; empty: --once
};

// The scrape's text: every live member's metrics, how many members were
// served (mw_scrape_members{snapshot="read|missing|unreadable"}), and how
// many of their families disagreed with another member's
// (mw_scrape_conflicts).
// Throws mw::Error(Store) when Redis cannot be read.
std::string scrapeNamespace(const std::string& redis_url, const std::string& ns);

// --once: prints the scrape (exit 0), or says why it could not (exit 1).
// --listen: serves it at http://ADDR/metrics until SIGINT or SIGTERM.
int runMetrics(const MetricsOptions& opt);

}  // namespace mwcli
