// A snapshot as one string, for Redis: what each context publishes under
// its member's key and what `multiworld metrics` reads back. Its own
// format rather than the text exposition, so the reader gets the families
// whole (to merge members' series under one HELP and TYPE) without parsing
// Prometheus' text. Lines of tab-separated fields:
//
//   mw-metrics 1
//   F <name> <kind 1|2|3> <help> <label names, comma-separated> <bounds, comma-separated>
//   S <value> <count> <cumulative counts, comma-separated> <label value>...
//
// each S line belonging to the F line above it; a backslash escapes a
// backslash, tab or newline in the help and the label values.
#pragma once

#include <string>
#include <string_view>

#include "core/metrics/snapshot.h"

namespace mw::metrics {

// What decode accepts at most: a value from Redis is not trusted.
constexpr size_t kMaxWireBytes = 8u << 20;
constexpr size_t kMaxWireFamilies = 256;
constexpr size_t kMaxWireSamples = 200000;
constexpr size_t kMaxWireLabels = 16;
constexpr size_t kMaxWireBounds = 64;

std::string encode(const Snapshot& s);

// Throws Error(Store) saying what is wrong with `text` (its line), for
// anything encode would not write: an unknown version, a bad name, a
// number that does not parse or is negative where counts are, a histogram
// whose counts decrease, too many labels for the family, past the limits.
Snapshot decode(std::string_view text);

}  // namespace mw::metrics
