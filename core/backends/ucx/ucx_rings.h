// The same-host hello of UCX worlds (ucx_rings.cc): what two members of
// one host tell each other before their world starts, and the state of
// one exchange. On the engine's owner.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>

#include "core/backends/ucx/ucx_world.h"

namespace mw {

struct UcxSameHostHelloMessage {
  static constexpr uint64_t kMagic = 0x316873776dull;  // "mwsh1"
  uint64_t magic = kMagic;
  uint32_t reads = 0;    // the sender reads the receiver: it takes the receiver's ring
  uint32_t offered = 0;  // the fds below hold the sender's ring, for the receiver to take
  int32_t memfd = -1, wake_fd = -1, space_fd = -1, unused = 0;
  uint64_t capacity = 0;
};

// What this member sent one peer, what came, and UCX's requests for both.
// UCX may call back after the world let go of it (a formation that
// failed), so a hello abandoned with a request still held deletes itself
// once its last request is called back.
struct UcxWorld::SameHostHello {
  int peer = -1;
  UcxSameHostHelloMessage out, in;
  void* send_request = nullptr;
  void* recv_request = nullptr;
  bool received = false;
  ucs_status_t recv_status = UCS_OK;
  size_t recv_length = 0;
  bool abandoned = false;

  void maybeDelete() {
    if (abandoned && !send_request && !recv_request) delete this;
  }
  static void onSent(void* request, ucs_status_t, void* arg) {
    auto* h = static_cast<SameHostHello*>(arg);
    ucp_request_free(request);
    h->send_request = nullptr;
    h->maybeDelete();
  }
  static void onReceived(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void* arg) {
    auto* h = static_cast<SameHostHello*>(arg);
    h->recv_length = info ? info->length : 0;  // it lives in the request
    ucp_request_free(request);
    h->recv_request = nullptr;
    h->received = true;
    h->recv_status = status;
    h->maybeDelete();
  }
};

}  // namespace mw
