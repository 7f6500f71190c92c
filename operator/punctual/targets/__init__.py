"""Targets, one package per kind (``http``, ``job``, ``queue``), each holding everything of its
kind: its executor (a ``punctual.contracts.protocols.Executor``), its own I/O, its constants and
its wiring (``wiring``: from ``spec.target.<kind>`` to an executor).

An executor performs one run of one slot and tells the target which slot it is (the slot id as
an idempotency key, the scheduled time), so a target reached twice can tell.

Belongs here, beside the kinds: what they share (``prepared``: what an executor builds ahead of
a slot; ``errors``: ``TargetUnavailableError`` and its reasons). Does not belong here: choosing
the kind of a spec (``punctual.controller.targets``), slot locks (``punctual.locks``; the kinds
never import them, nor each other), and the scheduler (``punctual.runtime``).
"""
