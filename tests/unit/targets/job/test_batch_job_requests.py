"""A Job's creation is built and serialised ahead of its slot, then sent as it is: byte for byte,
with the client's credentials and headers, over its session (a local HTTP server stands in for
the API server)."""

import asyncio
import gc
import json
import tracemalloc
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp import web, web_protocol
from aiohttp.test_utils import TestServer
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from punctual.kube import client as kube_client
from punctual.scheduling import slots
from punctual.targets.job import manifests
from punctual.targets.job import requests as batch_job_requests
from punctual.targets.job import watcher as batch_job_watcher

OWNER = slots.JobRef(
    namespace="reports", name="nightly", uid="5f0c1d2e-0000-4000-8000-00000000000a"
)
SLOT = datetime(2026, 11, 30, 1, 30, tzinfo=UTC)
TEMPLATE = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
JOBS_PATH = "/apis/batch/v1/namespaces/reports/jobs"
ALL_JOBS_PATH = "/apis/batch/v1/jobs"


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
    listed: list[bytes] = field(default_factory=list)
    """The labelled Jobs, each serialised, listed in pages; a continue token is an index."""
    expired: bool = False
    """Whether a continue token is answered 410 Gone."""
    queries: list[Mapping[str, str]] = field(default_factory=list)

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

    async def list(self, incoming: web.Request) -> web.StreamResponse:
        if incoming.query.get("watch"):
            await asyncio.sleep(3600)
        self.queries.append(dict(incoming.query))
        token = incoming.query.get("continue")
        if token and self.expired:
            gone = {"kind": "Status", "code": 410, "reason": "Expired", "metadata": {}}
            return web.json_response(gone, status=410)
        start = int(token or 0)
        end = start + int(incoming.query["limit"])
        following = str(end) if end < len(self.listed) else ""
        metadata = json.dumps({"resourceVersion": "77", "continue": following}).encode()
        items = b",".join(self.listed[start:end])
        body = b'{"kind":"JobList","metadata":' + metadata + b',"items":[' + items + b"]}"
        return web.Response(body=body, content_type="application/json")


@pytest.fixture
async def server() -> AsyncIterator[tuple[ApiServer, TestServer]]:
    api_server = ApiServer()
    app = web.Application()
    app.router.add_post(JOBS_PATH, api_server.post)
    app.router.add_get(JOBS_PATH + "/{name}", api_server.get)
    app.router.add_get(ALL_JOBS_PATH, api_server.list)
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


def client_side(snapshot: tracemalloc.Snapshot) -> int:
    """The bytes of a snapshot not allocated by the API server's side of the test."""
    server_side = tracemalloc.Filter(False, web_protocol.__file__, all_frames=True)
    return sum(stat.size for stat in snapshot.filter_traces([server_side]).statistics("filename"))


def labelled_job(index: int, *, env_entries: int = 10) -> dict[str, Any]:
    env = [{"name": f"VARIABLE_{k:05d}", "value": "x" * 40} for k in range(env_entries)]
    job = json.loads(request().body)
    job["metadata"] |= {
        "name": f"nightly-{index}",
        "uid": f"uid-{index}",
        "resourceVersion": str(index + 1),
        "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}],
    }
    job["spec"]["template"]["spec"]["containers"][0]["env"] = env
    job["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
    return job


class TestListingJobs:
    async def test_a_page_asks_for_its_limit_from_its_continue_token(
        self, server: tuple[ApiServer, TestServer], api: client.ApiClient
    ) -> None:
        server[0].listed = [json.dumps(labelled_job(i)).encode() for i in range(3)]

        page = await batch_job_requests.BatchJobsApi(api).list_page(
            None, limit=2, continue_token="1"
        )

        [query] = server[0].queries
        assert query["limit"] == "2"
        assert query["continue"] == "1"
        assert query["labelSelector"] == manifests.SCHEDULED_JOB_LABEL
        assert [item["metadata"]["name"] for item in page.items] == ["nightly-1", "nightly-2"]
        assert (page.resource_version, page.continue_token) == ("77", "")

    async def test_a_page_has_no_job_spec_nor_managed_fields(
        self, server: tuple[ApiServer, TestServer], api: client.ApiClient
    ) -> None:
        server[0].listed = [json.dumps(labelled_job(0)).encode()]

        page = await batch_job_requests.BatchJobsApi(api).list_page(
            None, limit=2, continue_token=None
        )

        [item] = page.items
        assert "spec" not in item
        assert "managedFields" not in item["metadata"]
        assert item["status"]["conditions"] == [{"type": "Complete", "status": "True"}]
        assert item["metadata"]["ownerReferences"][0]["uid"] == OWNER.uid

    async def test_an_expired_continue_token_is_410_gone(
        self, server: tuple[ApiServer, TestServer], api: client.ApiClient
    ) -> None:
        server[0].expired = True

        with pytest.raises(ApiException) as raised:
            await batch_job_requests.BatchJobsApi(api).list_page(None, limit=2, continue_token="2")

        assert raised.value.status == 410

    async def test_forty_big_labelled_jobs_leave_only_their_small_records_behind(
        self, server: tuple[ApiServer, TestServer], api: client.ApiClient
    ) -> None:
        server[0].listed = [
            json.dumps(labelled_job(i, env_entries=200)).encode() for i in range(40)
        ]
        jobs = batch_job_watcher.BatchJobWatcher(batch_job_requests.BatchJobsApi(api))
        gc.collect()
        tracemalloc.start(8)  # deep enough to tell the server's side by its frames
        try:
            before = client_side(tracemalloc.take_snapshot())
            await jobs.listed()
            gc.collect()
            kept = client_side(tracemalloc.take_snapshot()) - before
        finally:
            tracemalloc.stop()
            await jobs.close()

        assert len(jobs.jobs_of(OWNER)) == 40
        listed = sum(map(len, server[0].listed))
        assert listed > 500_000
        assert kept < listed / 4  # a watch's connection and tasks, and 40 small records
