#include "core/store/incarnation.h"

#include <vector>

#include "core/capped_text.h"
#include "core/store/incarnation_scripts.h"
#include "core/store/redis_values.h"

namespace mw {

std::string Incarnation::where() const { return "world '" + world_ + "' epoch " + std::to_string(epoch_); }

void Incarnation::ended(RedisConnection& conn, const std::string& why) const {
  // An empty suffix only checks; it returns when Redis shows it ready still.
  watch(conn, "", Clock::now());
  throw Error(Status::WorldBroken, where() + " broke before it formed: " + cappedText(why));
}

void Incarnation::watch(RedisConnection& conn, const std::string& suffix, Deadline deadline) const {
  const std::string ttl = std::to_string((remaining(deadline) + std::chrono::seconds(30)).count());
  auto reply = conn.command({"EVAL", scripts::watch(), "1", keys_.worldMeta(world_), std::to_string(epoch_),
                             keys_.worldEpochBase(world_), suffix, ttl});
  if (replyIsError(reply.get())) throw Error(Status::Store, where() + ": " + cappedText(replyString(reply.get())));
  std::vector<std::string> v;
  if (reply && reply->type == REDIS_REPLY_ARRAY) {
    for (size_t i = 0; i < reply->elements; ++i) v.push_back(replyString(reply->element[i]));
  }
  if (v.size() == 1 && v[0] == "ok") return;
  if (v.size() == 4 && v[0] == "gone") {
    const std::string now = "now epoch " + cappedText(v[1]) + ", " + cappedText(v[2]);
    auto current = parseEpoch(v[1]);
    if (current && *current > epoch_) {
      throw MovedOn(where() + " was replaced by a newer incarnation while this member formed it (" + now +
                    "): a member started the world anew");
    }
    if (current && *current == epoch_ && v[2] == "broken") {
      const std::string detail = v[3].empty() ? "a member gave up" : cappedText(v[3]);
      throw Error(Status::WorldBroken, where() + " broke before it formed: " + detail);
    }
    throw Error(Status::Store, where() + " is no longer the world's current, ready incarnation in Redis (" + now +
                                   "): it was lost, as with a Redis master that failed over");
  }
  if (v.size() == 4 && v[0] == "corrupt") {
    const std::string key = "Redis key " + cappedText(v[1]);
    if (v[2].empty()) throw Error(Status::Store, where() + ": " + key + " holds " + cappedText(v[3]));
    throw Error(Status::Store, where() + ": " + key + " field '" + cappedText(v[2]) + "' holds '" +
                                   cappedText(v[3]) + "', not a valid value");
  }
  throw Error(Status::Store, where() + ": malformed reply from Redis to the formation's watch");
}

}  // namespace mw
