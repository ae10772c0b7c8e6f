// Collectives on UCX: an algorithm is a schedule of steps, each a set of
// tag sends and receives that may all be in flight at once, with local
// work (copies, reductions) between steps. A collective operation posts a
// step, waits for all of its transfers (driven by whoever progresses the
// engine), and asks the schedule for the next, until there is none.
#pragma once

#include <memory>
#include <vector>

#include "core/backends/ucx/ucx_op.h"

namespace mw {

struct UcxXfer {
  int peer;
  bool recv;
  void* buffer;
  size_t bytes;
};

class UcxSchedule {
 public:
  virtual ~UcxSchedule() = default;
  // Called once the previous step's transfers all completed (and first of
  // all): does the local work due, then fills `out` with the next step's
  // transfers; false when the operation is complete.
  virtual bool next(std::vector<UcxXfer>& out) = 0;
};

// The algorithm for `op` on `rank` of `size`, picked by size where it
// pays: ring allreduce / reduce-scatter / allgather, recursive doubling
// for small allreduce, binomial trees for broadcast, reduce, gather and
// scatter, all-pairs alltoall, dissemination barrier.
std::unique_ptr<UcxSchedule> makeUcxSchedule(const OpDesc& op, int rank, int size);

class UcxCollective : public UcxOp {
 public:
  UcxCollective(UcxWorld& world, std::shared_ptr<Request> request, OrderedCompletions::Ticket ticket,
                const OpDesc& op, uint64_t channel, std::unique_ptr<UcxSchedule> schedule);
  void start() override;

 private:
  void transferDone(UcxTransfer& t) override;
  void advance();

  const OpDesc op_;
  const uint64_t channel_;
  std::unique_ptr<UcxSchedule> schedule_;
  std::vector<UcxXfer> specs_;
  std::vector<UcxTransfer> step_;  // sized before posting: transfers do not move
  size_t remaining_ = 0;
  bool advancing_ = false;
};

}  // namespace mw
