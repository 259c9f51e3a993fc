"""The switchback design's windows as tables: what the estimator, the notebooks and the processed files read.

A switchback study's ``runs.jsonl`` holds one record per window (logbench.measure.switchback); these functions turn those
records into the frames :mod:`logbench.measure.switchstats` estimates from (one row per window, one row per second), and
into the tables a reader is shown: how each switch went, what it left behind (carryover), what the pilot predicted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from . import switchstats


def late(extra: dict) -> bool:
    """A window whose switch took effect only after its guard had ended: part of its measured seconds ran the
    arm before it (seen in the committed run of 2026-11-24: a reload applied 4.1 s late under 8 clients, the
    stderr window it opened ran at the baseline's throughput), or whose guard's sync(2) (the design's ``flush``)
    returned after it: the writeback ran in measured seconds. Kept in the records, never measured."""
    done = max(extra["switch_applied"], extra.get("flush_end") or 0.0)
    return done - extra["switch_requested"] > extra["guard_s"]


def windows_frame(runs: pd.DataFrame, *, in_time: bool = True) -> pd.DataFrame:
    """The switchback windows of ``runs`` with their design fields (load, block, unit, window, prev_arm) as
    columns and ``arm`` = configuration; what :mod:`logbench.measure.switchstats` reads. ``in_time``: only the windows
    whose switch took effect within the guard (:func:`late`); False: every recorded window."""
    empty = pd.DataFrame(columns=["clients", "load", "planned_load", "attempt", "block", "unit", "window", "arm",
                                  "prev_arm", "tps", "late"])
    if not len(runs):
        return empty
    sb = runs[runs["extra"].map(lambda e: isinstance(e, dict) and e.get("design") == "switchback")]
    if not len(sb):
        # a block-design study: no windows (and an empty object-typed mask would select columns, not rows)
        return empty
    out = sb.assign(**{k: sb["extra"].map(lambda e, k=k: e.get(k)) for k in ("load", "block", "unit", "window",
                                                                              "prev_arm", "attempt")})
    # A load cut short by an interrupt and run again later is two loads: its finished windows stay one.
    out = out.assign(planned_load=out["load"], load=out["load"].astype(str) + "@" + out["attempt"].astype(str),
                     late=out["extra"].map(late))
    out = out[~out["late"]] if in_time else out
    return out.assign(arm=out["configuration"]).reset_index(drop=True)


def in_time(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` without the switchback windows whose switch came late (:func:`late`)."""
    return runs[~runs["extra"].map(lambda e: isinstance(e, dict) and e.get("design") == "switchback" and late(e))]


def is_window(extra: object) -> bool:
    """A run record's ``extra`` (a dict, or its JSON text in a processed CSV) says it is a switchback window."""
    if isinstance(extra, str):
        try:
            extra = json.loads(extra)
        except ValueError:
            return False
    return isinstance(extra, dict) and extra.get("design") == "switchback"


def is_switchback(runs: pd.DataFrame) -> bool:
    return bool(len(runs)) and "extra" in runs and bool(runs["extra"].map(is_window).any())


def estimates(runs: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Per clients level and arm: the ratio to the baseline with its interval (switchstats.arm_ratios)."""
    w = windows_frame(runs)
    parts = []
    for clients, g in w.groupby("clients", sort=True):
        r = switchstats.arm_ratios(g, baseline)
        parts.append(r.assign(clients=clients))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def seconds_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per second of every switchback window, guard included (switchstats.carryover reads it):
    clients, load, window, arm, prev_arm, offset_s (0: the second the switch was made), tps."""
    w = windows_frame(runs)
    rows = [{"clients": r.clients, "load": r.load, "window": r.window, "arm": r.arm, "prev_arm": r.prev_arm,
             "offset_s": k, "tps": float(v)}
            for r in w.itertuples() for k, v in enumerate(r.extra["per_second_tps"])]
    return pd.DataFrame(rows, columns=["clients", "load", "window", "arm", "prev_arm", "offset_s", "tps"])


def switch_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per arm and clients level: windows, how long a switch took to take effect (requested at the window's
    edge -> the control session re-read the configuration), the records its destinations wrote during the
    guard, and the records other arms' sinks still received in its measured seconds (late records: carryover
    of the log path)."""
    w = windows_frame(runs, in_time=False)
    if not len(w):
        return pd.DataFrame()
    w = w.assign(latency_ms=w["extra"].map(lambda e: 1000 * (e["switch_applied"] - e["switch_requested"])),
                 in_guard=w["extra"].map(lambda e: e["records_in_guard"]),
                 foreign=w["extra"].map(lambda e: sum(e["foreign_records"].values())))
    g = w.groupby(["arm", "clients"], sort=False)
    return pd.DataFrame({
        "windows": g.size(), "switch ms (median)": g["latency_ms"].median(), "switch ms (max)": g["latency_ms"].max(),
        "late switches (not measured)": g["late"].sum(),
        "records in the guard (mean)": g["in_guard"].mean(),
        "late records of other arms (total)": g["foreign"].sum(),
    }).reset_index()


def pilot_table(study) -> pd.DataFrame:
    """The pilot's noise and predicted half-width per clients level (``pilot.json`` of the run), if any."""
    f = Path(study.output_dir) / "pilot.json"
    return pd.DataFrame(json.loads(f.read_text())) if f.exists() else pd.DataFrame()


def pilot_vs_reached(pilot: pd.DataFrame, summary: pd.DataFrame, baseline: str, aa: str,
                     key: tuple[str, ...] = ("clients",)) -> pd.DataFrame:
    """Per ``key`` (clients level, and cell where a study has several): the pilot's per-second noise and the
    half-width it predicted for an arm, beside the A/A control's and the median logging arm's half-width
    reached (empty without a pilot: the block design)."""
    key = list(key)
    if not len(pilot) or any(k not in pilot for k in key):
        return pd.DataFrame()
    aa_reached = summary[summary.configuration == aa].set_index(key)["ratio_halfwidth"]
    arms = summary[~summary.configuration.isin([baseline, aa])].groupby(key)["ratio_halfwidth"].median()
    out = pilot.set_index(key)[["tps_mean", "sigma_per_s", "rho", "windows_per_arm", "halfwidth"]]
    return out.rename(columns={"halfwidth": "predicted half-width"}).assign(
        **{"A/A half-width reached": aa_reached, "median half-width reached": arms}).reset_index()


PROCESSED_TABLES = ("pilot", "switches", "carryover", "carryover_test")


def processed_tables(study, runs: pd.DataFrame, baseline: str) -> dict[str, pd.DataFrame]:
    """The switchback study's own tables beside its summary: the pilot, the switches, the carryover profile; for a
    block-design study the same keys as None (records.write_processed removes an earlier switchback run's)."""
    if not is_switchback(runs):
        return dict.fromkeys(PROCESSED_TABLES)
    c = carryover_report(runs, baseline)
    return {"pilot": pilot_table(study), "switches": switch_table(runs), "carryover": c["profile"],
            "carryover_test": c["same_vs_changed"].merge(c["guard"], on="clients")}


def carryover_report(runs: pd.DataFrame, baseline: str) -> dict[str, object]:
    """The carryover evidence of a switchback study, per clients level: the throughput profile after a switch
    (per arm switched into, and any switch), the guard it calls for, and the same-vs-changed test on the
    measured windows (the baseline and its A/A control after a window with equal settings, against after a
    logging arm)."""
    from ..base.settings import aa_name

    sec, w = seconds_frame(runs), windows_frame(runs)
    out: dict[str, object] = {"profile": [], "guard": [], "same_vs_changed": []}
    if not len(w):
        return out
    guard = int(w["extra"].iloc[0]["guard_s"])
    window = int(w["extra"].iloc[0]["window_s"])
    for clients, g in sec.groupby("clients", sort=True):
        prof = switchstats.carryover(g, guard)
        out["profile"].append(prof.assign(clients=clients))
        out["guard"].append({"clients": clients, "guard_s": guard,
                             "guard needed (s)": switchstats.guard_needed(prof, window - 1)})
        t = switchstats.same_vs_changed(w[w["clients"] == clients], baseline, aa_name(baseline))
        out["same_vs_changed"].append({"clients": clients, **t})
    out["profile"] = pd.concat(out["profile"], ignore_index=True)
    out["guard"] = pd.DataFrame(out["guard"])
    out["same_vs_changed"] = pd.DataFrame(out["same_vs_changed"])
    return out
