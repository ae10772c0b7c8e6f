// What one path to one peer has shown of its speed: a smoothed round trip
// (RFC 6298's estimator), a delivery rate measured from acknowledged
// bytes, and the bytes sent on it that are not acknowledged yet.
//
// Striping splits a message over paths by what each will take to deliver
// its share (expectedDelivery(), stripe_plan.h); doubt waits for what is
// queued ahead at the path's own rate (doubtAfter()), so a path that is
// only busy is not doubted while it still sends.
//
// Rate samples come from acknowledgements: the bytes acknowledged over the
// time since the path last delivered or since they were sent, whichever is
// later (a path idle in between is not charged for the idle time).
// Acknowledgements accumulate into one sample until it spans
// kMinSampleInterval and kMinSampleBytes, so a burst of acknowledgements
// landing together reads as one. What a path carries between idle spells
// that stays under kMinSampleBytes waited on the round trip, not on the
// rate, and is no sample.
//
// Holds no transport and no clock of its own: the caller passes the time.
// Owned by one thread (for UCX worlds, the engine's owner); nothing here
// locks.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace mw {

class PathMeter {
 public:
  using Clock = std::chrono::steady_clock;
  using Micros = std::chrono::microseconds;
  static constexpr Micros kMinSampleInterval{200};
  static constexpr size_t kMinSampleBytes = 64 * 1024;

  // `bytes` went out on the path.
  void sent(size_t bytes) { in_flight_ += bytes; }
  // The peer acknowledged `bytes` sent at `sent_at`; it came at `now`.
  // The round-trip sample is the wait less the bytes' own time on the wire
  // at rate(): a large chunk is slow to send, not slow to answer.
  void acknowledged(size_t bytes, Clock::time_point sent_at, Clock::time_point now);
  // `bytes` in flight will not be acknowledged here: the path went down
  // and they go again elsewhere, or they were given up.
  void withdrawn(size_t bytes) { in_flight_ -= bytes < in_flight_ ? bytes : in_flight_; }
  // Forgets the rate and the round trip: a path that comes back is not
  // what it was before its outage. Nothing is in flight on it.
  void reset() { *this = PathMeter{}; }

  // Bytes per second, smoothed; 0 until the first sample.
  double rate() const { return rate_; }
  bool measured() const { return rate_ > 0; }
  // Zero until the first round trip is measured.
  Micros srtt() const { return srtt_; }
  Micros rttvar() const { return rttvar_; }
  size_t inFlight() const { return in_flight_; }
  uint64_t delivered() const { return delivered_; }

  // Until `bytes` more, sent now, would be acknowledged: what is in flight
  // and these at rate(), and one round trip. `assumed_rate` stands in for
  // a path not measured yet.
  Micros expectedDelivery(size_t bytes, double assumed_rate) const;
  // How long the oldest unacknowledged send may wait before the path is
  // in doubt: max(3 × srtt, floor), plus what the bytes in flight need at
  // rate().
  Micros doubtAfter(std::chrono::milliseconds floor) const;

 private:
  double rate_ = 0;                  // bytes per second
  bool timed_ = false;  // a round trip was measured
  Micros srtt_{0}, rttvar_{0};
  size_t in_flight_ = 0;
  uint64_t delivered_ = 0;
  Clock::time_point last_delivery_;  // of the last sample taken
  Clock::time_point last_ack_;       // of the last acknowledgement
  size_t pending_bytes_ = 0;         // acknowledged, not in a sample yet
  Clock::time_point pending_since_;  // where the pending sample starts
};

// The bytes one peer may have unacknowledged over all of its paths: the
// sum over paths of twice rate × srtt (bandwidth × round trip, with room
// for the acknowledgement's own trip), at least `floor` and at most
// `ceiling`. A path not measured counts as `floor` alone.
size_t windowBytes(const std::vector<const PathMeter*>& meters, size_t floor, size_t ceiling);

}  // namespace mw
