"""Where log records land, and how many arrived during a run.

A sink is a file that a destination appends to (the collector's .log/.csv/.json,
a syslog daemon's output). Before a run we mark its size; after the run and
after the daemons have drained, we read what was appended and count the
records the configuration must produce (its :class:`~logbench.base.settings.RecordShape` s).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

from .settings import RecordShape


@dataclass(frozen=True)
class Count:
    records: int
    lines: int
    bytes: int


@dataclass(frozen=True)
class FileSink:
    name: str
    path: Path
    # The records counted: a line is one when any of these shapes matches it (see settings.RecordShape).
    records: tuple[RecordShape, ...] = ()

    def counting(self, records: tuple[RecordShape, ...]) -> "FileSink":
        """This sink counting ``records`` (a configuration's own)."""
        return dataclasses.replace(self, records=tuple(records))

    def mark(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def count_since(self, offset: int) -> Count:
        try:
            with open(self.path, "rb") as f:
                f.seek(offset)
                data = f.read()
        except FileNotFoundError:
            return Count(0, 0, 0)
        lines = data.splitlines()
        return Count(count_records(lines, self.records), len(lines), len(data))


def count_records(lines: list[bytes], records: tuple[RecordShape, ...]) -> int:
    """Lines that are one of ``records`` (a line counts once, whichever shape it matches)."""
    return sum(1 for line in lines if any(r.matches(line) for r in records))


def wait_quiet(sinks: list[FileSink], *, quiet: float = 0.3, timeout: float = 30.0, interval: float = 0.05) -> float:
    """Wait until no sink has grown for ``quiet`` seconds (daemons drained); return the seconds waited."""
    t0 = time.monotonic()
    if not sinks:
        return 0.0
    last = [s.mark() for s in sinks]
    still_since = time.monotonic()
    while time.monotonic() - t0 < timeout:
        time.sleep(interval)
        now = [s.mark() for s in sinks]
        if now != last:
            last, still_since = now, time.monotonic()
        elif time.monotonic() - still_since >= quiet:
            break
    return time.monotonic() - t0
