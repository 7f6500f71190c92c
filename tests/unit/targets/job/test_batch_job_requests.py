"""A Job's creation is built and serialised ahead of its slot, then sent as it is: byte for byte,
with the client's credentials and headers, over its session (a local HTTP server stands in for
the API server)."""

import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from kubernetes_asyncio import client

from punctual.kube import client as kube_client
from punctual.scheduling import slots
from punctual.targets.job import manifests
from punctual.targets.job import requests as batch_job_requests

OWNER = slots.JobRef(
    namespace="reports", name="nightly", uid="5f0c1d2e-0000-4000-8000-00000000000a"
)
SLOT = datetime(2026, 11, 30, 1, 30, tzinfo=UTC)
TEMPLATE = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
JOBS_PATH = "/apis/batch/v1/namespaces/reports/jobs"


def request() -> manifests.BatchJobRequest:
    return manifests.BatchJobRequest.of(
        manifests.batch_job_manifest(
            TEMPLATE,
            owner=OWNER,
            slot=SLOT,
            slot_id=slots.slot_id(OWNER, SLOT),
            scheduled_time=SLOT,
            active_deadline=timedelta(minutes=5),
        )
    )


@dataclass
class ApiServer:
    """Answers POSTs of Jobs with ``answer`` (201 and the Job, by default) and GETs of one."""

    posted: list[tuple[str, Mapping[str, str], bytes]] = field(default_factory=list)
    status: int = 201
    answer: bytes | None = None
    existing: dict[str, Any] | None = None

    async def post(self, incoming: web.Request) -> web.Response:
        body = await incoming.read()
        self.posted.append((incoming.path, incoming.headers.copy(), body))  # case-insensitive
        job = json.loads(body)
        job["metadata"] |= {"uid": "job-uid", "resourceVersion": "42"}
        text = self.answer if self.answer is not None else json.dumps(job).encode()
        return web.Response(status=self.status, body=text, content_type="application/json")

    async def get(self, incoming: web.Request) -> web.Response:
        if self.existing is None:
            return web.json_response({"kind": "Status", "reason": "NotFound"}, status=404)
        return web.json_response(self.existing)


@pytest.fixture
async def server() -> AsyncIterator[tuple[ApiServer, TestServer]]:
    api_server = ApiServer()
    app = web.Application()
    app.router.add_post(JOBS_PATH, api_server.post)
    app.router.add_get(JOBS_PATH + "/{name}", api_server.get)
    async with TestServer(app) as running:
        yield api_server, running


@pytest.fixture
async def api(server: tuple[ApiServer, TestServer]) -> AsyncIterator[client.ApiClient]:
    configuration = client.Configuration(host=str(server[1].make_url("")).rstrip("/"))
    configuration.api_key = {"BearerToken": "Bearer t0ken"}
    opened = client.ApiClient(configuration)
    yield opened
    await opened.close()


class TestABatchJobRequest:
    def test_is_the_manifest_as_compact_json(self) -> None:
        built = request()

        manifest = json.loads(built.body)
        assert (built.namespace, built.name) == ("reports", "nightly-1796002200")
        assert manifest["metadata"]["name"] == "nightly-1796002200"
        assert b": " not in built.body
        assert b", " not in built.body


class TestPostingPreparedJson:
    async def test_sends_the_body_as_it_is_with_the_clients_credentials(
        self, server: tuple[ApiServer, TestServer], api: client.ApiClient
    ) -> None:
        body = request().body

        status, answer = await kube_client.post_json(api, JOBS_PATH, body)

        assert status == 201
        assert answer["metadata"]["uid"] == "job-uid"
        [(path, headers, sent)] = server[0].posted
        assert (path, sent) == (JOBS_PATH, body)
        assert headers["authorization"] == "Bearer t0ken"
        assert headers["Content-Type"] == "application/json"
        assert headers["User-Agent"] == api.user_agent

    async def test_a_refreshed_token_is_the_one_sent(
        self, server: tuple[ApiServer, TestServer], api: client.ApiClient
    ) -> None:
        def refresh(configuration: client.Configuration) -> None:
            configuration.api_key["BearerToken"] = "Bearer n3w"

        api.configuration.refresh_api_key_hook = refresh

        await kube_client.post_json(api, JOBS_PATH, request().body)

        [(_, headers, _)] = server[0].posted
        assert headers["authorization"] == "Bearer n3w"

    async def test_an_answer_that_is_not_json_is_an_empty_body(
        self, server: tuple[ApiServer, TestServer], api: client.ApiClient
    ) -> None:
        server[0].status, server[0].answer = 500, b"<html>proxy error</html>"

        assert await kube_client.post_json(api, JOBS_PATH, request().body) == (500, {})


class TestCreatingAJob:
    async def test_a_created_job_is_ours(
        self, server: tuple[ApiServer, TestServer], api: client.ApiClient
    ) -> None:
        state, created = await batch_job_requests.BatchJobsApi(api).create(request())

        assert created
        assert (state.name, state.uid, state.slot_id) == (
            "nightly-1796002200",
            "job-uid",
            slots.slot_id(OWNER, SLOT),
        )

    async def test_an_existing_job_is_read_and_handed_back(
        self, server: tuple[ApiServer, TestServer], api: client.ApiClient
    ) -> None:
        existing = json.loads(request().body)
        existing["metadata"] |= {"uid": "earlier-uid", "resourceVersion": "7"}
        server[0].status = 409
        server[0].answer = b'{"kind":"Status","reason":"AlreadyExists"}'
        server[0].existing = existing

        state, created = await batch_job_requests.BatchJobsApi(api).create(request())

        assert not created
        assert state.uid == "earlier-uid"

    async def test_a_refusal_says_why(
        self, server: tuple[ApiServer, TestServer], api: client.ApiClient
    ) -> None:
        server[0].status = 403
        server[0].answer = b'{"kind":"Status","reason":"Forbidden","message":"no RBAC"}'

        with pytest.raises(
            batch_job_requests.BatchJobApiError, match="creating Job nightly-1796002200: HTTP 403"
        ):
            await batch_job_requests.BatchJobsApi(api).create(request())

    async def test_no_answer_is_a_job_api_error(self, api: client.ApiClient) -> None:
        api.configuration.host = "http://127.0.0.1:9"  # nothing listens there

        with pytest.raises(
            batch_job_requests.BatchJobApiError, match="creating Job nightly-1796002200"
        ):
            await batch_job_requests.BatchJobsApi(api).create(request())
