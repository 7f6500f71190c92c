"""Applying the repository's manifests (CRDs, examples) to a local cluster with its kubectl."""

from pathlib import Path

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
        cluster.kubectl(
            "wait", "--for=condition=Established", "--timeout=60s", "-f", str(path), timeout=90
        )
    return files


def apply_examples(cluster: LocalCluster, directory: Path = EXAMPLES_DIR) -> list[Path]:
    files = yaml_files(directory)
    for path in files:
        cluster.kubectl("apply", "-f", str(path))
    return files
