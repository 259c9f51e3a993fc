"""Study 04's analysis of recorded runs: the runs as columns, the summary, the io regime's pace, a version sweep's
and the switchback design's tables, the processed tables, and the notebook's tables and findings of them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...analyze import claim_rules
from ...base import environment, paths, records, stats
from .. import common
from .bench import SETTLE_TIMEOUT_S, SlowlogNumbers
from .spec import BASELINE, CONFIGURATIONS, NAME, REGIMES, WORKLOADS, MysqlSlowlogStudy, post_levels

# -- summaries -----------------------------------------------------------------------------------

def expand(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs with the cell keys, sysbench's and the study's own numbers (SlowlogNumbers) as columns."""
    out = common.measured_columns(runs, SlowlogNumbers)
    ex = out["extra"]
    out["test"] = out["workload"].str.replace("sysbench ", "", regex=False)
    out["server_cpu_us_per_query"] = 1e6 * out["server_cpu_s"] / out["queries"]
    out["log_bytes_per_query"] = out["log_bytes"] / out["queries"]
    # /dev/null: expected is kept in extra, received is unknowable (NaN, not 0).
    dev = ex.map(lambda e: "records_expected_uncounted" in e)
    out["log_records_received"] = out["log_records_received"].astype(float)
    if dev.any():  # (a run without /dev/null, e.g. the switchback design's arms, has nothing to replace)
        out.loc[dev, "log_records_expected"] = ex[dev].map(lambda e: e["records_expected_uncounted"])
        out.loc[dev, "log_records_received"] = np.nan
    return out


def summary(runs: pd.DataFrame, baseline: str = BASELINE) -> pd.DataFrame:
    """Per regime × workload × configuration × clients: tps and qps mean ± CI, ratio to ``off`` ± CI (block
    design: within blocks, stats.cell_ratio), records, log rate and server CPU per query."""
    from ...measure import switchwindows

    also = ("qps", "latency_p95_ms", "latency_p99_ms", "log_records_expected", "log_records_received", "log_loss",
            "log_bytes_per_s", "log_bytes_per_query", "server_cpu_s", "server_cpu_us_per_query")
    measured = expand(records.measured(runs))
    if switchwindows.is_switchback(measured):
        environment.check_poolable(measured)  # the cells' own summaries become one table: one environment
        # each cell its own loads: the switchback estimator per cell (never windows pooled across cells)
        out = pd.concat([common.switchback_summary(g, baseline, also, list(CONFIGURATIONS)).assign(
            regime=regime, test=test) for (regime, test), g in measured.groupby(["regime", "test"], sort=False)],
            ignore_index=True)
        out = out[["regime", "test", *[c for c in out.columns if c not in ("regime", "test")]]]
    else:
        # a version sweep's servers each against their own baseline, never pooled (one server: variant '')
        parts = []
        for variant, g in common.split_variant(measured).groupby("variant", sort=False):
            part = stats.summarise(g, by=["regime", "test", "configuration", "clients"], baseline=baseline,
                                   also=also, block="repeat")
            parts.append(part.assign(variant=variant)[["variant", *part.columns]] if variant else part)
        out = pd.concat(parts, ignore_index=True)
    keys = common.variant_keys(out, ["regime", "test", "configuration", "clients"])
    out = common.configuration_order(out, keys, {"configuration": list(CONFIGURATIONS), "regime": list(REGIMES),
                                                 "test": list(WORKLOADS)})
    return common.with_server_version(out, runs)


def pace_table(runs: pd.DataFrame) -> pd.DataFrame | None:
    """The io regime's pace beside the cpu regime's, per configuration and clients (the measured runs): median tps
    in each, their ratio (the post's was 1/43 at 1 connection: claim_rules.POST_001_IO_PACE), the io runs' buffer
    pool misses, the paced disk's reads per second, how many were IO-bound by their own counters, and the wait
    for the previous run's purge (SlowlogBench.settle): median and longest, and how many runs did not settle."""
    m = expand(common.split_variant(runs))
    if "regime" not in m or not (m["regime"] == "io").any():
        return None  # no io regime in this run (records.write_processed removes an earlier run's table)
    keys = common.variant_keys(m, ["test", "configuration", "clients"])
    cpu = m[m["regime"] == "cpu"].groupby(keys)["tps"].median().rename("cpu_tps_median")
    io = m[m["regime"] == "io"]
    out = io.groupby(keys, sort=False).agg(
        n=("tps", "size"), io_tps_median=("tps", "median"), miss_share_median=("bp_miss_share", "median"),
        disk_reads_per_s_median=("disk_reads_per_s", "median"),
        io_bound_runs=("measured_regime", lambda r: int((r == "io_bound").sum())),
        settle_s_median=("settle_s", "median"), settle_s_max=("settle_s", "max"),
        history_inherited_max=("history_at_start", "max"),
        unsettled_runs=("settled", lambda r: int((r == False).sum())))  # noqa: E712 (None: recorded before settling)
    out = out.join(cpu, on=keys)
    out["io_over_cpu"] = out["io_tps_median"] / out["cpu_tps_median"]
    first = ["n", "io_tps_median", "cpu_tps_median", "io_over_cpu"]
    return out[first + [c for c in out.columns if c not in first]].reset_index()


def finding_pace(pace: pd.DataFrame | None) -> str:
    """What the pace table says: whether the io regime waited on storage as the post's did."""
    if pace is None or pace.empty:
        return "No io regime in this run: nothing paced."
    want = claim_rules.POST_001_IO_PACE.want
    one = pace[pace["clients"] == pace["clients"].min()]
    ratios = ", ".join(f"{r.configuration} 1/{1 / r.io_over_cpu:.0f}" for r in one.itertuples() if r.io_over_cpu > 0)
    n, bound, unsettled = int(pace["n"].sum()), int(pace["io_bound_runs"].sum()), int(pace["unsettled_runs"].sum())
    return (f"**The io regime's pace.** At {one['clients'].iloc[0]} client the io cell ran at {ratios} of the cpu "
            f"cell's median tps (the post's IO-bound DBT2 at 1 connection: 1/{1 / want:.0f}). {bound} of {n} io runs "
            f"were IO-bound by their own counters (buffer pool misses served by the paced disk); the disk served a "
            f"median {pace['disk_reads_per_s_median'].median():.0f} reads/s. Each run started after the previous "
            f"one's purge (median wait {pace['settle_s_median'].median():.1f} s, longest "
            f"{pace['settle_s_max'].max():.1f} s; {unsettled} runs did not settle within "
            f"{SETTLE_TIMEOUT_S:.0f} s).")


def processed_tables(result: common.StudyResult) -> dict[str, pd.DataFrame]:
    between = between_versions(result.runs)
    return {"summary": summary(result.runs), "runs": records.flatten(common.with_variant(expand(result.runs))),
            "pace": pace_table(result.runs),
            **switchback_tables(result.study, result.runs),
            # a version sweep's (issue 23); None removes an earlier run's file
            "between_versions": between if len(between) else None}


def between_versions(runs: pd.DataFrame, baseline: str = BASELINE) -> pd.DataFrame:
    """A version sweep's question (issue 23), per cell: each later version's ratio to its own ``off`` over the
    first version's, per configuration and clients, with its CI over the interleaved blocks
    (common.variant_differences); empty for one server."""
    m = expand(records.measured(runs))
    parts = []
    for (regime, test), g in m.groupby(["regime", "test"], sort=False):
        d = common.variant_differences(g, baseline, list(CONFIGURATIONS))
        if len(d):
            parts.append(d.assign(regime=regime, test=test)[["regime", "test", *d.columns]])
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def switchback_tables(study: MysqlSlowlogStudy, runs: pd.DataFrame) -> dict[str, pd.DataFrame | None]:
    """The switchback design's tables (switchwindows.processed_tables), cell by cell: a cell's switches and
    carryover are its own load's; None for a block-design run (an earlier switchback run's files are removed)."""
    from ...measure import switchwindows

    if not switchwindows.is_switchback(runs):
        return dict.fromkeys(switchwindows.PROCESSED_TABLES)
    expanded = expand(runs)
    parts: dict[str, list] = {k: [] for k in switchwindows.PROCESSED_TABLES if k != "pilot"}
    for (regime, test), g in expanded.groupby(["regime", "test"], sort=False):
        c = switchwindows.carryover_report(g, BASELINE)
        tables = {"switches": switchwindows.switch_table(g), "carryover": c["profile"],
                  "carryover_test": c["same_vs_changed"].merge(c["guard"], on="clients") if len(c["guard"]) else None}
        for k, t in tables.items():
            if t is not None and len(t):
                parts[k].append(t.assign(regime=regime, test=test))
    return {"pilot": _pilot(study), **{k: pd.concat(v, ignore_index=True) if v else None for k, v in parts.items()}}


def _pilot(study: MysqlSlowlogStudy) -> pd.DataFrame:
    """The pilot's table (switchwindows.pilot_table) with each cell by its name, first."""
    from ...measure import switchwindows

    pilot = switchwindows.pilot_table(study)
    if len(pilot) and "cell" in pilot:
        pilot.insert(0, "cell", pilot.pop("cell").map(lambda i: study.cell_names[int(i)]))
    return pilot


def pilot_vs_reached(study: MysqlSlowlogStudy, summary: pd.DataFrame) -> pd.DataFrame:
    """Per cell and clients level: the pilot's prediction beside what was reached (switchwindows.pilot_vs_reached;
    empty for the block design)."""
    from ...measure import switchwindows

    return switchwindows.pilot_vs_reached(_pilot(study), summary.assign(cell=summary["regime"] + "/" + summary["test"]),
                                          BASELINE, study.aa_configuration, ("cell", "clients"))


def load_processed(processed_dir: Path = paths.PROCESSED) -> tuple[pd.DataFrame, pd.DataFrame]:
    return common.load_processed(NAME, "summary", "runs", processed_dir=processed_dir)


# -- tables and findings for the notebook ---------------------------------------------------------------

def environment_table(result: common.StudyResult) -> pd.DataFrame:
    env = result.environment
    env = common.first_environment(env)  # a version sweep's: the machine's sysbench and disk are the same for all
    return common.environment_table(result, {
        "sysbench": env["tools"].get("sysbench"), "data (MB)": round(env.get("data_bytes", 0) / 2**20, 1),
        "log file system": env.get("log_dir_fs")}, reload_label="SET GLOBAL")


def finding_overhead(summary: pd.DataFrame, baseline: str = BASELINE) -> str:
    return common.per_variant_text(summary, _finding_overhead, baseline)


def _finding_overhead(summary: pd.DataFrame, baseline: str) -> str:
    """Per cell and concurrency: what logging every statement costs, and what is indistinguishable from off."""
    lines = []
    for (regime, test, clients), g in stats.logging_rows(summary, baseline).groupby(
            ["regime", "test", "clients"], sort=False):
        g = g.set_index("configuration")
        parts = []
        for name in ("slow_all", "slow_all_devnull", "general_log", "slow_all_table", "slow_sampled", "slow_1s"):
            if name in g.index:
                parts.append(f"`{name}` {common.ci(g.loc[name], 'ratio')}")
        slower = [c for c in g.index if g.loc[c, "ratio_ci_high"] < 1]
        lines.append(f"- **{regime}-bound, {test}, {clients} client(s):** throughput / `off` = " + "; ".join(parts)
                     + (f". Slower than `off` with 95 % confidence: {', '.join(f'`{c}`' for c in slower)}."
                        if slower else ". None is slower than `off` with 95 % confidence."))
    return "\n".join(lines)


def finding_records(summary: pd.DataFrame) -> str:
    return common.per_variant_text(summary, _finding_records)


def _finding_records(summary: pd.DataFrame) -> str:
    """Did each counted destination get every statement?"""
    g = summary[summary["log_records_expected_mean"].fillna(0) > 0]
    g = g[g["log_records_received_mean"].notna()]
    if not len(g):
        return "No configuration expected records."
    worst = g.loc[g["log_loss_mean"].abs().idxmax()]
    return (f"Across {len(g)} counted cells, the largest mean difference between records expected and written was "
            f"`{worst['configuration']}` ({worst['regime']}, {worst['test']}, {worst['clients']} clients): "
            f"{100 * worst['log_loss_mean']:.3g} % (positive: missing). The sampled log's expectation is "
            f"queries / rate, so its difference is sampling, not loss.")


def finding_rates(summary: pd.DataFrame) -> str:
    return common.per_variant_text(summary, _finding_rates)


def _finding_rates(summary: pd.DataFrame) -> str:
    g = summary[summary["log_bytes_per_s_mean"].fillna(0) > 0]
    if not len(g):
        return "Nothing was logged."
    top = g.loc[g["log_bytes_per_s_mean"].idxmax()]
    return (f"The highest log rate was `{top['configuration']}` ({top['regime']}, {top['test']}, {top['clients']} "
            f"clients): {top['log_bytes_per_s_mean'] / 1e6:.3g} MB/s at {top['qps_mean']:,.0f} queries/s "
            f"({top['log_bytes_per_query_mean']:.0f} bytes per statement); the post saw ~10 MB/s at 20–25 k queries/s.")


# Post 001's slow log: ~10 MB/s at 20–25k queries/s (claims.csv 001-cpu-rate) = 400–500 bytes per logged query.
POST_BYTES_PER_QUERY = (400, 500)


cores_of = common.cores_of  # notebook 04 calls it through the study


def finding_standin(summary: pd.DataFrame, cores: int) -> str:
    return common.per_variant_text(summary, _finding_standin, cores)


def _finding_standin(summary: pd.DataFrame, cores: int) -> str:
    """What sysbench standing in for DBT2 changes, with our bytes per logged statement from the summary,
    and the post's connection counts as they map here."""
    g = summary[(summary["configuration"] == "slow_all") & summary["log_bytes_per_query_mean"].notna()]
    per_test = g.groupby("test", sort=False)["log_bytes_per_query_mean"].median()
    ours = "; ".join(f"`{t}` {b:.0f} B" for t, b in per_test.items()) or "no `slow_all` runs"
    levels = ", ".join(f"{k} → {v}" for k, v in post_levels(cores).items())
    ran = sorted(int(c) for c in summary["clients"].unique())
    return (f"Bytes per logged statement (`slow_all`, median over cells and levels): {ours}; the post's "
            f"{POST_BYTES_PER_QUERY[0]}–{POST_BYTES_PER_QUERY[1]} B (10 MB/s at 20–25k queries/s). The post's "
            f"connections on its {claim_rules.POST_CORES['001']} cores at the same connections per core on this "
            f"machine's {cores}: {levels}; this run: {', '.join(map(str, ran))} clients.")
