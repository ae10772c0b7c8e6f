// The Lua scripts that watch one incarnation of a world while it forms
// (core/store/incarnation.cc); they keep the rules of
// core/store/rendezvous_scripts.h.
#pragma once

#include <string>

#include "core/store/script_helpers.h"

namespace mw::scripts {

// Before a member blocks on a signal list of its forming incarnation:
// KEYS = meta; ARGV = epoch, the world's epoch key base, the list's name
// after the incarnation's prefix ('' to check only), ttl. Only while the
// incarnation is the world's current, ready one is the list registered in
// its 'waits' set, in the same atomic step, so that whoever ends the
// incarnation later (abortWaits) wakes it.
// Replies: {'ok'} | {'gone', epoch now, state now, detail} |
// {'corrupt', key, field, value}; the detail is the meta record's, for the
// same epoch only.
inline const std::string& watch() {
  static const std::string script = std::string(helpers()) + R"lua(
local meta = KEYS[1]
local epoch = ARGV[1]
local bad = wrongType(meta, 'hash')
if bad then return bad end
bad = overlong(meta, {'epoch', 'state'})
if bad then return bad end
local cur = redis.call('HMGET', meta, 'epoch', 'state')
if cur[1] ~= epoch or cur[2] ~= 'ready' then
  local detail = ''
  if cur[1] == epoch and redis.call('HSTRLEN', meta, 'detail') <= 4096 then
    detail = redis.call('HGET', meta, 'detail') or ''
  end
  return {'gone', cur[1] or 'none', cur[2] or 'none', detail}
end
if ARGV[3] ~= '' then
  local waits = ARGV[2] .. epoch .. ':waits'
  bad = wrongType(waits, 'set')
  if bad then return bad end
  redis.call('SADD', waits, ARGV[3])
  redis.call('PEXPIRE', waits, ARGV[4])
end
return {'ok'}
)lua";
  return script;
}

// A member gave up on an incarnation it joined: KEYS = meta; ARGV = the
// world's epoch key base, epoch, why, ttl, the world's size. Wakes the
// members still forming it (abortWaits), bounded by the size.
inline const std::string& abortFormation() {
  static const std::string script = std::string(helpers()) + R"lua(
local size = count(ARGV[5], 2147483647) or 1
abortWaits(ARGV[1], ARGV[2], 'err:' .. ARGV[3], ARGV[4], size + 8)
return 1
)lua";
  return script;
}

}  // namespace mw::scripts
