// The TCP connections of a path that is down, shut down before UCX closes
// their endpoints.
//
// UCX 1.13's TCP transport says goodbye (CONN_FIN) with a blocking send
// when it destroys an endpoint that carried data both ways
// (uct_tcp_ep_destroy -> uct_tcp_cm_send_event -> ucs_socket_send, which
// loops while send() answers EAGAIN). Over a link that is down, the
// socket's send buffer is full of what the link no longer carries, so that
// loop holds the engine thread, and every world of the context, until the
// link comes back or TCP gives up: healthy paths then go unacknowledged,
// are taken down in turn, and a world breaks. A connection that is shut
// down first makes that send fail at once, and UCX treats the endpoint as
// failed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace mw {

// Shuts down (both ways) every TCP connection of this process from
// `local_ip` to `peer_ip`, except those to `spare_peer_port` (the peer's
// probe port). Returns how many. Never throws.
size_t shutDownConnections(const std::string& local_ip, const std::string& peer_ip, uint16_t spare_peer_port) noexcept;

}  // namespace mw
