// The failover suite's two parts: the stall and accounting of cut links
// (failover_suite.cc) and the cost of acknowledgements, path_failover on
// against off (failover_overhead.cc). Both run their members in network
// namespaces of a mwlab::Rails lab made by the caller.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_options.h"
#include "bench/fault_processes.h"
#include "tools/lab/netns.h"

namespace mwbench {

struct OverheadRow {
  std::size_t bytes = 0;
  double on_mbps = 0, off_mbps = 0;  // 10^6 bytes/s of payload, median of the rounds
  // Median of each round's on / off: a round measures both back to back,
  // so what drifts on a shared machine between rounds cancels out.
  double ratio = 0;
  // Which links carried the measured bytes: "link0", "link1" or "both".
  std::string on_via, off_via;
};

// p2p throughput between the two members of `rails` (two links) over
// worlds with path_failover on and off, for opt.min_bytes..opt.max_bytes,
// alternating rounds. Throws on a failed process or setting.
std::vector<OverheadRow> measureFailoverOverhead(const BenchOptions& opt, mwlab::Rails& rails,
                                                 const std::string& redis_url);

// A member process in namespace `ns` of the lab, running `body` there
// (bench/fault_processes.h: killed and reaped when it goes away). Call
// before this process made any multiworld context.
std::unique_ptr<Child> labMember(const std::string& ns, const std::function<int()>& body);

}  // namespace mwbench
