"""pgbench: initialise a dataset, run the select-only test, parse its output.

Per-transaction latencies come from pgbench's own transaction log (``-l``),
sampled (``--sampling-rate``) so the client's log writing stays small beside the
server's; pgbench itself does not print percentiles.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..base.errors import ParameterError, ToolError
from .workload import SELECT_ONLY, Workload

QUERY_MODES = ("simple", "prepared")
# Statement-log records the select-only script produces with log_min_duration_statement = 0:
# the simple protocol logs the statement once per transaction; prepared mode logs its bind and
# its execute per transaction, and its parse once per connection.
RECORDS_PER_TRANSACTION = {"simple": 1, "prepared": 2}
RECORDS_PER_CONNECTION = {"simple": 0, "prepared": 1}
# Text every logged record of the script's statement holds. pgbench's own start-up queries
# (the scale from pgbench_branches, the partitioning of pgbench_accounts) do not.
RECORD_MARKER = "SELECT abalance FROM pgbench_accounts"
# Statements pgbench runs once per run before the clients start (the scale from pgbench_branches, the
# partitioning of pgbench_accounts): their records carry no statement text when only durations are logged.
SETUP_STATEMENTS = 2


def expected_records(mode: str, transactions: int, clients: int) -> int:
    """Statement records a fully logged run of the select-only script writes (counted exactly, tested)."""
    return Workload.pgbench(SELECT_ONLY, mode).records(transactions, clients)

_PATTERNS = {
    "transactions": r"number of transactions actually processed:\s+(\d+)",
    "failed": r"number of failed transactions:\s+(\d+)",
    "latency_avg_ms": r"latency average = ([\d.]+) ms",
    "initial_connection_ms": r"initial connection time = ([\d.]+) ms",
    "tps": r"tps = ([\d.]+) \(without initial connection time\)",
    "scale": r"scaling factor:\s+(\d+)",
    "clients": r"number of clients:\s+(\d+)",
    "threads": r"number of threads:\s+(\d+)",
    "query_mode": r"query mode:\s+(\w+)",
}


def parse_output(text: str) -> dict[str, float | int | str]:
    """Numbers from pgbench's summary (PostgreSQL 14+ format); ToolError if the core ones are missing."""
    out: dict[str, float | int | str] = {}
    for key, pat in _PATTERNS.items():
        m = re.search(pat, text, re.MULTILINE)
        if m:
            val = m.group(1)
            out[key] = val if key == "query_mode" else (int(val) if key in ("transactions", "failed", "scale", "clients", "threads") else float(val))
    missing = [k for k in ("transactions", "tps", "latency_avg_ms") if k not in out]
    if missing:
        raise ToolError(f"pgbench output lacks {', '.join(missing)}; output was:\n{text[-1500:]}")
    out.setdefault("failed", 0)
    return out


_PROGRESS = re.compile(r"^progress: ([\d.]+) s, ([\d.]+) tps", re.MULTILINE)


_SCRIPT = re.compile(r"^SQL script (\d+): .*?^ - (\d+) transactions", re.MULTILINE | re.DOTALL)


def transactions_per_script(text: str, scripts: int) -> tuple[int, ...]:
    """Each script's transactions from pgbench's summary (it reports them per script when there are several);
    one script: all of them. With several threads their sum can fall short of the total: see
    :attr:`PgbenchResult.per_script_lost`."""
    if scripts == 1:
        return (int(parse_output(text)["transactions"]),)
    found = {int(m.group(1)): int(m.group(2)) for m in _SCRIPT.finditer(text)}
    if sorted(found) != list(range(1, scripts + 1)):
        raise ToolError(f"pgbench's summary lacks the transactions of its {scripts} scripts:\n{text[-1500:]}")
    return tuple(found[i] for i in range(1, scripts + 1))


def per_script_lost(text: str, per_script: tuple[int, ...]) -> int:
    """Transactions of pgbench's total that its per-script counts ``per_script`` miss (:attr:`PgbenchResult.
    per_script_lost`); 0 for one script or none (the total is the count)."""
    if len(per_script) < 2:
        return 0
    total = int(parse_output(text)["transactions"])
    if sum(per_script) > total:
        raise ToolError(f"pgbench's per-script transactions add up to more than its total ({sum(per_script)} > "
                        f"{total}):\n{text[-1500:]}")
    return total - sum(per_script)


def parse_progress(text: str) -> tuple[float, ...]:
    """tps per interval from pgbench -P lines on stderr (``progress: 3.0 s, 1234.5 tps, lat ...``)."""
    return tuple(float(m.group(2)) for m in _PROGRESS.finditer(text))


def _logs(prefix: Path | None) -> list[Path]:
    """pgbench's transaction logs under ``prefix``: ``prefix.<pid>`` and, with -j > 1, ``prefix.<pid>.<thread>``."""
    return [] if prefix is None else sorted(prefix.parent.glob(prefix.name + ".*"))


def read_latency_log(paths: list[Path]) -> np.ndarray:
    """Latencies (µs) from pgbench transaction logs: ``client tx_no latency_us script epoch_s epoch_us``."""
    chunks = []
    for p in paths:
        if p.stat().st_size == 0:
            continue
        arr = np.loadtxt(p, usecols=2, dtype=np.float64, ndmin=1)
        chunks.append(arr)
    return np.concatenate(chunks) if chunks else np.array([], dtype=np.float64)


def read_completion_times(prefix: Path) -> np.ndarray:
    """When each transaction logged under ``prefix`` completed (Unix epoch seconds, sorted), from the logs' last two
    columns: how many transactions fall between two instants read with ``time.time()`` (the same clock)."""
    chunks = [np.loadtxt(p, usecols=(4, 5), dtype=np.float64, ndmin=2) for p in _logs(prefix) if p.stat().st_size]
    if not chunks:
        return np.array([], dtype=np.float64)
    both = np.concatenate(chunks)
    return np.sort(both[:, 0] + both[:, 1] / 1e6)


@dataclass(frozen=True)
class PgbenchResult:
    command: tuple[str, ...]
    transactions: int
    failed: int
    tps: float
    latency_avg_ms: float
    latency_stddev_ms: float
    latency_p50_ms: float
    latency_p95_ms: float
    latency_p99_ms: float
    latency_samples: int
    initial_connection_ms: float
    wall_seconds: float
    # tps of each progress interval (pgbench -P), empty unless asked for: the noise study's time series
    progress_tps: tuple[float, ...] = ()
    # transactions of each of the user's scripts, in their order (empty for the built-in load)
    per_script: tuple[int, ...] = ()
    # Transactions in ``transactions`` that no script's count holds (0 with one script). In pgbench 15.18's
    # src/bin/pgbench/pgbench.c (Debian's postgresql-15 15.18 source) each thread counts its transactions in its own
    # stats, added up once the threads have ended (main(), lines 7377-7380): ``transactions`` is exact. A script's
    # count is one counter shared by all threads, which each increments unlocked (processXactStats, lines
    # 4724-4726: "XXX could use a mutex here, but we choose not to"; accumStats, line 1492: stats->cnt++): two
    # threads ending a transaction of the same script at once can lose one of the two increments. -T is not a cause:
    # a transaction in flight when the time is up runs to its end and is counted (END_TX, line 4238, before the
    # timer's test at line 4278; the timer stops a client only before its next script, CHOOSE_SCRIPT, line 3670).
    per_script_lost: int = 0


class Pgbench:
    """Drives the machine's pgbench against one server (given by libpq connection parameters)."""

    def __init__(self, binary: Path, conninfo: dict[str, object], *, scripts: tuple[tuple[str, int], ...] = (),
                 env: dict[str, str] | None = None):
        """``scripts``: (file, weight) pairs run instead of the built-in select-only (``-f file@weight``, with
        ``-n``: pgbench would vacuum its own tables first); ``env``: more libpq variables for the child alone
        (a user's PGPASSWORD, PGPASSFILE, PGSSLMODE: passed to pgbench, never written anywhere)."""
        self.binary = Path(binary)
        self.scripts = tuple(scripts)
        self.env = {
            **(env or {}),
            "PGHOST": str(conninfo["host"]), "PGPORT": str(conninfo["port"]),
            "PGUSER": str(conninfo["user"]), "PGDATABASE": str(conninfo["dbname"]),
            "PATH": "/usr/bin:/bin",
        }

    def version(self) -> str:
        return subprocess.run([str(self.binary), "--version"], capture_output=True, text=True).stdout.strip()

    @staticmethod
    def init_args(scale: int, *, fillfactor: int | None = None, steps: str | None = None) -> list[str]:
        """``-i -q -s scale``, with ``-I steps`` (pgbench -i's steps, e.g. "g": only the data) and ``-F fillfactor``
        where given."""
        return ["-i", "-q", *(["-I", steps] if steps else []), *(["-F", str(fillfactor)] if fillfactor else []),
                "-s", str(scale)]

    def initialise(self, scale: int, *, fillfactor: int | None = None, steps: str | None = None) -> float:
        """``pgbench`` with :meth:`init_args`; returns the seconds it took."""
        args = self.init_args(scale, fillfactor=fillfactor, steps=steps)
        t0 = time.perf_counter()
        r = subprocess.run([str(self.binary), *args], env=self.env, capture_output=True, text=True)
        if r.returncode != 0:
            raise ToolError(f"pgbench {' '.join(args)} failed:\n{r.stderr[-2000:]}")
        return time.perf_counter() - t0

    def command(self, clients: int, duration: float, mode: str, *, log_prefix: Path | None = None,
                sampling_rate: float = 0.0, progress: int = 0, workload: Workload | None = None) -> list[str]:
        """``workload``: the script (default: the select-only built-in, pgbench -S) over protocol ``mode``, for
        ``duration`` seconds (-T) or, a counted workload, its transactions split over the clients (-t)."""
        w = workload or Workload.pgbench(SELECT_ONLY, mode)
        if w.protocol != mode:
            raise ParameterError("workload.protocol", w.protocol, f"{mode!r}, the run's query mode")
        # -j follows -c as in the post; -n: the select-only test needs no vacuum.
        # a user's scripts (file@weight) where given, else the workload's (the select-only built-in: pgbench -S)
        load = [a for f, weight in self.scripts for a in ("-f", f"{f}@{weight}")] if self.scripts else w.script_args()
        size = ["-t", str(w.per_client(clients))] if w.counted else ["-T", str(int(duration))]
        argv = [str(self.binary), "-n", *load, "-M", mode, "-c", str(clients), "-j", str(clients), *size]
        if progress:
            argv += ["-P", str(int(progress))]
        if log_prefix is not None and sampling_rate > 0:
            argv += ["-l", f"--sampling-rate={sampling_rate}", f"--log-prefix={log_prefix}"]
        return argv

    def run(self, clients: int, duration: float, mode: str, *, log_prefix: Path | None = None,
            sampling_rate: float = 0.0, progress: int = 0, workload: Workload | None = None) -> PgbenchResult:
        """``progress``: seconds per pgbench -P interval (0: none); ``workload`` as :meth:`command` takes it."""
        argv = self.command(clients, duration, mode, log_prefix=log_prefix, sampling_rate=sampling_rate,
                            progress=progress, workload=workload)
        # a counted load lasts as long as its transactions take (its nominal duration paces the runner only)
        timeout = 3600 if workload is not None and workload.counted else duration + 120
        # a study killed outright (SIGKILL) leaves its run's logs; that run is done again now, and reads only its own
        for f in _logs(log_prefix):
            f.unlink()
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except BaseException:
            # An interrupt or timeout must not leave a pgbench behind, nor its half-written log, which a
            # resumed study's run at the same position would otherwise read as its own.
            proc.kill()
            proc.wait()
            for f in _logs(log_prefix):
                f.unlink(missing_ok=True)
            raise
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise ToolError(f"`{' '.join(argv)}` exited {proc.returncode}:\n{stderr[-2000:]}")
        parsed = parse_output(stdout)
        lat = np.array([])
        if log_prefix is not None and sampling_rate > 0:
            files = _logs(log_prefix)
            lat = read_latency_log(files) / 1000.0
            for f in files:
                f.unlink()
        pct = np.percentile(lat, [50, 95, 99]) if lat.size else [np.nan] * 3
        per_script = transactions_per_script(stdout, len(self.scripts)) if self.scripts else ()
        return PgbenchResult(
            command=tuple(argv),
            transactions=int(parsed["transactions"]), failed=int(parsed["failed"]), tps=float(parsed["tps"]),
            latency_avg_ms=float(parsed["latency_avg_ms"]),
            latency_stddev_ms=float(np.std(lat, ddof=1)) if lat.size > 1 else np.nan,
            latency_p50_ms=float(pct[0]), latency_p95_ms=float(pct[1]), latency_p99_ms=float(pct[2]),
            latency_samples=int(lat.size), initial_connection_ms=float(parsed.get("initial_connection_ms", np.nan)),
            wall_seconds=wall, progress_tps=parse_progress(stderr) if progress else (),
            per_script=per_script, per_script_lost=per_script_lost(stdout, per_script),
        )


# -- one continuous load (the switchback design) -------------------------------------------------------
# pgbench's --aggregate-interval=1 log: one line per thread and whole epoch second (PostgreSQL 15:
# interval_start num_transactions sum_latency sum_latency_2 min_latency max_latency sum_lag sum_lag_2 min_lag
# max_lag skipped retried retries serialization_failures deadlock_failures). Its intervals start at whole
# seconds of the epoch (checked on pgbench 15: a run started at .42 s logs a first interval of ~0.55 s of
# latency, then whole ones), so a switch made at a whole second of the wall clock falls on an interval edge.
AGGREGATE_COLUMNS = ("transactions", "sum_latency_us", "sum_latency2_us")


def read_aggregate_log(paths: list[Path]) -> dict[int, tuple[int, float, float, int]]:
    """Epoch second -> (transactions, sum of latencies µs, sum of squared latencies µs², failures), all of
    pgbench's threads added up (``-j`` writes one file per thread)."""
    out: dict[int, list[float]] = {}
    for p in paths:
        for line in p.read_text().splitlines():
            f = line.split()
            if len(f) < 4:
                continue
            row = out.setdefault(int(f[0]), [0, 0.0, 0.0, 0])
            row[0] += int(f[1])
            row[1] += float(f[2])
            row[2] += float(f[3])
            row[3] += sum(int(x) for x in f[13:15]) if len(f) >= 15 else 0
    return {k: (int(v[0]), v[1], v[2], int(v[3])) for k, v in sorted(out.items())}


class ContinuousLoad:
    """``pgbench -T`` running in the background for the whole switchback load, logging every thread's
    transactions per whole epoch second; stopped early by SIGALRM, which pgbench handles as the end of
    ``-T`` (it finishes, flushes its logs and prints its summary), so a stop at any moment keeps every
    interval it ran. A context manager: any exit stops it, an interrupt included.

    ``workload``: the study's declared load (None: pgbench -S over ``mode``), a timed one: a counted load
    (pgbench -t) would end when its transactions are done, not after the load's last window."""

    def __init__(self, pgbench: Pgbench, clients: int, seconds: int, mode: str, log_prefix: Path,
                 workload: Workload | None = None):
        if workload is not None and workload.counted:
            raise ParameterError("workload.transactions", workload.transactions,
                                 "None: one continuous load runs by time (pgbench -T)")
        self.pgbench, self.clients, self.seconds, self.mode = pgbench, clients, int(seconds), mode
        self.workload = workload
        self.log_prefix = Path(log_prefix)
        self.proc: subprocess.Popen | None = None
        self.started_at = float("nan")
        self.output = ""

    @property
    def argv(self) -> list[str]:
        # -P 1 on stderr is what can be read while the load runs (the aggregate log is buffered until the end):
        # the progress lines' rough running estimates, never the measurement
        return [*self.pgbench.command(self.clients, self.seconds, self.mode, progress=1, workload=self.workload),
                "-l", "--aggregate-interval=1", f"--log-prefix={self.log_prefix}"]

    def progress(self) -> list[tuple[float, float]]:
        """pgbench -P's intervals so far: (epoch second the interval ended, approximately; tps)."""
        if self.proc is None:
            return []
        text = os.pread(self._err.fileno(), 1 << 22, 0).decode(errors="replace")
        return [(self.started_at + float(m.group(1)), float(m.group(2))) for m in _PROGRESS.finditer(text)]

    def __enter__(self) -> "ContinuousLoad":
        import tempfile

        self.log_prefix.parent.mkdir(parents=True, exist_ok=True)
        for f in self._files():
            f.unlink()
        self._err = tempfile.TemporaryFile(mode="w+")
        self.started_at = time.time()
        self.proc = subprocess.Popen(self.argv, env=self.pgbench.env, stdout=subprocess.PIPE, stderr=self._err,
                                     text=True, start_new_session=True)
        return self

    def _files(self) -> list[Path]:
        return _logs(self.log_prefix)

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def ended_early(self, planned_end: float) -> ToolError:
        """The error for a load that ended before ``planned_end`` (epoch s), with pgbench's exit status and the
        end of its stderr: a client aborted, the server went away, or the load was started too short."""
        rc = self.proc.poll() if self.proc is not None else None
        err = os.pread(self._err.fileno(), 1 << 22, 0).decode(errors="replace") if self.proc is not None else ""
        ran = time.time() - self.started_at
        # a load that ran its whole -T was not cut short: the schedule fell behind it (an edge blocked)
        what = (f"pgbench ended {planned_end - time.time():.1f} s before the load's last window" if ran < self.seconds
                else f"the schedule fell {time.time() - planned_end:.1f} s behind the load's last window and pgbench "
                     f"had ended")
        return ToolError(f"{what} (started {ran:.1f} s ago for -T {self.seconds}, exit status {rc}); "
                         f"`{' '.join(self.argv)}` wrote:\n{err[-2000:]}")

    def stop(self, timeout: float = 30.0) -> dict[int, tuple[int, float, float, int]]:
        """End the load now (SIGALRM: pgbench's own end of -T) and return its per-second aggregate."""
        import signal

        if self.proc is None:
            return {}
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGALRM)
        try:
            self.output, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise ToolError(f"pgbench did not end within {timeout} s of its stop signal")
        rc, self.proc = self.proc.returncode, None
        self._err.seek(0)
        err = self._err.read()
        self._err.close()
        if rc != 0:
            raise ToolError(f"`{' '.join(self.argv)}` exited {rc}:\n{err[-2000:]}")
        files = self._files()
        per_second = read_aggregate_log(files)
        for f in files:
            f.unlink()
        return per_second

    def __exit__(self, *exc) -> None:
        if self.proc is not None:
            if exc[0] is None:
                self.stop()
            else:
                # On an error or interrupt, stop it cleanly if it will; never leave it behind.
                try:
                    self.stop(timeout=10.0)
                except Exception:
                    if self.proc is not None:
                        self.proc.kill()
                        self.proc.wait()
                        self.proc = None
