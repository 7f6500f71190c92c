"""The Secret reader over a fake API: a Secret's bytes are outside input. What cannot be a
header's text, or a name no Secret can have, is a ``SecretUnavailableError`` that names the
Secret and the key, never a value."""

import base64
from dataclasses import dataclass, field
from typing import Any

import pytest

from punctual.kube import secrets

SECRET_BYTES = b"\xffhunter2"


@dataclass
class FakeSecret:
    data: dict[str, str] | None


@dataclass
class FakeCore:
    data: dict[str, str] | None = None
    reads: list[tuple[str, str]] = field(default_factory=list)

    async def read_namespaced_secret(self, name: str, namespace: str) -> FakeSecret:
        self.reads.append((namespace, name))
        return FakeSecret(self.data)


def reader(core: FakeCore) -> secrets.SecretReader:
    api: Any = object()
    read = secrets.SecretReader(api, clock=lambda: 0.0)
    read._core = core
    return read


def b64(value: bytes) -> str:
    return base64.b64encode(value).decode()


class TestASecretsValues:
    async def test_are_read_as_text(self) -> None:
        core = FakeCore({"Authorization": b64(b"Bearer t0ken")})

        assert await reader(core).read(namespace="reports", name="api-token") == {
            "Authorization": "Bearer t0ken"
        }

    @pytest.mark.parametrize(
        ("value", "problem"),
        [
            pytest.param(b64(SECRET_BYTES), "not UTF-8 text", id="bytes-that-are-not-utf-8"),
            pytest.param("aHVu dGVy", "not base64", id="base64-with-a-space"),
            pytest.param("aHVudGVy!", "not base64", id="base64-with-another-character"),
        ],
    )
    async def test_that_are_not_text_are_refused_naming_the_key_never_the_value(
        self, value: str, problem: str
    ) -> None:
        core = FakeCore({"X-Token": value})

        with pytest.raises(secrets.SecretUnavailableError) as refused:
            await reader(core).read(namespace="reports", name="api-token")

        assert str(refused.value) == f"Secret reports/api-token: key 'X-Token': {problem}"
        assert refused.value.__cause__ is None
        assert refused.value.__suppress_context__


class TestASecretsName:
    @pytest.mark.parametrize(
        "name",
        [
            pytest.param(".", id="a-dot-the-namespaces-secrets"),
            pytest.param("..", id="two-dots-the-namespace"),
            pytest.param("a/b", id="a-slash"),
            pytest.param("Token", id="upper-case"),
            pytest.param("a" * 254, id="too-long"),
        ],
    )
    async def test_that_no_secret_can_have_is_refused_without_a_request(self, name: str) -> None:
        core = FakeCore({})

        with pytest.raises(secrets.SecretUnavailableError, match="not a Secret's name"):
            await reader(core).read(namespace="reports", name=name)

        assert core.reads == []
