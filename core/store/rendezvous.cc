#include "core/store/rendezvous.h"

#include "core/capped_text.h"
#include "core/error.h"
#include "core/store/redis_signal.h"
#include "core/store/redis_values.h"
#include "core/store/rendezvous_scripts.h"

namespace mw {
namespace {

long long nowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::vector<std::string> elementsOf(const redisReply* r) {
  std::vector<std::string> out;
  for (size_t i = 0; i < r->elements; ++i) out.push_back(replyString(r->element[i]));
  return out;
}

// A field's bad value is quoted; a key of the wrong type is described.
std::string describeCorrupt(const JoinReply& v) {
  if (v.field.empty()) return "Redis key " + v.key + " holds " + v.value + ", not a world record";
  return "Redis key " + v.key + " field '" + v.field + "' holds '" + v.value + "', not a valid value";
}

// The member id of every rank of a formed epoch, read for ranks 0..size-1
// only (whatever else the hash holds).
std::vector<std::string> readMembers(RedisConnection& conn, const Keys& keys, const std::string& world,
                                     uint64_t epoch, int size) {
  const std::string key = keys.worldEpoch(world, epoch, "members");
  std::vector<std::string> hmget = {"HMGET", key};
  for (int r = 0; r < size; ++r) hmget.push_back(std::to_string(r));
  auto reply = conn.command(hmget);
  if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements != static_cast<size_t>(size)) {
    std::string why = replyIsError(reply.get()) ? ": " + cappedText(replyString(reply.get())) : "";
    throw Error(Status::Store, "world '" + world + "': cannot read the member list " + key + why);
  }
  std::vector<std::optional<std::string>> fields;
  fields.reserve(static_cast<size_t>(size));
  for (size_t i = 0; i < reply->elements; ++i) {
    const redisReply* e = reply->element[i];
    if (e && e->type == REDIS_REPLY_STRING) fields.emplace_back(replyString(e));
    else fields.emplace_back(std::nullopt);
  }
  MemberList list = parseMemberList(fields);
  if (list.bad_rank >= 0) {
    throw Error(Status::Store, "world '" + world + "' epoch " + std::to_string(epoch) + ": Redis key " + key +
                                   " lacks a valid member id for rank " + std::to_string(list.bad_rank));
  }
  return std::move(list.members);
}

// How epoch `epoch` came about, from the world's record; formed when the
// record is of another epoch by now, or says nothing readable.
Lineage readLineage(RedisConnection& conn, const Keys& keys, const std::string& world, uint64_t epoch) {
  Lineage l;
  auto reply = conn.command({"HMGET", keys.worldMeta(world), "epoch", "how", "from", "old_size", "excluded"});
  if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements != 5) return l;
  auto field = [&](size_t i) { return replyString(reply->element[i]); };
  if (parseEpoch(field(0)) != epoch) return l;
  auto from = parseEpoch(field(2));
  auto old_size = parseWorldSize(field(3));
  if (!from || !old_size || *from >= epoch) return l;
  if (field(1) == "shrunk") {
    l.how = Lineage::How::Shrunk;
  } else if (field(1) == "grown") {
    l.how = Lineage::How::Grown;
  } else {
    return l;
  }
  l.from = *from;
  l.old_size = *old_size;
  l.excluded = cappedText(field(4));
  return l;
}

}  // namespace

Formation Rendezvous::join(const std::string& world, int rank, int size, Deadline deadline) {
  const std::string meta = keys_.worldMeta(world);
  auto ttl = remaining(deadline) + std::chrono::seconds(30);
  auto conn = pool_.lease();
  auto reply = conn->command({"EVAL", scripts::join(), "1", meta, std::to_string(rank), std::to_string(size), member_,
                              std::to_string(ttl.count()), std::to_string(nowUnixMs()), keys_.heartbeatPrefix(),
                              keys_.worldEpochBase(world)});
  if (replyIsError(reply.get())) {
    throw Error(Status::Store, "rendezvous of world '" + world + "': " + cappedText(replyString(reply.get())));
  }
  std::optional<JoinReply> verdict;
  if (reply && reply->type == REDIS_REPLY_ARRAY) verdict = parseJoinReply(elementsOf(reply.get()));
  if (!verdict) throw Error(Status::Store, "rendezvous of world '" + world + "': malformed reply from Redis");
  switch (verdict->kind) {
    case JoinReply::Kind::SizeMismatch:
      throw Error(Status::InvalidArgument, "world '" + world + "': " + verdict->text);
    case JoinReply::Kind::Resizing:
      throw Error(Status::InvalidArgument, "world '" + world + "': " + verdict->text);
    case JoinReply::Kind::Taken:
      throw Error(Status::AlreadyExists, "world '" + world + "': rank " + std::to_string(rank) +
                                             " is already claimed by live member " + verdict->text);
    case JoinReply::Kind::Corrupt:
      throw Error(Status::Store, "world '" + world + "': " + describeCorrupt(*verdict));
    case JoinReply::Kind::Ok:
      break;
  }
  return awaitClaims(*conn, world, verdict->epoch, rank, size, deadline);
}

Formation Rendezvous::awaitClaims(RedisConnection& conn, const std::string& world, uint64_t epoch, int rank,
                                  int size, Deadline deadline) {
  Formation f;
  f.epoch = epoch;
  // The last claim (or a size mismatch) pushes one token that releases
  // every member.
  const std::string go_key = keys_.worldEpoch(world, f.epoch, "go");
  auto token = awaitSignal(conn, go_key, remaining(deadline), pool_.timeout());
  if (!token) {
    leave(world, f.epoch, rank);
    throw Error(Status::Timeout, "world '" + world + "' epoch " + std::to_string(f.epoch) +
                                     ": not every rank of " + std::to_string(size) + " joined before the timeout");
  }
  auto go = parseGoToken(*token);
  if (!go) {
    throw Error(Status::Store, "world '" + world + "': Redis key " + go_key + " holds '" + cappedText(*token) +
                                   "', not a rendezvous token");
  }
  if (!go->ok) {
    // A size mismatch fails the epoch (and says so); anything else ended
    // it: a member that gave up on it or died while it formed, or a newer
    // epoch that started.
    if (go->why.rfind("world size mismatch", 0) == 0) {
      throw Error(Status::InvalidArgument, "world '" + world + "': " + go->why);
    }
    throw Error(Status::WorldBroken, "world '" + world + "' epoch " + std::to_string(f.epoch) +
                                         " broke before it formed: " + go->why);
  }
  f.members = readMembers(conn, keys_, world, f.epoch, size);
  f.lineage = readLineage(conn, keys_, world, f.epoch);
  return f;
}

void Rendezvous::commit(const Incarnation& inc, int rank, Deadline deadline) {
  const std::string where = inc.where();
  auto ttl = remaining(deadline) + std::chrono::seconds(30);
  auto conn = pool_.lease();
  auto reply = conn->command({"EVAL", scripts::commit(), "1", keys_.worldMeta(inc.world()),
                              std::to_string(inc.epoch()), std::to_string(rank), std::to_string(inc.size()), member_,
                              keys_.worldEpochBase(inc.world()), std::to_string(ttl.count())});
  if (replyIsError(reply.get())) throw Error(Status::Store, where + ": " + cappedText(replyString(reply.get())));
  std::vector<std::string> v;
  if (reply && reply->type == REDIS_REPLY_ARRAY) v = elementsOf(reply.get());
  if (v.size() == 3 && v[0] == "gone" && v[1] == std::to_string(inc.epoch()) && v[2] != "broken") {
    throw Error(Status::Store, where + " is no longer the world's current, ready incarnation in Redis (now epoch " +
                                   cappedText(v[1]) + ", " + cappedText(v[2]) + ")");
  }
  // A newer epoch, a member that gave up, or a lost master: Redis says which.
  if (v.size() == 3 && v[0] == "gone") inc.ended(*conn, "a member gave up");
  if (!v.empty() && v[0] == "corrupt") {
    if (auto corrupt = parseJoinReply(v)) throw Error(Status::Store, where + ": " + describeCorrupt(*corrupt));
  }
  if (v.size() != 1 || v[0] != "ok") throw Error(Status::Store, where + ": malformed reply from Redis to the commit");

  const std::string formed = inc.key("formed");
  auto token = awaitSignal(*conn, formed, remaining(deadline), pool_.timeout());
  if (!token) {
    throw Error(Status::Timeout, where + ": not every rank of " + std::to_string(inc.size()) +
                                     " finished joining before the timeout");
  }
  auto go = parseGoToken(*token);
  if (!go) {
    throw Error(Status::Store, where + ": Redis key " + formed + " holds '" + cappedText(*token) +
                                   "', not a rendezvous token");
  }
  if (!go->ok) inc.ended(*conn, go->why);
}

void Rendezvous::leave(const std::string& world, uint64_t epoch, int rank) noexcept {
  try {
    auto conn = pool_.lease();
    conn->command({"EVAL", scripts::leave(), "1", keys_.worldMeta(world), std::to_string(epoch), std::to_string(rank),
                   member_, keys_.worldEpochBase(world)});
  } catch (...) {
    // The claim expires with its TTL.
  }
}

}  // namespace mw
