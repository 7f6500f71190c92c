"""Targets, one package per kind (``http``, ``job``, ``queue``), each holding everything of its
kind: its executor (a ``punctual.contracts.protocols.Executor``), its own I/O, its constants, its
wiring (``wiring``: from ``spec.target.<kind>`` to an executor) and its plug-in (``plugin``: the
kind as ``targets.plugin.TargetKind`` sees it), listed once in ``kinds``.

An executor performs one run of one slot and tells the target which slot it is (the slot id as
an idempotency key, the scheduled time), so a target reached twice can tell.

Belongs here, beside the kinds: what they share (``errors``: ``TargetUnavailableError`` and its
reasons; ``addresses``: the addresses refused and the allowlist; ``plugin``: what a kind is;
``kinds``: the list of kinds and the dispatch of a spec to its own). Does not belong here: slot
locks (``punctual.locks``; the kinds never import them, nor each other), and the scheduler
(``punctual.runtime``).
"""
