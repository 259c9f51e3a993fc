"""The switchback study: every clients level's loads, round by round, resumed from what ``runs.jsonl`` holds,
with the adaptive loads and the progress lines; an :class:`Engine` says which server and load tool."""

from __future__ import annotations

import functools
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ...base import progress as progress_channel, records
from .. import switchstats
from ..switchwindows import estimates, windows_frame
from .design import SwitchbackDesign, fits_budget, load_order, plan_load
from .load import PILOT_S, pilot, run_load
from .window_runs import window_records

@dataclass(frozen=True)
class Engine:
    """What the design needs from a server and its load tool: PostgreSQL with pgbench (this module's functions)
    or MariaDB with sysbench (:mod:`logbench.measure.benches.mariadb_switchback`)."""

    run_load: object
    window_records: object
    pilot: object
    restart: object      # (study, bench): a freshly started server on the baseline's settings
    server_pid: object   # (bench) -> the server's pid (for the placement control)


def _pg_restart(study, bench) -> None:
    bench.restart_with(study.configuration(study.baseline))


POSTGRES = Engine(run_load=lambda *a, **k: run_load(*a, **k), window_records=lambda *a, **k: window_records(*a, **k),
                  pilot=lambda *a, **k: pilot(*a, **k), restart=_pg_restart, server_pid=lambda bench: bench.pg.pid)


def cell_of(study) -> int:
    """A study that runs in cells (04: regime x workload, each its own loads) says which; -1: the whole study."""
    return int(getattr(study, "cell", -1))


def own_windows(study, recorded: pd.DataFrame) -> pd.DataFrame:
    """The recorded windows of this study's cell (all of them for a study without cells)."""
    cell = cell_of(study)
    if cell < 0 or not len(recorded):
        return recorded
    return recorded[recorded["extra"].map(lambda e: isinstance(e, dict) and e.get("cell", -1) == cell)]



def recorded_loads(study, recorded: pd.DataFrame, arms: list[str]) -> set[tuple[int, int]]:
    """Resume: the (clients, load) pairs whose windows are all recorded, which the same study in the same output
    directory skips; a load cut short by an interrupt kept its finished windows and runs again whole."""
    done: set[tuple[int, int]] = set()
    per_load = len(plan_load(arms, study.baseline, study.switchback, study.seed, 0, 0))
    if len(recorded):
        w = windows_frame(recorded, in_time=False)
        for (c, k), g in w.groupby(["clients", "planned_load"]):
            if len(g) >= per_load:
                done.add((int(c), int(k)))
    return done


def run_pilots(study, bench, engine: Engine, reporter: progress_channel.Reporter) -> None:
    """Each level's pilot, once per study (or cell): ``pilot.json`` keeps them, so a resumed study runs none."""
    pilot_file = Path(study.output_dir) / "pilot.json"
    found = json.loads(pilot_file.read_text()) if pilot_file.exists() else []
    if not any(p.get("cell", -1) == cell_of(study) for p in found):
        for clients in study.clients:
            p = {**engine.pilot(study, bench, clients, PILOT_S), **({"cell": cell_of(study)}
                                                                   if cell_of(study) >= 0 else {})}
            found.append(p)
            reporter.say(f"pilot at {clients} client(s): {p['tps_mean']:,.0f} tps, per-second sd "
                         f"{100 * p['sigma_per_s']:.1f} %, lag-1 autocorrelation {p['rho']:.2f}: this noise alone "
                         f"allows ±{100 * p['halfwidth']:.1f} % per arm after {p['windows_per_arm']} windows")
        pilot_file.write_text(json.dumps(found, indent=1))


@dataclass
class Loads:
    """One study's loads as they run, between :func:`execute`'s steps: the position of the next window, the
    adaptive budget's clock, why adaptive loads stopped, and the progress lines they tell."""

    study: object
    bench: object
    engine: Engine
    env_id: str
    path: Path
    arms: list[str]
    reporter: progress_channel.Reporter
    position: int
    t_begin: float
    load_s: list[float] = field(default_factory=list)  # each load this process ran, restart to parsed records
    t_adaptive: float | None = None  # when the first adaptive decision was taken: the budget counts from there
    stopped: str = ""

    @property
    def sb(self) -> SwitchbackDesign:
        return self.study.switchback

    @property
    def seconds_per_load(self) -> float:
        return self.sb.lead_in_s + self.sb.load_seconds(len(self.arms)) + 8  # + restart, stop and parse

    def recorded(self) -> pd.DataFrame:
        return own_windows(self.study, records.load(self.path))

    def widths(self, clients: int) -> dict[str, float]:
        w = windows_frame(self.recorded())
        return switchstats.relative_halfwidths(w[w["clients"] == clients], self.study.baseline)

    def wants_adaptive_load(self, clients: int, load: int) -> bool:
        """Another load only for a level with an arm still wider than the target, in budget: the rule reads
        widths only, never the estimates."""
        study = self.study
        if not study.adaptive:
            self.stopped = "off"
            return False
        wide = {a: h for a, h in self.widths(clients).items() if not h <= study.target_halfwidth}
        if not wide:
            self.stopped = self.stopped or "precise"
            return False
        if study.time_budget_s is not None:
            if self.t_adaptive is None:
                self.t_adaptive = time.monotonic()
            if not fits_budget(time.monotonic() - self.t_adaptive, self.load_s, self.seconds_per_load,
                               study.time_budget_s):
                self.stopped = "time_budget"
                self.reporter.say(f"{clients} client(s): no load {load + 1}: the time budget is spent")
                return False
        self.reporter.say(f"{clients} client(s): load {load + 1} for {len(wide)} arm(s) wider than "
                          f"±{100 * study.target_halfwidth:.3g} %")
        return True

    def run(self, clients: int, load: int, idle, place) -> None:
        """One load: a freshly started server, its windows switched, each finished window recorded (also those of
        a load an interrupt cut short, before the interrupt goes on)."""
        study, bench, sb = self.study, self.bench, self.sb
        windows = plan_load(self.arms, study.baseline, sb, study.seed, clients, load)
        t_load = time.monotonic()
        # Each load on a freshly started server: independent loads, so between-run variance is measured.
        self.engine.restart(study, bench)
        place.pin_server(self.engine.server_pid(bench))
        self.reporter.say(f"{clients} client(s), load {load + 1}: {len(windows)} windows of {sb.window_s} s "
                          f"({progress_channel.duration(sb.lead_in_s + len(windows) * sb.window_s)})")
        on_block = functools.partial(self.on_block, clients, load) if self.reporter.active else None
        try:
            loaded = self.engine.run_load(study, bench, clients, windows, on_block=on_block)
        except BaseException as e:
            partial = getattr(e, "partial", None)
            if partial is not None and partial[0]:
                try:
                    self.record(clients, windows, partial, idle, place)
                except Exception:
                    pass  # e.g. a dead server cannot be asked for its table's rows: what stopped the load is told
            raise
        self.record(clients, windows, loaded, idle, place)
        self.position += len(windows)
        self.load_s.append(time.monotonic() - t_load)
        self.say_estimates(clients, load, sb.blocks)

    def record(self, clients: int, windows, loaded: tuple, idle, place) -> None:
        """``loaded``: what the engine's load returned (edges, per-second reports, marks)."""
        for run in self.engine.window_records(self.study, self.bench, self.env_id, clients, windows, *loaded,
                                              self.position, idle.in_force, place.in_force):
            records.append(self.path, run)

    def on_block(self, clients: int, load: int, b: int, rough: pd.DataFrame) -> None:
        # the finished loads of this level as measured, the running one as pgbench -P shows it
        study = self.study
        w = windows_frame(self.recorded())
        w = pd.concat([w[w["clients"] == clients], rough.assign(load=f"running {load}")], ignore_index=True)
        est = switchstats.arm_ratios(w[["load", "block", "unit", "window", "arm", "tps"]], study.baseline)
        self.reporter.block(b + 1, self.sb.blocks, {f"{r.arm}/{study.baseline_of(r.arm)} ×{clients}":
                                                    (r.ratio, r.halfwidth) for r in est.itertuples()},
                            time.monotonic() - self.t_begin, what=f"{clients} client(s), load {load + 1}: block",
                            extra=" (running estimates: the load's own from pgbench -P)")

    def say_estimates(self, clients: int, load: int, blocks: int) -> None:
        study = self.study
        est = estimates(self.recorded(), study.baseline)
        est = est[est["clients"] == clients] if len(est) else est
        shown = " · ".join(f"{r.arm}/{study.baseline_of(r.arm)} {r.ratio:.3f} ± {r.halfwidth * r.ratio:.3f}"
                           for r in est.itertuples() if r.ratio == r.ratio)
        self.reporter.say(f"{clients} client(s), load {load + 1}: {shown or 'no estimate yet'} after {blocks} "
                          f"block(s) per load · {progress_channel.duration(time.monotonic() - self.t_begin)} elapsed")


def settle_writeback(reporter: progress_channel.Reporter, flush=os.sync) -> float:
    """Write back the machine's dirty pages before the pilots; returns the seconds it took. What ran before the study
    (a package install, a data load, another study) can leave gigabytes dirty: written back inside the first windows,
    it stalled the load and the schedule's own reads (CI's fresh container, 2026-11-28: the pilot's per-second sd
    14.5 % against ~7 %, then a guard's sync(2) of 14 s and pgbench ended before the schedule reached its second
    window). The design's per-window sync then has only the windows' own writes to write."""
    t = time.monotonic()
    flush()
    took = time.monotonic() - t
    if took >= 1.0:
        reporter.say(f"wrote back the machine's dirty pages before the pilots ({took:.1f} s)")
    return took


def execute(study, bench, env: dict, progress: bool = True, engine: Engine = POSTGRES) -> tuple[pd.DataFrame, list]:
    """Every clients level's loads, round by round; returns all window records of ``runs.jsonl``.

    Resume: the same study in the same output directory skips the (clients, load) pairs whose windows are all
    recorded; a load cut short by an interrupt keeps its finished windows (fsynced) and runs again whole.
    """
    from .. import runner
    from ..controls import IdleState, Placement

    sb: SwitchbackDesign = study.switchback
    path = runner.runs_path(study)
    arms = [c.name for c in study.planned_configurations]
    reporter = progress_channel.Reporter(study.name)
    recorded = own_windows(study, records.load(path))
    done = recorded_loads(study, recorded, arms)
    position = int(recorded["position"].max()) + 1 if len(recorded) else 0
    loads = Loads(study, bench, engine, env["env_id"], path, arms, reporter, position, time.monotonic())
    with IdleState(study.idle_state) as idle, Placement(study.placement) as place:
        if sb.flush:
            settle_writeback(reporter)
        run_pilots(study, bench, engine, reporter)
        for clients, load in load_order(study.clients, sb.max_loads, study.seed):
            if (clients, load) in done or (load >= sb.loads and not loads.wants_adaptive_load(clients, load)):
                continue
            loads.run(clients, load, idle, place)
    reporter.say(f"switchback finished{': ' + loads.stopped if loads.stopped else ''}")
    reporter.close()
    runs = own_windows(study, records.load(path))
    # every window began with a reload: the switches the environment table counts
    return runs, [("reload", float(s)) for s in runs["switch_s"]] if len(runs) else []
