"""Study 00's declarations: its name, controls, the anomaly test's destinations, profiles, study types and
registry spec (no logic).

The bottom of the package: the analysis and the study's plan and run both read these.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ...measure.benches import postgres as pg
from ...measure.design import VARIANT_SEP
from .. import common

NAME = "instrument"
# control -> (idle state, placement): what is in force while a run of that control warms up and measures
CONTROLS: dict[str, tuple[str, str]] = {"free": ("free", "none"), "hold": ("hold", "none"),
                                        "hold_split": ("hold", "split")}
ANOMALY_CONTROLS = ("free", "hold")
ANOMALY_DESTINATIONS = ("none", "stderr", "syslog")
BASELINE = "none"
LENGTHS = (1, 2, 4, 8, 16, 32)
# pgbench -P's first intervals include connection set-up and a cold backend: not steady-state seconds.
SKIP_SECONDS = 2

SPEC = common.StudySpec(
    name=NAME, engine="postgresql", title="The instrument: noise, controls and the 1-client anomaly",
    post="", baseline=f"free{VARIANT_SEP}{BASELINE}", notebook="00_instrument.ipynb", seed=20261123,
    committed={"profile": "standard", "publish": True}, smoke=({"profile": "smoke"},), paper_order=0, measures_logging=False)

# The designs part (design_comparison): per clients level and placement, ``design_rounds`` rounds of one
# switchback session (a load of ``design_blocks`` blocks of none / stderr / A/A in ``design_window_s`` windows,
# ``design_guard_s`` guard) and one block session (``design_block_repeats`` blocks of separate runs of
# ``duration`` s after ``warmup`` s) of about the same length; 0 rounds: no designs part.
PROFILES: dict[str, dict[str, object]] = {
    "smoke": {"clients": [1], "repeats": 1, "series_s": 6, "anomaly_clients": [1], "anomaly_repeats": 2,
              "duration": 1, "warmup": 0, "scale": 1, "sampling_rate": 0.1,
              "design_clients": [1], "design_rounds": 2, "design_blocks": 1, "design_window_s": 2,
              "design_guard_s": 1, "design_block_repeats": 1, "design_placements": ["split"]},
    # ~38 minutes on two cores: 3 controls x 2 levels x 2 blocks of 40 s long runs, then 2 controls x
    # (3 destinations + A/A) x 2 levels x 5 blocks of 4 s runs (~13 min); then the designs at 4 clients (2 per
    # core, where the switchback's window-to-window noise was: issue 21) with the scheduler's placement and with
    # server and pgbench on separate CPUs: 6 rounds x 2 placements x (a ~50 s switchback session + a ~56 s block
    # session) (~23 min). The 1-client comparison (no design more efficient there) is in the run of c7c6806.
    "standard": {"clients": [1, 4], "repeats": 2, "series_s": 40, "anomaly_clients": [1, 4],
                 "anomaly_repeats": 5, "duration": 4, "warmup": 1, "scale": 10, "sampling_rate": 0.01,
                 "design_clients": [4], "design_rounds": 6, "design_blocks": 4, "design_window_s": 4,
                 "design_guard_s": 1, "design_block_repeats": 3, "design_placements": ["none", "split"]},
    # The standard run with its designs part spent on one placement and level: as many rounds as fit in the time
    # the committed standard run's designs part took, at what a committed round cost on this machine
    # (session_power.rounds_that_fit; tests/test_instrument_sessions.py holds this number to it). Telling a 2x
    # difference in efficiency would take 68 sessions per design (~125 min): these tell ~6x, 6 rounds ~16x.
    "sessions": {"clients": [1, 4], "repeats": 2, "series_s": 40, "anomaly_clients": [1, 4],
                 "anomaly_repeats": 5, "duration": 4, "warmup": 1, "scale": 10, "sampling_rate": 0.01,
                 "design_clients": [4], "design_rounds": 11, "design_blocks": 4, "design_window_s": 4,
                 "design_guard_s": 1, "design_block_repeats": 3, "design_placements": ["none"]},
    "full": {"clients": [1, 2, 4, 8], "repeats": 4, "series_s": 70, "anomaly_clients": [1, 4],
             "anomaly_repeats": 10, "duration": 8, "warmup": 2, "scale": 10, "sampling_rate": 0.01,
             "design_clients": [1, 2, 4, 8], "design_rounds": 12, "design_blocks": 4, "design_window_s": 4,
             "design_guard_s": 1, "design_block_repeats": 3, "design_placements": ["none", "split"]},
}


@dataclass(frozen=True, kw_only=True)
class ControlledStudy(pg.PgStudy):
    """A PostgreSQL schedule whose configurations are ``control/destination``: the control is a factor
    of the design, set per run by :class:`ControlledBench` (the study-wide idle state stays free)."""

    progress: int = 0  # pgbench -P interval of measured runs (s); 0: none


@dataclass(frozen=True)
class InstrumentStudy:
    """The two schedules (noise curve and anomaly test), each on a fresh server."""

    profile: str
    series: ControlledStudy
    anomaly: ControlledStudy
    controls: tuple[str, ...]
    processed_dir: Path | None
    publish: bool = False  # the committed results: processed tables and figure into data/processed, paper/figures
    designs: object = None  # design_comparison.Sessions, or None: no designs part

@dataclass(frozen=True)
class InstrumentResult:
    study: InstrumentStudy
    series_runs: pd.DataFrame
    anomaly_runs: pd.DataFrame
    environment: dict
    designs_runs: pd.DataFrame | None = None
