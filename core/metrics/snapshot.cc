#include "core/metrics/snapshot.h"

namespace mw::metrics {
namespace {

bool isNameChar(char c, bool first, bool colon) {
  const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
  return alpha || (!first && c >= '0' && c <= '9');
}

bool isName(const std::string& s, bool colon) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (!isNameChar(s[i], i == 0, colon)) return false;
  }
  return true;
}

}  // namespace

const char* kindName(Kind k) noexcept {
  switch (k) {
    case Kind::Counter: return "counter";
    case Kind::Gauge: return "gauge";
    case Kind::Histogram: return "histogram";
  }
  return "untyped";
}

size_t Snapshot::sampleCount() const {
  size_t n = 0;
  for (const Family& f : families) n += f.samples.size();
  return n;
}

bool isMetricName(const std::string& s) { return isName(s, true); }

bool isLabelName(const std::string& s) { return isName(s, false) && s.rfind("__", 0) != 0; }

}  // namespace mw::metrics
