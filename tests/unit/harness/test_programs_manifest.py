"""The list of programs ``make install`` provides, and the hook that holds the tests to it."""

import subprocess
import sys
from pathlib import Path

import pytest

import programs

LISTED = frozenset({"redis-server", "/usr/lib/cni/bridge"})


@pytest.mark.parametrize(
    ("argv0", "refused"),
    [
        ("nft", "nft"),
        ("redis-server", None),
        ("/usr/sbin/nft", "nft"),
        ("/usr/sbin/iptables", "iptables"),
        ("/usr/lib/cni/bridge", None),
        ("/root/.cache/punctual/k8s/bin/kubectl", None),
        ("/work/main/.venv/bin/python", None),
        ("./hack/install.sh", None),
    ],
)
def test_a_program_started_by_name_or_from_a_system_folder_must_be_listed(
    argv0: str, refused: str | None
) -> None:
    assert programs.unlisted(argv0, LISTED) == refused


def test_the_manifest_lists_each_program_once_with_a_source_a_part_and_a_use() -> None:
    rows = [
        line.split("\t")
        for line in programs.MANIFEST.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert all(len(row) == 4 and all(row) for row in rows), rows
    assert all(
        row[1] in {"uv.lock", "prerequisite"} or row[1].startswith("debian:") for row in rows
    )
    assert {row[2] for row in rows} <= {"base", "cluster"}
    names = [row[0] for row in rows]
    assert len(names) == len(set(names))


def test_the_session_refuses_to_start_a_program_the_manifest_does_not_list(tmp_path: Path) -> None:
    # The hook stays for the life of a process: try it in a child Python.
    script = tmp_path / "child.py"
    script.write_text(
        "import subprocess, programs\n"
        "programs.install_hook(frozenset({'true'}))\n"
        "subprocess.run(['true'], check=True)\n"
        "try:\n"
        "    subprocess.run(['definitely-not-listed'])\n"
        "except programs.UnlistedProgramError as refused:\n"
        "    print(refused)\n"
    )
    tests = Path(programs.__file__).parent
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=True,
        env={"PYTHONPATH": str(tests)}, timeout=30,
    )  # fmt: skip
    assert "'definitely-not-listed'" in result.stdout
    assert "hack/programs.tsv" in result.stdout
