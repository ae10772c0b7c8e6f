#include "core/backends/gloo/gloo_notices.h"

#include <arpa/inet.h>

#include <gloo/types.h>

#include "core/backends/gloo/gloo_link.h"

namespace mw {
namespace {

uint64_t noticeSlot() { return gloo::Slot::build(kNoticeSlot, 0); }

}  // namespace

GlooNotices::GlooNotices(const std::shared_ptr<gloo::transport::tcp::Context>& tcp, int rank, int size)
    : rank_(rank), size_(size), in_(static_cast<size_t>(size), 0), from_(static_cast<size_t>(size)),
      heard_(static_cast<size_t>(size)) {
  to_ = std::make_unique<GlooBuffer>(tcp, &out_, sizeof out_);
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    auto& b = from_[static_cast<size_t>(peer)];
    b = std::make_unique<GlooBuffer>(tcp, &in_[static_cast<size_t>(peer)], sizeof(uint32_t));
    b->recv(peer, noticeSlot(), 0, sizeof(uint32_t));
  }
}

// The receives go before the words Gloo would write into.
GlooNotices::~GlooNotices() {
  from_.clear();
  to_.reset();
}

void GlooNotices::tell(int blamed) noexcept {
  {
    std::lock_guard<std::mutex> lock(m_);
    if (told_ || blamed < 0 || blamed >= size_ || blamed == rank_) return;
    told_ = true;
  }
  out_ = htonl(static_cast<uint32_t>(blamed));
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_ || peer == blamed) continue;
    try {
      to_->send(peer, noticeSlot(), 0, sizeof out_);
    } catch (...) {
      // That pair failed already: its member learns otherwise.
    }
  }
}

std::optional<int> GlooNotices::heard(int peer) {
  if (peer < 0 || peer >= size_ || peer == rank_) return std::nullopt;
  std::lock_guard<std::mutex> lock(m_);
  auto& known = heard_[static_cast<size_t>(peer)];
  if (known) return known;
  bool in = false;
  try {
    in = from_[static_cast<size_t>(peer)]->takeRecv();  // orders the word Gloo wrote before this read
  } catch (...) {
    // The pair failed with no notice in.
  }
  if (!in) return std::nullopt;
  const auto blamed = static_cast<int>(ntohl(in_[static_cast<size_t>(peer)]));
  // A rank out of range says nothing we could use.
  if (blamed >= 0 && blamed < size_ && blamed != peer) known = blamed;
  return known;
}

}  // namespace mw
