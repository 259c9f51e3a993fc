"""PostgreSQL's half of the switchback design: switch settings inside a running load, read the log by time.

- :class:`Control` switches the server's settings by rewriting the file ``postgresql.conf`` includes last
  (``logbench_switch.conf``, no fsync) and ``pg_reload_conf()`` over one persistent connection, and says when
  the switch took effect: the moment the control session itself re-read
  the configuration (``pg_conf_load_time()`` moves). The postmaster signals every backend at once, and a busy
  backend re-reads before its next statement, so pgbench's sessions take it within one transaction of that.
  The control session logs nothing itself (its logging settings are fixed for the session), so no switch adds
  a line to any log.
- :func:`records_per_second` counts, per whole second of the log's own timestamps, the lines and records a
  sink received (PostgreSQL's ``%m`` in stderr / csvlog / jsonlog; the syslog daemon's reception time in its
  files): records are assigned to windows by when they were written, not by when the file was read.
"""

from __future__ import annotations

import datetime as dt
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ...base.errors import SettingError
from ...servers.postgres import SWITCH_FILE, alter_system, write_switch_file
from ...base.settings import RecordShape, Settings

# A switch's statements must not be logged: each would be a line in the very log being measured.
QUIET_SESSION = "-c log_statement=none -c log_duration=off -c log_min_duration_statement=-1"


@dataclass(frozen=True)
class Applied:
    """One switch: when it was asked for (the window's edge), sent, and in effect (epoch seconds)."""

    requested: float
    sent: float
    applied: float

    @property
    def latency_s(self) -> float:
        return self.applied - self.requested


class Control:
    """A persistent, quiet superuser session that switches the server's settings by reload.

    Every switch is made, also between two arms with the same settings (the baseline and its A/A control),
    so every window starts after the same disturbance. A switch rewrites the server's switch file (no fsync:
    ALTER SYSTEM's two fsyncs of postgresql.auto.conf stalled switches for 0.1-4 s on this VM, 20 s in a
    container); ``postgresql.auto.conf``, read after it, is emptied on entry and given the last settings again
    on exit, so the server's ``applied`` settings live where :class:`~logbench.servers.postgres.PostgresServer`
    keeps them, before and after.
    """

    # A reload took over 5 s once in CI's container, under the stderr arm. Our reading, not measured: the
    # postmaster logs "received SIGHUP" through the collector's pipe, which a heavy logging arm on a slow disk
    # keeps full. A slow switch is recorded and its window left out as late; only a reload that never takes
    # effect stops the study.
    def __init__(self, server, timeout: float = 30.0):
        self.server, self.timeout = server, timeout
        self.conn = None
        self.last: Settings = server.applied
        self._checked: set[Settings] = set()

    def __enter__(self) -> "Control":
        self.conn = self.server.connect(options=QUIET_SESSION)
        alter_system(self.conn, Settings.of(self.last.engine))
        write_switch_file(self.server.switch_file, self.last.as_dict())
        self._reload(self.last)
        return self

    def __exit__(self, *exc) -> None:
        if self.conn is None:
            return
        try:
            alter_system(self.conn, self.last)
            write_switch_file(self.server.switch_file, {})
            self._reload(self.last)
        finally:
            self.conn.close()
            self.conn = None

    def _load_time(self) -> dt.datetime:
        return self.conn.execute("SELECT pg_conf_load_time()").fetchone()[0]

    def _reload(self, settings: Settings) -> float:
        """Reload and wait until this session has re-read the configuration; the moment it did (epoch s)."""
        before = self._load_time()
        self.conn.execute("SELECT pg_reload_conf()")
        deadline = time.monotonic() + self.timeout
        while (loaded := self._load_time()) <= before:
            if time.monotonic() > deadline:
                raise SettingError(f"PostgreSQL did not re-read its configuration within {self.timeout} s of a "
                                   f"reload (settings {settings.as_dict()})")
            time.sleep(0.001)
        return loaded.timestamp()

    def apply(self, settings: Settings, requested: float) -> Applied:
        sent = time.time()
        write_switch_file(self.server.switch_file, settings.as_dict())
        applied = self._reload(settings)
        if settings not in self._checked:
            # a value the server refuses is only a line in its log after a reload (ALTER SYSTEM would have
            # refused it): ask once per distinct settings, inside the first guard that runs them
            self.check(settings)
            self._checked.add(settings)
        self.last = settings
        return Applied(requested, sent, applied)

    def check(self, settings: Settings) -> None:
        """SettingError unless every setting of the switch file is in effect (pg_file_settings; the base file's
        line for the same name is overridden, so not 'applied', and is not asked about)."""
        bad = self.conn.execute("SELECT name, setting, error FROM pg_file_settings "
                                "WHERE sourcefile LIKE %s AND name = ANY(%s) AND (NOT applied OR error IS NOT NULL)",
                                ["%/" + SWITCH_FILE, list(settings)]).fetchall()
        if bad:
            raise SettingError(f"settings not in effect after a reload: {bad}")


# -- the log by time ---------------------------------------------------------------------------------

def _second_of(line: bytes) -> bytes | None:
    """The whole second a log line was written, as its 19-character text (``YYYY-MM-DD HH:MM:SS``), or None.

    stderr / csvlog lines start with PostgreSQL's ``%m`` (``2026-11-24 13:40:01.123 UTC``); jsonlog lines with
    ``{"timestamp":"…"``; the syslog daemon's files (RSYSLOG_FileFormat and ours) with RFC 3339
    (``2026-11-24T13:40:01.123456+00:00``), in UTC on the daemons the suite starts (TZ=UTC)."""
    if line[:14] == b'{"timestamp":"':
        line = line[14:]
    if len(line) >= 19 and line[4:5] == b"-" and line[10:11] in (b" ", b"T") and line[13:14] == b":":
        return line[:10] + b" " + line[11:19]
    return None


def epoch_of(second: bytes) -> int:
    return int(dt.datetime.strptime(second.decode(), "%Y-%m-%d %H:%M:%S").replace(tzinfo=dt.timezone.utc).timestamp())


@dataclass
class PerSecond:
    """One sink's lines, records and bytes by the epoch second they were written."""

    lines: Counter
    records: Counter
    bytes: Counter
    undated: int = 0  # lines without a timestamp of their own (a continuation line)


def records_per_second(path: Path, offset: int, records: tuple[RecordShape, ...]) -> PerSecond:
    """What ``path`` received after byte ``offset``, by the second of each line's own timestamp; a line
    without one (a continuation) counts with the line before it."""
    out = PerSecond(Counter(), Counter(), Counter())
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read()
    except FileNotFoundError:
        return out
    epochs: dict[bytes, int] = {}
    current = None
    for line in data.splitlines():
        s = _second_of(line)
        if s is not None:
            current = epochs.get(s)
            if current is None:
                current = epochs[s] = epoch_of(s)
        if current is None:
            out.undated += 1
            continue
        out.lines[current] += 1
        out.bytes[current] += len(line) + 1
        if any(r.matches(line) for r in records):
            out.records[current] += 1
    return out
