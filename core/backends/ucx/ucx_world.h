// One world on UCX: tag-matched point-to-point and collectives over the
// context's one worker, started on the issuing thread and finished by
// whoever progresses the engine. No thread of its own.
//
// Faults: a failing link (UCX error, or the death of a process of this
// host, seen through its pidfd) breaks every world on it, naming the peer.
// A break cancels every pending receive, force-closes the world's own
// endpoints and completes every request once UCX has let go of its
// buffers.
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

#include "core/backends/ucx/rails/ucx_failover.h"
#include "core/backends/ucx/ucx_context.h"
#include "core/backends/ucx/ucx_send_pacing.h"
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
class UcxLink;
class UcxOp;
struct UcxPeerInfo;
struct UcxTransfer;

class UcxWorld : public WorldBackend {
 public:
  // Rendezvous over Redis under the incarnation's "u:" keys: publishes
  // where this member's context listens, connects to every higher rank and
  // waits for the lower ranks' endpoints (ucx_links.h). Throws Error
  // (Timeout, Store, Backend, Unsupported, WorldBroken), or MovedOn when
  // the incarnation ends while it waits (core/store/kv_store.h). Without
  // `path_failover` this member publishes no path workers, so every member
  // of the world runs it on one path.
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

  // For the operations (on the engine's owner).
  int rank() const { return rank_; }
  int size() const { return static_cast<int>(peers_.size()); }
  UcxEngine& engine() { return *ucx_->engine(); }
  ucp_worker_h worker() { return ucx_->engine()->worker(); }
  // The endpoint and tag of a message to `peer` on `channel`.
  ucp_ep_h endpoint(int peer) const;
  // Null for this member itself: a send to itself is received by its own
  // caller, who may wait for the send before posting the receive.
  const std::shared_ptr<SendPacing>& sendPacing(int peer) const { return peers_[static_cast<size_t>(peer)].pacing; }
  uint64_t sendTag(int peer, uint64_t channel) const;
  uint64_t recvTag(int peer, uint64_t channel) const;
  bool peerGone(int peer) const;  // its link failed: UCX will never finish with it
  // Null unless every member published two or more paths: then the data
  // goes through it (rails/ucx_failover.h) instead of tagged endpoints.
  UcxFailover* failover() const { return failover_.get(); }
  // It left the world (its goodbye came after everything it sent): what
  // it sent can still be received, nothing more will come from it, and
  // nothing sent to it will be received.
  bool departed(int peer) const { return departed_[static_cast<size_t>(peer)]; }
  // Every operation fails from now on (not only those needing a member
  // that left).
  bool aborted() const { return aborted_; }
  OpResult failure() const;
  // An operation ended: delivered in its lane's order; `op` is deleted.
  void finished(UcxOp* op, OpResult result);
  // A transfer failed in a way that says the world cannot go on. The
  // break follows (deferred, and for a live peer of this host after
  // kPeerNoticeWait); meanwhile the world counts as broken for what is
  // issued, and failure() names this detail.
  void transportFailed(int peer, const std::string& detail, BreakCause cause = BreakCause::Transport,
                       Clock::time_point evidence = Clock::now());
  // A transfer `t` that ended well moved `bytes` (mw_bytes_*_total); those
  // on paths are counted per rail by UcxFailover.
  void transferred(metrics::DataPath path, bool recv, size_t bytes) const noexcept {
    if (!metrics_ || failover_) return;
    if (recv) metrics_->received(path, bytes);
    else metrics_->sent(path, bytes);
  }

  // The same-host path (ucx_same_host.h, ucx_same_host.cc, ucx_rings.cc).
  // A send of `bytes` to `peer` is lent rather than sent.
  bool lendsTo(int peer, size_t bytes) const;
  // `peer` may lend to this member: its messages may come as descriptors.
  bool readsFrom(int peer) const { return peers_[static_cast<size_t>(peer)].reads; }
  // The rings `peer`'s messages come through (`recv`) or this member's go
  // through to it; null when that direction takes UCX.
  samehost::RingPair* ring(int peer, bool recv) const;
  // A marker of `pacing` (ucx_send_pacing.h) whose caller's send does not
  // wait for it: the id its message carries through a ring, and the peer
  // answers (kMatched) once a receive took it.
  uint32_t copiedMarker(int peer, std::shared_ptr<SendPacing> pacing);
  // Registers loan `t` to its peer; the id its return will name.
  uint64_t lend(UcxTransfer& t);
  void unlend(uint64_t id);
  // This member has read loan `id` of `peer`: tells it.
  void returnLoan(int peer, uint64_t id);
  // The pid of `peer`'s process and its pidfd (-1: no longer watched).
  int peerPid(int peer) const;
  int peerPidfd(int peer) const;

 private:
  struct Peer {
    std::shared_ptr<UcxLink> link;
    uint32_t world_id = 0;  // this world's id at the peer
    uint64_t listener = 0;
    bool listening = false;
    std::shared_ptr<SendPacing> pacing;  // ucx_send_pacing.h
    // A member of this host by the records: the two exchange a same-host
    // hello before the world starts, whatever their settings.
    bool same_host_hello = false;
    bool reads = false;  // this member reads the peer: it took the peer's ring
    bool lends = false;  // the peer reads this member: it took this member's ring
    std::string same_host_refusal;  // why a peer of this host is not read
    std::unique_ptr<samehost::RingPair> ring;  // while reads or lends
    UcxEngine::SourceId ring_source = 0;       // the ring's polling, 0: none
    bool ring_failed = false;                  // its failure was reported
  };
  struct Control;
  struct SameHostHello;

  UcxWorld(std::shared_ptr<UcxContext> ucx, int rank, uint32_t world_id);
  // Owner: the halves of start(), submit() and stop() that touch UCX.
  void listen();
  void begin(const OpDesc& op, const std::shared_ptr<Request>& r);
  void close();
  void postControl(int peer);
  void armControl(Control& c);
  void startFailover();
  void onControl(Control& c, ucs_status_t status);
  // A loan's return or a marker's match from `peer`; false for any other word.
  bool takeWord(int peer, uint64_t word);
  void onGoodbye(int peer);
  // Same-host path: whether this member reads `peer` (connect); which
  // peers it reads, for `multiworld status`, and the refusals, in the log
  // (start).
  void probeSameHost(int peer, const UcxPeerInfo& self, const UcxPeerInfo& info, bool on_paths);
  void reportSameHost();
  // The rings (ucx_rings.cc): before start, each pair of this host offers
  // its ring and says whether it reads the other; takeRings() attaches
  // what was offered and readable (throws Error(Backend)).
  void sendSameHostHellos();
  bool sameHostHellosIn() const;
  void takeRings();
  bool pollRing(int peer);
  bool ringsFlushed() const;  // every goodbye and waiting send is in its ring
  void dropRings();           // every ring gives up and goes
  void onMarkerMatched(int peer, uint32_t id);
  void endCopiedMarkers();  // their matches will never be heard of: counted now
  void abandonHellos();
  void onLoanReturned(int peer, uint64_t id);
  void sendControlWord(int peer, uint64_t word);
  void peerDeparted(int peer);
  void abortAll();
  void onLinkFailed(int peer, const std::string& why);
  // Breaks the world blaming `peer`, or, where the peer's process lives on
  // this host, first waits kPeerNoticeWait for the notice of a break it saw.
  void breakBlaming(int peer, const std::string& detail, BreakCause cause, Clock::time_point evidence);
  void sendGoodbyes();
  void drainArrivals();
  void forceCloseLinks();
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
  std::shared_ptr<UcxFailover> failover_;
  World* world_ = nullptr;
  std::shared_ptr<const metrics::WorldMetrics> metrics_;  // null: metrics off

  // On the engine's owner.
  OrderedCompletions order_;
  std::map<Request*, UcxOp*> pending_;
  std::vector<std::unique_ptr<Control>> control_;
  std::vector<std::unique_ptr<SameHostHello>> hellos_;
  bool same_host_ = false;
  size_t same_host_min_bytes_ = 0;
  std::unordered_map<uint64_t, UcxTransfer*> loans_;  // lent sends by id
  std::unordered_map<uint32_t, std::pair<int, std::shared_ptr<SendPacing>>> copied_markers_;  // id: peer, pacing
  uint32_t next_marker_ = 0;
  uint64_t next_loan_ = 1;
  uint64_t collectives_ = 0;  // issued so far: the next one's sequence number
  std::vector<bool> departed_;
  std::chrono::milliseconds op_timeout_{0};
  UcxEngine::TimerId op_timer_ = 0;  // 0: none armed
  UcxEngine::TimerId blame_timer_ = 0;  // onLinkFailed's wait for a live peer's notice
  bool departing_ = false;  // abort() from a departure: fail only what needs the member
  std::string failing_;     // transportFailed()'s first detail; "" while none
  bool aborted_ = false;
  bool stopped_ = false;
  int flushing_ = 0;  // goodbyes and flushes on their way
};

}  // namespace mw
