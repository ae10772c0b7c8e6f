#include "tests/support/redis_server.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

namespace mwtest {
namespace {

bool answersPing(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  bool ok = false;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    const char ping[] = "PING\r\n";
    char buf[16] = {0};
    ok = write(fd, ping, sizeof ping - 1) == static_cast<ssize_t>(sizeof ping - 1) && read(fd, buf, sizeof buf - 1) > 0 &&
         (std::strncmp(buf, "+PONG", 5) == 0 || std::strncmp(buf, "-NOAUTH", 7) == 0);
  }
  close(fd);
  return ok;
}

}  // namespace

RedisServer::RedisServer(std::vector<std::string> extra_args) : extra_(std::move(extra_args)) {
  char tmpl[] = "/tmp/mwtest-redis-XXXXXX";
  if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  socket_ = dir_ + "/redis.sock";
  start();
}

RedisServer::~RedisServer() {
  if (pid_ > 0) {
    kill(pid_, SIGCONT);
    stop();
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

void RedisServer::start() {
  std::vector<std::string> args = {"redis-server", "--port", "0", "--unixsocket", socket_,
                                   "--unixsocketperm", "700", "--save", "", "--appendonly", "no",
                                   "--dir", dir_, "--logfile", dir_ + "/redis.log"};
  args.insert(args.end(), extra_.begin(), extra_.end());
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp("redis-server", argv.data());
    _exit(127);
  }
  for (int i = 0; i < 500; ++i) {
    if (answersPing(socket_)) return;
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("redis-server exited at start (is it installed?)");
    }
    // Start-up has no event to wait on; a short sleep between probes.
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  throw std::runtime_error("redis-server did not answer PING within 5 s");
}

void RedisServer::stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  int status;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  unlink(socket_.c_str());
}

void RedisServer::pause() { kill(pid_, SIGSTOP); }
void RedisServer::resume() { kill(pid_, SIGCONT); }

}  // namespace mwtest
