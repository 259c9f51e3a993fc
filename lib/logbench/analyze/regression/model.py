"""The fits: one per engine, environment, regime and workload; the main and per-clients models (WLS, HC3),
Cook's distance and the refit without the influential runs."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import patsy
import statsmodels.api as sm
import statsmodels.formula.api as smf
from statsmodels.stats.outliers_influence import OLSInfluence

from .observations import CACHED, FAMILIES, FIT_COLUMNS, family_term

MODELS = ("main", "per_clients")
# The sensitivity refit of "main" without the runs flagged by Cook's distance.
WITHOUT_INFLUENTIAL = "main_without_influential"
COV_TYPE = "HC3"
WEIGHTS = "1 / pooled within-configuration variance of µs per transaction in the baseline group (WLS)"
COOKS_FACTOR = 4  # a run is influential when its Cook's distance exceeds COOKS_FACTOR / n
COOKS_RULE = f"Cook's distance > {COOKS_FACTOR}/n"

@dataclass(frozen=True)
class Model:
    """One fitted formula (or why it could not be fitted)."""

    name: str
    formula: str
    result: object | None  # statsmodels WLS results with HC3 covariance
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.result is not None


@dataclass(frozen=True)
class Fit:
    """The models of one engine in one environment."""

    engine: str
    env_id: str
    data: pd.DataFrame
    families: tuple[str, ...]
    models: dict[str, Model]
    cooks: pd.Series  # Cook's distance of the main model, indexed like data
    influential: pd.DataFrame  # runs above the threshold
    cooks_threshold: float
    notes: tuple[str, ...] = field(default_factory=tuple)
    regime: str = CACHED
    workload: str = ""

    @property
    def key(self) -> str:
        return fit_key(self.engine, self.env_id, self.regime, self.workload)

    @property
    def main(self) -> Model:
        return self.models["main"]

    @property
    def studies(self) -> tuple[str, ...]:
        return tuple(sorted(self.data["study"].unique()))


def fit_key(engine: str, env_id: str, regime: str = CACHED, workload: str = "") -> str:
    """``engine@env_id``, then ``/io_bound`` for an IO-bound fit and ``/<workload>`` where the engine has several."""
    key = f"{engine}@{env_id}" if env_id else engine
    return key + ("" if regime == CACHED else f"/{regime}") + (f"/{workload}" if workload else "")


def _rank_ok(formula: str, data: pd.DataFrame) -> bool:
    y, x = patsy.dmatrices(formula, data, return_type="dataframe")
    return x.shape[0] > x.shape[1] and np.linalg.matrix_rank(x.to_numpy()) == x.shape[1]


def _fit(name: str, formula: str, data: pd.DataFrame) -> Model:
    if not _rank_ok(formula, data):
        return Model(name, formula, None, "not identifiable from these runs (design matrix rank-deficient)")
    res = smf.wls(formula, data, weights=data["weight"]).fit(cov_type=COV_TYPE)
    return Model(name, formula, res)


# A group's log rate "varies" when its range exceeds this share of its largest value.
VARY_MIN = 0.1


def _varies(data: pd.DataFrame, column: str) -> pd.Series:
    g = data.groupby("baseline")[column]
    top = g.transform("max").abs()
    return (g.transform("max") - g.transform("min")) > VARY_MIN * top.where(top > 0, np.inf)


def _cooks_distance(result) -> np.ndarray:
    """Cook's distance of a WLS fit: that of the OLS fit on the whitened variables (statsmodels' influence
    measures are defined for OLS; WLS is OLS on y·√w and X·√w)."""
    whitened = sm.OLS(result.model.wendog, result.model.wexog).fit()
    return np.asarray(OLSInfluence(whitened).cooks_distance[0])


def formulas(families: tuple[str, ...], with_kb: bool = True) -> dict[str, str]:
    lines = [family_term(f) for f in families]
    kb = " + kb_per_tx" if with_kb else ""
    return {
        "main": "us_per_tx ~ 0 + C(baseline) + " + " + ".join(lines) + kb,
        "per_clients": "us_per_tx ~ 0 + C(baseline) + " + " + ".join(f"C(clients):{t}" for t in lines) + kb,
    }


def fit(data: pd.DataFrame, engine: str | None = None, env_id: str | None = None, regime: str | None = None,
        workload: str | None = None) -> Fit:
    """Fit the models to the prepared runs of one engine in one environment, regime and workload (refuses to
    pool several)."""
    chosen = {}
    for col, want in zip(FIT_COLUMNS, (engine, env_id, regime, workload)):
        have = sorted(data[col].unique()) if col in data.columns else [CACHED if col == "regime" else ""]
        if want is None:
            if len(have) != 1:
                raise ValueError(f"fit() takes one {col} at a time; got {have}. Use fit_all().")
            want = have[0]
        if col in data.columns:
            data = data[data[col] == want]
        chosen[col] = want
    engine, env_id = chosen["engine"], chosen["env_id"]
    data = data.reset_index(drop=True)
    notes: list[str] = []
    # A group whose runs all log at the same rate says nothing about the slopes (its intercept absorbs it).
    varies = _varies(data, "records_per_tx") | _varies(data, "kb_per_tx")
    if not varies.all():
        left = data[~varies].groupby("study").size()
        notes.append("left out, their log rate does not vary within a baseline group: "
                     + ", ".join(f"{k} ({v} runs)" for k, v in left.items()))
        data = data[varies].reset_index(drop=True)
    if data["records_per_tx"].nunique() < 2:
        raise ValueError(f"{engine} @ {env_id}: every run logged the same number of records per transaction; "
                         "a per-line cost needs a baseline and at least one logging configuration")
    families = tuple(f for f in FAMILIES if (data[family_term(f)] > 0).any())
    forms = formulas(families)
    if not _rank_ok(forms["main"], data):
        forms = formulas(families, with_kb=False)
        notes.append("the cost per kB is not separable from the cost per line in these runs "
                     "(bytes per record do not vary within a family); kB term dropped")
    models = {}
    for name in MODELS:
        if name == "per_clients" and data["clients"].nunique() < 2:
            models[name] = Model(name, forms[name], None, "one concurrency level only")
            continue
        models[name] = _fit(name, forms[name], data)
    main = models["main"]
    if main.ok:
        cooks = pd.Series(_cooks_distance(main.result), index=data.index, name="cooks_d")
    else:
        cooks = pd.Series(np.nan, index=data.index, name="cooks_d")
    threshold = COOKS_FACTOR / len(data)
    flagged = data.assign(cooks_d=cooks)[cooks > threshold]
    if len(flagged):
        models[WITHOUT_INFLUENTIAL] = _fit(WITHOUT_INFLUENTIAL, forms["main"], data.drop(index=flagged.index))
    else:
        models[WITHOUT_INFLUENTIAL] = Model(WITHOUT_INFLUENTIAL, forms["main"], None,
                                            "no run exceeds the Cook's distance threshold")
    return Fit(engine=engine, env_id=env_id, data=data, families=families, models=models, cooks=cooks,
               influential=flagged, cooks_threshold=threshold, notes=tuple(notes), regime=chosen["regime"],
               workload=chosen["workload"])


def fit_all(data: pd.DataFrame) -> dict[str, Fit]:
    """One fit per (engine, environment, regime, workload) that has a logging configuration, keyed by
    :func:`fit_key`."""
    out = {}
    for group, sub in data.groupby(list(FIT_COLUMNS), sort=True):
        if not _varies(sub, "records_per_tx").any():
            continue
        f = fit(sub, *group)
        out[f.key] = f
    return out


