"""What the studies on a user's own server share, whatever the engine (:data:`logbench.studies.ON_USER_SERVERS`):
the confirmation before putting load on somebody's server, and the analysis of their runs (each arm's throughput
ratio to the baseline within blocks with the A/A control, records due and counted per statement, the switches'
delays). Each engine's study (``own_server``, ``own_mariadb``) imports these; neither imports the other."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..analyze import overhead
from ..base import records
from ..base.errors import ParameterError
from . import common

ALSO = ("latency_mean_ms", "log_loss", "log_records_received", "log_lines_per_s", "log_bytes_per_s", "server_cpu_s")



# The help both own-server studies give the shared parameters they read their own way (a user's server: their
# confirmation, the run's length, the adaptive blocks); each study's HELP adds its own.
HELP = {
    "confirm": "True: you agree to the load the study describes (it refuses without, when not interactive)",
    "duration": "seconds per measured run, > 0; None: the profile's",
    "processed_dir": "summary tables; None: <output_dir>/processed",
    "idle_state": "\"hold\" or \"free\" (this machine's CPU idle states); None: the profile's (\"free\")",
    "placement": "\"none\" or \"split\"; None: the profile's",
    "target_halfwidth": "adaptive blocks until each ratio's CI half-width is below this; None: the profile's",
    "time_budget_s": "seconds the adaptive blocks may take; None: the profile's",
    "max_repeats": "cap on blocks; None: the profile's",
}

def confirmed(confirm: bool, load: str) -> None:
    """The study runs ``load`` on the user's server and switches its logging: go on only with ``confirm`` or a yes
    at a terminal (a notebook or a batch job without ``confirm`` is refused: nobody is there to ask)."""
    if confirm:
        return
    ask = f"This study will run {load}."
    if not sys.stdin.isatty():
        raise ParameterError("confirm", confirm, f"True (--yes) once you agree: {ask}")
    if input(f"{ask}\nRun it? [y/N] ").strip().lower() not in ("y", "yes"):
        raise ParameterError("confirm", "no", f"yes at the prompt, or True: {ask}")


def summary(runs: pd.DataFrame, baseline: str, arms: Sequence[str]) -> pd.DataFrame:
    return common.summary_per_variant(runs, baseline, ALSO, list(arms))


def records_per_transaction(runs: pd.DataFrame) -> pd.DataFrame:
    """Per arm and clients: the records the server's log received per transaction and per statement the load
    sent, and those due (where every statement is logged), measured runs only."""
    r = records.measured(runs)
    r = r.assign(statements=r["extra"].map(lambda e: e.get("statements", np.nan)).astype(float))
    g = r.groupby(["configuration", "clients"], sort=False)
    out = pd.DataFrame({
        "runs": g.size(),
        "received per transaction": g.apply(lambda x: x["log_records_received"].sum() / x["transactions"].sum()),
        "received per statement": g.apply(lambda x: x["log_records_received"].sum() / x["statements"].sum()),
        "due per statement": g.apply(lambda x: x["log_records_expected"].sum() / x["statements"].sum()
                                     if x["log_records_expected"].sum() else np.nan),
        "loss (mean)": g["log_loss"].mean(),
    })
    return out.reset_index()


def switch_delays(runs: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Per arm switched to: how long a switch of ``kind`` (reload, set_global) took until the server reported the
    arm's values (ms)."""
    r = runs[runs["switch"] == kind]
    if not len(r):
        return pd.DataFrame(columns=["configuration", "switches", "median ms", "max ms"])
    g = r.groupby("configuration", sort=False)["switch_s"]
    return pd.DataFrame({"switches": g.size(), "median ms": 1000 * g.median(), "max ms": 1000 * g.max()}).reset_index()


def processed_tables(result: common.StudyResult, baseline: str, arms: Sequence[str],
                     switch_kind: str) -> dict[str, pd.DataFrame]:
    return {"summary": summary(result.runs, baseline, arms), "runs": records.flatten(result.runs),
            "records": records_per_transaction(result.runs), "switches": switch_delays(result.runs, switch_kind)}


def predictions(processed: Path, stem: str, engine: str, baseline: str,
                priced_as: Callable[[str, list[str]], str | None]) -> tuple[pd.DataFrame, str]:
    """The cost model's prediction beside each arm's measured ratio (:func:`logbench.analyze.overhead.beside_measured`,
    what ``python -m logbench cost`` computes), and which cores it assumed: the server's where its process ran on
    this host (its CPU was read), else this host's, said so."""
    processed = Path(processed)
    runs = pd.read_csv(processed / f"{stem}_runs.csv")
    env_file = processed / f"{stem}_environment.json"
    env = json.loads(env_file.read_text()) if env_file.exists() else {}
    cores = float(env.get("cpu_count") or 0)
    if not cores > 0:
        return pd.DataFrame(columns=overhead.BESIDE_COLUMNS), "no cpu_count in the run's environment record"
    local = pd.to_numeric(runs.get("server_cpu_s"), errors="coerce").fillna(0).gt(0).any()
    said = (f"{cores:g} cores: the server's (its process ran on this host)" if local else
            f"{cores:g} cores: THIS host's — the server ran elsewhere (its CPU was not read); "
            "`python -m logbench cost --cores C` predicts for its own")
    table = overhead.beside_measured(pd.read_csv(processed / f"{stem}.csv"), runs, cores, engine, priced_as, baseline)
    return table, said
