// A private redis-server on a unix socket in a directory the caller owns,
// for the benchmarks and the `multiworld` tool: started on construction (it dies with this
// process), stopped on destruction.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace mwlab {

// Whether a redis-server listens on the unix socket `path` and answers
// PING (a server that demands a password, -NOAUTH, is up too).
bool redisAnswersPing(const std::string& path);

class PrivateRedis {
 public:
  // Throws std::runtime_error when redis-server is missing or does not answer.
  PrivateRedis(const std::string& dir, const std::vector<std::string>& extra_args = {});
  ~PrivateRedis();
  PrivateRedis(const PrivateRedis&) = delete;
  PrivateRedis& operator=(const PrivateRedis&) = delete;

  std::string url() const { return "unix://" + socket_; }
  // The server's process, for a caller that pauses it (SIGSTOP/SIGCONT);
  // stop() ends a paused one too.
  pid_t pid() const { return pid_; }
  void stop();

 private:
  std::string socket_;
  pid_t pid_ = -1;
};

}  // namespace mwlab
