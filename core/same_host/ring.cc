#include "core/same_host/ring.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>

#include "core/error.h"

namespace mw::samehost {

namespace {

constexpr uint64_t kRingMagic = 0x31676e6972776dull;  // "mwring1"

size_t pageBytes() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

uint64_t aligned(uint64_t n) { return (n + kRingAlign - 1) & ~uint64_t{kRingAlign - 1}; }

std::string errnoText(int e) { return std::string(std::strerror(e)) + " (errno " + std::to_string(e) + ")"; }

void checkCapacity(uint64_t capacity) {
  if (capacity < kRingMinCapacity || capacity > kRingMaxCapacity || (capacity & (capacity - 1)) != 0 ||
      capacity % pageBytes() != 0) {
    throw Error(Status::InvalidArgument, "ring capacity " + std::to_string(capacity) +
                                             " is not a power of two from " + std::to_string(kRingMinCapacity) +
                                             " to " + std::to_string(kRingMaxCapacity) + " bytes");
  }
}

void signal(int fd) {
  const uint64_t one = 1;
  ssize_t n = ::write(fd, &one, sizeof one);
  (void)n;  // a counter that is already set wakes the same
}

void drain(int fd) {
  uint64_t v;
  ssize_t n = ::read(fd, &v, sizeof v);
  (void)n;  // EAGAIN: nothing to clear
}

void closeFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

// The shared page. Each counter has its own cache line: the writer's head
// and the reader's tail would otherwise bounce one line between the cores.
struct RingHeader {
  uint64_t magic = 0;
  uint64_t capacity = 0;
  alignas(64) std::atomic<uint64_t> head{0};      // writer: bytes published
  alignas(64) std::atomic<uint64_t> tail{0};      // reader: bytes consumed
  alignas(64) std::atomic<uint32_t> reader_asleep{0};   // the reader waits on wake_fd
  alignas(64) std::atomic<uint32_t> writer_blocked{0};  // the writer waits on space_fd
};
static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<uint32_t>::is_always_lock_free,
              "the ring's counters are shared between processes");
static_assert(sizeof(RingHeader) <= kRingMinCapacity);

// The header page, then the data area twice in a row, so a message that
// runs past the end continues at the start.
class RingMapping {
 public:
  RingMapping(int memfd, uint64_t capacity, bool write_data) : capacity_(capacity) {
    header_bytes_ = pageBytes();
    total_ = header_bytes_ + 2 * capacity;
    void* base = mmap(nullptr, total_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) throw Error(Status::Internal, "ring: reserving " + std::to_string(total_) +
                                                              " bytes of address space failed: " + errnoText(errno));
    base_ = static_cast<char*>(base);
    const int data_prot = write_data ? PROT_READ | PROT_WRITE : PROT_READ;
    mapAt(base_, header_bytes_, PROT_READ | PROT_WRITE, memfd, 0);
    mapAt(base_ + header_bytes_, capacity, data_prot, memfd, header_bytes_);
    mapAt(base_ + header_bytes_ + capacity, capacity, data_prot, memfd, header_bytes_);
  }
  ~RingMapping() { munmap(base_, total_); }
  RingMapping(const RingMapping&) = delete;
  RingMapping& operator=(const RingMapping&) = delete;

  RingHeader* header() const { return reinterpret_cast<RingHeader*>(base_); }
  char* data() const { return base_ + header_bytes_; }
  uint64_t capacity() const { return capacity_; }
  static uint64_t fileBytes(uint64_t capacity) { return pageBytes() + capacity; }

 private:
  void mapAt(char* at, size_t bytes, int prot, int fd, off_t offset) {
    if (mmap(at, bytes, prot, MAP_SHARED | MAP_FIXED, fd, offset) == MAP_FAILED) {
      const int e = errno;
      munmap(base_, total_);
      throw Error(Status::Internal, "ring: mapping its memfd failed: " + errnoText(e));
    }
  }

  const uint64_t capacity_;
  size_t header_bytes_ = 0;
  size_t total_ = 0;
  char* base_ = nullptr;
};

RingWriter::RingWriter(uint64_t capacity) {
  checkCapacity(capacity);
  try {
    memfd_ = memfd_create("mw-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (memfd_ < 0) throw Error(Status::Internal, "ring: memfd_create failed: " + errnoText(errno));
    if (ftruncate(memfd_, static_cast<off_t>(RingMapping::fileBytes(capacity))) != 0) {
      throw Error(Status::Internal, "ring: sizing its memfd failed: " + errnoText(errno));
    }
    // The reader maps it: it must never shrink under that mapping.
    if (fcntl(memfd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
      throw Error(Status::Internal, "ring: sealing its memfd failed: " + errnoText(errno));
    }
    wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    space_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd_ < 0 || space_fd_ < 0) throw Error(Status::Internal, "ring: eventfd failed: " + errnoText(errno));
    map_ = std::make_unique<RingMapping>(memfd_, capacity, true);
  } catch (...) {
    closeFd(memfd_);
    closeFd(wake_fd_);
    closeFd(space_fd_);
    throw;
  }
  RingHeader* h = new (map_->header()) RingHeader();
  h->magic = kRingMagic;
  h->capacity = capacity;
}

RingWriter::~RingWriter() {
  map_.reset();
  closeFd(memfd_);
  closeFd(wake_fd_);
  closeFd(space_fd_);
}

RingFds RingWriter::fds() const { return RingFds{memfd_, wake_fd_, space_fd_, map_->capacity()}; }

size_t RingWriter::maxMessage() const { return map_->capacity() - sizeof(RingRecord); }

uint64_t RingWriter::unread() const {
  RingHeader* h = map_->header();
  return h->head.load(std::memory_order_relaxed) - h->tail.load(std::memory_order_acquire);
}

RingWriter::Write RingWriter::write(uint64_t tag, const void* data, size_t bytes) {
  if (bytes > maxMessage()) return Write::TooLarge;
  RingHeader* h = map_->header();
  const uint64_t cap = map_->capacity();
  const uint64_t head = h->head.load(std::memory_order_relaxed);  // only this side moves it
  const uint64_t need = aligned(sizeof(RingRecord) + bytes);
  // The reader's tail as last read: while that leaves room, its cache line
  // stays with the reader, which moves it after every message.
  uint64_t tail = tail_seen_;
  if (cap - (head - tail) < need) {
    tail = h->tail.load(std::memory_order_acquire);
    if (tail > head || head - tail > cap || tail < tail_seen_) return Write::Corrupt;
    tail_seen_ = tail;
  }
  if (cap - (head - tail) < need) return Write::Full;
  char* at = map_->data() + (head & (cap - 1));
  const RingRecord record{tag, static_cast<uint32_t>(bytes), ~static_cast<uint32_t>(bytes)};
  std::memcpy(at, &record, sizeof record);
  if (bytes) std::memcpy(at + sizeof record, data, bytes);
  h->head.store(head + need, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (h->reader_asleep.load(std::memory_order_relaxed) && h->reader_asleep.exchange(0)) signal(wake_fd_);
  return Write::Written;
}

bool RingWriter::armSpace(size_t bytes) {
  RingHeader* h = map_->header();
  const uint64_t cap = map_->capacity();
  const uint64_t head = h->head.load(std::memory_order_relaxed);
  const uint64_t need = aligned(sizeof(RingRecord) + std::min<size_t>(bytes, maxMessage()));
  h->writer_blocked.store(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const uint64_t tail = h->tail.load(std::memory_order_acquire);
  // A counter that says what cannot be is write()'s to report: room now.
  if (tail > head || head - tail > cap || cap - (head - tail) >= need) {
    h->writer_blocked.store(0, std::memory_order_relaxed);
    return false;
  }
  return true;
}

void RingWriter::disarmSpace() { map_->header()->writer_blocked.store(0, std::memory_order_relaxed); }

void RingWriter::drainSpace() { drain(space_fd_); }

RingReader::RingReader(int pidfd, const RingFds& fds) {
  checkCapacity(fds.capacity);
  int memfd = -1;
  auto take = [&](int fd, const char* what) {
    if (fd < 0) throw Error(Status::InvalidArgument, std::string("ring: its ") + what + " descriptor is " +
                                                         std::to_string(fd));
    // glibc 2.36's <sys/pidfd.h> declares it without C linkage for C++.
    const int mine = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, fd, 0));
    if (mine < 0) {
      throw Error(Status::Internal, std::string("ring: taking the writer's ") + what + " descriptor " +
                                        std::to_string(fd) + " failed: " + errnoText(errno));
    }
    return mine;
  };
  auto isEventfd = [](int fd) {
    char link[64] = {0};
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    const ssize_t n = readlink(path.c_str(), link, sizeof link - 1);
    return n > 0 && std::string(link, static_cast<size_t>(n)) == "anon_inode:[eventfd]";
  };
  try {
    memfd = take(fds.memfd, "memfd");
    wake_fd_ = take(fds.wake_fd, "wake");
    space_fd_ = take(fds.space_fd, "space");
    struct stat st {};
    const int seals = fcntl(memfd, F_GET_SEALS);
    if (fstat(memfd, &st) != 0 || seals < 0 || !(seals & F_SEAL_SHRINK)) {
      throw Error(Status::InvalidArgument, "ring: descriptor " + std::to_string(fds.memfd) +
                                               " of the writer is not a memfd sealed against shrinking");
    }
    if (static_cast<uint64_t>(st.st_size) != RingMapping::fileBytes(fds.capacity)) {
      throw Error(Status::InvalidArgument, "ring: its memfd holds " + std::to_string(st.st_size) +
                                               " bytes, not the " + std::to_string(RingMapping::fileBytes(fds.capacity)) +
                                               " of a " + std::to_string(fds.capacity) + "-byte ring");
    }
    if (!isEventfd(wake_fd_) || !isEventfd(space_fd_)) {
      throw Error(Status::InvalidArgument, "ring: descriptor " + std::to_string(fds.wake_fd) + " or " +
                                               std::to_string(fds.space_fd) + " of the writer is not an eventfd");
    }
    map_ = std::make_unique<RingMapping>(memfd, fds.capacity, false);
    ::close(memfd);  // the mapping keeps it
    memfd = -1;
    RingHeader* h = map_->header();
    if (h->magic != kRingMagic || h->capacity != fds.capacity) {
      throw Error(Status::InvalidArgument, "ring: its header reads magic " + std::to_string(h->magic) +
                                               " and capacity " + std::to_string(h->capacity) + ", not a " +
                                               std::to_string(fds.capacity) + "-byte ring");
    }
    tail_ = h->tail.load(std::memory_order_acquire);
    head_seen_ = tail_;
  } catch (...) {
    map_.reset();
    closeFd(memfd);
    closeFd(wake_fd_);
    closeFd(space_fd_);
    throw;
  }
}

RingReader::~RingReader() {
  map_.reset();
  closeFd(wake_fd_);
  closeFd(space_fd_);
}

RingReader::Read RingReader::next(RingMessage* out) {
  if (!corruption_.empty()) return Read::Corrupt;
  RingHeader* h = map_->header();
  const uint64_t cap = map_->capacity();
  // The writer's head as last read: messages up to it are read without
  // touching its cache line, which the writer moves after every message.
  uint64_t head = head_seen_;
  if (head == tail_) {
    head = h->head.load(std::memory_order_acquire);
    if (head == tail_) return Read::Empty;
    const uint64_t published = head - tail_;
    if (head < tail_ || published > cap || published % kRingAlign != 0) {
      corruption_ = "its head " + std::to_string(head) + " is not within " + std::to_string(cap) +
                    " bytes after the reader's tail " + std::to_string(tail_);
      return Read::Corrupt;
    }
    head_seen_ = head;
  }
  const uint64_t published = head - tail_;
  const char* at = map_->data() + (tail_ & (cap - 1));
  RingRecord record;
  std::memcpy(&record, at, sizeof record);  // once: the writer's copy is not trusted twice
  const uint64_t need = aligned(sizeof record + record.bytes);
  if (record.check != ~record.bytes || need > published) {
    corruption_ = "the message at byte " + std::to_string(tail_) + " claims " + std::to_string(record.bytes) +
                  " bytes with only " + std::to_string(published) + " published";
    return Read::Corrupt;
  }
  *out = RingMessage{record.tag, at + sizeof record, record.bytes};
  seen_ = tail_ + need;
  return Read::Message;
}

void RingReader::consume() {
  if (!seen_) return;
  tail_ = seen_;
  seen_ = 0;
  RingHeader* h = map_->header();
  h->tail.store(tail_, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (h->writer_blocked.load(std::memory_order_relaxed) && h->writer_blocked.exchange(0)) signal(space_fd_);
}

bool RingReader::armWake() {
  RingHeader* h = map_->header();
  h->reader_asleep.store(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (h->head.load(std::memory_order_acquire) != tail_) {
    h->reader_asleep.store(0, std::memory_order_relaxed);
    return false;
  }
  return true;
}

void RingReader::disarmWake() { map_->header()->reader_asleep.store(0, std::memory_order_relaxed); }

void RingReader::drainWake() { drain(wake_fd_); }

}  // namespace mw::samehost
