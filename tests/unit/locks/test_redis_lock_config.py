"""The Redis lock's configuration, without a server: URLs, keys and redaction."""

import pytest

from punctual.locks import redis as redis_lock
from punctual.redis_io import connections, slot_keys

PASSWORD = "hunter2-password"


class TestTheKeyIsTheSlot:
    def test_the_key_is_the_prefix_and_the_slot_id(self) -> None:
        slot_id = "reports/nightly/5f0c1d2e-uid/1767234600000"

        assert slot_keys.slot_key(slot_id) == f"punctual:slot:{slot_id}"

    @pytest.mark.parametrize(
        "slot_id", ["", "a b/c/uid/1", "a/b/uid/1\r\nFLUSHALL", "a/b/uid/1\n", "a\tb", "a\x00b"]
    )
    def test_a_slot_id_with_whitespace_or_control_characters_is_refused(self, slot_id: str) -> None:
        with pytest.raises(ValueError, match="refusing a slot id"):
            slot_keys.slot_key(slot_id)


class TestOnlyRedisUrlsAreAccepted:
    @pytest.mark.parametrize(
        "url",
        [
            "redis://127.0.0.1:6379/0",
            "rediss://redis.example.com:6380/0",
            f"redis://:{PASSWORD}@127.0.0.1:6379/0",
            f"redis://punctual:{PASSWORD}@127.0.0.1/1",
        ],
    )
    async def test_redis_and_rediss_urls(self, url: str) -> None:
        lock = redis_lock.RedisLock.from_url(url)  # connects lazily: no server needed
        await lock.close()

    @pytest.mark.parametrize(
        "url", ["http://127.0.0.1:6379", "unix:///run/redis.sock", "127.0.0.1:6379"]
    )
    def test_other_schemes_are_refused(self, url: str) -> None:
        with pytest.raises(ValueError, match=r"redis:// or rediss://"):
            redis_lock.RedisLock.from_url(url)

    def test_a_refused_url_does_not_show_its_password(self) -> None:
        with pytest.raises(ValueError, match="redis://") as raised:
            redis_lock.RedisLock.from_url(f"http://:{PASSWORD}@127.0.0.1:6379")

        assert PASSWORD not in str(raised.value)

    def test_a_malformed_url_is_refused_without_its_password(self) -> None:
        with pytest.raises(ValueError, match="not a usable Redis URL") as raised:
            redis_lock.RedisLock.from_url(f"redis://:{PASSWORD}@127.0.0.1:port/0")

        assert PASSWORD not in str(raised.value)

    def test_a_pool_needs_a_connection(self) -> None:
        with pytest.raises(ValueError, match="max_connections"):
            redis_lock.RedisLock.from_url("redis://127.0.0.1:6379", max_connections=0)


class TestThePasswordIsNeverShown:
    @pytest.mark.parametrize(
        ("url", "shown"),
        [
            (f"redis://:{PASSWORD}@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"),
            (
                f"rediss://app:{PASSWORD}@redis.example.com/2",
                "rediss://app:***@redis.example.com/2",
            ),
            (f"redis://:{PASSWORD}@[::1]:6379", "redis://:***@[::1]:6379"),
            ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
            ("redis://app@127.0.0.1:6379/0", "redis://app@127.0.0.1:6379/0"),
            (f"redis://:{PASSWORD}@127.0.0.1:port/0", "redis://:***@127.0.0.1:port/0"),
        ],
    )
    def test_urls_are_redacted(self, url: str, shown: str) -> None:
        assert connections.redact_url(url) == shown

    async def test_the_lock_repr_is_redacted(self) -> None:
        lock = redis_lock.RedisLock.from_url(f"redis://:{PASSWORD}@127.0.0.1:6379/0")
        try:
            assert repr(lock) == "RedisLock(redis://:***@127.0.0.1:6379/0)"
        finally:
            await lock.close()
