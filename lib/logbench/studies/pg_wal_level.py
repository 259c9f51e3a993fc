"""Study 07: how much WAL does each wal_level write? (post 004, Cybertec, wal_level part, redone)

Two phases in one interleaved schedule (runner.SplitBench labels ``import/…`` and ``oltp/…``):

- **import** — a fresh instance per run at the level (the post's "freshly created test instance"), then
  ``pgbench -i -F 70`` one step at a time: WAL bytes (LSN difference and ``pg_stat_wal``), full-page images,
  import time per step, and whether the WAL-skip path was taken;
- **oltp** — one server restarted to change the level, a checkpoint before each run, a fixed number of
  transactions of pgbench's TPC-B-like default script: WAL bytes per transaction and tps.

Ratios replica/minimal and logical/replica (Fieller CIs, :mod:`logbench.stats`) stand beside the post's 35×.
The post's ``archive`` and ``hot_standby`` are both ``replica`` since PostgreSQL 9.6; ``logical`` is newer than
the post.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import params, paths, records, stats
from ..benches import pg_wal
from ..benches import postgres as pg
from ..errors import ParameterError
from ..plots import fmt_ci
from . import common

NAME = "pg_wal_level"
BASELINE = "minimal"
POST = "004_5cd3e575f4305811.txt"
LEVELS = tuple(pg_wal.WAL_LEVELS)
PHASES = ("import", "oltp")
POST_IMPORT_RATIO = 35.0  # "a 35 fold increase in the amount of xlog" (minimal -> archive), reference 004-002

# duration: nominal seconds of a run, for the runner's pacing only (runs are fixed-size, not timed).
# scale: the OLTP dataset; import_scale: the import runs' (the post imported scale 100). minimal's WAL hardly grows
# with the data while replica's does, so the import's ratio is a function of the scale: only the post's scale
# answers its claim.
PROFILES: dict[str, dict[str, object]] = {
    "smoke": {"clients": [1], "repeats": 1, "duration": 1, "warmup": 0, "scale": 1, "import_scale": 1,
              "transactions": 200},
    # ~15-20 min on two cores (estimate): 8 runs a block (3 levels + A/A, 2 phases) x 5 blocks; an import run
    # (initdb, start, scale 100 step by step, stop) ~25-45 s (scale 20 took ~6 s), an OLTP run (restart, checkpoint,
    # 2 s warm-up, 15,000 transactions at ~1,000-2,000 tps on 2 clients) ~12-19 s
    "standard": {"clients": [2], "repeats": 5, "duration": 15, "warmup": 2, "scale": 20, "import_scale": 100,
                 "transactions": 15_000},
    # the post's scale 100 and its 160,000 transactions per OLTP run
    "full": {"clients": [2], "repeats": 5, "duration": 160, "warmup": 5, "scale": 100, "import_scale": 100,
             "transactions": 160_000},
}


@dataclass(frozen=True, kw_only=True)
class WalLevelStudy(pg.PgStudy):
    transactions: int = 1
    import_scale: int = 1
    fillfactor: int = 70
    generate: str = "g"


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


def define(profile: str = "standard", levels: object = None, scale: object = None, import_scale: object = None,
           transactions: object = None, fillfactor: object = 70, generate: str = "g", shared_buffers: str = "128MB", extra_settings: object = None,
           pg_bindir: object = None, **shared: object) -> WalLevelStudy:
    """Check every parameter and freeze the study (ParameterError before any server starts)."""
    d = common.profile_lookup(profile, PROFILES)
    chosen = params.name_list("levels", list(LEVELS) if levels is None else levels, LEVELS)
    tx = params.positive_int("transactions", d("transactions", transactions))
    imported = params.positive_int("import_scale", d("import_scale", import_scale))
    ff = params.positive_int("fillfactor", fillfactor)
    if not 10 <= ff <= 100:
        raise ParameterError("fillfactor", ff, "a whole number from 10 to 100 (pgbench -F)")
    params.choice("generate", generate, pg_wal.GENERATE)
    extra = {**pg_wal.WAL_BASE, **params.mapping("extra_settings", extra_settings)}
    engine = pg.pg_fields(backend="local", image=None, scale=d("scale", scale), query_mode="simple",
                          syslog_rate_limit=False, log_dir_on="disk", sampling_rate=1.0, shared_buffers=shared_buffers,
                          extra_settings=extra, pg_bindir=pg_bindir)
    clash = sorted(set(extra) & {k for s in pg_wal.WAL_LEVELS.values() for k in s})
    if clash:
        raise ParameterError("extra_settings", clash, "settings other than those each wal_level sets itself")
    fields = common.study_fields(SPEC, profile, PROFILES, whole_seconds=True, **shared)
    if fields["clients"] and tx < max(fields["clients"]):
        raise ParameterError("transactions", tx, f"at least one per client (≥ {max(fields['clients'])})")
    study = WalLevelStudy(
        **fields, **engine, transactions=tx, import_scale=imported, fillfactor=ff, generate=generate,
        configurations=pg.configurations(common.with_baseline(BASELINE, chosen), pg_wal.level_settings(LEVELS),
                                         engine["pg_bindir"], engine["base"], "simple"))
    return pg.with_variants(study, [(p, "local", None, None) for p in PHASES])


def run(study: WalLevelStudy, *, progress: bool = True) -> common.StudyResult:
    def start(study, stack: contextlib.ExitStack):
        benches, env = pg_wal.start(study, stack, transactions=study.transactions, fillfactor=study.fillfactor,
                                    generate=study.generate, import_scale=study.import_scale)
        from ..runner import SplitBench

        return SplitBench(benches, {k: env for k in benches}), env

    return common.run_study(study, start, processed_tables, progress=progress)


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
RATIO_METRICS = (("import", "wal_lsn_bytes"), ("import", "import_s"), ("oltp", "wal_lsn_bytes_per_tx"),
                 ("oltp", "tps"))
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
        for step in pg_wal.STEPS:
            row = {"configuration": cfg, "step": step}
            for what in ("wal_lsn_bytes", "wal_fpi", "seconds"):
                e = stats.mean_ci(g["extra"].map(lambda x, k=f"{step}_{what}": x.get(k)).astype(float))
                row.update({"n": e.n, f"{what}_mean": e.value, f"{what}_ci_low": e.low, f"{what}_ci_high": e.high})
            rows.append(row)
    out = pd.DataFrame(rows)
    return (common.configuration_order(out, ["configuration", "step"], {"configuration": list(LEVELS),
                                                                           "step": list(pg_wal.STEPS)})
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
        what = {"wal_lsn_bytes": "WAL bytes of the import", "import_s": "import time",
                "wal_lsn_bytes_per_tx": "WAL bytes per transaction", "tps": "OLTP throughput"}[row.metric]
        post = "" if row.post != row.post else f" (the post: {row.post:g}×, archive/minimal)"
        out.append({"item": f"{row.phase}.{row.metric}.{row.ratio}",
                    "statement": f"{what}, {row.ratio} at {row.clients} client(s): "
                                 f"{fmt_ci(row.estimate, row.ci_low, row.ci_high, row.n)}{post}."})
    for row in sk.itertuples():
        out.append({"item": f"skip.{row.configuration}", "statement":
                    f"`{row.configuration}`: the WAL-skip path was taken in {row.skipped} of {row.runs} imports."})
    if len(st) and {"minimal", "replica"} <= set(st["configuration"]):
        w = st.pivot(index="step", columns="configuration", values="wal_lsn_bytes_mean")
        skipped = [s for s in pg_wal.STEPS if w.loc[s, "replica"] > 0 and w.loc[s, "minimal"] < pg_wal.SKIP_FRACTION
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


def design_summary(study: WalLevelStudy) -> dict[str, object]:
    return {**pg.design_summary(study), "levels": [c.name for c in study.configurations],
            "import scale": study.import_scale, "transactions per OLTP run": study.transactions, "fillfactor": study.fillfactor,
            "generation step": study.generate}


def level_table() -> pd.DataFrame:
    """What each level sets (what it requires) over the base."""
    return pd.DataFrame([{"level": n, "settings": ", ".join(f"{k}={v}" for k, v in s.items())}
                         for n, s in pg_wal.WAL_LEVELS.items()]).set_index("level")


def environment_table(result: common.StudyResult) -> pd.DataFrame:
    return common.environment_table(result, {"settings (all levels)": ", ".join(
        f"{k}={v}" for k, v in pg_wal.WAL_BASE.items())})


SPEC = common.StudySpec(
    name=NAME, engine="postgresql", title="PostgreSQL WAL volume by wal_level", post=POST, baseline=BASELINE,
    notebook="07_pg_wal_level.ipynb", seed=20140321, committed={"profile": "standard", "publish": True},
    paper_order=7)
