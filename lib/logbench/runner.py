"""Executing a schedule: for each planned run, apply its settings, run the load, count the log.

The engine-specific parts sit behind :class:`Bench` (a PostgreSQL or a MariaDB
study provides one); the loop, the record, the progress bar and the guarantee
that finished runs are on disk before the next one starts live here once.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pandas as pd

from . import records
from .design import PlannedRun, Study
from .logsinks import Count, FileSink, wait_quiet
from .settings import Configuration


@dataclass(frozen=True)
class Measurement:
    """What the load tool reported for one run."""

    transactions: int
    failed: int
    tps: float
    latency_mean_ms: float
    latency_stddev_ms: float
    latency_p50_ms: float
    latency_p95_ms: float
    latency_p99_ms: float
    latency_samples: int
    wall_s: float
    threads: int
    extra: dict


class Bench(Protocol):
    """The engine- and workload-specific half of a study."""

    engine: str
    backend: str
    workload: str
    server_version: str
    query_mode: str
    scale: int

    def apply(self, configuration: Configuration): ...  # -> object with .kind, .seconds
    def warm(self, run: PlannedRun, seconds: float) -> None: ...
    def measure(self, run: PlannedRun, seconds: float) -> Measurement: ...
    def sinks(self, configuration: Configuration) -> list[FileSink]: ...
    def expected_records(self, configuration: Configuration, run: PlannedRun, m: Measurement) -> int: ...
    def server_cpu(self) -> float: ...
    def logger_cpu(self) -> float: ...
    def effective_settings(self, configuration: Configuration) -> dict: ...
    def log_dir_fs(self) -> str: ...
    # Optional: env_id_of(configuration) -> str, for a bench that spans several environments.


class SplitBench:
    """Several benches behind one schedule: a configuration named ``label/name`` runs on bench ``label``.

    Interleaving two servers (local vs container, two versions) in one schedule lets the machine's
    drift fall on both alike; each run keeps the environment id of the bench that ran it.
    """

    SEP = "/"

    def __init__(self, benches: dict, envs: dict[str, dict]):
        self.benches, self.envs = benches, envs
        self.current = next(iter(benches.values()))

    def __getattr__(self, name: str):
        # engine, workload, query_mode, scale, backend, server_version: those of the bench running now.
        return getattr(self.current, name)

    def _bench(self, name: str):
        return self.benches[name.partition(self.SEP)[0]]

    def apply(self, configuration: Configuration):
        self.current = self._bench(configuration.name)
        return self.current.apply(configuration)

    def warm(self, run: PlannedRun, seconds: float) -> None:
        self._bench(run.configuration).warm(run, seconds)

    def measure(self, run: PlannedRun, seconds: float) -> Measurement:
        return self._bench(run.configuration).measure(run, seconds)

    def sinks(self, configuration: Configuration) -> list[FileSink]:
        return self._bench(configuration.name).sinks(configuration)

    def expected_records(self, configuration: Configuration, run: PlannedRun, m: Measurement) -> int:
        return self._bench(configuration.name).expected_records(configuration, run, m)

    def effective_settings(self, configuration: Configuration) -> dict:
        return self._bench(configuration.name).effective_settings(configuration)

    def env_id_of(self, configuration: Configuration) -> str:
        return self.envs[configuration.name.partition(self.SEP)[0]]["env_id"]


def runs_path(study: Study) -> Path:
    return Path(study.output_dir) / "runs.jsonl"


@contextlib.contextmanager
def terminate_as_interrupt():
    """Turn SIGTERM (papermill or a kernel shutdown) into KeyboardInterrupt so teardown runs.

    Only the first SIGTERM or SIGINT interrupts: papermill's kernel manager follows its interrupt with
    a SIGTERM 2.5 s later, and a second KeyboardInterrupt raised inside the teardown would cut it short.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stopping = []

    def handler(signum, frame):
        if stopping:
            return
        stopping.append(signum)
        raise KeyboardInterrupt(f"signal {signum}")

    old = signal.signal(signal.SIGTERM, handler)
    old_int = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
        signal.signal(signal.SIGINT, old_int)


def execute(study: Study, bench: Bench, env_id: str, *, progress: bool = True) -> pd.DataFrame:
    """Run every planned run, appending each record as it finishes; returns all records."""
    from . import resume

    path = runs_path(study)
    # the same study in the same output directory continues where it stopped (write_study checked it is the same)
    plan, resumed = resume.remaining(study.plan(), records.load(path), seed=study.seed)
    if resumed:
        print(f"{study.name}: resuming; {resumed} runs already recorded in {path}, {len(plan)} to go")
    bar = None
    if progress:
        from tqdm.auto import tqdm

        # Few updates: the bar is saved in the executed notebook, one line per refresh.
        bar = tqdm(total=len(plan), desc=study.name, unit="run", mininterval=10)
    try:
        for planned in plan:
            records.append(path, _one(study, bench, planned, env_id))
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return records.load(path)


def _one(study: Study, bench: Bench, planned: PlannedRun, env_id: str) -> records.Run:
    cfg = study.configuration(planned.configuration)
    switch = bench.apply(cfg)
    sinks = bench.sinks(cfg)
    if study.warmup > 0:
        bench.warm(planned, study.warmup)
        # The warm-up's records may still be in a syslog daemon's queue; they must not count for this run.
        wait_quiet(sinks)
    marks = [s.mark() for s in sinks]
    cpu0, log_cpu0 = bench.server_cpu(), bench.logger_cpu()
    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")
    m = bench.measure(planned, study.duration)
    wait_quiet(sinks)
    counts = {s.name: s.count_since(mark) for s, mark in zip(sinks, marks)}
    cpu1, log_cpu1 = bench.server_cpu(), bench.logger_cpu()
    total = Count(sum(c.records for c in counts.values()), sum(c.lines for c in counts.values()),
                  sum(c.bytes for c in counts.values()))
    expected = bench.expected_records(cfg, planned, m) * len(sinks)
    secs = m.wall_s if m.wall_s > 0 else study.duration
    return records.Run(
        study=study.name, configuration=cfg.name, settings=bench.effective_settings(cfg),
        destinations=tuple(s.name for s in sinks), engine=bench.engine, server_version=bench.server_version,
        backend=bench.backend, workload=bench.workload, query_mode=bench.query_mode, scale=bench.scale,
        clients=planned.clients, threads=m.threads, repeat=planned.block, position=planned.position,
        warmup=planned.warmup, seed=study.seed, started_at=started, duration_s=study.duration, wall_s=m.wall_s,
        switch=switch.kind, switch_s=switch.seconds,
        transactions=m.transactions, failed=m.failed, tps=m.tps, latency_mean_ms=m.latency_mean_ms,
        latency_stddev_ms=m.latency_stddev_ms, latency_p50_ms=m.latency_p50_ms, latency_p95_ms=m.latency_p95_ms,
        latency_p99_ms=m.latency_p99_ms, latency_samples=m.latency_samples,
        log_records_expected=expected, log_records_received=total.records,
        log_loss=records.loss(expected, total.records),
        log_records_by_destination={k: c.records for k, c in counts.items()},
        log_lines=total.lines, log_bytes=total.bytes, log_lines_per_s=total.lines / secs,
        log_bytes_per_s=total.bytes / secs, server_cpu_s=cpu1 - cpu0, logger_cpu_s=log_cpu1 - log_cpu0,
        env_id=getattr(bench, "env_id_of", lambda c: env_id)(cfg), log_dir_fs=bench.log_dir_fs(), extra=m.extra,
    )


def write_study(study: Study, environment: dict) -> None:
    out = Path(study.output_dir)
    from . import resume

    # an output directory holding another study's or another environment's runs is refused, not mixed
    resume.check(study, environment, out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "study.json").write_text(json.dumps(study.describe(), indent=2, sort_keys=True, default=str))
    (out / "environment.json").write_text(json.dumps(environment, indent=2, sort_keys=True, default=str))
    (out / "schedule.json").write_text(json.dumps([p.__dict__ for p in study.plan()], indent=1))
