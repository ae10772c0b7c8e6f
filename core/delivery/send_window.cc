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
