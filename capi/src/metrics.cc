#include <cstring>
#include <vector>

#include "capi/src/boundary.h"
#include "capi/src/sized_struct.h"
#include "core/metrics/exposition.h"

using namespace mw;
using namespace mw::capi;

// A snapshot with the C views of it that mw_metrics_get hands out: its
// strings' pointers, one array per family and per series, made once.
struct mw_metrics {
  metrics::Snapshot snapshot;
  struct Series {
    size_t family;
    size_t sample;
    std::vector<const char*> values;
  };
  std::vector<std::vector<const char*>> names;  // per family
  std::vector<Series> series;

  explicit mw_metrics(metrics::Snapshot s) : snapshot(std::move(s)) {
    for (size_t f = 0; f < snapshot.families.size(); ++f) {
      const metrics::Family& fam = snapshot.families[f];
      names.emplace_back();
      for (const std::string& n : fam.label_names) names.back().push_back(n.c_str());
      for (size_t i = 0; i < fam.samples.size(); ++i) {
        Series s{f, i, {}};
        for (const std::string& v : fam.samples[i].label_values) s.values.push_back(v.c_str());
        series.push_back(std::move(s));
      }
    }
  }
};

namespace {

// The first version's size: every field up to bucket_counts.
constexpr size_t kMetricInfoFirstSize = sizeof(mw_metric_info_t);

}  // namespace

extern "C" {

MW_API mw_status_t mw_metrics_snapshot(mw_context_t* c, mw_metrics_t** out) noexcept {
  return guarded([&] {
    requireNonNull(out, "out");
    *out = nullptr;
    requireNonNull(c, "ctx");
    *out = new mw_metrics(ctx(c)->metricsSnapshot());
    return MW_OK;
  });
}

MW_API size_t mw_metrics_count(const mw_metrics_t* m) noexcept { return m ? m->series.size() : 0; }

MW_API mw_status_t mw_metrics_get(const mw_metrics_t* m, size_t i, mw_metric_info_t* out) noexcept {
  return guarded([&] {
    requireNonNull(m, "m");
    requireNonNull(out, "out");
    const size_t given = out->size;
    checkStructSize(given, sizeof(mw_metric_info_t), kMetricInfoFirstSize, "mw_metric_info_t");
    if (i >= m->series.size()) {
      throw Error(Status::InvalidArgument, "metric index " + std::to_string(i) + " is outside [0, " +
                                               std::to_string(m->series.size()) + ")");
    }
    const mw_metrics::Series& s = m->series[i];
    const metrics::Family& fam = m->snapshot.families[s.family];
    const metrics::Sample& sample = fam.samples[s.sample];
    mw_metric_info_t info{};
    info.size = given;
    info.name = fam.name.c_str();
    info.help = fam.help.c_str();
    info.kind = static_cast<mw_metric_kind_t>(static_cast<int>(fam.kind));
    info.label_count = fam.label_names.size();
    info.label_names = m->names[s.family].data();
    info.label_values = s.values.data();
    info.value = sample.value;
    if (fam.kind == metrics::Kind::Histogram) {
      info.count = sample.count;
      info.bucket_count = fam.bounds.size();
      info.bucket_bounds = fam.bounds.data();
      info.bucket_counts = sample.cumulative.data();
    }
    writeSized(out, given, &info, sizeof info, kMetricInfoFirstSize, "mw_metric_info_t");
    return MW_OK;
  });
}

MW_API mw_status_t mw_metrics_text(const mw_metrics_t* m, char* buf, size_t len, size_t* needed) noexcept {
  return guarded([&] {
    requireNonNull(m, "m");
    const std::string text = metrics::exposition(m->snapshot);
    if (needed) *needed = text.size() + 1;
    if (!buf) return MW_OK;
    if (len < text.size() + 1) {
      throw Error(Status::InvalidArgument, "buffer of " + std::to_string(len) + " bytes; the text takes " +
                                               std::to_string(text.size() + 1));
    }
    std::memcpy(buf, text.c_str(), text.size() + 1);
    return MW_OK;
  });
}

MW_API void mw_metrics_free(mw_metrics_t* m) noexcept { delete m; }

}  // extern "C"
