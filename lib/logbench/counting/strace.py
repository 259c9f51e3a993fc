"""System calls per process under strace: the command line that traces a program and every process it forks,
one output file per process, and the counts those files hold.

The trace is read, not timed: each completed call is counted by name, and what the write-like calls returned is
summed as the bytes they moved. ``-s 0`` keeps strings out of the trace (their contents are not needed and would
make it large); ``-qq`` keeps attach and exit notices out.
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from pathlib import Path

from . import tool

OUT_PREFIX = "st"
# The calls that move a record out of a process: to a pipe, a file or a socket.
WRITES = frozenset({"write", "writev", "pwrite64", "pwritev", "pwritev2", "sendto", "sendmsg", "sendmmsg"})


def binary() -> str:
    return tool("strace")


def version() -> str:
    return subprocess.run([binary(), "-V"], capture_output=True, text=True, timeout=30).stdout.splitlines()[0]


def prefix(out_dir: Path, program: str | None = None) -> list[str]:
    """The argv before the program's own: every process's calls into ``out_dir/st.<pid>``. ``program``: the
    strace to run when not this host's (a container's own, by name on its PATH)."""
    return [program or binary(), "-f", "-ff", "-qq", "-s", "0", "-o", f"{out_dir}/{OUT_PREFIX}"]


# "write(3, ""..., 279) = 279" ; a call interrupted and resumed shows as "<... write resumed>) = 279"
_CALL = re.compile(r"^(?:<\.\.\. )?([a-z_0-9]+)(?:\(| resumed>)")
_RESULT = re.compile(r"\)\s+=\s+(-?\d+|\?)")


def calls(path: Path) -> tuple[Counter, int]:
    """(calls by name, bytes written) of one process's trace. An unfinished call ("<unfinished ...>") is counted
    once, where it resumes; a signal's or exit's line is no call."""
    by_name: Counter = Counter()
    written = 0
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith(("---", "+++")) or "<unfinished ...>" in line:
                continue
            m = _CALL.match(line)
            if m is None:
                continue
            name = m.group(1)
            by_name[name] += 1
            if name in WRITES:
                r = _RESULT.search(line)
                if r and r.group(1) != "?" and int(r.group(1)) > 0:
                    written += int(r.group(1))
    return by_name, written


def per_process(out_dir: Path) -> dict[int, tuple[Counter, int]]:
    """pid -> (calls by name, bytes written) for every traced process in ``out_dir``."""
    found = {}
    for f in Path(out_dir).glob(f"{OUT_PREFIX}.*"):
        pid = f.name.rsplit(".", 1)[-1]
        if pid.isdigit():
            found[int(pid)] = calls(f)
    return found
