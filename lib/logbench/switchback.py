"""The switchback design: every arm inside one continuous load, switched at whole-second window edges.

Why (issue 21, notebook 00): on this 2-core VM a separate 4 s run's mean varies ~9 % from run to run, four
times what its seconds' own noise predicts; comparing configurations inside *one* continuous load, in
adjacent windows, removes that per-run part and the slow drift (switchback experiments: Bojinov, Simchi-Levi &
Zhao, Management Science 2023; in-run comparison as in Coz, SOSP 2015; repetitions where the variance is:
Kalibera & Jones, ISMM 2013). What remains is the host's interference inside a busy vCPU, which no design
removes.

Shape, per clients level:

- ``loads`` independent loads (the server restarted before each; at least two, so the variance between runs
  enters the interval), more while an arm is wider than ``target_halfwidth`` (adaptive, up to ``max_loads``,
  within ``time_budget_s``: the rule reads widths only);
- each load: pgbench for its whole length, after a lead-in; ``blocks`` blocks of windows; layout
  ``permutation``: every arm once per block in a seeded random order; ``paired``: every non-baseline arm
  in a (baseline, arm) pair of adjacent windows, in random order and random AB/BA, so each arm is compared
  with the baseline next to it (the prototypes: adjacency matters);
- a switch at every window edge, a whole second of the wall clock (pgbench's aggregate intervals are whole
  epoch seconds), made also between arms with equal settings (the baseline and its A/A control), so every
  window starts after the same disturbance; the first ``guard_s`` seconds after it are not measured;
- one immutable record per window (``runs.jsonl``), with its switch's requested and applied time, the
  per-second throughput of the whole window (the carryover analysis reads it), and the records its
  destinations received by the log's own timestamps inside the measured seconds.

Arms whose settings need a restart (logging_collector, wal_level, max_connections) cannot switch inside a
load: they stay on the block design, and a study asking for them here is refused before anything starts.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from . import controls, params, progress as progress_channel, records, switchstats
from .errors import ParameterError
from .switchwindows import estimates, windows_frame

LAYOUTS = ("permutation", "paired")
DESIGNS = ("blocks", "switchback")
# pgbench reports its transactions per whole second (--aggregate-interval=1): a window's measured part must
# hold at least one whole interval.
REPORT_INTERVAL_S = 1
# The counters at a window's end are read this long before the next switch (reading them takes a few ms).
EDGE_READ_S = 0.05
# The load runs on this long after the last window: pgbench logs a second once a transaction ends after it, and
# at its stop only the seconds before its threads' last transaction.
TAIL_S = 1.5


@dataclass(frozen=True)
class SwitchbackDesign:
    """How arms are switched inside a load; checked on construction (ParameterError naming the parameter)."""

    window_s: int
    guard_s: int
    layout: str = "permutation"
    blocks: int = 6           # blocks per load
    loads: int = 2            # independent loads per clients level, at least
    max_loads: int = 2        # adaptive: up to this many while an arm is wider than the target
    lead_in_s: int = 3        # the load runs this long before the first window (connections, caches)
    # sync(2) inside each guard: the page cache a logging window left dirty is written back there, not in later
    # windows. Without it, at 4 clients on 2 cores a 4 s stderr window left the next 5-10 s 11-26 % slower
    # (benchmarks/pg_carryover.py, 3 runs of 3-4 arm segments each); with it, -0.5 % [-3.0, +2.1] in the 5 s after
    flush: bool = True

    def __post_init__(self):
        for name in ("window_s", "blocks", "loads", "max_loads"):
            params.positive_int(name, getattr(self, name))
        for name in ("guard_s", "lead_in_s"):
            params.non_negative_int(name, getattr(self, name))
        params.choice("layout", self.layout, LAYOUTS)
        if self.window_s - self.guard_s < REPORT_INTERVAL_S:
            raise ParameterError("window_s", self.window_s,
                                 f"a whole number of seconds longer than guard_s ({self.guard_s}) by at least the "
                                 f"load tool's report interval ({REPORT_INTERVAL_S} s): the window must keep a "
                                 "measured second after its guard")
        if not isinstance(self.flush, bool):
            raise ParameterError("flush", self.flush, "True or False")
        if self.max_loads < self.loads:
            raise ParameterError("max_loads", self.max_loads, f"a whole number >= loads ({self.loads})")

    @property
    def measured_s(self) -> int:
        return self.window_s - self.guard_s

    def windows_per_block(self, arms: int) -> int:
        return arms if self.layout == "permutation" else 2 * (arms - 1)

    def load_seconds(self, arms: int) -> int:
        """How long one load's windows take (without the lead-in)."""
        return self.blocks * self.windows_per_block(arms) * self.window_s

    def as_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def design_from(design: object, *, window_s: object, guard_s: object, layout: object, blocks: object,
                loads: object, max_loads: object, lead_in_s: object, flush: object = None) -> SwitchbackDesign | None:
    """The notebook's ``design`` parameter and its switchback parameters -> a design, or None for blocks."""
    params.choice("design", design, DESIGNS)
    if design == "blocks":
        return None
    loads = params.positive_int("loads", loads)
    return SwitchbackDesign(window_s=params.positive_int("window_s", window_s),
                            guard_s=params.non_negative_int("guard_s", guard_s), layout=layout,
                            blocks=params.positive_int("blocks", blocks), loads=loads,
                            max_loads=loads if max_loads is None else max_loads,
                            lead_in_s=params.non_negative_int("lead_in_s", lead_in_s),
                            flush=True if flush is None else flush)


SWITCHBACK_FIELDS = ("window_s", "guard_s", "layout", "blocks", "loads", "max_loads", "flush")


def from_profile(profile: dict, *, design: object, lead_in_s: float, **given: object) -> SwitchbackDesign | None:
    """The design from a study's parameters, each None taking the profile's; None for the block design."""
    design = profile.get("design", "blocks") if design is None else design
    values = {k: profile.get(k) if given.get(k) is None else given[k] for k in SWITCHBACK_FIELDS}
    if design == "switchback":
        missing = [k for k in SWITCHBACK_FIELDS if values[k] is None and k not in ("max_loads", "flush")]
        if missing:
            raise ParameterError(missing[0], None, "a value: this profile has none for the switchback design")
    return design_from(design, lead_in_s=int(round(lead_in_s)), **values)


def check_reloadable(configurations: Sequence, contexts: dict[str, str]) -> None:
    """ParameterError naming ``design`` when an arm changes a setting only a restart applies."""
    needs_restart = sorted({f"{c.name}: {k}" for c in configurations for k in c.settings
                            if contexts.get(k) == "postmaster"})
    if needs_restart:
        raise ParameterError("design", "switchback",
                             "'blocks' for arms that change a setting only a restart applies "
                             f"({', '.join(needs_restart)}): a switch inside a running load cannot restart it")


@dataclass(frozen=True)
class Window:
    load: int
    block: int
    unit: int     # the comparison unit: the block ('permutation') or the pair ('paired')
    index: int    # order in its load
    arm: str


def plan_load(arms: Sequence[str], baseline: str, design: SwitchbackDesign, seed: int, clients: int,
              load: int) -> tuple[Window, ...]:
    """One load's windows, from a generator seeded by (seed, clients, load): the same study plans the same
    windows again (resume), and no load's order depends on another's."""
    rng = np.random.default_rng([int(seed), int(clients), int(load), 0x5B])
    out: list[Window] = []
    unit = 0
    others = [a for a in arms if a != baseline]
    for block in range(design.blocks):
        if design.layout == "permutation":
            for i in rng.permutation(len(arms)):
                out.append(Window(load, block, block, len(out), arms[int(i)]))
            continue
        for i in rng.permutation(len(others)):
            pair = [baseline, others[int(i)]]
            if rng.random() < 0.5:
                pair.reverse()
            for arm in pair:
                out.append(Window(load, block, unit, len(out), arm))
            unit += 1
    return tuple(out)


def load_order(clients: Sequence[int], rounds: int, seed: int) -> list[tuple[int, int]]:
    """(clients, load) pairs: round r runs every level's load r, the levels in a seeded random order, so the
    machine's drift over the study falls on every level alike."""
    rng = np.random.default_rng([int(seed), 0x0AD5])
    out = []
    for r in range(rounds):
        out += [(int(clients[int(i)]), r) for i in rng.permutation(len(clients))]
    return out


def fits_budget(spent_s: float, loads_s: Sequence[float], nominal_s: float, budget_s: float) -> bool:
    """Whether one more adaptive load fits ``time_budget_s``: the adaptive part's seconds so far plus a load as long
    as the longest this study ran (the nominal length, windows + lead-in + restart, until one has run). The planned
    loads are not counted against it: on this VM a load took ~30 % longer than its windows (restart, pgbench's
    set-up, parsing), and a budget taken from the nominal length was spent before the first adaptive load."""
    expected = max(loads_s) if len(loads_s) else nominal_s
    return spent_s + expected <= budget_s


def sleep_until(epoch: float) -> None:
    while (left := epoch - time.time()) > 0:
        time.sleep(min(left, 0.2) if left > 0.01 else left)


# -- one load -------------------------------------------------------------------------------------------

@dataclass
class Edge:
    """What was read at a window's edges: the switch, and the counters at the switch and at the guard's end."""

    applied: object = None
    at_switch: dict = dataclasses.field(default_factory=dict)
    at_guard: dict = dataclasses.field(default_factory=dict)
    at_end: dict = dataclasses.field(default_factory=dict)
    flush_s: float | None = None  # how long the guard's sync(2) took (None: no flush)
    flush_end: float | None = None  # when it returned (epoch s): after the guard, the window is late


def counters(bench) -> dict:
    """Cumulative counters read at an edge: server and logger CPU, the machine's steal and idle states."""
    from .servers import process

    return {"server_cpu_s": process.tree_cpu_seconds(bench.pg.pid, attempts=3), "logger_cpu_s": bench.logger_cpu(),
            **controls.snapshot()}


def switch_windows(windows: Sequence[Window], sb: SwitchbackDesign, first_edge: float, load, edges: list, *,
                   switch, read, on_block=None, at_edge=None, flush=os.sync):
    """The schedule of one load, whatever the server and load tool: at each window's edge (``first_edge`` plus
    whole windows, on the load's clock) ``at_edge(previous edge)``, then ``switch(arm, edge time)``, and
    ``read()`` at the switch, at the guard's end and just before the next edge; with ``sb.flush``, ``flush()``
    (sync(2)) right after the switch, inside the guard. Each finished window's
    :class:`Edge` is appended to ``edges`` as it ends (the caller keeps them when the load is cut short).
    Returns the last block's progress line not yet told (``on_block``'s arguments), or None."""
    pending = None
    for w in windows:
        edge = Edge()
        start = first_edge + w.index * sb.window_s
        sleep_until(start)
        if not load.running():
            raise load.ended_early(first_edge + len(windows) * sb.window_s)
        if at_edge is not None and edges:
            at_edge(edges[-1])
        edge.applied = switch(w.arm, start)
        edge.at_switch = read()
        if sb.flush:
            t = time.monotonic()
            flush()
            edge.flush_s, edge.flush_end = time.monotonic() - t, time.time()
        if pending is not None:
            # a finished block's progress line, told inside the guard: it must not delay a switch
            on_block(*pending)
            pending = None
        sleep_until(start + sb.guard_s)
        edge.at_guard = read()
        # read just before the edge, so the next switch is not delayed by the reading
        sleep_until(start + sb.window_s - EDGE_READ_S)
        edge.at_end = read()
        edges.append(edge)
        if on_block is not None and (w.index + 1 == len(windows) or windows[w.index + 1].block != w.block):
            pending = (w.block, rough_windows(windows[:w.index + 1], first_edge, sb, load.progress()))
    return pending


def run_load(study, bench, clients: int, windows: tuple[Window, ...], *, on_block=None) -> tuple[list, dict]:
    """Run one load: pgbench for the whole plan, a switch at every window edge; returns each window's edges
    (as far as it got) and pgbench's per-second aggregate. An interrupt stops pgbench cleanly (SIGALRM)
    first, so the windows that finished are still returned through the exception's ``partial`` attribute."""
    from .benches.pg_switchback import Control
    from .workloads.pgbench import ContinuousLoad

    sb: SwitchbackDesign = study.switchback
    total = sb.lead_in_s + len(windows) * sb.window_s + 6  # the whole seconds before t0, and the tail
    prefix = Path(study.output_dir) / "txlog" / f"sb{clients:03d}_{windows[0].load:02d}"
    edges: list[Edge] = []
    marks = {}
    with Control(bench.pg) as control, ContinuousLoad(bench.pgbench, clients, total, study.query_mode,
                                                      prefix) as load:
        t0 = math.ceil(load.started_at + sb.lead_in_s + 1)
        try:
            marks = {s.name: s.mark() for s in bench.all_sinks()}
            pending = switch_windows(windows, sb, t0, load, edges, on_block=on_block, read=lambda: counters(bench),
                                     switch=lambda arm, at: control.apply(study.bench_configuration(arm).settings,
                                                                          requested=at))
            # back to the baseline, as the server's own record of what it runs says (blocks may follow)
            base = study.bench_configuration(study.baseline).settings
            end = t0 + len(windows) * sb.window_s
            sleep_until(end)
            control.apply(base, requested=end)
            bench.pg.applied = base
            # pgbench writes a second's line once a transaction ends after it: let the last window's last second out
            sleep_until(end + TAIL_S)
            per_second = load.stop()
            if pending is not None:
                on_block(*pending)
        except BaseException as e:
            e.partial = (edges, load.stop() if load.proc is not None else {}, marks)  # type: ignore[attr-defined]
            raise
    return edges, per_second, marks


def rough_windows(windows: Sequence[Window], t0: int, sb: SwitchbackDesign,
                  progress: list[tuple[float, float]]) -> pd.DataFrame:
    """The windows so far with a rough throughput from pgbench -P (intervals that end inside the measured
    seconds, by the clock of pgbench's start): what a progress line can show while the load runs."""
    rows = []
    for w in windows:
        start = t0 + w.index * sb.window_s
        tps = [v for end, v in progress if start + sb.guard_s + 0.8 <= end <= start + sb.window_s + 0.2]
        if tps:
            rows.append({"load": w.load, "block": w.block, "unit": w.unit, "window": w.index, "arm": w.arm,
                         "tps": float(np.mean(tps))})
    return pd.DataFrame(rows, columns=["load", "block", "unit", "window", "arm", "tps"])


def window_extra(sb: SwitchbackDesign, windows: Sequence[Window], w: Window, e: Edge, first_position: int,
                 placement: str, **own: object) -> dict:
    """A window record's design fields (what :mod:`logbench.switchwindows` reads), whatever the engine, and
    ``own``: the engine's per-second throughput, records in the guard, other arms' records and the like."""
    return {"design": "switchback", "layout": sb.layout, "load": w.load, "block": w.block, "unit": w.unit,
            "window": w.index, "attempt": first_position, "prev_arm": windows[w.index - 1].arm if w.index else None,
            "window_s": sb.window_s, "guard_s": sb.guard_s, "switch_requested": e.applied.requested,
            "switch_sent": e.applied.sent, "switch_applied": e.applied.applied,
            "guard_server_cpu_s": e.at_guard["server_cpu_s"] - e.at_switch["server_cpu_s"],
            "guard_logger_cpu_s": e.at_guard["logger_cpu_s"] - e.at_switch["logger_cpu_s"],
            "flush_s": e.flush_s, "flush_end": e.flush_end,
            "placement": placement, **own}


def window_records(study, bench, env_id: str, clients: int, windows: Sequence[Window], edges: Sequence[Edge],
                   per_second: dict, marks: dict, first_position: int, idle_state: str, placement: str) -> list:
    """One :class:`records.Run` per finished window of a load: throughput and latency from pgbench's per-second
    aggregate over the measured seconds, records by the log's own timestamps in the same seconds."""
    from .benches.pg_switchback import records_per_second

    from .logsinks import wait_quiet

    sb: SwitchbackDesign = study.switchback
    sinks = {s.name: s for s in bench.all_sinks()}
    wait_quiet(list(sinks.values()))  # the collector and the daemons may still be writing the last window's records
    counted = {name: records_per_second(s.path, marks.get(name, 0), s.records) for name, s in sinks.items()}
    out = []
    for w, e in zip(windows, edges):
        start = int(round(e.applied.requested))
        measured = range(start + sb.guard_s, start + sb.window_s)
        if any(s not in per_second for s in measured):
            continue  # pgbench never reported a second of it (the load was stopped right after): not measured
        rows = [per_second[s] for s in measured]
        tx = sum(r[0] for r in rows)
        lat, lat2 = sum(r[1] for r in rows), sum(r[2] for r in rows)
        secs = float(len(measured))
        cfg = study.bench_configuration(w.arm)
        own = [s.name for s in bench.sinks(cfg)]
        received = {n: sum(counted[n].records[s] for s in measured) for n in own}
        foreign = {n: sum(c.records[s] for s in measured) for n, c in counted.items() if n not in own}
        lines = sum(counted[n].lines[s] for n in own for s in measured)
        nbytes = sum(counted[n].bytes[s] for n in own for s in measured)
        in_guard = sum(counted[n].records[s] for n in own for s in range(start, start + sb.guard_s))
        # seconds inside the load: its connections and set-up statements came before the first window
        expected = cfg.expected_records(statements=tx, transactions=tx, connections=0, runs=0) * len(own)
        mean_us = lat / tx if tx else math.nan
        var_us = (lat2 / tx - mean_us**2) if tx else math.nan
        machine = controls.delta(e.at_guard, e.at_end)
        steal = float(machine.get("steal_s", math.nan))
        got = sum(received.values())
        out.append(records.Run(
            study=study.name, configuration=w.arm, settings=bench.effective_settings(cfg), destinations=tuple(own),
            engine=bench.engine, server_version=bench.server_version, backend=bench.backend,
            workload="pgbench -S (one continuous load)", query_mode=bench.query_mode, scale=bench.scale,
            clients=clients, threads=clients, repeat=w.load * sb.blocks + w.block, position=first_position + w.index,
            warmup=False, seed=study.seed,
            started_at=dt.datetime.fromtimestamp(start, dt.timezone.utc).isoformat(timespec="milliseconds"),
            duration_s=secs, wall_s=secs, switch="reload", switch_s=e.applied.latency_s,
            transactions=tx, failed=sum(r[3] for r in rows), tps=tx / secs,
            latency_mean_ms=mean_us / 1000, latency_stddev_ms=math.sqrt(max(var_us, 0.0)) / 1000,
            latency_p50_ms=math.nan, latency_p95_ms=math.nan, latency_p99_ms=math.nan, latency_samples=0,
            log_records_expected=expected, log_records_received=got,
            # Records are placed by their own timestamps, transactions by pgbench's clock at their end: at the
            # two edges of the measured seconds a few records can fall on the other side (see notebook 02).
            log_loss=records.loss(expected, got) if own else math.nan,
            log_records_by_destination=received, log_lines=lines, log_bytes=nbytes,
            log_lines_per_s=lines / secs, log_bytes_per_s=nbytes / secs,
            server_cpu_s=e.at_end["server_cpu_s"] - e.at_guard["server_cpu_s"],
            logger_cpu_s=e.at_end["logger_cpu_s"] - e.at_guard["logger_cpu_s"],
            env_id=env_id, log_dir_fs=bench.log_dir_fs(), idle_state=idle_state,
            cpuidle_driver=controls.cpuidle_driver(), cpuidle_usage=controls.cpuidle_usage(machine), steal_s=steal,
            high_steal=controls.high_steal(steal, secs),
            extra=window_extra(sb, windows, w, e, first_position, placement,
                               per_second_tps=[per_second.get(s, (0,))[0] for s in range(start, start + sb.window_s)],
                               records_in_guard=in_guard, foreign_records=foreign),
        ))
    return out


# -- the pilot: what this machine's per-second noise lets the chosen budget reach ------------------------

PILOT_S = 8


def pilot(study, bench, clients: int, seconds: int = PILOT_S) -> dict[str, object]:
    """A short load of the baseline at ``clients``: this machine's per-second noise now, and the half-width it
    predicts for the planned windows (:func:`switchstats.predicted_halfwidth`)."""
    from .workloads.pgbench import ContinuousLoad

    sb: SwitchbackDesign = study.switchback
    bench.restart_with(study.configuration(study.baseline))
    prefix = Path(study.output_dir) / "txlog" / f"pilot{clients:03d}"
    with ContinuousLoad(bench.pgbench, clients, sb.lead_in_s + seconds + 3, study.query_mode, prefix) as load:
        t0 = math.ceil(load.started_at + sb.lead_in_s + 1)
        sleep_until(t0 + seconds)
        per_second = load.stop()
    tps = [per_second.get(s, (0,))[0] for s in range(t0, t0 + seconds)]
    n = sb.loads * sb.blocks  # each arm's windows per level in either layout
    return {"clients": clients, "seconds": seconds, "tps_mean": float(np.mean(tps)),
            "windows_per_arm": n, "measured_s": sb.measured_s,
            **switchstats.predicted_halfwidth(np.log(np.maximum(tps, 1)), sb.measured_s, n, sb.layout)}


# -- the study -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Engine:
    """What the design needs from a server and its load tool: PostgreSQL with pgbench (this module's functions)
    or MariaDB with sysbench (:mod:`logbench.benches.mariadb_switchback`)."""

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


def execute(study, bench, env: dict, progress: bool = True, engine: Engine = POSTGRES) -> tuple[pd.DataFrame, list]:
    """Every clients level's loads, round by round; returns all window records of ``runs.jsonl``.

    Resume: the same study in the same output directory skips the (clients, load) pairs whose windows are all
    recorded; a load cut short by an interrupt keeps its finished windows (fsynced) and runs again whole.
    """
    from . import runner
    from .controls import IdleState, Placement

    sb: SwitchbackDesign = study.switchback
    env_id = env["env_id"]
    path = runner.runs_path(study)
    arms = [c.name for c in study.planned_configurations]
    reporter = progress_channel.Reporter(study.name)
    recorded = own_windows(study, records.load(path))
    done: set[tuple[int, int]] = set()
    per_load = len(plan_load(arms, study.baseline, sb, study.seed, 0, 0))
    if len(recorded):
        w = windows_frame(recorded, in_time=False)
        for (c, k), g in w.groupby(["clients", "planned_load"]):
            if len(g) >= per_load:
                done.add((int(c), int(k)))
    position = int(recorded["position"].max()) + 1 if len(recorded) else 0
    t_begin = time.monotonic()
    seconds_per_load = sb.lead_in_s + sb.load_seconds(len(arms)) + 8  # + restart, stop and parse
    load_s: list[float] = []  # each load this process ran, as long as it took (restart to parsed records)
    t_adaptive = None  # when the first adaptive decision was taken: the budget counts from there
    stopped = ""

    def widths(clients: int) -> dict[str, float]:
        w = windows_frame(own_windows(study, records.load(path)))
        return switchstats.relative_halfwidths(w[w["clients"] == clients], study.baseline)

    def say_estimates(clients: int, load: int, blocks: int) -> None:
        est = estimates(own_windows(study, records.load(path)), study.baseline)
        est = est[est["clients"] == clients] if len(est) else est
        shown = " · ".join(f"{r.arm}/{study.baseline_of(r.arm)} {r.ratio:.3f} ± {r.halfwidth * r.ratio:.3f}"
                           for r in est.itertuples() if r.ratio == r.ratio)
        reporter.say(f"{clients} client(s), load {load + 1}: {shown or 'no estimate yet'} after {blocks} block(s) "
                     f"per load · {progress_channel.duration(time.monotonic() - t_begin)} elapsed")

    with IdleState(study.idle_state) as idle, Placement(study.placement) as place:
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
        order = load_order(study.clients, sb.max_loads, study.seed)
        for clients, load in order:
            if (clients, load) in done:
                continue
            if load >= sb.loads:
                # adaptive: another load only for a level with an arm still wider than the target, in budget
                if not study.adaptive:
                    stopped = "off"
                    continue
                wide = {a: h for a, h in widths(clients).items() if not h <= study.target_halfwidth}
                if not wide:
                    stopped = stopped or "precise"
                    continue
                if study.time_budget_s is not None:
                    if t_adaptive is None:
                        t_adaptive = time.monotonic()
                    if not fits_budget(time.monotonic() - t_adaptive, load_s, seconds_per_load,
                                       study.time_budget_s):
                        stopped = "time_budget"
                        reporter.say(f"{clients} client(s): no load {load + 1}: the time budget is spent")
                        continue
                reporter.say(f"{clients} client(s): load {load + 1} for {len(wide)} arm(s) wider than "
                             f"±{100 * study.target_halfwidth:.3g} %")
            windows = plan_load(arms, study.baseline, sb, study.seed, clients, load)
            t_load = time.monotonic()
            # Each load on a freshly started server: independent loads, so between-run variance is measured.
            engine.restart(study, bench)
            place.pin_server(engine.server_pid(bench))
            reporter.say(f"{clients} client(s), load {load + 1}: {len(windows)} windows of {sb.window_s} s "
                         f"({progress_channel.duration(sb.lead_in_s + len(windows) * sb.window_s)})")
            def on_block(b: int, rough: pd.DataFrame, clients=clients, load=load) -> None:
                # the finished loads of this level as measured, the running one as pgbench -P shows it
                w = windows_frame(own_windows(study, records.load(path)))
                w = pd.concat([w[w["clients"] == clients], rough.assign(load=f"running {load}")], ignore_index=True)
                est = switchstats.arm_ratios(w[["load", "block", "unit", "window", "arm", "tps"]], study.baseline)
                reporter.block(b + 1, sb.blocks, {f"{r.arm}/{study.baseline_of(r.arm)} ×{clients}":
                                                  (r.ratio, r.halfwidth) for r in est.itertuples()},
                               time.monotonic() - t_begin, what=f"{clients} client(s), load {load + 1}: block",
                               extra=" (running estimates: the load's own from pgbench -P)")

            try:
                edges, per_second, marks = engine.run_load(study, bench, clients, windows,
                                                           on_block=on_block if reporter.active else None)
            except BaseException as e:
                partial = getattr(e, "partial", None)
                if partial is not None and partial[0]:
                    try:
                        for run in engine.window_records(study, bench, env_id, clients, windows, *partial, position,
                                                         idle.in_force, place.in_force):
                            records.append(path, run)
                    except Exception:
                        pass  # e.g. a dead server cannot be asked for its table's rows: what stopped the load is told
                raise
            for run in engine.window_records(study, bench, env_id, clients, windows, edges, per_second, marks, position,
                                             idle.in_force, place.in_force):
                records.append(path, run)
            position += len(windows)
            load_s.append(time.monotonic() - t_load)
            say_estimates(clients, load, sb.blocks)
    reporter.say(f"switchback finished{': ' + stopped if stopped else ''}")
    reporter.close()
    runs = own_windows(study, records.load(path))
    # every window began with a reload: the switches the environment table counts
    return runs, [("reload", float(s)) for s in runs["switch_s"]] if len(runs) else []
