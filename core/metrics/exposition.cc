#include "core/metrics/exposition.h"

#include <charconv>
#include <cmath>

namespace mw::metrics {
namespace {

void escaped(std::string& out, const std::string& text, bool quote) {
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quote && c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

// {a="x",b="y"}, with `extra` (le="...") last; nothing for no labels.
void labels(std::string& out, const Family& f, const Sample& s, const char* extra_name = nullptr,
            const std::string& extra_value = {}) {
  if (f.label_names.empty() && !extra_name) return;
  out += '{';
  for (size_t i = 0; i < f.label_names.size() && i < s.label_values.size(); ++i) {
    if (i) out += ',';
    out += f.label_names[i];
    out += "=\"";
    escaped(out, s.label_values[i], true);
    out += '"';
  }
  if (extra_name) {
    if (!f.label_names.empty()) out += ',';
    out += extra_name;
    out += "=\"";
    out += extra_value;
    out += '"';
  }
  out += '}';
}

void line(std::string& out, const std::string& name, const char* suffix, const Family& f, const Sample& s,
          const std::string& value, const char* extra_name = nullptr, const std::string& extra_value = {}) {
  out += name;
  out += suffix;
  labels(out, f, s, extra_name, extra_value);
  out += ' ';
  out += value;
  out += '\n';
}

}  // namespace

std::string formatNumber(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string exposition(const Snapshot& s) {
  std::string out;
  for (const Family& f : s.families) {
    out += "# HELP " + f.name + ' ';
    escaped(out, f.help, false);
    out += "\n# TYPE " + f.name + ' ' + kindName(f.kind) + '\n';
    for (const Sample& sample : f.samples) {
      if (f.kind != Kind::Histogram) {
        line(out, f.name, "", f, sample, formatNumber(sample.value));
        continue;
      }
      for (size_t i = 0; i < f.bounds.size() && i < sample.cumulative.size(); ++i) {
        line(out, f.name, "_bucket", f, sample, std::to_string(sample.cumulative[i]), "le", formatNumber(f.bounds[i]));
      }
      line(out, f.name, "_bucket", f, sample, std::to_string(sample.count), "le", "+Inf");
      line(out, f.name, "_sum", f, sample, formatNumber(sample.value));
      line(out, f.name, "_count", f, sample, std::to_string(sample.count));
    }
  }
  return out;
}

}  // namespace mw::metrics
