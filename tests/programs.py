"""Every program a test starts by name must be one that ``make install`` installs.

A test that ran ``nft`` passed on every machine where someone had installed nftables by hand, and
failed on the first fresh one. ``hack/programs.tsv`` lists the programs the harness and the tests
start, with the package that brings each; ``hack/install.sh`` installs them and checks they are
there. This module closes the loop from the other side: an audit hook sees every process the test
session starts and refuses one started by a bare name (a ``PATH`` look-up) or from a system folder
that the list does not name, so the test that introduces a new program fails on the machine of the
developer who has it, naming the program and the file to add it to.

Programs started by a path the project built (the control plane's folder, the virtualenv, a
temporary directory) are not looked up on ``PATH`` and are not checked.
"""

import os
import sys
from pathlib import Path, PurePath

MANIFEST = Path(__file__).resolve().parent.parent / "hack" / "programs.tsv"
SYSTEM_FOLDERS = (
    "/bin/", "/sbin/", "/usr/bin/", "/usr/sbin/", "/usr/local/bin/", "/usr/local/sbin/",
)  # fmt: skip
"""Where a program installed by hand lands: one started from these folders is checked too."""


class UnlistedProgramError(RuntimeError):
    """A test started a program that ``make install`` does not install."""


def listed_programs(manifest: Path = MANIFEST) -> frozenset[str]:
    """The program names (and absolute paths) of the manifest's first column."""
    lines = manifest.read_text().splitlines()
    return frozenset(
        line.split("\t", 1)[0] for line in lines if line.strip() and not line.startswith("#")
    )


def program_to_check(argv0: str) -> str | None:
    """The name to look up in the manifest; None for a program started by a path we chose."""
    if "/" not in argv0:
        return argv0
    if argv0.startswith(SYSTEM_FOLDERS):
        return PurePath(argv0).name
    return None


def unlisted(argv0: str, listed: frozenset[str]) -> str | None:
    """The program if it must be in the manifest and is not, else None."""
    name = program_to_check(argv0)
    if name is None or name in listed or argv0 in listed:
        return None
    return name


def install_hook(listed: frozenset[str] | None = None) -> None:
    """Refuses, for the rest of the process, to start a program the manifest does not list."""
    programs = listed_programs() if listed is None else listed

    def hook(event: str, args: tuple[object, ...]) -> None:
        if event != "subprocess.Popen":
            return
        # Popen resolves the executable (argv[0], or the shell) before it audits.
        name = unlisted(os.fsdecode(args[0]), programs)  # type: ignore[arg-type]
        if name is not None:
            raise UnlistedProgramError(
                f"a test started {name!r}, which hack/programs.tsv does not list, so `make install`"
                " does not install it and a fresh machine fails here: add it with its package"
            )

    sys.addaudithook(hook)
