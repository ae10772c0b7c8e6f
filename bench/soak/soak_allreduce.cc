// A three-member world's checked allreduce loop: uint64 SUM, paced, one at
// a time, each result judged by the lab's sum check (checked_payload.h).
// The last element is the vote to end: every member sees the same sum and
// ends after the same iteration.
#include <algorithm>
#include <vector>

#include "bench/soak/soak_traffic.h"
#include "tools/lab/checked_payload.h"
#include "tools/lab/clock.h"

namespace mwbench {
namespace soak {

namespace {

class Allreduce : public WorldTraffic {
 public:
  Allreduce(const WorldSpec& spec, int world_index, int, Cell& cell, Notes& notes)
      : spec_(spec), index_(world_index), cell_(cell), notes_(notes), in_(std::max<size_t>(spec.bytes / 8, 2)),
        out_(in_.size()) {}

  void start(mw_world_t* w, int64_t now) override {
    world_ = w;
    // A shrink or grow renumbers the members (soak_schedule.h, Shrink).
    rank_ = mw_world_rank(w);
    size_ = mw_world_size(w);
    iteration_ = 0;
    ending_ = done_ = peer_ending_ = false;
    broken_ns_ = 0;
    next_post_ = now;
    ++tag_;
  }

  void tick(int64_t now) override {
    if (!world_ || req_ || done_ || broken_ns_ || now < next_post_) return;
    const size_t votes = in_.size() - 1;
    for (size_t i = 0; i < votes; ++i) in_[i] = mwlab::sumInput(iteration_, i, rank_);
    in_[votes] = ending_ ? 1 : 0;
    std::fill(out_.begin(), out_.end(), 0);
    const mw_status_t st = mw_allreduce_async(world_, in_.data(), out_.data(), in_.size(), MW_UINT64, MW_SUM, &req_);
    if (st != MW_OK) {
      req_ = nullptr;
      if (st == MW_ERR_WORLD_BROKEN) {
        // Timed now: `now` may predate a fault the driver began.
        broken_ns_ = mwlab::monotonicNs();
      } else {
        notes_.note("world %s: mw_allreduce_async: %s (%s)", spec_.name.c_str(), mw_status_string(st), mw_last_error());
      }
      return;
    }
    mw_request_set_user_data(req_, userData(index_, tag_));
  }

  int64_t nextDueNs() const override { return !world_ || req_ || done_ || broken_ns_ ? INT64_MAX : next_post_; }

  void complete(const mw_completion_t& c, int64_t now) override {
    if (c.request != req_ || static_cast<uint32_t>(c.user_data) != tag_) {
      mw_request_free(c.request);
      notes_.note("world %s: a completion that belongs to no pending allreduce", spec_.name.c_str());
      return;
    }
    mw_request_free(req_);
    req_ = nullptr;
    if (c.status == MW_ERR_WORLD_BROKEN) {
      if (!broken_ns_) broken_ns_ = now;
      return;
    }
    if (c.status != MW_OK) {
      notes_.note("world %s: allreduce %llu completed with %s", spec_.name.c_str(),
                  static_cast<unsigned long long>(iteration_), mw_status_string(c.status));
      return;
    }
    check();
    cell_.sent.fetch_add(1);
    if (out_.back() > 0) {
      done_ = true;
      peer_ending_ = !ending_;
    }
    ++iteration_;
    const int64_t interval = spec_.interval_us * 1000LL;
    next_post_ = std::max(next_post_ + interval, now - interval);
  }

  void beginEnd() override { ending_ = true; }
  bool peerEnding() const override { return peer_ending_; }
  bool done() const override { return done_; }
  int64_t brokenNs() const override { return broken_ns_; }

  void releaseAfterDestroy() override {
    mw_request_free(req_);
    req_ = nullptr;
    world_ = nullptr;
  }

 private:
  void check() {
    const mwlab::SumVerdict v =
        mwlab::judgeSum(out_.data(), out_.size() - 1, iteration_, size_);
    cell_.lost.fetch_add(v.lost);
    cell_.duplicated.fetch_add(v.doubled);
    cell_.reordered.fetch_add(v.other_iteration);
    cell_.corrupt.fetch_add(v.corrupt);
    if (v.ok()) {
      cell_.delivered.fetch_add(1);
      return;
    }
    notes_.note("world %s: allreduce %llu wrong:%s%s%s%s", spec_.name.c_str(),
                static_cast<unsigned long long>(iteration_), v.lost ? " a part missing" : "",
                v.doubled ? " a part doubled" : "", v.other_iteration ? " a part of another iteration" : "",
                v.corrupt ? " corrupt" : "");
  }

  const WorldSpec& spec_;
  const int index_;
  int rank_ = 0, size_ = 0;
  Cell& cell_;
  Notes& notes_;
  std::vector<uint64_t> in_, out_;
  mw_world_t* world_ = nullptr;
  mw_request_t* req_ = nullptr;
  uint32_t tag_ = 0;
  uint64_t iteration_ = 0;
  bool ending_ = false, done_ = false, peer_ending_ = false;
  int64_t broken_ns_ = 0, next_post_ = 0;
};

}  // namespace

std::unique_ptr<WorldTraffic> makeAllreduce(const WorldSpec& spec, int world_index, int member, Cell& cell,
                                            Notes& notes) {
  return std::make_unique<Allreduce>(spec, world_index, member, cell, notes);
}

}  // namespace soak
}  // namespace mwbench
