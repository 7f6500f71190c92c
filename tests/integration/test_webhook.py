"""The validating admission webhook against the real kube-apiserver, and its part of the chart.

- Admission: an operator process on the host serves the webhook at https://127.0.0.1:<port>
  (``--webhook-port``, ``--webhook-cert-dir``) with a certificate of a CA made here; the API
  server calls it through the chart's own ValidatingWebhookConfiguration, rendered by helm with
  its ``clientConfig`` pointed at that URL and scoped to this module's namespace. ``kubectl
  apply`` of a spec the operator would report ``InvalidSpec`` (among them specs past the
  default bounds per job: ``every: 1ms``) is refused with the field's path and the very message
  the operator reports without the webhook; a valid one is admitted.
- Who may call it: the operator serves with ``--webhook-client-ca``, the CA of the client
  certificate the local API server presents to webhooks (``hack/localcluster``): every review
  above passes through it, while a client without that certificate is refused at TLS. A
  hand-made review POSTed with it for an object of another namespace than its own is refused
  without a dry run (the API server counts none) and without a word of that namespace.
- Never blocking deletes: against a webhook that does not answer (failurePolicy Fail), a spec
  change is refused, while labels, annotations, finalizers and the delete itself go through.
- The chart: both certificate modes render, pass the API server's dry run, and agree with the
  operator (the path, the port, the certificate's names and CA).
"""

import base64
import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from chart_harness import CHART, Helm, HelmError, is_helm_test, one
from cryptography import x509
from operator_harness import (
    Operators,
    condition,
    eventually,
    job_dry_runs,
    new_namespace,
    read,
    scheduled_job,
)

from localcluster import LocalCluster, ports
from localcluster.binaries import kubernetes_version
from localcluster.certs import ClusterCerts, ServingPair, serving_pair
from punctual.controller import admission

pytest_plugins = ["operator_fixtures"]

SKIP_LABEL = "punctual.test/unchecked"
"""Objects with this label bypass the webhook (an objectSelector of the test's configuration):
how a test makes an invalid object to read the operator's own InvalidSpec message."""
HTTP = {"http": {"url": "http://127.0.0.1:9/never-called"}}
"""A valid target that is never called: the jobs here run every hour at most."""
JOB_TEMPLATE: dict[str, Any] = {
    "spec": {
        "backoffLimit": 0,
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "hello", "image": "busybox:1.36"}],
            }
        },
    }
}
READY_TIMEOUT = 60.0


def with_container(**fields: Any) -> dict[str, Any]:
    """The Job template above, its one container's fields replaced (``None``: left out)."""
    container = {"name": "hello", "image": "busybox:1.36", **fields}
    pod = {"restartPolicy": "Never", "containers": [{k: v for k, v in container.items() if v}]}
    return {"job": {"template": {"spec": {"backoffLimit": 0, "template": {"spec": pod}}}}}


INVALID_SPECS: dict[str, tuple[dict[str, Any], str]] = {
    "cron minute 61": ({"schedule": "61 * * * *", "target": HTTP}, "spec.schedule: minute"),
    "unknown time zone": (
        {"schedule": "0 3 * * *", "timeZone": "Mars/Olympus", "target": HTTP},
        "spec.timeZone: unknown time zone 'Mars/Olympus'",
    ),
    "jitter longer than the period": (
        {"schedule": "*/5 * * * *", "jitter": "10m", "target": HTTP},
        "spec.jitter: 10m must be shorter",
    ),
    "slots closer than the minimum period": (
        {"every": "1ms", "target": HTTP},
        "spec.every: slots 1ms apart: this operator allows no less than 1s between two slots "
        "(punctual run --min-period)",
    ),
    "a timeout past the maximum": (
        {"schedule": "0 * * * *", "timeout": "25h", "target": HTTP},
        "spec.timeout: 25h is longer than the 24h this operator allows one run",
    ),
    "a Job template without a JobSpec": (
        {"schedule": "0 * * * *", "target": {"job": {"template": {"metadata": {}}}}},
        "spec.target.job.template.spec: required",
    ),
    "a container without an image (the Job's dry run)": (
        {"schedule": "0 * * * *", "target": with_container(image=None)},
        "spec.target.job.template.spec.template.spec.containers[0].image: Required value",
    ),
    "a restart policy Jobs refuse (the Job's dry run)": (
        {
            "schedule": "0 * * * *",
            "target": {
                "job": {
                    "template": {
                        "spec": {
                            "template": {
                                "spec": {
                                    "restartPolicy": "Always",
                                    "containers": [{"name": "c", "image": "busybox:1.36"}],
                                }
                            }
                        }
                    }
                }
            },
        },
        "spec.target.job.template.spec.template.spec.restartPolicy: Required value",
    ),
}


# -- the webhook's configuration: the chart's, pointed at a URL ----------------------------------


@pytest.fixture(scope="module")
def helm(cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Helm:
    return Helm(cluster, tmp_path_factory.mktemp("helm-home"))


def chart_configuration(
    helm: Helm, *, name: str, namespace: str, url_of: str, ca: bytes
) -> dict[str, Any]:
    """The chart's ValidatingWebhookConfiguration, called at ``https://<url_of><its path>`` with
    ``ca``, for ``namespace`` only: the rules, conditions and policy are the chart's own."""
    objects = helm.template({"webhook": {"enabled": True}}, namespace="punctual-system")
    configuration = one(objects, "ValidatingWebhookConfiguration")
    configuration["metadata"] = {"name": name}
    [webhook] = configuration["webhooks"]
    path = webhook["clientConfig"]["service"]["path"]
    webhook["clientConfig"] = {
        "url": f"https://{url_of}{path}",
        "caBundle": base64.b64encode(ca).decode(),
    }
    webhook["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
    webhook["objectSelector"] = {
        "matchExpressions": [{"key": SKIP_LABEL, "operator": "DoesNotExist"}]
    }
    return configuration


@pytest.fixture(scope="module")
def webhook_certs(tmp_path_factory: pytest.TempPathFactory) -> ServingPair:
    return serving_pair(tmp_path_factory.mktemp("webhook-tls"), common_name="punctual-webhook")


def cluster_certs(cluster: LocalCluster) -> ClusterCerts:
    return ClusterCerts(cluster.run_dir / "pki")  # where LocalCluster keeps its PKI


@pytest.fixture(scope="module")
def webhook_port() -> int:
    return ports.free_port()


@pytest.fixture(scope="module")
def operators(  # noqa: PLR0917 - fixtures
    cluster: LocalCluster,
    scheduled_job_crd: list[Path],
    module_namespace: str,
    webhook_certs: ServingPair,
    webhook_port: int,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Operators]:
    with Operators(
        cluster,
        tmp_path_factory.mktemp("operators"),
        namespace=module_namespace,
        extra_args=[
            "--webhook-port",
            str(webhook_port),
            "--webhook-cert-dir",
            str(webhook_certs.cert.parent),
            "--webhook-client-ca",
            str(cluster_certs(cluster).webhook_client_ca_cert),
        ],
    ) as started:
        yield started
        assert started.problems() == {}, started.logs()


@pytest.fixture(scope="module")
def webhook(  # noqa: PLR0917 - fixtures
    cluster: LocalCluster,
    helm: Helm,
    operators: Operators,
    module_namespace: str,
    webhook_certs: ServingPair,
    webhook_port: int,
) -> Iterator[str]:
    """The configuration installed, and answering: the namespace it checks."""
    configuration = chart_configuration(
        helm,
        name=f"punctual-test-{module_namespace}",
        namespace=module_namespace,
        url_of=f"{ports.LOOPBACK}:{webhook_port}",
        ca=webhook_certs.ca_cert.read_bytes(),
    )
    cluster.kubectl("apply", "-f", "-", input=json.dumps(configuration))
    try:
        probe = scheduled_job(module_namespace, "probe", {"schedule": "61 * * * *", "target": HTTP})
        # kopf serves once it has scanned the resources, a moment after /healthz answers.
        eventually(
            lambda: "denied the request" in apply(cluster, probe, "--dry-run=server").stderr,
            timeout=READY_TIMEOUT,
            what="an answer of the webhook",
        )
        yield module_namespace
    finally:
        cluster.kubectl(
            "delete", "validatingwebhookconfiguration", configuration["metadata"]["name"]
        )


def apply(cluster: LocalCluster, body: Mapping[str, Any], *flags: str) -> Any:
    """``kubectl apply``, its outcome returned (not raised)."""
    return cluster.kubectl("apply", *flags, "-f", "-", input=json.dumps(body), check=False)


def exists(cluster: LocalCluster, namespace: str, name: str) -> bool:
    found = cluster.kubectl("get", "scheduledjob", name, "-n", namespace, check=False)
    return found.returncode == 0


class TestAdmission:
    @pytest.mark.parametrize("case", INVALID_SPECS)
    def test_an_invalid_spec_is_refused_naming_its_field(
        self, cluster: LocalCluster, webhook: str, case: str
    ) -> None:
        spec, message = INVALID_SPECS[case]
        name = f"invalid-{list(INVALID_SPECS).index(case)}"

        refused = apply(cluster, scheduled_job(webhook, name, spec))

        assert refused.returncode != 0
        assert "denied the request: " + message in refused.stderr, refused.stderr
        assert not exists(cluster, webhook, name)

    @pytest.mark.parametrize(
        "spec",
        [
            {"schedule": "0 3 * * *", "timeZone": "Europe/Copenhagen", "target": HTTP},
            {"every": "1h", "target": {"job": {"template": JOB_TEMPLATE}}},
        ],
        ids=["http target", "job target"],
    )
    def test_a_valid_spec_is_admitted_and_scheduled(
        self, cluster: LocalCluster, webhook: str, spec: dict[str, Any]
    ) -> None:
        name = f"valid-{'job' if 'every' in spec else 'http'}"

        admitted = apply(cluster, scheduled_job(webhook, name, spec))

        assert admitted.returncode == 0, admitted.stderr
        assert "Warning" not in admitted.stderr, admitted.stderr
        ready = eventually(
            lambda: condition(read(cluster, webhook, name), "Ready"),
            timeout=READY_TIMEOUT,
            what=f"a Ready condition on {name}",
        )
        assert ready["status"] == "True", ready

    def test_an_update_to_an_invalid_spec_is_refused_and_the_spec_stays(
        self, cluster: LocalCluster, webhook: str
    ) -> None:
        body = scheduled_job(webhook, "updated", {"schedule": "0 3 * * *", "target": HTTP})
        assert apply(cluster, body).returncode == 0

        changed = cluster.kubectl(
            "patch", "scheduledjob", "updated", "-n", webhook, "--type=merge",
            "-p", json.dumps({"spec": {"timeZone": "Europe/Atlantis"}}), check=False,
        )  # fmt: skip

        assert changed.returncode != 0
        assert "denied the request: spec.timeZone: unknown time zone" in changed.stderr
        assert read(cluster, webhook, "updated")["spec"].get("timeZone") != "Europe/Atlantis"

    def test_the_refusal_is_the_message_the_operator_reports_without_the_webhook(
        self, cluster: LocalCluster, webhook: str
    ) -> None:
        spec = {"schedule": "0 25 * * *", "target": HTTP}
        refused = apply(cluster, scheduled_job(webhook, "same-words", spec))
        unchecked = scheduled_job(webhook, "same-words", spec)
        unchecked["metadata"]["labels"] = {SKIP_LABEL: "yes"}

        assert apply(cluster, unchecked).returncode == 0
        ready = eventually(
            lambda: condition(read(cluster, webhook, "same-words"), "Ready"),
            timeout=READY_TIMEOUT,
            what="the operator's Ready condition",
        )

        assert (ready["status"], ready["reason"]) == ("False", "InvalidSpec")
        assert f"denied the request: {ready['message']}\n" in refused.stderr, refused.stderr
        assert ready["message"].startswith("spec.schedule: hour")

    def test_changes_besides_the_spec_of_an_invalid_object_are_not_checked(
        self, cluster: LocalCluster, webhook: str
    ) -> None:
        body = scheduled_job(webhook, "left-invalid", {"schedule": "0 25 * * *", "target": HTTP})
        body["metadata"]["labels"] = {SKIP_LABEL: "yes"}
        assert apply(cluster, body).returncode == 0

        # Without the label the webhook sees the object again: only the spec is its business.
        cluster.kubectl("label", "scheduledjob", "left-invalid", "-n", webhook, f"{SKIP_LABEL}-")
        cluster.kubectl("annotate", "scheduledjob", "left-invalid", "-n", webhook, "team=a")
        cluster.kubectl("delete", "scheduledjob", "left-invalid", "-n", webhook)

    def test_a_review_larger_than_its_bound_is_refused_unread(
        self, cluster: LocalCluster, webhook: str, webhook_certs: ServingPair, webhook_port: int
    ) -> None:
        body = b"{" + b" " * (2 << 20) + b"}"

        with pytest.raises(urllib.error.HTTPError) as refused:
            post(webhook_port, body, as_api_server(cluster, webhook_certs))

        assert refused.value.code == 413


# -- who may call it -----------------------------------------------------------------------------


def as_api_server(cluster: LocalCluster, webhook_certs: ServingPair) -> ssl.SSLContext:
    """A TLS client with the client certificate the API server presents to webhooks."""
    certs = cluster_certs(cluster)
    context = ssl.create_default_context(cafile=str(webhook_certs.ca_cert))
    context.load_cert_chain(str(certs.webhook_client_cert), str(certs.webhook_client_key))
    return context


def post(port: int, body: bytes, context: ssl.SSLContext) -> Any:
    """POST ``body`` to the webhook's path; its JSON answer."""
    request = urllib.request.Request(
        f"https://{ports.LOOPBACK}:{port}/{admission.WEBHOOK_ID}",
        data=body,
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30, context=context) as answer:
        return json.loads(answer.read())


def hand_made_review(*, namespace: str, object_namespace: str) -> bytes:
    """An AdmissionReview of a ScheduledJob CREATE as the API server would send it, for
    ``namespace``, of an object (a job target: dry-run) in ``object_namespace``."""
    resource = {"group": "punctual.dev", "version": "v1alpha1", "resource": "scheduledjobs"}
    kind = {"group": "punctual.dev", "version": "v1alpha1", "kind": "ScheduledJob"}
    body = scheduled_job(
        object_namespace, "forged", {"every": "1h", "target": {"job": {"template": JOB_TEMPLATE}}}
    )
    body["metadata"]["uid"] = "5f0c4c1e-0000-4000-8000-000000000001"
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "forged-review",
            "kind": kind,
            "resource": resource,
            "requestKind": kind,
            "requestResource": resource,
            "name": "forged",
            "namespace": namespace,
            "operation": "CREATE",
            "userInfo": {"username": "system:serviceaccount:tenant:default", "groups": []},
            "object": body,
            "oldObject": None,
            "dryRun": False,
        },
    }
    return json.dumps(review).encode()


QUOTA = "tenant-b-private-quota"
"""A ResourceQuota whose name only a dry run in its namespace can quote."""


@pytest.fixture(scope="module")
def other_tenant(cluster: LocalCluster) -> Iterator[str]:
    """A namespace the webhook's reviews are not for, whose quota leaves no room for a Job: a
    dry run there is refused, quoting it."""
    with new_namespace(cluster, "other-tenant") as namespace:
        quota = {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": QUOTA, "namespace": namespace},
            "spec": {"hard": {"count/jobs.batch": "0"}},
        }
        cluster.kubectl("apply", "-f", "-", input=json.dumps(quota))
        yield namespace


class TestWhoMayCall:
    def test_the_api_servers_own_reviews_pass_its_client_certificate(
        self, cluster: LocalCluster, webhook: str
    ) -> None:
        # The operator serves with --webhook-client-ca; kube-apiserver presents its certificate.
        spec = {"every": "1h", "target": {"job": {"template": JOB_TEMPLATE}}}
        admitted = apply(cluster, scheduled_job(webhook, "through-tls", spec), "--dry-run=server")
        invalid = {"schedule": "61 * * * *", "target": HTTP}
        refused = apply(cluster, scheduled_job(webhook, "through-tls", invalid), "--dry-run=server")

        assert admitted.returncode == 0, admitted.stderr
        assert "denied the request" in refused.stderr, refused.stderr

    @pytest.mark.parametrize(
        "client", ["no certificate", "the cluster admin's certificate"], ids=str
    )
    def test_a_client_without_the_api_servers_certificate_is_refused_at_tls(
        self,
        cluster: LocalCluster,
        webhook: str,
        webhook_certs: ServingPair,
        webhook_port: int,
        client: str,
    ) -> None:
        review = hand_made_review(namespace=webhook, object_namespace=webhook)
        context = ssl.create_default_context(cafile=str(webhook_certs.ca_cert))
        if client != "no certificate":
            certs = cluster_certs(cluster)
            context.load_cert_chain(str(certs.admin_cert), str(certs.admin_key))
        dry_runs = job_dry_runs(cluster)

        with pytest.raises((urllib.error.URLError, ssl.SSLError, ConnectionResetError)) as refused:
            post(webhook_port, review, context)

        failure = refused.value
        reason = failure.reason if isinstance(failure, urllib.error.URLError) else failure
        assert isinstance(reason, (ssl.SSLError, ConnectionResetError)), repr(failure)
        assert job_dry_runs(cluster) == dry_runs
        # The same review with the API server's certificate is answered: only the client differs.
        assert post(webhook_port, review, as_api_server(cluster, webhook_certs))["response"]

    def test_a_review_within_another_namespace_is_dry_run_there(
        self,
        cluster: LocalCluster,
        webhook_certs: ServingPair,
        webhook_port: int,
        other_tenant: str,
    ) -> None:
        # The control for the next test: what a dry run in the other namespace answers.
        review = hand_made_review(namespace=other_tenant, object_namespace=other_tenant)
        dry_runs = job_dry_runs(cluster)

        answer = post(webhook_port, review, as_api_server(cluster, webhook_certs))

        assert job_dry_runs(cluster) > dry_runs
        assert QUOTA in json.dumps(answer), answer

    @pytest.mark.parametrize("where", ["another tenant's namespace", "kube-system"])
    def test_a_review_of_an_object_of_another_namespace_is_refused_without_a_dry_run(  # noqa: PLR0917 - fixtures
        self,
        cluster: LocalCluster,
        webhook: str,
        webhook_certs: ServingPair,
        webhook_port: int,
        other_tenant: str,
        where: str,
    ) -> None:
        elsewhere = other_tenant if where != "kube-system" else "kube-system"
        review = hand_made_review(namespace=webhook, object_namespace=elsewhere)
        dry_runs = job_dry_runs(cluster)

        answer = post(webhook_port, review, as_api_server(cluster, webhook_certs))

        assert answer["response"] == {
            "uid": "forged-review",
            "allowed": False,
            "status": {
                "code": 403,
                "message": "request.object.metadata.namespace: not the namespace of the review",
            },
        }
        assert job_dry_runs(cluster) == dry_runs
        assert QUOTA not in json.dumps(answer)


# -- a webhook that does not answer ------------------------------------------------------------


@pytest.fixture
def silent_webhook(
    cluster: LocalCluster, helm: Helm, scheduled_job_crd: list[Path]
) -> Iterator[str]:
    """A namespace whose ScheduledJob ``kept`` (with a finalizer) was made before the chart's
    configuration was installed pointing at a port where nothing listens."""
    with new_namespace(cluster, "silent-webhook") as namespace:
        body = scheduled_job(namespace, "kept", {"schedule": "0 3 * * *", "target": HTTP})
        body["metadata"]["finalizers"] = ["example.com/keep"]
        assert apply(cluster, body).returncode == 0
        configuration = chart_configuration(
            helm,
            name=f"punctual-test-{namespace}",
            namespace=namespace,
            url_of=f"{ports.LOOPBACK}:{ports.free_port()}",
            ca=b"",
        )
        cluster.kubectl("apply", "-f", "-", input=json.dumps(configuration))
        try:
            yield namespace
        finally:
            cluster.kubectl(
                "delete", "validatingwebhookconfiguration", configuration["metadata"]["name"]
            )


def test_without_an_answer_spec_changes_fail_closed_and_deletes_go_through(
    cluster: LocalCluster, silent_webhook: str
) -> None:
    namespace = silent_webhook
    new = scheduled_job(namespace, "new", {"schedule": "0 3 * * *", "target": HTTP})
    kept = ["scheduledjob", "kept", "-n", namespace]

    created = apply(cluster, new)
    changed = cluster.kubectl(
        "patch", *kept, "--type=merge", "-p", '{"spec": {"schedule": "0 4 * * *"}}', check=False
    )
    labelled = cluster.kubectl("label", *kept, "team=a", check=False)
    annotated = cluster.kubectl("annotate", *kept, "note=b", check=False)
    deleting = cluster.kubectl("delete", *kept, "--wait=false", check=False)
    unfinalized = cluster.kubectl(
        "patch", *kept, "--type=merge", "-p", '{"metadata": {"finalizers": null}}', check=False
    )

    for refused in (created, changed):
        assert refused.returncode != 0
        assert "failed calling webhook" in refused.stderr, refused.stderr
    for done in (labelled, annotated, deleting, unfinalized):
        assert done.returncode == 0, done.stderr
    eventually(lambda: not exists(cluster, namespace, "kept"), timeout=30, what="kept deleted")


# -- the chart -----------------------------------------------------------------------------------

CERT_MANAGER_KINDS = ("Issuer", "Certificate")
"""Left out of the API server's dry run: cert-manager's CRDs are not installed here (their
fields are checked below, where the chart renders them)."""


CERT_MODES: dict[str, dict[str, Any]] = {
    "generated": {"webhook": {"enabled": True}},
    "cert-manager, self-signed": {"webhook": {"enabled": True, "certManager": {"enabled": True}}},
    "cert-manager, a ClusterIssuer": {
        "webhook": {
            "enabled": True,
            "certManager": {
                "enabled": True,
                "issuerRef": {"name": "company-ca", "kind": "ClusterIssuer"},
            },
        }
    },
    "namespaced": {"webhook": {"enabled": True}, "watchNamespaces": ["default", "kube-public"]},
}


def operator_deployment(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """The operator's Deployment, told from the bundled Redis's by its component label."""
    operator = [
        o
        for o in objects
        if o["metadata"].get("labels", {}).get("app.kubernetes.io/component") == "operator"
    ]
    return one(operator, "Deployment")


def operator_pod(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return dict(operator_deployment(objects)["spec"]["template"]["spec"])


def operator_pod_annotations(objects: list[dict[str, Any]]) -> dict[str, str]:
    return dict(operator_deployment(objects)["spec"]["template"]["metadata"]["annotations"])


class TestChart:
    @pytest.mark.parametrize("case", CERT_MODES)
    def test_helm_lint_strict_passes(self, helm: Helm, case: str) -> None:
        version = f"--kube-version={kubernetes_version()}"
        helm.run_with_input(
            ["lint", "--strict", str(CHART), version, "--values=-"], json.dumps(CERT_MODES[case])
        )

    @pytest.mark.parametrize("case", CERT_MODES)
    def test_every_object_passes_the_api_servers_dry_run(
        self,
        cluster: LocalCluster,
        helm: Helm,
        module_namespace: str,
        case: str,
    ) -> None:
        rendered = helm.template(CERT_MODES[case], namespace=module_namespace)
        # The helm test hook needs its ServiceAccount created first: test_helm_chart's matrix
        # applies it in that order.
        objects = [
            o for o in rendered if o["kind"] not in CERT_MANAGER_KINDS and not is_helm_test(o)
        ]

        result = cluster.kubectl(
            "apply", "--dry-run=server", "--validate=strict", "-f", "-",
            input="\n---\n".join(json.dumps(o) for o in objects), check=False,
        )  # fmt: skip

        assert result.returncode == 0, result.stderr

    def test_off_by_default_nothing_of_it_renders(self, helm: Helm) -> None:
        objects = helm.template({})
        [container] = operator_pod(objects)["containers"]

        assert [o for o in objects if "webhook" in json.dumps(o)] == []
        assert not [a for a in container["args"] if a.startswith("--webhook")]

    def test_the_operator_serves_what_the_configuration_calls(self, helm: Helm) -> None:
        objects = helm.template({"webhook": {"enabled": True, "port": 9999}}, release="r")
        pod = operator_pod(objects)
        [container] = pod["containers"]
        [webhook] = one(objects, "ValidatingWebhookConfiguration")["webhooks"]
        service = one(objects, "Service", "r-punctual-webhook")
        [volume] = [v for v in pod["volumes"] if v["name"] == "webhook-tls"]
        [mount] = [m for m in container["volumeMounts"] if m["name"] == "webhook-tls"]

        assert webhook["clientConfig"]["service"] == {
            "name": "r-punctual-webhook",
            "namespace": "punctual-system",
            "path": f"/{admission.WEBHOOK_ID}",
            "port": 443,
        }
        assert service["spec"]["ports"] == [
            {"name": "webhook", "port": 443, "targetPort": "webhook", "protocol": "TCP"}
        ]
        assert {"name": "webhook", "containerPort": 9999, "protocol": "TCP"} in container["ports"]
        assert "--webhook-port=9999" in container["args"]
        assert f"--webhook-cert-dir={mount['mountPath']}" in container["args"]
        assert volume["secret"]["secretName"] == "r-punctual-webhook-tls"
        assert webhook["failurePolicy"] == "Fail"
        assert webhook["rules"] == [
            {
                "apiGroups": ["punctual.dev"],
                "apiVersions": ["v1alpha1"],
                "resources": ["scheduledjobs"],
                "operations": ["CREATE", "UPDATE"],
                "scope": "Namespaced",
            }
        ]

    def test_a_client_ca_is_given_to_the_operator_and_a_new_one_rolls_the_pods(
        self, helm: Helm
    ) -> None:
        pem = "-----BEGIN CERTIFICATE-----\nMIIB...\n-----END CERTIFICATE-----\n"
        values = {"webhook": {"enabled": True, "clientCA": pem}}
        objects = helm.template(values, release="r")
        renewed = helm.template({"webhook": {"enabled": True, "clientCA": pem + pem}}, release="r")
        pod = operator_pod(objects)
        [container] = pod["containers"]
        [volume] = [v for v in pod["volumes"] if v["name"] == "webhook-client-ca"]
        [mount] = [m for m in container["volumeMounts"] if m["name"] == "webhook-client-ca"]
        config_map = one(objects, "ConfigMap", "r-punctual-webhook-client-ca")

        assert config_map["data"] == {"ca.crt": pem}
        assert volume["configMap"]["name"] == "r-punctual-webhook-client-ca"
        assert f"--webhook-client-ca={mount['mountPath']}/ca.crt" in container["args"]
        checksum = "checksum/webhook-client-ca"
        assert (
            operator_pod_annotations(objects)[checksum]
            != (operator_pod_annotations(renewed)[checksum])
        )

    def test_without_a_client_ca_any_client_is_answered(self, helm: Helm) -> None:
        objects = helm.template({"webhook": {"enabled": True}})
        [container] = operator_pod(objects)["containers"]

        assert not [a for a in container["args"] if a.startswith("--webhook-client-ca")]
        assert [o for o in objects if o["metadata"]["name"].endswith("webhook-client-ca")] == []

    def test_the_generated_certificate_is_for_the_service_and_signed_by_the_ca_bundle(
        self, helm: Helm
    ) -> None:
        objects = helm.template({"webhook": {"enabled": True}}, release="r", namespace="ops")
        secret = one(objects, "Secret", "r-punctual-webhook-tls")
        [webhook] = one(objects, "ValidatingWebhookConfiguration")["webhooks"]
        ca_bundle = base64.b64decode(webhook["clientConfig"]["caBundle"])
        certificate = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
        authority = x509.load_pem_x509_certificate(ca_bundle)
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)

        assert secret["type"] == "kubernetes.io/tls"
        assert base64.b64decode(secret["data"]["ca.crt"]) == ca_bundle
        certificate.verify_directly_issued_by(authority)
        assert "r-punctual-webhook.ops.svc" in names.value.get_values_for_type(x509.DNSName)

    def test_with_cert_manager_its_ca_is_injected_and_the_chart_makes_no_key(
        self, helm: Helm
    ) -> None:
        values = CERT_MODES["cert-manager, self-signed"]
        objects = helm.template(values, release="r", namespace="ops")
        configuration = one(objects, "ValidatingWebhookConfiguration")
        certificate = one(objects, "Certificate")

        assert [
            o for o in objects if o["kind"] == "Secret" and "webhook" in o["metadata"]["name"]
        ] == []
        assert configuration["metadata"]["annotations"] == {
            "cert-manager.io/inject-ca-from": "ops/r-punctual-webhook"
        }
        assert "caBundle" not in configuration["webhooks"][0]["clientConfig"]
        assert certificate["metadata"]["name"] == "r-punctual-webhook"
        assert certificate["spec"]["secretName"] == "r-punctual-webhook-tls"
        assert "r-punctual-webhook.ops.svc" in certificate["spec"]["dnsNames"]
        assert (
            certificate["spec"]["issuerRef"]["name"] == one(objects, "Issuer")["metadata"]["name"]
        )

    def test_an_issuer_of_ones_own_replaces_the_self_signed_one(self, helm: Helm) -> None:
        objects = helm.template(CERT_MODES["cert-manager, a ClusterIssuer"])

        assert [o for o in objects if o["kind"] == "Issuer"] == []
        assert one(objects, "Certificate")["spec"]["issuerRef"] == {
            "name": "company-ca",
            "kind": "ClusterIssuer",
            "group": "cert-manager.io",
        }

    def test_namespaced_it_checks_only_the_watched_namespaces(self, helm: Helm) -> None:
        objects = helm.template(CERT_MODES["namespaced"])
        [webhook] = one(objects, "ValidatingWebhookConfiguration")["webhooks"]

        assert webhook["namespaceSelector"] == {
            "matchExpressions": [
                {
                    "key": "kubernetes.io/metadata.name",
                    "operator": "In",
                    "values": ["default", "kube-public"],
                }
            ]
        }

    @pytest.mark.parametrize(
        ("values", "complaint"),
        [
            ({"webhook": {"enabled": True, "port": 8080}}, "webhook.port must differ"),
            ({"webhook": {"failurePolicy": "Sometimes"}}, "at '/webhook/failurePolicy'"),
            ({"webhook": {"timeoutSeconds": 31}}, "at '/webhook/timeoutSeconds'"),
            ({"webhook": {"certManager": {"issuer": "x"}}}, "additional properties 'issuer'"),
        ],
    )
    def test_the_chart_refuses_what_cannot_work(
        self, helm: Helm, values: dict[str, Any], complaint: str
    ) -> None:
        with pytest.raises(HelmError) as refused:
            helm.template(values)

        assert complaint in str(refused.value)


def test_an_upgrade_keeps_the_generated_certificate_and_uninstall_removes_it(
    cluster: LocalCluster, helm: Helm, scheduled_job_crd: list[Path]
) -> None:
    """``lookup`` reuses the installed pair: the API server's CA and the pods' certificate stay
    in agreement across upgrades. (kwok runs the pods; the one watched namespace is empty, so
    the configuration checks nothing of the other tests'.)"""
    with (
        new_namespace(cluster, "webhook-release") as namespace,
        new_namespace(cluster, "webhook-watched") as watched,
    ):
        values: dict[str, Any] = {
            "replicaCount": 1,
            "watchNamespaces": [watched],
            "webhook": {"enabled": True},
        }
        secret = ["secret", "wh-punctual-webhook-tls", "-n", namespace, "-o", "json"]
        configuration = ["validatingwebhookconfiguration", "wh-punctual", "-o", "json"]

        def installed() -> tuple[dict[str, str], dict[str, Any]]:
            [webhook] = json.loads(cluster.kubectl("get", *configuration).stdout)["webhooks"]
            return json.loads(cluster.kubectl("get", *secret).stdout)["data"], webhook

        helm.install("wh", namespace, values)
        try:
            before, webhook_before = installed()
            values["webhook"]["timeoutSeconds"] = 12
            helm.install("wh", namespace, values, upgrade=True)
            after, webhook_after = installed()
        finally:
            helm.uninstall("wh", namespace)

        assert after == before
        assert webhook_after["clientConfig"]["caBundle"] == before["ca.crt"]
        assert (webhook_before["timeoutSeconds"], webhook_after["timeoutSeconds"]) == (10, 12)
        assert cluster.kubectl("get", *configuration, check=False).returncode != 0
