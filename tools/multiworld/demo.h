// `multiworld demo`: the MultiWorld paper's serving scenario on one machine.
#pragma once

#include <string>

namespace mwcli {

struct DemoOptions {
  int replicas = 2;
  double duration_s = 30;
  double kill_after_s = -2;       // < 0: no kill; -2: a third of the way in
  double scale_out_after_s = -2;  // < 0: no scale-out; -2: halfway from the kill to the end
  std::string redis_url;          // empty: MW_REDIS_URL, else an embedded redis-server
  std::string self_exe;           // this program, to start the stages
};

// Returns the process exit code: 0 only when nothing was lost and every
// result was correct.
int runDemo(const DemoOptions& opt);

}  // namespace mwcli
