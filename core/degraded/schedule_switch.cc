#include "core/degraded/schedule_switch.h"

#include <algorithm>

namespace mw {

std::optional<SwitchParticipant::Schedule> SwitchParticipant::scheduleFor(uint64_t seq) const {
  if (pending_ && seq >= pending_->from) return std::nullopt;
  auto it = schedules_.upper_bound(seq);
  if (it == schedules_.begin()) return Schedule{-1};  // before the first collective: not asked
  return Schedule{std::prev(it)->second};
}

void SwitchParticipant::started(uint64_t seq) {
  started_ = std::max(started_, seq);
  // Keep the entry that covers the next collective and those after it.
  auto covering = schedules_.upper_bound(started_ + 1);
  if (covering != schedules_.begin()) schedules_.erase(schedules_.begin(), std::prev(covering));
}

SwitchVote SwitchParticipant::onProposal(const SwitchProposal& p) {
  SwitchVote v;
  v.id = p.id;
  v.rank = rank_;
  v.started = started_;
  // A proposal older than one seen is stale; one while a vote is open
  // cannot come from a coordinator that waits for outcomes: both get no.
  if (p.id <= last_proposal_ || pending_) return v;
  last_proposal_ = p.id;
  if (started_ >= p.from) return v;
  pending_ = p;
  v.yes = true;
  return v;
}

bool SwitchParticipant::onOutcome(const SwitchOutcome& o) {
  if (!pending_ || o.id != pending_->id) return false;
  if (o.commit) {
    schedules_.erase(schedules_.lower_bound(pending_->from), schedules_.end());
    schedules_[pending_->from] = pending_->slow;
  }
  pending_.reset();
  return true;
}

std::optional<SwitchProposal> SwitchCoordinator::propose(int slow, uint64_t started) {
  if (out_) return std::nullopt;
  out_ = SwitchProposal{next_id_++, started + 1, slow};
  voted_.assign(static_cast<size_t>(size_), false);
  all_yes_ = true;
  furthest_ = started;
  return out_;
}

std::optional<SwitchCoordinator::Result> SwitchCoordinator::onVote(const SwitchVote& v) {
  if (!out_ || v.id != out_->id || v.rank < 0 || v.rank >= size_ || voted_[static_cast<size_t>(v.rank)]) {
    return std::nullopt;
  }
  voted_[static_cast<size_t>(v.rank)] = true;
  all_yes_ = all_yes_ && v.yes;
  furthest_ = std::max(furthest_, v.started);
  if (std::find(voted_.begin(), voted_.end(), false) != voted_.end()) return std::nullopt;
  Result r;
  r.outcome = {out_->id, all_yes_};
  const int slow = out_->slow;
  const uint64_t furthest = furthest_;
  out_.reset();
  if (!r.outcome.commit) {
    r.again = propose(slow, furthest + kMargin);
  }
  return r;
}

}  // namespace mw
