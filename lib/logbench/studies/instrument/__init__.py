"""Study 00: how precise is the instrument on this machine, and what makes it noisy?

Every other study divides one mean throughput by another. Whether a 5 % effect is
visible depends on the run-to-run spread of those means on this 2-core VM, so this
study measures that spread directly and tests the controls that may shrink it:

* **The noise curve.** Long baseline runs (no statement logging) with pgbench's
  per-second progress (``-P 1``): the coefficient of variation of a w-second mean
  for w = 1 … 32 s, the per-second autocorrelation, and the steal time the
  hypervisor took, each under every control, interleaved in seeded random blocks.
* **The controls.** ``free``: the kernel's default CPU idle handling. ``hold``:
  ``/dev/cpu_dma_latency`` held at 0 while measuring, so an idle vCPU does not
  enter a halt state that costs a wake-up on every client round trip (what tuned's
  latency-performance profile and ``pyperf system tune`` do). ``hold_split``: the
  same, with the server pinned to CPU 0 and pgbench to CPU 1.
* **The 1-client anomaly.** Committed 1-client results showed logging *faster*
  than no logging. If that is the idle-state artefact, it must vanish when the
  control is held: none / stderr / syslog at 1 and 4 clients, control free vs
  held, in one interleaved schedule.

Both parts run through the shared runner, so every run is an ordinary run record
(with its steal time, context switches and idle-state counters); a control is a
*variant* label of the configuration (``hold/stderr``), like a backend in study 03.

The study is a package (issue 24): ``spec`` (its declarations, profiles, study types), ``noise`` (the noise curve's
tables, figure and findings), ``anomaly`` (the anomaly test's), ``analysis`` (the processed tables and the paper's
statements), ``design_comparison`` (the designs part, notebook 00's third part), ``session_power`` (how many sessions
per design would tell a 2x difference in efficiency, how many fit the committed budget), ``carryover_check`` (the
baseline after a logging window vs after a same-settings window, over every committed switchback run), ``study``
(define / run). Layered spec <- noise, anomaly <- analysis <- study, no cycle. What the registry, the notebook and the tests call is
re-exported here, every name the module had.
"""

from __future__ import annotations

from . import carryover_check, design_comparison, session_power
from .analysis import designs_tables, findings, write_processed
from .anomaly import anomaly_summary, anomaly_verdict, baseline_by_control, idle_driver
from .noise import (autocorrelation, cv_by_length, cv_ci, cv_figure, finding_floor, finding_run_length,
                    per_run_controls, run_length_table, runs_needed, series_frame)
from .spec import (ANOMALY_CONTROLS, ANOMALY_DESTINATIONS, BASELINE, CONTROLS, LENGTHS, NAME, PROFILES, SKIP_SECONDS,
                   SPEC, ControlledStudy, InstrumentResult, InstrumentStudy)
from .study import ControlledBench, define, design_summary, run

__all__ = [
    "ANOMALY_CONTROLS", "ANOMALY_DESTINATIONS", "BASELINE", "CONTROLS", "ControlledBench", "ControlledStudy",
    "InstrumentResult", "InstrumentStudy", "LENGTHS", "NAME", "PROFILES", "SKIP_SECONDS", "SPEC", "anomaly_summary",
    "anomaly_verdict", "autocorrelation", "baseline_by_control", "cv_by_length", "cv_ci", "cv_figure", "define",
    "idle_driver",
    "carryover_check", "design_comparison", "design_summary", "session_power", "designs_tables", "finding_floor", "finding_run_length", "findings",
    "per_run_controls", "run", "run_length_table", "runs_needed", "series_frame", "write_processed",
]
