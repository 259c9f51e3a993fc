"""The anomaly screen: what in our own data must be discussed before anything is read from it.

Each study's processed summary and runs are screened for four kinds of anomaly; each is listed (the findings
notebook and the paper print them), none is ever a finding:

- ``aa_excludes_1``: the A/A control (the baseline run again) has a ratio interval that excludes 1: at that
  level the instrument is biased, and the study's ratios there prove nothing. In a switchback study its note
  says whether carryover from the previous window accounts for it (:func:`switchback_aa_note`), and where it
  does not, that the cause is open.
- ``logging_faster``: a configuration that does more work than the baseline (it logs) has its whole ratio
  interval above 1; its note says where the ratio lies within its level's A/A spread
  (:func:`logbench.base.stats.effect_reading`), where the baseline against itself strays as far.
- ``inversion``: of two configurations whose physical order is known (a study's ``PHYSICAL_ORDER``: the first
  does strictly less work, e.g. the slow log to /dev/null against the same slow log to a file), the cheaper one's
  ratio point lies below the dearer one's; ``beyond its CI`` when the two intervals do not overlap.
- ``contaminated_block``: in a block design, a block in which every configuration of a cell ran below its own
  median in that cell, together by more than ``BLOCK_DROP`` (the median over configurations): something outside
  the configurations moved them all at once (seen in study 05: one block at 0.81 of the cell medians).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from ..base.formatting import ci_text
from ..base.settings import aa_name, is_aa
from ..base.stats import WITHIN_AA, effects
from ..measure import switchstats, switchwindows

# A block whose configurations ran, in their median, this much below their cell medians, every one below its own.
BLOCK_DROP = 0.10
# A block is judged only where the cell has this many blocks and configurations to take medians of.
MIN_BLOCKS, MIN_CONFIGURATIONS = 3, 3

KINDS = ("aa_excludes_1", "logging_faster", "inversion", "contaminated_block")
COLUMNS = ("study", "cell", "clients", "kind", "what", "value", "ci_low", "ci_high", "note")


def _row(study: str, cell: str, clients, kind: str, what: str, value: float, low: float = math.nan,
         high: float = math.nan, note: str = "") -> dict:
    return {"study": study, "cell": cell, "clients": clients, "kind": kind, "what": what, "value": value,
            "ci_low": low, "ci_high": high, "note": note}


def _cells(frame: pd.DataFrame, cell_columns: list[str]):
    cols = [c for c in cell_columns if c in frame.columns]
    if not cols:
        yield "", frame
        return
    for key, g in frame.groupby(cols, sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        yield ", ".join(str(k) for k in key), g


def faster_than_baseline(summary: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Logging configurations (not the baseline, not an A/A row) whose throughput ratio CI lies above 1."""
    if summary is None or "ratio_ci_low" not in summary.columns:
        return pd.DataFrame()
    cfg = summary["configuration"].astype(str)
    keep = (cfg != baseline) & ~cfg.map(is_aa) & (summary["ratio_ci_low"] > 1)
    return summary[keep]


def switchback_windows(runs: pd.DataFrame | None) -> pd.DataFrame:
    """The switchback windows of a study's runs as its estimator reads them (empty for a block design)."""
    if runs is None or not len(runs) or "extra" not in runs.columns:
        return pd.DataFrame()
    runs = runs.assign(extra=runs["extra"].map(lambda e: json.loads(e) if isinstance(e, str) else e))
    return switchwindows.windows_frame(runs) if switchwindows.is_switchback(runs) else pd.DataFrame()


def switchback_aa_note(windows: pd.DataFrame, baseline: str) -> str:
    """For an A/A that excludes 1 in a switchback study (one level's windows): whether the arm before each
    baseline and A/A window accounts for it (:func:`logbench.measure.switchstats.previous_arm_term`), in words.

    Why: the switchback estimator has no term for the previous window, and a carryover that lasts a whole window
    is invisible to the within-window carryover profile; a schedule whose A/A windows follow other arms more
    often than its baseline windows would turn such a carryover into a biased A/A (issue 40). Where the term
    leaves the A/A outside 1 the bias is not carryover of that kind, and the note names its cause as open."""
    aa = aa_name(baseline)
    t = switchstats.previous_arm_term(windows, baseline, aa)
    counts = (f"{t['aa_after_other']} of {t['n_aa']} A/A and {t['base_after_other']} of {t['n_base']} baseline "
              "windows ran after another arm")
    if "extra" in windows and windows["extra"].map(lambda e: isinstance(e, dict)
                                                   and e.get("layout") == "williams").all():
        counts += " (a williams layout: inside its blocks both follow every other arm equally often, by design)"
    if t["carryover"] != t["carryover"]:
        return f"; {counts}: this schedule cannot tell carryover from the A/A label, so the cause is open"
    c = math.exp(t["carryover"]), math.exp(t["carryover_low"]), math.exp(t["carryover_high"])
    holds = t["aa_low"] <= 1 <= t["aa_high"]
    return (f"; {counts}, and after another arm the baseline's settings ran at {ci_text(*c)} times their "
            "throughput after their own; "
            f"without that carryover the A/A is {ci_text(t['aa_ratio'], t['aa_low'], t['aa_high'])}: "
            + ("carryover from the previous window accounts for it" if holds else
               "carryover from the previous window does not account for it, and the cause is open"))


def summary_anomalies(study: str, summary: pd.DataFrame, baseline: str, cell_columns: list[str],
                      order: tuple[tuple[str, str], ...] = (), runs: pd.DataFrame | None = None) -> list[dict]:
    """The A/A, logging-faster and inversion anomalies of one study's summary (ratio and its CI per cell);
    ``runs`` (the study's measured runs), where a switchback study's, add the carryover reading to an A/A's note."""
    if summary is None or "ratio" not in summary.columns:
        return []
    out = []
    aa = aa_name(baseline)
    windows = switchback_windows(runs)
    read = effects(summary, baseline, keys=[c for c in cell_columns if c in summary.columns] + ["clients"])["effect"]
    for cell, g in _cells(summary, cell_columns):
        fast = set(faster_than_baseline(g, baseline).index)
        for r in g.itertuples():
            if r.configuration == aa and (r.ratio_ci_low > 1 or r.ratio_ci_high < 1):
                note = "the baseline against itself: the instrument is biased at this level"
                if len(windows):
                    level = windows[windows["clients"] == r.clients]
                    for col in cell_columns:
                        if col in level.columns and col in g.columns:
                            level = level[level[col] == getattr(r, col)]
                    note += switchback_aa_note(level, baseline) if len(level) else ""
                out.append(_row(study, cell, r.clients, "aa_excludes_1", f"{aa}/{baseline}", r.ratio,
                                r.ratio_ci_low, r.ratio_ci_high, note))
            elif r.Index in fast:
                out.append(_row(study, cell, r.clients, "logging_faster", f"{r.configuration}/{baseline}", r.ratio,
                                r.ratio_ci_low, r.ratio_ci_high, "logging faster than not logging, beyond the CI"
                                + (", but within the A/A spread: the baseline against itself strays as far here"
                                   if read[r.Index] == WITHIN_AA else "")))
        for cheap, dear in order:
            for clients, h in g.groupby("clients", sort=True):
                a, b = h[h["configuration"] == cheap], h[h["configuration"] == dear]
                if not len(a) or not len(b):
                    continue
                a, b = a.iloc[0], b.iloc[0]
                if a["ratio"] < b["ratio"]:
                    beyond = a["ratio_ci_high"] < b["ratio_ci_low"]
                    out.append(_row(study, cell, clients, "inversion", f"{cheap} < {dear}", a["ratio"],
                                    a["ratio_ci_low"], a["ratio_ci_high"],
                                    f"{cheap} does less work than {dear} ({b['ratio']:.3g} [{b['ratio_ci_low']:.3g}, "
                                    f"{b['ratio_ci_high']:.3g}]) yet kept less throughput"
                                    + (", beyond its CI" if beyond else ", inside the CIs")))
    return out


def contaminated_blocks(study: str, runs: pd.DataFrame, cell_columns: list[str]) -> list[dict]:
    """Blocks (``repeat``) of a cell in which every configuration ran below its cell median and their median
    ratio to those medians is below 1 − BLOCK_DROP. The switchback design's windows are not blocks of runs."""
    if runs is None or not len(runs) or not {"configuration", "clients", "repeat", "tps"} <= set(runs.columns):
        return []
    if "extra" in runs.columns:
        runs = runs[~runs["extra"].astype(str).str.contains("'design': 'switchback'|\"design\": \"switchback\"")]
    out = []
    for cell, g in _cells(runs, cell_columns):
        for clients, h in g.groupby("clients", sort=True):
            if h["repeat"].nunique() < MIN_BLOCKS or h["configuration"].nunique() < MIN_CONFIGURATIONS:
                continue
            medians = h.groupby("configuration")["tps"].transform("median")
            rel = h.assign(rel=h["tps"].astype(float) / medians.astype(float))
            for block, b in rel.groupby("repeat", sort=True):
                per_config = b.groupby("configuration")["rel"].mean()
                if len(per_config) < MIN_CONFIGURATIONS:
                    continue
                level = float(np.median(per_config))
                if level < 1 - BLOCK_DROP and (per_config < 1).all():
                    start = str(b["started_at"].min()) if "started_at" in b.columns else ""
                    out.append(_row(study, cell, clients, "contaminated_block", f"block {block}", level,
                                    float(per_config.min()), float(per_config.max()),
                                    f"all {len(per_config)} configurations of the block ran at "
                                    f"{per_config.min():.2f}-{per_config.max():.2f} of their cell medians"
                                    + (f" (from {start})" if start else "")))
    return out


def screen(studies: dict, cell_columns, orders: dict[str, tuple[tuple[str, str], ...]] | None = None) -> pd.DataFrame:
    """Every study's anomalies, one row each (COLUMNS). ``studies``: name -> claims.StudyData; ``cell_columns``:
    a function of a summary giving the columns that split it into cells; ``orders``: study -> PHYSICAL_ORDER."""
    rows = []
    for name, s in studies.items():
        cols = cell_columns(s.summary) if s.summary is not None else []
        rows += summary_anomalies(name, s.summary, s.baseline, cols, (orders or {}).get(name, ()), s.runs)
        rows += contaminated_blocks(name, s.runs, cols)
    return pd.DataFrame(rows, columns=list(COLUMNS))


LABELS = {"aa_excludes_1": "A/A excludes 1", "logging_faster": "logging faster", "inversion": "inversion",
          "contaminated_block": "contaminated block"}


def text(anomalies: pd.DataFrame) -> str:
    """One sentence per kind found, for the findings notebook."""
    if not len(anomalies):
        return "The screen finds no anomaly in the processed data."
    parts = [f"{n} × {LABELS[k]} ({', '.join(sorted(set(anomalies.loc[anomalies['kind'] == k, 'study'])))})"
             for k, n in anomalies["kind"].value_counts().reindex(KINDS).dropna().astype(int).items()]
    return ("The screen finds " + "; ".join(parts) + ". None of them is read as a finding: each cell is "
            "discussed where its study's numbers are used, and a claim judged on a biased level is inconclusive.")

