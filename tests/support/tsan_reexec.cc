// Linked into every test binary (tests/CMakeLists.txt), whether or not it
// calls a helper of tests/support.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__SANITIZE_THREAD__)
namespace {
// UCX's memory hooks (libucm) and ThreadSanitizer's interceptors crash each
// other, so ThreadSanitizer runs need UCX_MEM_EVENTS=no (UCX then skips its
// registration-cache hooks, which only RDMA uses). libucm reads it when it
// loads, before any code of ours runs, so a test binary without it
// re-executes itself once with it set.
__attribute__((constructor)) void reexecWithoutUcxMemoryHooks() {
  if (std::getenv("UCX_MEM_EVENTS")) return;
  setenv("UCX_MEM_EVENTS", "no", 1);
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return;
  path[n] = '\0';
  FILE* f = std::fopen("/proc/self/cmdline", "rb");
  if (!f) return;
  char buf[65536];
  size_t len = std::fread(buf, 1, sizeof buf, f);
  std::fclose(f);
  std::vector<char*> argv;
  for (size_t i = 0; i < len; i += std::strlen(buf + i) + 1) argv.push_back(buf + i);
  argv.push_back(nullptr);
  execv(path, argv.data());
}
}  // namespace
#endif
