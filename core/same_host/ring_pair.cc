#include "core/same_host/ring_pair.h"

#include <cstring>
#include <utility>

namespace mw::samehost {

RingPair::RingPair(uint64_t capacity) : writer_(capacity) {
  order_.onMatched([this](uint64_t marker) {
    if (matched_) matched_(static_cast<uint32_t>(marker));
  });
}

RingPair::~RingPair() = default;

void RingPair::attach(int peer_pidfd, const RingFds& theirs) {
  reader_ = std::make_unique<RingReader>(peer_pidfd, theirs);
}

void RingPair::send(uint64_t channel, const void* data, size_t bytes, bool lent, SendDone done, uint32_t marker) {
  if (given_up_ || sends_abandoned_ || bye_asked_ || !failure_.empty() || bytes > maxMessage() ||
      (channel & ~kChannelMask) != 0 || marker > (kMarkerMask >> kMarkerShift)) {
    done(DeliveryOutcome::GivenUp);
    return;
  }
  const uint64_t tag = channel | uint64_t{marker} << kMarkerShift | (lent ? kLentFlag : 0);
  if (!backlogged()) {
    switch (writer_.write(tag, data, bytes)) {
      case RingWriter::Write::Written:
        done(DeliveryOutcome::Delivered);
        return;
      case RingWriter::Write::Full:
        break;
      case RingWriter::Write::TooLarge:
        done(DeliveryOutcome::GivenUp);
        return;
      case RingWriter::Write::Corrupt:
        failure_ = "the peer's reading of this member's ring says what cannot be";
        done(DeliveryOutcome::GivenUp);
        return;
    }
  }
  backlog_.push_back(Waiting{tag, data, bytes, std::move(done)});
  askForRoom();
}

void RingPair::sendWord(uint64_t word) {
  // After the goodbye the peer takes nothing more (and breaks on it).
  if (given_up_ || sends_abandoned_ || bye_asked_ || !failure_.empty()) return;
  if (!backlogged() && writer_.write(kWordTag, &word, sizeof word) == RingWriter::Write::Written) return;
  backlog_.push_back(Waiting{kWordTag, nullptr, sizeof word, [](DeliveryOutcome) {}, word});
  askForRoom();
}

void RingPair::sendBye() {
  if (given_up_ || bye_asked_) return;
  bye_asked_ = true;
  bye_pending_ = true;
  flush();
  askForRoom();
}

void RingPair::askForRoom() {
  while (!roomAsked() && flush()) {
  }
}

bool RingPair::roomAsked() {
  if (!backlogged() || given_up_ || sends_abandoned_ || !failure_.empty()) return true;
  return writer_.armSpace(backlog_.empty() ? 0 : backlog_.front().bytes);
}

uint64_t RingPair::recv(uint64_t channel, void* buffer, size_t bytes, RecvDone done) {
  if (given_up_) {
    done(DeliveryOutcome::GivenUp, 0);
    return 0;
  }
  return order_.post(channel, buffer, bytes, std::move(done));
}

bool RingPair::flush() {
  bool moved = false;
  while (!backlog_.empty() && !given_up_ && !sends_abandoned_) {
    Waiting& w = backlog_.front();
    const RingWriter::Write r = writer_.write(w.tag, w.tag == kWordTag ? &w.word : w.data, w.bytes);
    if (r == RingWriter::Write::Full) return moved;  // armWake() asks for room before a sleep
    if (r == RingWriter::Write::Corrupt) {
      failure_ = "the peer's reading of this member's ring says what cannot be";
      return moved;
    }
    SendDone done = std::move(w.done);
    backlog_.pop_front();
    moved = true;
    // TooLarge cannot wait here: send() refused it.
    done(r == RingWriter::Write::Written ? DeliveryOutcome::Delivered : DeliveryOutcome::GivenUp);
  }
  if (bye_pending_ && backlog_.empty() && !given_up_ &&
      writer_.write(kByeTag, nullptr, 0) == RingWriter::Write::Written) {
    bye_pending_ = false;
    moved = true;
  }
  return moved;
}

bool RingPair::drain() {
  if (!reader_) return false;
  bool moved = false;
  RingMessage m;
  while (!given_up_ && failure_.empty()) {
    const RingReader::Read r = reader_->next(&m);
    if (r == RingReader::Read::Empty) break;
    if (r == RingReader::Read::Corrupt) {
      failure_ = "its ring: " + reader_->corruption();
      break;
    }
    const uint64_t flags = m.tag & kFlagMask;
    const bool word = m.tag == kWordTag && m.bytes == sizeof(uint64_t);
    if (bye_seen_ || (flags != 0 && flags != kLentFlag && m.tag != kByeTag && !word)) {
      failure_ = bye_seen_ ? "its ring holds a message after its goodbye"
                           : "its ring holds a message tagged " + std::to_string(m.tag);
      break;
    }
    moved = true;
    if (m.tag == kByeTag) {
      bye_seen_ = true;
    } else if (word) {
      uint64_t value;
      std::memcpy(&value, m.data, sizeof value);
      reader_->consume();  // before the hook, which may send or give up
      if (word_) word_(value);
      continue;
    } else {
      // Copied out (to a receive, or to wait) before it returns.
      order_.arrive(++arrivals_, m.tag & kChannelMask, m.data, m.bytes, nullptr, flags == kLentFlag,
                    (m.tag & kMarkerMask) >> kMarkerShift);
    }
    reader_->consume();
  }
  return moved;
}

bool RingPair::progress() {
  if (given_up_ || !failure_.empty()) return false;
  bool moved = false;
  if (backlogged()) moved = flush();
  return drain() || moved;
}

bool RingPair::armWake() {
  if (!roomAsked()) return false;  // room now: flush
  return reader_ ? reader_->armWake() : true;
}

void RingPair::disarmWake() {
  writer_.disarmSpace();
  if (reader_) reader_->disarmWake();
}

int RingPair::wakeFd() const { return reader_ ? reader_->wakeFd() : -1; }

void RingPair::abandonSends() {
  sends_abandoned_ = true;
  bye_pending_ = false;
  std::deque<Waiting> ending = std::move(backlog_);
  backlog_.clear();
  for (Waiting& w : ending) w.done(DeliveryOutcome::GivenUp);
}

void RingPair::giveUp() {
  if (given_up_) return;
  given_up_ = true;
  abandonSends();
  order_.giveUp();
  order_.dropArrivals();
}

}  // namespace mw::samehost
