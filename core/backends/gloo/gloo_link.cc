#include "core/backends/gloo/gloo_link.h"

#include <gloo/common/error.h>

namespace mw {

void GlooLink::rethrow(const std::exception& e, int peer) const {
  std::string what = e.what();
  for (const auto& [address, rank] : peer_by_address_) {
    if (what.find(address) != std::string::npos) {
      peer = rank;
      break;
    }
  }
  // In a world of two the other member is the only one to blame.
  if (peer < 0 && size() == 2) peer = 1 - rank();
  throw TransportError(what, peer);
}

void GlooLink::waitRecv(gloo::transport::UnboundBuffer& b, int peer, Deadline d) const {
  bool done;
  try {
    done = b.waitRecv(nullptr, remaining(d));
  } catch (const std::exception& e) {
    rethrow(e, peer);
  }
  if (!done) throw TransportError("receive aborted", peer);
}

void GlooLink::waitSend(gloo::transport::UnboundBuffer& b, int peer, Deadline d) const {
  bool done;
  try {
    done = b.waitSend(nullptr, remaining(d));
  } catch (const std::exception& e) {
    rethrow(e, peer);
  }
  if (!done) throw TransportError("send aborted", peer);
}

}  // namespace mw
