"""The replica's heap after it changed shape: what lives on taken out of the garbage
collector's sight, and what was freed handed back to the system.

A replica arms every job of its share at its start and keeps them as long as they are its own:
those objects would be walked by every full collection, stalling the event loop and every slot
due meanwhile, so they are frozen (``gc.freeze``: still freed when nothing refers to them, no
longer walked). glibc keeps the memory freed for the process's next allocations; what the start
freed (the listing's pages, every spec parsed) is more than a running replica needs again, and
without ``malloc_trim`` its RSS would stay at the start's peak.

The same holds when other replicas join and this one lets jobs go: the first replica of a fleet
armed every job alone. The jobs let go were frozen, and a frozen cycle (a cancelled task, its
frames and its exception) is never collected, so ``settle`` collects with the frozen objects
back in sight before it freezes again: one full collection, once per change of the fleet.
"""

import ctypes
import gc


def settle() -> None:
    """Collect every object, frozen ones included, freeze what is left, and hand the freed
    memory back (nothing to hand back without glibc)."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    trim = getattr(ctypes.CDLL(None), "malloc_trim", None)  # the process's own symbols
    if trim is not None:
        trim(0)
