// A private redis-server for the CLI when no Redis was named: on a unix
// socket in a temp dir, stopped and removed when this object goes away.
#pragma once

#include <memory>
#include <string>

#include "tools/lab/private_redis.h"
#include "tools/lab/temp_dir.h"

namespace mwcli {

class EmbeddedRedis {
 public:
  // Throws std::runtime_error when redis-server is missing or does not start.
  EmbeddedRedis();
  ~EmbeddedRedis();
  EmbeddedRedis(const EmbeddedRedis&) = delete;
  EmbeddedRedis& operator=(const EmbeddedRedis&) = delete;
  std::string url() const { return server_->url(); }

 private:
  mwlab::TempDir dir_{"multiworld-redis-"};  // outlives the server in it
  std::unique_ptr<mwlab::PrivateRedis> server_;
};

}  // namespace mwcli
