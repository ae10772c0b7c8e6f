// A private redis-server for the CLI when no Redis was named: on a unix
// socket in a temp dir, stopped and removed when this object goes away.
#pragma once

#include <sys/types.h>

#include <string>

namespace mwcli {

class EmbeddedRedis {
 public:
  // Throws std::runtime_error when redis-server is missing or does not start.
  EmbeddedRedis();
  ~EmbeddedRedis();
  EmbeddedRedis(const EmbeddedRedis&) = delete;
  EmbeddedRedis& operator=(const EmbeddedRedis&) = delete;
  std::string url() const { return "unix://" + dir_ + "/redis.sock"; }

 private:
  std::string dir_;
  pid_t pid_ = -1;
};

}  // namespace mwcli
