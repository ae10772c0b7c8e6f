// One world on UCX: point-to-point and collectives over one channel per
// peer (channels/ucx_channel.h), chosen when the world connects, started
// on the issuing thread and finished by whoever progresses the engine. No
// thread of its own.
//
// Faults: a failing link (UCX error, or the death of a process of this
// host, seen through its pidfd) breaks every world on it, naming the peer.
// A break cancels every pending receive, closes the world's channels and
// endpoints and completes every request once UCX has let go of its
// buffers.
//
// A break (not a destroy) keeps the endpoints to the members that live on
// and hold nothing of the world's in flight, and tells each of them over
// its endpoint (a control word after everything sent, naming whom it
// blames); the rest close at once. So a shrink after a break opens no
// connection between its survivors: its successor world takes over their
// endpoints (UcxLinks::share) and says a hello over each, after which
// nothing of the old world comes from that member; the old world then
// retires: its channels close, what still arrived for it is dropped and
// its world id is released. Worlds on rails keep nothing: their successors
// connect afresh.
//
// A member that leaves (mw_world_destroy) sends each peer a goodbye after
// everything else it sent. The world breaks there, but the operations in
// flight go on with what already arrived: only those that need more from
// the member that left, or send to it, fail. So a barrier followed by
// destroy ends the barrier on every member, as it does on Gloo, where the
// others see the connection close once what was sent has arrived.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/backends/ucx/channels/ring_hello.h"
#include "core/backends/ucx/channels/ucx_channel.h"
#include "core/backends/ucx/ucx_context.h"
#include "core/backends/ucx/ucx_world_state.h"
#include "core/break_cause.h"
#include "core/deadline.h"
#include "core/metrics/world_metrics.h"
#include "core/ordered_completions.h"
#include "core/same_host/ring_pair.h"
#include "core/store/incarnation.h"
#include "core/world_backend.h"
#include "core/world_spec.h"

namespace mw {

class RedisPool;
class UcxFailover;
class UcxLink;
class UcxOp;
struct ResizePlan;
struct UcxPeerInfo;

class UcxWorld : public WorldBackend, private UcxChannelHost {
 public:
  // Rendezvous over Redis under the incarnation's "u:" keys: publishes
  // where this member's context listens, connects to every higher rank and
  // waits for the lower ranks' endpoints (ucx_links.h), then picks each
  // peer's channel (channels/ucx_channel.h). Throws Error (Timeout, Store,
  // Backend, Unsupported, WorldBroken), or MovedOn when the incarnation
  // ends while it waits (core/store/kv_store.h). Without `path_failover`
  // this member publishes no path workers, so every member of the world
  // runs it on one path.
  static std::unique_ptr<UcxWorld> connect(std::shared_ptr<UcxContext> ucx, RedisPool& pool,
                                           const Incarnation& inc, int rank, int size,
                                           const WorldSettings& settings, Deadline deadline);
  ~UcxWorld() override;

  void start(World& world) override;
  void submit(const OpDesc& op, const std::shared_ptr<Request>& r) override;
  bool cancel(Request& r) noexcept override;
  bool runsWhenBroken(const OpDesc& op) override;
  void abort() noexcept override;
  void stop() noexcept override;
  std::shared_ptr<ProgressDriver> driver() override { return ucx_->engine(); }
  std::unique_ptr<WorldBackend> shrink(const ResizePlan& plan, BackendServices& services, const Incarnation& next,
                                       const WorldSpec& spec, const WorldSettings& settings,
                                       Deadline deadline) override;
  std::unique_ptr<WorldBackend> grow(const ResizePlan& plan, BackendServices& services, const Incarnation& next,
                                     const WorldSpec& spec, const WorldSettings& settings, Deadline deadline) override;
  void retire(WorldBackend* successor) noexcept override;
  void watchMembers(std::function<void(int peer, const std::string& why)> lost) override;
  void unwatchMembers() noexcept override;

  // The successor of a shrink or grow (`plan`) under `next`, keeping the
  // endpoints of the members that stay where both ends can (shrink() and
  // grow(); also an NCCL world's control world). Null on rails, which
  // keep nothing. Throws as connect() does.
  std::unique_ptr<UcxWorld> resized(const ResizePlan& plan, RedisPool& pool, const Incarnation& next,
                                    const WorldSettings& settings, Deadline deadline);

  // For the operations (on the engine's owner).
  int rank() const { return rank_; }
  int size() const { return static_cast<int>(peers_.size()); }
  UcxEngine& engine() override { return *ucx_->engine(); }
  // What carries everything between this member and `peer`.
  UcxChannel& channel(int peer) const { return *peers_[static_cast<size_t>(peer)].channel; }
  bool peerGone(int peer) const;  // its link failed: UCX will never finish with it
  // It left the world (its goodbye came after everything it sent): what
  // it sent can still be received, nothing more will come from it, and
  // nothing sent to it will be received.
  bool departed(int peer) const { return departed_[static_cast<size_t>(peer)]; }
  // Every operation fails from now on (not only those needing a member
  // that left).
  bool aborted() const override;
  // What operations fail with now: the world's failure, or, while the
  // break is on its way, the transport failure that started it.
  OpResult failure() const;
  // An operation ended: delivered in its lane's order; `op` is deleted.
  void finished(UcxOp* op, OpResult result);
  // A transfer failed in a way that says the world cannot go on. The
  // break follows (deferred, and for a live peer of this host after
  // kPeerNoticeWait); meanwhile the world counts as broken for what is
  // issued, and failure() names this detail.
  void transportFailed(int peer, const std::string& detail) override;
  void transportFailed(int peer, const std::string& detail, BreakCause cause, Clock::time_point evidence);
  // A transfer `t` that ended well moved `bytes` (mw_bytes_*_total); those
  // on rails are counted per rail by UcxFailover.
  void transferred(metrics::DataPath path, bool recv, size_t bytes) const noexcept {
    if (!metrics_ || failover_) return;
    if (recv) metrics_->received(path, bytes);
    else metrics_->sent(path, bytes);
  }

 private:
  struct Peer {
    std::shared_ptr<UcxLink> link;
    uint32_t world_id = 0;  // this world's id at the peer
    uint64_t listener = 0;
    bool listening = false;
    std::unique_ptr<UcxChannel> channel;
    // Formation (ucx_world_channels.cc): a member of this host by the records
    // says hello before the world starts, whatever its settings.
    bool same_host_hello = false;
    bool reads = false;  // this member may read the peer, then does: it took the peer's ring
    std::string same_host_refusal;  // why a peer of this host is not read
    std::unique_ptr<samehost::RingPair> ring;  // the one offered, until its channel takes it
    bool on_host = false;   // a member of this host by the records
    bool kept = false;      // its link came from the world this one resized
    bool released = false;  // this world let go of its link
  };
  // What a resize's successor takes from the world it resizes: by new
  // rank, the link it may keep (null: a newcomer, or a member whose link
  // the old world closed).
  struct Inherited {
    std::vector<std::shared_ptr<UcxLink>> links;
    std::vector<bool> old_member;
  };

  UcxWorld(std::shared_ptr<UcxContext> ucx, int rank, uint32_t world_id);
  // connect(), and a resize's successor with `inherited` links.
  static std::unique_ptr<UcxWorld> form(std::shared_ptr<UcxContext> ucx, RedisPool& pool, const Incarnation& inc,
                                        int rank, int size, const WorldSettings& settings, Deadline deadline,
                                        const Inherited* inherited);
  // The lifecycle's one way to change (ucx_world_state.h); false, logged,
  // for a move the table does not allow.
  bool moveTo(UcxWorldState next);
  // Owner: the halves of start(), submit() and stop() that touch UCX.
  void listen();
  void begin(const OpDesc& op, const std::shared_ptr<Request>& r);
  void close();
  // What close() and retire() share: channels and links go (but those a
  // successor shares), then the world's id.
  void letGo();
  void startFailover();
  // Formation: whether this member reads `peer` (connect); the hellos
  // that settle which directions take rings, and each peer's channel
  // (ucx_world_channels.cc). chooseChannels() throws Error(Backend).
  void probeSameHost(int peer, const UcxPeerInfo& self, const UcxPeerInfo& info, bool on_paths);
  void sendSameHostHellos();
  bool sameHostHellosIn() const;
  void chooseChannels();
  // Which peers it reads, for `multiworld status`, and the refusals, in
  // the log (start).
  void reportSameHost();
  void goodbyeFrom(int peer) override;
  void brokenAt(int peer, int blamed) override;
  void excludedBy(int peer, uint64_t epoch) override;
  void peerDeparted(int peer);
  void abortAll();
  void onLinkFailed(int peer, const std::string& why);
  // Breaks the world blaming `peer`, or, where the peer's process lives on
  // this host, first waits kPeerNoticeWait for the notice of a break it saw.
  void breakBlaming(int peer, const std::string& detail, BreakCause cause, Clock::time_point evidence);
  bool flushed() const;  // every goodbye and waiting send has left
  // Channels and endpoints close; what arrived and nobody took is dropped.
  // `park` (a break): the links of members that live on and hold nothing
  // in flight stay, each told of the break, for a shrink to keep.
  void closeChannels(bool park = false);
  // Nothing of `peer`'s is in flight here, and its link is up.
  bool keepable(int peer) const;
  void releaseLink(Peer& p);
  void abandon(UcxOp* op);
  void armOpTimer(Clock::time_point when);
  void onOpTimer();
  void abandonWhatOnlyGonePeersHold();
  std::vector<std::pair<Request*, UcxOp*>> pendingNow() const;
  bool stillPending(Request* r, UcxOp* op) const;

  const std::shared_ptr<UcxContext> ucx_;
  const int rank_;
  const uint32_t world_id_;  // ours: in the tags of messages to us
  std::vector<Peer> peers_;
  std::shared_ptr<UcxFailover> failover_;  // when the world runs on rails
  World* world_ = nullptr;
  std::shared_ptr<const metrics::WorldMetrics> metrics_;  // null: metrics off

  // On the engine's owner.
  UcxWorldState state_ = UcxWorldState::Connecting;
  OrderedCompletions order_;
  std::map<Request*, UcxOp*> pending_;
  std::unique_ptr<RingHellos> hellos_;  // while connecting
  bool same_host_ = false;
  size_t same_host_min_bytes_ = 0;
  uint64_t collectives_ = 0;  // issued so far: the next one's sequence number
  std::vector<bool> departed_;
  std::chrono::milliseconds op_timeout_{0};
  UcxEngine::TimerId op_timer_ = 0;  // 0: none armed
  UcxEngine::TimerId blame_timer_ = 0;  // onLinkFailed's wait for a live peer's notice
  bool departing_ = false;  // abort() from a departure: fail only what needs the member
  bool parked_ = false;     // a break kept links for a shrink
  // The old ranks the last shrink of this world (resized()) leaves out,
  // and the epoch it forms: told so at retire(), over their endpoints.
  std::vector<int> excluded_;
  uint64_t excluded_into_ = 0;
  // watchMembers(): a listener on each link, while a resize runs.
  std::vector<std::pair<std::shared_ptr<UcxLink>, uint64_t>> member_watch_;
  std::string failing_;     // Failing: the transport failure that started it
};

}  // namespace mw
