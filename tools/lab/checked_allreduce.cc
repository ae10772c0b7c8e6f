#include <algorithm>
#include <cstdio>
#include <vector>

#include "tools/lab/checked_member.h"
#include "tools/lab/checked_payload.h"
#include "tools/lab/checked_traffic.h"

namespace mwlab {

namespace {

using checked::Member;

// ---- the allreduce loop -----------------------------------------------------------

}  // namespace

int runCheckedAllreduce(const TrafficSpec& spec, MemberBoard& board, const std::atomic<int>& stop) {
  if (spec.size > kSumMaxRanks || spec.message_bytes < 16) {
    std::fprintf(stderr, "checked allreduce: at most 3 members and 16 bytes\n");
    return 1;
  }
  Member m(spec, board);
  if (!m.open()) return 1;
  // The last element is the vote to stop: all ranks see the same sum and
  // leave after the same iteration.
  const size_t n = spec.message_bytes / 8, votes = n - 1;
  std::vector<uint64_t> in(n), out(n);
  board.ready.store(1);
  int64_t next_post = monotonicNs();
  mw_completion_t done[4];
  for (int64_t it = 0;; ++it) {
    while (spec.interval_us > 0 && monotonicNs() < next_post) {
      m.poll(done, 4, m.pollTimeoutMs(next_post));
      m.drainEvents();
    }
    // Events are timed when read: read them every iteration, also when
    // allreduces come back faster than the pace and nothing ever waits.
    m.drainEvents();
    next_post = std::max(next_post + spec.interval_us * 1000LL, monotonicNs() - spec.interval_us * 1000LL);
    for (size_t i = 0; i < votes; ++i) in[i] = sumInput(static_cast<uint64_t>(it), i, spec.rank);
    in[votes] = stop.load() ? 1 : 0;
    std::fill(out.begin(), out.end(), 0);
    const int64_t posted = monotonicNs();
    mw_request_t* req = nullptr;
    mw_status_t st = mw_allreduce_async(m.world(), in.data(), out.data(), n, MW_UINT64, MW_SUM, &req);
    board.sent.fetch_add(1);
    if (st == MW_OK) {
      mw_request_set_user_data(req, 1);
      size_t got = 0;
      int64_t broken_at = 0;
      while (got == 0 && !m.failed()) {
        got = m.poll(done, 4, 50);
        if (got) break;
        m.drainEvents();
        if (m.broken() && !broken_at) broken_at = monotonicNs();
        // The break event comes first; the request must follow it.
        if (broken_at && monotonicNs() - broken_at > 10000000000LL) {
          m.fail("the allreduce completing 10 s after its world broke");
          mw_request_free(req);
          break;
        }
      }
      st = got ? done[0].status : MW_ERR_INTERNAL;
      if (got) mw_request_free(done[0].request);
    }
    if (st == MW_ERR_WORLD_BROKEN) {
      m.markBroken();
      m.drainEvents(2000);
      break;
    }
    if (st != MW_OK) {
      std::fprintf(stderr, "checked allreduce %s rank %d: iteration %lld: %s\n", spec.world.c_str(), spec.rank,
                   static_cast<long long>(it), mw_status_string(st));
      board.errors.fetch_add(1);
      break;
    }
    const SumVerdict v = judgeSum(out.data(), votes, static_cast<uint64_t>(it), spec.size);
    board.lost.fetch_add(v.lost);
    board.duplicated.fetch_add(v.doubled);
    board.reordered.fetch_add(v.other_iteration);
    board.corrupt.fetch_add(v.corrupt);
    if (v.ok()) m.delivered(posted);
    if (out[votes] > 0) break;
  }
  m.markDone();
  m.closeWorld();
  board.finished.store(1);
  return m.failed() ? 1 : 0;
}

}  // namespace mwlab
