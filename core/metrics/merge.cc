#include "core/metrics/merge.h"

namespace mw::metrics {

void Merge::add(const Snapshot& s, const std::vector<std::string>& names, const std::vector<std::string>& values) {
  for (const Family& f : s.families) {
    std::vector<std::string> label_names = names;
    label_names.insert(label_names.end(), f.label_names.begin(), f.label_names.end());
    Family* into = nullptr;
    for (Family& m : merged_.families) {
      if (m.name == f.name) into = &m;
    }
    if (!into) {
      merged_.families.push_back({f.name, f.help, f.kind, label_names, f.bounds, {}});
      into = &merged_.families.back();
    } else if (into->kind != f.kind || into->label_names != label_names || into->bounds != f.bounds) {
      ++conflicts_;
      continue;
    }
    for (const Sample& sample : f.samples) {
      Sample labelled = sample;
      labelled.label_values.insert(labelled.label_values.begin(), values.begin(), values.end());
      into->samples.push_back(std::move(labelled));
    }
  }
}

}  // namespace mw::metrics
