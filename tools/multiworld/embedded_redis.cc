#include "tools/multiworld/embedded_redis.h"

namespace mwcli {

EmbeddedRedis::EmbeddedRedis() : server_(std::make_unique<mwlab::PrivateRedis>(dir_.path())) {}

EmbeddedRedis::~EmbeddedRedis() = default;

}  // namespace mwcli
