// The channel to a peer over one tagged UCX endpoint (the link of
// ucx_links.h): tag matching carries sends and receives, paced so that a
// sender runs only boundedly ahead of its receiver (ucx_send_pacing.h);
// control words come on the control channel, and the goodbye goes after
// everything sent, flushed before the endpoint closes.
#pragma once

#include <memory>

#include "core/backends/ucx/channels/control_words.h"
#include "core/backends/ucx/channels/ucx_channel.h"

namespace mw {

class SendPacing;
class UcxLink;

class TagChannel : public UcxChannel {
 public:
  // `world_id`: this world's id here, in the tags of what comes; the
  // peer's, in the tags of what goes. A channel to this member itself is
  // not paced: its receiver is its own caller, who may wait for the send
  // before it posts the receive.
  TagChannel(UcxChannelHost& host, std::shared_ptr<UcxLink> link, int rank, int peer, uint32_t world_id,
             uint32_t peer_world_id);
  ~TagChannel() override;

  void open() override;
  void post(UcxTransfer& t, uint64_t channel) override;
  void cancel(UcxTransfer& t) override;
  bool arrived(uint64_t channel) const override;
  void withdraw(UcxTransfer&) override {}
  void abandon(UcxTransfer& t) override;
  void peerGone() override {}
  void sayGoodbye() override;
  void sayBroken(int blamed) override;
  void sayExcluded(uint64_t epoch) override;
  bool flushed() const override { return flushing_ == 0; }
  void stopListening() override;
  void close() override;

  // For a channel built on this one (ring_channel.h).
  // Sends a control word, after everything sent so far.
  void sendWord(uint64_t word);
  // Takes the words of the channel built on this one.
  void onWord(ucxcontrol::WordHook hook) { words_ = std::move(hook); }
  const std::shared_ptr<SendPacing>& pacing() const { return pacing_; }
  // The link this channel sends on.
  const UcxLink& link() const { return *link_; }

 private:
  struct Control;
  uint64_t sendTag(uint64_t channel) const;
  uint64_t recvTag(uint64_t channel) const;
  void listen();
  void heard(ucs_status_t status, uint64_t word);
  static void onSend(void* request, ucs_status_t status, void* arg);
  static void onRecv(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void* arg);
  static void ended(UcxTransfer& t, ucs_status_t status, size_t length);

  UcxChannelHost& host_;
  const std::shared_ptr<UcxLink> link_;
  const int rank_, peer_;
  const uint32_t world_id_, peer_world_id_;
  const std::shared_ptr<SendPacing> pacing_;  // null to itself
  std::unique_ptr<Control> control_;          // the receive of the peer's control words
  ucxcontrol::WordHook words_;
  int flushing_ = 0;  // the goodbye and its flush, until UCX let go of them
  bool closed_ = false;
};

// Drops what waits in `worker` for a receive under `tag` and `mask`
// (cut off, unread): a closing world's leftovers.
void dropTagged(ucp_worker_h worker, uint64_t tag, uint64_t mask);

}  // namespace mw
