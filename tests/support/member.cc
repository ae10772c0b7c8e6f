#include "tests/support/member.h"

#include <cstdio>

#include "tests/support/mw_test.h"

namespace mwtest {

Member::Member(Settings settings, int create_timeout_ms)
    : settings_(std::move(settings)), create_timeout_ms_(create_timeout_ms) {}

Member::~Member() {
  if (world) {
    mw_status_t s = mw_world_destroy(world);
    if (s != MW_OK) std::fprintf(stderr, "mw_world_destroy -> %s (%s)\n", mw_status_string(s), mw_last_error());
  }
  mw_context_free(ctx);
}

bool Member::join(const std::string& url, const char* name, int rank, int size) {
  ctx = newContext(url, settings_);
  return ctx && create(name, rank, size, &world);
}

bool Member::create(const char* name, int rank, int size, mw_world_t** out) {
  mw_status_t s = mw_world_create(ctx, name, rank, size, hostBackend(), 0, create_timeout_ms_, out);
  if (s != MW_OK) {
    std::fprintf(stderr, "rank %d: mw_world_create(%s) -> %s (%s)\n", rank, name, mw_status_string(s),
                 mw_last_error());
    return false;
  }
  return true;
}

}  // namespace mwtest
