// Flow control for tagged sends to one peer: a sender runs at most a
// bounded number of messages ahead of what its receiver matched.
//
// UCX has no flow control for eager messages: a plain eager send completes
// once it left, whether or not the receiver posted a receive for it. A
// receiver that falls behind (one that streams from two peers at once, on
// a host with fewer cores than busy threads) buffers what comes without
// end: its memory grows by hundreds of MB/s, and it falls further behind.
// (Rendezvous messages wait for their receive anyway.)
//
// So the send that ends a run of kEvery sends or kEveryBytes bytes to a
// peer is a synchronous one (ucp_tag_send_sync_nbx), which completes once
// the receiver matched it: a marker. While kMaxMarkers markers are
// unmatched every send is one. A sender that waits for its sends before it
// posts more (a window of W) is then at most about kMaxMarkers runs and W
// messages ahead of its receiver. Only markers pay the match's round
// trip: an acknowledgement on every message would cost each small message
// a second send, which on TCP is most of its latency.
//
// Owned by the engine's owner, like every UCX call; shared by the world's
// peer record and the markers in flight, which may outlive it.
#pragma once

#include <ucp/api/ucp.h>

#include <cstddef>
#include <memory>

namespace mw {

class SendPacing {
 public:
  static constexpr int kEvery = 64;
  static constexpr size_t kEveryBytes = 1 << 20;
  static constexpr int kMaxMarkers = 2;

  // Whether the next send, of `bytes`, is a marker; a marker's end
  // (whatever its status) must be reported through markerEnded().
  bool nextIsMarker(size_t bytes);
  void markerEnded() { --unmatched_markers_; }
  int unmatchedMarkers() const { return unmatched_markers_; }

 private:
  int since_marker_ = 0;
  size_t since_marker_bytes_ = 0;
  int unmatched_markers_ = 0;
};

// Sends `bytes` of `buffer` with `tag` on `ep` as ucp_tag_send_nbx does,
// or as a marker when `pacing` (null: never) says so: then `marker` is set
// to `pacing`, for the caller to report the send's end.
void* pacedTagSend(ucp_ep_h ep, const void* buffer, size_t bytes, ucp_tag_t tag, const ucp_request_param_t& param,
                   const std::shared_ptr<SendPacing>& pacing, std::shared_ptr<SendPacing>& marker);

}  // namespace mw
