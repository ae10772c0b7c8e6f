#include "core/liveness/heartbeat_round.h"

#include "core/capped_text.h"
#include "core/error.h"

namespace mw {
namespace {

std::vector<std::string> mget(const std::vector<std::string>& keys) {
  std::vector<std::string> cmd = {"MGET"};
  cmd.insert(cmd.end(), keys.begin(), keys.end());
  return cmd;
}

// The values of an MGET of `n` keys; a value that is not a string counts as
// no key.
std::vector<std::optional<std::string>> values(const RedisReply& r, size_t n, const char* what) {
  if (replyIsError(r.get())) throw Error(Status::Store, std::string(what) + ": " + cappedText(replyString(r.get())));
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != n) {
    throw Error(Status::Store, std::string(what) + ": Redis answered MGET of " + std::to_string(n) +
                                   " keys with something else");
  }
  std::vector<std::optional<std::string>> out(n);
  for (size_t i = 0; i < n; ++i) {
    const redisReply* e = r->element[i];
    if (e && e->type == REDIS_REPLY_STRING) out[i] = replyString(e);
  }
  return out;
}

}  // namespace

HeartbeatReads runHeartbeatRound(RedisConnection& conn, const HeartbeatRound& round) {
  appendHeartbeatRound(conn, round);
  return readHeartbeatRound(conn, round);
}

size_t appendHeartbeatRound(RedisConnection& conn, const HeartbeatRound& round) {
  conn.append({"SET", round.heartbeat_key, round.heartbeat_value, "PX", std::to_string(round.heartbeat_ttl.count())});
  if (!round.peer_keys.empty()) conn.append(mget(round.peer_keys));
  if (!round.marker_keys.empty()) conn.append(mget(round.marker_keys));
  const std::string ttl = std::to_string(round.refresh_ttl.count());
  for (const auto& key : round.refresh_keys) conn.append({"PEXPIRE", key, ttl});
  for (const KeyWrite& w : round.writes) conn.append({"SET", w.key, w.value, "PX", std::to_string(w.ttl.count())});
  return 1 + !round.peer_keys.empty() + !round.marker_keys.empty() + round.refresh_keys.size() + round.writes.size();
}

HeartbeatReads readHeartbeatRound(RedisConnection& conn, const HeartbeatRound& round) {
  // Every reply is read before any is judged, so the pipeline never stays
  // half read.
  auto hb = conn.readReply();
  RedisReply beats(nullptr, freeRedisReply), markers(nullptr, freeRedisReply);
  if (!round.peer_keys.empty()) beats = conn.readReply();
  if (!round.marker_keys.empty()) markers = conn.readReply();
  for (size_t i = 0; i < round.refresh_keys.size(); ++i) conn.readReply();
  for (size_t i = 0; i < round.writes.size(); ++i) conn.readReply();  // a refusal breaks nothing

  if (replyIsError(hb.get())) throw Error(Status::Store, "heartbeat: " + cappedText(replyString(hb.get())));
  HeartbeatReads reads;
  if (!round.peer_keys.empty()) reads.beats = values(beats, round.peer_keys.size(), "reading heartbeats");
  if (!round.marker_keys.empty()) reads.markers = values(markers, round.marker_keys.size(), "reading break markers");
  return reads;
}

}  // namespace mw
