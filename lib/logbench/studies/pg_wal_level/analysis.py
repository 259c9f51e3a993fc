"""Study 07's analysis of recorded runs: the summary, the level ratios beside the post's, the import's steps and
skip path, the findings' statements, the processed tables, and the notebook's tables of them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ...base import paths, records, stats
from ...base.formatting import ci_text
from ...measure.benches.postgres.wal import SKIP_FRACTION
from ...workloads.workload import Import
from .. import common
from .spec import BASELINE, LEVELS, NAME, WAL_BASE

POST_IMPORT_RATIO = 35.0  # "a 35 fold increase in the amount of xlog" (minimal -> archive), reference 004-002


@dataclass(frozen=True)
class WalNumbers:
    """A run's own measurements (its record's ``extra``), as columns."""

    phase: str
    wal_skipped: bool
    wal_lsn_bytes: float
    wal_bytes: float
    wal_records: float
    wal_fpi: float
    wal_lsn_bytes_per_tx: float
    wal_records_per_tx: float
    wal_fpi_per_tx: float
    import_s: float
    data_bytes: float
    wal_position_end: float


def measured(runs: pd.DataFrame) -> pd.DataFrame:
    """Measured runs with the phase split off the configuration name and the WAL numbers as columns."""
    return common.measured_columns(common.split_variant(runs), WalNumbers).drop(columns="phase").rename(
        columns={"variant": "phase"})


def summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Per phase: tps (import: rows/s) and its ratio to minimal's, WAL per run and per transaction, with CIs."""
    return common.summary_per_variant(
        common.measured_columns(runs, WalNumbers).drop(columns="phase"), BASELINE,
        ("wal_lsn_bytes", "wal_bytes", "wal_records", "wal_fpi", "wal_lsn_bytes_per_tx", "wal_fpi_per_tx",
         "import_s", "latency_mean_ms"), list(LEVELS)).rename(columns={"variant": "phase"})


# (phase, metric): the quantity whose level ratios the post's claim is about
# ("import", "wal_position_end"): the WAL position after initdb and the import, the post's possible reading (a doubt
# about its 35x, measured beside the claim's own quantity, never in its place).
RATIO_METRICS = (("import", "wal_lsn_bytes"), ("import", "wal_position_end"), ("import", "import_s"),
                 ("oltp", "wal_lsn_bytes_per_tx"), ("oltp", "tps"))
PAIRS = (("replica", "minimal"), ("logical", "replica"))


def ratios(runs: pd.DataFrame) -> pd.DataFrame:
    """replica/minimal and logical/replica of WAL bytes, import time, WAL per transaction and tps, the ratio
    within blocks where the runs allow (stats.cell_ratio; ``ratio_method`` says which); the post's value where it
    gave one (import WAL, archive/minimal)."""
    m = measured(runs)
    rows = []
    for (phase, metric) in RATIO_METRICS:
        for clients in sorted(m["clients"].unique()):
            at = m[(m["phase"] == phase) & (m["clients"] == clients)]
            for num, den in PAIRS:
                a, b = at[at["configuration"] == num], at[at["configuration"] == den]
                if not len(a) or not len(b):
                    continue
                e, method = stats.cell_ratio(a, b, metric, "repeat")
                post = POST_IMPORT_RATIO if (phase, metric, num, den) == ("import", "wal_lsn_bytes", "replica",
                                                                           "minimal") else float("nan")
                rows.append({"phase": phase, "metric": metric, "ratio": f"{num}/{den}", "clients": int(clients),
                             "n": e.n, "estimate": e.value, "ci_low": e.low, "ci_high": e.high, "post": post,
                             "ratio_method": method})
    return pd.DataFrame(rows)


def steps(runs: pd.DataFrame) -> pd.DataFrame:
    """Import: WAL bytes, full-page images and seconds of each pgbench -i step per level (mean with CI)."""
    m = measured(runs)
    m = m[m["phase"] == "import"]
    rows = []
    for cfg, g in m.groupby("configuration", sort=False):
        for step in Import.STEPS:
            row = {"configuration": cfg, "step": step}
            for what in ("wal_lsn_bytes", "wal_fpi", "seconds"):
                e = stats.mean_ci(g["extra"].map(lambda x, k=f"{step}_{what}": x.get(k)).astype(float))
                row.update({"n": e.n, f"{what}_mean": e.value, f"{what}_ci_low": e.low, f"{what}_ci_high": e.high})
            rows.append(row)
    out = pd.DataFrame(rows)
    return (common.configuration_order(out, ["configuration", "step"], {"configuration": list(LEVELS),
                                                                           "step": list(Import.STEPS)})
            if len(out) else out)


def skip_path(runs: pd.DataFrame) -> pd.DataFrame:
    """Per level: in how many import runs the generation step wrote < 10 % of the loaded bytes as WAL."""
    m = measured(runs)
    m = m[m["phase"] == "import"]
    return (m.groupby("configuration", sort=False)
            .agg(runs=("wal_skipped", "size"), skipped=("wal_skipped", lambda s: int(s.astype(bool).sum())),
                 data_bytes=("data_bytes", "mean")).reset_index())


def findings(runs: pd.DataFrame) -> pd.DataFrame:
    """The study's statements (item, statement), every number printed from the data (the paper prints them)."""
    r, st, sk = ratios(runs), steps(runs), skip_path(runs)
    out = []
    for row in r.itertuples():
        what = {"wal_lsn_bytes": "WAL bytes of the import",
                "wal_position_end": "WAL position after initdb and the import (pg_current_wal_lsn(), the post's "
                                    "possible reading)", "import_s": "import time",
                "wal_lsn_bytes_per_tx": "WAL bytes per transaction", "tps": "OLTP throughput"}[row.metric]
        post = "" if row.post != row.post else f" (the post: {row.post:g}×, archive/minimal)"
        out.append({"item": f"{row.phase}.{row.metric}.{row.ratio}",
                    "statement": f"{what}, {row.ratio} at {row.clients} client(s): "
                                 f"{ci_text(row.estimate, row.ci_low, row.ci_high, n=row.n)}{post}."})
    for row in sk.itertuples():
        out.append({"item": f"skip.{row.configuration}", "statement":
                    f"`{row.configuration}`: the WAL-skip path was taken in {row.skipped} of {row.runs} imports."})
    if len(st) and {"minimal", "replica"} <= set(st["configuration"]):
        w = st.pivot(index="step", columns="configuration", values="wal_lsn_bytes_mean")
        skipped = [s for s in Import.STEPS if w.loc[s, "replica"] > 0 and w.loc[s, "minimal"] < SKIP_FRACTION
                   * w.loc[s, "replica"]]
        out.append({"item": "skip.steps", "statement":
                    "pgbench -i steps whose WAL under minimal is below a tenth of replica's: "
                    + (", ".join(f"`{s}`" for s in skipped) if skipped else "none") + "."})
    return pd.DataFrame(out, columns=["item", "statement"])


def processed_tables(result: common.StudyResult) -> dict[str, pd.DataFrame]:
    runs = result.runs
    return {"summary": summary(runs), "ratios": ratios(runs), "steps": steps(runs), "findings": findings(runs),
            "runs": records.flatten(common.measured_columns(runs, WalNumbers))}


def load_processed(processed_dir: Path = paths.PROCESSED) -> tuple[pd.DataFrame, ...]:
    return common.load_processed(NAME, "summary", "ratios", "steps", processed_dir=processed_dir)


def per_level(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary as the notebook shows it: per phase and level, mean [95 % CI] (n)."""
    rows = []
    for _, r in summary.iterrows():
        rows.append({"phase": r["phase"], "configuration": r["configuration"], "clients": r["clients"],
                     "WAL bytes": common.ci(r, "wal_lsn_bytes", 4), "full-page images": common.ci(r, "wal_fpi", 3),
                     "WAL bytes / transaction": common.ci(r, "wal_lsn_bytes_per_tx", 4),
                     "tps (import: rows/s)": common.ci(r, "tps", 4), "ratio to minimal": common.ci(r, "ratio", 3)})
    return pd.DataFrame(rows).set_index(["phase", "configuration", "clients"])


def environment_table(result: common.StudyResult) -> pd.DataFrame:
    return common.environment_table(result, {"settings (all levels)": ", ".join(
        f"{k}={v}" for k, v in WAL_BASE.items())})

