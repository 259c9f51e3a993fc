"""Executing a schedule: for each planned run, apply its settings, run the load, count the log.

The engine-specific parts sit behind :class:`~logbench.measure.bench.Bench` (a PostgreSQL or a MariaDB
study provides one); the loop, the record, the progress bar and the guarantee
that finished runs are on disk before the next one starts live here once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import math
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from . import controls
from ..base import progress as progress_channel, records, stats
from ..base.environment import first_environment
from .bench import Bench, SplitBench, WrappedBench
from .controls import ContextSwitches, IdleState, Placement
from .design import VARIANT_SEP, Adaptive, PlannedRun, Study
from ..base.logsinks import Count, wait_quiet
from ..base.records import Measurement

# The benches' module is re-exported: every study reaches them as runner.Bench, runner.SplitBench.
__all__ = ["Bench", "Measurement", "SplitBench", "WrappedBench", "adaptive_report", "execute", "running_estimates",
           "runs_path", "terminate_as_interrupt", "write_study"]


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


def execute(study: Study, bench: Bench, env_id: str, *, progress: bool = True,
            schedule_key: str | None = None) -> pd.DataFrame:
    """Run every planned run, then any adaptive blocks, appending each record as it finishes;
    returns all records of ``runs.jsonl``.

    The idle-state control is held for the whole execution, not per run: the warm-ups, the
    settings switches and the measured runs then all see the same machine state, and no run
    starts right after the CPUs were let back into deep idle. What actually ran is written to
    ``schedule.json`` (under ``schedule_key`` when a study runs several executions, e.g. cells),
    also after a failure or an interrupt; the adaptive decision and each cell's n and achieved
    half-width to ``adaptive.json``.

    The same study in the same output directory continues where it stopped (write_study checked
    that it is the same study in the same environment): the planned runs already recorded are
    skipped, and the recorded values count towards the adaptive decision.

    Progress goes to the ``LOGBENCH_PROGRESS`` channel only (:mod:`logbench.base.progress`): a line per
    completed block with the runs done / planned, the time left and each arm's running ratio ± its
    relative half-width, and a line per adaptive decision. ``progress`` is accepted for the callers'
    sake and prints nothing: whatever a study prints stays in its executed notebook and HTML report.
    """
    execution = _Execution(study, bench, env_id, schedule_key)
    plan = execution.plan
    try:
        with IdleState(study.idle_state) as idle, Placement(study.placement) as place:
            execution.controls = (idle, place)
            execution.settle_reference()
            t0 = time.monotonic()
            for number, runs in _blocks(plan):
                execution.block(number, runs)
            # A resumed study that had finished its plan has timed nothing yet: assume the nominal run.
            per_run = ((time.monotonic() - t0) / len(plan)) if plan else (study.duration + study.warmup)
            execution.adaptive_blocks(per_run)
    finally:
        execution.close()
    return records.load(execution.path)


class _Execution:
    """One :func:`execute`: where it resumes (the runs already recorded, each cell's measured tps so far, the
    adaptive design's block count), its progress (one reporter, one run counter), running a block, the adaptive
    loop, and the files written at the end."""

    def __init__(self, study: Study, bench: Bench, env_id: str, schedule_key: str | None):
        from . import resume

        self.study, self.bench, self.env_id, self.schedule_key = study, bench, env_id, schedule_key
        self.path = runs_path(study)
        recorded = records.load(self.path)
        if len(recorded) and "seed" in recorded.columns:
            recorded = recorded[recorded["seed"] == study.seed]
        full_plan = study.plan()
        self.plan, resumed = resume.remaining(full_plan, recorded)  # already this schedule's runs only
        self.ran: list[PlannedRun] = [
            PlannedRun(int(r.position), int(r.repeat), str(r.configuration), int(r.clients), bool(r.warmup))
            for r in recorded.itertuples(index=False)]
        self.values: dict[tuple[str, int], list[float]] = {}
        for r in recorded.itertuples(index=False):
            if not r.warmup:
                self.values.setdefault((str(r.configuration), int(r.clients)), []).append(float(r.tps))
        self.adaptive = Adaptive(study, max([len(full_plan)] + [p.position + 1 for p in self.ran]))
        self.adaptive.block = max([study.repeats] + [p.block + 1 for p in self.ran])
        if resumed:
            print(f"{study.name}: resuming; {resumed} runs already recorded in {self.path}, {len(self.plan)} planned "
                  "to go")
        # The terminal's view (LOGBENCH_PROGRESS): one line per completed block with each arm's running
        # estimate, one per adaptive decision. Nothing goes to the notebook (``progress`` is kept for the
        # callers' sake): a bar there stays in the executed notebook and its HTML report.
        self.reporter = progress_channel.Reporter(study.name, schedule_key)
        self.counter = progress_channel.RunCounter(
            self.reporter, len(full_plan), done=len(full_plan) - len(self.plan),
            nominal_s=study.duration + study.warmup + 1, budget_s=study.time_budget_s if study.adaptive else None)
        self.warmup_blocks = max([study.warmup_blocks] + [-p.block for p in self.ran if p.block < 0])
        self.what = "starting"
        self.controls: tuple[IdleState, Placement] | None = None  # the whole execution's, set once held
        self.settle: _Settle | None = None  # the study's settle condition with its reference, once measured

    def settle_reference(self) -> None:
        """Where a study declares a settle condition: the machine's quiet level, read now, before the first run
        of this execution (servers up, no load), which every later wait returns to. A resumed study reads it
        again: the machine it resumes on is the one its remaining runs must return to."""
        if self.study.settle is None:
            return
        read_cpu = _daemon_cpu(self.bench)
        ref = controls.settle_reference(self.study.settle, controls.read_dirty_kb, read_cpu)
        self.settle = _Settle(self.study.settle, ref, read_cpu)

    def one(self, planned: PlannedRun) -> None:
        """Run one planned run, append its record, count it."""
        self.what = self.counter.what(planned.configuration, planned.clients)
        idle, place = self.controls
        own = self.bench.controls_of(self.study.configuration(planned.configuration))
        if own is None:
            run = _one(self.study, self.bench, planned, self.env_id, idle.in_force, place, self.settle)
        else:
            # A study whose controls are its factors (the noise study) sets them per run, so both
            # states interleave in one schedule; each is released before the next run.
            idle_mode, placement = own
            with IdleState(idle_mode) as run_idle, Placement(placement) as run_place:
                run = _one(self.study, self.bench, planned, self.env_id, run_idle.in_force, run_place, self.settle)
        records.append(self.path, run)
        self.counter.finished()
        self.ran.append(planned)
        if not planned.warmup:
            self.values.setdefault((planned.configuration, planned.clients), []).append(run.tps)

    def block(self, number: int, runs: list[PlannedRun]) -> None:
        """Run one block's runs under a heartbeat, then say the block's line."""
        label = "warm-up block" if number < 0 else "block"
        with self.reporter.phase(lambda: f"{label} {_block_no(number, self.warmup_blocks)}: {self.what}",
                                 every=progress_channel.BLOCK_HEARTBEAT_S):
            for planned in runs:
                self.one(planned)
        if number < 0:
            self.counter.block_done(number + self.warmup_blocks + 1, self.warmup_blocks, {}, what=label)
        else:
            self.counter.block_done(number + 1, self.adaptive.block,
                                    running_estimates(self.study, self.adaptive, self.values))

    def adaptive_blocks(self, per_run: float) -> None:
        """More blocks while a cell's interval is wider than the target and the budget lasts (``per_run``: the
        seconds a run took here)."""
        study = self.study
        # A resumed study's extra blocks already spent part of the budget: count them at the run's pace.
        spent = per_run * sum(1 for p in self.ran if p.block >= study.repeats and not p.warmup)
        extra_t0 = time.monotonic() - spent
        while block := self.adaptive.next_block(self.values, elapsed_s=time.monotonic() - extra_t0,
                                                seconds_per_run=per_run):
            wide = len(self.adaptive.wide(self.values))
            self.counter.grown(len(block), f"block {self.adaptive.block} for {wide} cell(s) wider than "
                                           f"±{100 * study.target_halfwidth:.3g} %")
            self.block(block[0].block, list(block))
        if study.adaptive:
            self.reporter.say(f"adaptive blocks stopped: {self.adaptive.stopped}")

    def close(self) -> None:
        """Say what was recorded and write what actually ran (also after a failure or an interrupt)."""
        out = Path(self.study.output_dir)
        self.reporter.say(f"{self.counter.done}/{self.counter.planned} runs recorded in {self.path} · "
                          f"{progress_channel.duration(time.monotonic() - self.counter.t0)}")
        self.reporter.close()
        _write_json(out / "schedule.json", [p.__dict__ for p in self.ran], self.schedule_key)
        _write_json(out / "adaptive.json", adaptive_report(self.study, self.adaptive, self.values), self.schedule_key)


def _blocks(runs: list[PlannedRun]) -> Iterator[tuple[int, list[PlannedRun]]]:
    """The runs grouped by block, in order (a resumed plan may start inside one)."""
    group: list[PlannedRun] = []
    for planned in runs:
        if group and planned.block != group[-1].block:
            yield group[-1].block, group
            group = []
        group.append(planned)
    if group:
        yield group[-1].block, group


def _block_no(number: int, warmup_blocks: int) -> str:
    return f"{number + warmup_blocks + 1}/{warmup_blocks}" if number < 0 else str(number + 1)


def running_estimates(study: Study, adaptive: Adaptive, values: dict) -> dict[str, tuple[float, float]]:
    """Per non-baseline cell (the A/A controls included) with values so far: its label
    (``stderr/none ×4``: configuration/baseline ×clients) -> (ratio to its baseline, the ratio CI's
    relative half-width), as :func:`logbench.measure.design.relative_halfwidth` computes it (nan while
    fewer than two runs of either side)."""
    out = {}
    for c, n in adaptive.pairs:
        if c in study.baselines or (c, n) not in values:
            continue
        base = study.baseline_of(c)
        r = stats.ratio_ci(values[(c, n)], values.get((base, n), ()))
        # a variant's arm and its baseline share the server's label: "pg13 stderr/none", not "pg13/stderr/pg13/none"
        server, sep, arm = c.partition(VARIANT_SEP)
        label = (f"{server} {arm}/{base.partition(VARIANT_SEP)[2]}" if sep and base.startswith(server + sep)
                 else f"{c}/{base}")
        out[f"{label} ×{n}"] = (r.value, stats.relative_halfwidth(r))
    return out


def adaptive_report(study: Study, adaptive: Adaptive, values: dict) -> dict:
    """Per cell: n and the achieved relative ratio-CI half-width; why the extra blocks stopped."""
    hw = adaptive.halfwidths(values)
    return {
        "target_halfwidth": study.target_halfwidth, "time_budget_s": study.time_budget_s,
        "max_repeats": study.max_repeats, "min_repeats": study.repeats,
        "blocks": adaptive.block, "stopped": adaptive.stopped or "interrupted",
        "cells": [{"configuration": c, "clients": n, "n": len(values.get((c, n), ())),
                   "halfwidth": (hw.get((c, n)) if math.isfinite(hw.get((c, n), math.nan)) else None)}
                  for c, n in adaptive.pairs],
    }


def _write_json(path: Path, value: object, key: str | None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if key is not None:
        try:
            whole = json.loads(path.read_text())
        except (OSError, ValueError):
            whole = {}
        if not isinstance(whole, dict):
            whole = {}
        whole[key] = value
        value = whole
    path.write_text(json.dumps(value, indent=1))


@dataclasses.dataclass(frozen=True)
class _Settle:
    condition: controls.Settle
    reference: controls.SettleReference
    read_cpu: object  # () -> the log daemons' cumulative CPU seconds

    def wait(self) -> controls.Settled:
        return controls.settle(self.condition, self.reference, controls.read_dirty_kb, self.read_cpu)


def _daemon_cpu(bench: Bench):
    """The log daemons' cumulative CPU seconds (utime + stime from /proc/<pid>/stat, as the run records read
    them): the syslog daemons and the server's own log collector where it has one (its reading is NaN without)."""
    def read() -> float:
        col = bench.collector_cpu()
        return bench.logger_cpu() + (col if col == col else 0.0)
    return read


def _one(study: Study, bench: Bench, planned: PlannedRun, env_id: str, idle_state: str = "",
         place: Placement | None = None, settle: _Settle | None = None) -> records.Run:
    # The A/A control reaches the bench as the baseline itself; only the record keeps its name.
    cfg = study.bench_configuration(planned.configuration)
    as_run = dataclasses.replace(planned, configuration=cfg.name)
    switch = bench.apply(cfg)
    server_pid = bench.server_pid()
    if place is not None:
        place.pin_server(server_pid)
    sinks = bench.sinks(cfg)
    # After the switch (a restart writes too) and before the warm-up: the wait drains what the previous run
    # left behind, the warm-up then brings this run's own arm to its steady state (its own dirty pages
    # included), which a wait after it would drain again and leave to the measured seconds.
    settled = settle.wait() if settle is not None else None
    if study.warmup > 0:
        bench.warm(as_run, study.warmup)
        # The warm-up's records may still be in a syslog daemon's queue; they must not count for this run.
        wait_quiet(sinks)
    marks = [s.mark() for s in sinks]
    cpu0, log_cpu0 = bench.server_cpu(), bench.logger_cpu()
    col0, col_ctx0 = bench.collector_cpu(), bench.collector_ctx_switches()
    parts0 = dict(bench.logger_cpu_parts())
    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")
    machine0 = controls.snapshot()
    with ContextSwitches(server_pid) as ctx:
        m = bench.measure(as_run, study.duration)
    machine = controls.delta(machine0, controls.snapshot())
    wait_quiet(sinks)
    counts = {s.name: s.count_since(mark) for s, mark in zip(sinks, marks)}
    cpu1, log_cpu1 = bench.server_cpu(), bench.logger_cpu()
    col_cpu = bench.collector_cpu() - col0
    col_vol, col_invol = (b - a for a, b in zip(col_ctx0, bench.collector_ctx_switches()))
    parts = {k: v - parts0[k] for k, v in bench.logger_cpu_parts().items() if k in parts0}
    total = Count(sum(c.records for c in counts.values()), sum(c.lines for c in counts.values()),
                  sum(c.bytes for c in counts.values()))
    expected = bench.expected_records(cfg, as_run, m) * len(sinks)
    secs = m.wall_s if m.wall_s > 0 else study.duration
    steal = float(machine.get("steal_s", math.nan))
    own_env = bench.env_id_of(cfg)  # a bench over several environments names this run's
    return records.Run(
        study=study.name, configuration=planned.configuration, settings=bench.effective_settings(cfg),
        destinations=tuple(s.name for s in sinks), engine=bench.engine, server_version=bench.server_version,
        backend=bench.backend, workload=bench.workload, query_mode=bench.query_mode, scale=bench.scale,
        clients=planned.clients, repeat=planned.block, position=planned.position, warmup=planned.warmup,
        seed=study.seed, started_at=started, duration_s=study.duration, switch=switch.kind, switch_s=switch.seconds,
        **{k: getattr(m, k) for k in records.REPORTED_FIELDS},
        log_records_expected=expected, log_records_received=total.records,
        log_loss=records.loss(expected, total.records) if bench.loss_defined(cfg) else math.nan,
        log_records_by_destination={k: c.records for k, c in counts.items()},
        log_lines=total.lines, log_bytes=total.bytes, log_lines_per_s=total.lines / secs,
        log_bytes_per_s=total.bytes / secs, server_cpu_s=cpu1 - cpu0, logger_cpu_s=log_cpu1 - log_cpu0,
        env_id=env_id if own_env is None else own_env, log_dir_fs=bench.log_dir_fs(),
        idle_state=idle_state, cpuidle_driver=controls.cpuidle_driver(), cpuidle_usage=controls.cpuidle_usage(machine),
        steal_s=steal, server_ctx_involuntary=ctx.involuntary, server_ctx_voluntary=ctx.voluntary,
        high_steal=controls.high_steal(steal, float(machine.get("monotonic_s", secs))),
        quiet_s=settled.seconds if settled is not None else math.nan,
        extra={**m.extra, "placement": place.in_force if place is not None else "none",
               **({"settle": settled.as_record(settle.reference)} if settled is not None else {}),
               **({"logger_cpu_s_by_daemon": parts} if parts else {}),
               **({"collector_cpu_s": col_cpu} if not math.isnan(col_cpu) else {}),
               **({"collector_ctx_voluntary": col_vol, "collector_ctx_involuntary": col_invol}
                  if not math.isnan(col_vol) else {})},
    )


def write_study(study: Study, environment: dict) -> None:
    out = Path(study.output_dir)
    from . import resume

    # an output directory holding another study's or another environment's runs is refused, not mixed
    resume.check(study, environment, out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "study.json").write_text(json.dumps(study.describe(), indent=2, sort_keys=True, default=str))
    (out / "environment.json").write_text(json.dumps(environment, indent=2, sort_keys=True, default=str))
    # The plan as it stands before running; execute() replaces it with what actually ran.
    # The plan as drawn (the first ``repeats`` blocks); schedule.json is what actually ran (execute).
    (out / "plan.json").write_text(json.dumps([p.__dict__ for p in study.plan()], indent=1))


def switches_of(bench: object) -> list[tuple[str, float]]:
    """The settings switches a bench (or each bench behind a SplitBench) made."""
    # A wrapper's ``switches`` would be only the bench running now's (through __getattr__): unwrap to the split.
    while isinstance(bench, WrappedBench) and not isinstance(bench, SplitBench):
        bench = bench.inner
    benches = bench.benches.values() if isinstance(bench, SplitBench) else [bench]
    return [sw for b in benches for sw in b.switches]


def execute_all(study: Study, bench: object, env: dict, progress: bool) -> tuple[pd.DataFrame, list]:
    """The plain schedule: every planned run on one bench (a SplitBench's runs keep their own server's
    environment id; its record is ``{"variants": {label: record}}``)."""
    return execute(study, bench, first_environment(env)["env_id"], progress=progress), switches_of(bench)
