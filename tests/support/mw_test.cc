#include "tests/support/mw_test.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

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

int nextBreakPeer(mw_context_t* ctx, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  mw_event_t ev;
  while (std::chrono::steady_clock::now() < end) {
    if (mw_next_event(ctx, &ev, 1000) == MW_OK && ev.type == MW_EVENT_WORLD_BROKEN) {
      std::fprintf(stderr, "pid %d: world %s broke, peer %d: %s\n", getpid(), ev.world_name, ev.peer_rank, ev.detail);
      return ev.peer_rank;
    }
  }
  return -100;
}

mw_status_t waitAndFree(mw_request_t* req, int timeout_ms) {
  mw_status_t s = mw_wait(req, timeout_ms);
  mw_request_free(req);
  return s;
}

}  // namespace mwtest
