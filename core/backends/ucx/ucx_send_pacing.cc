#include "core/backends/ucx/ucx_send_pacing.h"

namespace mw {

bool SendPacing::nextIsMarker(size_t bytes) {
  since_marker_bytes_ += bytes;
  if (unmatched_markers_ < kMaxMarkers && ++since_marker_ < kEvery && since_marker_bytes_ < kEveryBytes) {
    return false;
  }
  since_marker_ = 0;
  since_marker_bytes_ = 0;
  ++unmatched_markers_;
  return true;
}

void* pacedTagSend(ucp_ep_h ep, const void* buffer, size_t bytes, ucp_tag_t tag, const ucp_request_param_t& param,
                   const std::shared_ptr<SendPacing>& pacing, std::shared_ptr<SendPacing>& marker) {
  if (!pacing || !pacing->nextIsMarker(bytes)) return ucp_tag_send_nbx(ep, buffer, bytes, tag, &param);
  marker = pacing;
  return ucp_tag_send_sync_nbx(ep, buffer, bytes, tag, &param);
}

}  // namespace mw
