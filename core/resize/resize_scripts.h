// The Lua scripts of a shrink or grow (core/resize/resize_rendezvous.cc).
// They keep the rules of core/store/rendezvous_scripts.h: atomic, bounded
// by the caller's own sizes whatever Redis holds, every stored number
// checked before use, key types checked before the first write.
//
// A resize is an attempt: a new epoch of the world whose record says how
// it came about ('how' shrunk or grown, 'from' the old epoch, 'old_size',
// a shrink's 'excluded' list of old ranks). The first member to call
// starts it, the others join it; like a create, it is 'ready' once every
// member claimed its rank, then formed once every member committed
// (Rendezvous::commit). An epoch right after the old one that never
// formed (a shrink or grow attempt a member gave up or died in, or a
// newcomer's create that gave up: broken or failed, fewer commits than
// members) is replaced by the next call's new attempt, from the same old
// epoch, whether that is a shrink or a grow. Starting one registers its
// 'go' list in the 'waits' set, so that whoever ends it wakes every member
// waiting to claim (abortWaits).
#pragma once

#include <string>

#include "core/store/script_helpers.h"

namespace mw::scripts {

// Shared by both: the ranks of a list "1,3" (validated: each below `size`),
// and the claim of `rank` in the attempt `epoch` of `size` members (as the
// create's join claims one).
inline const char* resizeHelpers() {
  return R"lua(
local function ranksOf(list, size)
  local out = {}
  for r in string.gmatch(list, '[^,]+') do
    local n = count(r, size - 1)
    if not n then return nil end
    out[#out + 1] = n
  end
  return out
end
-- The world's record `cur` (epoch `epoch`, state, how, from, size,
-- committed) is an epoch right after `oldn` that never formed, which a
-- resize of `oldn` (ARGV form `old`) may replace.
local function neverFormed(cur, epoch, oldn, old)
  if epoch ~= oldn + 1 or (cur[2] ~= 'broken' and cur[2] ~= 'failed') then return false end
  if cur[3] and not ((cur[3] == 'shrunk' or cur[3] == 'grown') and cur[4] == old) then return false end
  local size = count(cur[5] or '', 2147483647)
  local committed = count(cur[6] or '0', 2147483647) or 0
  return size ~= nil and committed < size
end
local function startAttempt(meta, base, epoch, fields, ttl)
  redis.call('UNLINK', base .. number(epoch) .. ':members', base .. number(epoch) .. ':go')
  redis.call('HSET', meta, 'epoch', number(epoch), 'state', 'forming', 'joined', '0', unpack(fields))
  redis.call('HDEL', meta, 'detail', 'committed')
  local waits = base .. number(epoch) .. ':waits'
  if redis.call('TYPE', waits)['ok'] ~= 'set' then redis.call('UNLINK', waits) end
  redis.call('SADD', waits, 'go')
  redis.call('PEXPIRE', waits, ttl)
end
local function claimIn(meta, base, epoch, size, rank, member, hbprefix, ttl)
  local joined = count(redis.call('HGET', meta, 'joined') or '', size) or 0
  return claimRank(meta, base, epoch, size, joined, rank, member, hbprefix, ttl)
end
)lua";
}

// A survivor's claim in a shrink of epoch ARGV[1]. KEYS = meta; ARGV =
// old epoch, old size, old rank, member id, the caller's list ('' for the
// break's), the ranks this member itself saw blamed ('' or a list), ttl,
// now in ms, the epoch key base, the heartbeat prefix, the events channel,
// the world's name, and what broke the caller's world when it shrinks
// with MW_SHRINK_DEFAULT ('' when ready; else the blamed rank, or '-1'):
// such a caller takes part only when the list excludes that rank (its
// world broke because a member the shrink excludes went), and starts
// nothing otherwise ({'notready', list}).
// The list of an attempt is fixed by whoever starts it: the caller's, or
// for '' every rank the old epoch's break notices blamed (its 'blamed'
// set) and the starter's own. Starting one publishes an exclusion notice
// on the events channel ("!excluded\n<world>\n<old>\n<new>\n<list>"), so
// an excluded member that is alive hears it at once.
// Replies: {'ok', epoch, list, new rank} | {'differs', list, epoch} |
// {'excluded', list, epoch} | {'nothing'} | {'everyone', list} |
// {'notready', list} |
// {'gone', epoch now, state now} | {'taken', holder, epoch} |
// {'corrupt', key, field, value}.
inline const std::string& shrinkClaim() {
  static const std::string script = std::string(helpers()) + resizeHelpers() + R"lua(
local meta = KEYS[1]
local old = ARGV[1]
local oldsize = tonumber(ARGV[2])
local rank = tonumber(ARGV[3])
local ttl = ARGV[7]
local base = ARGV[9]
local bad = wrongType(meta, 'hash')
if bad then return bad end
bad = overlong(meta, {'epoch', 'state', 'how', 'from', 'joined', 'size', 'committed'})
if bad then return bad end
if redis.call('HSTRLEN', meta, 'excluded') > 16 * oldsize + 16 then
  return {'corrupt', meta, 'excluded', '(' .. redis.call('HSTRLEN', meta, 'excluded') .. ' bytes)'}
end
local cur = redis.call('HMGET', meta, 'epoch', 'state', 'how', 'from', 'size', 'committed', 'excluded')
local epoch = 0
if cur[1] then
  epoch = count(cur[1], 999999999999999)
  if not epoch then return {'corrupt', meta, 'epoch', cur[1]} end
end
local oldn = count(old, 999999999999999)
local attempt = cur[3] == 'shrunk' and cur[4] == old
-- A member a shrink of the old epoch excluded stays excluded, whatever
-- became of that shrink.
if attempt and epoch == oldn + 1 then
  local ranks = ranksOf(cur[7] or '', oldsize)
  if not ranks then return {'corrupt', meta, 'excluded', cur[7]} end
  for _, n in ipairs(ranks) do
    if n == rank then return {'excluded', cur[7], number(epoch)} end
  end
end
local list
-- A caller whose world broke takes part with MW_SHRINK_DEFAULT only when
-- the list excludes the member its break named.
local function notReady(ranks)
  if ARGV[13] == '' then return false end
  for _, n in ipairs(ranks or {}) do
    if number(n) == ARGV[13] then return false end
  end
  return true
end
if attempt and (cur[2] == 'forming' or cur[2] == 'ready') then
  list = cur[7] or ''
  if not ranksOf(list, oldsize) then return {'corrupt', meta, 'excluded', list} end
  if ARGV[5] ~= '' and ARGV[5] ~= list then return {'differs', list, number(epoch)} end
  if notReady(ranksOf(list, oldsize)) then return {'notready', list} end
elseif (epoch == oldn and (cur[2] == 'ready' or cur[2] == 'broken' or cur[2] == 'left')) or
       neverFormed(cur, epoch, oldn, old) then
  if ARGV[5] ~= '' then
    list = ARGV[5]
  else
    local named = {}
    local blamed = base .. old .. ':blamed'
    if redis.call('TYPE', blamed)['ok'] == 'set' then
      for _, r in ipairs(redis.call('SRANDMEMBER', blamed, oldsize + 8)) do
        local n = count(r, oldsize - 1)
        if n then named[n] = true end
      end
    end
    for _, n in ipairs(ranksOf(ARGV[6], oldsize) or {}) do named[n] = true end
    local sorted = {}
    for n, _ in pairs(named) do sorted[#sorted + 1] = n end
    table.sort(sorted)
    for i, n in ipairs(sorted) do sorted[i] = number(n) end
    list = table.concat(sorted, ',')
    if list == '' then return {'nothing'} end
  end
  local n = #(ranksOf(list, oldsize) or {})
  if n >= oldsize then return {'everyone', list} end
  if notReady(ranksOf(list, oldsize)) then return {'notready', list} end
  if epoch >= 999999999999999 then return {'corrupt', meta, 'epoch', cur[1]} end
  -- Whoever still forms the epoch this one replaces hears it ended.
  if epoch ~= oldn then
    abortWaits(base, number(epoch), 'err:epoch ' .. number(epoch + 1) .. ' of the world started', ttl, oldsize + 8)
  end
  epoch = epoch + 1
  startAttempt(meta, base, epoch, {'size', number(oldsize - n), 'created_ms', ARGV[8], 'how', 'shrunk', 'from', old,
                                   'old_size', ARGV[2], 'excluded', list}, ttl)
  redis.call('PUBLISH', ARGV[11], '!excluded\n' .. ARGV[12] .. '\n' .. old .. '\n' .. number(epoch) .. '\n' .. list)
else
  return {'gone', cur[1] or 'none', cur[2] or 'none'}
end
local ranks = ranksOf(list, oldsize)
local newrank = rank
for _, n in ipairs(ranks) do
  if n == rank then return {'excluded', list, number(epoch)} end
  if n < rank then newrank = newrank - 1 end
end
if redis.call('HGET', meta, 'state') ~= 'forming' then return {'gone', number(epoch), 'ready'} end
bad = claimIn(meta, base, epoch, oldsize - #ranks, number(newrank), ARGV[4], ARGV[10], ttl)
if bad then return bad end
return {'ok', number(epoch), list, number(newrank)}
)lua";
  return script;
}

// An existing member's claim in a grow of epoch ARGV[1] to ARGV[5]
// members; it keeps its rank. KEYS = meta; ARGV = old epoch, old size,
// rank, member id, new size, ttl, now in ms, the epoch key base, the
// heartbeat prefix. Joins the attempt under way, or an epoch a newcomer's
// create started (forming, of the new size, no rank of the old world
// claimed in it: it becomes the attempt), or starts one from a ready
// world.
// Replies: {'ok', epoch} | {'size', message} | {'gone', epoch now, state
// now} | {'taken', holder, epoch} | {'corrupt', key, field, value}.
inline const std::string& growClaim() {
  static const std::string script = std::string(helpers()) + resizeHelpers() + R"lua(
local meta = KEYS[1]
local old = ARGV[1]
local oldsize = tonumber(ARGV[2])
local newsize = tonumber(ARGV[5])
local ttl = ARGV[6]
local base = ARGV[8]
local bad = wrongType(meta, 'hash')
if bad then return bad end
bad = overlong(meta, {'epoch', 'state', 'how', 'from', 'size', 'joined', 'committed'})
if bad then return bad end
local cur = redis.call('HMGET', meta, 'epoch', 'state', 'how', 'from', 'size', 'committed')
local epoch = 0
if cur[1] then
  epoch = count(cur[1], 999999999999999)
  if not epoch then return {'corrupt', meta, 'epoch', cur[1]} end
end
local oldn = count(old, 999999999999999)
local attempt = cur[3] == 'grown' and cur[4] == old
local function mismatch(size)
  local go = base .. number(epoch) .. ':go'
  bad = wrongType(go, 'list')
  if bad then return bad end
  local msg = 'world size mismatch: a member of epoch ' .. old .. ' grows it to ' .. ARGV[5] ..
              ' but epoch ' .. number(epoch) .. ' is forming with size ' .. (size or '(none)')
  redis.call('HSET', meta, 'state', 'failed', 'detail', msg)
  redis.call('RPUSH', go, 'err:' .. msg)
  redis.call('PEXPIRE', go, ttl)
  return {'size', msg}
end
if cur[2] == 'forming' and (attempt or (not cur[3] and epoch > oldn)) then
  if count(cur[5] or '', 2147483647) ~= newsize then return mismatch(cur[5]) end
  if not attempt then
    -- A newcomer's create started it: it is this grow, unless a member
    -- of the old world's ranks claimed it by a create of its own.
    local members = base .. number(epoch) .. ':members'
    bad = wrongType(members, 'hash')
    if bad then return bad end
    if present(members, oldsize) > 0 then return {'gone', number(epoch), 'forming as a new world'} end
    redis.call('HSET', meta, 'how', 'grown', 'from', old, 'old_size', ARGV[2])
    local waits = base .. number(epoch) .. ':waits'
    if redis.call('TYPE', waits)['ok'] ~= 'set' then redis.call('UNLINK', waits) end
    redis.call('SADD', waits, 'go')
    redis.call('PEXPIRE', waits, ttl)
  end
elseif (epoch == oldn and cur[2] == 'ready') or neverFormed(cur, epoch, oldn, old) then
  if epoch >= 999999999999999 then return {'corrupt', meta, 'epoch', cur[1]} end
  if epoch ~= oldn then
    abortWaits(base, number(epoch), 'err:epoch ' .. number(epoch + 1) .. ' of the world started', ttl, newsize + 8)
  end
  epoch = epoch + 1
  startAttempt(meta, base, epoch, {'size', ARGV[5], 'created_ms', ARGV[7], 'how', 'grown', 'from', old,
                                   'old_size', ARGV[2]}, ttl)
  redis.call('HDEL', meta, 'excluded')
else
  return {'gone', cur[1] or 'none', cur[2] or 'none'}
end
bad = claimIn(meta, base, epoch, newsize, ARGV[3], ARGV[4], ARGV[9], ttl)
if bad then return bad end
return {'ok', number(epoch)}
)lua";
  return script;
}

}  // namespace mw::scripts
