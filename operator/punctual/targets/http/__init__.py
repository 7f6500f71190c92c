"""The HTTP target: the operator itself calls a URL once per slot.

Belongs here: the executor (``executor``: the request, its headers and the answer's verdict),
its lean HTTP/1.1 client (``connections``), and its wiring (``wiring``), with the headers it
reads from Secrets.

Does not belong here: reading Secrets (``punctual.kube.secrets``), the hosts and addresses
targets may reach (``punctual.targets.addresses``, shared with the queue target's brokers), the
other kinds.
"""
