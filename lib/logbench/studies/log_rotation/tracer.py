"""What reaches the log across a rotation: the tracer session's numbered statements, the sink counting records
across the rotated and the live file, and the census of which numbered statements arrived where."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pandas as pd
import pymysql

from ...base.logsinks import Count
from ...servers import mariadb as mdb
from .rotation import rotated_path

TRACER_MARK = "lbseq:"
_SEQ = re.compile(rb"'lbseq:(\d+)'")


class Tracer:
    """A session sending ``SELECT 'lbseq:N'`` at a fixed rate: which N reach the log, and how long each took."""

    def __init__(self, server: mdb.MariaDBServer, rate: float):
        self.server, self.interval = server, 1.0 / rate
        self.conn: pymysql.Connection | None = None
        self.sent: list[tuple[int, float, float]] = []  # (seq, sent at, latency s), monotonic
        self.errors = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._seq = 0

    def connect(self) -> None:
        """Connect before the run is marked: the connection's own statements must not count."""
        if self.conn is None or not self.conn.open:
            self.conn = self.server.connect(quiet=False)
            with self.conn.cursor() as cur:
                # Explicit, so the tracer logs whatever the global value was when it connected.
                cur.execute("SET SESSION long_query_time = 0")
                if self.server.flavor == "mariadb":
                    cur.execute("SET SESSION slow_query_log = 1")

    def start(self) -> None:
        self.connect()
        self.sent = []
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="lbseq-tracer", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        cur = self.conn.cursor()
        nxt = time.monotonic()
        while not self._stop.is_set():
            self._seq += 1
            t0 = time.monotonic()
            try:
                cur.execute(f"SELECT '{TRACER_MARK}{self._seq}'")
                cur.fetchall()
            except pymysql.MySQLError:
                self.errors += 1
                continue
            self.sent.append((self._seq, t0, time.monotonic() - t0))
            nxt += self.interval
            delay = nxt - time.monotonic()
            if delay > 0:
                self._stop.wait(delay)
            else:
                nxt = time.monotonic()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def close(self) -> None:
        self.stop()
        mdb.close_quietly(self.conn)
        self.conn = None


class RotationSink:
    """The slow log across a rotation: the rotated file (from the run's mark) and the new one (from 0)."""

    name = "slow_file"

    def __init__(self, path: Path):
        self.path, self.rotated = Path(path), rotated_path(Path(path))

    def mark(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def data_since(self, mark: int) -> tuple[bytes, bytes]:
        """(what the run wrote to the file that was rotated away, what it wrote to the live file)."""
        def read(p: Path, offset: int) -> bytes:
            try:
                with open(p, "rb") as f:
                    f.seek(offset)
                    return f.read()
            except FileNotFoundError:
                return b""

        if self.rotated.exists():
            return read(self.rotated, mark), read(self.path, 0)
        return b"", read(self.path, mark)

    def count_since(self, mark: int) -> Count:
        old, new = self.data_since(mark)
        records = old.count(b"\n" + mdb.SLOW_RECORD_MARKER) + new.count(b"\n" + mdb.SLOW_RECORD_MARKER) + sum(
            d.startswith(mdb.SLOW_RECORD_MARKER) for d in (old, new))
        return Count(records, old.count(b"\n") + new.count(b"\n"), len(old) + len(new))


def tracer_census(old: bytes, new: bytes, sent: list[int]) -> dict[str, object]:
    """For each numbered statement sent: in which file, how often. Missing and duplicated ones listed."""
    in_old = [int(m) for m in _SEQ.findall(old)]
    in_new = [int(m) for m in _SEQ.findall(new)]
    seen = pd.Series(in_old + in_new, dtype="int64").value_counts()
    missing = sorted(set(sent) - set(seen.index))
    dup = sorted(int(s) for s in seen[seen > 1].index)
    return {"tracer_sent": len(sent), "tracer_in_old": len(in_old), "tracer_in_new": len(in_new),
            "tracer_missing": missing, "tracer_duplicated": dup}
