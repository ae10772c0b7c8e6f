#include "tools/lab/private_redis.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace mwlab {

bool redisAnswersPing(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  bool ok = false;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const char ping[] = "PING\r\n";
    char buf[16] = {0};
    ok = write(fd, ping, sizeof ping - 1) == static_cast<ssize_t>(sizeof ping - 1) &&
         read(fd, buf, sizeof buf - 1) > 0 &&
         (std::strncmp(buf, "+PONG", 5) == 0 || std::strncmp(buf, "-NOAUTH", 7) == 0);
  }
  close(fd);
  return ok;
}

PrivateRedis::PrivateRedis(const std::string& dir, const std::vector<std::string>& extra_args)
    : socket_(dir + "/redis.sock") {
  std::vector<std::string> args = {"redis-server", "--port", "0", "--unixsocket", socket_,
                                   "--unixsocketperm", "700", "--save", "", "--appendonly", "no",
                                   "--dir", dir, "--logfile", dir + "/redis.log"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  std::fflush(nullptr);
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed: " + std::string(std::strerror(errno)));
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive whoever started it
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp("redis-server", argv.data());
    _exit(127);
  }
  for (int i = 0; i < 1000; ++i) {
    if (redisAnswersPing(socket_)) return;
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      unlink(socket_.c_str());
      throw std::runtime_error("redis-server exited at start (is it installed? apt-get install redis-server; see " +
                               dir + "/redis.log)");
    }
    // Start-up has no event to wait on; probe every 10 ms.
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop();
  throw std::runtime_error("redis-server did not answer PING within 10 s");
}

PrivateRedis::~PrivateRedis() { stop(); }

void PrivateRedis::stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  kill(pid_, SIGCONT);  // a stopped server handles SIGTERM only once it runs
  int status;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  unlink(socket_.c_str());
}

}  // namespace mwlab
