"""Study 12's analysis: the summary (each arm's throughput ratio to the baseline within blocks, with the A/A
control, records due and counted), the switches' delays, and the statements it found in the notebook."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ... import records
from .. import common
from .spec import ARMS, BASELINE


def summary(runs: pd.DataFrame, baseline: str = BASELINE) -> pd.DataFrame:
    also = ("latency_mean_ms", "log_loss", "log_records_received", "log_lines_per_s", "log_bytes_per_s",
            "server_cpu_s")
    return common.summary_per_variant(runs, baseline, also, list(ARMS))


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


def switch_delays(runs: pd.DataFrame) -> pd.DataFrame:
    """Per arm switched to: how long the reload took until the server reported the arm's values (ms)."""
    r = runs[runs["switch"] == "reload"]
    if not len(r):
        return pd.DataFrame(columns=["configuration", "switches", "median ms", "max ms"])
    g = r.groupby("configuration", sort=False)["switch_s"]
    return pd.DataFrame({"switches": g.size(), "median ms": 1000 * g.median(), "max ms": 1000 * g.max()}).reset_index()


def processed_tables(result: common.StudyResult) -> dict[str, pd.DataFrame]:
    return {"summary": summary(result.runs), "runs": records.flatten(result.runs),
            "records": records_per_transaction(result.runs), "switches": switch_delays(result.runs)}
