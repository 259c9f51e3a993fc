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
from ..base.errors import LogbenchError, ParameterError
from ..base.formatting import ci_text
from ..servers import handed
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


def handed_committed(name: str) -> dict[str, object]:
    """The committed run of study ``name``: its standard profile on a server made for it the way a DBA's exists, a
    throwaway one of this machine's binaries that the workflow starts, hands over in place of :data:`handed.SERVER`
    (a connection string naming no host that exists: the parameters define without it) and removes
    (``python -m logbench.servers.handed``); confirmed in advance, the server being the run's own. Its tables stay
    under results/committed/ with its raw records (define() refuses ``publish``: data/processed holds the suite's
    studies, which the findings and the paper read); its executed notebook is what is committed."""
    return {"profile": "standard", "server": handed.SERVER, "confirm": True,
            "processed_dir": f"results/committed/{name}.processed"}


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


def prediction_table(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`predictions`' table as a reader takes it (the answer's and the notebook's): per arm and clients what
    was priced, at which rate, the predicted throughput kept when CPU-bound beside the measured ratio, and how much
    of its daemon's one core the records would take (EXCEEDED past its ceiling; – where no daemon takes them)."""
    return pd.DataFrame({
        "configuration": table["configuration"], "clients": table["clients"],
        "priced as": table["destination_priced"], "statements/s": table["statements_per_s"].map("{:,.0f}".format),
        "records/statement": table["records_per_statement"].map("{:.3g}".format),
        "µs/record": table["us_per_record"].map("{:.3g}".format),
        "share of cores": table["core_share"].map("{:.1%}".format),
        "predicted, CPU-bound": [ci_text(r.predicted_ratio, r.predicted_ratio_ci_low, r.predicted_ratio_ci_high)
                                 for r in table.itertuples()],
        "measured [95 % CI]": [ci_text(r.ratio, r.ratio_ci_low, r.ratio_ci_high) for r in table.itertuples()],
        "daemon's core": ["EXCEEDED" if r.exceeds_ceiling else "–" if pd.isna(r.ceiling_records_per_s)
                          else f"{r.statements_per_s * r.records_per_statement / r.ceiling_records_per_s:.0%}"
                          for r in table.itertuples()]}, columns=PREDICTION_COLUMNS)


PREDICTION_COLUMNS = ["configuration", "clients", "priced as", "statements/s", "records/statement", "µs/record",
                      "share of cores", "predicted, CPU-bound", "measured [95 % CI]", "daemon's core"]


def prediction_parts(processed_dir: Path | str | None,
                     predictions: Callable[[Path], tuple[pd.DataFrame, str]]) -> tuple[str, pd.DataFrame]:
    """What a report's section on the cost model shows for a run whose processed tables are in ``processed_dir``:
    which cores it assumed, and :func:`prediction_table` by arm and clients; ("", an empty table) where it has
    nothing to show (no processed tables; no logging arm whose records were counted; the committed tables it prices
    by missing, which the answer says)."""
    empty = pd.DataFrame(columns=PREDICTION_COLUMNS)
    if processed_dir is None:
        return "", empty
    try:
        table, cores = predictions(Path(processed_dir))
    except LogbenchError:
        return "", empty
    if table.empty:
        return "", empty
    return f"Over {cores}.", prediction_table(table).set_index(["configuration", "clients"])
