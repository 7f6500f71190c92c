"""Applying the repository's manifests (CRDs, examples) to a local cluster with its kubectl."""

import json
import time
from collections.abc import Sequence
from pathlib import Path

import yaml

from localcluster.binaries import REPO_ROOT
from localcluster.cluster import LocalCluster

CRD_DIR = REPO_ROOT / "crds"
EXAMPLES_DIR = REPO_ROOT / "examples"


def yaml_files(directory: Path) -> list[Path]:
    return sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")])


def install_crds(cluster: LocalCluster, directory: Path = CRD_DIR) -> list[Path]:
    """Applies every CRD file and waits until the API server serves them (Established)."""
    files = yaml_files(directory)
    for path in files:
        cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(path))
    wait_established(cluster, [crd_name(path) for path in files])
    return files


def crd_name(path: Path) -> str:
    """``crd/<name>`` of the one CRD in ``path``."""
    return f"crd/{yaml.safe_load(path.read_text())['metadata']['name']}"


def wait_established(cluster: LocalCluster, names: Sequence[str], *, timeout: float = 60) -> None:
    """Waits until the API server serves every CRD of ``names`` (``crd/<name>``): their
    Established condition True. It reads the objects itself: ``kubectl wait`` fails at once
    ("status.conditions accessor error") on a CRD it reads before the API server gave it a
    status, which a CRD just created can be."""
    deadline = time.monotonic() + timeout
    pending = list(names)
    while True:
        pending = [name for name in pending if not _established(cluster, name)]
        if not pending:
            return
        if time.monotonic() >= deadline:
            raise TimeoutError(f"not Established after {timeout:.0f}s: {', '.join(pending)}")
        time.sleep(0.1)


def _established(cluster: LocalCluster, name: str) -> bool:
    result = cluster.kubectl("get", name, "-o", "json", check=False)
    if result.returncode != 0:
        return False
    conditions = json.loads(result.stdout).get("status", {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def apply_examples(cluster: LocalCluster, directory: Path = EXAMPLES_DIR) -> list[Path]:
    files = yaml_files(directory)
    for path in files:
        cluster.kubectl("apply", "-f", str(path))
    return files
