// One channel per peer of a UCX world: everything that goes between this
// member and that peer in that world, whatever carries it. The world picks
// each peer's channel once, when it connects: TagChannel (one tagged
// endpoint), RailChannel (two or more rails: failover; rails/) or
// RingChannel (a peer of this host: the pair's rings and loans). World
// and operation code call only this interface and never branch on the
// path, as UCX's own layers call a transport through its uct_ep_ops.
//
// Everything here runs on the engine's owner.
#pragma once

#include <cstdint>
#include <string>

#include "core/backends/ucx/channels/ucx_transfer.h"
#include "core/delivery/delivery_outcome.h"

namespace mw {

class UcxEngine;

// What a channel needs of its world.
class UcxChannelHost {
 public:
  virtual UcxEngine& engine() = 0;
  // The world broke or is being destroyed: control words other than the
  // answers to what this member lent are no longer heard.
  virtual bool aborted() const = 0;
  // Something failed so that the world cannot go on; blames `peer`.
  virtual void transportFailed(int peer, const std::string& detail) = 0;
  // `peer` left the world: its goodbye came after everything it sent.
  virtual void goodbyeFrom(int peer) = 0;
  // The world broke at `peer`, blaming `blamed` (-1: unknown).
  virtual void brokenAt(int peer, int blamed) = 0;
  // `peer` formed a shrink into `epoch` that excluded this member, and
  // closes its endpoint next.
  virtual void excludedBy(int peer, uint64_t epoch) = 0;

 protected:
  ~UcxChannelHost() = default;
};

// How a delivery unit's outcome reads as UCX's (core/delivery).
inline ucs_status_t ucsStatus(DeliveryOutcome o) {
  return o == DeliveryOutcome::Delivered   ? UCS_OK
         : o == DeliveryOutcome::Truncated ? UCS_ERR_MESSAGE_TRUNCATED
                                           : UCS_ERR_CANCELED;
}

class UcxChannel {
 public:
  virtual ~UcxChannel() = default;

  // The world starts: the channel waits for the peer's control words.
  virtual void open() = 0;
  // Posts `t` (its owner, peer, direction, size and buffer filled in) on
  // `channel` (ucx_tag.h: point-to-point, control, or a collective's). A
  // message from the peer on a channel matches the oldest receive on it.
  // `t` may end inside the call.
  virtual void post(UcxTransfer& t, uint64_t channel) = 0;
  // Takes back a receive nothing matched yet: it ends (UCS_ERR_CANCELED),
  // possibly inside the call. One already receiving stays.
  virtual void cancel(UcxTransfer& t) = 0;
  // A message on `channel` waits for a receive.
  virtual bool arrived(uint64_t channel) const = 0;
  // What the peer was lent by `t` can no longer be read: it ends once
  // nothing holds its buffer.
  virtual void withdraw(UcxTransfer& t) = 0;
  // `t`'s operation outlives its world (ucx_op.h, orphan): withdrawn, and
  // nothing waits for it any more.
  virtual void abandon(UcxTransfer& t) = 0;

  // The peer reads nothing more (it left, or its process is gone): the
  // sends that wait end.
  virtual void peerGone() = 0;
  // After everything sent so far: tells the peer this member left.
  virtual void sayGoodbye() = 0;
  // Tells the peer the world broke here, blaming `blamed`, over an
  // endpoint that stays open (a broken world keeps it for a shrink). A
  // channel whose world closes its endpoints on a break says nothing.
  virtual void sayBroken(int blamed) { (void)blamed; }
  // Tells the peer that a shrink into `epoch` excluded it, before its
  // endpoint closes: flushed() turns true once the word left. A channel
  // whose world keeps nothing across a shrink says nothing (the peer hears
  // it through Redis).
  virtual void sayExcluded(uint64_t epoch) { (void)epoch; }
  // The goodbye and every send that waited have left.
  virtual bool flushed() const = 0;
  // The world broke: the peer's control words are no longer awaited.
  virtual void stopListening() = 0;
  // The world's endpoints close: what arrived and nobody will receive
  // is dropped, and what still waits ends. Nothing of the channel calls
  // back afterwards, except what UCX still holds.
  virtual void close() = 0;
};

}  // namespace mw
