"""Counting, not timing: what a process does, in numbers any machine reproduces.

Throughput on a shared 2-vCPU VM varies ~10 % from one run to the next; the instructions a process executes, the
system calls it makes and the bytes it writes do not depend on what else the machine is doing. This package runs a
command under a counting tool and reads what the tool wrote:

- :mod:`.valgrind` — user-space instructions per process (cachegrind; callgrind per thread, for a server that is
  one process with threads);
- :mod:`.strace` — system calls per process, by call, and the bytes the write-like calls moved.

What counts cannot see (kernel time, IO waits, cache misses, lock contention) stays with the throughput studies.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass

from ..base.errors import ParameterError


def tool(name: str, package: str | None = None) -> str:
    """The path of counting tool ``name`` (in Debian's ``package``, by default of the same name), refused as a
    parameter when missing: a study checks its counters before any server starts."""
    found = shutil.which(name)
    if not found:
        raise ParameterError("counter", name, f"a counter whose tool is installed: {name} is missing (the README's "
                             f"set-up installs Debian's {package or name} package)")
    return found


@dataclass(frozen=True)
class Count:
    """One number one start of a server counted: ``metric`` of the processes in role ``process``.

    metric: "instructions" (user-space, valgrind), "syscalls" (``call`` names the system call) or
    "bytes_written" (the sum of what write, writev, pwrite64, sendto and sendmsg returned)."""

    process: str
    metric: str
    value: float
    call: str = ""


METRICS = ("instructions", "syscalls", "bytes_written")


@dataclass(frozen=True)
class StartCounts:
    """What one start of a server under a counting tool ran and counted: a load of ``transactions``
    transactions (``statements`` statements), the log records its sinks received (counted in the log, not
    assumed) and their bytes, and every :class:`Count` by process role."""

    transactions: int
    statements: int
    records: int
    log_bytes: int
    counts: tuple[Count, ...]
    seconds: float  # wall time of the start, load and stop: how long counting takes, not a result
