// A single-producer single-consumer ring of messages between two processes
// of one host: the small-message half of the same-host path. Nothing in it
// is shared with a third process.
//
// The writer creates the ring: a sealed memfd (a header page, then the
// data area) and two eventfds. The reader takes the three descriptors out
// of the writer with pidfd_getfd, which the kernel allows under the same
// rule as process_vm_readv (PTRACE_MODE_ATTACH_REALCREDS): a member that
// may read a peer's loans may take its rings. Both map the data area twice
// in a row, so a message that wraps around its end is still one run of
// bytes.
//
// Publishing: the writer copies a message in and then moves `head` with a
// release store. A writer killed midway never moved it, so the reader
// never sees half a message; what it published before stays readable. The
// ring is then stranded (the reader learns of the death from the writer's
// pidfd, not from here).
//
// Waking: the reader is woken through the wake eventfd only when it asked
// to be (armWake() before it sleeps), and the writer through the space
// eventfd only when it asked for room (armSpace() before it sleeps): a
// side that polls costs the other no signal. Each side sets its flag, then
// a full fence, then looks at the other's counter once more, so neither
// sleeps on a message or room the other just made (the store-load fences
// pair up).
//
// Everything the other process wrote is checked before it is used: a
// counter that runs backwards or past the capacity, or a message header
// that does not add up, makes the ring Corrupt; the seals keep the memfd
// from shrinking under the reader's mapping.
//
// Owner: each object belongs to one thread (the engine's owner, for UCX
// worlds); nothing here locks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace mw::samehost {

// Where the reader finds a writer's ring: descriptor numbers in the
// writer's process, and the data area's size.
struct RingFds {
  int memfd = -1;
  int wake_fd = -1;   // the writer signals it when the reader armed a wake
  int space_fd = -1;  // the reader signals it when the writer found no room
  uint64_t capacity = 0;
};

// A message's header in the ring; its payload follows, and the next
// message starts at the next multiple of kRingAlign.
struct RingRecord {
  uint64_t tag = 0;
  uint32_t bytes = 0;
  uint32_t check = 0;  // ~bytes: a header that does not hold it is not one
};
constexpr size_t kRingAlign = sizeof(RingRecord);
constexpr uint64_t kRingMinCapacity = 4096;
constexpr uint64_t kRingMaxCapacity = 64ull << 20;

struct RingHeader;
class RingMapping;

class RingWriter {
 public:
  // A ring of `capacity` bytes (a power of two, kRingMinCapacity to
  // kRingMaxCapacity). Throws Error(InvalidArgument) naming a bad capacity,
  // Error(Internal) naming the call the kernel refused.
  explicit RingWriter(uint64_t capacity);
  ~RingWriter();
  RingWriter(const RingWriter&) = delete;
  RingWriter& operator=(const RingWriter&) = delete;

  // What the reader takes (its descriptors stay open here, for pidfd_getfd).
  RingFds fds() const;
  // The largest message write() takes.
  size_t maxMessage() const;

  enum class Write {
    Written,   // published: the caller's buffer is free
    Full,      // no room now: armSpace() before sleeping on space_fd
    TooLarge,  // more than maxMessage()
    Corrupt,   // the reader's counter says what cannot be
  };
  Write write(uint64_t tag, const void* data, size_t bytes);
  // Before sleeping on spaceFd(): asks the reader for a wake once a
  // message of `bytes` fits. False when it fits now (nothing is armed).
  bool armSpace(size_t bytes);
  void disarmSpace();
  // Readable once the reader made room after armSpace().
  int spaceFd() const { return space_fd_; }
  // Clears spaceFd() after it woke the caller.
  void drainSpace();
  // Bytes published and not yet consumed.
  uint64_t unread() const;

 private:
  std::unique_ptr<RingMapping> map_;
  int memfd_ = -1, wake_fd_ = -1, space_fd_ = -1;
  uint64_t tail_seen_ = 0;  // the reader's tail when write() last read it
};

// A message the reader looks at: valid until consume().
struct RingMessage {
  uint64_t tag = 0;
  const char* data = nullptr;
  size_t bytes = 0;
};

class RingReader {
 public:
  // Takes the writer's descriptors out of its process (`pidfd`) and maps
  // the ring. Throws Error(InvalidArgument) for descriptors that are not a
  // ring as `fds` describes it (naming what differs), Error(Internal) with
  // the errno when the kernel refuses (EPERM: not allowed to take them).
  RingReader(int pidfd, const RingFds& fds);
  ~RingReader();
  RingReader(const RingReader&) = delete;
  RingReader& operator=(const RingReader&) = delete;

  enum class Read {
    Message,  // *out holds the oldest message not consumed
    Empty,
    Corrupt,  // what the writer published does not add up; see corruption()
  };
  // Looks at the oldest message; repeated calls see the same one until
  // consume().
  Read next(RingMessage* out);
  // Frees the message next() returned, and wakes a writer that waits for room.
  void consume();
  // Before sleeping on wakeFd(): asks the writer for a wake. False when a
  // message arrived meanwhile (then nothing is armed).
  bool armWake();
  // After waking (or not sleeping after all): withdraws the request.
  void disarmWake();
  // Clears wakeFd() once it fired.
  void drainWake();
  int wakeFd() const { return wake_fd_; }
  const std::string& corruption() const { return corruption_; }

 private:
  std::unique_ptr<RingMapping> map_;
  int wake_fd_ = -1, space_fd_ = -1;
  uint64_t tail_ = 0;  // ours: consumed so far
  uint64_t seen_ = 0;  // the end of the message next() returned, 0: none
  uint64_t head_seen_ = 0;  // the writer's head when next() last read it
  std::string corruption_;
};

}  // namespace mw::samehost
