#include "tests/support/redis_server.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "tools/lab/private_redis.h"

namespace mwtest {

RedisServer::RedisServer(std::vector<std::string> extra_args)
    : socket_(dir_.path() + "/redis.sock"), extra_(std::move(extra_args)) {
  start();
}

RedisServer::~RedisServer() {
  if (pid_ > 0) {
    kill(pid_, SIGCONT);
    stop();
  }
}

void RedisServer::start() {
  std::vector<std::string> args = {"redis-server", "--port", "0", "--unixsocket", socket_,
                                   "--unixsocketperm", "700", "--save", "", "--appendonly", "no",
                                   "--dir", dir_.path(), "--logfile", dir_.path() + "/redis.log"};
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
    if (mwlab::redisAnswersPing(socket_)) return;
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
