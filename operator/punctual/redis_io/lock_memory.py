"""What a Redis can prove about a slot's claim: only that nobody claimed it since it started.

A Redis that restarts without its data (no persistence, the bundled one) forgets every claim
made before; one that persists (RDB, AOF ``everysec``) or fails over to a replica (replication
is asynchronous) may come back without the last ones, and nothing it reports says which. So a
won claim of a slot whose nominal time is before the server's process started proves nothing:
that slot may have been claimed, and run, in the instance that was lost. The server tells its
age in whole seconds only (``uptime_in_seconds``: the whole-second clock now, less the one at
its start), so its start is taken as the latest it may be, the whole second after the one it
started in: the slots of up to a second after the start are counted too, and that second is
also what covers the replicas' clocks running a little ahead of Redis's (NTP keeps them within
milliseconds). Such a claim is kept to count the slot
missed (``LockForgot``), once across replicas, and the slot never runs. A slot after the start
is provable: this instance has held every claim made since, as long as it evicts none
(``noeviction``) and each key outlives its slot.

The rule runs in the claim's own script (``PROVABLE``), in the very instance that took the
claim: a check before or after, from the replica, could meet another instance, as the driver
reconnects to a restarted server without a word.
"""

from datetime import UTC, datetime, timedelta

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

FORGOTTEN = 2
"""The reply of a claim script that won the key of a slot it cannot prove unclaimed: nothing
ran, the slot is this replica's to count missed."""

FORGOTTEN_MARK = b" forgot"
"""Appended to the holder of such a key: a claim retried after a lost reply finds the key, and
must not read it as a slot won to run."""

PROVABLE = f"""
-- Whether a slot (slot_ms, its nominal time in Unix ms) is at or after the latest instant this
-- server may have started: the whole second after (whole seconds now) - uptime_in_seconds.
local function provable(slot_ms)
  local uptime = tonumber(string.match(redis.call('INFO', 'server'), 'uptime_in_seconds:(%d+)'))
  local now = redis.call('TIME')
  return tonumber(slot_ms) >= (tonumber(now[1]) - uptime + 1) * 1000
end

-- SET key holder NX PX ttl_ms: 0 when another holder has it; 1 when won and the slot is
-- provable; {FORGOTTEN} when won but not provable (the holder then marked, so that a retry
-- does not read it as won to run).
local function claim_slot(key, holder, ttl_ms, slot_ms)
  if not redis.call('SET', key, holder, 'NX', 'PX', ttl_ms) then
    return 0
  end
  if provable(slot_ms) then
    return 1
  end
  redis.call('SET', key, holder .. '{FORGOTTEN_MARK.decode()}', 'PX', ttl_ms)
  return {FORGOTTEN}
end
"""
"""Lua functions for the claim scripts to start with (``locks.redis``, ``targets.queue``)."""


def slot_millis(slot: datetime) -> int:
    """``slot``'s nominal time in Unix milliseconds, as ``provable`` takes it."""
    return (slot - _EPOCH) // timedelta(milliseconds=1)
