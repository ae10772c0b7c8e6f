// What the same-host ring (core/same_host/ring.h) could give small
// messages, against TCP on loopback, between two processes of this host:
// the evidence for carrying them there. Run by hand:
//   ./build/bench/ring_probe [--rounds R] [--iters N]
//
// Latency: 64-byte ping-pong, one way = round trip / 2, median of rounds.
//   ring_spin   both sides poll the ring (what a waiter inside its spin sees)
//   ring_sleep  both sides sleep on the wake eventfd after every message
//   tcp_spin    non-blocking recv in a loop, TCP_NODELAY
//   tcp_sleep   blocking recv, TCP_NODELAY
// Stream: one process writes N-byte messages as fast as the reader takes
// them (the ring: 1 MiB; the reader polls and copies each message out
// to a buffer of its own, as a receive does), Gbit/s.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/same_host/ring.h"

namespace {

using mw::samehost::RingFds;
using mw::samehost::RingMessage;
using mw::samehost::RingReader;
using mw::samehost::RingWriter;
using Clock = std::chrono::steady_clock;

int pidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

void waitReadable(int fd) {
  pollfd p{fd, POLLIN, 0};
  while (::poll(&p, 1, -1) < 0) {
  }
}

// One side of a ring pair: it writes on its own ring and reads the other's.
struct RingSide {
  RingWriter* out;
  RingReader* in;
  bool sleep;
  std::vector<char> sink;
  void send(const char* msg, size_t bytes) {
    while (out->write(1, msg, bytes) != RingWriter::Write::Written) {
      if (!out->armSpace(bytes)) continue;
      waitReadable(out->spaceFd());
      out->drainSpace();
    }
  }
  size_t receive() {
    RingMessage m;
    for (;;) {
      if (in->next(&m) == RingReader::Read::Message) {
        const size_t n = m.bytes;
        // Into the receive's buffer, as the library's reader does.
        if (sink.size() < n) sink.resize(n);
        std::memcpy(sink.data(), m.data, n);
        in->consume();
        return n;
      }
      if (sleep && in->armWake()) {
        waitReadable(in->wakeFd());
        in->drainWake();
        in->disarmWake();
      }
    }
  }
};

struct Pipe {
  int fd[2];
  Pipe() {
    if (pipe(fd) != 0) std::abort();
  }
};

void put(int fd, const void* p, size_t n) {
  if (::write(fd, p, n) != static_cast<ssize_t>(n)) std::abort();
}
void get(int fd, void* p, size_t n) {
  if (::read(fd, p, n) != static_cast<ssize_t>(n)) std::abort();
}

// Two processes, each with the ring it writes; they swap descriptors
// through pipes and attach to each other's. `body(side, parent)` runs in
// both; the parent's return value is the result.
template <typename Body>
double ringPair(bool sleep, Body body) {
  Pipe up, down;
  const pid_t child = fork();
  const bool parent = child != 0;
  RingWriter mine(1 << 20);
  const RingFds fds = mine.fds();
  RingFds theirs;
  if (parent) {
    put(down.fd[1], &fds, sizeof fds);
    get(up.fd[0], &theirs, sizeof theirs);
  } else {
    put(up.fd[1], &fds, sizeof fds);
    get(down.fd[0], &theirs, sizeof theirs);
  }
  const int pidfd = pidfdOpen(parent ? child : getppid());
  double result = 0;
  {
    RingReader reader(pidfd, theirs);
    // Both attached before either may exit.
    char ready = 1;
    put(parent ? down.fd[1] : up.fd[1], &ready, 1);
    get(parent ? up.fd[0] : down.fd[0], &ready, 1);
    RingSide side{&mine, &reader, sleep, {}};
    result = body(side, parent);
    put(parent ? down.fd[1] : up.fd[1], &ready, 1);
    get(parent ? up.fd[0] : down.fd[0], &ready, 1);
  }
  if (!parent) _exit(0);
  waitpid(child, nullptr, 0);
  close(pidfd);
  return result;
}

void tcpNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

void tcpSend(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t k = ::send(fd, p, n, 0);
    if (k < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      std::abort();
    }
    p += k;
    n -= static_cast<size_t>(k);
  }
}
void tcpRecv(int fd, char* p, size_t n) {
  while (n > 0) {
    const ssize_t k = ::recv(fd, p, n, 0);
    if (k < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      std::abort();
    }
    if (k == 0) std::abort();
    p += k;
    n -= static_cast<size_t>(k);
  }
}

// A TCP connection on loopback between two processes; `body(fd, parent)`.
template <typename Body>
double tcpPair(bool spin, Body body) {
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(listener, 1) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    std::abort();
  }
  const pid_t child = fork();
  int fd;
  if (child == 0) {
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) std::abort();
  } else {
    fd = accept(listener, nullptr, nullptr);
  }
  close(listener);
  tcpNoDelay(fd);
  if (spin) fcntl(fd, F_SETFL, O_NONBLOCK);
  const double result = body(fd, child != 0);
  close(fd);
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  return result;
}

double usSince(Clock::time_point t) { return std::chrono::duration<double, std::micro>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double ringLatency(bool sleep, int iters) {
  return ringPair(sleep, [&](RingSide& s, bool parent) {
    char msg[64] = {0};
    const auto start = Clock::now();
    for (int i = 0; i < iters; ++i) {
      if (parent) {
        s.send(msg, sizeof msg);
        s.receive();
      } else {
        s.receive();
        s.send(msg, sizeof msg);
      }
    }
    return usSince(start) / iters / 2;
  });
}

double tcpLatency(bool spin, int iters) {
  return tcpPair(spin, [&](int fd, bool parent) {
    char msg[64] = {0};
    const auto start = Clock::now();
    for (int i = 0; i < iters; ++i) {
      if (parent) {
        tcpSend(fd, msg, sizeof msg);
        tcpRecv(fd, msg, sizeof msg);
      } else {
        tcpRecv(fd, msg, sizeof msg);
        tcpSend(fd, msg, sizeof msg);
      }
    }
    return usSince(start) / iters / 2;
  });
}

// Gbit/s of `count` messages of `bytes` from the child to the parent.
double ringStream(size_t bytes, int count) {
  return ringPair(false, [&](RingSide& s, bool parent) {
    std::vector<char> msg(bytes, 'r');
    const auto start = Clock::now();
    for (int i = 0; i < count; ++i) {
      if (parent) s.receive();
      else s.send(msg.data(), bytes);
    }
    return bytes * 8.0 * count / (usSince(start) * 1e3);
  });
}

double tcpStream(size_t bytes, int count) {
  return tcpPair(false, [&](int fd, bool parent) {
    std::vector<char> msg(bytes, 't');
    const auto start = Clock::now();
    for (int i = 0; i < count; ++i) {
      if (parent) tcpRecv(fd, msg.data(), bytes);
      else tcpSend(fd, msg.data(), bytes);
    }
    return bytes * 8.0 * count / (usSince(start) * 1e3);
  });
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5, iters = 20000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--rounds") rounds = std::max(1, std::atoi(argv[i + 1]));
    else if (a == "--iters") iters = std::max(100, std::atoi(argv[i + 1]));
    else {
      std::fprintf(stderr, "usage: ring_probe [--rounds R] [--iters N]\n");
      return 2;
    }
  }
  std::printf("# 64-byte one-way latency, us (median of %d rounds of %d round trips)\n", rounds, iters);
  std::printf("%-12s %10s\n", "how", "us");
  struct Case {
    const char* name;
    double (*run)(int);
  } cases[] = {
      {"ring_spin", [](int n) { return ringLatency(false, n); }},
      {"ring_sleep", [](int n) { return ringLatency(true, n); }},
      {"tcp_spin", [](int n) { return tcpLatency(true, n); }},
      {"tcp_sleep", [](int n) { return tcpLatency(false, n); }},
  };
  for (const Case& c : cases) {
    std::vector<double> v;
    for (int r = 0; r < rounds; ++r) v.push_back(c.run(iters));
    std::printf("%-12s %10.2f\n", c.name, median(v));
  }
  std::printf("# one-way stream, Gbit/s (median of %d rounds); the ring: 1 MiB, its reader polls\n", rounds);
  std::printf("%10s %10s %10s %8s\n", "bytes", "ring", "tcp", "ratio");
  for (size_t bytes = 64; bytes <= 65536; bytes *= 4) {
    const int count = static_cast<int>(std::max<size_t>(2000, (size_t{256} << 20) / bytes / 4));
    std::vector<double> ring, tcp;
    for (int r = 0; r < rounds; ++r) {
      ring.push_back(ringStream(bytes, count));
      tcp.push_back(tcpStream(bytes, count));
    }
    std::printf("%10zu %10.2f %10.2f %8.2f\n", bytes, median(ring), median(tcp), median(ring) / median(tcp));
  }
  return 0;
}
