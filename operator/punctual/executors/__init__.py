"""Executors, one per target kind, each implementing ``punctual.contracts.protocols.Executor``.

An executor performs one run of one slot and tells the target which slot it is (the slot id as
an idempotency key, the scheduled time), so a target reached twice can tell.
"""
