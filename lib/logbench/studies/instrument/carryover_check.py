"""Notebook 00's carryover check across every committed switchback run: does a logging window slow the *next*
window, and can the guard fix it?

The after-switch profile (switchstats.carryover, switchstats.guard_needed) compares a second with the same
window's later seconds, so a logging arm that slows the whole next window cannot show there. Here the baseline's
(and its A/A control's) windows after a logging window are compared with those after a window of the same
settings, second by second (switchstats.carryover_by_offset), and the verdict (switchstats.guard_from_comparison)
is one of: a guard of g seconds fixes it, it outlasts the window (no guard can; the design per clients level
has to), or these windows cannot resolve a difference below their resolution.

Read from the committed tables only (data/processed): every ``*_runs.csv`` that holds switchback windows, and
this study's own designs part (``instrument_designs_records.csv``, whose placement is a cell). Nothing runs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from ...base import paths
from ...measure import switchstats, switchwindows
from ...base.settings import AA_SUFFIX
from .design_comparison import placement_mode

# the columns a committed switchback table keeps its cells in besides clients (study 04: the sysbench test and
# the regime); 00's designs part: the placement, from each window's record
CELL_COLUMNS = ("regime", "test")
OWN = "instrument_designs_records.csv"

SUMMARY_COLUMNS = ["source", "cell", "clients", "baseline", "window_s", "guard_s", "n_same", "n_changed",
                   "window difference", "ci_low", "ci_high", "verdict", "guard needed (s)", "last second difference",
                   "resolution", "windows for ±3 % (x these)"]
# the carryover issue 40 saw by eye (2-5 %): what the check would have to resolve to say whether a guard fixes it
TARGET = 0.03


def _read(path: Path) -> pd.DataFrame:
    runs = pd.read_csv(path)
    return runs.assign(extra=runs["extra"].map(lambda s: json.loads(s) if isinstance(s, str) and s else {}))


def committed_sources(processed_dir: Path = paths.PROCESSED) -> dict[str, pd.DataFrame]:
    """{source name: its run records} for every committed table holding switchback windows (source: the table's
    stem, e.g. ``pg_audit_timing_switchback``, or ``instrument_designs`` for this study's own)."""
    processed_dir = Path(processed_dir)
    out = {}
    for path in sorted(processed_dir.glob("*_runs.csv")) + [processed_dir / OWN]:
        # a cheap look before parsing every record's JSON: most committed tables are block designs
        if not path.is_file() or '""design"": ""switchback""' not in path.read_text():
            continue
        runs = _read(path)
        if switchwindows.is_switchback(runs):
            out[path.name.removesuffix("_runs.csv").removesuffix("_records.csv")] = runs
    return out


def _baseline(arms) -> str | None:
    """The arm whose A/A control ran beside it (``<baseline>_again``); None when no A/A ran."""
    aas = [a for a in arms if str(a).endswith(AA_SUFFIX)]
    base = [a.removesuffix(AA_SUFFIX) for a in aas if a.removesuffix(AA_SUFFIX) in set(arms)]
    return base[0] if len(base) == 1 else None


def _cells(runs: pd.DataFrame):
    keys = [c for c in CELL_COLUMNS if c in runs.columns]
    runs = runs.assign(placement=runs["extra"].map(lambda e: placement_mode(e.get("placement"))))
    if runs["placement"].nunique() > 1:
        keys.append("placement")
    if not keys:
        yield "", runs
        return
    for values, part in runs.groupby(keys, sort=True):
        values = values if isinstance(values, tuple) else (values,)
        yield ", ".join(f"{k} {v}" for k, v in zip(keys, values)), part


def after_logging(runs: pd.DataFrame, source: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per second, per level) for one source: the baseline's and its A/A control's log tps after a logging
    window minus after a same-settings window, per offset within the window and over the measured seconds,
    with the guard verdict per cell and clients level."""
    per_second, summary = [], []
    for cell, part in _cells(runs):
        w = switchwindows.windows_frame(part)
        base = _baseline(pd.unique(w["arm"]))
        if base is None:
            continue
        aa = base + AA_SUFFIX
        first = w["extra"].iloc[0]
        sec = switchwindows.seconds_frame(part)
        for clients, g in sec.groupby("clients", sort=True):
            prof = switchstats.carryover_by_offset(g, base, aa)
            verdict = switchstats.guard_from_comparison(prof)
            whole = switchstats.same_vs_changed(w[w["clients"] == clients], base, aa)
            per_second.append(prof.assign(source=source, cell=cell, clients=clients))
            summary.append({"source": source, "cell": cell, "clients": clients, "baseline": base,
                            "window_s": int(first["window_s"]), "guard_s": int(first["guard_s"]),
                            "n_same": whole["n_same"], "n_changed": whole["n_changed"],
                            "window difference": whole["difference"], "ci_low": whole["ci_low"],
                            "ci_high": whole["ci_high"], "verdict": verdict["verdict"],
                            "guard needed (s)": verdict["guard_s"],
                            "last second difference": verdict["last_difference"],
                            "resolution": verdict["resolution"],
                            # an interval's half-width falls as 1/sqrt(windows), at equal noise
                            "windows for ±3 % (x these)": (verdict["resolution"] / math.log1p(TARGET)) ** 2})
    lead = ["source", "cell", "clients"]
    seconds = pd.concat(per_second, ignore_index=True) if per_second else pd.DataFrame(columns=lead)
    return seconds[lead + [c for c in seconds.columns if c not in lead]], pd.DataFrame(summary, columns=SUMMARY_COLUMNS)


def committed_check(processed_dir: Path = paths.PROCESSED) -> dict[str, pd.DataFrame]:
    """:func:`after_logging` over every committed switchback table: ``summary`` (one row per source, cell and
    clients level) and ``seconds`` (one row per offset besides)."""
    parts = [after_logging(runs, source) for source, runs in committed_sources(processed_dir).items()]
    if not parts:
        return {"summary": pd.DataFrame(columns=SUMMARY_COLUMNS), "seconds": pd.DataFrame()}
    return {"summary": pd.concat([s for _, s in parts], ignore_index=True),
            "seconds": pd.concat([p for p, _ in parts], ignore_index=True)}


def finding(summary: pd.DataFrame) -> str:
    """The check's answer in sentences, every number from ``summary`` (differences as % of throughput)."""
    if not len(summary):
        return "No committed switchback windows to check."

    def pct(x: float) -> str:
        return f"{100 * (math.exp(x) - 1):+.1f} %"

    counts = summary["verdict"].value_counts()
    out = [f"Across {len(summary)} committed switchback cells (source, cell, clients level): "
           f"{int(counts.get('outlasts', 0))} where the baseline after a logging window is still different in the "
           f"window's last second (no guard fixes that), {int(counts.get('guard', 0))} where a longer guard would, "
           f"{int(counts.get('unresolved', 0))} where the windows cannot tell (no second differs beyond its "
           "Bonferroni interval)."]
    for r in summary.to_dict("records"):
        where = f"{r['source']}" + (f" ({r['cell']})" if r["cell"] else "") + f", {r['clients']} client(s)"
        whole = (f"over the measured seconds {pct(r['window difference'])} [{pct(r['ci_low'])}, {pct(r['ci_high'])}] "
                 f"({r['n_changed']} windows after logging, {r['n_same']} after the same settings)")
        last = pct(r["last second difference"])
        if r["verdict"] == "outlasts":
            tail = f"its last second still {last}: it outlasts the window, the guard cannot fix it"
        elif r["verdict"] == "guard":
            tail = f"a guard of {r['guard needed (s)']} s would cover it (run with {r['guard_s']} s)"
        else:
            tail = (f"not resolved: the last second {last}, resolution ±{100 * r['resolution']:.1f} % "
                    f"(a carryover smaller than that may be there; ±{100 * TARGET:.0f} % would take "
                    f"~{r['windows for ±3 % (x these)']:.0f}x these windows)")
        out.append(f"- **{where}**: {whole}; {tail}.")
    return "\n".join(out)
