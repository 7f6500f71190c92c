"""Whether a warm Job's pod was at its gate at the run's scheduled time, and if not, why: the
pure verdict behind ``WarmStartNotReady``, from the pods and the Job as the API server sent them.

At its gate means the workload starts at the release, nothing slow left before it:

- ``Exec``: every container whose command is the gate's (``/punctual-gate/gate --at ...``) is
  running (the gate sleeping, or the workload it became), or has already ended;
- ``Init``: the ``punctual-release`` init container is running, or has ended with 0.

A pod that has ended well was past its gate. Of several pods (a Job's retries), one at its gate
is enough. Otherwise the pod's own reason is told, most telling first: a container's waiting
reason that is a fault (``ErrImagePull``, ``ImagePullBackOff``, ``CreateContainerConfigError``),
``PodScheduled`` False (``Unschedulable``), a container of ours that ended in failure, then any
waiting reason (``ContainerCreating``: still starting), then the pod's phase. A Job with no pod
at all says so, with the Job's own conditions if it has any (a quota refusing the pod shows in
the Job's Events, ``FailedCreate``).

Pods and Jobs are outside input (their messages quote what users wrote): messages are cut short.
"""

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from punctual.api import warm_pods
from punctual.targets.job import warm

MESSAGE_LIMIT = 300
"""The most of one pod's or Job's message quoted."""
_STARTING = frozenset({"ContainerCreating", "PodInitializing"})
"""Waiting reasons that are no fault: the container is on its way."""


def not_ready(pods: Sequence[Mapping[str, Any]], job_status: Mapping[str, Any]) -> str | None:
    """None when one of ``pods`` (a warm Job's) is at its gate or past it; else why not, naming
    the pod (or "no pod", with the Job's conditions from ``job_status``)."""
    if not pods:
        return _no_pod(job_status)
    reasons = []
    for pod in pods:
        reason = _pod_not_ready(pod)
        if reason is None:
            return None
        reasons.append(reason)
    return reasons[0]


def _pod_not_ready(pod: Mapping[str, Any]) -> str | None:
    status = _mapping(pod.get("status"))
    if status.get("phase") == "Succeeded":
        return None
    statuses = _statuses(status)
    held = _held(_mapping(pod.get("spec")))
    if held:
        if all(_started(statuses.get(name)) for name in held):
            return None
    elif _released(statuses.get(warm_pods.RELEASE)):
        return None
    name = _mapping(pod.get("metadata")).get("name") or "?"
    return f"pod {name}: {_why(status, statuses)}"


def _why(status: Mapping[str, Any], statuses: Mapping[str, Mapping[str, Any]]) -> str:
    waiting = [
        (name, _mapping(_mapping(each.get("state")).get("waiting")))
        for name, each in statuses.items()
        if _mapping(each.get("state")).get("waiting") is not None
    ]
    for name, state in waiting:
        if state.get("reason") not in _STARTING and state.get("reason"):
            return _told(state.get("reason"), f"container {name}", state.get("message"))
    for condition in _objects(status.get("conditions")):
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return _told(condition.get("reason") or "NotScheduled", None, condition.get("message"))
    for name, each in statuses.items():
        ended = _mapping(_mapping(each.get("state")).get("terminated"))
        if ended and ended.get("exitCode") != 0 and warm_pods.is_reserved_container_name(name):
            detail = f"exit code {ended.get('exitCode')}"
            return _told(ended.get("reason") or "Error", f"container {name}, {detail}", None)
    for name, state in waiting:
        if state.get("reason"):
            return _told(state.get("reason"), f"container {name}", state.get("message"))
    return _told(status.get("phase") or "Pending", None, status.get("message"))


def _no_pod(job_status: Mapping[str, Any]) -> str:
    conditions = [
        _told(condition.get("reason") or condition.get("type"), None, condition.get("message"))
        for condition in _objects(job_status.get("conditions"))
        if condition.get("status") == "True"
    ]
    said = "; the Job: " + "; ".join(conditions) if conditions else ""
    return f"no pod (the Job controller created none: see the Job's Events){said}"


def _held(pod_spec: Mapping[str, Any]) -> list[str]:
    """The containers the gate holds under ``Exec``: their command starts with it."""
    held = []
    for kind in (warm_pods.INIT_CONTAINERS, warm_pods.CONTAINERS):
        for _, container in warm_pods.objects_in(pod_spec, kind):
            command = container.get("command")
            if isinstance(command, list) and command[:2] == [warm.GATE_BINARY, "--at"]:
                held.append(str(container.get("name")))
    return held


def _statuses(status: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Every container's status by name, init containers first."""
    return {
        str(each.get("name")): each
        for key in ("initContainerStatuses", "containerStatuses")
        for each in _objects(status.get(key))
    }


def _started(status: Mapping[str, Any] | None) -> bool:
    state = _mapping((status or {}).get("state"))
    return state.get("running") is not None or state.get("terminated") is not None


def _released(status: Mapping[str, Any] | None) -> bool:
    state = _mapping((status or {}).get("state"))
    ended = state.get("terminated")
    return state.get("running") is not None or (
        isinstance(ended, Mapping) and ended.get("exitCode") == 0
    )


def _told(reason: object, where: str | None, message: object) -> str:
    text = str(reason) + (f" ({where})" if where else "")
    if message:
        quoted = str(message)
        if len(quoted) > MESSAGE_LIMIT:
            quoted = quoted[: MESSAGE_LIMIT - 3] + "..."
        text += f": {quoted}"
    return text


def _objects(value: object) -> Iterator[Mapping[str, Any]]:
    if isinstance(value, list):
        yield from (item for item in value if isinstance(item, Mapping))


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
