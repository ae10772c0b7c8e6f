// The live counters and histograms of one context, by family and label
// values. Making a series takes the registry's lock; the series then lives
// as long as the registry, so the hot path holds a plain pointer to it and
// updates it without the lock (counter.h, histogram.h). A snapshot takes
// the lock to walk the series and reads each without stopping its writers.
// Any thread.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/metrics/counter.h"
#include "core/metrics/histogram.h"
#include "core/metrics/snapshot.h"

namespace mw::metrics {

struct FamilySpec {
  std::string name;
  std::string help;
  Kind kind = Kind::Counter;  // Counter or Histogram: gauges are read, not kept
  std::vector<std::string> label_names;
  const Layout* layout = nullptr;  // histograms; outlives the registry
  // A counter family kept by no cells of its own: the observation counts of
  // this histogram family (same labels), so that counting an operation and
  // timing it is one update.
  static constexpr size_t kNone = static_cast<size_t>(-1);
  size_t counts_of = kNone;
  // Its series show from when they are made, at 0 too: for rare events,
  // so that a rate over a window sees the first one (Prometheus counts
  // nothing for a series' first sample).
  bool show_zero = false;
};

class Registry {
 public:
  using FamilyId = size_t;

  FamilyId add(FamilySpec spec);

  // The series of `family` with these label values (one per label name),
  // made on first use. Error(Internal) for a family of the other kind or a
  // wrong number of values: a bug of the caller.
  Counter& counter(FamilyId family, const std::vector<std::string>& values);
  Histogram& histogram(FamilyId family, const std::vector<std::string>& values);

  // The families in the order added, each with the series that counted
  // something (a series shows from its first count on, or from when it was
  // made with show_zero); a family with none is left out.
  std::vector<Family> read() const;

 private:
  struct Series {
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Histogram> histogram;
  };
  struct Entry {
    FamilySpec spec;
    std::map<std::vector<std::string>, Series> series;
  };
  Series& series(FamilyId family, Kind kind, const std::vector<std::string>& values);
  void readSeries(const Entry& source, const Entry& shown, Family& out) const;

  mutable std::mutex m_;
  std::vector<Entry> families_;
};

}  // namespace mw::metrics
