// Small conveniences over the C API for tests.
#pragma once

#include <multiworld/multiworld.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace mwtest {

// A context on `redis_url` with loopback transport and any extra settings.
// Returns NULL (and prints why) on failure.
mw_context_t* newContext(const std::string& redis_url,
                         const std::vector<std::pair<std::string, std::string>>& settings = {});

// The host backend the tests run over: MW_TEST_BACKEND=ucx|gloo in the
// environment (ctest registers the API suites once per backend), else Gloo.
mw_backend_t hostBackend();
const char* hostBackendName();

// In workers: report a failed expectation on stderr and return false.
bool expectStatus(mw_status_t got, mw_status_t want, const char* what);

// The peer_rank of the next MW_EVENT_WORLD_BROKEN on `ctx` within `limit`
// (printed with its detail), or -100 when none came.
int nextBreakPeer(mw_context_t* ctx, std::chrono::milliseconds limit = std::chrono::seconds(20));

// Issues nothing; waits for `req` (up to `timeout_ms`), frees it, and
// returns its status.
mw_status_t waitAndFree(mw_request_t* req, int timeout_ms = 30000);

}  // namespace mwtest

// In workers: bail out with a message when a call fails.
#define MWT_CHECK(call)                                                                      \
  do {                                                                                       \
    mw_status_t s_ = (call);                                                                 \
    if (s_ != MW_OK) {                                                                       \
      std::fprintf(stderr, "%s:%d: %s -> %s (%s)\n", __FILE__, __LINE__, #call,              \
                   mw_status_string(s_), mw_last_error());                                   \
      return 1;                                                                              \
    }                                                                                        \
  } while (0)

#define MWT_REQUIRE(cond)                                                                    \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      std::fprintf(stderr, "%s:%d: requirement failed: %s\n", __FILE__, __LINE__, #cond);     \
      return 1;                                                                              \
    }                                                                                        \
  } while (0)
