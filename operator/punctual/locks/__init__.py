"""Slot-lock backends, one per module, each implementing ``punctual.contracts.protocols.SlotLock``.

A replica runs a slot only after claiming it here; the claim is keyed by slot, never by job,
so a dead holder blocks only its own slot.
"""
