// The channel to a peer of this host (same_host_path): every message goes
// through the pair's rings (core/same_host/ring_pair.h) instead of TCP on
// loopback, and one of same_host_min_bytes or more (or larger than the
// ring takes) is lent, not copied in: a descriptor (core/same_host/cma.h)
// goes through the ring in the message's place, so order and goodbyes stay
// the ring's; the receiver copies the bytes out of the sender with
// process_vm_readv and answers with a control word (in its own ring to the
// sender when it writes one, else on the control channel); the send
// completes on that answer. Sends are paced as tagged ones are
// (ucx_send_pacing.h): the receiver answers a copied marker's message once
// a receive took it; a marker the caller waits for is lent, and its return
// says the same.
//
// Which direction takes a ring is settled before the world starts
// (ring_hello.h); a direction the kernel refuses stays on the tagged
// endpoint underneath, which also carries the control words when this
// member writes no ring to the peer. A ring the peer writes nonsense into,
// or a loan that cannot be read, breaks the world, naming the peer.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>

#include "core/backends/ucx/channels/tag_channel.h"
#include "core/backends/ucx/ucx_engine.h"
#include "core/same_host/cma.h"
#include "core/same_host/ring_pair.h"

namespace mw {

// A send lent to the peer, owned by its transfer. It ends once its
// descriptor is in the ring and the receiver returned it or the sender
// gave it up (its world broke, the receiver left or is gone).
struct UcxLoan {
  samehost::CmaDescriptor descriptor;
  samehost::CmaTicket ticket;
  ucs_status_t status = UCS_OK;  // of the descriptor's send
  bool in_ring = false;    // the descriptor waits for room in the ring
  bool returned = false;   // the receiver read it
  bool given_up = false;   // the ticket is withdrawn: the receiver can no longer read it
  bool ended = false;
};

// Room for a descriptor where a ring receive's own buffer is smaller.
struct UcxDescriptorRoom {
  samehost::CmaDescriptor descriptor;
};

class RingChannel : public UcxChannel {
 public:
  // `tag` carries what no ring carries. `ring` is read when `reads` (it
  // took the peer's ring) and written when `lends` (the peer took this
  // member's); it is polled from now on, and what arrives waits for its
  // receive until the world starts. Messages of `min_bytes` or more are
  // lent.
  RingChannel(UcxChannelHost& host, std::unique_ptr<TagChannel> tag, std::unique_ptr<samehost::RingPair> ring,
              bool reads, bool lends, int peer, size_t min_bytes);
  ~RingChannel() override;

  void open() override;
  void post(UcxTransfer& t, uint64_t channel) override;
  void cancel(UcxTransfer& t) override;
  bool arrived(uint64_t channel) const override;
  void withdraw(UcxTransfer& t) override;
  void abandon(UcxTransfer& t) override;
  void peerGone() override;
  void sayGoodbye() override;
  // On the tagged endpoint, which a broken world keeps; the rings go.
  void sayBroken(int blamed) override { tag_->sayBroken(blamed); }
  void sayExcluded(uint64_t epoch) override { tag_->sayExcluded(epoch); }
  bool flushed() const override;
  void stopListening() override { tag_->stopListening(); }
  void close() override;

 private:
  bool poll();  // the engine's source
  void sendWord(uint64_t word);
  // A loan's return or a marker's match; false for any other word.
  bool takeWord(uint64_t word);
  bool lendsTo(size_t bytes) const { return lends_ && bytes >= min_bytes_; }
  // Receiving: a descriptor of `length` bytes came for `t`.
  void postRecv(UcxTransfer& t, uint64_t channel);
  void readLoan(UcxTransfer& t, size_t length);
  // Sending.
  void postSend(UcxTransfer& t, uint64_t channel);
  void postLoan(UcxTransfer& t, uint64_t channel);
  void loanReturned(uint64_t id);
  // Withdraws `t`'s loan: the peer can no longer read it, and it ends
  // (Cancelled unless its descriptor's send failed) once the ring let go
  // of the descriptor; a loan already returned just settles.
  void giveUpLoan(UcxTransfer& t);
  void settleLoan(UcxTransfer& t);
  // A marker whose sender does not wait for it: the id its message
  // carries; the peer answers it (kMatched) once a receive took it.
  uint32_t copiedMarker();
  void markerMatched(uint32_t id);
  static void ended(UcxTransfer& t, ucs_status_t status, size_t length);
  std::string who() const;

  UcxChannelHost& host_;
  UcxEngine& engine_;
  const std::unique_ptr<TagChannel> tag_;
  std::unique_ptr<samehost::RingPair> ring_;  // null once closed
  const bool reads_, lends_;
  const int peer_;
  const int peer_pid_;
  const size_t min_bytes_;
  UcxEngine::SourceId source_ = 0;
  bool opened_ = false;
  bool closed_ = false;
  bool failure_told_ = false;
  bool bye_told_ = false;
  std::unordered_map<uint64_t, UcxTransfer*> loans_;  // lent sends by id
  uint64_t next_loan_ = 1;
  std::unordered_map<uint32_t, std::shared_ptr<SendPacing>> copied_markers_;  // by id
  uint32_t next_marker_ = 0;
};

}  // namespace mw
