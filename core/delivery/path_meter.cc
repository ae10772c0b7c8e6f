#include "core/delivery/path_meter.h"

#include <algorithm>

namespace mw {

namespace {

using Micros = PathMeter::Micros;

Micros atRate(size_t bytes, double rate) {
  return Micros(static_cast<int64_t>(static_cast<double>(bytes) / rate * 1e6));
}

}  // namespace

void PathMeter::acknowledged(size_t bytes, Clock::time_point sent_at, Clock::time_point now) {
  withdrawn(bytes);
  delivered_ += bytes;
  if (now < sent_at) return;  // a clock the caller mixed up: no sample

  // Round trip (RFC 6298, alpha 1/8, beta 1/4).
  Micros rtt = std::chrono::duration_cast<Micros>(now - sent_at);
  if (measured()) rtt = std::max(rtt - atRate(bytes, rate_), Micros(0));
  if (!timed_) {
    timed_ = true;
    srtt_ = rtt;
    rttvar_ = rtt / 2;
  } else {
    const Micros err = srtt_ > rtt ? srtt_ - rtt : rtt - srtt_;
    rttvar_ = (rttvar_ * 3 + err) / 4;
    srtt_ = (srtt_ * 7 + rtt) / 8;
  }

  // Rate: from when the path last delivered or when these were sent,
  // whichever is later. Sent after the last acknowledgement came, they
  // found the path idle: what was pending then was too small to tell.
  if (sent_at > last_ack_ && pending_bytes_ < kMinSampleBytes) pending_bytes_ = 0;
  last_ack_ = now;
  if (pending_bytes_ == 0) pending_since_ = std::max(last_delivery_, sent_at);
  pending_bytes_ += bytes;
  const auto interval = std::chrono::duration_cast<Micros>(now - pending_since_);
  if (interval < kMinSampleInterval || pending_bytes_ < kMinSampleBytes) return;
  const double sample = static_cast<double>(pending_bytes_) * 1e6 / static_cast<double>(interval.count());
  rate_ = measured() ? rate_ + (sample - rate_) / 4 : sample;
  pending_bytes_ = 0;
  last_delivery_ = now;
}

Micros PathMeter::expectedDelivery(size_t bytes, double assumed_rate) const {
  const double rate = measured() ? rate_ : assumed_rate;
  if (rate <= 0) return srtt_;
  return atRate(in_flight_ + bytes, rate) + srtt_;
}

Micros PathMeter::doubtAfter(std::chrono::milliseconds floor) const {
  Micros wait = std::max<Micros>(srtt_ * 3, floor);
  if (measured()) wait += atRate(in_flight_, rate_);
  return wait;
}

size_t windowBytes(const std::vector<const PathMeter*>& meters, size_t floor, size_t ceiling) {
  double sum = 0;
  for (const PathMeter* m : meters) {
    sum += m->measured() ? 2 * m->rate() * static_cast<double>(m->srtt().count()) / 1e6 : static_cast<double>(floor);
  }
  return std::clamp(static_cast<size_t>(sum), floor, std::max(floor, ceiling));
}

}  // namespace mw
