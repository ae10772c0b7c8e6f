#include "core/liveness/stall_watch.h"

#include <algorithm>

namespace mw {

namespace {

using ms = std::chrono::milliseconds;

// How often a peer is asked: every stall_report_ms, or, with reports off,
// every stall_timeout_ms (the timeout needs an answer to blame anyone).
ms askEvery(const StallWatch::Settings& s) { return s.report.count() > 0 ? s.report : s.timeout; }

}  // namespace

template <typename F>
void StallWatch::eachOldest(F&& f) {
  for (auto it = waits_.begin(); it != waits_.end();) {
    const auto [peer, stream, position] = it->first;
    f(it->first, it->second);
    it = stream == UINT64_MAX ? waits_.lower_bound(Key{peer + 1, 0, 0}) : waits_.lower_bound(Key{peer, stream + 1, 0});
  }
}

void StallWatch::waiting(Place place, int peer, Clock::time_point since) {
  if (askEvery(settings_).count() <= 0) return;
  Wait w;
  w.since = since;
  waits_.emplace(Key{peer, place.stream, place.position}, w);
}

void StallWatch::done(Place place, int peer) { waits_.erase(Key{peer, place.stream, place.position}); }

void StallWatch::forget(int peer) {
  waits_.erase(waits_.lower_bound(Key{peer, 0, 0}), waits_.lower_bound(Key{peer + 1, 0, 0}));
}

std::vector<StallWatch::Ask> StallWatch::due(Clock::time_point now) {
  std::vector<Ask> asks;
  const ms every = askEvery(settings_);
  if (every.count() <= 0) return asks;
  eachOldest([&](const Key& key, Wait& w) {
    if (now - w.since >= every && (!w.ever_asked || now - w.asked >= every)) {
      w.asked = now;
      w.ever_asked = true;
      asks.push_back({std::get<0>(key), std::get<1>(key)});
    }
  });
  return asks;
}

StallWatch::Stalled StallWatch::stalled(const Key& k, const Wait& w, Clock::time_point now) const {
  Stalled s;
  s.peer = std::get<0>(k);
  s.waiting = {std::get<1>(k), std::get<2>(k)};
  s.peer_posted = w.peer_posted;
  s.waited = std::chrono::duration_cast<ms>(now - w.since);
  return s;
}

std::optional<StallWatch::Stalled> StallWatch::answered(int peer, uint64_t stream, uint64_t posted,
                                                        Clock::time_point now) {
  auto it = waits_.lower_bound(Key{peer, stream, 0});
  if (it == waits_.end() || std::get<0>(it->first) != peer || std::get<1>(it->first) != stream) {
    return std::nullopt;  // what it waited on came meanwhile
  }
  Wait& w = it->second;
  w.behind = posted < std::get<2>(it->first);
  w.peer_posted = posted;
  if (!w.behind) return std::nullopt;
  if (settings_.timeout.count() > 0 && !w.timed_out && now - w.since >= settings_.timeout) {
    w.timed_out = w.reported = true;
    Stalled s = stalled(it->first, w, now);
    s.timed_out = true;
    return s;
  }
  if (settings_.report.count() > 0 && !w.reported && now - w.since >= settings_.report) {
    w.reported = true;
    return stalled(it->first, w, now);
  }
  return std::nullopt;
}

std::optional<StallWatch::Stalled> StallWatch::timedOut(Clock::time_point now) {
  if (settings_.timeout.count() <= 0) return std::nullopt;
  for (auto& [key, w] : waits_) {
    if (w.behind && !w.timed_out && now - w.since >= settings_.timeout) {
      w.timed_out = w.reported = true;
      Stalled s = stalled(key, w, now);
      s.timed_out = true;
      return s;
    }
  }
  return std::nullopt;
}

std::optional<Clock::time_point> StallWatch::nextDue() {
  const ms every = askEvery(settings_);
  std::optional<Clock::time_point> next;
  auto consider = [&](Clock::time_point t) {
    if (!next || t < *next) next = t;
  };
  eachOldest([&](const Key&, const Wait& w) {
    consider(w.ever_asked ? w.asked + every : w.since + every);
    if (settings_.timeout.count() > 0 && w.behind && !w.timed_out) consider(w.since + settings_.timeout);
  });
  return next;
}

}  // namespace mw
