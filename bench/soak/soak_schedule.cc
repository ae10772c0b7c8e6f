#include "bench/soak/soak_schedule.h"

#include <algorithm>

namespace mwbench {
namespace soak {

namespace {

constexpr const char* kNames[kFaultKinds] = {"kill9",       "sigstop_short", "sigstop_long",
                                              "cut_one_rail", "cut_all_rails", "redis_pause",
                                              "redis_failover", "churn",        "cancel",
                                              "shrink"};
constexpr int kRedisPauseMs = 3000;

}  // namespace

const char* faultName(FaultKind k) { return kNames[static_cast<int>(k)]; }

bool faultFromName(const std::string& name, FaultKind* out) {
  for (int i = 0; i < kFaultKinds; ++i) {
    if (name == kNames[i]) {
      *out = static_cast<FaultKind>(i);
      return true;
    }
  }
  return false;
}

bool breaksWorlds(FaultKind k) {
  return k == FaultKind::Kill9 || k == FaultKind::SigstopLong || k == FaultKind::CutAllRails ||
         k == FaultKind::Shrink;
}

std::string Fault::text() const {
  std::string t = faultName(kind);
  if (member >= 0) t += " member " + std::to_string(member);
  if (world >= 0) t += " world " + std::to_string(world);
  if (rail >= 0) t += " rail " + std::to_string(rail);
  if (kind == FaultKind::CutOneRail || kind == FaultKind::CutAllRails) t += drop ? " (drop)" : " (link down)";
  if (hold_ms > 0) t += " for " + std::to_string(hold_ms) + " ms";
  return t;
}

Schedule::Schedule(uint64_t seed, ScheduleShape shape) : state_(seed), shape_(std::move(shape)) {}

// splitmix64: the same numbers from the same seed on every platform (the
// standard library's distributions are not specified that tightly).
uint64_t Schedule::draw() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

int Schedule::uniform(int lo, int hi) { return lo + static_cast<int>(draw() % static_cast<uint64_t>(hi - lo + 1)); }

Fault Schedule::next() {
  Fault f;
  f.index = index_++;
  f.kind = shape_.kinds[draw() % shape_.kinds.size()];
  f.gap_ms = uniform(500, 3000);
  const int timeout = shape_.heartbeat_timeout_ms;
  switch (f.kind) {
    case FaultKind::Kill9:
      f.member = uniform(0, shape_.processes - 1);
      break;
    case FaultKind::SigstopShort:
      f.member = uniform(0, shape_.processes - 1);
      f.hold_ms = uniform(std::max(1, timeout / 10), std::max(1, timeout * 45 / 100));
      break;
    case FaultKind::SigstopLong:
      f.member = uniform(0, shape_.processes - 1);
      f.hold_ms = uniform(timeout * 3 / 2, timeout * 5 / 2);
      break;
    case FaultKind::CutOneRail:
      f.member = uniform(0, shape_.processes - 1);
      f.rail = uniform(0, shape_.rails - 1);
      f.drop = draw() % 2 == 1;
      f.hold_ms = uniform(500, 3000);
      break;
    case FaultKind::CutAllRails:
      f.member = uniform(0, shape_.processes - 1);
      f.drop = draw() % 2 == 1;
      // Every path down for a heartbeat timeout breaks a world; a path is
      // down a path timeout after its first unanswered message.
      f.hold_ms = uniform(timeout * 3 / 2, timeout * 5 / 2) + shape_.path_timeout_ms;
      break;
    case FaultKind::RedisPause:
      f.hold_ms = kRedisPauseMs;
      break;
    case FaultKind::RedisFailover:
      break;
    case FaultKind::Churn:
      f.world = uniform(0, static_cast<int>(shape_.worlds.size()) - 1);
      break;
    case FaultKind::Shrink: {
      // An allreduce world, and one of its members.
      std::vector<int> triples;
      for (size_t w = 0; w < shape_.worlds.size(); ++w) {
        if (shape_.worlds[w].allreduce) triples.push_back(static_cast<int>(w));
      }
      f.world = triples[draw() % triples.size()];
      const std::vector<int>& members = shape_.worlds[static_cast<size_t>(f.world)].members;
      f.member = members[draw() % members.size()];
      break;
    }
    case FaultKind::Cancel: {
      // A stream world, and one of its two members.
      std::vector<int> streams;
      for (size_t w = 0; w < shape_.worlds.size(); ++w) {
        if (!shape_.worlds[w].allreduce) streams.push_back(static_cast<int>(w));
      }
      f.world = streams[draw() % streams.size()];
      f.member = shape_.worlds[static_cast<size_t>(f.world)].members[draw() % 2];
      break;
    }
  }
  return f;
}

}  // namespace soak
}  // namespace mwbench
