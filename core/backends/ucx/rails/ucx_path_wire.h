// What the path workers of two contexts say to each other (active
// messages), and the table that hands what arrives to its world.
//
// Every message names the world by the id its receiver gave it and by the
// id its sender gave it, so a reply needs no lookup, also before the
// receiver's rendezvous has read the sender's record.
#pragma once

#include <ucp/api/ucp.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

namespace mw {

class UcxEngine;
class UcxFailover;

namespace pathwire {

constexpr uint16_t kData = 1;      // a message, with its sequence number
constexpr uint16_t kAck = 2;       // every message up to `seq` was delivered
constexpr uint16_t kProbe = 3;     // does this path work again?
constexpr uint16_t kProbeAck = 4;  // it does

struct Header {
  uint32_t to_world = 0;    // the world's id at the receiver
  uint32_t from_world = 0;  // the world's id at the sender
  uint32_t from_rank = 0;
  uint32_t path = 0;        // probes: the path it tests
  uint64_t channel = 0;     // data: the channel (ucx_tag.h)
  uint64_t seq = 0;         // data: its number; ack: the last delivered; probe: a nonce
};

// Acks, probes and probe answers are a header alone (sendHeader in
// ucx_endpoint.h). A message lost on the way costs a retry or a
// retransmission, nothing more.

}  // namespace pathwire

// On the engine's owner, like everything the handlers do.
class UcxPathRouter {
 public:
  // Sets the handlers on every path worker of `engine`. Throws
  // Error(Backend) when UCX refuses.
  explicit UcxPathRouter(UcxEngine& engine);

  void add(uint32_t world_id, UcxFailover* world) { worlds_[world_id] = world; }
  void remove(uint32_t world_id) { worlds_.erase(world_id); }
  // A path of this context failed toward some peer: the local end of that
  // path (a NIC, a cable) may be what failed, so every world checks its
  // other peers over it (UcxFailover::suspectPath).
  void pathFailed(size_t path);
  // Whether this context reaches none of its peers over any path, in any
  // world, while it has at least two: then this member is the one cut
  // off, not each of its peers.
  bool cutOff() const;
  // On a world's tick while a path is down: remembers when cutOff() was
  // last true (looked at most once per kReachNoteEvery).
  void noteReach(std::chrono::steady_clock::time_point now);
  // Whether this context was cut off at some moment since `since` (as the
  // ticks saw it), or is now. A silence that began while this member was
  // cut off is its own fault even if the cut ended a moment ago and other
  // peers answer again: a world formed during the cut has had no path up
  // at all, and its last tick comes after the cut is over.
  bool cutOffSince(std::chrono::steady_clock::time_point since) const;

 private:
  template <uint16_t Id>
  static ucs_status_t onMessage(void* arg, const void* header, size_t header_length, void* data, size_t length,
                                const ucp_am_recv_param_t* param);

  struct HandlerArg {
    UcxPathRouter* router;
    ucp_worker_h worker;  // the path worker it serves
    size_t path;
  };
  static constexpr std::chrono::milliseconds kReachNoteEvery{10};
  std::vector<std::unique_ptr<HandlerArg>> args_;
  std::map<uint32_t, UcxFailover*> worlds_;
  std::chrono::steady_clock::time_point reach_noted_{};
  std::chrono::steady_clock::time_point last_cut_off_{};  // epoch: never seen
};

}  // namespace mw
