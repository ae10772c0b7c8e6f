#include "core/backends/ucx/ucx_send_pacing.h"

#include <cstring>

namespace mw {
namespace {

// A marker sent from a copy: freed, and its match counted, when UCX is done.
struct CopiedMarker {
  std::shared_ptr<SendPacing> pacing;
  std::unique_ptr<char[]> data;
};

void copiedMarkerEnded(void* request, ucs_status_t, void* arg) {
  // A failure breaks the world through its endpoint's error handler; the
  // caller's send was reported already, as an eager send's would be.
  ucp_request_free(request);
  std::unique_ptr<CopiedMarker> m(static_cast<CopiedMarker*>(arg));
  m->pacing->markerEnded();
}

}  // namespace

SendPacing::Send SendPacing::next(size_t bytes) {
  if (unmatched_markers_ >= kMaxMarkers) {
    ++unmatched_markers_;
    return Send::Marker;
  }
  since_marker_bytes_ += bytes;
  if (++since_marker_ < kEvery && since_marker_bytes_ < kEveryBytes) return Send::Plain;
  since_marker_ = 0;
  since_marker_bytes_ = 0;
  ++unmatched_markers_;
  return bytes < kCopyBelow ? Send::CopiedMarker : Send::Marker;
}

void* pacedTagSend(ucp_ep_h ep, const void* buffer, size_t bytes, ucp_tag_t tag, const ucp_request_param_t& param,
                   const std::shared_ptr<SendPacing>& pacing, std::shared_ptr<SendPacing>& marker) {
  const SendPacing::Send how = pacing ? pacing->next(bytes) : SendPacing::Send::Plain;
  if (how == SendPacing::Send::Plain) return ucp_tag_send_nbx(ep, buffer, bytes, tag, &param);
  if (how == SendPacing::Send::Marker) {
    marker = pacing;
    return ucp_tag_send_sync_nbx(ep, buffer, bytes, tag, &param);
  }
  auto copy = std::make_unique<CopiedMarker>(CopiedMarker{pacing, std::unique_ptr<char[]>(new char[bytes])});
  if (bytes > 0) std::memcpy(copy->data.get(), buffer, bytes);
  ucp_request_param_t own{};
  own.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  own.cb.send = &copiedMarkerEnded;
  own.user_data = copy.get();
  void* r = ucp_tag_send_sync_nbx(ep, copy->data.get(), bytes, tag, &own);
  if (UCS_PTR_IS_PTR(r)) {
    copy.release();  // copiedMarkerEnded frees it
    return nullptr;
  }
  pacing->markerEnded();  // done at once, or failed: the copy goes now
  return r;
}

}  // namespace mw
