// Checked traffic for the failover tests and benchmark: a sequence-numbered
// p2p stream and an allreduce loop whose every delivery is checked (order,
// duplicates, losses, bytes), run by one member process each, reporting
// through a board in shared memory (lock-free atomics, written by the member
// and read by the parent) what it delivered, the events it saw and how long
// delivery stalled after each cut the parent marked.
#pragma once

#include <multiworld/multiworld.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tools/lab/clock.h"  // monotonicNs(): what the boards' times are on

namespace mwlab {

struct BoardEvent {
  mw_event_type_t type;
  int peer_rank;
  int64_t at_ns;
  char detail[200];
  // Path events' fields (mw_event_info_t).
  int path_index;
  char local_address[48];
  char remote_address[48];
  uint64_t outstanding_messages;
  uint64_t outstanding_bytes;
};

struct MemberBoard {
  static constexpr int kMaxEvents = 128;
  static constexpr int kMaxCuts = 256;

  std::atomic<int> ready{0};            // the world is formed and traffic runs
  std::atomic<int> finished{0};         // the member left its loop
  std::atomic<int64_t> sent{0};         // p2p: sends completed OK; allreduce: iterations started
  std::atomic<int64_t> delivered{0};    // p2p: checked messages; allreduce: iterations with a correct result
  std::atomic<int64_t> lost{0};         // p2p: counted by the parent at the end; allreduce: contributions missing
  std::atomic<int64_t> duplicated{0};   // a message (a contribution) delivered again
  std::atomic<int64_t> reordered{0};    // delivered before an earlier one (allreduce: another iteration's)
  std::atomic<int64_t> corrupt{0};      // wrong bytes
  std::atomic<int64_t> broken_ns{0};    // when the world first showed as broken, 0 = never
  std::atomic<int> errors{0};           // anything else unexpected (said on stderr)

  // Stalls: the parent writes cut_ns[c] and then cuts = c + 1; the member
  // writes resumed_ns[c] at its first delivery of a message (an iteration)
  // it posted at or after cut_ns[c].
  std::atomic<int> cuts{0};
  std::atomic<int64_t> cut_ns[kMaxCuts];
  std::atomic<int64_t> resumed_ns[kMaxCuts];

  // Every event of the member's context, in order.
  std::atomic<int> n_events{0};
  BoardEvent events[kMaxEvents];

  // Parent side.
  void markCut(int64_t at_ns);
  int countEvents(mw_event_type_t type, int64_t since_ns = 0) const;
  // "PATH_DOWN peer 1 '10.71.1.2' @+12.3ms, ..." relative to `origin_ns`.
  std::string eventText(int64_t origin_ns) const;
};

struct TrafficSpec {
  std::string redis_url;
  // mw_config_set keys beyond redis_url: data_addresses, path_failover, ...
  std::vector<std::pair<std::string, std::string>> settings;
  std::string world;
  int rank = 0;
  int size = 2;
  std::size_t message_bytes = 65536;  // p2p: each message; allreduce: the vector (a multiple of 8)
  int window = 4;                     // p2p: sends and receives outstanding per direction
  int interval_us = 0;                // the least time between two posts; 0 = as fast as it goes
};

// Both ranks of a two-member world stream to each other until *stop, then
// end with a marked last message each and count what never came (`lost`).
// A break ends it early (broken_ns). Returns 0 unless something unexpected
// happened (said on stderr).
int runCheckedStream(const TrafficSpec& spec, MemberBoard& board, const std::atomic<int>& stop);
// Every rank (at most 3) runs uint64 SUM allreduces back to back; each
// result tells whether a member's contribution is missing, doubled or from
// another iteration. All ranks stop after the same iteration once *stop is
// set on any of them; a break ends it early.
int runCheckedAllreduce(const TrafficSpec& spec, MemberBoard& board, const std::atomic<int>& stop);

}  // namespace mwlab
