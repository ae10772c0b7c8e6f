// Break notices and a shrink's exclusion notices (pub/sub), and break
// markers (durable keys): anyone who can publish on the namespace's
// channel chooses these bytes.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/capped_text.h"
#include "core/resize/resize_plan.h"
#include "core/store/redis_values.h"

namespace {

void checkMarker(const mw::BreakMarker& m) {
  if (m.peer < -1 || m.detector < 0 || m.detail.size() > mw::kCappedTextBytes + 40) std::abort();
  for (char c : m.detail) {
    if (static_cast<unsigned char>(c) < 0x20) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (auto m = mw::parseBreakMarker(text)) {
    checkMarker(*m);
    auto again = mw::parseBreakMarker(mw::formatBreakMarker(*m));
    if (!again || again->peer != m->peer || again->detector != m->detector || again->detail != m->detail) {
      std::abort();
    }
  }
  if (auto n = mw::parseBreakNotice(text)) {
    checkMarker(n->marker);
    if (n->world.empty() || n->world.size() > 128 || n->epoch < 1 || n->epoch > mw::kMaxEpoch) std::abort();
    auto again = mw::parseBreakNotice(mw::formatBreakNotice(*n));
    if (!again || again->world != n->world || again->epoch != n->epoch || again->marker.peer != n->marker.peer ||
        again->marker.detail != n->marker.detail) {
      std::abort();
    }
  }
  if (auto x = mw::parseExclusionNotice(text)) {
    if (x->world.empty() || x->world.size() > 128 || x->new_epoch <= x->old_epoch || x->ranks.size() > 1024) {
      std::abort();
    }
    if (auto ranks = mw::decodeRanks(x->ranks, 65536)) {
      if (mw::encodeRanks(*ranks) != x->ranks) std::abort();
    }
  }
  return 0;
}
