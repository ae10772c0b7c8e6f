// The channel to a peer over two or more rails: the world's UcxFailover
// (rails/ucx_failover.h) carries its messages and control words, and the
// goodbye goes as one of them, acknowledged once the peer has it.
#pragma once

#include <memory>

#include "core/backends/ucx/channels/ucx_channel.h"

namespace mw {

class UcxFailover;
class UcxLink;

class RailChannel : public UcxChannel {
 public:
  // `link` only watches the peer's process (ucx_links.h).
  RailChannel(UcxChannelHost& host, std::shared_ptr<UcxFailover> rails, std::shared_ptr<UcxLink> link, int rank,
              int peer);
  ~RailChannel() override;

  void open() override;
  void post(UcxTransfer& t, uint64_t channel) override;
  void cancel(UcxTransfer& t) override;
  bool arrived(uint64_t channel) const override;
  void withdraw(UcxTransfer&) override {}
  void abandon(UcxTransfer&) override {}
  void peerGone() override;
  void sayGoodbye() override;
  bool flushed() const override { return flushing_ == 0; }
  void stopListening() override;
  // The world closes its UcxFailover after its channels: that ends what
  // still waits.
  void close() override;

 private:
  struct Control;
  void listen();
  static void ended(UcxTransfer& t, ucs_status_t status, size_t length);

  UcxChannelHost& host_;
  const std::shared_ptr<UcxFailover> rails_;
  const std::shared_ptr<UcxLink> link_;
  const int rank_, peer_;
  std::shared_ptr<Control> control_;  // the receive of the peer's control words
  int flushing_ = 0;                  // the goodbye, until acknowledged or given up
};

}  // namespace mw
