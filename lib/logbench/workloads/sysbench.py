"""sysbench: prepare the tables, run an OLTP test, parse its output (summary, per-second lines, histogram).

sysbench 1.0's bundled ``oltp_read_write`` is our stand-in for the posts' DBT2
(TPC-C): a transaction of 10 point selects, 4 range queries, 2 updates, a
delete and an insert between BEGIN and COMMIT (20 statements); ``oltp_point_select``
is one primary-key lookup per transaction, the highest statement rate the server
can reach. Statements are sent as plain text (``--db-ps-mode=disable``), as
DBT2's were, so every statement is one ``Query`` in the general log and one entry
in the slow log and sysbench's own count of queries is the number of records to
expect.

Latency percentiles come from sysbench's ``--histogram`` (its logarithmic
buckets, about 1.6 % apart, bound their resolution); sysbench itself prints only
one percentile. ``--report-interval`` adds one line per interval, which the
rotation study reads as a throughput time series.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..base.errors import ToolError
from .workload import SYSBENCH_PS_MODES, SYSBENCH_TESTS, Workload

TESTS = tuple(SYSBENCH_TESTS)
PS_MODES = tuple(SYSBENCH_PS_MODES.values())
# Statements per transaction of each test with the default options (see the module notes).
STATEMENTS_PER_TRANSACTION = SYSBENCH_TESTS

_NUM = r"([\d.]+)"
_SUMMARY = {
    "reads": r"^\s+read:\s+(\d+)",
    "writes": r"^\s+write:\s+(\d+)",
    "other": r"^\s+other:\s+(\d+)",
    "queries": r"^\s+queries:\s+(\d+)",
    "qps": r"^\s+queries:\s+\d+\s+\(" + _NUM + r" per sec\.\)",
    "transactions": r"^\s+transactions:\s+(\d+)",
    "tps": r"^\s+transactions:\s+\d+\s+\(" + _NUM + r" per sec\.\)",
    "ignored_errors": r"^\s+ignored errors:\s+(\d+)",
    "reconnects": r"^\s+reconnects:\s+(\d+)",
    "total_time_s": r"^\s+total time:\s+" + _NUM + "s",
    "events": r"^\s+total number of events:\s+(\d+)",
    "latency_min_ms": r"^\s+min:\s+" + _NUM,
    "latency_avg_ms": r"^\s+avg:\s+" + _NUM,
    "latency_max_ms": r"^\s+max:\s+" + _NUM,
    "latency_pct_ms": r"^\s+\d+(?:th|st|nd|rd) percentile:\s+" + _NUM,
    "latency_percentile": r"^\s+(\d+)(?:th|st|nd|rd) percentile:",
    "latency_sum_ms": r"^\s+sum:\s+" + _NUM,
    "threads": r"^Number of threads:\s+(\d+)",
}
_INTEGERS = {"reads", "writes", "other", "queries", "transactions", "ignored_errors", "reconnects", "events",
             "latency_percentile", "threads"}
_INTERVAL = re.compile(
    r"^\[ *(?P<t>[\d.]+)s \] thds: (?P<threads>\d+) tps: (?P<tps>[\d.]+) qps: (?P<qps>[\d.]+) "
    r"\(r/w/o: (?P<r>[\d.]+)/(?P<w>[\d.]+)/(?P<o>[\d.]+)\) lat \(ms,(?P<pct>\d+)%\): (?P<lat>[\d.]+) "
    r"err/s: (?P<err>[\d.]+) reconn/s: (?P<reconn>[\d.]+)"
)
_HISTOGRAM_ROW = re.compile(r"^\s*([\d.]+) \|\**\s+(\d+)\s*$")


@dataclass(frozen=True)
class Interval:
    """One ``--report-interval`` line: rates over the interval ending ``t_s`` seconds after the threads started."""

    t_s: float
    threads: int
    tps: float
    qps: float
    reads_per_s: float
    writes_per_s: float
    other_per_s: float
    latency_pct_ms: float  # sysbench's --percentile over the interval
    errors_per_s: float
    reconnects_per_s: float


@dataclass(frozen=True)
class SysbenchResult:
    command: tuple[str, ...]
    test: str
    threads: int
    transactions: int
    tps: float
    queries: int
    qps: float
    reads: int
    writes: int
    other: int
    ignored_errors: int
    reconnects: int
    total_time_s: float
    events: int
    latency_min_ms: float
    latency_avg_ms: float
    latency_max_ms: float
    latency_percentile: int
    latency_pct_ms: float
    latency_sum_ms: float
    latency_p50_ms: float
    latency_p95_ms: float
    latency_p99_ms: float
    latency_stddev_ms: float
    latency_samples: int
    histogram: tuple[tuple[float, int], ...]
    intervals: tuple[Interval, ...]
    wall_seconds: float = float("nan")
    # time.monotonic() when sysbench printed "Threads started!" (the zero of the intervals)
    started_monotonic: float = float("nan")


def parse_histogram(text: str) -> tuple[tuple[float, int], ...]:
    """``(bucket value ms, count)`` rows of sysbench's ``--histogram`` block."""
    rows = []
    inside = False
    for line in text.splitlines():
        if line.startswith("Latency histogram"):
            inside = True
            continue
        if inside:
            m = _HISTOGRAM_ROW.match(line)
            if m:
                rows.append((float(m.group(1)), int(m.group(2))))
            elif "distribution" in line:
                continue
            elif rows or not line.strip():
                if rows:
                    break
    return tuple(rows)


def histogram_stats(histogram: tuple[tuple[float, int], ...]) -> dict[str, float]:
    """p50/p95/p99, standard deviation and n of a bucketed latency distribution."""
    if not histogram:
        return {"p50": np.nan, "p95": np.nan, "p99": np.nan, "stddev": np.nan, "n": 0}
    values = np.array([v for v, _ in histogram], dtype=float)
    counts = np.array([c for _, c in histogram], dtype=np.int64)
    p50, p95, p99 = np.percentile(values, [50, 95, 99], weights=counts, method="inverted_cdf")
    n = int(counts.sum())
    sd = float(np.sqrt(np.cov(values, fweights=counts))) if n > 1 else np.nan
    return {"p50": float(p50), "p95": float(p95), "p99": float(p99), "stddev": sd, "n": n}


def parse_intervals(text: str) -> tuple[Interval, ...]:
    out = []
    for line in text.splitlines():
        m = _INTERVAL.match(line.strip())
        if m:
            g = m.groupdict()
            out.append(Interval(float(g["t"]), int(g["threads"]), float(g["tps"]), float(g["qps"]), float(g["r"]),
                                float(g["w"]), float(g["o"]), float(g["lat"]), float(g["err"]), float(g["reconn"])))
    return tuple(out)


def parse_output(text: str, *, test: str = "", command: tuple[str, ...] = ()) -> SysbenchResult:
    """Numbers from a ``sysbench ... run`` output (1.0 format); ToolError if the core ones are missing."""
    found: dict[str, float | int] = {}
    for key, pat in _SUMMARY.items():
        m = re.search(pat, text, re.MULTILINE)
        if m:
            found[key] = int(m.group(1)) if key in _INTEGERS else float(m.group(1))
    missing = [k for k in ("transactions", "tps", "queries", "latency_avg_ms", "total_time_s") if k not in found]
    if missing:
        raise ToolError(f"sysbench output lacks {', '.join(missing)}; output was:\n{text[-1500:]}")
    hist = parse_histogram(text)
    hs = histogram_stats(hist)
    nan = float("nan")
    return SysbenchResult(
        command=tuple(command), test=test, threads=int(found.get("threads", 0)),
        transactions=int(found["transactions"]), tps=float(found["tps"]), queries=int(found["queries"]),
        qps=float(found.get("qps", nan)), reads=int(found.get("reads", 0)), writes=int(found.get("writes", 0)),
        other=int(found.get("other", 0)), ignored_errors=int(found.get("ignored_errors", 0)),
        reconnects=int(found.get("reconnects", 0)), total_time_s=float(found["total_time_s"]),
        events=int(found.get("events", 0)), latency_min_ms=float(found.get("latency_min_ms", nan)),
        latency_avg_ms=float(found["latency_avg_ms"]), latency_max_ms=float(found.get("latency_max_ms", nan)),
        latency_percentile=int(found.get("latency_percentile", 0)), latency_pct_ms=float(found.get("latency_pct_ms", nan)),
        latency_sum_ms=float(found.get("latency_sum_ms", nan)),
        latency_p50_ms=hs["p50"], latency_p95_ms=hs["p95"], latency_p99_ms=hs["p99"],
        latency_stddev_ms=hs["stddev"], latency_samples=hs["n"], histogram=hist, intervals=parse_intervals(text),
    )


def sysbench_binary(binary: str | Path | None = None) -> Path:
    path = Path(binary) if binary else (Path(p) if (p := shutil.which("sysbench")) else Path("/usr/bin/sysbench"))
    if not path.is_file():
        raise ToolError(f"sysbench not found at {path}; the README's set-up installs Debian's sysbench package")
    return path


class RunningSysbench:
    """A sysbench run in progress: its output is read line by line, with the time each line arrived."""

    def __init__(self, argv: list[str], test: str, timeout: float, on_line: Callable[[float, str], None] | None):
        self.argv, self.test, self.timeout, self.on_line = argv, test, timeout, on_line
        self.lines: list[tuple[float, str]] = []
        self.started = threading.Event()  # set when sysbench's threads start (the zero of its intervals)
        self.started_monotonic = float("nan")
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self._stderr: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._err_reader = threading.Thread(target=lambda: self._stderr.extend(self.proc.stderr), daemon=True)
        self._reader.start()
        self._err_reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            now = time.monotonic()
            self.lines.append((now, line))
            if line.startswith("Threads started!"):
                self.started_monotonic = now
                self.started.set()
            if self.on_line is not None:
                self.on_line(now, line)
        self.started.set()  # also on early exit, so nobody waits forever

    def wait(self) -> SysbenchResult:
        try:
            self.proc.wait(timeout=self.timeout)
        except BaseException:
            # An interrupt or a hung run must not leave a sysbench behind.
            self.kill()
            raise
        self._reader.join(timeout=10)
        self._err_reader.join(timeout=10)
        wall = time.perf_counter() - self.t0
        text = "".join(line for _, line in self.lines)
        if self.proc.returncode != 0:
            raise ToolError(f"`{' '.join(self.argv)}` exited {self.proc.returncode}:\n{''.join(self._stderr)[-2000:]}"
                            f"\n{text[-1000:]}")
        r = parse_output(text, test=self.test, command=tuple(self.argv))
        return dataclasses.replace(r, wall_seconds=wall, started_monotonic=self.started_monotonic)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    @property
    def text(self) -> str:
        return "".join(line for _, line in self.lines)


class Sysbench:
    """Drives the machine's sysbench against one MariaDB/MySQL server over its unix socket (or TCP)."""

    def __init__(self, conninfo: dict[str, object], *, binary: str | Path | None = None, db: str = "sbtest",
                 tables: int = 1, table_size: int = 10000, ps_mode: str = "disable"):
        if ps_mode not in PS_MODES:
            raise ToolError(f"ps_mode {ps_mode!r}; allowed: {', '.join(PS_MODES)}")
        self.binary = sysbench_binary(binary)
        self.conninfo = dict(conninfo)
        self.db, self.tables, self.table_size, self.ps_mode = db, tables, table_size, ps_mode

    def version(self) -> str:
        return subprocess.run([str(self.binary), "--version"], capture_output=True, text=True).stdout.strip()

    def _connection_args(self) -> list[str]:
        c = self.conninfo
        args = ["--db-driver=mysql", f"--mysql-user={c.get('user', 'root')}", f"--mysql-db={self.db}"]
        if c.get("password"):
            args.append(f"--mysql-password={c['password']}")
        if c.get("unix_socket"):
            args.append(f"--mysql-socket={c['unix_socket']}")
        else:
            args += [f"--mysql-host={c['host']}", f"--mysql-port={c['port']}"]
        return args

    def workload(self, test: str | Workload) -> Workload:
        """The load a run dispatches: a study's declared sysbench Workload, or a bundled test by name over this
        tool's --db-ps-mode (what every MariaDB study named before it declared a Workload)."""
        if isinstance(test, Workload):
            if test.tool != "sysbench":
                raise ToolError(f"{test.label} is no sysbench load")
            return test
        if test not in TESTS:
            raise ToolError(f"sysbench test {test!r}; allowed: {', '.join(TESTS)}")
        protocol = next(p for p, mode in SYSBENCH_PS_MODES.items() if mode == self.ps_mode)
        return Workload.sysbench(test, protocol)

    def command(self, test: str | Workload, action: str, *, threads: int = 1, seconds: int = 10,
                report_interval: int = 0, seed: int = 0, percentile: int = 95) -> list[str]:
        """``test``: the load (:meth:`workload`): its test or script first, its options after the tables."""
        w = self.workload(test)
        argv = [str(self.binary), *w.script_args(), *self._connection_args(), f"--tables={self.tables}",
                f"--table-size={self.table_size}", *w.options, f"--threads={threads}"]
        if action == "run":
            argv += [f"--time={int(seconds)}", "--events=0", f"--report-interval={report_interval}",
                     "--histogram=on", f"--percentile={percentile}", f"--rand-seed={seed}",
                     f"--db-ps-mode={w.ps_mode}"]
        return argv + [action]

    def prepare(self, test: str | Workload = "oltp_read_write", threads: int = 2) -> float:
        """Create and fill the tables; returns the seconds it took."""
        t0 = time.perf_counter()
        argv = self.command(test, "prepare", threads=min(threads, self.tables))
        r = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
        if r.returncode != 0:
            raise ToolError(f"`{' '.join(argv)}` failed:\n{r.stderr[-2000:]}\n{r.stdout[-1000:]}")
        return time.perf_counter() - t0

    def start(self, test: str | Workload, threads: int, seconds: int, *, report_interval: int = 0, seed: int = 0,
              on_line: Callable[[float, str], None] | None = None) -> RunningSysbench:
        argv = self.command(test, "run", threads=threads, seconds=seconds, report_interval=report_interval, seed=seed)
        return RunningSysbench(argv, self.workload(test).script, timeout=seconds + 120, on_line=on_line)

    def run(self, test: str | Workload, threads: int, seconds: int, *, report_interval: int = 0,
            seed: int = 0) -> SysbenchResult:
        return self.start(test, threads, seconds, report_interval=report_interval, seed=seed).wait()
