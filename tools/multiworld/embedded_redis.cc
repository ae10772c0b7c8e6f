#include "tools/multiworld/embedded_redis.h"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace mwcli {

EmbeddedRedis::EmbeddedRedis() {
  char tmpl[] = "/tmp/multiworld-redis-XXXXXX";
  if (!mkdtemp(tmpl)) throw std::runtime_error("cannot make a temp dir for redis-server");
  dir_ = tmpl;
  try {
    server_ = std::make_unique<mwlab::PrivateRedis>(dir_);
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    throw;
  }
}

EmbeddedRedis::~EmbeddedRedis() {
  server_.reset();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

}  // namespace mwcli
