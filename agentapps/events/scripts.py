"""Lua scripts of the Redis Streams event backend (each runs as one atomic step on the server)."""

from __future__ import annotations

from typing import Final

# Move pending entry `id` (delivered `times` times) to the dead-letter stream and acknowledge it,
# in the same atomic step, so a crash leaves it either pending or dead-lettered. The dead letter
# keeps the entry as it was, whatever it holds: its note `dl` (topic, group, deliveries, id and
# `reason`: 'deliveries' or 'malformed'), the body `e` as is, and every other field as `raw:NAME`
# (at most 1000 of them: an entry with thousands would overflow Lua's stack and wedge the entry;
# the note counts the rest as `omitted`). The dead-letter topic's queue `default` is created with it, so
# `event-wait {topic: T.dead-letter}` sees every dead letter. A trimmed-away entry is only
# acknowledged.
BURY: Final = """
local function bury(stream, dead, group, id, times, topic, limit, reason)
  local found = redis.call('XRANGE', stream, id, id)
  if #found > 0 then
    local fields, kept, omitted = found[1][2], {}, 0
    for i = 1, #fields, 2 do
      local name = fields[i]
      if name ~= 'e' then name = 'raw:' .. name end
      if name == 'e' or #kept < 2 * 1000 then
        table.insert(kept, name)
        table.insert(kept, fields[i + 1])
      else
        omitted = omitted + 1
      end
    end
    local note = {topic = topic, group = group, deliveries = times, id = id, reason = reason}
    if omitted > 0 then note.omitted = omitted end
    redis.pcall('XGROUP', 'CREATE', dead, 'default', '0', 'MKSTREAM')
    redis.call('XADD', dead, 'MAXLEN', '~', limit, '*', 'dl', cjson.encode(note), unpack(kept))
  end
  redis.call('XACK', stream, group, id)
end
"""

# Take back events whose consumer has held them past the visibility timeout: an event delivered
# `maxDeliveries` times already goes to the dead-letter stream instead (and leaves the group);
# the others are claimed by `consumer`, oldest first.
# KEYS: stream, dead-letter stream.
# ARGV: group, consumer, min idle ms, count, max deliveries, topic, dead-letter stream length.
# Returns {{{id, fields, deliveries}, ...}, number dead-lettered}.
CLAIM: Final = BURY + """
local pending = redis.call('XPENDING', KEYS[1], ARGV[1], 'IDLE', ARGV[3], '-', '+', ARGV[4])
local claimed, dead = {}, 0
for _, entry in ipairs(pending) do
  local id, times = entry[1], entry[4]
  if times >= tonumber(ARGV[5]) then
    bury(KEYS[1], KEYS[2], ARGV[1], id, times, ARGV[6], ARGV[7], 'deliveries')
    dead = dead + 1
  else
    local got = redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3], id)
    if #got > 0 and got[1] then
      table.insert(claimed, {got[1][1], got[1][2], times + 1})
    else
      redis.call('XACK', KEYS[1], ARGV[1], id)  -- the entry itself was trimmed away
    end
  end
end
return {claimed, dead}
"""

# A handler failed on an event `consumer` holds: if that was its `maxDeliveries`-th delivery it goes
# to the dead-letter stream now (by the worker that made the last try, not by a later claim);
# otherwise it is made deliverable again at once. An event no longer pending for `consumer` (taken
# over by another consumer, or acknowledged) is left alone.
# KEYS: stream, dead-letter stream.
# ARGV: group, consumer, idle ms, id, max deliveries, topic, dead-letter stream length.
# Returns {outcome, deliveries}: outcome 'dead', 'released' or 'gone'.
FAIL: Final = BURY + """
local entry = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[4], ARGV[4], 1, ARGV[2])
if #entry == 0 then return {'gone', 0} end
local times = entry[1][4]
if times >= tonumber(ARGV[5]) then
  bury(KEYS[1], KEYS[2], ARGV[1], ARGV[4], times, ARGV[6], ARGV[7], 'deliveries')
  return {'dead', times}
end
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[4], 'IDLE', ARGV[3], 'JUSTID')
return {'released', times}
"""

# Set aside entries `consumer` holds that are not events (see group.MalformedEntry): each goes to
# the dead-letter stream at once, as 'malformed', whatever its delivery count (no retry can make it
# readable). An entry no longer pending for `consumer` is left alone.
# KEYS: stream, dead-letter stream. ARGV: group, consumer, topic, dead-letter stream length, ids...
# Returns the ids moved.
SET_ASIDE: Final = BURY + """
local moved = {}
for i = 5, #ARGV do
  local entry = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1, ARGV[2])
  if #entry > 0 then
    bury(KEYS[1], KEYS[2], ARGV[1], ARGV[i], entry[1][4], ARGV[3], ARGV[4], 'malformed')
    table.insert(moved, ARGV[i])
  end
end
return moved
"""

# Acknowledge each id on its own, so the caller learns which ones were pending.
# KEYS: stream. ARGV: group, ids... Returns the ids that were acknowledged.
ACK: Final = """
local done = {}
for i = 2, #ARGV do
  if redis.call('XACK', KEYS[1], ARGV[1], ARGV[i]) == 1 then table.insert(done, ARGV[i]) end
end
return done
"""

# Make pending events deliverable again at once (their idle time becomes the visibility timeout),
# optionally setting their delivery count (a peek is not a delivery). Returns the ids it found.
# KEYS: stream. ARGV: group, consumer, idle ms, then pairs of id and delivery count ('' to keep).
RELEASE: Final = """
local found = {}
for i = 4, #ARGV, 2 do
  local args = {'XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'IDLE', ARGV[3]}
  if ARGV[i + 1] ~= '' then
    table.insert(args, 'RETRYCOUNT')
    table.insert(args, ARGV[i + 1])
  end
  table.insert(args, 'JUSTID')
  if #redis.call(unpack(args)) > 0 then table.insert(found, ARGV[i]) end
end
return found
"""
