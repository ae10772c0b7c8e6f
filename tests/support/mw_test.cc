#include "tests/support/mw_test.h"

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

namespace mwtest {

mw_context_t* newContext(const std::string& redis_url,
                         const std::vector<std::pair<std::string, std::string>>& settings) {
  mw_config_t* cfg = nullptr;
  if (mw_config_new(&cfg) != MW_OK) return nullptr;
  bool ok = mw_config_set(cfg, "redis_url", redis_url.c_str()) == MW_OK &&
            mw_config_set(cfg, "bind_address", "127.0.0.1") == MW_OK;
  for (const auto& [k, v] : settings) ok = ok && mw_config_set(cfg, k.c_str(), v.c_str()) == MW_OK;
  mw_context_t* ctx = nullptr;
  if (ok && mw_context_new(cfg, &ctx) != MW_OK) ctx = nullptr;
  if (!ctx) std::fprintf(stderr, "newContext: %s\n", mw_last_error());
  mw_config_free(cfg);
  return ctx;
}

mw_backend_t hostBackend() {
  const char* b = std::getenv("MW_TEST_BACKEND");
  return (b && std::strcmp(b, "ucx") == 0) ? MW_BACKEND_UCX : MW_BACKEND_GLOO;
}

const char* hostBackendName() { return hostBackend() == MW_BACKEND_UCX ? "ucx" : "gloo"; }

bool expectStatus(mw_status_t got, mw_status_t want, const char* what) {
  if (got == want) return true;
  std::fprintf(stderr, "%s: got %s, want %s (%s)\n", what, mw_status_string(got), mw_status_string(want),
               mw_last_error());
  return false;
}

mw_status_t waitAndFree(mw_request_t* req, int timeout_ms) {
  mw_status_t s = mw_wait(req, timeout_ms);
  mw_request_free(req);
  return s;
}

}  // namespace mwtest
