"""One switchback load: the switches at the window edges, the counters read there, pgbench for the whole plan,
the pilot that measures this machine's per-second noise first."""

from __future__ import annotations

import dataclasses
import math
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .. import controls, switchstats
from .design import SwitchbackDesign, Window

# The counters at a window's end are read this long before the next switch (reading them takes a few ms).
EDGE_READ_S = 0.05
# The load runs on this long after the last window: pgbench logs a second once a transaction ends after it, and
# at its stop only the seconds before its threads' last transaction.
TAIL_S = 1.5


def sleep_until(epoch: float) -> None:
    while (left := epoch - time.time()) > 0:
        time.sleep(min(left, 0.2) if left > 0.01 else left)



@dataclass
class Edge:
    """What was read at a window's edges: the switch, and the counters at the switch and at the guard's end."""

    applied: object = None
    at_switch: dict = dataclasses.field(default_factory=dict)
    at_guard: dict = dataclasses.field(default_factory=dict)
    at_end: dict = dataclasses.field(default_factory=dict)
    flush_s: float | None = None  # how long the sync(2) this window waited on took (None: no flush)
    flush_end: float | None = None  # when it returned (epoch s; not yet at the window's end: then): after the guard,
    # the window is late


class Flusher:
    """The guard's sync(2) on a thread of its own. On a machine whose writeback backlog is large, sync(2) blocks for
    as long as the backlog takes (16.3 s once in a CI container after its set-up had dirtied the disk): run inline,
    it held the schedule past pgbench's end. On its thread, a sync longer than the guard makes its window late
    (measured as such, :func:`logbench.measure.switchwindows.late`) and the next edges come on time; a window whose
    switch finds the last sync still running waits on that one rather than queueing another."""

    def __init__(self, flush):
        self._flush = flush
        self._thread: threading.Thread | None = None
        self._began = 0.0
        self._ended: tuple[float, float] | None = None

    def start(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        self._began, self._ended = time.monotonic(), None
        self._thread = threading.Thread(target=self._run, name="switchback-flush", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._flush()
        finally:
            self._ended = (time.monotonic(), time.time())

    def wait(self, until: float) -> None:
        """Wait for the running sync until ``until`` (epoch s) at the latest."""
        if self._thread is not None:
            self._thread.join(timeout=max(0.0, until - time.time()))

    def note(self, edge: Edge) -> None:
        """The sync's duration and end into ``edge``; one still running ends, as far as is known, now."""
        if self._ended is not None:
            edge.flush_s, edge.flush_end = self._ended[0] - self._began, self._ended[1]
        else:
            edge.flush_s, edge.flush_end = time.monotonic() - self._began, time.time()


def counters(bench) -> dict:
    """Cumulative counters read at an edge: server and logger CPU, the machine's steal and idle states."""
    from ...servers import process

    return {"server_cpu_s": process.tree_cpu_seconds(bench.pg.pid, attempts=3), "logger_cpu_s": bench.logger_cpu(),
            **controls.snapshot()}


def switch_windows(windows: Sequence[Window], sb: SwitchbackDesign, first_edge: float, load, edges: list, *,
                   switch, read, on_block=None, at_edge=None, flush=os.sync):
    """The schedule of one load, whatever the server and load tool: at each window's edge (``first_edge`` plus
    whole windows, on the load's clock) ``at_edge(previous edge)``, then ``switch(arm, edge time)``, and
    ``read()`` at the switch, at the guard's end and just before the next edge; with ``sb.flush``, ``flush()``
    (sync(2)) right after the switch, on its own thread (:class:`Flusher`), waited on until the guard's end at
    most. Each finished window's
    :class:`Edge` is appended to ``edges`` as it ends (the caller keeps them when the load is cut short).
    Returns the last block's progress line not yet told (``on_block``'s arguments), or None."""
    pending = None
    flusher = Flusher(flush) if sb.flush else None
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
        if flusher is not None:
            flusher.start()
        if pending is not None:
            # a finished block's progress line, told inside the guard: it must not delay a switch
            on_block(*pending)
            pending = None
        if flusher is not None:
            flusher.wait(start + sb.guard_s)
        sleep_until(start + sb.guard_s)
        edge.at_guard = read()
        # read just before the edge, so the next switch is not delayed by the reading
        sleep_until(start + sb.window_s - EDGE_READ_S)
        edge.at_end = read()
        if flusher is not None:
            flusher.note(edge)
        edges.append(edge)
        if on_block is not None and (w.index + 1 == len(windows) or windows[w.index + 1].block != w.block):
            pending = (w.block, rough_windows(windows[:w.index + 1], first_edge, sb, load.progress()))
    return pending


def run_load(study, bench, clients: int, windows: tuple[Window, ...], *, on_block=None) -> tuple[list, dict]:
    """Run one load: the study's pgbench load (``bench.load_workload``: pgbench -S unless it declares another, timed)
    for the whole plan, a switch at every window edge; returns each window's edges
    (as far as it got) and pgbench's per-second aggregate. An interrupt stops pgbench cleanly (SIGALRM)
    first, so the windows that finished are still returned through the exception's ``partial`` attribute."""
    from ..benches.pg_switchback import Control
    from ...workloads.pgbench import ContinuousLoad

    sb: SwitchbackDesign = study.switchback
    total = sb.lead_in_s + len(windows) * sb.window_s + 6  # the whole seconds before t0, and the tail
    prefix = Path(study.output_dir) / "txlog" / f"sb{clients:03d}_{windows[0].load:02d}"
    edges: list[Edge] = []
    marks = {}
    with Control(bench.pg) as control, ContinuousLoad(bench.pgbench, clients, total, study.query_mode, prefix,
                                                      bench.load_workload) as load:
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



# -- the pilot: what this machine's per-second noise lets the chosen budget reach ------------------------

PILOT_S = 8


def pilot(study, bench, clients: int, seconds: int = PILOT_S) -> dict[str, object]:
    """A short load of the baseline at ``clients``: this machine's per-second noise now, and the half-width it
    predicts for the planned windows (:func:`switchstats.predicted_halfwidth`)."""
    from ...workloads.pgbench import ContinuousLoad

    sb: SwitchbackDesign = study.switchback
    bench.restart_with(study.configuration(study.baseline))
    prefix = Path(study.output_dir) / "txlog" / f"pilot{clients:03d}"
    with ContinuousLoad(bench.pgbench, clients, sb.lead_in_s + seconds + 3, study.query_mode, prefix,
                        bench.load_workload) as load:
        t0 = math.ceil(load.started_at + sb.lead_in_s + 1)
        sleep_until(t0 + seconds)
        per_second = load.stop()
    tps = [per_second.get(s, (0,))[0] for s in range(t0, t0 + seconds)]
    n = sb.loads * sb.blocks  # each arm's windows per level in either layout
    return {"clients": clients, "seconds": seconds, "tps_mean": float(np.mean(tps)),
            "windows_per_arm": n, "measured_s": sb.measured_s,
            **switchstats.predicted_halfwidth(np.log(np.maximum(tps, 1)), sb.measured_s, n, sb.layout)}
