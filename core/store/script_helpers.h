// Lua helpers the world scripts start with (core/store/rendezvous_scripts.h,
// core/store/incarnation_scripts.h); the rules they keep are those of
// rendezvous_scripts.h.
#pragma once

namespace mw::scripts {

// Helpers every world script starts with.
inline const char* helpers() {
  return R"lua(
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
-- The 'corrupt' reply for the first of `fields` of hash `key` longer than
-- a number may be, or nil.
local function overlong(key, fields)
  for _, f in ipairs(fields) do
    local len = redis.call('HSTRLEN', key, f)
    if len > 15 then return {'corrupt', key, f, '(' .. len .. ' bytes)'} end
  end
  return nil
end
-- Valid rank fields present in hash `key`, read in bounded batches.
local function present(key, size)
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
-- The live member (its heartbeat key under `hbprefix` exists) holding
-- `field` of hash `key`, or nil.
local function liveHolder(key, field, hbprefix)
  if redis.call('HSTRLEN', key, field) > 64 then return nil end
  local id = redis.call('HGET', key, field)
  if id and redis.call('EXISTS', hbprefix .. id) == 1 then return id end
  return nil
end
-- `member` takes `rank` of incarnation `epoch` (size `size`, `joined`
-- members so far) under key base `base`; the last to join makes it ready
-- and lets everyone go. nil, or the reply to return: a wrong type, or
-- {'taken', holder, epoch} when a live member holds the rank.
local function claimRank(meta, base, epoch, size, joined, rank, member, hbprefix, ttl)
  local members = base .. number(epoch) .. ':members'
  local go = base .. number(epoch) .. ':go'
  local bad = wrongType(members, 'hash') or wrongType(go, 'list')
  if bad then return bad end
  local owner = liveHolder(members, rank, hbprefix)
  if owner and owner ~= member then return {'taken', owner, number(epoch)} end
  local fresh = redis.call('HSET', members, rank, member) == 1
  if fresh then joined = joined + 1 end
  if not fresh or joined >= size then joined = present(members, size) end
  redis.call('HSET', meta, 'joined', number(joined))
  redis.call('PEXPIRE', members, ttl)
  redis.call('PEXPIRE', meta, ttl)
  if joined >= size then
    redis.call('HSET', meta, 'state', 'ready')
    redis.call('RPUSH', go, 'ok')
    redis.call('PEXPIRE', go, ttl)
  end
  return nil
end
-- Wakes whoever still waits in the formation of incarnation `epoch` (a
-- string) under key base `base`: the commit's 'formed' list and at most
-- `limit` signal lists its transport exchange registered in its 'waits'
-- set (core/store/incarnation.h) get `token`, so no member waits on for
-- an incarnation that can no longer form. Lists of another type are left
-- alone; a name too long to be one of ours is skipped.
local function abortWaits(base, epoch, token, ttl, limit)
  local prefix = base .. epoch .. ':'
  local lists = {prefix .. 'formed'}
  local waits = prefix .. 'waits'
  if redis.call('TYPE', waits)['ok'] == 'set' then
    for _, s in ipairs(redis.call('SRANDMEMBER', waits, math.max(limit, 1))) do
      if string.len(s) <= 256 then lists[#lists + 1] = prefix .. s end
    end
  end
  for _, l in ipairs(lists) do
    local t = redis.call('TYPE', l)['ok']
    if t == 'list' or t == 'none' then
      redis.call('RPUSH', l, token)
      redis.call('PEXPIRE', l, ttl)
    end
  end
end
)lua";
}

}  // namespace mw::scripts
