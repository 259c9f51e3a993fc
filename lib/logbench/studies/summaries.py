"""A study's summary table: mean ± CI and the ratio to the baseline per cell, per variant (block design)
or with the switchback estimator's interval; a study's own measurements as columns."""

from __future__ import annotations

import pandas as pd

from .variants import configuration_order, split_variant


def summary_per_variant(runs: pd.DataFrame, baseline: str, also: tuple[str, ...], order: list[str],
                        by: tuple[str, ...] = ("configuration", "clients")) -> pd.DataFrame:
    """Mean ± CI and the ratio to the baseline per ``by`` cell, within the block design's blocks (``repeat``;
    Fieller's CI on independent means where a cell's runs cannot be paired: stats.cell_ratio) — per variant,
    each against its own baseline, when the schedule spanned several servers (never pooled across
    environments)."""
    from ..base import stats

    measured = split_variant(runs)
    parts = []
    for variant, g in measured.groupby("variant", sort=False):
        s = stats.summarise(g, by=list(by), baseline=baseline, also=also, block="repeat")
        parts.append(s.assign(variant=variant)[["variant", *s.columns]] if variant else s)
    out = pd.concat(parts, ignore_index=True)
    keys = list(by) + (["variant"] if "variant" in out else [])
    return configuration_order(out, keys, {"configuration": order})


def switchback_summary(runs: pd.DataFrame, baseline: str, also: tuple[str, ...], order: list[str]) -> pd.DataFrame:
    """:func:`summary_per_variant`'s table for a switchback study (the claims, the paper and the answer read its
    columns): means over windows as there, and the ratio with the switchback estimator's interval
    (within-unit paired log-ratios, autocorrelation-robust per load, random effects over loads:
    logbench.measure.switchstats), never Fieller's on windows taken as independent runs. ``n`` counts windows;
    ``n_loads`` the independent loads; ``ratio_method`` says how the interval was made."""
    from ..base import stats
    from ..measure import switchwindows

    measured = split_variant(switchwindows.in_time(runs))
    s = stats.summarise(measured, by=["configuration", "clients"], baseline=baseline, also=also)
    est = switchwindows.estimates(measured, baseline).rename(columns={"arm": "configuration"})
    keep = ["configuration", "clients", "ratio", "ratio_ci_low", "ratio_ci_high", "halfwidth", "n_loads", "method"]
    est = est[keep].rename(columns={"halfwidth": "ratio_halfwidth", "method": "ratio_method"})
    s = s.drop(columns=["ratio", "ratio_ci_low", "ratio_ci_high", "ratio_halfwidth"]).merge(
        est, on=["configuration", "clients"], how="left")
    base = s["configuration"] == baseline
    s.loc[base, "ratio"] = 1.0
    s["design"] = "switchback"
    return configuration_order(s, ["configuration", "clients"], {"configuration": order})


_NUMERIC, _TEXT = {"float", "int", float, int}, {"str", "bool", str, bool}


def measured_columns(runs: pd.DataFrame, numbers: type) -> pd.DataFrame:
    """Runs with each scalar field of the dataclass ``numbers`` (a study's own measurements, recorded in
    each run's ``extra``) as a column: numbers as floats (NaN where a run lacks it), text as is.
    Fields holding lists or dicts (per-second series, step times) stay in ``extra``."""
    import dataclasses

    out = runs.copy()
    for f in dataclasses.fields(numbers):
        if f.type in _NUMERIC:
            out[f.name] = pd.to_numeric(out["extra"].map(lambda e, n=f.name: e.get(n)), errors="coerce").astype(float)
        elif f.type in _TEXT:
            out[f.name] = out["extra"].map(lambda e, n=f.name: e.get(n))
    return out

