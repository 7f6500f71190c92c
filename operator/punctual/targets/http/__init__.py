"""The HTTP target: the operator itself calls a URL once per slot.

Belongs here: the executor (``executor``: the request, its headers and the answer's verdict),
its lean HTTP/1.1 client (``connections``), the hosts and addresses it may call
(``allowlist``), and its wiring (``wiring``), with the headers it reads from Secrets.

Does not belong here: reading Secrets (``punctual.kube.secrets``), the other kinds.
"""
