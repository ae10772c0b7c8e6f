#include "core/metrics/registry.h"

#include "core/error.h"

namespace mw::metrics {

Registry::FamilyId Registry::add(FamilySpec spec) {
  std::lock_guard<std::mutex> lock(m_);
  const bool derived = spec.counts_of != FamilySpec::kNone;
  if ((spec.kind == Kind::Histogram) != (spec.layout != nullptr) || spec.kind == Kind::Gauge ||
      (derived && (spec.kind != Kind::Counter || spec.counts_of >= families_.size() ||
                   families_[spec.counts_of].spec.kind != Kind::Histogram ||
                   families_[spec.counts_of].spec.label_names != spec.label_names))) {
    throw Error(Status::Internal, "metrics: family " + spec.name + " is not one the registry can keep");
  }
  families_.push_back(Entry{std::move(spec), {}});
  return families_.size() - 1;
}

Registry::Series& Registry::series(FamilyId family, Kind kind, const std::vector<std::string>& values) {
  if (family >= families_.size() || families_[family].spec.kind != kind ||
      families_[family].spec.label_names.size() != values.size()) {
    throw Error(Status::Internal, "metrics: no " + std::string(kindName(kind)) + " family " +
                                      std::to_string(family) + " with " + std::to_string(values.size()) +
                                      " labels");
  }
  return families_[family].series[values];
}

Counter& Registry::counter(FamilyId family, const std::vector<std::string>& values) {
  std::lock_guard<std::mutex> lock(m_);
  Series& s = series(family, Kind::Counter, values);
  if (!s.counter) s.counter = std::make_unique<Counter>();
  return *s.counter;
}

Histogram& Registry::histogram(FamilyId family, const std::vector<std::string>& values) {
  std::lock_guard<std::mutex> lock(m_);
  Series& s = series(family, Kind::Histogram, values);
  if (!s.histogram) s.histogram = std::make_unique<Histogram>(*families_[family].spec.layout);
  return *s.histogram;
}

void Registry::readSeries(const Entry& source, const Entry& shown, Family& out) const {
  for (const auto& [values, s] : source.series) {
    Sample sample;
    sample.label_values = values;
    const bool zero_too = shown.spec.show_zero;
    if (s.counter) {
      const uint64_t v = s.counter->value();
      if (v == 0 && !zero_too) continue;
      sample.value = static_cast<double>(v);
    } else if (s.histogram && shown.spec.kind == Kind::Counter) {
      const uint64_t n = s.histogram->read().count;
      if (n == 0) continue;
      sample.value = static_cast<double>(n);
    } else if (s.histogram) {
      HistogramReading r = s.histogram->read();
      if (r.count == 0 && !zero_too) continue;
      sample.value = source.spec.layout->expose(r.sum);
      sample.count = r.count;
      sample.cumulative = std::move(r.cumulative);
    } else {
      continue;
    }
    out.samples.push_back(std::move(sample));
  }
}

std::vector<Family> Registry::read() const {
  std::vector<Family> out;
  std::lock_guard<std::mutex> lock(m_);
  for (const Entry& e : families_) {
    Family f{e.spec.name, e.spec.help, e.spec.kind, e.spec.label_names, {}, {}};
    if (e.spec.layout) f.bounds = e.spec.layout->exposed;
    const bool derived = e.spec.counts_of < families_.size();
    readSeries(derived ? families_[e.spec.counts_of] : e, e, f);
    if (!f.samples.empty()) out.push_back(std::move(f));
  }
  return out;
}

}  // namespace mw::metrics
