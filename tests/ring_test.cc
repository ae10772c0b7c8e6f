// The same-host ring (core/same_host/ring.h) between this process and
// itself, and between real processes: order and content across the wrap,
// full and empty with each side asleep, a writer killed mid-stream, and
// everything a writer could put in the ring or its descriptors that must
// not be followed.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/same_host/ring.h"

namespace {

using mw::samehost::RingFds;
using mw::samehost::RingMessage;
using mw::samehost::RingReader;
using mw::samehost::RingWriter;
using Read = RingReader::Read;
using Write = RingWriter::Write;

int pidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

bool readable(int fd, int timeout_ms = 0) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

// Message `seq` of a stream: its size and its bytes follow from seq alone.
size_t sizeOf(uint64_t seq, size_t max) { return (seq * 2654435761u) % (max + 1); }
char byteOf(uint64_t seq, size_t i) { return static_cast<char>((seq * 131 + i) & 0xff); }
std::vector<char> payloadOf(uint64_t seq, size_t max) {
  std::vector<char> p(sizeOf(seq, max));
  for (size_t i = 0; i < p.size(); ++i) p[i] = byteOf(seq, i);
  return p;
}
// "" when `m` is message `seq` whole.
std::string wrongIn(const RingMessage& m, uint64_t seq, size_t max) {
  if (m.tag != seq) return "tag " + std::to_string(m.tag) + " where " + std::to_string(seq) + " was due";
  if (m.bytes != sizeOf(seq, max)) return "message " + std::to_string(seq) + " has " + std::to_string(m.bytes) + " bytes";
  for (size_t i = 0; i < m.bytes; ++i) {
    if (m.data[i] != byteOf(seq, i)) return "message " + std::to_string(seq) + " differs at byte " + std::to_string(i);
  }
  return "";
}

class RingInOneProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    self_ = pidfdOpen(getpid());
    ASSERT_GE(self_, 0);
  }
  void TearDown() override { close(self_); }
  int self_ = -1;
};

TEST_F(RingInOneProcess, MessagesOfEverySizeComeBackInOrderAcrossTheWrap) {
  RingWriter w(16384);
  RingReader r(self_, w.fds());
  constexpr size_t kMax = 3000;
  uint64_t written = 0, read = 0;
  std::mt19937 rng(7);
  while (read < 5000) {
    // A few in, a few out: the ring wraps again and again, half full.
    for (int n = rng() % 6; n > 0; --n) {
      auto p = payloadOf(written, kMax);
      if (w.write(written, p.data(), p.size()) != Write::Written) break;
      ++written;
    }
    for (int n = rng() % 6; n > 0 && read < written; --n) {
      RingMessage m;
      ASSERT_EQ(r.next(&m), Read::Message);
      RingMessage again;
      ASSERT_EQ(r.next(&again), Read::Message);  // the same until consumed
      EXPECT_EQ(again.data, m.data);
      ASSERT_EQ(wrongIn(m, read, kMax), "");
      r.consume();
      ++read;
    }
  }
  RingMessage m;
  while (read < written) {
    ASSERT_EQ(r.next(&m), Read::Message);
    ASSERT_EQ(wrongIn(m, read++, kMax), "");
    r.consume();
  }
  EXPECT_EQ(r.next(&m), Read::Empty);
  EXPECT_EQ(w.unread(), 0u);
}

TEST_F(RingInOneProcess, AFullRingWakesItsWriterOnlyOnceThereIsRoom) {
  RingWriter w(4096);
  RingReader r(self_, w.fds());
  const std::vector<char> p(1000, 'x');
  int in = 0;
  while (w.write(in, p.data(), p.size()) == Write::Written) ++in;
  EXPECT_EQ(in, 4);  // 1016 bytes each with its header
  EXPECT_EQ(w.write(99, p.data(), p.size()), Write::Full);
  RingMessage m;
  // Full, but the writer did not ask: consuming wakes nobody.
  ASSERT_EQ(r.next(&m), Read::Message);
  r.consume();
  EXPECT_FALSE(readable(w.spaceFd()));
  EXPECT_FALSE(w.armSpace(p.size()));  // room now: nothing armed
  EXPECT_EQ(w.write(in++, p.data(), p.size()), Write::Written);
  EXPECT_EQ(w.write(99, p.data(), p.size()), Write::Full);
  EXPECT_TRUE(w.armSpace(p.size()));
  EXPECT_FALSE(readable(w.spaceFd()));
  ASSERT_EQ(r.next(&m), Read::Message);
  EXPECT_FALSE(readable(w.spaceFd()));  // looked at, not yet consumed
  r.consume();
  EXPECT_TRUE(readable(w.spaceFd()));
  w.drainSpace();
  EXPECT_FALSE(readable(w.spaceFd()));
  EXPECT_EQ(w.write(in, p.data(), p.size()), Write::Written);
  // The writer did not ask since: consuming wakes nobody.
  ASSERT_EQ(r.next(&m), Read::Message);
  r.consume();
  EXPECT_FALSE(readable(w.spaceFd()));
}

TEST_F(RingInOneProcess, TheReaderIsWokenOnlyWhenItAsked) {
  RingWriter w(8192);
  RingReader r(self_, w.fds());
  const char byte = 1;
  for (int i = 0; i < 10; ++i) ASSERT_EQ(w.write(i, &byte, 1), Write::Written);
  EXPECT_FALSE(readable(r.wakeFd()));  // it never asked: no syscall on the writer's side
  EXPECT_FALSE(r.armWake());           // messages wait: it must not sleep
  RingMessage m;
  while (r.next(&m) == Read::Message) r.consume();
  ASSERT_TRUE(r.armWake());
  EXPECT_FALSE(readable(r.wakeFd()));
  ASSERT_EQ(w.write(10, &byte, 1), Write::Written);
  EXPECT_TRUE(readable(r.wakeFd()));
  ASSERT_EQ(w.write(11, &byte, 1), Write::Written);  // one wake per request
  r.disarmWake();
  r.drainWake();
  EXPECT_FALSE(readable(r.wakeFd()));
  ASSERT_EQ(r.next(&m), Read::Message);
  EXPECT_EQ(m.tag, 10u);
  while (r.next(&m) == Read::Message) r.consume();
  ASSERT_TRUE(r.armWake());
  r.disarmWake();  // withdrawn: the writer no longer wakes it
  ASSERT_EQ(w.write(12, &byte, 1), Write::Written);
  EXPECT_FALSE(readable(r.wakeFd()));
}

TEST_F(RingInOneProcess, AMessageLargerThanTheRingIsRefused) {
  RingWriter w(4096);
  std::vector<char> p(w.maxMessage() + 1);
  EXPECT_EQ(w.write(1, p.data(), p.size()), Write::TooLarge);
  EXPECT_EQ(w.write(1, p.data(), w.maxMessage()), Write::Written);
}

TEST_F(RingInOneProcess, BadCapacitiesAndDescriptorsAreRefusedNamingTheValue) {
  for (uint64_t bad : {uint64_t{0}, uint64_t{1000}, uint64_t{6000}, uint64_t{1} << 40}) {
    try {
      RingWriter w(bad);
      ADD_FAILURE() << bad;
    } catch (const mw::Error& e) {
      EXPECT_EQ(e.status(), mw::Status::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find(std::to_string(bad)), std::string::npos) << e.what();
    }
  }
  RingWriter w(8192);
  auto refused = [&](RingFds fds, mw::Status status, const std::string& named) {
    try {
      RingReader r(self_, fds);
      ADD_FAILURE() << "accepted " << named;
    } catch (const mw::Error& e) {
      EXPECT_EQ(e.status(), status) << e.what();
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
  };
  RingFds fds = w.fds();
  fds.capacity = 4096;  // the memfd holds a larger ring
  refused(fds, mw::Status::InvalidArgument, "bytes, not the");
  fds = w.fds();
  fds.memfd = 987;  // nothing there
  refused(fds, mw::Status::Internal, "descriptor 987");
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  fds = w.fds();
  fds.memfd = pipefd[0];
  refused(fds, mw::Status::InvalidArgument, "not a memfd");
  fds = w.fds();
  fds.wake_fd = pipefd[1];
  refused(fds, mw::Status::InvalidArgument, "not an eventfd");
  close(pipefd[0]);
  close(pipefd[1]);
  // A memfd the writer could still shrink under the reader's mapping.
  const int unsealed = memfd_create("unsealed", MFD_CLOEXEC);
  ASSERT_GE(unsealed, 0);
  ASSERT_EQ(ftruncate(unsealed, 4096 + 8192), 0);
  fds = w.fds();
  fds.memfd = unsealed;
  refused(fds, mw::Status::InvalidArgument, "sealed");
  close(unsealed);
}

// The writer's side of the shared page, as a writer that lies would
// write it: the header's layout is the ring's (head at byte 64).
std::atomic<uint64_t>* headOf(void* page) {
  return reinterpret_cast<std::atomic<uint64_t>*>(static_cast<char*>(page) + 64);
}

TEST_F(RingInOneProcess, AWriterThatLiesIsReportedNotFollowed) {
  RingWriter w(8192);
  RingReader r(self_, w.fds());
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, w.fds().memfd, 0);
  ASSERT_NE(page, MAP_FAILED);
  const char byte = 5;
  ASSERT_EQ(w.write(1, &byte, 1), Write::Written);
  RingMessage m;
  // A head past the capacity.
  const uint64_t head = headOf(page)->load();
  headOf(page)->store(head + (1 << 20));
  EXPECT_EQ(r.next(&m), Read::Corrupt);
  EXPECT_NE(r.corruption().find("not within 8192 bytes"), std::string::npos) << r.corruption();
  EXPECT_EQ(r.next(&m), Read::Corrupt);  // and it stays so
  munmap(page, 4096);

  // A message header that claims more than was published.
  RingWriter w2(8192);
  RingReader r2(self_, w2.fds());
  void* page2 = mmap(nullptr, 4096 + 8192, PROT_READ | PROT_WRITE, MAP_SHARED, w2.fds().memfd, 0);
  ASSERT_NE(page2, MAP_FAILED);
  ASSERT_EQ(w2.write(1, &byte, 1), Write::Written);
  uint32_t lie = 100000;
  std::memcpy(static_cast<char*>(page2) + 4096 + 8, &lie, sizeof lie);
  lie = ~lie;
  std::memcpy(static_cast<char*>(page2) + 4096 + 12, &lie, sizeof lie);
  EXPECT_EQ(r2.next(&m), Read::Corrupt);
  EXPECT_NE(r2.corruption().find("claims 100000 bytes"), std::string::npos) << r2.corruption();
  munmap(page2, 4096 + 8192);
}

// A writer in a child process: it creates the ring, sends its descriptors
// up a pipe, then streams messages 0, 1, ... (up to `count`, 0: without
// end), sleeping on its space eventfd whenever the ring is full.
pid_t streamFromChild(uint64_t capacity, size_t max, uint64_t count, RingFds* fds) {
  int p[2];
  if (pipe(p) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(p[0]);
    RingWriter w(capacity);
    const RingFds mine = w.fds();
    if (::write(p[1], &mine, sizeof mine) != static_cast<ssize_t>(sizeof mine)) _exit(2);
    close(p[1]);
    for (uint64_t seq = 0; count == 0 || seq < count; ++seq) {
      const auto payload = payloadOf(seq, max);
      for (;;) {
        const Write got = w.write(seq, payload.data(), payload.size());
        if (got == Write::Written) break;
        if (got != Write::Full) _exit(3);
        if (!w.armSpace(payload.size())) continue;  // room made meanwhile
        if (!readable(w.spaceFd(), 10000)) _exit(4);  // the reader never woke us
        w.drainSpace();
      }
    }
    // Stays until every message was read, so the reader can take its descriptors late.
    while (w.unread() > 0) usleep(1000);
    _exit(0);
  }
  close(p[1]);
  const bool got = ::read(p[0], fds, sizeof *fds) == static_cast<ssize_t>(sizeof *fds);
  close(p[0]);
  return got ? pid : -1;
}

TEST(RingProcesses, AStreamWithBothSidesSleepingLosesNothing) {
  constexpr uint64_t kCount = 200000;
  constexpr size_t kMax = 2048;
  RingFds fds;
  const pid_t child = streamFromChild(65536, kMax, kCount, &fds);
  ASSERT_GT(child, 0);
  const int pidfd = pidfdOpen(child);
  ASSERT_GE(pidfd, 0);
  {
    RingReader r(pidfd, fds);
    std::mt19937 rng(11);
    uint64_t seq = 0;
    int sleeps = 0;
    while (seq < kCount) {
      RingMessage m;
      const Read got = r.next(&m);
      ASSERT_NE(got, Read::Corrupt) << r.corruption();
      if (got == Read::Empty) {
        if (r.armWake()) {
          ASSERT_TRUE(readable(r.wakeFd(), 10000)) << "never woken, at message " << seq;
          ++sleeps;
          r.drainWake();
        }
        r.disarmWake();
        continue;
      }
      ASSERT_EQ(wrongIn(m, seq, kMax), "");
      r.consume();
      ++seq;
      if (rng() % 4096 == 0) usleep(200);  // the writer fills the ring and sleeps too
    }
    EXPECT_GT(sleeps, 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  close(pidfd);
}

TEST(RingProcesses, AWriterKilledMidStreamLeavesOnlyWholeMessages) {
  constexpr size_t kMax = 60000;  // most of the writer's time is inside a copy
  std::mt19937 rng(3);
  for (int rep = 0; rep < 20; ++rep) {
    RingFds fds;
    const pid_t child = streamFromChild(262144, kMax, 0, &fds);
    ASSERT_GT(child, 0);
    const int pidfd = pidfdOpen(child);
    ASSERT_GE(pidfd, 0);
    RingReader r(pidfd, fds);
    const auto kill_at = std::chrono::steady_clock::now() + std::chrono::microseconds(500 + rng() % 20000);
    uint64_t seq = 0;
    bool killed = false;
    for (;;) {
      // Mid-stream: after the first message, at a random moment.
      if (!killed && seq > 0 && std::chrono::steady_clock::now() >= kill_at) {
        ASSERT_EQ(kill(child, SIGKILL), 0);
        ASSERT_TRUE(readable(pidfd, 10000));  // the writer is gone
        killed = true;
      }
      RingMessage m;
      const Read got = r.next(&m);
      ASSERT_NE(got, Read::Corrupt) << r.corruption();
      if (got == Read::Empty) {
        if (killed) break;  // what it published is read; the rest never was
        continue;
      }
      ASSERT_EQ(wrongIn(m, seq, kMax), "") << "rep " << rep;
      r.consume();
      ++seq;
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status)) << status;
    close(pidfd);
  }
}

}  // namespace
