#include "core/delivery/stripe_plan.h"

#include <algorithm>

namespace mw {

namespace {

double micros(std::chrono::microseconds d) { return static_cast<double>(d.count()); }

// Bytes per microsecond of each offer, a path not measured at the mean of
// those measured.
std::vector<double> ratesOf(const std::vector<StripeOffer>& offers) {
  double sum = 0;
  size_t measured = 0;
  for (const auto& o : offers) {
    if (o.rate > 0) {
      sum += o.rate;
      ++measured;
    }
  }
  const double assumed = measured ? sum / static_cast<double>(measured) : 1e9;
  std::vector<double> rates;
  for (const auto& o : offers) rates.push_back((o.rate > 0 ? o.rate : assumed) / 1e6);
  return rates;
}

// When a new share's first byte would arrive over offer i.
double startOf(const StripeOffer& o) { return micros(o.ready_in) + micros(o.rtt) / 2; }

// Water filling over the offers marked in `use`: each one's share, 0 for
// those not used.
std::vector<double> fill(size_t bytes, const std::vector<StripeOffer>& offers, const std::vector<double>& rates,
                         const std::vector<bool>& use) {
  std::vector<size_t> order;
  for (size_t i = 0; i < offers.size(); ++i) {
    if (use[i]) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return startOf(offers[a]) < startOf(offers[b]); });
  // The first k offers (by start) are active while T, the time their shares
  // add up to `bytes`, falls before the next one's start.
  double rate_sum = 0, weighted_start = 0, finish = 0;
  size_t active = 0;
  while (active < order.size()) {
    const size_t i = order[active];
    rate_sum += rates[i];
    weighted_start += rates[i] * startOf(offers[i]);
    ++active;
    finish = (static_cast<double>(bytes) + weighted_start) / rate_sum;
    if (active == order.size() || finish <= startOf(offers[order[active]])) break;
  }
  std::vector<double> shares(offers.size(), 0);
  for (size_t k = 0; k < active; ++k) {
    const size_t i = order[k];
    shares[i] = std::max(0.0, rates[i] * (finish - startOf(offers[i])));
  }
  return shares;
}

}  // namespace

std::vector<StripeChunk> planStripes(size_t bytes, const std::vector<StripeOffer>& offers,
                                     const StripeLimits& limits) {
  if (offers.empty()) return {};
  const std::vector<double> rates = ratesOf(offers);
  if (offers.size() == 1 || bytes < limits.min_bytes) {
    size_t best = 0;
    double best_at = 0;
    for (size_t i = 0; i < offers.size(); ++i) {
      const double at = startOf(offers[i]) + static_cast<double>(bytes) / rates[i];
      if (i == 0 || at < best_at) {
        best = i;
        best_at = at;
      }
    }
    return {{offers[best].path, 0, bytes}};
  }

  // Fill, then leave out the smallest share under min_chunk, until every
  // share used is at least min_chunk or one is left.
  std::vector<bool> use(offers.size(), true);
  std::vector<double> shares;
  for (;;) {
    shares = fill(bytes, offers, rates, use);
    size_t smallest = offers.size(), used = 0;
    for (size_t i = 0; i < offers.size(); ++i) {
      if (!use[i]) continue;
      if (shares[i] < static_cast<double>(limits.min_chunk)) {
        if (smallest == offers.size() || shares[i] < shares[smallest]) smallest = i;
      }
      ++used;
    }
    if (smallest == offers.size() || used == 1) break;
    use[smallest] = false;
  }

  // Contiguous ranges in the order of preference, edges on `align`; the
  // last range used ends at the message's end.
  const size_t align = std::max<size_t>(limits.align, 1);
  const size_t max_chunk = std::max(limits.max_chunk, align);
  size_t last_used = 0;
  for (size_t i = 0; i < offers.size(); ++i) {
    if (use[i] && shares[i] > 0) last_used = i;
  }
  std::vector<StripeChunk> chunks;
  double cumulative = 0;
  size_t offset = 0;
  for (size_t i = 0; i <= last_used; ++i) {
    if (!use[i] || shares[i] <= 0) continue;
    cumulative += shares[i];
    size_t end = i == last_used ? bytes : static_cast<size_t>(cumulative) / align * align;
    end = std::clamp(end, offset, bytes);
    const size_t share = end - offset;
    if (share == 0) continue;
    const size_t pieces = (share + max_chunk - 1) / max_chunk;
    size_t piece = (share / pieces + align - 1) / align * align;
    for (size_t at = offset; at < end; at += piece) {
      chunks.push_back({offers[i].path, at, std::min(piece, end - at)});
    }
    offset = end;
  }
  return chunks;
}

}  // namespace mw
