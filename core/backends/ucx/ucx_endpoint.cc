#include "core/backends/ucx/ucx_endpoint.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "core/log.h"

namespace mw {
namespace {

// `ip` (an IP literal) and `port` as a socket address; false when `ip` is
// no IP literal.
bool socketAddress(const std::string& ip, uint16_t port, sockaddr_storage& out, socklen_t& length) {
  out = {};
  auto* v4 = reinterpret_cast<sockaddr_in*>(&out);
  if (inet_pton(AF_INET, ip.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    length = sizeof(sockaddr_in);
    return true;
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&out);
  if (inet_pton(AF_INET6, ip.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    length = sizeof(sockaddr_in6);
    return true;
  }
  return false;
}

uint16_t portOf(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
  if (address.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port);
  return 0;
}

ucp_ep_params_t peerErrorMode(ucp_err_handler_cb_t on_error, void* arg) {
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = on_error;
  params.err_handler.arg = arg;
  return params;
}

}  // namespace

ucs_status_t startListener(ucp_worker_h worker, const std::string& ip, ucp_listener_conn_callback_t on_request,
                           void* arg, ucp_listener_h* listener, uint16_t* port) {
  sockaddr_storage addr;
  socklen_t length = 0;
  if (!socketAddress(ip, 0, addr, length)) return UCS_ERR_INVALID_ADDR;
  ucp_listener_params_t params{};
  params.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
  params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&addr);
  params.sockaddr.addrlen = length;
  params.conn_handler.cb = on_request;
  params.conn_handler.arg = arg;
  ucs_status_t s = ucp_listener_create(worker, &params, listener);
  if (s != UCS_OK) return s;
  ucp_listener_attr_t attr{};
  attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
  s = ucp_listener_query(*listener, &attr);
  if (s != UCS_OK) {
    ucp_listener_destroy(*listener);
    *listener = nullptr;
    return s;
  }
  *port = portOf(attr.sockaddr);
  return UCS_OK;
}

ucs_status_t connectEndpoint(ucp_worker_h worker, const std::string& ip, uint16_t port, ucp_err_handler_cb_t on_error,
                             void* arg, ucp_ep_h* ep) {
  sockaddr_storage addr;
  socklen_t length = 0;
  if (!socketAddress(ip, port, addr, length)) return UCS_ERR_INVALID_ADDR;
  ucp_ep_params_t params = peerErrorMode(on_error, arg);
  params.field_mask |= UCP_EP_PARAM_FIELD_SOCK_ADDR | UCP_EP_PARAM_FIELD_FLAGS;
  params.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
  params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&addr);
  params.sockaddr.addrlen = length;
  return ucp_ep_create(worker, &params, ep);
}

ucs_status_t acceptEndpoint(ucp_worker_h worker, ucp_conn_request_h request, ucp_err_handler_cb_t on_error, void* arg,
                            ucp_ep_h* ep) {
  ucp_ep_params_t params = peerErrorMode(on_error, arg);
  params.field_mask |= UCP_EP_PARAM_FIELD_CONN_REQUEST;
  params.conn_request = request;
  return ucp_ep_create(worker, &params, ep);
}

void forceClose(ucp_ep_h ep) noexcept {
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_EP_CLOSE_FLAG_FORCE;
  void* r = ucp_ep_close_nbx(ep, &param);
  if (UCS_PTR_IS_PTR(r)) {
    ucp_request_free(r);
  } else if (UCS_PTR_IS_ERR(r)) {
    MW_LOG(LogLevel::Debug, "closing a UCX endpoint: %s", ucs_status_string(UCS_PTR_STATUS(r)));
  }
}

}  // namespace mw
