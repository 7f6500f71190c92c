"""The run store behind ``status``: what happened, written to the ScheduledJob, coalesced.

Each replica writes a job's status only when it has something new to say, at most once per
interval per job and at most so many statuses per second in all, in turns across namespaces,
condition changes first within each; the
kubernetes lock's claims carry what is pending in their own status write. Writes are merge
patches onto the newest known body under its resourceVersion, so replicas never overwrite each
other's counts, and a write that may have landed is not counted twice.

Belongs here, one concept a module: ``ledger`` (what is pending per job, and its trimming to
what a status shows), ``patch`` (the merge patch composed from the current status and the
pending, through the status models of ``punctual.api.status_models``), ``conditions``
(the conditions merged, ``LastRunSucceeded`` derived from the runs), ``write_pacing`` (which
jobs each tick writes), ``writer`` (``StatusStore``: the write loop, preconditions, writes in
doubt and the last flush).

Does not belong here: reading and patching the object (``punctual.kube.status_api``), Warning
Events about runs (``punctual.stores.events``, a run store of its own), metrics
(``punctual.stores.metered``).

Other packages use the names below, from this package, whichever module holds them.
"""

from punctual.stores.status import conditions, ledger, write_pacing, writer

ACTIVE_HEARTBEAT = write_pacing.ACTIVE_HEARTBEAT
AT_GATE_MESSAGE = conditions.AT_GATE_MESSAGE
MIN_BATCH = write_pacing.MIN_BATCH
Condition = ledger.Condition
NOTHING_SHOWN = ledger.NOTHING_SHOWN
Shown = ledger.Shown
StatusStore = writer.StatusStore
