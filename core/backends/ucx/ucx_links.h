// Endpoints from this context's worker to the workers of its peers.
//
// Every endpoint is a client-server one: the context's worker listens
// (ucp_listener) on one address, which its members publish, and for each
// world and pair of members the lower rank connects and the higher rank
// accepts; a member connects to itself too, for its sends to itself.
// UCX 1.13 connects the TCP lanes of such endpoints endpoint to endpoint
// and closes them at once, with no goodbye. Endpoints made from worker
// addresses instead share (merge) the connections of a pair, and a merged
// one can be freed inside its own read handling and then written to
// (uct_tcp_cm_handle_conn_fin, tcp_cm.c:661; uct_tcp_iface_handle_events,
// tcp_iface.c:300): a peer that stopped could crash this process.
//
// A connection request says nothing of the world it is for. So the
// connecting member's first message, an active message that asks for
// UCX's reply endpoint, names the world (its id at the accepting member)
// and the connecting rank: that reply endpoint is the accepted one. Until
// then an accepted endpoint belongs to no world; one that names no world
// waiting for it is closed. The accepting member acknowledges the hello,
// and a world starts only once each of its endpoints was named or
// acknowledged: UCX 1.13's connection manager (on UCX's async thread) can
// hand an event it collected for a socket to the next socket that gets
// the same fd number, and a connection that is still being set up when a
// world closes it frees its fd for that (an assertion in
// uct_tcp_sockcm_ep_progress_send; upstream's fix, 2faf305a18, came after
// 1.22). By the acknowledgement both sides have sent all they send in
// setup.
//
// Every endpoint uses peer error mode: UCX reports a peer's failure through
// it, and a force-close completes everything pending on it at once, so a
// world can always hand its buffers back. Each world has its own, so one
// world's break never touches another's traffic.
//
// That rules out shared memory on UCX 1.13, which selects no shared-memory
// transport for endpoints in peer mode. Mode NONE would get it, but a
// process killed while it writes into a peer's shared-memory queue leaves
// that queue blocked for every other sender (bench/shm_kill_probe shows
// it), which is the isolation this library exists for. Processes of one
// host talk through rings of shared memory and lend each other large
// messages, on a path of this library's own (channels/ring_channel.h): UCX's
// cross-memory attach is not used, as UCX requires memory invalidation for
// zero copy in peer mode.
//
// A process of this host is also watched through its pidfd, which names
// its death the moment it happens.
//
// All of it on the engine's owner (ucx_engine.h).
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "core/backends/ucx/ucx_engine.h"
#include "core/backends/ucx/ucx_peer_info.h"

namespace mw {

class UcxLinks;

class UcxLink : public std::enable_shared_from_this<UcxLink> {
 public:
  // What this member sends on; null until an accepted endpoint arrived.
  ucp_ep_h ep() const { return ep_; }
  bool failed() const { return failed_; }
  const std::string& failure() const { return failure_; }
  int pid() const { return pid_; }
  bool watched() const { return watched_; }
  // Its process exited (its pidfd said so): the failure is a death.
  bool exited() const { return exited_; }
  // Its endpoints are set up, or it failed: the world may start.
  bool settled() const { return failed_ || setups_ == 0; }

  // `on_failure` runs (deferred, on the engine's owner) when the link fails.
  uint64_t listen(std::function<void(const std::string& why)> on_failure);
  void unlisten(uint64_t id);

 private:
  friend class UcxLinks;
  UcxLinks* table_ = nullptr;
  ucp_ep_h ep_ = nullptr;
  ucp_ep_h inbound_ = nullptr;  // a member's link to itself: the accepted end
  uint64_t ep_id_ = 0;          // their UcxLinks::Endpoint ids
  uint64_t inbound_id_ = 0;
  // Setups still to come: the accepted endpoint (its hello), the
  // acknowledgement of the hello this member sent.
  int setups_ = 0;
  bool failed_ = false;
  std::string failure_;
  int pid_ = 0;
  int holders_ = 1;  // worlds that hold it (UcxLinks::share)
  UcxEngine::WatchId watch_ = 0;
  bool watched_ = false;
  bool exited_ = false;
  uint64_t next_listener_ = 1;
  std::map<uint64_t, std::function<void(const std::string&)>> listeners_;
};

class UcxLinks {
 public:
  // Listens on `bind_ip` (empty: every address) and publishes
  // `publish_ip` with the port it got, on the engine's owner.
  // Throws Error(Backend) when UCX cannot listen there.
  UcxLinks(UcxEngine& engine, const std::string& bind_ip, const std::string& publish_ip);
  ~UcxLinks();  // owner
  UcxLinks(const UcxLinks&) = delete;
  UcxLinks& operator=(const UcxLinks&) = delete;

  // Where peers connect (published in UcxPeerInfo).
  const std::string& listenIp() const { return listen_ip_; }
  uint16_t listenPort() const { return listen_port_; }

  // Before world `world_id` (this context's id) is published: ranks up to
  // and including `rank` will connect to this member for it.
  void expect(uint32_t world_id, int rank);
  // The world is gone or never formed: endpoints accepted for it and not
  // taken close, and nothing more is accepted for it.
  void forget(uint32_t world_id);

  // The link of `rank` (this member) in world `world_id` to `peer_rank`,
  // whose record is `peer`. Connects when rank <= peer_rank, else takes
  // the endpoint `peer_rank` connected with, now or once it arrives
  // (settled() says when). With `data` false the link only watches the
  // process (a world whose data goes over its paths, rails/ucx_failover.h).
  // Throws Error(Backend) when UCX cannot make the endpoint or the peer
  // process is gone.
  std::shared_ptr<UcxLink> link(uint32_t world_id, int rank, const UcxPeerInfo& peer, int peer_rank, bool data);
  // Another world holds `link` too: a shrink's or grow's successor keeps
  // the endpoints of the members that stay (ucx_world.h), so a resize
  // opens no connection between them.
  void share(const std::shared_ptr<UcxLink>& link);
  // A world is done with `link`: once no world holds it, its endpoints
  // are force-closed, completing whatever is still pending on them
  // (Cancelled).
  void release(const std::shared_ptr<UcxLink>& link);

 private:
  void startListening(const std::string& ip);
  friend class UcxLink;
  // What UCX gets back with an endpoint's error.
  struct ErrorArg {
    UcxLinks* links;
    uint64_t id;
  };
  // An endpoint and what it belongs to, by id.
  struct Endpoint {
    ucp_ep_h ep = nullptr;
    std::weak_ptr<UcxLink> link;  // empty: accepted, no world took it yet
    std::unique_ptr<ErrorArg> arg;
    bool awaiting_ack = false;  // made by this member; its hello not acknowledged yet
    bool named = false;         // accepted, and a hello named its world
  };
  using WorldRank = std::pair<uint32_t, int>;
  struct Expected {
    std::weak_ptr<UcxLink> link;  // the link waiting for it, if made yet
    uint64_t parked = 0;          // an accepted endpoint no link took yet
  };

  static void onConnectionRequest(ucp_conn_request_h request, void* arg);
  static ucs_status_t onHello(void* arg, const void* header, size_t header_length, void* data, size_t length,
                              const ucp_am_recv_param_t* param);
  static ucs_status_t onHelloAck(void* arg, const void* header, size_t header_length, void* data, size_t length,
                                 const ucp_am_recv_param_t* param);
  void setHandler(uint16_t id, ucp_am_recv_callback_t cb);
  static void onEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status);
  void accept(ucp_conn_request_h request);
  void claim(const WorldRank& key, ucp_ep_h ep);
  void take(UcxLink& link, uint64_t id);
  void connectTo(UcxLink& link, const UcxPeerInfo& peer, int rank);
  void endpointFailed(uint64_t id, ucs_status_t status);
  void closeEndpoint(uint64_t id);
  void fail(UcxLink& link, const std::string& why);
  void close(UcxLink& link);

  UcxEngine& engine_;
  ucp_listener_h listener_ = nullptr;
  std::string listen_ip_;
  uint16_t listen_port_ = 0;
  std::map<uint64_t, Endpoint> endpoints_;
  uint64_t next_endpoint_ = 1;
  std::map<WorldRank, Expected> expected_;
  // Deferred work holds it weakly: the links may be gone when it runs.
  std::shared_ptr<UcxLinks*> alive_;
};

}  // namespace mw
