"""A tiny HTTPS JSON client for the launcher's own probes and set-up requests.

Readiness polls run every fraction of a second; doing them in-process keeps them from spawning a
kubectl each time. Anything richer than GET/POST of JSON belongs to kubectl or the operator's
client, not here.
"""

import json
import ssl
import urllib.error
import urllib.request
from typing import Any

from localcluster.certs import ClusterCerts


class ApiError(RuntimeError):
    def __init__(self, status: int, body: str) -> None:
        self.status = status
        super().__init__(f"HTTP {status}: {body[:500]}")


class ApiClient:
    def __init__(self, server: str, certs: ClusterCerts, timeout: float = 5.0) -> None:
        self.server = server.rstrip("/")
        self.timeout = timeout
        self._context = ssl.create_default_context(cafile=str(certs.ca_cert))
        self._context.load_cert_chain(str(certs.admin_cert), str(certs.admin_key))

    def request_text(self, method: str, path: str, body: Any = None) -> str:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.server + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        try:
            with urllib.request.urlopen(
                request, timeout=self.timeout, context=self._context
            ) as reply:
                text: str = reply.read().decode()
        except urllib.error.HTTPError as error:
            raise ApiError(error.code, error.read().decode(errors="replace")) from error
        return text

    def get(self, path: str) -> Any:
        return json.loads(self.request_text("GET", path))

    def post(self, path: str, body: Any) -> Any:
        return json.loads(self.request_text("POST", path, body))

    def exists(self, path: str) -> bool:
        try:
            self.request_text("GET", path)
        except ApiError as error:
            if error.status == 404:
                return False
            raise
        return True
