"""The posts' quantitative claims, checked against our data by stated rules.

Each claim is a row of ``data/raw/claims.csv`` (see ``paper/README.md``): what
the post says, the number it published, the claimed range that number stands
for, and what tests it here — a study, a metric, configuration(s), clients and
a rule. What we decided about judging it on this machine (the post's cores, the
configuration it must match, a rule on another scale) lives in
:mod:`logbench.claim_rules`. :func:`evaluate` turns each row into a verdict by
code, in this order:

1. **Concurrency here.** A post's clients map to this machine by clients per
   core: k clients on the post's c cores are k × (our cores) / c clients here
   (post 004: 32 on 8 cores = 4 per core = 8 clients on 2 cores). A claim that
   needs k *simultaneously runnable* processes (post 003's contention on the
   logger pipe at 56 clients) cannot be scaled down: **not reproducible here**
   when k exceeds our cores; so is a mapped level above ``MAX_CLIENTS_PER_CORE``
   × cores. Our closest number is still shown, labelled as such.
2. **not measured yet** — the study has no processed data, the claim needs a
   regime the data does not have (IO-bound: a database larger than RAM), the
   configuration / client count is not among the runs, or the claim waits for a
   study named in its rule.
3. the rule, applied to each (configuration, clients) case with our 95 % CI:

   * ``in_range``: agreement is an equivalence test, two one-sided tests at 5 %
     (TOST): our **90 %** CI inside the claimed range → confirmed; our 95 % CI
     and the range do not overlap → refuted; otherwise inconclusive, and the
     verdict says how narrow an interval would decide it. The claimed range is the
     margin stated per claim in the claims file (its note says from what: the
     post's rounding, its own spread, or the words it used). A value with no
     CI (a single measurement, e.g. the environment's timer overhead) is
     confirmed when it lies in the range and refuted otherwise.
   * ``fastest``: tps of the configuration over tps of each rival (Fieller CI):
     every CI above 1 → confirmed; some CI below 1 → refuted; otherwise
     inconclusive.

   Cases combine: any refuted → refuted; all confirmed → confirmed; otherwise
   inconclusive.
4. **not comparable: <why>** replaces the verdict when our runs differ from the
   post's in a way that changes the quantity (protocol, which setting logs the
   statement, syslog rate limiting, bytes per logged query): our number is shown,
   the verdict withheld.

A/A control rows (``<baseline>_again``) are never a claim's configuration.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from scipy import stats as sstats

from . import claim_rules, paths, stats
from .settings import aa_name, is_aa
from .claim_rules import ClaimRule, Requirement
from .stats import Estimate

CLAIMS_FILE = paths.RAW / "claims.csv"
MAX_CLIENTS_PER_CORE = 4
# pgbench database size per scale unit, from post 000's own numbers (scale 200 = 2997 MB, 2000 = 29 GB).
PGBENCH_BYTES_PER_SCALE = 15e6

CONFIRMED, REFUTED, INCONCLUSIVE = "confirmed", "refuted", "inconclusive"
NOT_REPRODUCIBLE, NOT_MEASURED = "not reproducible here", "not measured yet"
NOT_COMPARABLE = "not comparable"
VERDICTS = (CONFIRMED, REFUTED, INCONCLUSIVE, NOT_COMPARABLE, NOT_REPRODUCIBLE, NOT_MEASURED)

RULES = ("in_range", "fastest")
# Agreement with a claimed range is judged by two one-sided tests at 5 % each: a 90 % interval inside it.
EQUIVALENCE = 0.90
REGIMES = ("", "cached", "io_bound")
# metric -> run column averaged per run (None: computed specially)
RUN_METRICS = {
    "tps": "tps", "log_loss": "log_loss", "log_lines_per_s": "log_lines_per_s",
    "log_bytes_per_s": "log_bytes_per_s", "latency_mean_ms": "latency_mean_ms", "latency_p95_ms": "latency_p95_ms",
    "server_cpu_s": "server_cpu_s", "logger_cpu_s": "logger_cpu_s",
}
SPECIAL_METRICS = ("ratio", "logger_cpu_share", "logger_us_per_line")
# ratio_of:<column>: mean of a run column over the reference configuration's, with Fieller's CI
RATIO_OF = "ratio_of:"
# difference_of:<column>: mean of a run column minus the reference configuration's, with Welch's CI
DIFFERENCE_OF = "difference_of:"
PREFIX_METRICS = ("env:", "regression:")
# Logging's machine time per transaction (cores x (1/tps - 1/tps of the reference), µs, block by block) at a level
# minus at the study's lowest level, Welch's CI: does what logging costs a transaction grow with concurrency?
COST_GROWTH = "cost_growth_us"

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


def _bound(text: str, default: float) -> float:
    return float(text) if str(text).strip() else default


def _int_list(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in str(text).split(";") if x.strip())


def _names(text: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in str(text).split(";") if x.strip())


@dataclass(frozen=True)
class StudyData:
    """A study's processed data as the claims and the paper see it."""

    name: str
    engine: str
    baseline: str
    runs: pd.DataFrame  # measured runs only (no warm-ups)
    summary: pd.DataFrame | None = None
    environment: dict = field(default_factory=dict)

    @property
    def clients(self) -> tuple[int, ...]:
        return tuple(sorted(int(c) for c in self.runs["clients"].unique()))

    @property
    def configurations(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.runs["configuration"].astype(str)))


# A study that records its regime per run (e.g. mysql_slowlog's cells) names it in its own words.
REGIME_NAMES = {"cpu": "cached", "cpu_bound": "cached", "cached": "cached", "io": "io_bound", "io_bound": "io_bound"}


def run_regimes(study: StudyData) -> tuple[pd.Series, str]:
    """Per run: 'cached', 'io_bound' or 'unknown' — from a recorded ``regime`` column, else from pgbench's
    database size (scale × PGBENCH_BYTES_PER_SCALE) against the machine's RAM; and how it was decided."""
    runs = study.runs
    if "regime" in runs.columns:
        return runs["regime"].astype(str).map(lambda r: REGIME_NAMES.get(r, "unknown")), "as recorded by the study"
    mem = study.environment.get("memory_bytes")
    if mem and {"workload", "scale"} <= set(runs.columns) and runs["workload"].astype(str).str.contains("pgbench").all():
        size = runs["scale"].astype(float) * PGBENCH_BYTES_PER_SCALE
        scale = int(runs["scale"].max())
        how = (f"pgbench scale {scale} ≈ {scale * PGBENCH_BYTES_PER_SCALE / 1e9:.2g} GB against "
               f"{float(mem) / 1e9:.3g} GB of RAM")
        return size.gt(float(mem)).map({True: "io_bound", False: "cached"}), how
    return pd.Series("unknown", index=runs.index), "the study records no regime and no database size"


def regime(study: StudyData) -> tuple[str, str]:
    """The study's regime when all its runs share one ('cached' | 'io_bound' | 'unknown' | 'mixed'), and how."""
    per_run, how = run_regimes(study)
    vals = sorted(set(per_run))
    return (vals[0] if len(vals) == 1 else "mixed" if vals else "unknown"), how


def _where(text: str) -> dict[str, str]:
    """'test=oltp_read_write;regime=cpu' -> {'test': 'oltp_read_write', 'regime': 'cpu'}."""
    out = {}
    for part in _names(text):
        if "=" not in part:
            raise ValueError(f"where {text!r}: each part is column=value")
        k, v = part.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def restrict(study: StudyData, where: str, need: str) -> tuple[StudyData | None, str]:
    """The study's runs that a claim is about: its ``where`` filter, then its regime. (None, why) if none are left."""
    runs = study.runs
    for col, want in _where(where).items():
        if col not in runs.columns:
            return None, f"'{study.name}' has no column '{col}' to select {col}={want}"
        have = sorted(set(runs[col].astype(str)))
        runs = runs[runs[col].astype(str) == want]
        if not len(runs):
            return None, f"'{study.name}' has no runs with {col}={want} (it has {', '.join(have)})"
    sub = dataclasses.replace(study, runs=runs.reset_index(drop=True))
    note = ""
    if need:
        per_run, how = run_regimes(sub)
        if (per_run == "unknown").all():
            note = f"regime not recorded ({how}); "
        else:
            keep = per_run == need
            if not keep.any():
                have = ", ".join(sorted(set(per_run)))
                return None, f"needs the {need.replace('_', '-')} regime; '{study.name}' ran {have} ({how})"
            sub = dataclasses.replace(sub, runs=sub.runs[keep.to_numpy()].reset_index(drop=True))
    return sub, note


# --- rules --------------------------------------------------------------------------------------------------


def in_range_verdict(e: Estimate, low: float, high: float, equivalence: Estimate | None = None) -> str:
    """The equivalence interval (90 %: two one-sided tests at 5 %) inside [low, high] → confirmed; the 95 % CI
    ``e`` disjoint from it → refuted; else inconclusive (no CI: the point decides). Without ``equivalence``, ``e``
    itself must lie inside (stricter)."""
    q = e if equivalence is None else equivalence
    if math.isnan(e.value):
        return INCONCLUSIVE
    if math.isnan(e.low) or math.isnan(e.high):
        return CONFIRMED if low <= e.value <= high else REFUTED
    if e.high < low or e.low > high:
        return REFUTED
    if not (math.isnan(q.low) or math.isnan(q.high)) and low <= q.low and q.high <= high:
        return CONFIRMED
    return INCONCLUSIVE


def deciding_width(e: Estimate, low: float, high: float) -> tuple[float, str]:
    """How narrow our interval would have to be to decide a claim it leaves open: (the half-width, which
    interval). A point inside the range is confirmed by a 90 % interval closer to it than the nearer edge; a
    point outside is refuted by a 95 % interval closer to it than the range."""
    v = e.value
    if math.isnan(v):
        return math.nan, ""
    if low <= v <= high:
        return min(v - low, high - v), f"{EQUIVALENCE:.0%}"
    return (low - v if v < low else v - high), f"{stats.CONFIDENCE:.0%}"


def deciding_text(e: Estimate, equivalence: Estimate, low: float, high: float) -> str:
    """'a 90 % CI within ±0.012 of our 0.75 would confirm it (ours ±0.094)', or '' where nothing can decide."""
    width, which = deciding_width(e, low, high)
    if not which or not width > 0:
        return ""
    ours = equivalence if which.startswith(f"{EQUIVALENCE:.0%}") else e
    verb = "confirm" if low <= e.value <= high else "refute"
    return (f"a {which.replace('%', ' %')} CI within ±{fmt(width, 2)} of our {fmt(e.value)} would {verb} it "
            f"(ours ±{fmt(ours.half_width, 2)})")


def fastest_verdict(ratios: list[Estimate]) -> str:
    """Ratios of the claimed fastest to each rival: all CIs above 1 → confirmed; one below 1 → refuted."""
    if any(not math.isnan(r.high) and r.high < 1 for r in ratios):
        return REFUTED
    if ratios and all(not math.isnan(r.low) and r.low > 1 for r in ratios):
        return CONFIRMED
    return INCONCLUSIVE


def combine(verdicts: list[str]) -> str:
    if not verdicts:
        return NOT_MEASURED
    if REFUTED in verdicts:
        return REFUTED
    if all(v == CONFIRMED for v in verdicts):
        return CONFIRMED
    return INCONCLUSIVE


def rule_text(rule: str, low: float, high: float) -> str:
    if rule == "fastest":
        return "tps ratio to every rival: all 95 % CIs > 1 → confirmed; any < 1 → refuted; else inconclusive"
    return (f"90 % CI inside {range_text(low, high)} → confirmed (two one-sided tests at 5 %); 95 % CI disjoint "
            f"→ refuted; else inconclusive")


def fmt(x: float, sig: int = 3) -> str:
    """A number with ``sig`` significant digits, no exponent; ∞ and — for the unbounded and the undefined."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    if x == 0:
        return "0"
    decimals = max(0, sig - 1 - int(math.floor(math.log10(abs(x)))))
    s = f"{x:.{decimals}f}"
    return "0" if s in ("-0", "-0.0") else s


def fmt_p(p: float) -> str:
    """A p-value: two significant digits, or '< 0.001'."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "—"
    return "< 0.001" if p < 0.001 else fmt(p, 2)


def _plain(x: float) -> str:
    """A bound as the claims file states it: 0.95, 1.07, 7500000."""
    return str(int(x)) if float(x).is_integer() else f"{x:.6g}"


def range_text(low: float, high: float) -> str:
    if math.isinf(low) and math.isinf(high):
        return "any value"
    if math.isinf(high):
        return f"≥ {_plain(low)}"
    if math.isinf(low):
        return f"≤ {_plain(high)}"
    return f"[{_plain(low)}, {_plain(high)}]"


def estimate_text(e: Estimate) -> str:
    if math.isnan(e.low) or math.isnan(e.high):
        return fmt(e.value)
    return f"{fmt(e.value)} [{fmt(e.low)}, {fmt(e.high)}]"


# --- what the posts published (data/raw/reference, when present) --------------------------------------------


def published_parts(ids: str, values: pd.DataFrame) -> list[dict]:
    """The published numbers a claim rests on: ``a/b`` is the ratio of two published values, ``a`` one value.

    ``values`` is :func:`logbench.reference.load_values`. Unknown ids raise KeyError.
    """
    by_id = values.set_index("id")
    parts = []
    for token in _names(ids):
        if "/" in token:
            num, den = (by_id.loc[t] for t in token.split("/"))
            clients = num["clients"]
            parts.append({"token": token, "kind": "ratio", "value": float(num["value"]) / float(den["value"]),
                          "clients": None if pd.isna(clients) else int(clients), "text": ""})
        else:
            row = by_id.loc[token]
            text, unit = str(row["value_text"]).strip(), str(row["unit"])
            # The post's own text; its unit is added only where the text is a bare number.
            if not any(ch.isalpha() or ch == "%" for ch in text):
                shown = {"percent": "%", "ratio": ""}.get(unit, unit)
                text = f"{text} {shown}".strip()
            clients = row["clients"]
            parts.append({"token": token, "kind": "value", "value": float(row["value"]),
                          "clients": None if pd.isna(clients) else int(clients), "text": text})
    return parts


def _ratio_text(v: float) -> str:
    return f"{v:.2f}" if abs(v) >= 0.1 else fmt(v, 2)


def published_text(ids: str, values: pd.DataFrame, max_listed: int = 4) -> str:
    """What the post published, as text built from the reference values (ratios to 2 decimals, as the posts print)."""
    parts = published_parts(ids, values)
    ratios = [p for p in parts if p["kind"] == "ratio"]
    # The same published text for several cells (e.g. "1.00" at 1, 20 and 100 connections) is shown once.
    grouped: dict[str, list[int]] = {}
    for p in parts:
        if p["kind"] == "value":
            grouped.setdefault(p["text"], [])
            if p["clients"] is not None and p["clients"] not in grouped[p["text"]]:
                grouped[p["text"]].append(p["clients"])
    singles = [t + (f" ({', '.join(str(k) for k in ks)})" if ks else "") for t, ks in grouped.items()]
    if len(ratios) > max_listed:
        vals = [p["value"] for p in ratios]
        listed = [f"{_ratio_text(min(vals))}–{_ratio_text(max(vals))} ({len(vals)} cells)"]
    else:
        listed = [_ratio_text(p["value"]) + (f" ({p['clients']})" if p["clients"] is not None else "")
                  for p in ratios]
    return "; ".join(singles + listed)


def with_published(claims: pd.DataFrame, values: pd.DataFrame | None) -> pd.DataFrame:
    """Claims whose 'published' text is rebuilt from the reference data when it is available.

    Without reference data (or for a claim without ids) the file's own 'published' text stays.
    """
    out = claims.copy()
    out["published_source"] = "claims.csv"
    if values is None or not len(values):
        return out
    for i, r in out.iterrows():
        if r["published_ids"]:
            out.at[i, "published"] = published_text(r["published_ids"], values)
            out.at[i, "published_source"] = "reference"
    return out


# --- metrics ------------------------------------------------------------------------------------------------


def _cell(study: StudyData, configuration: str, clients: int) -> pd.DataFrame:
    r = study.runs
    return r[(r["configuration"].astype(str) == configuration) & (r["clients"].astype(int) == clients)]


def metric(study: StudyData, name: str, configuration: str, clients: int, reference: str = "",
           confidence: float = stats.CONFIDENCE) -> Estimate:
    """Our estimate of a metric for one (configuration, clients) cell, with its CI (95 % unless asked;
    logbench.stats)."""
    cell = _cell(study, configuration, clients)
    if name == "ratio" and _is_switchback(study):
        return switchback_ratio(study, configuration, clients, reference, confidence)
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
    from . import switchwindows

    return switchwindows.is_switchback(study.runs)


def switchback_ratio(study: StudyData, configuration: str, clients: int, reference: str = "",
                     confidence: float = stats.CONFIDENCE) -> Estimate:
    """A switchback study's ratio of ``configuration`` to ``reference`` (the baseline unless named) at one
    clients level: the switchback estimator's interval at ``confidence`` (switchstats.arm_ratios: within-block
    log-ratios, Newey-West per load, random effects over the loads), never Fieller's on windows taken as
    independent runs. ``n`` counts the windows. A study with several cells (regime, test) is refused: their
    loads are not one population."""
    from . import switchstats, switchwindows

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


def difference_ci(x, y, confidence: float = stats.CONFIDENCE) -> Estimate:
    """mean(x) − mean(y) with Welch's interval (scipy's ttest_ind, unequal variances)."""
    a, b = pd.Series(x).dropna().to_numpy(float), pd.Series(y).dropna().to_numpy(float)
    n = int(min(a.size, b.size))
    if a.size == 0 or b.size == 0:
        return Estimate(math.nan, math.nan, math.nan, n)
    d = float(a.mean() - b.mean())
    if a.size < 2 or b.size < 2:
        return Estimate(d, math.nan, math.nan, n)
    if a.var(ddof=1) == 0 and b.var(ddof=1) == 0:
        return Estimate(d, d, d, n)
    ci = sstats.ttest_ind(a, b, equal_var=False).confidence_interval(confidence)
    return Estimate(d, float(ci.low), float(ci.high), n)


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


@dataclass(frozen=True)
class Concurrency:
    """The client counts a claim is judged at here, those it cannot be, and how they were mapped."""

    here: tuple[int, ...]
    infeasible: tuple[int, ...]  # the post's counts that cannot be reproduced here
    how: str  # the mapping, as shown in the verdict's reason
    why_not: str = ""  # why the infeasible ones cannot be


def clients_here(post_clients: int, post_cores: int, cores: int) -> int:
    """A post's client count on this machine at the same clients per core (at least one client)."""
    return max(1, int(round(post_clients * cores / post_cores)))


def concurrency_here(post_clients: tuple[int, ...], rule: ClaimRule, post_cores: int | None,
                     cores: int) -> Concurrency:
    """Map a post's client counts to this machine (see the module docstring, step 1)."""
    if not post_clients:
        return Concurrency((), (), "")
    per_core = rule.max_clients_per_core or MAX_CLIENTS_PER_CORE
    limit = per_core * cores
    if rule.concurrency == claim_rules.SIMULTANEOUS:
        ok = tuple(k for k in post_clients if k <= cores)
        bad = tuple(k for k in post_clients if k > cores)
        return Concurrency(ok, bad, "", f"needs {_join(bad)} simultaneously runnable processes (contention "
                                        f"among that many concurrent writers); this machine has {cores} cores")
    if rule.here_clients == "cores":
        return Concurrency((cores,), (), f"the post's {_join(post_clients)} clients ran below its machine's "
                                         f"saturation: judged at {cores} clients, one per core here")
    if post_cores is None:
        ok = tuple(k for k in post_clients if k <= limit)
        bad = tuple(k for k in post_clients if k > limit)
        return Concurrency(ok, bad, "the post does not state its cores: its client counts are used as they are",
                           f"needs {_join(bad)} clients and the post's cores are not stated; this machine has "
                           f"{cores} cores and the rule allows at most {per_core} × {cores} = {limit}")
    mapped = {k: clients_here(k, post_cores, cores) for k in post_clients}
    ok = tuple(dict.fromkeys(v for v in mapped.values() if v <= limit))
    bad = tuple(k for k, v in mapped.items() if v > limit)
    how = "; ".join(f"the post's {k} clients on {post_cores} cores = {fmt(k / post_cores, 2)} per core = "
                    f"{v} clients here" for k, v in mapped.items())
    return Concurrency(ok, bad, how, f"needs {_join(bad)} clients on {post_cores} cores, more than "
                                     f"{per_core} per core")


REQUIREMENT_KINDS = ("column", "setting", "bytes_per_record", "tps", "tps_ratio", "machine")


def requirement_mismatch(req: Requirement, runs: pd.DataFrame, environment: dict | None = None,
                         whole: pd.DataFrame | None = None) -> str:
    """Why the runs differ from what the post ran ('' when they match). A ``column`` the runs lack is read from
    the study's environment record (a study-wide setting, e.g. the syslog rate limit), else its default.
    ``whole``: all the study's runs, where a ``tps_ratio`` finds its other side."""
    if not len(runs):
        return ""
    if req.kind == "tps_ratio":
        return _tps_ratio_mismatch(req, runs, runs if whole is None else whole)
    if req.kind == "column":
        if req.key in runs.columns:
            have = runs[req.key].tolist()
        else:
            have = [(environment or {}).get(req.key, req.default)] * len(runs)
        vals = sorted({str(v) for v in have})
        if all(str(v).lower() == str(req.want).lower() for v in have):
            return ""
        return req.why.format(have=" / ".join(vals))
    if req.kind == "setting":
        if "settings" not in runs.columns:
            return ""
        have = []
        for text in runs["settings"]:
            try:
                settings = json.loads(text) if isinstance(text, str) else dict(text)
            except (TypeError, ValueError):
                settings = {}
            have.append(str(settings.get(req.key, "unset")))
        if all(v == str(req.want) for v in have):
            return ""
        return req.why.format(have=" / ".join(sorted(set(have))))
    if req.kind == "bytes_per_record":
        rec = pd.to_numeric(runs.get("log_records_received"), errors="coerce")
        size = (pd.to_numeric(runs.get("log_bytes"), errors="coerce") / rec.where(rec > 0)).dropna()
        if not len(size):
            return ""
        med = float(size.median())
        if abs(med / float(req.want) - 1) <= req.tolerance:
            return ""
        return req.why.format(have=fmt(med))
    if req.kind == "tps":
        tps = pd.to_numeric(runs.get("tps"), errors="coerce").dropna()
        if not len(tps) or abs(float(tps.median()) / float(req.want) - 1) <= req.tolerance:
            return ""
        return req.why.format(have=fmt(float(tps.median())))
    if req.kind == "machine":
        return req.why
    raise ValueError(f"requirement kind {req.kind!r}; allowed: {', '.join(REQUIREMENT_KINDS)}")


def _tps_ratio_mismatch(req: Requirement, runs: pd.DataFrame, whole: pd.DataFrame) -> str:
    """The judged runs' median tps over that of the study's runs selected by ``req.key`` ('column=value'), the same
    configuration, clients and test, at the judged runs' lowest level; per configuration, then their median."""
    col, _, want = req.key.partition("=")
    if col not in whole.columns:
        return req.why.format(have=f"no '{col}' recorded")
    level = int(pd.to_numeric(runs["clients"]).min())
    mine = runs[pd.to_numeric(runs["clients"]) == level]
    other = whole[(whole[col].astype(str) == want) & (pd.to_numeric(whole["clients"]) == level)]
    for same in ("test", "workload"):
        if same in mine.columns and same in other.columns:
            other = other[other[same].astype(str).isin(set(mine[same].astype(str)))]
    ratios = []
    for cfg, g in mine.groupby(mine["configuration"].astype(str)):
        o = pd.to_numeric(other.loc[other["configuration"].astype(str) == cfg, "tps"], errors="coerce").dropna()
        t = pd.to_numeric(g["tps"], errors="coerce").dropna()
        if len(o) and len(t) and o.median() > 0:
            ratios.append(float(t.median() / o.median()))
    if not ratios:
        return req.why.format(have=f"no {req.key} runs at {level} clients to compare with")
    ratio = float(np.median(ratios))
    if abs(ratio / float(req.want) - 1) <= req.tolerance:
        return ""
    return req.why.format(have=f"{fmt(ratio)} (1/{fmt(1 / ratio)}) at {level} client(s)")


def _evaluate_one(c: pd.Series, studies: dict[str, StudyData], cores: int,
                  regression: pd.DataFrame | None, orders: dict) -> tuple[dict, list[dict]]:
    rule = claim_rules.rule_for(c["claim_id"])
    c = c.copy()
    for col in ("study", "where", "configuration", "reference", "clients"):
        if getattr(rule, col):
            c[col] = getattr(rule, col)
    if rule.metric:
        c["metric"] = rule.metric
    low = rule.low if rule.low is not None else (_bound(c["low"], -math.inf) if rule.high is None else -math.inf)
    high = rule.high if rule.high is not None else (_bound(c["high"], math.inf) if rule.low is None else math.inf)
    metric_name = c["metric"]
    claimed = range_text(low, high) if c["rule"] == "in_range" else "fastest"
    if metric_name.startswith(DIFFERENCE_OF):
        claimed = f"difference {claimed}"
    base = {"claim_id": c["claim_id"], "post": c["post"], "claim": c["claim"], "published": c["published"],
            "claimed": claimed, "study": c["study"], "measured_at": "", "ours": "—", "value": math.nan,
            "ci_low": math.nan, "ci_high": math.nan,
            "rule": rule.rule_note or rule_text(c["rule"], low, high)}

    def done(verdict: str, why: str, details: list[dict] | None = None) -> tuple[dict, list[dict]]:
        return {**base, "verdict": verdict, "why": why}, details or []

    wanted = _int_list(c["clients"])
    conc = concurrency_here(wanted, rule, claim_rules.post_cores(c["post"]), cores)
    study = studies.get(c["study"]) if c["study"] else None
    configs = _names(c["configuration"])
    if wanted and not conc.here:
        sub = restrict(study, c["where"], c["regime"])[0] if study is not None else None
        closest = _closest(c, sub, configs, MAX_CLIENTS_PER_CORE * cores)
        if closest is not None:
            (cfg, k, e) = closest
            base.update(ours=f"{estimate_text(e)} at {k} clients (closest here)", value=e.value, ci_low=e.low,
                        ci_high=e.high, measured_at=f"{cfg} @ {k} clients")
        return done(NOT_REPRODUCIBLE, conc.why_not)
    if not c["study"]:
        return done(NOT_MEASURED, "no study in the suite measures this yet")
    if study is None:
        return done(NOT_MEASURED, f"study '{c['study']}' would measure this; its processed data "
                                  f"({c['study']}_runs.csv) does not exist yet"
                    + (f"; then: {rule.pending}" if rule.pending else ""))
    if rule.pending:
        return done(NOT_MEASURED, rule.pending)
    note = (f"{_join(conc.infeasible)} clients not reproducible here; " if conc.infeasible else "")
    note += f"{conc.how}; " if conc.how else ""

    # Single values that are not per-cell: the environment record, the regression.
    if metric_name.startswith(PREFIX_METRICS):
        if metric_name.startswith("env:"):
            key = metric_name[4:]
            e = environment_estimate(study.environment, key)
            q = environment_estimate(study.environment, key, EQUIVALENCE)
            if e is None:
                return done(NOT_MEASURED, f"the environment record of '{study.name}' has no '{key}'")
            where = f"{study.name} environment ({key}, n = {e.n})"
            if e.n == 1:
                note += "one measurement, no CI; "
        else:
            term = metric_name[len("regression:"):]
            e = _regression_estimate(regression, study.engine, term)
            q = _regression_estimate(regression, study.engine, term, EQUIVALENCE)
            if e is None:
                return done(NOT_MEASURED, f"no regression estimate of '{term}' for {study.engine} yet")
            where = f"{study.engine} regression"
        verdict = in_range_verdict(e, low, high, q)
        base.update(ours=estimate_text(e), value=e.value, ci_low=e.low, ci_high=e.high, measured_at=where)
        det = [{"claim_id": c["claim_id"], "configuration": "", "reference": "", "clients": math.nan,
                "value": e.value, "ci_low": e.low, "ci_high": e.high, "n": e.n, "verdict": verdict}]
        return done(verdict, note + _why(verdict, c["rule"], deciding_text(e, q, low, high)), det)

    whole = study.runs
    study, why = restrict(study, c["where"], c["regime"])
    if study is None:
        return done(NOT_MEASURED, why)
    note += why
    missing = [x for x in configs + _names(c["reference"]) if x not in study.configurations]
    if missing:
        return done(NOT_MEASURED, f"configuration(s) {', '.join(missing)} not in '{study.name}' "
                                  f"(it has {', '.join(x for x in study.configurations if not is_aa(x))})")
    column = (metric_name.split(":", 1)[1] if metric_name.startswith((RATIO_OF, DIFFERENCE_OF))
              else RUN_METRICS.get(metric_name))
    if column and column not in study.runs.columns:
        return done(NOT_MEASURED, f"'{study.name}' records no '{column}'")
    levels = [k for k in (conc.here or study.clients) if k in study.clients]
    if metric_name == COST_GROWTH:  # each level against the lowest, which is no case of its own
        levels = [k for k in levels if k != min(study.clients)]
    if not levels:
        return done(NOT_MEASURED, note + f"'{study.name}' did not run {_join(conc.here)} clients (it ran "
                                          f"{_join(study.clients)})")

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
    if biased:
        note += "; ".join(dict.fromkeys(biased)) + " (the instrument cannot be read there); "
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
    base.update(ours=ours, value=e.value, ci_low=e.low, ci_high=e.high, measured_at=f"{label} @ {k} clients")
    judged = study.runs[study.runs["configuration"].astype(str).isin(configs)]
    mismatches = [m for m in (requirement_mismatch(r, judged, study.environment, whole) for r in rule.requires) if m]
    if mismatches:
        for d in details:
            d["verdict"] = NOT_COMPARABLE
        return done(NOT_COMPARABLE, "not comparable: " + "; ".join(mismatches), details)
    deciding = deciding_text(e, equivalent[cfg, ref, k], low, high) if (cfg, ref, k) in equivalent else ""
    return done(verdict, note + _why(verdict, c["rule"], deciding), details)


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
    its ratio point lies below the dearer one's at this level (logbench.anomalies' ``inversion``), else None."""
    if metric_name != "ratio" or reference != study.baseline:
        return None
    for cheap, dear in order:
        if cheap == configuration and dear in study.configurations:
            d = metric(study, "ratio", dear, clients, reference)
            if e.value == e.value and d.value == d.value and e.value < d.value:
                return dear, d
    return None


def _why(verdict: str, rule: str, deciding: str = "") -> str:
    if rule == "fastest":
        return {CONFIRMED: "faster than every rival (all ratio CIs > 1)",
                REFUTED: "a rival is faster (a ratio CI < 1)",
                INCONCLUSIVE: "some ratio CI contains 1"}[verdict]
    return {CONFIRMED: "our 90 % CI lies inside the claimed range (equivalent within its margin)",
            REFUTED: "our 95 % CI lies outside the claimed range",
            INCONCLUSIVE: "our CI straddles the claimed range's edge"
                          + (f": {deciding}" if deciding else "")}[verdict]


def _decisive(cases: list, verdict: str):
    """The case that decides: the first refuting one, the first inconclusive one, else the first."""
    for want in (REFUTED, INCONCLUSIVE):
        if verdict == want:
            return next(x for x in cases if x[4] == want)
    return cases[0]


def _detail(c, cfg, ref, k, e: Estimate, verdict: str) -> dict:
    return {"claim_id": c["claim_id"], "configuration": cfg, "reference": ref, "clients": k, "value": e.value,
            "ci_low": e.low, "ci_high": e.high, "n": e.n, "verdict": verdict}


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


def _join(xs) -> str:
    return "/".join(str(x) for x in xs)
