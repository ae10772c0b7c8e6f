#include "core/metrics/wire.h"

#include <charconv>
#include <cmath>

#include "core/capped_text.h"
#include "core/error.h"

namespace mw::metrics {
namespace {

constexpr std::string_view kHeader = "mw-metrics 1";

void escape(std::string& out, const std::string& text) {
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
}

std::string number(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

template <typename T, typename F>
void joined(std::string& out, const std::vector<T>& items, F&& each) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    out += each(items[i]);
  }
}

[[noreturn]] void bad(size_t line, const std::string& why) {
  throw Error(Status::Store, "metrics snapshot, line " + std::to_string(line) + ": " + why);
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    const size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

std::string unescape(std::string_view s, size_t line) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out += s[i];
      continue;
    }
    if (++i == s.size()) bad(line, "a lone backslash");
    if (s[i] == '\\') out += '\\';
    else if (s[i] == 't') out += '\t';
    else if (s[i] == 'n') out += '\n';
    else bad(line, "an unknown escape");
  }
  return out;
}

// The whole of `s` as a T (double or uint64_t); `what` names it.
template <typename T>
T parseWhole(std::string_view s, size_t line, const char* what) {
  T v{};
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) {
    bad(line, "'" + cappedText(std::string(s)) + "' is not " + what);
  }
  return v;
}

double parseDouble(std::string_view s, size_t line) { return parseWhole<double>(s, line, "a number"); }
uint64_t parseCount(std::string_view s, size_t line) { return parseWhole<uint64_t>(s, line, "a count"); }

// "" is an empty list.
std::vector<std::string_view> list(std::string_view s) {
  if (s.empty()) return {};
  return split(s, ',');
}

Family parseFamily(const std::vector<std::string_view>& f, size_t line) {
  if (f.size() != 6) bad(line, "a family line has 6 fields, not " + std::to_string(f.size()));
  Family fam;
  fam.name = std::string(f[1]);
  if (!isMetricName(fam.name)) bad(line, "'" + cappedText(fam.name) + "' is not a metric name");
  const uint64_t kind = parseCount(f[2], line);
  if (kind < 1 || kind > 3) bad(line, "kind " + std::to_string(kind) + " is not 1, 2 or 3");
  fam.kind = static_cast<Kind>(kind);
  fam.help = unescape(f[3], line);
  for (std::string_view name : list(f[4])) {
    if (!isLabelName(std::string(name)) || name == "le") bad(line, "a bad label name");
    fam.label_names.emplace_back(name);
  }
  if (fam.label_names.size() > kMaxWireLabels) bad(line, "too many labels");
  for (std::string_view b : list(f[5])) fam.bounds.push_back(parseDouble(b, line));
  if (fam.kind != Kind::Histogram && !fam.bounds.empty()) bad(line, "bounds on a family that is no histogram");
  if (fam.bounds.size() > kMaxWireBounds) bad(line, "too many bounds");
  for (size_t i = 0; i < fam.bounds.size(); ++i) {
    if (!std::isfinite(fam.bounds[i]) || (i > 0 && fam.bounds[i] <= fam.bounds[i - 1])) {
      bad(line, "bounds must be finite and increasing");
    }
  }
  return fam;
}

Sample parseSample(const Family& fam, const std::vector<std::string_view>& f, size_t line) {
  if (f.size() != 4 + fam.label_names.size()) {
    bad(line, "a series of " + fam.name + " has " + std::to_string(4 + fam.label_names.size()) + " fields");
  }
  Sample s;
  s.value = parseDouble(f[1], line);
  s.count = parseCount(f[2], line);
  for (std::string_view c : list(f[3])) s.cumulative.push_back(parseCount(c, line));
  for (size_t i = 4; i < f.size(); ++i) s.label_values.push_back(unescape(f[i], line));
  if (!std::isfinite(s.value)) bad(line, "a value that is not finite");
  if (fam.kind != Kind::Gauge && s.value < 0) bad(line, "a negative count or sum");
  if (fam.kind != Kind::Histogram) {
    if (s.count != 0 || !s.cumulative.empty()) bad(line, "bucket counts on a family that is no histogram");
    return s;
  }
  if (s.cumulative.size() != fam.bounds.size()) bad(line, "one bucket count per bound");
  for (size_t i = 0; i < s.cumulative.size(); ++i) {
    const uint64_t next = i + 1 < s.cumulative.size() ? s.cumulative[i + 1] : s.count;
    if (s.cumulative[i] > next) bad(line, "bucket counts must not decrease");
  }
  return s;
}

}  // namespace

std::string encode(const Snapshot& s) {
  std::string out(kHeader);
  out += '\n';
  for (const Family& f : s.families) {
    out += "F\t" + f.name + '\t' + std::to_string(static_cast<int>(f.kind)) + '\t';
    escape(out, f.help);
    out += '\t';
    joined(out, f.label_names, [](const std::string& n) { return n; });
    out += '\t';
    joined(out, f.bounds, number);
    out += '\n';
    for (const Sample& sample : f.samples) {
      out += "S\t" + number(sample.value) + '\t' + std::to_string(sample.count) + '\t';
      joined(out, sample.cumulative, [](uint64_t c) { return std::to_string(c); });
      for (const std::string& v : sample.label_values) {
        out += '\t';
        escape(out, v);
      }
      out += '\n';
    }
  }
  return out;
}

Snapshot decode(std::string_view text) {
  if (text.size() > kMaxWireBytes) bad(0, std::to_string(text.size()) + " bytes, more than this reader takes");
  std::vector<std::string_view> lines = split(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  if (lines.empty() || lines[0] != kHeader) bad(1, "not a snapshot of this format (mw-metrics 1)");
  Snapshot s;
  size_t samples = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t line = i + 1;
    const std::vector<std::string_view> fields = split(lines[i], '\t');
    if (fields[0] == "F") {
      if (s.families.size() == kMaxWireFamilies) bad(line, "too many families");
      s.families.push_back(parseFamily(fields, line));
    } else if (fields[0] == "S") {
      if (s.families.empty()) bad(line, "a series before any family");
      if (++samples > kMaxWireSamples) bad(line, "too many series");
      s.families.back().samples.push_back(parseSample(s.families.back(), fields, line));
    } else {
      bad(line, "neither a family (F) nor a series (S)");
    }
  }
  return s;
}

}  // namespace mw::metrics
