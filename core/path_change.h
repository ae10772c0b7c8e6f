// What a path event (MW_EVENT_PATH_DOWN / MW_EVENT_PATH_UP) says beyond its
// text: which path to the peer changed, between which addresses, and what
// this member held for the peer, sent and not yet settled (acknowledged and
// released by UCX): it goes again on the next path when the one that failed
// carried it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace mw {

struct PathChange {
  int index = -1;  // in the order of the context's data_addresses
  std::string local_address;
  std::string remote_address;
  uint64_t outstanding_messages = 0;
  uint64_t outstanding_bytes = 0;
  // Down: how long the traffic it carried stalled before it moved to
  // another path, from the fault's first evidence; 0 when it carried none.
  std::chrono::nanoseconds failover_stall{0};
};

}  // namespace mw
