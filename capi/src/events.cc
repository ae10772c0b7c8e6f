#include <cstring>

#include "capi/src/boundary.h"

using namespace mw;
using namespace mw::capi;

namespace {

void copyText(char* dst, size_t room, const std::string& src) {
  size_t n = std::min(room - 1, src.size());
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

}  // namespace

extern "C" {

MW_API mw_status_t mw_next_event(mw_context_t* c, mw_event_t* out, int timeout_ms) noexcept {
  return guarded([&] {
    requireNonNull(c, "ctx");
    requireNonNull(out, "out");
    auto timeout = timeoutArg(timeout_ms, "timeout_ms");
    auto e = ctx(c)->events().pop(timeout);
    if (!e) return fail(Status::Timeout, "no event within " + std::to_string(timeout_ms) + " ms");
    std::memset(out, 0, sizeof *out);
    out->type = static_cast<mw_event_type_t>(static_cast<int>(e->type));
    out->world = liveHandle(e->world);
    copyText(out->world_name, sizeof out->world_name, e->world_name);
    out->peer_rank = e->peer_rank;
    out->reason = toC(e->reason);
    copyText(out->detail, sizeof out->detail, e->detail);
    return MW_OK;
  });
}

}  // extern "C"
