#include "tools/multiworld/bench_runner.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace mwcli {
namespace {

// Where mw_bench lies relative to this program: beside it, where the
// install puts it (MW_BENCH_FROM_BINDIR, from the CMake install dirs), and
// in a build tree.
std::vector<std::string> candidates(const std::string& self_exe) {
  std::vector<std::string> out;
  if (const char* env = std::getenv("MW_BENCH"); env && *env) out.emplace_back(env);
  const size_t slash = self_exe.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : self_exe.substr(0, slash);
  out.push_back(dir + "/mw_bench");
  out.push_back(dir + "/" MW_BENCH_FROM_BINDIR);
  out.push_back(dir + "/../../bench/mw_bench");
  return out;
}

}  // namespace

int runBench(const std::string& self_exe, int argc, char** args) {
  std::vector<char*> argv;
  char name[] = "multiworld bench";
  argv.push_back(name);
  for (int i = 0; i < argc; ++i) argv.push_back(args[i]);
  argv.push_back(nullptr);
  std::string tried;
  for (const auto& path : candidates(self_exe)) {
    if (::access(path.c_str(), X_OK) != 0) {
      tried += "\n  " + path + ": " + std::strerror(errno);
      continue;
    }
    ::execv(path.c_str(), argv.data());
    tried += "\n  " + path + ": " + std::strerror(errno);
  }
  std::fprintf(stderr,
               "multiworld bench: cannot run mw_bench (build it with -DMW_BUILD_BENCH=ON, or name it in "
               "MW_BENCH); tried:%s\n",
               tried.c_str());
  return 2;
}

}  // namespace mwcli
