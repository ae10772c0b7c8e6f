#include <algorithm>
#include <cstddef>
#include <cstring>

#include "capi/src/boundary.h"
#include "capi/src/sized_struct.h"

using namespace mw;
using namespace mw::capi;

namespace {

template <size_t N>
void copyText(char (&dst)[N], const std::string& src) {
  size_t n = std::min(N - 1, src.size());
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

// The smallest mw_event_info_t a caller may pass: room for the type.
constexpr size_t kEventInfoFirstSize = offsetof(mw_event_info_t, world);

void fill(mw_event_info_t& out, const Event& e) {
  out.type = static_cast<mw_event_type_t>(static_cast<int>(e.type));
  out.world = liveHandle(e.world);
  out.world_epoch = e.world ? e.world->epoch() : 0;
  copyText(out.world_name, e.world_name);
  out.peer_rank = e.peer_rank;
  out.reason = toC(e.reason);
  copyText(out.detail, e.detail);
  out.path_index = e.path.index;
  copyText(out.local_address, e.path.local_address);
  copyText(out.remote_address, e.path.remote_address);
  out.outstanding_messages = e.path.outstanding_messages;
  out.outstanding_bytes = e.path.outstanding_bytes;
}

std::optional<Event> nextEvent(mw_context_t* c, int timeout_ms) {
  auto e = ctx(c)->events().pop(timeoutArg(timeout_ms, "timeout_ms"));
  if (!e) throw Error(Status::Timeout, "no event within " + std::to_string(timeout_ms) + " ms");
  return e;
}

}  // namespace

extern "C" {

MW_API mw_status_t mw_next_event(mw_context_t* c, mw_event_t* out, int timeout_ms) noexcept {
  return guarded([&] {
    requireNonNull(c, "ctx");
    requireNonNull(out, "out");
    auto e = nextEvent(c, timeout_ms);
    std::memset(out, 0, sizeof *out);
    out->type = static_cast<mw_event_type_t>(static_cast<int>(e->type));
    out->world = liveHandle(e->world);
    copyText(out->world_name, e->world_name);
    out->peer_rank = e->peer_rank;
    out->reason = toC(e->reason);
    copyText(out->detail, e->detail);
    return MW_OK;
  });
}

MW_API mw_status_t mw_next_event_info(mw_context_t* c, mw_event_info_t* out, int timeout_ms) noexcept {
  return guarded([&] {
    requireNonNull(c, "ctx");
    requireNonNull(out, "out");
    const size_t given = out->size;
    // Before an event is taken: a refused call loses none.
    checkStructSize(given, sizeof(mw_event_info_t), kEventInfoFirstSize, "mw_event_info_t");
    auto e = nextEvent(c, timeout_ms);
    mw_event_info_t info{};
    info.size = given;
    fill(info, *e);
    writeSized(out, given, &info, sizeof info, kEventInfoFirstSize, "mw_event_info_t");
    return MW_OK;
  });
}

}  // extern "C"
