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
import subprocess
from pathlib import Path

from ..base.errors import ToolError
from . import tool

OUT_PREFIX = "cg"


def binary() -> str:
    return tool("valgrind")


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


# -- callgrind, per thread: a server that is one process with threads ---------------------------------------------
CALLGRIND_PREFIX = "cgr"


def callgrind_prefix(out_dir: Path, vgdb_prefix: Path, *extra: str, program: str | None = None) -> list[str]:
    """The argv before the program's own: callgrind, one file per thread and dump
    (``out_dir/cgr.<pid>[.<dump>]-<tid>``).

    valgrind numbers threads by slot and reuses a slot once its thread exits: a thread's file is its own only
    between a zeroing and a dump (:func:`callgrind_control`). ``vgdb_prefix`` puts the control FIFOs in a
    directory of ours instead of /tmp (a killed valgrind leaves them behind). ``program``: the valgrind to run
    when not this host's (a container's own, by name on its PATH)."""
    return [program or binary(), "--tool=callgrind", "--separate-threads=yes", "-q", f"--vgdb-prefix={vgdb_prefix}",
            f"--callgrind-out-file={out_dir}/{CALLGRIND_PREFIX}.%p", *extra]


def callgrind_control(pid: int, action: str, vgdb_prefix: Path, *, user=None, inside: list[str] | None = None,
                      timeout: float = 120.0) -> None:
    """``callgrind_control <action> pid`` ("-z" zeroes every thread's counters, "-d" dumps them and returns once
    the files are written), as the user valgrind runs as (``user``: a :class:`~logbench.servers.process.RunUser`).
    ``inside``: the argv that runs a command where valgrind runs (``docker exec`` into a container, as its user):
    the callgrind_control there, by name, for ``pid`` of that pid namespace."""
    import os

    kwargs: dict = {}
    if inside is not None:
        control = [*inside, "callgrind_control"]
    else:
        control = [tool("callgrind_control", "valgrind")]
        if user is not None and os.geteuid() == 0 and user.uid != 0:
            kwargs = dict(user=user.uid, group=user.gid, extra_groups=[])
    # vgdb finds the FIFOs by the names valgrind gave them, from $LOGNAME (or $USER) and $HOST (or $HOSTNAME): the
    # environment the server inherited from us (or, inside a container, from docker exec), so ours, unchanged
    r = subprocess.run([*control, f"--vgdb-prefix={vgdb_prefix}", action, str(pid)], capture_output=True, text=True,
                       timeout=timeout, **kwargs)
    if r.returncode != 0 or "OK." not in r.stdout or "error" in r.stderr:
        raise ToolError(f"callgrind_control {action} {pid} failed ({r.returncode}): {r.stdout[-1000:]}"
                           f"{r.stderr[-1000:]}")


_CALLGRIND_FILE = re.compile(rf"^{CALLGRIND_PREFIX}\.(\d+)(?:\.(\d+))?-(\d+)$")


def callgrind_threads(out_dir: Path, pid: int, dump: int) -> dict[int, Path]:
    """thread number -> file of dump number ``dump`` (1, 2, ... in the order of the ``-d`` requests; 0 = at exit)."""
    found = {}
    for f in Path(out_dir).glob(f"{CALLGRIND_PREFIX}.{pid}*"):
        m = _CALLGRIND_FILE.match(f.name)
        if m and int(m.group(1)) == pid and int(m.group(2) or 0) == dump:
            found[int(m.group(3))] = f
    return found


def ran(path: Path, function: bytes) -> bool:
    """Whether a callgrind file has cost in (or a call to) a function whose name holds ``function``."""
    return function in Path(path).read_bytes()
