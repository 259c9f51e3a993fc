"""Study 02's analysis of recorded runs: the summary, the IO-bound regime's check, the cost of one record, the
findings' statements, the processed tables, and the notebook's tables beside the post (a version sweep's side by
side, never pooled)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ...base import paths, records, stats
from ...measure.benches import postgres as pg
from .. import common
from .spec import ARMS, BASELINE, NAME, PROFILE_POSTS, SAMPLED, published_ratios


def summary(runs: pd.DataFrame, baseline: str = BASELINE) -> pd.DataFrame:
    """tps mean ± CI, ratio to the baseline ± CI (within blocks: stats.cell_ratio), loss and log rates, per
    configuration × clients (and per variant, each against its own baseline, when the study spans several
    servers)."""
    also = ("latency_p95_ms", "log_loss", "log_lines_per_s", "log_bytes_per_s", "server_cpu_s", "logger_cpu_s")
    from ...measure import switchwindows

    if "extra" in runs.columns and runs["extra"].map(lambda e: "collector_cpu_s" in e).any():
        # the logging collector's own CPU, where the runs recorded it (it is part of server_cpu_s too)
        runs = runs.assign(collector_cpu_s=runs["extra"].map(lambda e: e.get("collector_cpu_s", np.nan)))
        also = (*also, "collector_cpu_s")

    if switchwindows.is_switchback(runs):
        return common.switchback_summary(runs, baseline, also, list(ARMS))
    return common.summary_per_variant(runs, baseline, also, list(ARMS))


@dataclass(frozen=True)
class IoNumbers:
    """A memory-limited run's own counters (benches.postgres.PgBench.measure): its regime, verified."""

    regime: str
    blks_read: int
    blks_hit: int
    memory_limit_hits: int
    page_cache_growth_bytes: int


def with_regime(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs with the IO-bound regime's counters as columns (``regime`` is what the claims read), when recorded."""
    if not runs["extra"].map(lambda e: "regime" in e).any():
        return runs
    out = common.measured_columns(runs, IoNumbers)
    out["blks_read_share"] = out["blks_read"] / (out["blks_read"] + out["blks_hit"])
    reads = out["extra"].map(lambda e: e.get("disk_reads"))
    if reads.notna().any():  # under a read limit: the pace the disk was held to, run by run
        out["disk_reads_per_s"] = reads.astype(float) / out["duration_s"].astype(float)
    return out


def regime_check(runs: pd.DataFrame) -> pd.DataFrame:
    """Per configuration × clients: the share of shared-buffer misses (pg_stat_database), the memory limit's
    hits, and how many measured runs were IO-bound by their own counters. Empty without a memory limit."""
    r = with_regime(records.measured(runs))
    if "regime" not in r:
        return pd.DataFrame()
    r = common.split_variant(r)
    g = r.groupby(common.variant_keys(r, ["configuration", "clients"]), sort=False)
    return pd.DataFrame({
        "runs": g.size(), "io_bound runs": g["regime"].agg(lambda x: int((x == "io_bound").sum())),
        "blks_read share (mean)": g["blks_read_share"].mean(), "blks_read (mean)": g["blks_read"].mean(),
        "blks_hit (mean)": g["blks_hit"].mean(), "memory limit hits (mean)": g["memory_limit_hits"].mean(),
        **({"disk reads per s (mean)": g["disk_reads_per_s"].mean()} if "disk_reads_per_s" in r else {}),
    }).reset_index()


def processed_tables(result: common.StudyResult) -> dict[str, pd.DataFrame]:
    from ...measure import switchwindows

    tables = {"summary": summary(result.runs), "runs": records.flatten(with_regime(result.runs)),
              **switchwindows.processed_tables(result.study, result.runs, BASELINE)}
    check = regime_check(result.runs)
    per_record = per_record_cost(result.runs)
    between = common.variant_differences(result.runs, BASELINE, list(ARMS))  # a version sweep's (issue 23)
    return {**tables, **({"regime": check} if len(check) else {}),
            **({"per_record": per_record} if len(per_record) else {}),
            **({"between_versions": between} if len(between) else {})}


def load_processed(processed_dir: Path = paths.PROCESSED) -> tuple[pd.DataFrame, pd.DataFrame]:
    return common.load_processed(NAME, "summary", "runs", processed_dir=processed_dir)


# -- findings: sentences whose every number is read from the summary ---------------------------------

def finding_overhead(summary: pd.DataFrame, baseline: str = BASELINE) -> str:
    return common.per_variant_text(summary, _finding_overhead, baseline)


def _finding_overhead(summary: pd.DataFrame, baseline: str) -> str:
    """Per concurrency: the cheapest and dearest destination, and which ones are distinguishable from the baseline."""
    lines = []
    for clients, g in stats.logging_rows(summary, baseline).groupby("clients", sort=True):
        g = g.sort_values("ratio", ascending=False)
        best, worst = g.iloc[0], g.iloc[-1]
        slower = g[g["ratio_ci_high"] < 1]["configuration"].tolist()
        lines.append(
            f"- **{clients} client(s):** cheapest `{best['configuration']}` at {common.ci(best, 'ratio')} of the baseline's "
            f"throughput, dearest `{worst['configuration']}` at {common.ci(worst, 'ratio')}; "
            + (f"{len(slower)} of {len(g)} destinations are slower than `{baseline}` with 95 % confidence "
               f"({', '.join(f'`{c}`' for c in slower)})." if slower else
               f"no destination is slower than `{baseline}` with 95 % confidence.")
        )
    return "\n".join(lines)


def finding_loss(summary: pd.DataFrame, baseline: str = BASELINE) -> str:
    return common.per_variant_text(summary, _finding_loss, baseline)


def _finding_loss(summary: pd.DataFrame, baseline: str) -> str:
    """Which destinations lost statement records, and how many."""
    g = stats.logging_rows(summary, baseline)
    lost = g[g["log_loss_ci_low"] > 0]
    worst = g.loc[g["log_loss_mean"].idxmax()] if g["log_loss_mean"].notna().any() else None
    head = (
        f"Largest mean loss: `{worst['configuration']}` at {worst['clients']} client(s), "
        f"{100 * worst['log_loss_mean']:.3g} % of the expected records "
        f"(95 % CI {100 * worst['log_loss_ci_low']:.3g} to {100 * worst['log_loss_ci_high']:.3g} %, n={int(worst['n'])})."
        if worst is not None else "No destination expected records."
    )
    tail = (
        " Loss distinguishable from zero: " + ", ".join(f"`{r.configuration}` ({r.clients} clients)" for r in lost.itertuples()) + "."
        if len(lost) else " No destination's loss is distinguishable from zero at 95 % confidence."
    )
    return head + tail


def finding_rates(summary: pd.DataFrame, baseline: str = BASELINE) -> str:
    return common.per_variant_text(summary, _finding_rates, baseline)


def _finding_rates(summary: pd.DataFrame, baseline: str) -> str:
    g = stats.logging_rows(summary, baseline)
    top = g.loc[g["log_bytes_per_s_mean"].idxmax()]
    return (
        f"The logging rate ranged from {g['log_lines_per_s_mean'].min():,.0f} to {g['log_lines_per_s_mean'].max():,.0f} "
        f"lines/s; the most bytes went to `{top['configuration']}` at {top['clients']} client(s): "
        f"{top['log_bytes_per_s_mean'] / 1e6:.3g} MB/s."
    )


# -- tables for the notebook ----------------------------------------------------------------------

def environment_table(result: common.StudyResult) -> pd.DataFrame:
    return common.environment_table(result, {"timer loop (ns, pg_test_timing)": result.environment.get("timer_loop_ns")})


def beside_post(summary: pd.DataFrame, published: pd.DataFrame) -> pd.DataFrame:
    """Our ratio with its CI next to the post's ratio for the same destination and concurrency."""
    from ...base.formatting import ci_text

    pub = published.set_index(["configuration_key", "clients"])["ratio"]
    rows = []
    keys = common.variant_keys(summary, ["configuration", "clients"])
    for r in stats.logging_rows(summary, BASELINE).itertuples():
        post = pub.get((r.configuration, r.clients))
        inside = None if post is None or pd.isna(r.ratio_ci_low) else bool(r.ratio_ci_low <= post <= r.ratio_ci_high)
        rows.append({**({"variant": r.variant} if "variant" in keys else {}),
                     "configuration": r.configuration, "clients": r.clients,
                     "ours: ratio [95 % CI] (n)": ci_text(r.ratio, r.ratio_ci_low, r.ratio_ci_high, n=r.n),
                     "post 000": "–" if post is None else f"{post:.3g}",
                     "post inside our CI": "–" if inside is None else ("yes" if inside else "no")})
    return pd.DataFrame(rows).set_index(keys)


def published_for(study: pg.PgStudy) -> pd.DataFrame:
    """The post's ratios this run compares with: a named profile's own post (PROFILE_POSTS, its log files as
    our ``stderr``, its clients mapped per core to this machine), else post 000's by query mode."""
    if study.profile not in PROFILE_POSTS:
        return published_ratios(study.query_mode)
    import os

    from ...analyze import claim_rules, reference

    post, experiment = PROFILE_POSTS[study.profile]
    d = reference.published_ratios(post, experiment)
    d = d[d["metric"] == "throughput"].copy()
    d["configuration_key"] = d["configuration_key"].replace({"log_statement_all_file": "stderr",
                                                             "log_statement_all_syslog": "syslog"})
    per_core = d["clients"].astype(float) / claim_rules.POST_CORES[post[:3]]
    d["clients"] = (per_core * (os.cpu_count() or 1)).round().clip(lower=1).astype(int)  # as claims map them
    return d.reset_index(drop=True)


def logger_share(runs: pd.DataFrame, baseline: str = BASELINE) -> pd.DataFrame:
    """Per configuration and clients: the syslog daemons' CPU as a share of one core (logger CPU seconds over the
    run's wall seconds; the post: 85 %) with its CI, and the records received against those expected."""
    m = common.split_variant(runs)
    m = m.assign(logger_share=m["logger_cpu_s"] / m["wall_s"], received=m["log_records_received"],
                 expected=m["log_records_expected"])
    rows = []
    keys = common.variant_keys(m, ["configuration", "clients"])  # each server its own
    for key, g in m.groupby(keys, sort=False):
        e = stats.mean_ci(g["logger_share"])
        rows.append({**dict(zip(keys, key)), "n": e.n, "logger_share_mean": e.value,
                     "logger_share_ci_low": e.low, "logger_share_ci_high": e.high,
                     "records_expected": int(g["expected"].sum()), "records_received": int(g["received"].sum())})
    return common.configuration_order(pd.DataFrame(rows), keys, {"configuration": list(ARMS)})


def per_record_cost(runs: pd.DataFrame, baseline: str = BASELINE) -> pd.DataFrame:
    """Per configuration and clients, what one logged record cost (the measured runs whose records all arrived,
    or whose loss is not defined: the sampled arms): the server's CPU and voluntary context switches per
    transaction over the baseline of the same block and level (the mean of the block's baseline runs, however
    many the block layout runs), divided by the records per transaction; and the logging collector's own CPU and
    voluntary context switches (sleeps on an empty pipe) per record. Each a mean over blocks with its t CI and
    n (the logged runs, one a block). Why: a 10 % sample cost a fifth of the throughput where the full log
    cost a half (committed post000 run b224189, 2 clients), more per record than the full log."""
    m = common.split_variant(records.measured(runs))
    ex = m["extra"]
    m = m.assign(coll_cpu=ex.map(lambda e: e.get("collector_cpu_s", np.nan)).astype(float),
                 coll_vol=ex.map(lambda e: e.get("collector_ctx_voluntary", np.nan)).astype(float),
                 per_tx_cpu=1e6 * m["server_cpu_s"] / m["transactions"],
                 per_tx_vol=m["server_ctx_voluntary"] / m["transactions"],
                 rec_per_tx=m["log_records_received"] / m["transactions"])
    # each variant (server version) against its own baseline, never pooled; a block layout that runs the baseline
    # more than once a block (baseline_runs) gives the block one baseline, the mean of its runs: joined run by run,
    # each logged run would count once per baseline run, its n and t interval those of runs that are not there
    base = (m[m["configuration"] == baseline].groupby(["variant", "clients", "repeat"])[["per_tx_cpu", "per_tx_vol"]]
            .mean())
    kept = m[(m["configuration"] != baseline) & (m["log_records_received"] > 0)
             & (m["log_loss"].isna() | (m["log_loss"] <= 0.01))]
    kept = kept.join(base.add_suffix("_base"), on=["variant", "clients", "repeat"])
    kept = kept.assign(
        server_cpu_us_per_record=(kept["per_tx_cpu"] - kept["per_tx_cpu_base"]) / kept["rec_per_tx"],
        server_vol_per_record=(kept["per_tx_vol"] - kept["per_tx_vol_base"]) / kept["rec_per_tx"],
        collector_cpu_us_per_record=1e6 * kept["coll_cpu"] / kept["log_records_received"],
        collector_vol_per_record=kept["coll_vol"] / kept["log_records_received"])
    rows = []
    for (variant, cfg, clients), g in kept.groupby(["variant", "configuration", "clients"], sort=False):
        row = {"variant": variant, "configuration": cfg, "clients": clients, "records_per_tx": g["rec_per_tx"].mean()}
        for col in ("server_cpu_us_per_record", "server_vol_per_record", "collector_cpu_us_per_record",
                    "collector_vol_per_record"):
            e = stats.mean_ci(g[col])
            row.update({f"{col}_mean": e.value, f"{col}_ci_low": e.low, f"{col}_ci_high": e.high, f"{col}_n": e.n})
        rows.append(row)
    if not rows:
        return pd.DataFrame()
    out = pd.DataFrame(rows)
    out = out.drop(columns="variant") if (out["variant"] == "").all() else out
    keys = [c for c in ("variant", "configuration", "clients") if c in out]
    return common.configuration_order(out, keys, {"configuration": list(ARMS)})


def finding_per_record(table: pd.DataFrame, full: str = "stderr") -> str:
    """Markdown: per level, the server CPU and voluntary context switches per record of each sampled arm
    (SAMPLED) beside the full log to the same file (``full``); every number read from ``table``."""
    from ...base.formatting import ci_text

    sampled = [c for c in SAMPLED if c in set(table.get("configuration", ()))]
    if table is None or table.empty or not sampled or full not in set(table["configuration"]):
        return f"No sampled arm beside `{full}` in this run: the per-record costs are in the table."

    def ci(r, col):
        return ci_text(r[f"{col}_mean"], r[f"{col}_ci_low"], r[f"{col}_ci_high"], n=int(r[f"{col}_n"]))

    lines = []
    for clients, g in table.groupby("clients", sort=True):
        by = g.set_index("configuration")
        if full not in by.index:
            continue
        parts = [f"`{c}` {ci(by.loc[c], 'server_cpu_us_per_record')} µs and {ci(by.loc[c], 'server_vol_per_record')} "
                 f"switches ({by.loc[c, 'records_per_tx']:.3g} records per transaction)"
                 for c in [*sampled, full] if c in by.index]
        lines.append(f"- **{clients} client{'s' if clients != 1 else ''}**: " + "; ".join(parts) + ".")
    return ("**What one record costs, by how many are logged** (server CPU and voluntary context switches per "
            "record, within blocks over the baseline; t CIs over blocks, n blocks). A fixed cost per record would "
            "give every arm the same µs per record:\n\n" + "\n".join(lines))
