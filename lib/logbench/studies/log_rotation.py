"""Study 06: rotating a busy slow log (post 002, 'Rotating MySQL slow logs safely', Peter Boros).

Under a steady sysbench load with every statement logged (``long_query_time = 0``)
the slow log is rotated once, half-way through each run, by one method:

- ``none`` — no rotation: the baseline, analysed at the same instant (a placebo);
- ``copytruncate`` — logrotate's copytruncate: copy the file, then truncate it in place;
- ``rename_flush`` — rename the file, then ``FLUSH SLOW LOGS`` (the ebook's advice);
- ``rename_flush_disabled`` — the same with the slow log switched off around the
  flush (``SET GLOBAL slow_query_log = OFF``, pause, flush, pause, on), as the ebook
  recommends to keep the flush from waiting on a full log buffer;
- ``ebook_long_query_time`` — the ebook's literal postrotate script, which "disables"
  the log by ``SET GLOBAL long_query_time = 2000``; sessions copy long_query_time
  when they connect, so the load's open sessions keep logging (this measures that).

What is measured per run: sysbench's per-second throughput (``--report-interval=1``)
around the rotation — the dip (worst second against the seconds before) and the
deficit (transaction-seconds lost, summed over the rotation window) — the time the
rotation itself took, and every record: a *tracer* session sends numbered
statements (``SELECT 'lbseq:N'``) at a fixed rate throughout, so each one's
presence in the old and new file shows exactly which records were lost or
duplicated, and its latency shows any stall at sub-second resolution. The slow log
is padded to ``log_size_mb`` before each run, so the file rotated has a
production-like size (the ebook rotates at 1 GB).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pymysql

from .. import params, records, stats
from ..benches import mariadb as mb
from ..design import PlannedRun, aa_name
from ..errors import ParameterError
from ..logsinks import Count, wait_quiet
from ..runner import Measurement
from ..servers import mariadb as mdb
from ..settings import Configuration, Settings, validate_mariadb
from ..workloads.sysbench import Sysbench
from . import common

NAME = "log_rotation"
POST = "002_6799d5933fa4bed1.txt"
BACKENDS = mb.BACKENDS  # "auto", "local", "container"
BASELINE = "none"
METHODS = ("none", "copytruncate", "rename_flush", "rename_flush_disabled", "ebook_long_query_time")
WORKLOADS = ("oltp_point_select", "oltp_read_write")
TRACER_MARK = "lbseq:"
SETTLE_S = 1.0  # seconds after the rotation still counted as its window
_SEQ = re.compile(rb"'lbseq:(\d+)'")

# Every statement logged to a file, as in the ebook's high-volume case; otherwise post 001's base.
BASE = {**mb.BASE, "slow_query_log": True, "long_query_time": 0, "innodb_buffer_pool_size": "256M"}

PROFILES: dict[str, dict[str, object]] = {
    "smoke": {"clients": [2], "repeats": 1, "duration": 5, "rotate_at": 2.0, "log_size_mb": 4, "pause": 0.3,
              "tables": 1, "table_size": 2000, "tracer_rate": 100},
    # the committed run: ~6 minutes on two cores
    "standard": {"clients": [4], "repeats": 5, "duration": 10, "rotate_at": 5.0, "log_size_mb": 128, "pause": 1.0,
                 "tables": 2, "table_size": 20000, "tracer_rate": 200},
    # the ebook's numbers: a 1 GB log, its 2-second pauses
    "full": {"clients": [4, 16], "repeats": 10, "duration": 20, "rotate_at": 10.0, "log_size_mb": 1024, "pause": 2.0,
             "tables": 4, "table_size": 100000, "tracer_rate": 200},
}


@dataclass(frozen=True, kw_only=True)
class LogRotationStudy(mb.MariaDBStudy):
    workload: str
    rotate_at: float
    log_size_mb: int
    pause: float
    tracer_rate: float


def define(profile: str = "standard", methods: object = None, workload: str = "oltp_point_select",
           rotate_at: object = None, log_size_mb: object = None, pause: object = None, tracer_rate: object = None,
           tables: object = None, table_size: object = None, backend: str = "auto", image: object = None,
           mariadbd: object = None, **shared: object) -> LogRotationStudy:
    """Check every parameter and freeze the study; raises ParameterError/SettingError before anything starts.
    ``shared``: the parameters every study has (common.SHARED) but warm-up: each run is one continuous load."""
    d = common.profile_lookup(profile, PROFILES)
    chosen = common.with_baseline(BASELINE, params.name_list("methods", list(METHODS) if methods is None else methods,
                                                             METHODS))
    params.choice("workload", workload, WORKLOADS)
    for name in ("warmup", "warmup_blocks"):
        if name in shared:
            raise ParameterError(name, shared[name], "not a parameter of this study (each run is one continuous load)")
    engine = mb.mariadb_fields(backend=backend, image=image, mariadbd=mariadbd, tables=d("tables", tables),
                               table_size=d("table_size", table_size), base=BASE)
    validate_mariadb(engine["base"], engine["mariadbd"])
    study = LogRotationStudy(
        **common.study_fields(SPEC, profile, PROFILES, whole_seconds=True, warmup=0, **shared), **engine,
        configurations=tuple(Configuration(m, Settings.of("mariadb"), ("slow_file",)) for m in chosen),
        workload=workload,
        rotate_at=params.positive_number("rotate_at", d("rotate_at", rotate_at)),
        log_size_mb=params.non_negative_int("log_size_mb", d("log_size_mb", log_size_mb)),
        pause=params.non_negative_number("pause", d("pause", pause)),
        tracer_rate=params.positive_number("tracer_rate", d("tracer_rate", tracer_rate)),
    )
    if study.duration < 3:
        raise ParameterError("duration", study.duration, "a whole number of seconds >= 3 (seconds before and after the rotation)")
    # The rotation, its settle second and one more whole second must end before the final (unused) second.
    latest = study.duration - 2 * study.pause - SETTLE_S - 1.0
    if not 2.0 <= study.rotate_at <= latest:
        raise ParameterError("rotate_at", study.rotate_at,
                             f"seconds in [2, duration - 2 x pause - {SETTLE_S + 1:g}] = [2, {latest:g}]: throughput "
                             "before and after the rotation must both be seen")
    if study.tracer_rate > 2000:
        raise ParameterError("tracer_rate", study.tracer_rate, "at most 2000 statements/s (the tracer must not be the load)")
    return study


# -- the rotation methods ---------------------------------------------------------------------------------

def _copytruncate(path: Path, rotated: Path) -> dict[str, float]:
    """As logrotate does it: copy through a buffer, then truncate the original in place."""
    t = {}
    with open(path, "r+b") as src, open(rotated, "wb") as dst:
        t["copy_start"] = time.monotonic()
        shutil.copyfileobj(src, dst, 1 << 20)
        t["copy_end"] = time.monotonic()
        os.ftruncate(src.fileno(), 0)
        t["truncate_end"] = time.monotonic()
    return t


def rotate(method: str, server: mdb.MariaDBServer, pause: float) -> dict[str, float]:
    """Rotate the server's slow log by ``method``; returns the monotonic time of each step."""
    path, rotated = server.slow_log, rotated_path(server.slow_log)
    t: dict[str, float] = {"start": time.monotonic()}
    if method == "copytruncate":
        t.update(_copytruncate(path, rotated))
    elif method == "rename_flush":
        path.rename(rotated)
        t["renamed"] = time.monotonic()
        server.query("FLUSH SLOW LOGS")
        t["flushed"] = time.monotonic()
    elif method == "rename_flush_disabled":
        path.rename(rotated)
        t["renamed"] = time.monotonic()
        server.query("SET GLOBAL slow_query_log = OFF")
        t["disabled"] = time.monotonic()
        time.sleep(pause)
        server.query("FLUSH SLOW LOGS")
        t["flushed"] = time.monotonic()
        time.sleep(pause)
        server.query("SET GLOBAL slow_query_log = ON")
        t["enabled"] = time.monotonic()
    elif method == "ebook_long_query_time":
        path.rename(rotated)
        t["renamed"] = time.monotonic()
        saved = server.query("SELECT @@global.long_query_time")[0][0]
        server.query("SET GLOBAL long_query_time = 2000")
        t["disabled"] = time.monotonic()
        time.sleep(pause)
        server.query("FLUSH SLOW LOGS")
        t["flushed"] = time.monotonic()
        time.sleep(pause)
        server.query(f"SET GLOBAL long_query_time = {float(saved)}")
        t["enabled"] = time.monotonic()
    elif method != "none":
        raise ParameterError("method", method, METHODS)
    t["end"] = time.monotonic()
    return t


def rotated_path(path: Path) -> Path:
    return path.with_name(path.name + ".1")


# -- the tracer ---------------------------------------------------------------------------------------------

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
        if self.conn is not None:
            try:
                self.conn.close()
            except pymysql.MySQLError:
                pass
            self.conn = None


# -- counting across the two files ---------------------------------------------------------------------

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
    """The runner's Bench for the rotation study (see :class:`logbench.runner.Bench`)."""

    def __init__(self, study: LogRotationStudy, server: mdb.MariaDBServer, sysbench: Sysbench):
        super().__init__(study, server, sysbench, study.workload)
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
        method = run.configuration
        self._mark = self.sink.mark()
        sb = self.sysbench.start(self.study.workload, run.clients, int(seconds), report_interval=1,
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
        return mb.statements_sent(m.extra["queries"], m.failed) + int(m.extra["tracer_sent"])

    def close(self) -> None:
        self.tracer.close()


def _allocated(path: Path) -> int:
    """Bytes on disk: much less than the size would mean the writer kept its offset after a truncate (a sparse hole)."""
    try:
        return path.stat().st_blocks * 512
    except FileNotFoundError:
        return 0


def run(study: LogRotationStudy, *, progress: bool = True) -> common.StudyResult:
    """Start a server, load the data, run the schedule, stop and remove everything again."""
    def start(study, stack):
        server, sb, env = mb.start(study, stack)
        bench = RotationBench(study, server, sb)
        stack.callback(bench.close)
        return bench, env

    return common.run_study(study, start, processed_tables, progress=progress)


# -- summaries ------------------------------------------------------------------------------------------

def expand(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs with the study's own numbers (RotationNumbers) as columns, and the records missing."""
    out = common.measured_columns(runs, RotationNumbers)
    out["records_missing"] = out["log_records_expected"] - out["log_records_received"]
    return out


def summary(runs: pd.DataFrame, baseline: str = BASELINE) -> pd.DataFrame:
    """Per method × clients: tps ± CI and ratio to no rotation (within blocks: stats.cell_ratio); dip, deficit,
    stall, rotation time and record counts, each mean ± CI."""
    measured = expand(records.measured(runs))
    out = stats.summarise(measured, by=["configuration", "clients"], baseline=baseline,
                          also=("dip", "deficit_s", "tracer_stall_ms", "rotation_s", "records_missing", "log_loss",
                                "tracer_lost", "tracer_lost_by_design", "tracer_duplicated", "tracer_sent"),
                          block="repeat")
    order = {m: i for i, m in enumerate(METHODS)}
    return out.sort_values(["configuration", "clients"], key=lambda s: s.map(order) if s.name == "configuration" else s,
                           ignore_index=True)


def timeline(runs: pd.DataFrame) -> pd.DataFrame:
    """Per method, clients and second relative to the rotation: throughput relative to the seconds before,
    mean ± 95 % CI over the repeats."""
    rows = []
    for _, r in expand(records.measured(runs)).iterrows():
        tps = r["extra"]["tps_per_s"]
        start = r["extra"]["steps_s"]["start"]
        ref = r["tps_before"]
        for i, v in enumerate(tps):
            rows.append({"configuration": r["configuration"], "clients": r["clients"], "repeat": r["repeat"],
                         "second": (i + 1) - np.ceil(start), "relative_tps": v / ref if ref else np.nan})
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    out = []
    for key, g in frame.groupby(["configuration", "clients", "second"], sort=False):
        e = stats.mean_ci(g["relative_tps"])
        out.append({"configuration": key[0], "clients": key[1], "second": key[2], "n": e.n,
                    "relative_tps_mean": e.value, "relative_tps_ci_low": e.low, "relative_tps_ci_high": e.high})
    return pd.DataFrame(out)


def timeline_figure(tl: pd.DataFrame, clients: int):
    """Relative throughput per second around the rotation (second 0 holds the rotation's start), mean ± CI."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    from .. import plots

    plots.theme()
    fig, ax = plt.subplots(figsize=(8, 4))
    data = tl[tl["clients"] == clients]
    methods = [m for m in METHODS if m in set(data["configuration"])]
    palette = dict(zip(methods, sns.color_palette("colorblind", len(methods))))
    for m in methods:
        g = data[data["configuration"] == m].sort_values("second")
        ax.plot(g["second"], g["relative_tps_mean"], marker="o", ms=3, color=palette[m], label=m)
        ax.fill_between(g["second"], g["relative_tps_ci_low"], g["relative_tps_ci_high"], color=palette[m], alpha=0.15)
    ax.axvline(0, color="0.3", lw=1, ls="--")
    ax.axhline(1, color="0.6", lw=0.8)
    ax.set_xlabel("second relative to the rotation (0: the second it starts in)")
    ax.set_ylabel("tps / tps before")
    ax.set_title(f"{clients} client(s)")
    ax.legend(fontsize="small", ncol=2)
    fig.tight_layout()
    return fig


def processed_tables(result: common.StudyResult) -> dict[str, pd.DataFrame]:
    return {"summary": summary(result.runs), "runs": records.flatten(expand(result.runs)),
            "timeline": timeline(result.runs)}


def method_table(study: LogRotationStudy) -> pd.DataFrame:
    what = {
        "none": "no rotation: the same analysis at the same instant (placebo)",
        "copytruncate": "copy the file to .1, then truncate it in place (logrotate copytruncate)",
        "rename_flush": "rename to .1, then FLUSH SLOW LOGS (the ebook's advice)",
        "rename_flush_disabled": "rename, SET GLOBAL slow_query_log = OFF, pause, FLUSH SLOW LOGS, pause, ON "
                                 "(the ebook's 'disable during rotation')",
        "ebook_long_query_time": "rename, SET GLOBAL long_query_time = 2000, pause, FLUSH SLOW LOGS, pause, restore "
                                 "(the ebook's literal postrotate script)",
    }
    return pd.DataFrame([{"method": c.name, "what": what[c.name]} for c in study.configurations]).set_index("method")


def design_summary(study: LogRotationStudy) -> dict[str, object]:
    return {"profile": study.profile, "backend": study.backend + (f" ({study.image})" if study.image else ""),
            "workload": f"sysbench {study.workload}", "clients": list(study.clients),
            "repeats": study.repeats, "runs planned": len(study.plan()), "duration (s)": study.duration,
            "rotation at (s)": study.rotate_at, "slow log before rotation (MB of filler)": study.log_size_mb,
            "pause around the flush (s)": study.pause, "tracer (statements/s)": study.tracer_rate,
            "data": f"{study.tables} x {study.table_size} rows", "seed": study.seed, "output": str(study.output_dir)}


def finding(summary: pd.DataFrame) -> str:
    from ..plots import fmt_ci

    lines = []
    for _, r in summary.iterrows():
        if r["configuration"] in (BASELINE, aa_name(BASELINE)):
            lines.append(f"- **`{r['configuration']}`** ({r['clients']} clients, the placebo{' again: the A/A control' if r['configuration'] != BASELINE else ''}): dip {fmt_ci(r['dip_mean'], r['dip_ci_low'], r['dip_ci_high'], int(r['n']))}, "
                         f"deficit {fmt_ci(r['deficit_s_mean'], r['deficit_s_ci_low'], r['deficit_s_ci_high'])} s — the noise floor.")
            continue
        lost = r["tracer_lost_mean"] * r["n"]
        lines.append(
            f"- **`{r['configuration']}`** ({r['clients']} clients): took "
            f"{fmt_ci(1000 * r['rotation_s_mean'], 1000 * r['rotation_s_ci_low'], 1000 * r['rotation_s_ci_high'])} ms; "
            f"dip {fmt_ci(r['dip_mean'], r['dip_ci_low'], r['dip_ci_high'])}, deficit "
            f"{fmt_ci(r['deficit_s_mean'], r['deficit_s_ci_low'], r['deficit_s_ci_high'])} s, tracer stall "
            f"{fmt_ci(r['tracer_stall_ms_mean'], r['tracer_stall_ms_ci_low'], r['tracer_stall_ms_ci_high'])} ms; "
            f"records missing per run {fmt_ci(r['records_missing_mean'], r['records_missing_ci_low'], r['records_missing_ci_high'])}"
            f" (tracer: {lost:.0f} lost in {int(r['n'])} runs"
            + (f", {r['tracer_lost_by_design_mean'] * r['n']:.0f} more while the log was off by design" if r["tracer_lost_by_design_mean"] > 0 else "")
            + f", {r['tracer_duplicated_mean'] * r['n']:.0f} duplicated).")
    return "\n".join(lines)


SPEC = common.StudySpec(
    name=NAME, engine="mariadb", title="Rotating a busy MariaDB slow log", post=POST, baseline=BASELINE,
    notebook="06_log_rotation.ipynb", seed=20121122, committed={"profile": "standard", "backend": "local", "publish": True},
    smoke=({"profile": "smoke", "backend": "local"},), paper_order=3)
