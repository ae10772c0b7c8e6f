#include "core/rendezvous.h"

#include <cstdio>

#include "core/error.h"

namespace mw {
namespace {

// Atomic claim of a rank. A forming epoch is joined; any other state
// (none, ready, broken, failed) starts the next epoch, unless a live
// member other than the caller holds that rank of a ready one. A claim whose owner
// has no heartbeat any more is taken over, so a crashed creator cannot
// block a rank until its keys expire.
constexpr const char* kJoinScript = R"lua(
local meta = KEYS[1]
local rank = ARGV[1]
local size = tonumber(ARGV[2])
local member = ARGV[3]
local ttl = tonumber(ARGV[4])
local hbprefix = ARGV[6]
local base = ARGV[7]
local cur = redis.call('HMGET', meta, 'epoch', 'size', 'state')
local epoch = tonumber(cur[1]) or 0
if cur[3] ~= 'forming' then
  if cur[3] == 'ready' then
    -- A healthy incarnation whose rank is held by another live member is
    -- not ours to replace; its own members may re-form it.
    local holder = redis.call('HGET', base .. epoch .. ':members', rank)
    if holder and holder ~= member and redis.call('EXISTS', hbprefix .. holder) == 1 then
      return {'taken', holder, tostring(epoch)}
    end
  end
  epoch = epoch + 1
  redis.call('HSET', meta, 'epoch', epoch, 'size', size, 'state', 'forming', 'created_ms', ARGV[5])
  redis.call('HDEL', meta, 'detail')
elseif tonumber(cur[2]) ~= size then
  local want = tonumber(cur[2]) or 0
  local msg = 'world size mismatch: rank ' .. rank .. ' asked for size ' .. size ..
              ' but epoch ' .. epoch .. ' is forming with size ' .. want
  redis.call('HSET', meta, 'state', 'failed', 'detail', msg)
  local go = base .. epoch .. ':go'
  for i = 1, want do redis.call('RPUSH', go, 'err:' .. msg) end
  redis.call('PEXPIRE', go, ttl)
  return {'size', msg}
end
local members = base .. epoch .. ':members'
local owner = redis.call('HGET', members, rank)
if owner and redis.call('EXISTS', hbprefix .. owner) == 1 then
  return {'taken', owner, tostring(epoch)}
end
redis.call('HSET', members, rank, member)
local joined = redis.call('HLEN', members)
redis.call('PEXPIRE', members, ttl)
redis.call('PEXPIRE', meta, ttl)
if joined >= size then
  redis.call('HSET', meta, 'state', 'ready')
  local go = base .. epoch .. ':go'
  for i = 1, size do redis.call('RPUSH', go, 'ok') end
  redis.call('PEXPIRE', go, ttl)
end
return {'ok', tostring(epoch)}
)lua";

constexpr const char* kLeaveScript = R"lua(
local cur = redis.call('HMGET', KEYS[1], 'epoch', 'state')
if tonumber(cur[1]) == tonumber(ARGV[1]) and cur[2] == 'forming' then
  local members = ARGV[4] .. ARGV[1] .. ':members'
  if redis.call('HGET', members, ARGV[2]) == ARGV[3] then
    redis.call('HDEL', members, ARGV[2])
  end
end
return 1
)lua";

long long nowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string secondsArg(std::chrono::milliseconds ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(ms.count()) / 1000.0);
  return buf;
}

}  // namespace

Formation Rendezvous::join(const std::string& world, int rank, int size, Deadline deadline) {
  auto ttl = remaining(deadline) + std::chrono::seconds(30);
  auto conn = pool_.lease();
  auto reply = conn->command({"EVAL", kJoinScript, "1", keys_.worldMeta(world), std::to_string(rank),
                              std::to_string(size), member_, std::to_string(ttl.count()),
                              std::to_string(nowUnixMs()), keys_.heartbeatPrefix(),
                              keys_.worldEpochBase(world)});
  if (replyIsError(reply.get())) {
    throw Error(Status::Store, "rendezvous of world '" + world + "': " + replyString(reply.get()));
  }
  if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements < 2) {
    throw Error(Status::Store, "rendezvous of world '" + world + "': unexpected reply from Redis");
  }
  std::string verdict = replyString(reply->element[0]);
  if (verdict == "size") {
    throw Error(Status::InvalidArgument, "world '" + world + "': " + replyString(reply->element[1]));
  }
  if (verdict == "taken") {
    throw Error(Status::AlreadyExists, "world '" + world + "': rank " + std::to_string(rank) +
                                           " is already claimed by live member " +
                                           replyString(reply->element[1]));
  }
  long long epoch = replyInteger(reply->element[1], -1);
  if (verdict != "ok" || epoch <= 0) {
    throw Error(Status::Store, "rendezvous of world '" + world + "': malformed reply from Redis");
  }
  Formation f;
  f.epoch = static_cast<uint64_t>(epoch);

  // Everyone blocks on the same list; the last claim (or a size mismatch)
  // pushes one token per member.
  auto left = remaining(deadline);
  if (left.count() <= 0) {
    leave(world, f.epoch, rank);
    throw Error(Status::Timeout, "world '" + world + "': timed out waiting for members");
  }
  conn->setTimeout(left + pool_.timeout());
  auto go = conn->command({"BLPOP", keys_.worldEpoch(world, f.epoch, "go"), secondsArg(left)});
  conn->setTimeout(pool_.timeout());
  if (!go || go->type == REDIS_REPLY_NIL) {
    leave(world, f.epoch, rank);
    throw Error(Status::Timeout, "world '" + world + "' epoch " + std::to_string(f.epoch) +
                                     ": not every rank of " + std::to_string(size) +
                                     " joined before the timeout");
  }
  if (go->type != REDIS_REPLY_ARRAY || go->elements != 2) {
    throw Error(Status::Store, "rendezvous of world '" + world + "': malformed BLPOP reply");
  }
  std::string token = replyString(go->element[1]);
  if (token.rfind("err:", 0) == 0) {
    throw Error(Status::InvalidArgument, "world '" + world + "': " + token.substr(4));
  }

  auto members = conn->command({"HGETALL", keys_.worldEpoch(world, f.epoch, "members")});
  if (!members || members->type != REDIS_REPLY_ARRAY) {
    throw Error(Status::Store, "world '" + world + "': cannot read the member list");
  }
  f.members.assign(static_cast<size_t>(size), std::string());
  for (size_t i = 0; i + 1 < members->elements; i += 2) {
    long long r = replyInteger(members->element[i], -1);
    if (r >= 0 && r < size) f.members[static_cast<size_t>(r)] = replyString(members->element[i + 1]);
  }
  for (int r = 0; r < size; ++r) {
    if (f.members[static_cast<size_t>(r)].empty()) {
      throw Error(Status::Store, "world '" + world + "' epoch " + std::to_string(f.epoch) +
                                     ": member list in Redis lacks rank " + std::to_string(r));
    }
  }
  return f;
}

void Rendezvous::leave(const std::string& world, uint64_t epoch, int rank) noexcept {
  try {
    auto conn = pool_.lease();
    conn->command({"EVAL", kLeaveScript, "1", keys_.worldMeta(world), std::to_string(epoch),
                   std::to_string(rank), member_, keys_.worldEpochBase(world)});
  } catch (...) {
    // The claim expires with its TTL.
  }
}

}  // namespace mw
