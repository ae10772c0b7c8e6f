// Prometheus' text exposition format, version 0.0.4: what a scrape of
// /metrics returns, what mw_metrics_text writes, and what promtool checks.
#pragma once

#include <string>

#include "core/metrics/snapshot.h"

namespace mw::metrics {

// The Content-Type of the format.
constexpr const char* kTextContentType = "text/plain; version=0.0.4; charset=utf-8";

// Every family with a HELP and a TYPE line, then its series; histograms as
// _bucket (with le, "+Inf" last), _sum and _count series. Numbers are
// written the same in every locale.
std::string exposition(const Snapshot& s);

// The shortest text that reads back as `v` ("+Inf", "-Inf", "NaN" too).
std::string formatNumber(double v);

}  // namespace mw::metrics
