// What a metrics snapshot holds: plain values, copied out of the live
// counters at one moment, in Prometheus' terms (families of series, each
// series a set of label values). The C API, the text exposition, the
// Redis copy and the `multiworld metrics` scrape all read this.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mw::metrics {

// The values are those of the C header's mw_metric_kind_t.
enum class Kind { Counter = 1, Gauge = 2, Histogram = 3 };

const char* kindName(Kind k) noexcept;  // "counter", "gauge", "histogram"

struct Sample {
  std::vector<std::string> label_values;  // one per the family's label_names
  double value = 0;                       // counter, gauge; a histogram's sum
  uint64_t count = 0;                     // histogram: observations
  std::vector<uint64_t> cumulative;       // histogram: per bound, observations <= it
};

struct Family {
  std::string name;
  std::string help;
  Kind kind = Kind::Counter;
  std::vector<std::string> label_names;
  std::vector<double> bounds;  // histogram: bucket upper bounds, increasing
  std::vector<Sample> samples;
};

struct Snapshot {
  std::vector<Family> families;

  size_t sampleCount() const;
};

// Prometheus' rules for names: metric names [a-zA-Z_:][a-zA-Z0-9_:]*,
// label names [a-zA-Z_][a-zA-Z0-9_]* and not starting with "__".
bool isMetricName(const std::string& s);
bool isLabelName(const std::string& s);

}  // namespace mw::metrics
