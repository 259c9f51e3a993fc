"""pgbench: initialise a dataset, run the select-only test, parse its output.

Per-transaction latencies come from pgbench's own transaction log (``-l``),
sampled (``--sampling-rate``) so the client's log writing stays small beside the
server's; pgbench itself does not print percentiles.
"""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import ToolError

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
    return transactions * RECORDS_PER_TRANSACTION[mode] + clients * RECORDS_PER_CONNECTION[mode]

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


def parse_progress(text: str) -> tuple[float, ...]:
    """tps per interval from pgbench -P lines on stderr (``progress: 3.0 s, 1234.5 tps, lat ...``)."""
    return tuple(float(m.group(2)) for m in _PROGRESS.finditer(text))


def read_latency_log(paths: list[Path]) -> np.ndarray:
    """Latencies (µs) from pgbench transaction logs: ``client tx_no latency_us script epoch_s epoch_us``."""
    chunks = []
    for p in paths:
        if p.stat().st_size == 0:
            continue
        arr = np.loadtxt(p, usecols=2, dtype=np.float64, ndmin=1)
        chunks.append(arr)
    return np.concatenate(chunks) if chunks else np.array([], dtype=np.float64)


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


class Pgbench:
    """Drives the machine's pgbench against one server (given by libpq connection parameters)."""

    def __init__(self, binary: Path, conninfo: dict[str, object]):
        self.binary = Path(binary)
        self.env = {
            "PGHOST": str(conninfo["host"]), "PGPORT": str(conninfo["port"]),
            "PGUSER": str(conninfo["user"]), "PGDATABASE": str(conninfo["dbname"]),
            "PATH": "/usr/bin:/bin",
        }

    def version(self) -> str:
        return subprocess.run([str(self.binary), "--version"], capture_output=True, text=True).stdout.strip()

    def initialise(self, scale: int) -> float:
        """``pgbench -i -s scale``; returns the seconds it took."""
        t0 = time.perf_counter()
        r = subprocess.run([str(self.binary), "-i", "-q", "-s", str(scale)], env=self.env, capture_output=True, text=True)
        if r.returncode != 0:
            raise ToolError(f"pgbench -i -s {scale} failed:\n{r.stderr[-2000:]}")
        return time.perf_counter() - t0

    def command(self, clients: int, duration: float, mode: str, *, log_prefix: Path | None = None,
                sampling_rate: float = 0.0, progress: int = 0) -> list[str]:
        # -j follows -c as in the post; -n: the select-only test needs no vacuum.
        argv = [str(self.binary), "-n", "-S", "-M", mode, "-c", str(clients), "-j", str(clients), "-T", str(int(duration))]
        if progress:
            argv += ["-P", str(int(progress))]
        if log_prefix is not None and sampling_rate > 0:
            argv += ["-l", f"--sampling-rate={sampling_rate}", f"--log-prefix={log_prefix}"]
        return argv

    def run(self, clients: int, duration: float, mode: str, *, log_prefix: Path | None = None,
            sampling_rate: float = 0.0, progress: int = 0) -> PgbenchResult:
        """``progress``: seconds per pgbench -P interval (0: none)."""
        argv = self.command(clients, duration, mode, log_prefix=log_prefix, sampling_rate=sampling_rate,
                            progress=progress)
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        try:
            stdout, stderr = proc.communicate(timeout=duration + 120)
        except BaseException:
            # An interrupt or timeout must not leave a pgbench behind.
            proc.kill()
            proc.wait()
            raise
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise ToolError(f"`{' '.join(argv)}` exited {proc.returncode}:\n{stderr[-2000:]}")
        parsed = parse_output(stdout)
        lat = np.array([])
        if log_prefix is not None and sampling_rate > 0:
            files = sorted(log_prefix.parent.glob(log_prefix.name + ".*"))
            lat = read_latency_log(files) / 1000.0
            for f in files:
                f.unlink()
        pct = np.percentile(lat, [50, 95, 99]) if lat.size else [np.nan] * 3
        return PgbenchResult(
            command=tuple(argv),
            transactions=int(parsed["transactions"]), failed=int(parsed["failed"]), tps=float(parsed["tps"]),
            latency_avg_ms=float(parsed["latency_avg_ms"]),
            latency_stddev_ms=float(np.std(lat, ddof=1)) if lat.size > 1 else np.nan,
            latency_p50_ms=float(pct[0]), latency_p95_ms=float(pct[1]), latency_p99_ms=float(pct[2]),
            latency_samples=int(lat.size), initial_connection_ms=float(parsed.get("initial_connection_ms", np.nan)),
            wall_seconds=wall, progress_tps=parse_progress(stderr) if progress else (),
        )
