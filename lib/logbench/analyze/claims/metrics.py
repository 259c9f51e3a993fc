"""Our estimate of a claim's metric in one (configuration, clients) cell, with its CI: run columns, ratios
within blocks or by the switchback estimator, differences, the cost growth, the environment record and the
regression; and the two checks that make a ratio unreadable (a biased A/A, an inversion)."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pandas as pd
from scipy import stats as sstats

from ...base import stats
from ...base.settings import aa_name
from ...base.stats import Estimate, difference_ci  # noqa: F401  (claims.difference_ci, as before)
from .data import StudyData

# metric -> run column averaged per run (None: computed specially)
RUN_METRICS = {
    "tps": "tps", "log_loss": "log_loss", "log_lines_per_s": "log_lines_per_s",
    "log_bytes_per_s": "log_bytes_per_s", "latency_mean_ms": "latency_mean_ms", "latency_p95_ms": "latency_p95_ms",
    "server_cpu_s": "server_cpu_s", "logger_cpu_s": "logger_cpu_s",
}
SPECIAL_METRICS = ("ratio", "logger_cpu_share", "logger_us_per_line", "logged_time_loss")
# ratio_of:<column>: mean of a run column over the reference configuration's, with Fieller's CI
RATIO_OF = "ratio_of:"
# difference_of:<column>: mean of a run column minus the reference configuration's, with Welch's CI
DIFFERENCE_OF = "difference_of:"
PREFIX_METRICS = ("env:", "regression:")
# logged_time_loss: post 000's proxy for syslog's loss, a sum over all its levels (claim_rules.RATE_LIMITED_IO): per
# block, the statement time (transactions × mean latency) whose record did not arrive, over all the statement time
# of the configuration's runs at every level judged. Judged once over the levels together, never level by level.
POOLED_TIME_LOSS = "logged_time_loss"
POOLED_METRICS = (POOLED_TIME_LOSS,)
# Logging's machine time per transaction (cores x (1/tps - 1/tps of the reference), µs, block by block) at a level
# minus at the study's lowest level, Welch's CI: does what logging costs a transaction grow with concurrency?
COST_GROWTH = "cost_growth_us"


def _cell(study: StudyData, configuration: str, clients: int) -> pd.DataFrame:
    r = study.runs
    return r[(r["configuration"].astype(str) == configuration) & (r["clients"].astype(int) == clients)]


def metric(study: StudyData, name: str, configuration: str, clients: int, reference: str = "",
           confidence: float = stats.CONFIDENCE) -> Estimate:
    """Our estimate of a metric for one (configuration, clients) cell, with its CI (95 % unless asked;
    logbench.base.stats). A pooled metric (:data:`POOLED_METRICS`) takes its levels together, ``clients`` as '1/2/4'."""
    if name == POOLED_TIME_LOSS:
        return logged_time_loss(study, configuration, pooled_levels(clients), confidence)
    cell = _cell(study, configuration, clients)
    if name == "ratio" and _is_switchback(study):
        return switchback_ratio(study, configuration, clients, reference, confidence)
    if name == "ratio":
        # the study level's model (issue 40): every run of the level estimates its one sigma, where the per-cell
        # interval spends only the cell's few runs on it (and drifts with them); the per-cell interval where the model
        # does not apply (another reference than the baseline, a level it cannot fit)
        est = model_ratio(study, configuration, clients, reference, confidence)
        if est is not None:
            return est
    if name == "ratio" or name.startswith(RATIO_OF):
        # the block design's ratio within its blocks, as the study's summary makes it (stats.cell_ratio)
        col = "tps" if name == "ratio" else name[len(RATIO_OF):]
        ref = _cell(study, reference or study.baseline, clients)
        if col not in cell.columns:
            return Estimate(math.nan, math.nan, math.nan, 0)
        block = "repeat" if "repeat" in cell.columns else None
        a, b = (f.assign(v=pd.to_numeric(f[col], errors="coerce").astype(float)) for f in (cell, ref))
        return stats.cell_ratio(a, b, "v", block, confidence)[0]
    if name.startswith(DIFFERENCE_OF):
        col = name[len(DIFFERENCE_OF):]
        ref = _cell(study, reference or study.baseline, clients)
        if col not in cell.columns:
            return Estimate(math.nan, math.nan, math.nan, 0)
        return difference_ci(pd.to_numeric(cell[col], errors="coerce"), pd.to_numeric(ref[col], errors="coerce"),
                             confidence)
    if name == COST_GROWTH:
        return cost_growth(study, configuration, clients, reference, confidence)
    if name == "logger_us_per_line":
        lines = pd.to_numeric(cell["log_lines"], errors="coerce").astype(float)
        return stats.mean_ci((1e6 * cell["logger_cpu_s"].astype(float) / lines).where(lines > 0), confidence)
    if name == "logger_cpu_share":
        wall = cell["wall_s"].astype(float).where(cell["wall_s"].astype(float) > 0, cell["duration_s"].astype(float))
        return stats.mean_ci(cell["logger_cpu_s"].astype(float) / wall, confidence)
    return stats.mean_ci(pd.to_numeric(cell[RUN_METRICS[name]], errors="coerce"), confidence)


_MODEL_FITS: dict[tuple[int, str, float], tuple[pd.DataFrame, pd.DataFrame | None]] = {}


def model_ratio(study: StudyData, configuration: str, clients: int, reference: str = "",
                confidence: float = stats.CONFIDENCE) -> Estimate | None:
    """The ratio of ``configuration`` to ``reference`` (the study's baseline unless named) at ``clients`` from the
    main model of its level (logbench.analyze.models.fit_main: log tps ~ arm + smooth time, common sigma, t on the residual
    df; the arms coded against the reference, so another arm as the reference is the same fit's contrast); None
    where it does not apply: a study with several cells at that level (04's tests and regimes, a version sweep's
    servers: fitted apart, so never one row), a level the model cannot fit."""
    from .. import models

    reference = reference or study.baseline
    key = (id(study.runs), reference, float(confidence))
    if key not in _MODEL_FITS or _MODEL_FITS[key][0] is not study.runs:
        try:
            fit = models.fit_main(study.runs, baseline=reference, confidence=confidence)
        except (ValueError, KeyError, np.linalg.LinAlgError):
            fit = None
        # the runs kept beside their fit: an id is only unique while its object lives
        _MODEL_FITS[key] = (study.runs, fit)
    fit = _MODEL_FITS[key][1]
    if fit is None or "clients" not in fit:
        return None
    row = fit[(fit["arm"] == configuration) & (pd.to_numeric(fit["clients"]) == int(clients))]
    if len(row) != 1 or not math.isfinite(float(row["low"].iloc[0])):
        return None
    row = row.iloc[0]
    return Estimate(float(row["ratio"]), float(row["low"]), float(row["high"]), int(row["n"]))


def pooled_levels(clients) -> tuple[int, ...]:
    """'1/2/4' (a pooled case's levels, as the claims print them) -> (1, 2, 4); a single level as itself."""
    return tuple(int(k) for k in str(clients).split("/") if k.strip())


def logged_time_loss(study: StudyData, configuration: str, levels: tuple[int, ...],
                     confidence: float = stats.CONFIDENCE) -> Estimate:
    """Per block (``repeat``) where every level ran: Σ log_loss × transactions × mean latency over Σ transactions ×
    mean latency, the configuration's runs at ``levels``; mean and t CI over those blocks. In a closed loop a run's
    statement time is about its clients × its length, so a level weighs as much as its logged durations did in the
    post's sum; a dropped record is taken to be a statement of the run's mean duration (rsyslog's rate limit drops by
    arrival, not by duration)."""
    r = study.runs
    cell = r[(r["configuration"].astype(str) == configuration) & r["clients"].astype(int).isin(levels)]
    need = {"log_loss", "transactions", "latency_mean_ms", "repeat"}
    if not len(cell) or not need <= set(cell.columns):
        return Estimate(math.nan, math.nan, math.nan, 0)
    num = {c: pd.to_numeric(cell[c], errors="coerce").astype(float) for c in need - {"repeat"}}
    frame = pd.DataFrame({"repeat": cell["repeat"], "clients": cell["clients"].astype(int),
                          "time": num["transactions"] * num["latency_mean_ms"], "loss": num["log_loss"]}).dropna()
    per_block = []
    for _, b in frame.groupby("repeat"):
        if set(b["clients"]) != set(levels) or not b["time"].sum() > 0:
            continue
        per_block.append(float((b["loss"] * b["time"]).sum() / b["time"].sum()))
    return stats.mean_ci(per_block, confidence)


def logging_us_per_tx(study: StudyData, configuration: str, clients: int, reference: str = "") -> pd.Series:
    """Per block: what logging adds to a transaction in machine time, cores × 10⁶ × (1/tps − 1/tps of the
    reference in the same block), µs. A share of throughput falls when the baseline's own transactions get dearer
    (more clients per core); this does not: it is the time the configuration adds, whatever the transaction costs."""
    cores = float(study.environment.get("cpu_count") or os.cpu_count() or 1)
    ref = _cell(study, reference or study.baseline, clients)
    cell = _cell(study, configuration, clients)
    if "repeat" not in cell.columns:
        return pd.Series(dtype=float)
    tps = [f.assign(t=pd.to_numeric(f["tps"], errors="coerce").astype(float)).groupby("repeat")["t"].mean()
           for f in (cell, ref)]
    both = pd.concat(tps, axis=1, keys=("cell", "ref")).dropna()
    return cores * 1e6 * (1.0 / both["cell"] - 1.0 / both["ref"])


def cost_growth(study: StudyData, configuration: str, clients: int, reference: str = "",
                confidence: float = stats.CONFIDENCE) -> Estimate:
    """:func:`logging_us_per_tx` at ``clients`` minus at the study's lowest level (Welch's CI over the blocks);
    NaN at the lowest level itself, which is the comparison's reference."""
    lowest = min(int(k) for k in study.clients)
    if int(clients) == lowest:
        return Estimate(math.nan, math.nan, math.nan, 0)
    return difference_ci(logging_us_per_tx(study, configuration, clients, reference),
                         logging_us_per_tx(study, configuration, lowest, reference), confidence)


def _is_switchback(study: StudyData) -> bool:
    from ...measure import switchwindows

    return switchwindows.is_switchback(study.runs)


def switchback_ratio(study: StudyData, configuration: str, clients: int, reference: str = "",
                     confidence: float = stats.CONFIDENCE) -> Estimate:
    """A switchback study's ratio of ``configuration`` to ``reference`` (the baseline unless named) at one
    clients level: the switchback estimator's interval at ``confidence`` (switchstats.arm_ratios: within-block
    log-ratios, Newey-West per load, random effects over the loads), never Fieller's on windows taken as
    independent runs. ``n`` counts the windows. A study with several cells (regime, test) is refused: their
    loads are not one population."""
    from ...measure import switchstats, switchwindows

    r = study.runs[study.runs["clients"].astype(int) == int(clients)]
    cells = [c for c in ("regime", "test") if c in r.columns and r[c].nunique() > 1]
    if cells:
        raise ValueError(f"{study.name}: a switchback ratio over several cells ({', '.join(cells)}) pools loads "
                         "that are not one population")
    r = r.assign(extra=r["extra"].map(lambda e: json.loads(e) if isinstance(e, str) else e))
    est = switchstats.arm_ratios(switchwindows.windows_frame(r), reference or study.baseline, confidence)
    row = est[est["arm"] == configuration] if len(est) else est
    if not len(row):
        return Estimate(math.nan, math.nan, math.nan, 0)
    row = row.iloc[0]
    return Estimate(float(row["ratio"]), float(row["ratio_ci_low"]), float(row["ratio_ci_high"]),
                    int(row["n_windows"]))


def _is_ratio(metric_name: str) -> bool:
    return metric_name == "ratio" or metric_name.startswith((RATIO_OF, DIFFERENCE_OF))


def _regression_estimate(regression: pd.DataFrame | None, engine: str, term: str,
                         confidence: float = stats.CONFIDENCE) -> Estimate | None:
    """A coefficient of the line-cost regression (``findings_regression.csv``): a per-level term ('… @ k clients')
    from ``per_clients``, any other from ``main``. None unless exactly one fit of the engine has it: fits of
    different environments are never merged into one number. Another confidence than the file's 95 %: the
    coefficient ± its standard error × the normal quantile (the fits are HC3, large n)."""
    if regression is None or not len(regression):
        return None
    model = "per_clients" if "@" in term else "main"
    row = regression[(regression["engine"] == engine) & (regression["model"] == model) & (regression["term"] == term)]
    if len(row) != 1:
        return None
    r = row.iloc[0]
    if confidence == stats.CONFIDENCE:
        return Estimate(float(r["estimate"]), float(r["ci_low"]), float(r["ci_high"]), int(r["n"]))
    z = float(sstats.norm.ppf(0.5 + stats.CONFIDENCE / 2))
    se = float(r["se"]) if "se" in r.index and pd.notna(r["se"]) else (float(r["ci_high"]) - float(r["ci_low"])) / (2 * z)
    h = float(sstats.norm.ppf(0.5 + confidence / 2)) * se
    return Estimate(float(r["estimate"]), float(r["estimate"]) - h, float(r["estimate"]) + h, int(r["n"]))

def environment_estimate(environment: dict, key: str, confidence: float = stats.CONFIDENCE) -> Estimate | None:
    """A value of a study's environment record by dotted path: a number is one measurement (no CI); a list
    (of numbers, or of records whose last path part names the field) is repeated measurements, mean and t CI."""
    parts = key.split(".")
    v: object = environment
    for i, part in enumerate(parts):
        if isinstance(v, list):  # the rest of the path names a field of each record
            field_name = ".".join(parts[i:])
            v = [r.get(field_name) for r in v if isinstance(r, dict)]
            break
        if not isinstance(v, dict) or part not in v:
            return None
        v = v[part]
    if isinstance(v, list):
        xs = [float(x) for x in v if isinstance(x, (int, float))]
        return stats.mean_ci(xs, confidence) if xs else None
    if isinstance(v, (int, float)):
        return Estimate(float(v), math.nan, math.nan, 1)
    return None


def biased_baseline(study: StudyData, metric_name: str, reference: str, clients: int) -> Estimate | None:
    """The study's A/A ratio at this level when a ratio to its baseline is judged and that A/A's CI excludes 1."""
    aa = aa_name(study.baseline)
    if metric_name != "ratio" or reference != study.baseline or aa not in study.configurations:
        return None
    e = metric(study, "ratio", aa, clients, study.baseline)
    return e if (e.low > 1 or e.high < 1) else None


def inverted(study: StudyData, order: tuple[tuple[str, str], ...], metric_name: str, configuration: str,
             reference: str, clients: int, e: Estimate) -> tuple[str, Estimate] | None:
    """(the dearer configuration, its ratio) when ``configuration`` is the cheaper of a physically ordered pair and
    its ratio point lies below the dearer one's at this level (logbench.analyze.anomalies' ``inversion``), else None."""
    if metric_name != "ratio" or reference != study.baseline:
        return None
    for cheap, dear in order:
        if cheap == configuration and dear in study.configurations:
            d = metric(study, "ratio", dear, clients, reference)
            if e.value == e.value and d.value == d.value and e.value < d.value:
                return dear, d
    return None
