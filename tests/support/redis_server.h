// A real redis-server for one test, on a unix socket in a fresh temp dir.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "tools/lab/temp_dir.h"

namespace mwtest {

class RedisServer {
 public:
  explicit RedisServer(std::vector<std::string> extra_args = {});
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  std::string url() const { return "unix://" + socket_; }
  const std::string& socketPath() const { return socket_; }
  pid_t pid() const { return pid_; }

  void start();  // waits until it answers PING
  void stop();   // SIGTERM, reaped
  void pause();  // SIGSTOP
  void resume(); // SIGCONT

 private:
  mwlab::TempDir dir_{"mwtest-redis-"};
  std::string socket_;
  std::vector<std::string> extra_;
  pid_t pid_ = -1;
};

}  // namespace mwtest
