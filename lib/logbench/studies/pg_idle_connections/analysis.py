"""Study 08's analysis of recorded runs: the summary and its baseline, the slopes per kind and clients, the
findings' statements, the processed tables, and the notebook's tables and figure of them (a version sweep's side
by side, never pooled)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import statsmodels.formula.api as smf

from ...base import paths, records, stats
from ...base.settings import is_aa
from .. import common
from .spec import KINDS, NAME, name_of, parse, plain


@dataclass(frozen=True)
class SessionNumbers:
    session_kind: str
    sessions: float
    sessions_open_before: float
    sessions_open_after_run: float
    sessions_left_after_close: float
    server_pss_mb: float
    server_uss_mb: float


def measured(runs: pd.DataFrame) -> pd.DataFrame:
    m = common.measured_columns(common.split_variant(runs), SessionNumbers)
    parsed = m["configuration"].map(parse)  # split_variant left the plain names
    return m.assign(max_connections=parsed.map(lambda p: p[0]), kind=parsed.map(lambda p: p[1]))


def summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Per configuration and clients: tps and its ratio to the smallest max_connections without sessions
    (CI within blocks: stats.cell_ratio), sessions open, server memory."""
    names = runs["configuration"].map(plain)
    order = [name_of(m, k) for m in sorted({parse(c)[0] for c in names}) for k in KINDS]
    baseline = baseline_of(runs)
    out = common.summary_per_variant(common.measured_columns(runs, SessionNumbers), baseline,
                                     ("sessions", "server_pss_mb", "server_uss_mb", "latency_p95_ms"), order)
    return common.with_server_version(out, runs)


def baseline_of(runs: pd.DataFrame) -> str:
    """The smallest max_connections without sessions that ran (a profile's levels are its own)."""
    names = runs["configuration"].map(plain)
    return min((c for c in names.unique() if parse(c)[1] == "none" and not is_aa(c)),
               key=lambda c: parse(c)[0], default=names.iloc[0] if len(runs) else "")


def slopes(runs: pd.DataFrame) -> pd.DataFrame:
    """Per session kind and clients: OLS of tps on open sessions (kind 'none': on max_connections), HC3 errors;
    the slope per 100 with its CI, also relative to the fitted tps at none; and the memory per session (PSS, MB).

    The A/A runs are runs of the smallest max_connections like the baseline's, and count as such: leaving them
    out let the baseline's own luck (its first three runs) set the slope. Each interleaved block gets its own
    intercept, so a slowdown shared by a whole block is not read as a trend across configurations."""
    m = measured(runs)
    rows = []
    # per version of a version sweep ('' for one server): each its own fit, never pooled
    for (variant, kind, clients), g in m.groupby(["variant", "kind", "clients"], sort=True):
        x = "max_connections" if kind == "none" else "sessions"
        g = g.assign(x=g[x].astype(float), tps=g["tps"].astype(float), mem=g["server_pss_mb"].astype(float))
        if g["x"].nunique() < 2:
            continue
        blocks = " + C(repeat)" if g["repeat"].nunique() > 1 and len(g) > g["repeat"].nunique() + 2 else ""
        fit = smf.ols("tps ~ x" + blocks, data=g).fit(cov_type="HC3")
        lo, hi = fit.conf_int(alpha=1 - stats.CONFIDENCE).loc["x"]
        b0 = float(fit.predict(g.assign(x=0.0)).mean())
        mem = smf.ols("mem ~ x" + blocks, data=g).fit(cov_type="HC3")
        mlo, mhi = mem.conf_int(alpha=1 - stats.CONFIDENCE).loc["x"]
        rows.append({**({"variant": variant} if variant else {}), "kind": kind, "clients": int(clients),
                     "per_100": f"{x} (per 100)", "n": int(fit.nobs),
                     "slope_tps": 100 * fit.params["x"], "ci_low": 100 * lo, "ci_high": 100 * hi,
                     "slope_pct": 100 * 100 * fit.params["x"] / b0, "pct_ci_low": 100 * 100 * lo / b0,
                     "pct_ci_high": 100 * 100 * hi / b0, "intercept_tps": b0, "p_value": float(fit.pvalues["x"]),
                     "mb_per_session": float(mem.params["x"]) if kind != "none" else math.nan,
                     "mb_ci_low": float(mlo) if kind != "none" else math.nan,
                     "mb_ci_high": float(mhi) if kind != "none" else math.nan})
    return common.with_server_version(pd.DataFrame(rows), runs)


def findings(runs: pd.DataFrame) -> pd.DataFrame:
    """Each slope as a sentence (item, statement), its numbers printed from the data."""
    out = []
    for r in slopes(runs).itertuples():
        what = {"none": "max_connections alone", "sleep": "sessions in pg_sleep", "idle": "idle sessions"}[r.kind]
        flat = r.ci_low <= 0 <= r.ci_high
        mem = "" if r.mb_per_session != r.mb_per_session else (
            f"; server memory {r.mb_per_session:.3g} MB per session [{r.mb_ci_low:.3g}, {r.mb_ci_high:.3g}]")
        variant = getattr(r, "variant", "")
        out.append({"item": f"slope.{variant + '.' if variant else ''}{r.kind}.{r.clients}", "statement":
                    f"{'PostgreSQL ' + variant.removeprefix('pg') + ', ' if variant else ''}"
                    f"{what}, {r.clients} working clients: {r.slope_tps:+.3g} tps per 100 "
                    f"[{r.ci_low:+.3g}, {r.ci_high:+.3g}] ({r.slope_pct:+.2g} % of {r.intercept_tps:.3g} tps; "
                    f"n={r.n}) — " + ("no trend distinguishable from flat" if flat else
                                      ("declining" if r.ci_high < 0 else "rising")) + mem + "."})
    return pd.DataFrame(out, columns=["item", "statement"])


def processed_tables(result: common.StudyResult) -> dict[str, pd.DataFrame]:
    runs = result.runs
    table = summary(runs)
    # a version sweep's: each later version's ratio to its own baseline over the oldest's (issue 23)
    between = common.variant_differences(runs, baseline_of(runs), list(dict.fromkeys(table["configuration"])))
    return {"summary": table, "slopes": slopes(runs), "findings": findings(runs),
            "runs": records.flatten(common.with_variant(common.measured_columns(runs, SessionNumbers))),
            **({"between_versions": between} if len(between) else {})}


def load_processed(processed_dir: Path = paths.PROCESSED) -> tuple[pd.DataFrame, ...]:
    return common.load_processed(NAME, "summary", "slopes", processed_dir=processed_dir)


# -- a version sweep's tables side by side: each version's own cells, never pooled ----------------------------

def variants_of(frame: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """plots.variants' servers, each with its rows without the variant column; [('', frame)] for one server."""
    from ...analyze import plots

    return [(v, g.drop(columns="variant", errors="ignore")) for v, g in plots.variants(frame)]


def side_by_side(summary: pd.DataFrame, value: str) -> pd.DataFrame:
    """plots.ci_table of ``value`` per version, the versions' columns side by side (one server: the table)."""
    from ...analyze import plots

    parts = variants_of(summary)
    if len(parts) == 1:
        return plots.ci_table(parts[0][1], value)
    return pd.concat({v: plots.ci_table(g, value) for v, g in parts}, axis=1)


SESSION_COLUMNS = ["sessions", "sessions_open_before", "sessions_open_after_run", "sessions_left_after_close",
                   "server_pss_mb", "server_uss_mb"]


def sessions_check(runs: pd.DataFrame) -> pd.DataFrame:
    """The sessions wanted and counted per run, and the server's memory: count, mean, min, max over the measured
    runs (per version, side by side)."""
    m = measured(runs)
    parts = variants_of(m)
    stats_of = lambda g: g[SESSION_COLUMNS].describe().T[["count", "mean", "min", "max"]]  # noqa: E731
    if len(parts) == 1:
        return stats_of(parts[0][1])
    return pd.concat({v: stats_of(g) for v, g in parts}, axis=1)


def sessions_figure(runs: pd.DataFrame):
    """tps of each measured run against its open sessions (kind none: its max_connections), a column per
    working-clients level and, for a version sweep, a row per version."""
    import seaborn as sns

    m = measured(runs)
    m = m.assign(x=m["sessions"].where(m["kind"] != "none", m["max_connections"]))
    several = m["variant"].nunique() > 1
    g = sns.relplot(data=m[~m["configuration"].map(is_aa)], x="x", y="tps", hue="kind", col="clients",
                    row="variant" if several else None, kind="line", marker="o", errorbar=("ci", 95),
                    facet_kws={"sharey": False}, height=3.2)
    g.set_axis_labels("open sessions (none: max_connections)", "tps")
    return g


def environment_table(result: common.StudyResult) -> pd.DataFrame:
    """The environment (a version sweep's: one column per server, side by side)."""
    return common.environment_table(result)
