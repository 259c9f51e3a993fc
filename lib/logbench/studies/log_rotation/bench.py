"""Study 06's bench: one run under sysbench's load with the tracer running and the log rotated half-way, its
throughput dip and deficit around the rotation, and its own numbers (RotationNumbers)."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ...measure.benches import mariadb as mb
from ...measure.design import PlannedRun
from ...base.logsinks import wait_quiet
from ...measure.runner import Measurement, SplitBench
from ...servers import mariadb as mdb
from ...base.settings import Configuration
from ...workloads.sysbench import Sysbench
from .rotation import rotate, rotated_path
from .spec import SETTLE_S, LogRotationStudy
from .tracer import RotationSink, Tracer, tracer_census

def throughput_effect(intervals: list[float], rotate_s: float, end_s: float, duration: float,
                      settle_s: float = SETTLE_S) -> dict[str, float]:
    """Dip and deficit of per-second throughput around a rotation at ``rotate_s`` .. ``end_s`` (seconds after start).

    The reference is the mean of the whole seconds before the rotation, leaving out the
    first (connections warming up). The window is every second that overlaps the
    rotation, plus ``settle_s`` after it; the run's final second is never used (sysbench's
    last report can include its shutdown). dip = 1 - worst second / reference;
    deficit = sum over the window of (1 - second / reference): seconds of full throughput lost.
    """
    tps = np.asarray(intervals, dtype=float)
    ends = np.arange(1, len(tps) + 1, dtype=float)  # interval i covers (i-1, i]
    usable = ends < duration
    before = tps[usable & (ends <= np.floor(rotate_s)) & (ends >= 2)]
    window = tps[usable & (ends > np.floor(rotate_s)) & (ends - 1 < end_s + settle_s)]
    if before.size == 0 or window.size == 0 or before.mean() <= 0:
        return {"tps_before": np.nan, "tps_worst": np.nan, "dip": np.nan, "deficit_s": np.nan}
    ref = float(before.mean())
    return {"tps_before": ref, "tps_worst": float(window.min()), "dip": 1 - float(window.min()) / ref,
            "deficit_s": float(np.sum(1 - window / ref))}


@dataclass(frozen=True, kw_only=True)
class RotationNumbers(mb.SysbenchNumbers):
    """A run's own measurements (columns of the processed runs, but the lists and the step times)."""

    method: str
    steps_s: dict  # monotonic seconds of each step of the rotation, from sysbench's start
    rotation_s: float
    tps_before: float
    tps_worst: float
    dip: float
    deficit_s: float
    tracer_sent: int
    tracer_in_old: int
    tracer_in_new: int
    tracer_lost: int
    tracer_lost_by_design: int
    tracer_duplicated: int
    tracer_lost_seqs: list
    tracer_duplicated_seqs: list
    tracer_errors: int
    tracer_stall_ms: float
    tracer_p99_before_ms: float
    old_file_bytes: int
    new_file_bytes: int
    log_size_mb: int
    rotated_file_bytes: int
    live_file_allocated_bytes: int
    live_file_bytes: int


class RotationBench(mb.SysbenchBench):
    """The runner's Bench for the rotation study (see :class:`logbench.measure.runner.Bench`)."""

    def __init__(self, study: LogRotationStudy, server: mdb.MariaDBServer, sysbench: Sysbench):
        super().__init__(study, server, sysbench, study.load)
        self.sink = RotationSink(server.slow_log)
        self.tracer = Tracer(server, study.tracer_rate)
        self._mark = 0

    def apply(self, configuration: Configuration):
        sw = self.server.apply(configuration.settings)
        self._fresh_log()
        self.tracer.connect()
        # MariaDB writes a statement's slow-log record after it has answered the client: the tracer's connection
        # statements (PyMySQL's SET NAMES, SET AUTOCOMMIT) must be in the file before the run's mark, or the
        # first run counts one more record than it sent (seen once in CI: 245335 received, 245334 expected)
        wait_quiet([self.sink], quiet=0.1)
        return sw

    def _fresh_log(self) -> None:
        """Every run starts from an empty slow log padded to log_size_mb (no load runs now)."""
        rotated = rotated_path(self.server.slow_log)
        if self.server.slow_log.exists():
            self.server.slow_log.rename(rotated)
        self.server.query("FLUSH SLOW LOGS")
        rotated.unlink(missing_ok=True)
        if self.study.log_size_mb:
            # Comment-free filler lines: not entries, so counting is unaffected; the server appends after them.
            line = b"-- logbench filler: the slow log's earlier content, so the rotated file has a real size\n"
            block = line * ((1 << 20) // len(line))
            with open(self.server.slow_log, "ab") as f:
                for _ in range(self.study.log_size_mb):
                    f.write(block)

    def warm(self, run: PlannedRun, seconds: float) -> None:
        pass  # a continuous run: the seconds before the rotation are the reference, the first is left out

    def measure(self, run: PlannedRun, seconds: float) -> Measurement:
        method = run.configuration.rpartition(SplitBench.SEP)[2]  # a version sweep's "mariadb10.5/<method>"
        self._mark = self.sink.mark()
        sb = self.sysbench.start(self.load, run.clients, int(seconds), report_interval=1,
                                 seed=mb.run_seed(self.study, run))
        try:
            if not sb.started.wait(timeout=60) or np.isnan(sb.started_monotonic):
                sb.kill()
                raise RuntimeError(f"sysbench did not start: {sb.text[-1000:]}")
            zero = sb.started_monotonic
            self.tracer.start()
            time.sleep(max(0.0, zero + self.study.rotate_at - time.monotonic()))
            steps = rotate(method, self.server, self.study.pause)
            r = sb.wait()
        except BaseException:
            sb.kill()
            raise
        finally:
            self.tracer.stop()
        rel = {k: v - zero for k, v in steps.items()}
        old, new = self.sink.data_since(self._mark)
        census = tracer_census(old, new, [s for s, _, _ in self.tracer.sent])
        lat = pd.DataFrame(self.tracer.sent, columns=["seq", "t", "latency"])
        lat["t"] -= zero
        window = lat[(lat["t"] >= rel["start"] - 0.05) & (lat["t"] <= rel["end"] + 0.5)]
        before = lat[(lat["t"] >= 1.0) & (lat["t"] < rel["start"])]
        # Records deliberately not written: the tracer's statements sent while the log was switched off.
        explained = []
        if method == "rename_flush_disabled":
            off = lat[(lat["t"] >= rel["disabled"] - 0.05) & (lat["t"] + lat["latency"] <= rel["enabled"] + 0.05)]
            explained = sorted(set(census["tracer_missing"]) & set(off["seq"]))
        unexplained = sorted(set(census["tracer_missing"]) - set(explained))
        effect = throughput_effect([i.tps for i in r.intervals], rel["start"], rel["end"], self.study.duration)
        extra = dataclasses.asdict(RotationNumbers(
            **mb.SysbenchNumbers.of(r), method=method, steps_s=rel, rotation_s=rel["end"] - rel["start"], **effect,
            tracer_sent=census["tracer_sent"], tracer_in_old=census["tracer_in_old"],
            tracer_in_new=census["tracer_in_new"], tracer_lost=len(unexplained),
            tracer_lost_by_design=len(explained), tracer_duplicated=len(census["tracer_duplicated"]),
            tracer_lost_seqs=unexplained[:50], tracer_duplicated_seqs=census["tracer_duplicated"][:50],
            tracer_errors=self.tracer.errors,
            tracer_stall_ms=1000 * float(window["latency"].max()) if len(window) else np.nan,
            tracer_p99_before_ms=1000 * float(before["latency"].quantile(0.99)) if len(before) else np.nan,
            old_file_bytes=len(old), new_file_bytes=len(new), log_size_mb=self.study.log_size_mb,
            rotated_file_bytes=mb.file_size(rotated_path(self.server.slow_log)),
            live_file_allocated_bytes=_allocated(self.server.slow_log), live_file_bytes=mb.file_size(self.server.slow_log),
        ))
        return mb.measurement(r, run, extra)

    def sinks(self, configuration: Configuration) -> list:
        return [self.sink]

    def expected_records(self, configuration: Configuration, run: PlannedRun, m: Measurement) -> int:
        # and, where the server logs each connection's end (MariaDB 10.5), one entry per sysbench connection (the
        # tracer's stays open across runs)
        ends = mdb.slow_entry(self.server_version).per_connection * mb.connections(run, m.extra.get("reconnects", 0))
        return mb.statements_sent(m.extra["queries"], m.failed) + int(m.extra["tracer_sent"]) + int(ends)

    def close(self) -> None:
        self.tracer.close()


def _allocated(path: Path) -> int:
    """Bytes on disk: much less than the size would mean the writer kept its offset after a truncate (a sparse hole)."""
    try:
        return path.stat().st_blocks * 512
    except FileNotFoundError:
        return 0
