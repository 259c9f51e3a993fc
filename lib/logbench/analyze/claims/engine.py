"""The claims file, checked, and its evaluation: each claim to a verdict by the steps of the package's docstring."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .. import claim_rules
from ...base import paths
from ..claim_rules import ClaimRule
from ...base.settings import is_aa
from ...base.stats import Estimate
from .comparability import MAX_CLIENTS_PER_CORE, Concurrency, concurrency_here, requirement_mismatch
from .data import REGIMES, StudyData, _bound, _int_list, _names, _where, restrict
from .metrics import (COST_GROWTH, DIFFERENCE_OF, POOLED_METRICS, PREFIX_METRICS, RATIO_OF, RUN_METRICS,
                      SPECIAL_METRICS, _is_ratio, _regression_estimate, biased_baseline, environment_estimate,
                      inverted, metric)
from .text import _join, estimate_text, fmt, range_text
from .verdicts import (EQUIVALENCE, INCONCLUSIVE, NOT_COMPARABLE, NOT_MEASURED, NOT_REPRODUCIBLE, RULES,
                       _decisive, _why, combine, deciding_text, fastest_verdict, in_range_verdict, rule_text)

CLAIMS_FILE = paths.RAW / "claims.csv"

COLUMNS = ("claim_id", "post", "claim", "published", "published_ids", "study", "where", "metric", "configuration",
           "reference", "clients", "regime", "rule", "low", "high", "note")


def load(path: Path | str = CLAIMS_FILE) -> pd.DataFrame:
    """The claims file, checked: known rules, metrics and regimes, unique ids, low <= high."""
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}; expected {list(COLUMNS)}")
    problems = []
    if df["claim_id"].duplicated().any():
        problems.append(f"duplicate claim_id {sorted(df.loc[df['claim_id'].duplicated(), 'claim_id'])}")
    for _, r in df.iterrows():
        cid = r["claim_id"]
        if r["rule"] not in RULES:
            problems.append(f"{cid}: rule {r['rule']!r} not in {RULES}")
        m = r["metric"]
        if not (m in RUN_METRICS or m in SPECIAL_METRICS or m.startswith(PREFIX_METRICS + (RATIO_OF, DIFFERENCE_OF))):
            problems.append(f"{cid}: metric {m!r} unknown")
        if r["regime"] not in REGIMES:
            problems.append(f"{cid}: regime {r['regime']!r} not in {REGIMES}")
        if r["rule"] == "fastest" and not r["reference"]:
            problems.append(f"{cid}: rule 'fastest' needs the rivals in 'reference'")
        lo, hi = _bound(r["low"], -math.inf), _bound(r["high"], math.inf)
        if lo > hi:
            problems.append(f"{cid}: low {lo} > high {hi}")
        try:
            _where(r["where"])
        except ValueError as e:
            problems.append(f"{cid}: {e}")
        try:
            _int_list(r["clients"])
        except ValueError:
            problems.append(f"{cid}: clients {r['clients']!r} is not a ';'-separated list of whole numbers")
    if problems:
        raise ValueError(f"{path}: " + "; ".join(problems))
    return df


# --- evaluation ---------------------------------------------------------------------------------------------

SUMMARY_COLUMNS = ("claim_id", "post", "claim", "published", "claimed", "study", "measured_at", "ours", "value",
                   "ci_low", "ci_high", "verdict", "why", "rule")
DETAIL_COLUMNS = ("claim_id", "configuration", "reference", "clients", "value", "ci_low", "ci_high", "n",
                  "verdict")


def evaluate(claims: pd.DataFrame, studies: dict[str, StudyData], *, cores: int,
             regression: pd.DataFrame | None = None,
             orders: dict[str, tuple[tuple[str, str], ...]] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per claim with its verdict, one row per evaluated case). ``orders``: study -> its PHYSICAL_ORDER
    (pairs whose first does strictly less work), for :func:`inverted`."""
    rows, details = [], []
    for _, c in claims.iterrows():
        row, det = _evaluate_one(c, studies, cores, regression, orders or {})
        rows.append(row)
        details.extend(det)
    return (pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS)),
            pd.DataFrame(details, columns=list(DETAIL_COLUMNS)))


@dataclass
class _Judging:
    """One claim while it is judged: its row with the rule's overrides, the rule, the claimed range, and the
    summary row as far as it is known (``base``)."""

    c: pd.Series
    rule: ClaimRule
    low: float
    high: float
    base: dict

    def done(self, verdict: str, why: str, details: list[dict] | None = None) -> tuple[dict, list[dict]]:
        return {**self.base, "verdict": verdict, "why": why}, details or []


def _judging(c: pd.Series) -> _Judging:
    """The claims file's row as its rule (claim_rules) says to judge it, with the claimed range."""
    rule = claim_rules.rule_for(c["claim_id"])
    c = c.copy()
    for col in ("study", "where", "configuration", "reference", "clients"):
        if getattr(rule, col):
            c[col] = getattr(rule, col)
    if rule.metric:
        c["metric"] = rule.metric
    low = rule.low if rule.low is not None else (_bound(c["low"], -math.inf) if rule.high is None else -math.inf)
    high = rule.high if rule.high is not None else (_bound(c["high"], math.inf) if rule.low is None else math.inf)
    claimed = range_text(low, high) if c["rule"] == "in_range" else "fastest"
    if c["metric"].startswith(DIFFERENCE_OF):
        claimed = f"difference {claimed}"
    base = {"claim_id": c["claim_id"], "post": c["post"], "claim": c["claim"], "published": c["published"],
            "claimed": claimed, "study": c["study"], "measured_at": "", "ours": "—", "value": math.nan,
            "ci_low": math.nan, "ci_high": math.nan,
            "rule": rule.rule_note or rule_text(c["rule"], low, high)}
    return _Judging(c, rule, low, high, base)


def as_judged(claims: pd.DataFrame) -> pd.DataFrame:
    """The claims file's rows as their rules (claim_rules) have them judged: the rule's study (the processed stem
    whose runs decide the claim), where, configuration, reference, clients and metric in place of the file's."""
    return pd.DataFrame([_judging(c).c for _, c in claims.iterrows()], columns=claims.columns).reset_index(drop=True)


def _evaluate_one(c: pd.Series, studies: dict[str, StudyData], cores: int,
                  regression: pd.DataFrame | None, orders: dict) -> tuple[dict, list[dict]]:
    j = _judging(c)
    c, rule = j.c, j.rule
    wanted = _int_list(c["clients"])
    conc = concurrency_here(wanted, rule, claim_rules.post_cores(c["post"]), cores)
    study = studies.get(c["study"]) if c["study"] else None
    configs = _names(c["configuration"])
    if wanted and not conc.here:
        sub = restrict(study, c["where"], c["regime"])[0] if study is not None else None
        closest = _closest(c, sub, configs, MAX_CLIENTS_PER_CORE * cores)
        if closest is not None:
            (cfg, k, e) = closest
            j.base.update(ours=f"{estimate_text(e)} at {k} clients (closest here)", value=e.value, ci_low=e.low,
                          ci_high=e.high, measured_at=f"{cfg} @ {k} clients")
        return j.done(NOT_REPRODUCIBLE, conc.why_not)
    if not c["study"]:
        return j.done(NOT_MEASURED, "no study in the suite measures this yet")
    if study is None:
        return j.done(NOT_MEASURED, f"study '{c['study']}' would measure this; its processed data "
                                    f"({c['study']}_runs.csv) does not exist yet"
                      + (f"; then: {rule.pending}" if rule.pending else ""))
    if rule.pending:
        return j.done(NOT_MEASURED, rule.pending)
    note = (f"{_join(conc.infeasible)} clients not reproducible here; " if conc.infeasible else "")
    note += f"{conc.how}; " if conc.how else ""
    if c["metric"].startswith(PREFIX_METRICS):
        return _single_value(j, study, regression, note)
    return _per_cell(j, study, conc, configs, orders, note)


def _single_value(j: _Judging, study: StudyData, regression: pd.DataFrame | None, note: str) -> tuple[dict, list[dict]]:
    """A claim on one value that is not per cell: the study's environment record, or the regression."""
    c, metric_name, low, high = j.c, j.c["metric"], j.low, j.high
    if metric_name.startswith("env:"):
        key = metric_name[4:]
        e = environment_estimate(study.environment, key)
        q = environment_estimate(study.environment, key, EQUIVALENCE)
        if e is None:
            return j.done(NOT_MEASURED, f"the environment record of '{study.name}' has no '{key}'")
        where = f"{study.name} environment ({key}, n = {e.n})"
        if e.n == 1:
            note += "one measurement, no CI; "
    else:
        term = metric_name[len("regression:"):]
        e = _regression_estimate(regression, study.engine, term)
        q = _regression_estimate(regression, study.engine, term, EQUIVALENCE)
        if e is None:
            return j.done(NOT_MEASURED, f"no regression estimate of '{term}' for {study.engine} yet")
        where = f"{study.engine} regression"
    verdict = in_range_verdict(e, low, high, q)
    j.base.update(ours=estimate_text(e), value=e.value, ci_low=e.low, ci_high=e.high, measured_at=where)
    det = [{"claim_id": c["claim_id"], "configuration": "", "reference": "", "clients": math.nan,
            "value": e.value, "ci_low": e.low, "ci_high": e.high, "n": e.n, "verdict": verdict}]
    return j.done(verdict, note + _why(verdict, c["rule"], deciding_text(e, q, low, high)), det)


def _per_cell(j: _Judging, study: StudyData, conc: Concurrency, configs: tuple[str, ...], orders: dict,
              note: str) -> tuple[dict, list[dict]]:
    """A claim judged cell by cell: the runs it is about, its levels here, each case's verdict, and the
    combined one (withheld where our runs differ from the post's)."""
    c, metric_name = j.c, j.c["metric"]
    whole = study.runs
    study, why = restrict(study, c["where"], c["regime"])
    if study is None:
        return j.done(NOT_MEASURED, why)
    note += why
    missing = [x for x in configs + _names(c["reference"]) if x not in study.configurations]
    if missing:
        return j.done(NOT_MEASURED, f"configuration(s) {', '.join(missing)} not in '{study.name}' "
                                    f"(it has {', '.join(x for x in study.configurations if not is_aa(x))})")
    column = (metric_name.split(":", 1)[1] if metric_name.startswith((RATIO_OF, DIFFERENCE_OF))
              else RUN_METRICS.get(metric_name))
    if column and column not in study.runs.columns:
        return j.done(NOT_MEASURED, f"'{study.name}' records no '{column}'")
    levels = [k for k in (conc.here or study.clients) if k in study.clients]
    if metric_name == COST_GROWTH:  # each level against the lowest, which is no case of its own
        levels = [k for k in levels if k != min(study.clients)]
    if not levels:
        nearest = _nearest(c, study, configs, conc.here)
        if nearest is not None:
            cfg, k, e = nearest
            j.base.update(ours=f"{estimate_text(e)} at {k} clients (nearest level run, not judged)", value=e.value,
                          ci_low=e.low, ci_high=e.high, measured_at=f"{cfg} @ {k} clients")
        return j.done(NOT_MEASURED, note + f"'{study.name}' did not run {_join(conc.here)} clients (it ran "
                                            f"{_join(study.clients)})")
    if metric_name in POOLED_METRICS:  # the claim's quantity is one over its levels together
        levels = ["/".join(str(k) for k in levels)]
    details, cases, biased, equivalent = _cases(j, study, levels, configs, orders)
    if biased:
        note += "; ".join(dict.fromkeys(biased)) + " (the instrument cannot be read there); "
    return _combined(j, study, whole, configs, details, cases, equivalent, note)


def _cases(j: _Judging, study: StudyData, levels: list[int], configs: tuple[str, ...], orders: dict):
    """Each (configuration, reference, clients) case with its estimate and verdict: (details, cases, why some
    were made inconclusive, each in_range case's 90 % interval)."""
    c, metric_name, low, high = j.c, j.c["metric"], j.low, j.high
    details, cases, biased = [], [], []
    equivalent: dict[tuple, Estimate] = {}  # each in_range case's 90 % interval
    for k in levels:
        if c["rule"] == "fastest":
            cfg = configs[0]
            rivals = [r for r in _names(c["reference"]) if r != cfg]
            ratios = [metric(study, "ratio", cfg, k, r) for r in rivals]
            verdict = fastest_verdict(ratios)
            best = int(np.nanargmin([r.value for r in ratios]))  # the strongest rival: smallest ratio
            e, ref = ratios[best], rivals[best]
            details.append(_detail(c, cfg, ref, k, e, verdict))
            cases.append((cfg, ref, k, e, verdict))
        else:
            for cfg in configs:
                ref = c["reference"] or (study.baseline if _is_ratio(metric_name) else "")
                e = metric(study, metric_name, cfg, k, ref)
                q = equivalent[cfg, ref, k] = metric(study, metric_name, cfg, k, ref, EQUIVALENCE)
                verdict = in_range_verdict(e, low, high, q)
                aa = biased_baseline(study, metric_name, ref, k)
                if aa is not None and verdict != INCONCLUSIVE:
                    # a ratio to a baseline that differs from itself beyond its CI proves nothing at this level
                    verdict = INCONCLUSIVE
                    biased.append(f"the A/A control at {k} clients, {estimate_text(aa)}, excludes 1")
                dearer = inverted(study, orders.get(study.name, ()), metric_name, cfg, ref, k, e)
                if dearer is not None and verdict != INCONCLUSIVE:
                    # the anomaly screen's inversion: a configuration doing strictly less work kept less
                    # throughput than one doing more; its ratio there is an artefact, never a finding
                    verdict = INCONCLUSIVE
                    biased.append(f"at {k} clients {cfg} ({fmt(e.value)}) kept less throughput than {dearer[0]} "
                                  f"({fmt(dearer[1].value)}), which does strictly more work (an inversion)")
                details.append(_detail(c, cfg, ref, k, e, verdict))
                cases.append((cfg, ref, k, e, verdict))
    return details, cases, biased, equivalent


def _combined(j: _Judging, study: StudyData, whole: pd.DataFrame, configs: tuple[str, ...], details: list[dict],
              cases: list, equivalent: dict, note: str) -> tuple[dict, list[dict]]:
    """The cases' combined verdict and its decisive case, or 'not comparable' where the judged runs differ
    from what the post ran (``whole``: all the study's runs, for a requirement on a ratio to others)."""
    c, metric_name = j.c, j.c["metric"]
    verdict = combine([v for *_, v in cases])
    decisive = _decisive(cases, verdict)
    cfg, ref, k, e, _ = decisive
    op = " − " if metric_name.startswith(DIFFERENCE_OF) else "/"
    label = f"{cfg}{op}{ref}" if _is_ratio(metric_name) or c["rule"] == "fastest" else cfg
    if len(cases) == 1:
        ours = estimate_text(e)
    else:
        vals = [x[3].value for x in cases]
        ours = (f"{len(cases)} cases, {fmt(float(np.nanmin(vals)))} to {fmt(float(np.nanmax(vals)))}; "
                f"decisive: {label} @ {k}: {estimate_text(e)}")
    j.base.update(ours=ours, value=e.value, ci_low=e.low, ci_high=e.high, measured_at=f"{label} @ {k} clients")
    judged = study.runs[study.runs["configuration"].astype(str).isin(configs)]
    mismatches = [m for m in (requirement_mismatch(r, judged, study.environment, whole) for r in j.rule.requires)
                  if m]
    if mismatches:
        for d in details:
            d["verdict"] = NOT_COMPARABLE
        return j.done(NOT_COMPARABLE, "not comparable: " + "; ".join(mismatches), details)
    deciding = deciding_text(e, equivalent[cfg, ref, k], j.low, j.high) if (cfg, ref, k) in equivalent else ""
    return j.done(verdict, note + _why(verdict, c["rule"], deciding), details)


def _detail(c, cfg, ref, k, e: Estimate, verdict: str) -> dict:
    return {"claim_id": c["claim_id"], "configuration": cfg, "reference": ref, "clients": k, "value": e.value,
            "ci_low": e.low, "ci_high": e.high, "n": e.n, "verdict": verdict}


def _nearest(c, study: StudyData, configs: tuple[str, ...], wanted: tuple[int, ...]):
    """Our number at the level nearest the one a claim is judged at, where the study did not run that one: shown,
    never judged (a level of more clients per core is another regime, e.g. oversubscribed cores)."""
    if not wanted or not configs or c["rule"] == "fastest" or not study.clients:
        return None
    k = min(study.clients, key=lambda x: (abs(x - wanted[0]), x))
    ref = c["reference"] or (study.baseline if _is_ratio(c["metric"]) else "")
    e = metric(study, c["metric"], configs[0], k, ref)
    return None if math.isnan(e.value) else (configs[0], k, e)


def _closest(c, study: StudyData | None, configs: tuple[str, ...], limit: int):
    """Our number at the highest client count we can drive, for a claim we cannot reproduce."""
    if study is None or not configs or c["metric"].startswith(PREFIX_METRICS):
        return None
    if any(x not in study.configurations for x in configs + _names(c["reference"])):
        return None
    levels = [k for k in study.clients if k <= limit]
    if not levels:
        return None
    k = max(levels)
    cfg = configs[0]
    if c["rule"] == "fastest":
        rivals = [r for r in _names(c["reference"]) if r != cfg]
        ratios = [metric(study, "ratio", cfg, k, r) for r in rivals]
        return cfg, k, ratios[int(np.nanargmin([r.value for r in ratios]))]
    ref = c["reference"] or (study.baseline if _is_ratio(c["metric"]) else "")
    return cfg, k, metric(study, c["metric"], cfg, k, ref)
