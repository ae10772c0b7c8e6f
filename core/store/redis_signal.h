// Signal lists: how waiters on a Redis event (an epoch formed, a peer's
// address written) sleep without polling. The writer pushes one token; a
// waiter blocks in BRPOPLPUSH from the list onto itself, which hands the
// token back atomically, so one entry releases any number of waiters,
// whatever the world's size.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "core/store/redis_connection.h"

namespace mw {

// Blocks until `key` holds a token or `wait` has passed (nullopt). The
// connection's socket timeout is raised for the wait and restored to
// `round_trip`. Throws Error(Store) naming the key when Redis answers with
// an error (a key of the wrong type, say) or with something that is not a
// token.
std::optional<std::string> awaitSignal(RedisConnection& conn, const std::string& key,
                                       std::chrono::milliseconds wait, std::chrono::milliseconds round_trip);

}  // namespace mw
