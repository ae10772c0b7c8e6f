// `multiworld bench`: runs the benchmark program, mw_bench, which is built
// and packaged on its own (the tool itself links no benchmark code).
#pragma once

#include <string>

namespace mwcli {

// `args` are what follows "bench". Replaces this process with mw_bench;
// returns 2 (saying where it looked) only when none can be run.
int runBench(const std::string& self_exe, int argc, char** args);

}  // namespace mwcli
