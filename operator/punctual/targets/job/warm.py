"""A warm start's Job template: the user's ``jobTemplate`` rewritten so that everything slow
about starting a pod happens during the lead, and the workload starts at the release.

A warm Job is created ``warmStart.lead`` ahead of its slot. By the release its pod has been
scheduled, its sandbox, network and volumes set up, and every image pulled; a small static
binary, the gate, holds the workload until then. What ``rewrite`` adds to the pod:

- an ``emptyDir`` volume ``punctual-gate`` (16Mi), mounted read-only at ``/punctual-gate`` in
  every container the gate runs in from there;
- first init container ``punctual-gate``: the gate's image copies the binary to
  ``/punctual-gate/gate`` (the only container mounting the volume read-write), so the user's
  images need no shell and no gate of their own;
- then ``punctual-pull-<n>``, one per distinct image of the user's init and main containers
  (the user's ``imagePullPolicy`` of its first use): each runs that image with
  ``/punctual-gate/gate noop``, which exits at once, so the image is on the node before the
  release;
- ``Init``: then ``punctual-release``, the gate's image waiting for the release instant, before
  all of the user's init containers, native sidecars included: nothing of the user's starts
  before it ends, and the kubelet starts the rest up to about a second later;
- ``Exec``: the containers that would start before the release have their ``command`` become
  ``/punctual-gate/gate --at <unix ms> -- <command>`` (``args`` untouched): the gate sleeps and
  then execs the original, same process, same environment. Which containers that is (native
  sidecars up to the first regular init container, that one, and the main containers only when
  there is none: each of them holds everything after it) is ``punctual.api.warm_pods``' rule,
  which the operator's check applies too; ``Auto`` is ``Exec`` when every one of them has a
  ``command`` and no liveness or startup probe or postStart hook, ``Init`` otherwise.

Every added container passes PodSecurity ``restricted`` (non-root UID 65532, no privilege
escalation, all capabilities dropped, RuntimeDefault seccomp, a read-only root filesystem) and
sets small requests and limits, so a namespace enforcing ``restricted`` (or a quota requiring
limits) accepts the warm Job of a template it would accept cold. The user's containers are
changed in nothing but the held ones' ``command`` and one read-only mount (``env``,
``envFrom``, ``args``, their own security context and resources are theirs).

The Job is annotated ``punctual.dev/release-at`` (RFC 3339, UTC) and ``punctual.dev/warm-start``
(the mode used). The template given is never changed: ``rewrite`` works on its own copy.
"""

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from punctual.api import job_models, warm_pods
from punctual.scheduling import timeline

RELEASE_AT_ANNOTATION = "punctual.dev/release-at"
"""On a warm Job: the instant its gate releases the workload, RFC 3339 in UTC."""
WARM_START_ANNOTATION = "punctual.dev/warm-start"
"""On a warm Job: how its workload is held, ``Exec`` or ``Init``."""
GATE_BINARY = f"{warm_pods.GATE_DIRECTORY}/gate"
"""The gate, as the containers that run it from the shared volume see it."""
GATE_IN_ITS_IMAGE = "/gate"
"""The gate, in its own image (``FROM scratch``, the binary alone)."""
GATE_VOLUME_SIZE = "16Mi"
ADDED_CONTAINER_USER = 65532
"""The UID every added container runs as: not root, whatever the image says."""
ADDED_CONTAINER_RESOURCES = {"cpu": "10m", "memory": "16Mi"}
"""The requests and limits of every added container: the gate sleeps, copies or exits."""


@dataclass(frozen=True, slots=True)
class WarmJob:
    template: dict[str, Any]
    """The rewritten ``jobTemplate`` ({metadata, spec})."""
    mode: job_models.WarmStartMode
    """The mode used: ``Exec`` or ``Init`` (``Auto`` resolved)."""


def rewrite(
    job_template: Mapping[str, Any],
    *,
    release_at: datetime,
    mode: job_models.WarmStartMode,
    gate_image: str,
) -> WarmJob:
    """``job_template`` with its pod held by the gate until ``release_at`` (the run's scheduled
    time, the slot plus the jitter), as the module says; ``mode`` ``Auto`` resolved.

    Raises ``InvalidSpecError`` for a template the operator's check refuses too
    (``warm_pods.check``): one that escaped it is never armed half-held."""
    warm_pods.check(job_template, mode=mode)
    template = copy.deepcopy(dict(job_template))
    job_spec = _child(template, "spec")
    pod_spec = _child(_child(job_spec, "template"), "spec")
    used = warm_pods.mode_for(mode, pod_spec)
    release_ms = str(timeline.unix_millis(release_at))
    users_init = [container for _, container in warm_pods.objects_in(pod_spec, "initContainers")]
    users_main = [container for _, container in warm_pods.objects_in(pod_spec, "containers")]
    if used is job_models.WarmStartMode.EXEC:
        for held in warm_pods.held_by_exec(pod_spec):
            _hold(held.container, release_ms=release_ms)
    added = [_install(gate_image), *_pulls([*users_init, *users_main])]
    if used is job_models.WarmStartMode.INIT:
        added.append(_release(gate_image, release_ms=release_ms))
    pod_spec["initContainers"] = [*added, *_list(pod_spec.get("initContainers"))]
    pod_spec["volumes"] = [
        *_list(pod_spec.get("volumes")),
        {"name": warm_pods.GATE, "emptyDir": {"sizeLimit": GATE_VOLUME_SIZE}},
    ]
    annotations = _child(_child(template, "metadata"), "annotations")
    annotations[RELEASE_AT_ANNOTATION] = timeline.rfc3339(release_at)
    annotations[WARM_START_ANNOTATION] = used.value
    return WarmJob(template=template, mode=used)


def _hold(container: Mapping[str, Any], *, release_ms: str) -> None:
    """Rewrite a held container of the copy in place: the gate first, then its command."""
    assert isinstance(container, dict)  # the copy's own, built from JSON-like dicts
    container["command"] = [GATE_BINARY, "--at", release_ms, "--", *container["command"]]
    container["volumeMounts"] = [*_list(container.get("volumeMounts")), _gate_mount()]


def _install(gate_image: str) -> dict[str, Any]:
    return _added(
        warm_pods.GATE,
        image=gate_image,
        command=[GATE_IN_ITS_IMAGE, "install", GATE_BINARY],
        mounts=[{**_gate_mount(), "readOnly": False}],
    )


def _pulls(containers: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One ``punctual-pull-<n>`` per distinct image, with the pull policy of its first use."""
    policies: dict[str, object] = {}
    for container in containers:
        image = container.get("image")
        if isinstance(image, str) and image not in policies:
            policies[image] = container.get("imagePullPolicy")
    pulls = []
    for index, (image, policy) in enumerate(policies.items()):
        pull = _added(
            f"{warm_pods.PULL_PREFIX}{index}",
            image=image,
            command=[GATE_BINARY, "noop"],
            mounts=[_gate_mount()],
        )
        if policy is not None:
            pull["imagePullPolicy"] = policy
        pulls.append(pull)
    return pulls


def _release(gate_image: str, *, release_ms: str) -> dict[str, Any]:
    return _added(
        warm_pods.RELEASE,
        image=gate_image,
        command=[GATE_IN_ITS_IMAGE, "wait", "--at", release_ms],
        mounts=[],
    )


def _added(
    name: str, *, image: str, command: list[str], mounts: list[dict[str, Any]]
) -> dict[str, Any]:
    """A container of ours: PodSecurity ``restricted``, small requests and limits."""
    container: dict[str, Any] = {
        "name": name,
        "image": image,
        "command": command,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": ADDED_CONTAINER_USER,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
            "readOnlyRootFilesystem": True,
        },
        "resources": {
            "requests": dict(ADDED_CONTAINER_RESOURCES),
            "limits": dict(ADDED_CONTAINER_RESOURCES),
        },
    }
    if mounts:
        container["volumeMounts"] = mounts
    return container


def _gate_mount() -> dict[str, Any]:
    return {"name": warm_pods.GATE, "mountPath": warm_pods.GATE_DIRECTORY, "readOnly": True}


def _child(parent: dict[str, Any], key: str) -> dict[str, Any]:
    """``parent[key]``, an object of the copy's own (made one when it was missing)."""
    child = parent.get(key)
    if not isinstance(child, dict):
        child = dict(child) if isinstance(child, Mapping) else {}
        parent[key] = child
    return child


def _list(value: object) -> list[Any]:
    return list(value) if isinstance(value, list) else []
