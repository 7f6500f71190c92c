"""Run stores, each implementing ``punctual.contracts.protocols.RunStore``: where what the
scheduler reports goes.

Belongs here: one sink per module (or per package, when one sink has several concepts): the
coalesced status writer (``status``), Warning Events about runs (``events``), metrics
(``metered``), a store in memory for tests and tools (``memory``), and the fan-out that tells
several of them (``fanout``). A store never blocks the scheduler: it buffers, or hands off.

Does not belong here: talking to the API server (``punctual.kube``), deciding anything about
slots or runs (``punctual.scheduling``, ``punctual.runtime``): stores record what they are told.
"""
