#include "core/store/rendezvous.h"

#include "core/capped_text.h"
#include "core/error.h"
#include "core/store/redis_signal.h"
#include "core/store/redis_values.h"

namespace mw {
namespace {

// Atomic claim of a rank. A forming epoch is joined; any other state
// (none, ready, broken, failed, left) starts the next epoch, unless a live
// member other than the caller holds that rank of a ready one. A claim whose
// owner has no heartbeat any more is taken over, so a crashed creator cannot
// block a rank until its keys expire.
//
// Bounded whatever Redis holds: no loop runs longer than the caller's own
// size; a value is read only after its length is checked (HSTRLEN), and
// every stored number is checked before use (Lua's tonumber takes "inf",
// "1e30" and "0x10"); keys are checked for their type before the first
// write (a script's writes are not undone when it fails); readiness and
// failure are one token on a signal list (core/store/redis_signal.h).
// 'joined' counts the valid rank fields of the member list: a new field adds
// one, and an overwritten one (a takeover) or a count that says complete is
// checked against the list itself, so stray fields never count.
constexpr const char* kJoinScript = R"lua(
local meta = KEYS[1]
local rank = ARGV[1]
local size = tonumber(ARGV[2])
local member = ARGV[3]
local ttl = ARGV[4]
local hbprefix = ARGV[6]
local base = ARGV[7]
local function number(n) return string.format('%d', n) end
local function count(v, max)
  if type(v) ~= 'string' or not string.match(v, '^%d+$') then return nil end
  local n = tonumber(v)
  if n > max then return nil end
  return n
end
local function wrongType(key, kind)
  local t = redis.call('TYPE', key)['ok']
  if t == 'none' or t == kind then return nil end
  return {'corrupt', key, '', 'a ' .. t .. ' instead of a ' .. kind}
end
-- The live member holding `field` of hash `key`, or nil.
local function liveHolder(key, field)
  if redis.call('HSTRLEN', key, field) > 64 then return nil end
  local id = redis.call('HGET', key, field)
  if id and redis.call('EXISTS', hbprefix .. id) == 1 then return id end
  return nil
end
-- Valid rank fields present in hash `key`, read in bounded batches.
local function present(key)
  local n, first = 0, 0
  while first < size do
    local last = math.min(first + 1000, size) - 1
    local ranks = {}
    for r = first, last do ranks[#ranks + 1] = number(r) end
    local got = redis.call('HMGET', key, unpack(ranks))
    for i = 1, #got do
      if got[i] then n = n + 1 end
    end
    first = last + 1
  end
  return n
end

local bad = wrongType(meta, 'hash')
if bad then return bad end
for _, f in ipairs({'epoch', 'size', 'state', 'joined'}) do
  local len = redis.call('HSTRLEN', meta, f)
  if len > 15 then return {'corrupt', meta, f, '(' .. len .. ' bytes)'} end
end
local cur = redis.call('HMGET', meta, 'epoch', 'size', 'state', 'joined')
local epoch = 0
if cur[1] then
  epoch = count(cur[1], 999999999999999)
  if not epoch then return {'corrupt', meta, 'epoch', cur[1]} end
end
local joined = 0
if cur[3] ~= 'forming' then
  if cur[3] == 'ready' and epoch > 0 then
    -- A healthy incarnation whose rank is held by another live member is
    -- not ours to replace; its own members may re-form it.
    local members = base .. number(epoch) .. ':members'
    bad = wrongType(members, 'hash')
    if bad then return bad end
    local holder = liveHolder(members, rank)
    if holder and holder ~= member then return {'taken', holder, number(epoch)} end
  end
  if epoch >= 999999999999999 then return {'corrupt', meta, 'epoch', cur[1]} end
  epoch = epoch + 1
  -- Leftovers of an older incarnation with this number are not ours.
  redis.call('UNLINK', base .. number(epoch) .. ':members', base .. number(epoch) .. ':go')
  redis.call('HSET', meta, 'epoch', number(epoch), 'size', ARGV[2], 'state', 'forming',
             'created_ms', ARGV[5], 'joined', '0')
  redis.call('HDEL', meta, 'detail')
else
  local want = count(cur[2], 2147483647)
  if not want or want < 1 then return {'corrupt', meta, 'size', cur[2] or '(none)'} end
  joined = count(cur[4], want)
  if not joined then return {'corrupt', meta, 'joined', cur[4] or '(none)'} end
  if want ~= size then
    local go = base .. number(epoch) .. ':go'
    bad = wrongType(go, 'list')
    if bad then return bad end
    local msg = 'world size mismatch: rank ' .. rank .. ' asked for size ' .. ARGV[2] ..
                ' but epoch ' .. number(epoch) .. ' is forming with size ' .. number(want)
    redis.call('HSET', meta, 'state', 'failed', 'detail', msg)
    redis.call('RPUSH', go, 'err:' .. msg)
    redis.call('PEXPIRE', go, ttl)
    return {'size', msg}
  end
end
local members = base .. number(epoch) .. ':members'
local go = base .. number(epoch) .. ':go'
bad = wrongType(members, 'hash') or wrongType(go, 'list')
if bad then return bad end
local owner = liveHolder(members, rank)
if owner then return {'taken', owner, number(epoch)} end
local fresh = redis.call('HSET', members, rank, member) == 1
if fresh then joined = joined + 1 end
if not fresh or joined >= size then joined = present(members) end
redis.call('HSET', meta, 'joined', number(joined))
redis.call('PEXPIRE', members, ttl)
redis.call('PEXPIRE', meta, ttl)
if joined >= size then
  redis.call('HSET', meta, 'state', 'ready')
  redis.call('RPUSH', go, 'ok')
  redis.call('PEXPIRE', go, ttl)
end
return {'ok', number(epoch)}
)lua";

// Withdraws this member's claim of a forming epoch; best effort, and
// harmless on whatever Redis holds.
constexpr const char* kLeaveScript = R"lua(
local meta = KEYS[1]
if redis.call('TYPE', meta)['ok'] ~= 'hash' then return 0 end
for _, f in ipairs({'epoch', 'state', 'joined'}) do
  if redis.call('HSTRLEN', meta, f) > 15 then return 0 end
end
local cur = redis.call('HMGET', meta, 'epoch', 'state', 'joined')
if cur[1] ~= ARGV[1] or cur[2] ~= 'forming' then return 0 end
local members = ARGV[4] .. ARGV[1] .. ':members'
if redis.call('TYPE', members)['ok'] ~= 'hash' or redis.call('HSTRLEN', members, ARGV[2]) > 64 or
   redis.call('HGET', members, ARGV[2]) ~= ARGV[3] then
  return 0
end
redis.call('HDEL', members, ARGV[2])
local joined = cur[3]
if type(joined) == 'string' and string.match(joined, '^%d+$') and tonumber(joined) > 0 then
  redis.call('HSET', meta, 'joined', string.format('%d', tonumber(joined) - 1))
end
return 1
)lua";

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

}  // namespace

Formation Rendezvous::join(const std::string& world, int rank, int size, Deadline deadline) {
  const std::string meta = keys_.worldMeta(world);
  auto ttl = remaining(deadline) + std::chrono::seconds(30);
  auto conn = pool_.lease();
  auto reply = conn->command({"EVAL", kJoinScript, "1", meta, std::to_string(rank), std::to_string(size), member_,
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
    case JoinReply::Kind::Taken:
      throw Error(Status::AlreadyExists, "world '" + world + "': rank " + std::to_string(rank) +
                                             " is already claimed by live member " + verdict->text);
    case JoinReply::Kind::Corrupt:
      throw Error(Status::Store, "world '" + world + "': " + describeCorrupt(*verdict));
    case JoinReply::Kind::Ok:
      break;
  }
  Formation f;
  f.epoch = verdict->epoch;

  // The last claim (or a size mismatch) pushes one token that releases
  // every member.
  const std::string go_key = keys_.worldEpoch(world, f.epoch, "go");
  auto token = awaitSignal(*conn, go_key, remaining(deadline), pool_.timeout());
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
  if (!go->ok) throw Error(Status::InvalidArgument, "world '" + world + "': " + go->why);

  f.members = readMembers(*conn, keys_, world, f.epoch, size);
  return f;
}

void Rendezvous::leave(const std::string& world, uint64_t epoch, int rank) noexcept {
  try {
    auto conn = pool_.lease();
    conn->command({"EVAL", kLeaveScript, "1", keys_.worldMeta(world), std::to_string(epoch), std::to_string(rank),
                   member_, keys_.worldEpochBase(world)});
  } catch (...) {
    // The claim expires with its TTL.
  }
}

}  // namespace mw
