"""Where a MariaDB (or MySQL 8) server's log records land, and how they are counted: the slow log's and the
general log's record markers and shapes (:func:`slow_entry` by server version), their file sinks, the slow log as
a table (:class:`TableSink`), and a slow log split into its entries. :mod:`logbench.servers.mariadb` re-exports
them (callers say ``mdb.slow_entry``, ``mdb.TableSink``)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Protocol

from ..base.logsinks import Count, FileSink
from ..base.settings import RecordShape


class QueriedServer(Protocol):
    """What a :class:`TableSink` uses of its server (a ``servers.mariadb.MariaDBServer``, which is not imported here:
    that module imports this one to re-export it, and the package keeps no import circle)."""

    datadir: Path

    def query(self, sql: str, args=None) -> list[tuple]: ...


# One slow-log entry (file) has exactly one '# Query_time:' header line, whatever else
# the server adds ('# Time:' only when the second changes, '# User@Host:', extra MariaDB lines).
SLOW_RECORD_MARKER = b"# Query_time:"
# One statement in the general log: '<time>\t<id> Query\t<statement>' (Connect/Quit/Prepare lines are not).
GENERAL_RECORD_MARKER = b" Query\t"


SLOW_ENTRY = RecordShape("slow entry", (SLOW_RECORD_MARKER,), per_statement=1)
# MariaDB 10.5 also writes an entry when a connection ends ("# administrator command: Quit;", COM_QUIT as an
# admin command); 10.11 and 11.8 do not (tests/fixtures/versions/mariadb*_slow_all.log, captured from each).
# Which release between 10.5 and 10.11 stopped is not captured: every series before 10.11 is taken as 10.5.
QUIT_LOGGED_BEFORE = (10, 11)


def slow_entry(server_version: str = "") -> RecordShape:
    """The slow log's record on the server ``server_version`` (its ``SELECT VERSION()``; '' = the series the
    local backend runs): one per statement, and on 10.5 one more per connection."""
    m = re.match(r"(\d+)\.(\d+)", server_version)
    if m and (int(m[1]), int(m[2])) < QUIT_LOGGED_BEFORE:
        return RecordShape("slow entry", (SLOW_RECORD_MARKER,), per_statement=1, per_connection=1)
    return SLOW_ENTRY
GENERAL_QUERY = RecordShape("general query", (GENERAL_RECORD_MARKER,), per_statement=1)


def slow_file_sink(path: Path, name: str = "slow_file") -> FileSink:
    return FileSink(name, Path(path), (SLOW_ENTRY,))


def general_file_sink(path: Path, name: str = "general_file") -> FileSink:
    return FileSink(name, Path(path), (GENERAL_QUERY,))


class TableSink:
    """The slow log as a table (``log_output = TABLE``): rows of ``mysql.slow_log``, bytes of its CSV file.

    Counted through the server's long-lived quiet admin session: a new
    connection's own ``SET NAMES`` would be logged, so polling with fresh
    connections would never see the table go quiet.
    """

    def __init__(self, server: QueriedServer, name: str = "slow_table", table: str = "mysql.slow_log"):
        self.server, self.name, self.table = server, name, table

    @property
    def path(self) -> Path:
        schema, tab = self.table.split(".")
        return self.server.datadir / schema / f"{tab}.CSV"

    def rows(self) -> int:
        return int(self.server.query(f"SELECT COUNT(*) FROM {self.table}")[0][0])

    def truncate(self) -> None:
        self.server.query(f"TRUNCATE TABLE {self.table}")

    def mark(self) -> tuple[int, int]:
        try:
            size = self.path.stat().st_size
        except OSError:  # not there yet; or a container's volume this user may not read: rows still count
            size = 0
        return self.rows(), size

    def count_since(self, mark: tuple[int, int]) -> Count:
        rows, size = self.mark()
        n = rows - mark[0]
        return Count(n, n, size - mark[1])


def slow_log_entries(data: bytes) -> list[bytes]:
    """Split slow-log text into entries, each from its ``# User@Host:`` (or ``# Time:``) line to its statement."""
    entries: list[list[bytes]] = []
    current: list[bytes] = []
    in_header = False
    for line in data.splitlines(keepends=True):
        if line.startswith((b"# Time:", b"# User@Host:")):
            if current and not in_header:
                entries.append(current)
                current = []
            in_header = True
        elif line.startswith(b"#"):
            in_header = True
        elif current:
            in_header = False
        else:
            continue  # the file's start-up banner, or a partial entry cut by a truncation
        current.append(line)
    if current:
        entries.append(current)
    return [b"".join(e) for e in entries if any(SLOW_RECORD_MARKER in x for x in e)]
