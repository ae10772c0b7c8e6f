#include "core/backends/gloo/gloo_link.h"

#include <cctype>

#include <gloo/common/error.h>

namespace mw {

namespace {

// `address` ("[ip]:port") appears in `text` as a whole: "[ip]:345" is not
// in "[ip]:3458".
bool namesAddress(const std::string& text, const std::string& address) {
  for (size_t at = text.find(address); at != std::string::npos; at = text.find(address, at + 1)) {
    const size_t end = at + address.size();
    if (end == text.size() || !std::isdigit(static_cast<unsigned char>(text[end]))) return true;
  }
  return false;
}

}  // namespace

void GlooLink::rethrow(const std::exception& e, int peer) {
  std::string what = e.what();
  for (const auto& [address, rank] : peer_by_address_) {
    if (namesAddress(what, address)) {
      peer = rank;
      break;
    }
  }
  if (auto blamed = notices_.heard(peer)) {
    throw TransportError("rank " + std::to_string(peer) + " aborted the world because of rank " +
                             std::to_string(*blamed) + " (" + what + ")",
                         *blamed);
  }
  // In a world of two the other member is the only one to blame.
  if (peer < 0 && size() == 2) peer = 1 - rank();
  throw TransportError(what, peer);
}

void GlooLink::wait(GlooBuffer& b, Direction dir, int peer, Deadline d) {
  bool aborted;
  {
    std::lock_guard<std::mutex> lock(waits_m_);
    aborted = aborted_;
    if (!aborted) waiting_[&b] = dir;
  }
  if (aborted) return takeAfterAbort(b, dir, peer);
  bool done = false;
  // Rounded up: Gloo's timeout (which closes every pair of the world) must
  // not come before the deadline, so whoever sees it can tell it passed.
  const auto left = std::max(std::chrono::ceil<std::chrono::milliseconds>(d - Clock::now()),
                             std::chrono::milliseconds(0));
  try {
    done = dir == Direction::Recv ? b.waitRecv(nullptr, left) : b.waitSend(nullptr, left);
  } catch (const std::exception& e) {
    {
      std::lock_guard<std::mutex> lock(waits_m_);
      waiting_.erase(&b);
    }
    // Gloo's wait looks at the pair's error before its own completion: a
    // peer that sends its last message and closes (a graceful end) fails
    // the wait that message finished, when both came before it woke.
    if (finished(b, dir)) return;
    rethrow(e, peer);
  }
  {
    std::lock_guard<std::mutex> lock(waits_m_);
    waiting_.erase(&b);
  }
  if (!done) takeAfterAbort(b, dir, peer);
}

// An abort wakes a wait whatever its transfer did, and Gloo's wait then
// reports the abort even when the transfer had finished. A receive whose
// message is in counts as done: what arrived before the world broke is
// delivered (core/lanes.h), and failing it would fail every later one.
void GlooLink::takeAfterAbort(GlooBuffer& b, Direction dir, int peer) {
  bool done = false;
  try {
    done = dir == Direction::Recv ? b.takeRecv() : b.takeSend();
  } catch (const std::exception& e) {
    rethrow(e, peer);
  }
  if (!done) throw TransportError("world aborted", peer);
}

bool GlooLink::finished(GlooBuffer& b, Direction dir) {
  try {
    return dir == Direction::Recv ? b.takeRecv() : b.takeSend();
  } catch (const std::exception&) {
    return false;  // the pair's error, which the caller reports
  }
}

void GlooLink::waitRecv(GlooBuffer& b, int peer, Deadline d) {
  wait(b, Direction::Recv, peer, d);
}

void GlooLink::waitSend(GlooBuffer& b, int peer, Deadline d) {
  wait(b, Direction::Send, peer, d);
}

void GlooLink::abortWaits() {
  std::lock_guard<std::mutex> lock(waits_m_);
  aborted_ = true;
  // Gloo's abort flags stay set until the wait consumes them, so a wait
  // registered but not yet entered returns at once too.
  for (auto& [buffer, dir] : waiting_) {
    if (dir == Direction::Recv) {
      buffer->abortWaitRecv();
    } else {
      buffer->abortWaitSend();
    }
  }
}

}  // namespace mw
