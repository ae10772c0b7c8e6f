// Which direction between two members of one host takes a ring
// (ring_channel.h), settled before their world starts, so that a pair's
// messages never switch from UCX to a ring midway (their order would be
// lost). Once its endpoints are set up, each member sends every member of
// its host by the records a same-host hello on the tagged endpoint,
// offering the ring it writes (when same_host_path is on) and saying
// whether it reads the peer (its probe, ucx_world_channels.cc). A member takes
// the peer's ring when it reads the peer and a ring was offered, and
// writes its own when the peer said it reads this member. Nothing that was
// said can be taken back, so a ring this member cannot take after all
// fails the world's formation.
//
// On the engine's owner.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mw {

class UcxEngine;
namespace samehost {
class RingPair;
}

class RingHellos {
 public:
  explicit RingHellos(UcxEngine& engine);
  // What UCX still holds lives on until it is called back.
  ~RingHellos();
  RingHellos(const RingHellos&) = delete;
  RingHellos& operator=(const RingHellos&) = delete;

  // Says hello to `peer` over `ep`, with the tags of the hello channel
  // each way: offers `ring` (null: none), and says whether this member
  // reads the peer.
  void send(int peer, ucp_ep_h ep, uint64_t send_tag, uint64_t recv_tag, bool reads, const samehost::RingPair* ring);
  bool empty() const { return hellos_.empty(); }
  // Every peer's hello came, or `failed` says its link failed.
  bool in(const std::function<bool(int peer)>& failed) const;

  struct Taken {
    bool reads = false;  // this member took the peer's ring into `ring`
    bool lends = false;  // the peer reads this member: it takes this member's ring
  };
  // What `peer` (`who`, for messages) answered. With `reads` (this member
  // may read the peer) and a ring offered, attaches it to `ring` through
  // the peer's pidfd. Throws Error(Backend) when the hello is no hello or
  // the ring cannot be taken.
  Taken take(int peer, const std::string& who, bool reads, samehost::RingPair* ring, int peer_pidfd);

 private:
  struct Hello;
  UcxEngine& engine_;
  std::vector<std::unique_ptr<Hello>> hellos_;
};

}  // namespace mw
