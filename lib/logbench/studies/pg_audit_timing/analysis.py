"""Study 05's analysis of recorded runs: the summary with the contention evidence, the perf profiles, the clock,
what track_io_timing added, the findings' statements (the paper's too), the processed tables, and the notebook's
tables beside the post (a version sweep's side by side, never pooled)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...measure import clock, contention, runner
from ...base import paths, records, stats
from ...base.formatting import ci_text
from .. import common
from .spec import BASELINE, CONFIGURATIONS, DIRECT, EXPERIMENT, NAME, PIPE, published_ratios


# -- tables ------------------------------------------------------------------------------------------------------

ALSO = ("latency_mean_ms", "log_loss", "log_lines_per_s", "wchan_pipe_share", "wchan_lock_share",
        "wchan_running_share", "backend_ctx_voluntary_per_tx", "backend_ctx_involuntary_per_tx",
        "collector_ctx_voluntary_per_s", "collector_ctx_involuntary_per_s", "blks_read_per_tx", "us_per_tx",
        "server_cpu_s")


# A switchback window's own columns (logbench.measure.switchback.window_records): no per-run contention evidence.
ALSO_WINDOWS = ("latency_mean_ms", "log_loss", "log_lines_per_s", "us_per_tx", "server_cpu_s")


def summary(runs: pd.DataFrame, cores: int) -> pd.DataFrame:
    """Per configuration × clients: tps and its ratio to none, loss, and the contention evidence (block design:
    the ratio within blocks, stats.cell_ratio; switchback: the switchback estimator's, common.switchback_summary)."""
    from ...measure import switchwindows

    measured = contention.with_evidence(records.measured(runs))
    if switchwindows.is_switchback(measured):
        s = common.switchback_summary(measured, BASELINE, ALSO_WINDOWS, list(CONFIGURATIONS))
    else:
        s = common.summary_per_variant(measured, BASELINE, ALSO, list(CONFIGURATIONS))
    # after n: the columns before it are the summary's keys, and a key other than configuration and clients would
    # split the study into cells (logbench.publish.report)
    s.insert(s.columns.get_loc("n") + 1, "clients_per_core", s["clients"] / cores)
    return common.with_server_version(s, runs)  # the server each row's runs ran on (a sweep's: per version)


def profiles(runs: pd.DataFrame) -> pd.DataFrame:
    """The perf summaries taken during each cell's first warm-up: configuration, clients, rank, symbol, shares
    (a version sweep's: with its variant, the configuration's plain name)."""
    swept = common.with_variant(runs)
    rows = [{**({"variant": r.variant} if r.variant else {}),
             "configuration": r.configuration.partition(runner.SplitBench.SEP)[2] if r.variant else r.configuration,
             "clients": r.clients, **p}
            for r in swept.itertuples() for p in (r.extra or {}).get("profile_top", [])]
    return pd.DataFrame(rows)


def clock_tables(env: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(ns per loop with its CI beside the post's, the histogram's mean shares)."""
    c = env.get("clock", {})
    loops, hist = pd.DataFrame(c.get("loops", [])), pd.DataFrame(c.get("histogram", []))
    summary_row = pd.DataFrame([{**clock.loop_summary(loops), "clocksource": env.get("clocksource", "")}])
    return summary_row, (clock.histogram_summary(hist) if len(hist) else hist)


def io_timing_cost(runs: pd.DataFrame, loop_ns: float, summ: pd.DataFrame | None = None) -> pd.DataFrame:
    """track_io_timing alone: the µs per transaction it added (difference of means, Welch CI) beside what its
    clock reads predict (block reads per transaction × 2 reads × ns per read). A switchback run's windows are
    not independent runs and count no block reads: there the added µs come from the arm's ratio and its
    interval (``summ``, the switchback estimator's) applied to the baseline's µs per transaction, and the
    prediction is left out."""
    from ...measure import switchwindows
    from ...base.stats import difference_ci

    if switchwindows.is_switchback(runs):
        return _io_timing_from_ratio(summ if summ is not None else summary(runs, 1))
    r = common.split_variant(contention.with_evidence(records.measured(runs)))
    rows = []
    # a version sweep's servers each on their own ('' for one server), never pooled
    for (variant, k), g in r.groupby(["variant", "clients"], sort=False):
        on, off = g[g["configuration"] == "io_timing"], g[g["configuration"] == BASELINE]
        if not len(on) or not len(off):
            continue
        e = difference_ci(on["us_per_tx"], off["us_per_tx"])
        reads = float(on["blks_read_per_tx"].mean())
        rows.append({**({"variant": variant} if variant else {}), "clients": k, "added_us_per_tx": e.value,
                     "ci_low": e.low, "ci_high": e.high, "n": e.n, "blocks_read_per_tx": reads,
                     "predicted_us_per_tx": clock.predicted_cost_us(reads, loop_ns)})
    out = pd.DataFrame(rows)
    return common.configuration_order(out, common.variant_keys(out, ["clients"]), {}) if len(out) else out


def _io_timing_from_ratio(summ: pd.DataFrame) -> pd.DataFrame:
    """µs per transaction added = base µs × (1/ratio − 1), its interval from the ratio's (a monotone map)."""
    rows = []
    for k, g in summ.groupby("clients"):
        on, off = g[g["configuration"] == "io_timing"], g[g["configuration"] == BASELINE]
        if not len(on) or not len(off) or pd.isna(on["ratio"].iloc[0]):
            continue
        base_us, r = float(off["us_per_tx_mean"].iloc[0]), on.iloc[0]
        rows.append({"clients": k, "added_us_per_tx": base_us * (1 / r["ratio"] - 1),
                     "ci_low": base_us * (1 / r["ratio_ci_high"] - 1), "ci_high": base_us * (1 / r["ratio_ci_low"] - 1),
                     "n": int(r["n"]), "blocks_read_per_tx": float("nan"), "predicted_us_per_tx": float("nan")})
    return pd.DataFrame(rows)


def processed_tables(result: common.StudyResult) -> dict[str, pd.DataFrame]:
    from ...measure import switchwindows

    loops, hist = clock_tables(result.environment)
    summ = summary(result.runs, common.cores_of(result.environment))
    io = io_timing_cost(result.runs, float(loops["loop_ns"].iloc[0]), summ)
    # a version sweep's: each later version's ratio to its own baseline over the oldest's (issue 23)
    between = common.variant_differences(result.runs, BASELINE, list(CONFIGURATIONS))
    return {"summary": summ, "profiles": profiles(result.runs), "clock": loops, "clock_histogram": hist,
            "io_timing": io, "findings": paper_findings(summ, loops, io),
            "runs": records.flatten(common.with_variant(result.runs)),
            **switchwindows.processed_tables(result.study, result.runs, BASELINE),
            **({"between_versions": between} if len(between) else {})}


def load_processed(processed_dir: Path = paths.PROCESSED) -> tuple[pd.DataFrame, ...]:
    return common.load_processed(NAME, "summary", "profiles", "clock", "clock_histogram", "io_timing", "runs",
                                 processed_dir=processed_dir)


# -- the post beside ours, and the findings --------------------------------------------------------------------

def post_profiles() -> pd.DataFrame:
    """The post's perf numbers (reference data): profile, symbol, percent."""
    from ...analyze import reference

    v = reference.load_values()
    v = v[(v["experiment"] == EXPERIMENT) & v["metric"].astype(str).str.startswith("perf_")
          & ~v["metric"].isin(["perf_samples", "perf_event_count"])]
    parts = v["item"].astype(str).str.split(" | ", n=1, regex=False)
    return pd.DataFrame({"profile": parts.str[0], "symbol": parts.str[1], "metric": v["metric"].astype(str),
                         "percent": v["value"].astype(float)}).reset_index(drop=True)


def beside_post(summ: pd.DataFrame) -> pd.DataFrame:
    """Our ratio per configuration and clients level next to the post's ratios at 28 and 56 clients."""
    pub = published_ratios().dropna(subset=["ratio"])
    post = {(r.configuration_key, int(r.clients)): r.ratio for r in pub.itertuples()}
    rows = []
    keys = common.variant_keys(summ, ["configuration", "clients"])  # a version sweep's: each version's rows
    for r in stats.logging_rows(summ, BASELINE).itertuples():
        rows.append({**({"variant": r.variant} if "variant" in keys else {}),
                     "configuration": r.configuration, "clients": r.clients, "per core": r.clients_per_core,
                     "ours: ratio [95 % CI] (n)": ci_text(r.ratio, r.ratio_ci_low, r.ratio_ci_high, n=r.n),
                     **{f"post @ {k}": (f"{post[(r.configuration, k)]:.3g}" if (r.configuration, k) in post else "–")
                        for k in (28, 56)}})
    return pd.DataFrame(rows).set_index(keys)


def finding_ratios(summ: pd.DataFrame) -> str:
    return common.per_variant_text(summ, _finding_ratios)


def _finding_ratios(summ: pd.DataFrame) -> str:
    lines = []
    for k, g in stats.logging_rows(summ, BASELINE).groupby("clients", sort=True):
        worst = g.loc[g["ratio"].idxmin()]
        lines.append(f"- **{k} client(s) ({g['clients_per_core'].iloc[0]:.3g} per core):** dearest "
                     f"`{worst['configuration']}` at {common.ci(worst, 'ratio')}; " + ", ".join(
                         f"`{r.configuration}` {r.ratio:.3g}" for r in g.itertuples()) + ".")
    return "\n".join(lines)


def finding_pipe(summ: pd.DataFrame) -> str:
    """Direct writes (collector off) against the pipe (collector on), same records, per level (and version)."""
    return common.per_variant_text(summ, _finding_pipe)


def _finding_pipe(summ: pd.DataFrame) -> str:
    lines = []
    for k, g in summ.groupby("clients", sort=True):
        p, d = g[g["configuration"] == PIPE], g[g["configuration"] == DIRECT]
        if not len(p) or not len(d):
            continue
        p, d = p.iloc[0], d.iloc[0]
        lines.append(f"- **{k} client(s):** through the pipe {common.ci(p, 'ratio')} of none, blocked in a pipe "
                     f"wait {100 * p['wchan_pipe_share_mean']:.2g} % of backend samples; written directly "
                     f"{common.ci(d, 'ratio')}, blocked on a lock {100 * d['wchan_lock_share_mean']:.2g} %.")
    return "\n".join(lines) or "The pipe pair did not run."


def finding_contention(summ: pd.DataFrame, configuration: str = "log_statement_all_duration") -> str:
    """Per level (and version): how much of the backends' time went to a pipe wait or a lock, and how often the
    collector woke."""
    return common.per_variant_text(summ, _finding_contention, configuration)


def _finding_contention(summ: pd.DataFrame, configuration: str) -> str:
    if "wchan_pipe_share_mean" not in summ:
        return ("No contention evidence: the switchback design's windows are seconds of one load, and the wchan "
                "samples and context switches are taken per run (the block design, the standard profile).")
    g = summ[summ["configuration"] == configuration]
    return "\n".join(
        f"- **{r.clients} client(s) ({r.clients_per_core:.3g} per core), `{configuration}`:** backends blocked in a pipe "
        f"write {100 * r.wchan_pipe_share_mean:.2g} % and on a lock {100 * r.wchan_lock_share_mean:.2g} % of samples, "
        f"running {100 * r.wchan_running_share_mean:.2g} %; {r.backend_ctx_voluntary_per_tx_mean:.3g} voluntary "
        f"switches per transaction; the collector woke {r.collector_ctx_voluntary_per_s_mean:,.0f} times a second."
        for r in g.itertuples()) or f"`{configuration}` did not run."


def finding_io_timing(io: pd.DataFrame) -> str:
    return common.per_variant_text(io, _finding_io_timing)


def _finding_io_timing(io: pd.DataFrame) -> str:
    return "\n".join(
        f"- track_io_timing alone at {r.clients} clients added {ci_text(r.added_us_per_tx, r.ci_low, r.ci_high, n=r.n)} "
        f"µs per transaction; " + (f"its {r.blocks_read_per_tx:.3g} block reads per transaction predict "
                                    f"{r.predicted_us_per_tx:.3g} µs of clock reads." if pd.notna(r.blocks_read_per_tx)
                                    else "block reads are not counted per switchback window (the block design's "
                                         "runs count them).") for r in io.itertuples()) or "track_io_timing alone did not run."


def finding_clock(loops: pd.DataFrame) -> str:
    r = loops.iloc[0]
    return (f"pg_test_timing here: {ci_text(r['loop_ns'], r['loop_ns_ci_low'], r['loop_ns_ci_high'], n=int(r['n']))} "
            f"ns per loop (clocksource `{r['clocksource']}`), beside the post's {r['post_loop_ns']} ns.")


# The post's symbols (its profiles of the 56- and 112-client runs) and what each is called in a kernel and a
# PostgreSQL of today: its CentOS 7 kernel's pipe_write/pipe_wait/mutex_lock are anon_pipe_write and
# __mutex_lock.constprop.0 in 6.x; _mcount/__mcount_internal exist only in a binary built for gprof (-pg).
POST_SYMBOLS = {"errfinish": ("errfinish",), "EmitErrorReport": ("EmitErrorReport",),
                "write_csvlog": ("write_csvlog",), "pipe_write": ("pipe_write",), "pipe_wait": ("pipe_wait",),
                "mutex_lock": ("mutex_lock",), "osq_lock": ("osq_lock",), "mutex_spin_on_owner": ("mutex_spin_on_owner",),
                "__mcount_internal": ("mcount",), "_raw_spin_unlock_irqrestore": ("_raw_spin_unlock_irqrestore",)}


def profile_beside_post(prof: pd.DataFrame, configuration: str, clients: int) -> pd.DataFrame:
    """The post's symbols with its percentages, beside ours in one profiled cell (logbench.measure.contention); a version
    sweep's versions side by side, each its own columns."""
    from ...analyze.plots import variants

    post = post_profiles()
    # A call graph drawn by caller (the post's last one) shows shares of its parent, 100 % at each root: not
    # shares of the samples, so it is left out.
    relative = post[(post["metric"] == "perf_callgraph_share") & (post["percent"] >= 99.99)]["profile"].unique()
    post = post[~((post["metric"] == "perf_callgraph_share") & post["profile"].isin(relative))]
    tables = []
    for v, part in variants(prof):
        cell = part[(part["configuration"] == configuration) & (part["clients"] == clients)] if len(part) else part
        label = f"ours{' ' + v if v else ''}: {configuration} @ {clients}"
        t = contention.beside_reference(cell, post, POST_SYMBOLS, label)
        tables.append(t.rename(columns={"ours: matched": f"{v}: matched"}) if v else t)
    return pd.concat([tables[0], *(t.iloc[:, 2:] for t in tables[1:])], axis=1)  # the post's two columns once


def top_table(prof: pd.DataFrame, configuration: str, clients: int, view: str = "self", n: int = 10) -> pd.DataFrame:
    """The cell's top symbols; a version sweep's versions side by side."""
    from ...analyze.plots import variants

    parts = [(v, contention.top_table(p[(p["configuration"] == configuration) & (p["clients"] == clients)]
                                      if len(p) else p, view, n)) for v, p in variants(prof)]
    return parts[0][1] if len(parts) == 1 else pd.concat({v: t.reset_index(drop=True) for v, t in parts}, axis=1)


def paper_findings(summ: pd.DataFrame, loops: pd.DataFrame, io: pd.DataFrame) -> pd.DataFrame:
    """The statements the paper prints under this study (plain text; every number read from the tables)."""
    from ...analyze.plots import variants

    plain = lambda t: t.replace("**", "").replace("`", "").replace("- ", "", 1)  # noqa: E731
    rows = []
    # a version sweep's: each version's statements, its label in the item and the text (one server: as before)
    ios = dict(variants(io)) if len(io) else {}
    for v, part in variants(summ):
        at, said = f"{v}." if v else "", f"PostgreSQL {v.removeprefix('pg')}: " if v else ""
        rows += [{"item": f"{at}ratios_{i}", "statement": said + plain(x)}
                 for i, x in enumerate(_finding_ratios(part).splitlines())]
        rows += [{"item": f"{at}pipe_{i}", "statement": said + "The pipe pair: " + plain(x)}
                 for i, x in enumerate(_finding_pipe(part).splitlines())]
        if v == "":
            rows.append({"item": "clock", "statement": plain(finding_clock(loops))})
        rows += [{"item": f"{at}io_timing_{i}", "statement": said + plain(x)}
                 for i, x in enumerate(_finding_io_timing(ios.get(v, io.iloc[:0])).splitlines())]
    if len(variants(summ)) > 1:
        rows.append({"item": "clock", "statement": plain(finding_clock(loops))})
    return pd.DataFrame(rows, columns=["item", "statement"])


def environment_table(result: common.StudyResult) -> pd.DataFrame:
    """The environment (a version sweep's: one column per server, side by side)."""
    return common.environment_table(result, {"cores": common.cores_of(result.environment)})
