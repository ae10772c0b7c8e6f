// The worker processes of the demo: stage 1, a stage-2 replica, stage 3.
#pragma once

#include <string>
#include <vector>

namespace mwcli {

struct StageArgs {
  std::string role;           // "s1", "replica" or "s3"
  int replica = -1;           // for role "replica"
  std::vector<int> replicas;  // for s1/s3: the replicas at start
};

// Runs until the leader says stop; returns the process exit code.
int runDemoStage(const StageArgs& args);

}  // namespace mwcli
