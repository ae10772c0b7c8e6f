#include "core/delivery/send_window.h"

namespace mw {

SendWindow::MessagePtr SendWindow::add(uint64_t channel, const void* buffer, size_t bytes, Done done) {
  auto m = std::make_shared<Message>();
  m->seq = next_seq_++;
  m->channel = channel;
  m->buffer = buffer;
  m->bytes = bytes;
  m->done = std::move(done);
  // A window that awaited no answer was not silent: the wait for one
  // starts now.
  if (!awaitingAcknowledgement()) progress_ = Clock::now();
  kept_.push_back(m);
  return m;
}

void SendWindow::transmitted(Message& m) {
  if (m.in_flight > 0) --m.in_flight;
  settle();
}

bool SendWindow::acknowledge(uint64_t seq) {
  if (seq <= acked_ || seq >= next_seq_) return false;
  acked_ = seq;
  progress_ = Clock::now();
  for (auto& m : kept_) {
    if (m->seq > seq) break;
    m->acked = true;
  }
  settle();
  return true;
}

// Acknowledged messages whose buffers the transport no longer reads
// complete, in order; a transmission still running holds back the rest.
void SendWindow::settle() {
  while (!kept_.empty() && kept_.front()->acked && kept_.front()->in_flight == 0) {
    MessagePtr m = std::move(kept_.front());
    kept_.pop_front();
    progress_ = Clock::now();
    m->done(DeliveryOutcome::Delivered);  // may add more
  }
}

std::vector<SendWindow::MessagePtr> SendWindow::unacknowledged() const {
  std::vector<MessagePtr> out;
  for (const auto& m : kept_) {
    if (!m->acked) out.push_back(m);
  }
  return out;
}

const SendWindow::Chunk* SendWindow::acknowledgeChunk(uint64_t seq, size_t offset) {
  if (seq <= acked_) return nullptr;  // the whole message is acknowledged: late news
  for (auto& m : kept_) {
    if (m->seq < seq) continue;
    if (m->seq > seq) break;
    for (Chunk& c : m->chunks) {
      if (c.offset != offset) continue;
      if (c.acked) return nullptr;
      c.acked = true;
      progress_ = Clock::now();
      return &c;
    }
    break;
  }
  return nullptr;
}

std::vector<SendWindow::ChunkRef> SendWindow::unacknowledgedOn(size_t path) const {
  std::vector<ChunkRef> out;
  for (const auto& m : kept_) {
    if (m->acked) continue;
    for (size_t i = 0; i < m->chunks.size(); ++i) {
      if (m->chunks[i].path == path && !m->chunks[i].acked) out.push_back({m, i});
    }
  }
  return out;
}

void SendWindow::resent(const ChunkRef& c, size_t path, Clock::time_point now) {
  Chunk& chunk = c.message->chunks[c.index];
  chunk.path = path;
  chunk.sent_at = now;
}

size_t SendWindow::bytesOn(size_t path) const {
  size_t total = 0;
  for (const auto& r : unacknowledgedOn(path)) total += r.message->chunks[r.index].bytes;
  return total;
}

std::optional<SendWindow::Clock::time_point> SendWindow::oldestOn(size_t path) const {
  std::optional<Clock::time_point> oldest;
  for (const auto& r : unacknowledgedOn(path)) {
    const auto at = r.message->chunks[r.index].sent_at;
    if (!oldest || at < *oldest) oldest = at;
  }
  return oldest;
}

void SendWindow::giveUp() {
  auto ending = std::move(kept_);
  kept_.clear();
  // The peer can no longer acknowledge what ends here.
  acked_ = next_seq_ - 1;
  for (auto& m : ending) m->done(DeliveryOutcome::GivenUp);
}

size_t SendWindow::bytes() const {
  size_t total = 0;
  for (const auto& m : kept_) total += m->bytes;
  return total;
}

std::string SendWindow::summary() const {
  if (kept_.empty()) return "nothing outstanding";
  const Message& m = *kept_.front();
  return std::to_string(kept_.size()) + " outstanding, the oldest (seq " + std::to_string(m.seq) + ") " +
         (m.acked ? "acknowledged" : "unacknowledged") + (m.in_flight ? " and still in the transport" : "");
}

}  // namespace mw
