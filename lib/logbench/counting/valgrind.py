"""Instructions per process under valgrind: the command line that runs a program under cachegrind (or callgrind),
and the counts its output files hold.

cachegrind with ``--cache-sim=no`` counts one event, Ir (instructions executed in user space, the program's and
its libraries'); a process that forks is followed into every child (valgrind's fork handling), and ``%p`` in the
output name gives each its own file, written when the process exits. A forked child's count starts from its
parent's at the fork: only a difference of two counts of the same process role means anything.
"""

from __future__ import annotations

import platform
import re
import shutil
import subprocess
from pathlib import Path

from ..errors import ParameterError

OUT_PREFIX = "cg"


def binary() -> str:
    found = shutil.which("valgrind")
    if not found:
        raise ParameterError("counter", "valgrind", "a counter whose tool is installed: valgrind is missing "
                             "(the README's set-up installs Debian's valgrind package)")
    return found


def version() -> str:
    return subprocess.run([binary(), "--version"], capture_output=True, text=True, timeout=30).stdout.strip()


def fixed_addresses() -> list[str]:
    """The argv prefix that turns address-space randomization off for the program (``setarch -R``): where a
    shared-memory segment or a heap lands changes how hash tables keyed by addresses collide, so the
    instructions a start counts would move with it."""
    return ["setarch", platform.machine(), "-R"]


def cachegrind_prefix(out_dir: Path, *extra: str, program: str | None = None) -> list[str]:
    """The argv before the program's own: each process's count into ``out_dir/cg.<pid>``, at fixed addresses.

    ``--trace-children=yes`` follows an exec too (a server that re-executes itself); ``-q`` keeps valgrind's
    banner out of the server's stderr, which some studies count as a log sink. ``program``: the valgrind to run
    when not this host's (a container's own, by name on its PATH)."""
    return [*fixed_addresses(), program or binary(), "--tool=cachegrind", "--cache-sim=no", "--trace-children=yes",
            "-q",
            f"--cachegrind-out-file={out_dir}/{OUT_PREFIX}.%p", *extra]


_SUMMARY = re.compile(rb"^summary:\s+(\d+)", re.M)
_TOTALS = re.compile(rb"^totals:\s+(\d+)", re.M)


def instructions(path: Path) -> int:
    """The Ir total of one cachegrind or callgrind output file (its ``summary:`` or ``totals:`` line)."""
    data = Path(path).read_bytes()
    m = _SUMMARY.search(data) or _TOTALS.search(data)
    if m is None:
        raise ValueError(f"{path}: no summary line (valgrind still writing it, or not a cachegrind file)")
    return int(m.group(1))


def counts(out_dir: Path) -> dict[int, int]:
    """pid -> instructions, for every process whose file is complete in ``out_dir``."""
    found = {}
    for f in Path(out_dir).glob(f"{OUT_PREFIX}.*"):
        pid = f.name.rsplit(".", 1)[-1]
        if pid.isdigit():
            try:
                found[int(pid)] = instructions(f)
            except ValueError:
                continue  # still being written: its process has not finished exiting
    return found
