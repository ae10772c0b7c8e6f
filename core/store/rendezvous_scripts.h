// The rendezvous' Lua scripts (core/store/rendezvous.cc). Each runs
// atomically in Redis and is bounded whatever Redis holds: no loop runs
// longer than the caller's own size; a value is read only after its length
// is checked (HSTRLEN), and every stored number is checked before use
// (Lua's tonumber takes "inf", "1e30" and "0x10"); keys are checked for
// their type before the first write (a script's writes are not undone when
// it fails); readiness and failure are one token on a signal list
// (core/store/redis_signal.h).
#pragma once

#include <string>

#include "core/store/script_helpers.h"

namespace mw::scripts {

// Atomic claim of a rank. A forming epoch is joined; any other state
// (none, ready, broken, failed, left) starts the next epoch (a name without
// a record starts at the creator's clock, ARGV[5]), unless a live member
// other than the caller holds that rank of a ready one. A claim whose owner
// has no heartbeat any more is taken over, so a crashed creator cannot block
// a rank until its keys expire.
// A member's own claim, found again (a retry after a failover), is
// claimed anew. Starting the next epoch after a ready one wakes the members
// still forming that one (abortWaits).
// 'joined' counts the valid rank fields of the member list: a new field adds
// one, and an overwritten one (a takeover) or a count that says complete is
// checked against the list itself, so stray fields never count.
// A forming epoch that shrinks or grows an earlier one takes no create of
// a rank its existing members hold ({'resizing', why}).
inline const std::string& join() {
  static const std::string script = std::string(helpers()) + R"lua(
local meta = KEYS[1]
local rank = ARGV[1]
local size = tonumber(ARGV[2])
local member = ARGV[3]
local ttl = ARGV[4]
local hbprefix = ARGV[6]
local base = ARGV[7]
local bad = wrongType(meta, 'hash')
if bad then return bad end
bad = overlong(meta, {'epoch', 'size', 'state', 'joined'})
if bad then return bad end
local cur = redis.call('HMGET', meta, 'epoch', 'size', 'state', 'joined')
local epoch = 0
if cur[1] then
  epoch = count(cur[1], 999999999999999)
  if not epoch then return {'corrupt', meta, 'epoch', cur[1]} end
else
  -- No record: a new name, or one whose record expired or was lost in a
  -- failover while its incarnations may still run and their break markers
  -- still stand. Numbering from the creator's clock in milliseconds never
  -- brings back a number in use (short of a clock behind by longer than
  -- the world lived); counting from 1 again would.
  epoch = count(ARGV[5], 999999999999990) or 0
end
local joined = 0
if cur[3] ~= 'forming' then
  if cur[3] == 'ready' and epoch > 0 then
    -- A healthy incarnation whose rank is held by another live member is
    -- not ours to replace; its own members may re-form it.
    local members = base .. number(epoch) .. ':members'
    bad = wrongType(members, 'hash')
    if bad then return bad end
    local holder = liveHolder(members, rank, hbprefix)
    if holder and holder ~= member then return {'taken', holder, number(epoch)} end
  end
  if epoch >= 999999999999999 then return {'corrupt', meta, 'epoch', cur[1]} end
  -- Members still forming the incarnation this one replaces (a member that
  -- lost its place in it, as in a failover, is starting anew) hear at once
  -- that it can no longer form, and may join this one.
  if cur[3] == 'ready' and epoch > 0 then
    abortWaits(base, number(epoch), 'err:epoch ' .. number(epoch + 1) .. ' of the world started', ttl, size + 8)
  end
  epoch = epoch + 1
  -- Leftovers of an older incarnation with this number are not ours.
  redis.call('UNLINK', base .. number(epoch) .. ':members', base .. number(epoch) .. ':go')
  redis.call('HSET', meta, 'epoch', number(epoch), 'size', ARGV[2], 'state', 'forming',
             'created_ms', ARGV[5], 'joined', '0')
  redis.call('HDEL', meta, 'detail', 'how', 'from', 'old_size', 'excluded', 'committed')
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
  -- A shrink forms from its survivors only, and a grow keeps the ranks
  -- of the world it grows for its members (core/resize/resize_scripts.h).
  bad = overlong(meta, {'how', 'from', 'old_size'})
  if bad then return bad end
  local how = redis.call('HMGET', meta, 'how', 'from', 'old_size')
  if how[1] == 'shrunk' then
    return {'resizing', 'epoch ' .. number(epoch) .. ' is a shrink of epoch ' .. (how[2] or '?') ..
            ': only its survivors join it, through mw_world_shrink'}
  end
  if how[1] == 'grown' and tonumber(rank) < (count(how[3] or '', want) or want) then
    return {'resizing', 'epoch ' .. number(epoch) .. ' grows epoch ' .. (how[2] or '?') .. ' from ' ..
            (how[3] or '?') .. ' members: rank ' .. rank .. ' is one of them, which join through mw_world_grow;' ..
            ' a newcomer takes a rank from ' .. (how[3] or '?') .. ' up'}
  end
end
bad = claimRank(meta, base, epoch, size, joined, rank, member, hbprefix, ttl)
if bad then return bad end
return {'ok', number(epoch)}
)lua";
  return script;
}



// Withdraws this member's claim of a forming epoch; best effort, and
// harmless on whatever Redis holds.
inline const char* leave() {
  return R"lua(
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
}

// A member whose transport is up commits: ARGV = epoch, rank, size, member
// id, the world's epoch key base, ttl. Only a rank this member holds in the
// incarnation it joined counts, and only while that incarnation is still
// the world's current, ready one; 'committed' counts the valid rank fields
// of the commit hash like 'joined' does. The last commit pushes the one
// token that releases every member.
// Replies: {'ok'} | {'gone', epoch now, state now} | {'corrupt', key, field, value}.
inline const std::string& commit() {
  static const std::string script = std::string(helpers()) + R"lua(
local meta = KEYS[1]
local epoch = ARGV[1]
local rank = ARGV[2]
local size = tonumber(ARGV[3])
local member = ARGV[4]
local base = ARGV[5]
local ttl = ARGV[6]
local bad = wrongType(meta, 'hash')
if bad then return bad end
bad = overlong(meta, {'epoch', 'state', 'committed'})
if bad then return bad end
local cur = redis.call('HMGET', meta, 'epoch', 'state', 'committed')
if cur[1] ~= epoch or cur[2] ~= 'ready' then return {'gone', cur[1] or 'none', cur[2] or 'none'} end
local members = base .. epoch .. ':members'
local done = base .. epoch .. ':committed'
local formed = base .. epoch .. ':formed'
bad = wrongType(members, 'hash') or wrongType(done, 'hash') or wrongType(formed, 'list')
if bad then return bad end
if redis.call('HSTRLEN', members, rank) > 64 or redis.call('HGET', members, rank) ~= member then
  return {'gone', epoch, 'ready without this member at rank ' .. rank}
end
local n = count(cur[3], size)
local fresh = redis.call('HSET', done, rank, '1') == 1
if fresh and n then n = n + 1 end
if not fresh or not n or n >= size then n = present(done, size) end
redis.call('HSET', meta, 'committed', number(n))
redis.call('PEXPIRE', done, ttl)
if n >= size then
  redis.call('RPUSH', formed, 'ok')
  redis.call('PEXPIRE', formed, ttl)
end
return {'ok'}
)lua";
  return script;
}

}  // namespace mw::scripts
