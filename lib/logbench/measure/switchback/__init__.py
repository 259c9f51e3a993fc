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
  with the baseline next to it (the prototypes: adjacency matters); ``williams``: every arm once per block, the
  blocks in the rows of a Williams design, so within a load every arm follows every other equally often (what it
  does not balance: :func:`.design._williams_load`);
- a switch at every window edge, a whole second of the wall clock (pgbench's aggregate intervals are whole
  epoch seconds), made also between arms with equal settings (the baseline and its A/A control), so every
  window starts after the same disturbance; the first ``guard_s`` seconds after it are not measured;
- one immutable record per window (``runs.jsonl``), with its switch's requested and applied time, the
  per-second throughput of the whole window (the carryover analysis reads it), and the records its
  destinations received by the log's own timestamps inside the measured seconds.

Arms whose settings need a restart (logging_collector, wal_level, max_connections) cannot switch inside a
load: they stay on the block design, and a study asking for them here is refused before anything starts.

The package, one concern a module (issue 24: switchback.py had grown to 568 lines, ``execute`` to 117):
:mod:`.design` the parameters and the seeded plans, :mod:`.load` one load (switches, edges, the pilot),
:mod:`.window_runs` one record per window, :mod:`.study` the loads of a study (resume, adaptive, progress).
Every name stays importable from ``logbench.measure.switchback``, as callers, notebooks and tests use it.
"""

from __future__ import annotations

# Tests patch the clock through ``switchback.time`` (the time module itself, so every submodule sees it).
import time  # noqa: F401

from .design import (DESIGNS, LAYOUTS, REPORT_INTERVAL_S, SWITCHBACK_FIELDS, SwitchbackDesign, Window,
                     check_reloadable, design_from, fits_budget, from_profile, load_order, plan_load)
from .load import (EDGE_READ_S, PILOT_S, TAIL_S, Edge, counters, pilot, rough_windows, run_load, sleep_until,
                   switch_windows)
from .study import POSTGRES, Engine, Loads, cell_of, execute, own_windows, recorded_loads, run_pilots
from .window_runs import window_extra, window_records, window_run

__all__ = ["DESIGNS", "EDGE_READ_S", "LAYOUTS", "PILOT_S", "POSTGRES", "REPORT_INTERVAL_S", "SWITCHBACK_FIELDS",
           "TAIL_S", "Edge", "Engine", "Loads", "SwitchbackDesign", "Window", "cell_of", "check_reloadable",
           "counters", "design_from", "execute", "fits_budget", "from_profile", "load_order", "own_windows", "pilot",
           "plan_load", "recorded_loads", "rough_windows", "run_load", "run_pilots", "sleep_until", "switch_windows",
           "window_extra", "window_records", "window_run"]
