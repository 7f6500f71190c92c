"""The Redis lock's configuration, without a server: URLs (plain and Sentinel), keys and
redaction."""

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

    @pytest.mark.parametrize(
        "url",
        [
            "redis+sentinel://127.0.0.1:26379/mymaster",
            f"rediss+sentinel://app:{PASSWORD}@s1:26380,s2:26380,s3:26380/mymaster?db=1",
        ],
    )
    async def test_sentinel_urls(self, url: str) -> None:
        lock = redis_lock.RedisLock.from_url(url)  # asks the Sentinels lazily: none needed
        await lock.close()

    def test_a_pool_needs_a_connection(self) -> None:
        with pytest.raises(ValueError, match="max_connections"):
            redis_lock.RedisLock.from_url("redis://127.0.0.1:6379", max_connections=0)


class TestOnlyAPrimaryBehindSentinelFailsOver:
    """What a claim does when its server is gone hangs on it: behind Sentinel it waits for the
    new primary, on a standalone server it fails closed at once (``redis_io.pipelines``)."""

    @pytest.mark.parametrize(
        ("url", "fails_over"),
        [
            ("redis+sentinel://127.0.0.1:26379/mymaster", True),
            ("rediss+sentinel://s1:26380,s2:26380/mymaster", True),
            ("redis://127.0.0.1:6379/0", False),
            ("rediss://redis.example.com/2", False),
        ],
    )
    async def test_a_connection_says_whether_its_server_fails_over(
        self, url: str, *, fails_over: bool
    ) -> None:
        connection = connections.connect(url)
        try:
            assert connection.fails_over is fails_over
        finally:
            await connection.client.aclose()


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


class TestASentinelUrlNamesItsSentinelsAndService:
    @pytest.mark.parametrize(
        ("url", "sentinels", "service", "plain_url"),
        [
            (
                "redis+sentinel://10.0.0.1:26379,10.0.0.2:26380/mymaster",
                (("10.0.0.1", 26379), ("10.0.0.2", 26380)),
                "mymaster",
                "redis://10.0.0.1:26379",
            ),
            (
                "redis+sentinel://sentinel.redis.svc/punctual",
                (("sentinel.redis.svc", connections.SENTINEL_PORT),),
                "punctual",
                f"redis://sentinel.redis.svc:{connections.SENTINEL_PORT}",
            ),
            (
                f"rediss+sentinel://app:{PASSWORD}@[::1]:26379,s2/mymaster?db=2",
                (("::1", 26379), ("s2", connections.SENTINEL_PORT)),
                "mymaster",
                f"rediss://app:{PASSWORD}@[::1]:26379?db=2",
            ),
            (
                "redis+sentinel://s1:1/my%20master?ssl_cert_reqs=none",
                (("s1", 1),),
                "my master",
                "redis://s1:1?ssl_cert_reqs=none",
            ),
        ],
    )
    def test_sentinels_service_and_the_options_of_the_servers(
        self,
        url: str,
        sentinels: tuple[tuple[str, int], ...],
        service: str,
        plain_url: str,
    ) -> None:
        assert connections.sentinel_address(url) == connections.SentinelAddress(
            sentinels=sentinels, service=service, plain_url=plain_url
        )

    @pytest.mark.parametrize("url", ["redis://127.0.0.1:6379/0", "rediss://h/1"])
    def test_a_plain_url_names_no_sentinel(self, url: str) -> None:
        assert connections.sentinel_address(url) is None

    @pytest.mark.parametrize(
        ("url", "message"),
        [
            (f"redis+sentinel://:{PASSWORD}@s1:26379", "ends with the service's name"),
            (f"redis+sentinel://:{PASSWORD}@s1:26379/", "ends with the service's name"),
            (f"redis+sentinel://:{PASSWORD}@s1:26379/a/b", "ends with the service's name"),
            (f"redis+sentinel://:{PASSWORD}@s1:port/mymaster", "not a Sentinel address"),
            (f"redis+sentinel://:{PASSWORD}@s1:26379,/mymaster", "not a Sentinel address"),
            (f"redis+sentinel://:{PASSWORD}@s1:70000/mymaster", "not a Sentinel address"),
        ],
    )
    def test_a_malformed_sentinel_url_is_refused_without_its_password(
        self, url: str, message: str
    ) -> None:
        with pytest.raises(ValueError, match=message) as raised:
            redis_lock.RedisLock.from_url(url)

        assert PASSWORD not in str(raised.value)

    @pytest.mark.parametrize(
        ("url", "shown"),
        [
            (
                f"redis+sentinel://:{PASSWORD}@s1:26379,s2:26379/mymaster",
                "redis+sentinel://:***@s1:26379,s2:26379/mymaster",
            ),
            (
                f"rediss+sentinel://app:{PASSWORD}@s1/mymaster?db=1",
                "rediss+sentinel://app:***@s1/mymaster?db=1",
            ),
        ],
    )
    def test_sentinel_urls_are_redacted(self, url: str, shown: str) -> None:
        assert connections.redact_url(url) == shown

    async def test_the_lock_repr_of_a_sentinel_url_is_redacted(self) -> None:
        lock = redis_lock.RedisLock.from_url(f"redis+sentinel://:{PASSWORD}@s1,s2/mymaster")
        try:
            assert repr(lock) == "RedisLock(redis+sentinel://:***@s1,s2/mymaster)"
        finally:
            await lock.close()
