"""What warm start asks of a job target's pod template: the names it reserves, the containers
its gate holds, and the mode ``Auto`` picks.

The pod as rewritten is ``punctual.targets.job.warm``'s (its docstring tells the whole of it);
the rule of which containers the gate holds lives here, below it, because the operator's check
of a spec (``punctual.api.planning``) must refuse, naming the field users wrote, a template
that cannot be held the way its ``warmStart.mode`` asks, before anything is armed.

The rule: nothing of the user's may start before the release. Under ``Init`` the release
container comes before all the user's init containers, so nothing is held one by one. Under
``Exec`` the gate holds, one by one, every container that would start before the release:

- the native sidecars (init containers with ``restartPolicy: Always``) up to the first regular
  init container: each starts without waiting for the ones before it to end;
- the first regular init container: everything after it waits for it to end;
- the main containers, only when there is no regular init container.

A held container must have an explicit ``command`` (an image's ENTRYPOINT is not visible to the
operator), and neither a liveness or startup probe nor a postStart hook: the kubelet would run
them during the lead, against the gate instead of the workload (a probe failing there restarts
the container, a hook would run the user's code early). ``Auto`` picks ``Exec`` when every held
container qualifies, ``Init`` otherwise.

The template is outside input of any shape: what is not a list or an object where the pod
spec has one is passed over here, and left to the API server's own verdict (the webhook's dry
run, the Job's creation).
"""

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from punctual.api import job_models
from punctual.scheduling.errors import InvalidSpecError

GATE = "punctual-gate"
"""The ``emptyDir`` volume the gate binary is copied to, and the init container that copies it."""
GATE_DIRECTORY = "/punctual-gate"
"""Where the gate's volume is mounted, read-only, in every container the gate runs in."""
PULL_PREFIX = "punctual-pull-"
"""The init containers that pull the user's images ahead of the slot: ``punctual-pull-<n>``."""
RELEASE = "punctual-release"
"""``Init`` mode's init container that waits for the release."""
POD_SPEC = "spec.target.job.template.spec.template.spec"
"""Where users wrote the pod spec of a job target."""
INIT_CONTAINERS = "initContainers"
CONTAINERS = "containers"
SIDECAR_RESTART_POLICY = "Always"
"""An init container with this ``restartPolicy`` is a native sidecar: it keeps running."""
_NOT_EXEC = ("livenessProbe", "startupProbe")


@dataclass(frozen=True, slots=True)
class Held:
    """A container the gate holds under ``Exec``: where it is in the pod spec, and itself."""

    kind: str
    """``initContainers`` or ``containers``."""
    index: int
    container: Mapping[str, Any]

    @property
    def path(self) -> str:
        return f"{POD_SPEC}.{self.kind}[{self.index}]"


def pod_spec_of(job_template: Mapping[str, Any]) -> Mapping[str, Any]:
    """The pod spec of a CronJob-style ``jobTemplate``: ``spec.template.spec`` (empty when the
    template has none)."""
    spec = _mapping(job_template.get("spec"))
    return _mapping(_mapping(spec.get("template")).get("spec"))


def objects_in(parent: Mapping[str, Any], key: str) -> list[tuple[int, Mapping[str, Any]]]:
    """The items of the list ``parent[key]`` (containers, volumes, mounts) that are objects,
    with their indexes in the list users wrote."""
    given = parent.get(key)
    if not isinstance(given, Sequence) or isinstance(given, str):
        return []
    return [(index, item) for index, item in enumerate(given) if isinstance(item, Mapping)]


def is_sidecar(container: Mapping[str, Any]) -> bool:
    return container.get("restartPolicy") == SIDECAR_RESTART_POLICY


def held_by_exec(pod_spec: Mapping[str, Any]) -> tuple[Held, ...]:
    """The containers ``Exec`` holds one by one: those that would start before the release."""
    held: list[Held] = []
    for index, container in objects_in(pod_spec, INIT_CONTAINERS):
        held.append(Held(INIT_CONTAINERS, index, container))
        if not is_sidecar(container):
            return tuple(held)
    held.extend(Held(CONTAINERS, index, c) for index, c in objects_in(pod_spec, CONTAINERS))
    return tuple(held)


def exec_problem(held: Held) -> InvalidSpecError | None:
    """Why ``Exec`` cannot hold this container (the field users wrote), or None when it can."""
    container = held.container
    command = container.get("command")
    if not isinstance(command, Sequence) or isinstance(command, str) or not command:
        return InvalidSpecError(
            f"{held.path}.command",
            "warmStart mode Exec runs this container's command through the gate, so it needs "
            "one (an image's ENTRYPOINT is not visible to the operator): set command, or use "
            "mode Init or Auto",
        )
    for probe in _NOT_EXEC:
        if container.get(probe) is not None:
            return InvalidSpecError(
                f"{held.path}.{probe}",
                f"warmStart mode Exec holds this container at the gate during the lead, where "
                f"a {probe} would fail and restart it: remove it, or use mode Init or Auto",
            )
    if _mapping(container.get("lifecycle")).get("postStart") is not None:
        return InvalidSpecError(
            f"{held.path}.lifecycle.postStart",
            "warmStart mode Exec starts this container at the arm, so its postStart hook would "
            "run before the slot: remove it, or use mode Init or Auto",
        )
    return None


def mode_for(
    requested: job_models.WarmStartMode, pod_spec: Mapping[str, Any]
) -> job_models.WarmStartMode:
    """The mode used: ``requested``, or for ``Auto`` ``Exec`` when every held container
    qualifies (``exec_problem``), else ``Init``."""
    if requested is not job_models.WarmStartMode.AUTO:
        return requested
    if all(exec_problem(held) is None for held in held_by_exec(pod_spec)):
        return job_models.WarmStartMode.EXEC
    return job_models.WarmStartMode.INIT


def check(job_template: Mapping[str, Any], *, mode: job_models.WarmStartMode) -> None:
    """Raise ``InvalidSpecError`` for a template whose containers or volumes use a name or a
    mount path the rewrite adds, or that ``Exec``, when asked for, cannot hold."""
    pod_spec = pod_spec_of(job_template)
    reserved = next(_reserved_uses(pod_spec), None)
    if reserved is not None:
        raise reserved
    if mode is job_models.WarmStartMode.EXEC:
        for held in held_by_exec(pod_spec):
            problem = exec_problem(held)
            if problem is not None:
                raise problem


def is_reserved_container_name(name: object) -> bool:
    return isinstance(name, str) and (name in (GATE, RELEASE) or name.startswith(PULL_PREFIX))


def _reserved_uses(pod_spec: Mapping[str, Any]) -> Iterator[InvalidSpecError]:
    reserved = f"is reserved for warm start ({GATE}, {PULL_PREFIX}<n>, {RELEASE}): rename it"
    for kind in (INIT_CONTAINERS, CONTAINERS):
        for index, container in objects_in(pod_spec, kind):
            path = f"{POD_SPEC}.{kind}[{index}]"
            if is_reserved_container_name(container.get("name")):
                yield InvalidSpecError(f"{path}.name", f"{container['name']!r} {reserved}")
            for mount_index, mount in objects_in(container, "volumeMounts"):
                mount_path = mount.get("mountPath")
                if isinstance(mount_path, str) and _under_gate_directory(mount_path):
                    yield InvalidSpecError(
                        f"{path}.volumeMounts[{mount_index}].mountPath",
                        f"{mount_path!r}: {GATE_DIRECTORY} is where warm start mounts its gate",
                    )
    for index, volume in objects_in(pod_spec, "volumes"):
        if volume.get("name") == GATE:
            yield InvalidSpecError(
                f"{POD_SPEC}.volumes[{index}].name", f"{GATE!r} is warm start's volume: rename it"
            )


def _under_gate_directory(mount_path: str) -> bool:
    normalized = "/" + mount_path.strip("/")
    return normalized == GATE_DIRECTORY or normalized.startswith(GATE_DIRECTORY + "/")


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
