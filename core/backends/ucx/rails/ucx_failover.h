// Delivery that survives a cut link: the data plane of a UCX world whose
// members each publish two or more paths (data_addresses).
//
// Path i of a member pairs with path i of each peer (rail i), through the
// context's path worker i, which has that path's device only. Messages go
// on the first path that is up, as active messages carrying a per-pair
// sequence number (core/delivery/send_window.h); the receiver matches
// them to receives by channel in sequence order, as tag matching would
// (receive_order.h), and acknowledges what it has (cumulatively, over the
// connection the message came on). A send completes once the peer has
// acknowledged it: until then the caller's buffer is what a
// retransmission reads.
//
// A path is in doubt when UCX reports an error on it, or when a message
// sent on it goes unacknowledged for path_timeout_ms. Then, unless the
// peer's process is gone (a member fault: its world breaks as before),
// the path is marked down (MW_EVENT_PATH_DOWN), traffic moves to the next
// path that is up, and every message not yet acknowledged is sent again, in
// order. The receiver drops what it already has and holds what comes
// early, so a message is delivered exactly once, in order. Every other
// peer reached over the same local path is in doubt too (a failed NIC or
// cable fails them all; in a ring the next hop must not wait for a detection
// of its own): it is probed over its endpoint at once and sent to over
// another path until the probe is answered; unanswered for path_timeout_ms
// it is down. The peer learns of it from the traffic: when what it receives
// leaves the path it sends on for a worse one, it puts that path in doubt
// too (no message says so; the next step of a collective in the other
// direction must not wait for a timeout of its own). A path that goes down has its TCP
// connections shut down before its endpoint closes (ucx_path_sockets.h:
// else UCX 1.13 may hold the engine until the link is back). A path is
// probed while down (and before its first use): a plain TCP connection to
// the peer's probe port first, then a UCX probe on a new endpoint (UCX
// connects endpoints with a blocking connect(), see ucx_path_probe.h); once
// that is answered the path is up (MW_EVENT_PATH_UP after an outage) and,
// if preferred, carries new traffic. When every
// path to a peer has been silent for heartbeat_timeout_ms the member
// counts as unreachable and the world breaks, blaming that peer, or this
// member itself when it reaches no peer of its context at all.
//
// Eager protocol only: an arrival is whole, so "delivered" never has a
// message half in. Everything runs on the engine's owner.
#pragma once

#include <ucp/api/ucp.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/backends/ucx/rails/ucx_path_probe.h"
#include "core/backends/ucx/rails/ucx_path_state.h"
#include "core/backends/ucx/rails/ucx_path_wire.h"
#include "core/backends/ucx/ucx_engine.h"
#include "core/backends/ucx/ucx_peer_info.h"
#include "core/deadline.h"
#include "core/delivery/receive_order.h"
#include "core/delivery/send_window.h"
#include "core/metrics/world_metrics.h"
#include "core/path_change.h"

namespace mw {

class UcxFailover : public std::enable_shared_from_this<UcxFailover> {
 public:
  struct Hooks {
    // A path to `peer` went down or came back; `detail` names it.
    std::function<void(int peer, bool up, const PathChange& path, const std::string& detail)> path_changed;
    // Every path to `peer` stayed silent past the member timeout; `peer`
    // is this member's own rank when it reaches no peer of its context at
    // all (it is the one cut off).
    std::function<void(int peer, const std::string& detail)> unreachable;
    // True when `peer`'s process is known to have exited (its world then
    // breaks through the link that watches it).
    std::function<bool(int peer)> gone;
  };
  // Sequence numbers, acknowledgements and order are the delivery units'
  // (core/delivery); their outcomes map to UCX's codes by ucsStatus().
  using SendDone = SendWindow::Done;
  using RecvDone = ReceiveOrder::Done;
  static ucs_status_t ucsStatus(DeliveryOutcome o) {
    return o == DeliveryOutcome::Delivered   ? UCS_OK
           : o == DeliveryOutcome::Truncated ? UCS_ERR_MESSAGE_TRUNCATED
                                             : UCS_ERR_CANCELED;
  }

  // Registers `world_id` with `router` at once: a peer may send before
  // this member has read every record.
  UcxFailover(UcxEngine& engine, UcxPathRouter& router, uint32_t world_id, int rank, int size,
              std::chrono::milliseconds path_timeout, std::chrono::milliseconds member_timeout);
  ~UcxFailover();
  UcxFailover(const UcxFailover&) = delete;
  UcxFailover& operator=(const UcxFailover&) = delete;

  // `peer`'s id for the world and its paths, which start down and are
  // probed at once (ucx_path_probe.h).
  void connect(int peer, uint32_t world_id, const std::vector<UcxPath>& mine, const std::vector<UcxPath>& theirs);
  void start(Hooks hooks);
  // Counts the bytes each rail carries there (mw_bytes_*_total); null: not.
  void countInto(std::shared_ptr<const metrics::WorldMetrics> m) { metrics_ = std::move(m); }

  // `done` runs once the peer acknowledged the message (Delivered) or it
  // was given up (GivenUp); possibly inside the call.
  void send(int peer, uint64_t channel, const void* buffer, size_t bytes, SendDone done);
  // `done` gets the sender's size, as a tag receive does; possibly inside
  // the call, then 0 is returned, else an id for cancelRecv.
  uint64_t recv(int peer, uint64_t channel, void* buffer, size_t bytes, RecvDone done);
  // A receive of `peer` nothing matched yet: removed, `done` runs (GivenUp).
  bool cancelRecv(int peer, uint64_t id);
  // A message from `peer` on `channel` waits for a receive.
  bool arrived(int peer, uint64_t channel) const;
  // `peer` left the world or its process is gone: its endpoints close, and
  // what was sent to it and not acknowledged ends (GivenUp).
  void peerLeft(int peer);
  // What arrived and waits is dropped.
  void dropArrivals();
  // Endpoints force-closed; every send and receive still pending ends
  // (GivenUp). Nothing is called back afterwards.
  void close();

  // From the router (inside UCX progress).
  ucs_status_t onData(const pathwire::Header& h, void* data, size_t length, const ucp_am_recv_param_t& param,
                      ucp_worker_h worker, size_t path);
  void onAck(const pathwire::Header& h, size_t path);  // it came over `path`
  void onProbe(const pathwire::Header& h, const ucp_am_recv_param_t& param);
  void onProbeAck(const pathwire::Header& h);
  // Path `index` failed toward a peer of this context (maybe of another
  // world): each peer still using it is probed, and sent to over another
  // path until it answers; unanswered for path_timeout_ms it is down.
  void suspectPath(size_t index);
  // The peers still in the world with paths, and whether a path that is up
  // reaches at least one of them (UcxPathRouter::cutOff).
  struct Reach {
    size_t peers = 0;
    bool reachable = false;
  };
  Reach reach() const;

 private:
  struct Attempt;
  struct EpGuard;
  struct Path {
    size_t index = 0;
    std::string local_ip, peer_ip;
    uint16_t peer_listen_port = 0;  // its path worker's listener
    uint16_t peer_probe_port = 0;
    ucp_ep_h ep = nullptr;
    uint64_t ep_serial = 0;
    // Every path starts down (Seeking), unannounced, until a probe answers:
    // it gets its endpoint only once it is known to work
    // (ucx_path_probe.h). Changed only through moveTo().
    PathState state = PathState::Seeking;
    bool announced = false;  // MW_EVENT_PATH_DOWN went out for this outage
    // While down: when its silence began (the member timeout counts from
    // the earliest of these, see onTimer).
    Clock::time_point silent_since;
    std::unique_ptr<UcxReachProbe> reach;  // while Seeking
    bool proven = false;                   // an acknowledgement came over its endpoint
    ucp_ep_h probe_ep = nullptr;           // while Answering
    uint64_t probe_serial = 0;
    uint64_t probe_nonce = 0;
    unsigned probes = 0;  // timer ticks since it went down
    // While InDoubt: since when, and the nonce its probe's answer carries.
    Clock::time_point suspect_since;
    uint64_t suspect_nonce = 0;
  };
  struct Peer {
    int rank = 0;
    uint32_t world_id = 0;  // at the peer
    std::vector<Path> paths;
    size_t current = 0;
    bool connected = false;
    bool left = false;  // departed or gone: nothing more goes to it
    bool reported_unreachable = false;
    SendWindow sending;
    ReceiveOrder receiving{&releaseArrival};
    size_t arrival_path = 0;  // what the last message came over
    // The last new acknowledgement or message from it, over any path.
    Clock::time_point heard;
  };

  // Sending (ucx_failover.cc).
  void transmit(Peer& p, const SendWindow::MessagePtr& m);
  void attemptEnded(int peer, uint64_t ep_serial, ucs_status_t status, SendWindow::Message& m);
  ucp_ep_h openEndpoint(Peer& p, size_t path, uint64_t& serial);
  void closeEndpoint(ucp_ep_h& ep, uint64_t serial);
  void onEndpointError(int peer, uint64_t serial, ucs_status_t status);
  // `silent_since`: when the silence that revealed the fault began.
  void pathFault(int peer, size_t path, const std::string& why, Clock::time_point silent_since);
  // The one place a path's state changes (ucx_path_state.h); false, logged,
  // for a transition the state machine does not allow.
  bool moveTo(const Peer& p, Path& path, PathState next);
  void suspect(Peer& p, Path& path);
  // The peer's messages moved from `from` to a less preferred path.
  void peerMoved(int peer, size_t from);
  // The first path that is up and not suspect, else the first that is up;
  // false: every path is down.
  bool chooseCurrent(Peer& p);
  // chooseCurrent, and when the current path moved, what is unacknowledged
  // goes again on the new one.
  void chooseAgain(Peer& p);
  void retransmit(Peer& p);
  PathChange pathChange(const Peer& p, const Path& path) const;
  void probe(Peer& p, Path& path);
  void startReach(Peer& p, Path& path);
  void onReach(int peer, size_t path, bool reached);
  void probeUcx(Peer& p, Path& path);
  void sendProbe(const Peer& p, const Path& path, ucp_ep_h ep, uint64_t nonce);
  void pathUp(int peer, size_t path, uint64_t nonce);
  void armTimer();
  void wakeAt(Clock::time_point when);
  Clock::time_point nextDeadline() const;
  std::chrono::milliseconds ackAllowance(const Peer& p) const;
  void onTimer();
  std::string pathName(const Peer& p, const Path& path) const;

  // Receiving (ucx_failover_recv.cc).
  void acknowledge(const pathwire::Header& h, ucp_ep_h reply, const Peer& p);
  // Gives UCX back an arrival it let ReceiveOrder hold.
  static void releaseArrival(void* worker, const char* data, size_t length);

  UcxEngine& engine_;
  UcxPathRouter& router_;
  const uint32_t world_id_;
  const int rank_;
  const std::chrono::milliseconds path_timeout_;
  const std::chrono::milliseconds member_timeout_;
  Hooks hooks_;
  std::shared_ptr<const metrics::WorldMetrics> metrics_;
  std::vector<Peer> peers_;
  uint64_t next_serial_ = 1;
  std::map<uint64_t, std::unique_ptr<EpGuard>> guards_;  // by endpoint serial
  UcxEngine::TimerId timer_ = 0;
  Clock::time_point next_tick_;  // probes and the member timeout go by ticks
  bool closed_ = false;
};

}  // namespace mw
