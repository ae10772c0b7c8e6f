// What the Gloo operations of one world share: the Gloo context, and the
// translation of Gloo's exceptions into TransportError naming the peer.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <gloo/context.h>

#include "core/backends/gloo/gloo_abortable.h"
#include "core/backends/gloo/gloo_buffer.h"
#include "core/backends/gloo/gloo_notices.h"
#include "core/communicator.h"
#include "core/deadline.h"

namespace mw {

// Slot prefixes of our point-to-point protocol; Gloo's collectives use
// 0x01..0x08 (gloo/types.h).
constexpr uint8_t kHeaderSlot = 0x40;
constexpr uint8_t kDataSlot = 0x42;
constexpr uint8_t kSentinelSlot = 0x43;
constexpr uint8_t kNoticeSlot = 0x44;  // core/backends/gloo/gloo_notices.h

class GlooLink {
 public:
  // `tcp` is the transport context under `ctx`; `peer_by_address` names
  // the rank behind each address a pair's error can carry; `collectives`
  // knows the buffers Gloo's algorithms make through `ctx`
  // (gloo_abortable.h).
  GlooLink(std::shared_ptr<gloo::Context> ctx, std::shared_ptr<gloo::transport::tcp::Context> tcp,
           std::map<std::string, int> peer_by_address, std::shared_ptr<AbortableBuffers> collectives)
      : ctx_(std::move(ctx)), tcp_(std::move(tcp)), peer_by_address_(std::move(peer_by_address)),
        collectives_(std::move(collectives)), notices_(tcp_, ctx_->rank, ctx_->size) {}

  gloo::Context& context() { return *ctx_; }
  std::unique_ptr<GlooBuffer> buffer(void* ptr, size_t size) {
    return std::make_unique<GlooBuffer>(tcp_, ptr, size);
  }
  const std::shared_ptr<gloo::Context>& shared() { return ctx_; }
  int rank() const { return ctx_->rank; }
  int size() const { return ctx_->size; }

  // Rethrows the current Gloo exception as TransportError; `peer` is blamed
  // when the message does not name a peer's address. A peer that told us
  // it aborted because of another rank (GlooNotices) passes the blame on.
  [[noreturn]] void rethrow(const std::exception& e, int peer);

  // Interrupts the waits inside Gloo's algorithms, and every later one.
  void abortCollectives() { collectives_->abort(); }

  // This member aborts the world because of rank `blamed` (-1: unknown):
  // tells the others, before its connections close.
  void tellPeers(int blamed) noexcept { notices_.tell(blamed); }

  // The buffer's posted recv/send finished; throws TransportError otherwise.
  // A transfer that finished counts even when an abort or its pair's
  // failure woke the wait.
  void waitRecv(GlooBuffer& b, int peer, Deadline d);
  void waitSend(GlooBuffer& b, int peer, Deadline d);

  // Wakes every wait above, now and later, with TransportError. Gloo's own
  // error path does not wake a send still queued on its pair (it signals
  // only bound buffers there), so an abort must reach our waits directly.
  void abortWaits();

 private:
  enum class Direction { Send, Recv };
  void wait(GlooBuffer& b, Direction dir, int peer, Deadline d);
  void takeAfterAbort(GlooBuffer& b, Direction dir, int peer);
  // Takes the transfer if it finished, even after its pair failed.
  static bool finished(GlooBuffer& b, Direction dir);

  std::shared_ptr<gloo::Context> ctx_;
  const std::shared_ptr<gloo::transport::tcp::Context> tcp_;
  const std::map<std::string, int> peer_by_address_;
  const std::shared_ptr<AbortableBuffers> collectives_;
  GlooNotices notices_;

  std::mutex waits_m_;
  bool aborted_ = false;
  std::map<gloo::transport::UnboundBuffer*, Direction> waiting_;
};

}  // namespace mw
