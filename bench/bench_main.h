#pragma once

namespace mwbench {

// argv[0] is the program's name as the user typed it, argv[1] the suite.
// Returns the exit code: 0 success, 1 a suite failed, 2 bad usage.
int benchMain(int argc, char** argv);

}  // namespace mwbench
