// The client-server endpoints and listeners every UCX worker here uses
// (ucx_links.h, rails/ucx_path_accept.h): made in peer error mode, closed with
// force. On the engine's owner.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <string>

namespace mw {

// Listens on `ip` (an IP literal; "0.0.0.0" or "::" for every address) at
// a port the kernel picks, which `port` gets. UCS_ERR_INVALID_ADDR when
// `ip` is no IP literal.
ucs_status_t startListener(ucp_worker_h worker, const std::string& ip, ucp_listener_conn_callback_t on_request,
                           void* arg, ucp_listener_h* listener, uint16_t* port);

// An endpoint to the listener at `ip`:`port`, whose errors go to
// `on_error` with `arg`. UCS_ERR_INVALID_ADDR when `ip` is no IP literal.
ucs_status_t connectEndpoint(ucp_worker_h worker, const std::string& ip, uint16_t port, ucp_err_handler_cb_t on_error,
                             void* arg, ucp_ep_h* ep);

// The endpoint of a connection request a listener got.
ucs_status_t acceptEndpoint(ucp_worker_h worker, ucp_conn_request_h request, ucp_err_handler_cb_t on_error,
                            void* arg, ucp_ep_h* ep);

// Closes `ep` at once, completing what is pending on it (Cancelled). UCX
// reports no error on it afterwards, so its handler's `arg` may go.
void forceClose(ucp_ep_h ep) noexcept;

// Sends `header` as the header of active message `id` on `ep` (eager; with
// UCP_AM_SEND_FLAG_REPLY in `flags` the receiver gets UCX's reply
// endpoint). UCX reads a copy that lives until the send completes.
template <typename Header>
void sendHeader(ucp_ep_h ep, uint16_t id, const Header& header, uint32_t flags) {
  auto* held = new Header(header);
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_AM_SEND_FLAG_EAGER | flags;
  param.user_data = held;
  param.cb.send = [](void* request, ucs_status_t, void* arg) {
    ucp_request_free(request);
    delete static_cast<Header*>(arg);
  };
  void* r = ucp_am_send_nbx(ep, id, held, sizeof *held, nullptr, 0, &param);
  if (!UCS_PTR_IS_PTR(r)) delete held;
}

}  // namespace mw
