// How the members of a world agree from which collective on a member is
// run as the slow one (ucx_degraded_schedules.h), and from which on it no
// longer is. Members must never disagree: two members running collective
// n under different schedules would mismatch their transfers.
//
// One member coordinates (the world's rank 0). It proposes "from
// collective S on, the slow member is X" (X = -1: none), with S past the
// collectives it has started. Each member votes:
//   yes, when it has not started collective S: it then holds S and every
//        later collective, unstarted, until the outcome;
//   no,  when it has, saying the last one it started.
// Once every vote is in, the coordinator commits when all said yes, and
// every member runs S on under the new schedule; otherwise it aborts (the
// holds end, under the old schedule) and proposes again past the furthest
// member. A member holds for at most one round trip to the coordinator,
// and only if it reaches S before the outcome: the switch costs at most
// one collective's latency. A member that dies meanwhile breaks the
// world, which ends the question.
//
// Proposals carry a number; an outcome or vote of any other is stale and
// ignored. The coordinator has at most one proposal out at a time.
//
// No transport and no locks: each half is owned by one thread (the
// world's engine owner), which carries the messages.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace mw {

struct SwitchProposal {
  uint64_t id = 0;
  uint64_t from = 0;  // the first collective (from 1) under the new schedule
  int slow = -1;
};

struct SwitchVote {
  uint64_t id = 0;
  int rank = 0;
  bool yes = false;
  uint64_t started = 0;  // the last collective this member started
};

struct SwitchOutcome {
  uint64_t id = 0;
  bool commit = false;
};

// Every member's half, the coordinator's included.
class SwitchParticipant {
 public:
  explicit SwitchParticipant(int rank) : rank_(rank) {}

  // What collective `seq` runs under, or nullopt: hold it until an
  // outcome. Collectives are asked about, and started, in order.
  struct Schedule {
    int slow = -1;
  };
  std::optional<Schedule> scheduleFor(uint64_t seq) const;
  // Collective `seq` started under scheduleFor(seq).
  void started(uint64_t seq);

  SwitchVote onProposal(const SwitchProposal& p);
  // True when it changed anything (collectives held may start now).
  bool onOutcome(const SwitchOutcome& o);

  uint64_t lastStarted() const { return started_; }

 private:
  const int rank_;
  uint64_t started_ = 0;
  uint64_t last_proposal_ = 0;
  // The slow member from each collective on where it changed; what came
  // before the last collective started is dropped.
  std::map<uint64_t, int> schedules_{{1, -1}};
  std::optional<SwitchProposal> pending_;  // voted yes, no outcome yet
};

// The coordinator's half.
class SwitchCoordinator {
 public:
  explicit SwitchCoordinator(int size) : size_(size) {}

  // Collectives a new proposal leaves between the furthest member and its
  // switch point after an abort, so that members still posting get to
  // vote before they reach it.
  static constexpr uint64_t kMargin = 2;

  // A proposal that the slow member be `slow` from the next collective
  // after `started` on, unless one is out (then nullopt: propose again
  // after its outcome).
  std::optional<SwitchProposal> propose(int slow, uint64_t started);
  // Once every member voted: the outcome to send all, and, after an
  // abort, the proposal to make next (past the furthest member).
  struct Result {
    SwitchOutcome outcome;
    std::optional<SwitchProposal> again;
  };
  std::optional<Result> onVote(const SwitchVote& v);
  bool pending() const { return out_.has_value(); }

 private:
  const int size_;
  uint64_t next_id_ = 1;
  std::optional<SwitchProposal> out_;
  std::vector<bool> voted_;
  bool all_yes_ = true;
  uint64_t furthest_ = 0;
};

}  // namespace mw
