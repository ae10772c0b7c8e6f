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
// peer goes as a synchronous one (ucp_tag_send_sync_nbx), which completes
// once the receiver matched it: a marker. Below kCopyBelow bytes the
// marker is a copy, and the caller's send completes at once, as an eager
// one does: a program that sends and then receives, on both sides (unsafe
// in MPI's terms, but it works for small messages there too), never waits
// for a marker. From kCopyBelow on the caller's send is the marker; UCX's
// own rendezvous made such sends wait for their receiver before. While
// kMaxMarkers markers are unmatched every send is a marker the caller waits
// for. A sender that waits for its sends before it posts more (a window of
// W) is then at most about kMaxMarkers runs and W messages ahead of its
// receiver. Only markers pay the match's round trip: an acknowledgement on
// every message would cost each small message a second send, which on TCP
// is most of its latency.
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
  static constexpr size_t kCopyBelow = 32 << 10;

  enum class Send {
    Plain,
    Marker,        // the caller's send; its end goes to markerEnded()
    CopiedMarker,  // a copy's; the caller's send completes at once
  };
  // How the next send, of `bytes`, goes.
  Send next(size_t bytes);
  void markerEnded() { --unmatched_markers_; }

 private:
  int since_marker_ = 0;
  size_t since_marker_bytes_ = 0;
  int unmatched_markers_ = 0;
};

// Sends `bytes` of `buffer` with `tag` on `ep` as ucp_tag_send_nbx does
// (nullptr: the caller's send completed), paced by `pacing` (null: not
// paced). When the caller's send is a marker, `marker` is set to `pacing`,
// for the caller to report the send's end.
void* pacedTagSend(ucp_ep_h ep, const void* buffer, size_t bytes, ucp_tag_t tag, const ucp_request_param_t& param,
                   const std::shared_ptr<SendPacing>& pacing, std::shared_ptr<SendPacing>& marker);

}  // namespace mw
