#include "core/store/redis_signal.h"

#include <cstdio>

#include "core/capped_text.h"
#include "core/error.h"

namespace mw {

std::optional<std::string> awaitSignal(RedisConnection& conn, const std::string& key,
                                       std::chrono::milliseconds wait, std::chrono::milliseconds round_trip) {
  // A blocking timeout of 0 means "forever" to Redis.
  if (wait.count() < 1) return std::nullopt;
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.3f", static_cast<double>(wait.count()) / 1000.0);
  conn.setTimeout(wait + round_trip);
  auto r = conn.command({"BRPOPLPUSH", key, key, seconds});
  conn.setTimeout(round_trip);
  if (!r || r->type == REDIS_REPLY_NIL) return std::nullopt;
  if (r->type != REDIS_REPLY_STRING) {
    std::string why = replyIsError(r.get()) ? replyString(r.get()) : "a reply that is not a token";
    throw Error(Status::Store, "waiting on Redis key " + key + ": " + cappedText(why));
  }
  return replyString(r.get());
}

}  // namespace mw
