"""The paper's section per study (its runs, figures, table, resolution and cheapest configuration) and the
environment the data came from."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ...base import records
from ...base.settings import is_aa
from ...base.stats import PAIRED, effect_note, effects
from ...analyze.claims import StudyData
from ..findings import (STUDY_FINDINGS, VERSION_SWEEPS, cell_columns, cell_label, cell_slug, cells, in_cell,
                        study_info)
from .tables import add_figure, add_table, statements, study_table

# Columns of a study's runs the text names where the study has them: (column, aggregate, key).
RUN_FACTS = (("repeat", "nunique", "repeats"), ("duration_s", "max", "duration"), ("scale", "max", "scale"),
             ("server_version", "list", "server_version"), ("query_mode", "first", "query_mode"),
             ("workload", "list", "workload"), ("backend", "list", "backend"))
ENVIRONMENT_KEYS = ("cpu_count", "cpu_model", "kernel", "os", "clocksource", "timer_loop_ns")


def studies_section(doc: dict, processed_dir: Path, gen: Path, nums, studies: dict[str, StudyData],
                    status: pd.DataFrame, figures_dir: Path) -> None:
    """``doc['studies']`` (one entry per study with data, in the status's order), ``doc['missing_studies']`` and
    ``doc['environment']`` (from the first study with an environment record)."""
    doc["has_findings"] = (processed_dir / "findings_claims.csv").exists()
    env_source = None
    for _, row in status.iterrows():
        name = row["study"]
        if name in VERSION_SWEEPS:  # a version sweep has its own section (paper.versions)
            continue
        if not row["present"]:
            doc["missing_studies"].append({"name": name, "title": row["title"], "post": row["post"],
                                           "note": row["note"]})
            continue
        entry = study_entry(doc, processed_dir, gen, nums, studies[name], figures_dir)
        if entry["has_env"]:
            env_source = env_source or f"{name}_environment.json"
        doc["studies"].append(entry)
    if env_source:
        environment_section(doc, processed_dir, nums, env_source)


def study_entry(doc: dict, processed_dir: Path, gen: Path, nums, s: StudyData, figures_dir: Path) -> dict:
    """One study's entry: its figures per cell, the numbers of its runs, its table, A/A resolution, cheapest
    configuration per level and its own statements."""
    name, info = s.name, study_info(s.name)
    entry = {"name": name, "title": info.title, "post": info.post, "engine": s.engine, "baseline": s.baseline,
             "figures": [], "table": "", "cheapest": [], "has_env": False}
    if s.summary is not None and "ratio" in s.summary.columns:
        for cell in cells(s.summary):
            rel = add_figure(doc, figures_dir, f"study_{name}{cell_slug(cell)}")
            if rel:
                entry["figures"].append({"path": rel, "cell": cell_label(cell)})
    run_numbers(doc, processed_dir, nums, s, entry)
    if s.summary is not None:
        entry["table"] = add_table(doc, gen, study_table(s.summary, s.baseline), f"study_{name}")
        entry["resolution"] = resolution(nums, s)
        entry["cheapest"] += cheapest(nums, s)
    # A study's own statements (its code printed each number from its data), under its section.
    own = processed_dir / STUDY_FINDINGS.format(name=name)
    entry["findings"] = add_table(doc, gen, statements(own), f"study_{name}_findings") if own.exists() else ""
    if (processed_dir / f"{name}_environment.json").exists():
        entry["has_env"] = True
    return entry


def run_numbers(doc: dict, processed_dir: Path, nums, s: StudyData, entry: dict) -> None:
    """How many runs, configurations and clients levels; the facts of :data:`RUN_FACTS` the runs have; a
    switchback study's loads."""
    name, src = s.name, f"{s.name}_runs.csv"
    columns = pd.read_csv(processed_dir / src, nrows=1).columns
    measured = {c: v for c, v in records.MEASURED_WHERE.items() if c in columns}
    nums.add(f"{name}.runs", {"kind": "agg", "source": src, "where": measured, "agg": "count"})
    nums.add(f"{name}.configurations", {"kind": "agg", "source": src, "where": measured, "column": "configuration",
                                        "agg": "nunique"})
    nums.add(f"{name}.clients", {"kind": "agg", "source": src, "where": measured, "column": "clients",
                                 "agg": "list", "int": True})
    for col, agg, key in RUN_FACTS:
        if col in s.runs.columns:
            spec = {"kind": "agg", "source": src, "where": measured, "column": col, "agg": agg}
            if col in ("duration_s", "scale"):
                spec["int"] = True
            if nums.add(f"{name}.{key}", spec, optional=True) is not None:
                entry[f"has_{key}"] = True
    backend_versions(nums, s, src, measured, entry)
    if s.summary is not None and "design" in s.summary.columns and (s.summary["design"] == "switchback").any():
        # windows inside continuous loads, not separate runs: the paper says so wherever it counts them
        entry["switchback"] = True
        doc["switchback_studies"].append(name)
        nums.add(f"{name}.loads", {"kind": "agg", "source": f"{name}.csv", "column": "n_loads", "agg": "max",
                                   "int": True})
    elif s.summary is not None and "ratio_method" in s.summary.columns:
        # a block-design summary made since ratios are paired by block says per row how each was made
        entry["paired"] = bool((s.summary["ratio_method"] == PAIRED).any())


def backend_versions(nums, s: StudyData, src: str, measured: dict, entry: dict) -> None:
    """A study over several backends whose servers were not the same version: ``entry['backend_versions']``, each
    backend with the key of its version, so the paper says its backend effect includes the version difference."""
    if not {"backend", "server_version"} <= set(s.runs.columns) or s.runs["backend"].nunique() < 2:
        return
    runs = s.runs
    for col, want in measured.items():
        runs = runs[runs[col].astype(str) == str(want)]
    per = runs.groupby("backend")["server_version"].agg(lambda v: tuple(sorted(set(v.astype(str)))))
    if per.nunique() < 2:
        return
    entry["backend_versions"] = []
    for backend in per.index:
        key = f"{s.name}.server_version.{backend}"
        nums.add(key, {"kind": "agg", "source": src, "where": {**measured, "backend": backend},
                       "column": "server_version", "agg": "list"})
        entry["backend_versions"].append({"backend": str(backend), "key": key})


def add_ratio(nums, key: str, name: str, where: dict) -> None:
    """Register ``key``.ratio/.ratio_ci_low/.ratio_ci_high: one summary row's ratio to its baseline with its CI."""
    for col in ("ratio", "ratio_ci_low", "ratio_ci_high"):
        nums.add(f"{key}.{col}", {"kind": "cell", "source": f"{name}.csv", "where": where, "column": col, "sig": 3})


def resolution(nums, s: StudyData) -> list[dict]:
    """The study's A/A rows (its baseline measured against itself): one per cell and clients level."""
    out = []
    cfg = s.summary["configuration"].astype(str)
    aa = s.summary[cfg.map(is_aa)] if "ratio" in s.summary.columns else s.summary.iloc[:0]
    for _, r in aa.iterrows():
        cell = {c: str(r[c]) for c in cell_columns(s.summary)}
        rk = f"{s.name}{cell_slug(cell)}.{int(r['clients'])}.aa"
        add_ratio(nums, rk, s.name, {**cell, "configuration": str(r["configuration"]), "clients": int(r["clients"])})
        out.append({"key": rk, "configuration": str(r["configuration"]),
                    "label": (cell_label(cell) + ", " if cell else "") + f"{int(r['clients'])} clients"})
    return out


def cheapest(nums, s: StudyData) -> list[dict]:
    """Per cell and clients level: the logging configurations with the highest and lowest ratio (``best``,
    ``worst``), whether the best lies above 1 beyond its CI, and for each of the two why it is not an effect
    where its interval alone does not show it (``best_note``, ``worst_note``: ``stats.effect_note``)."""
    if "ratio" not in s.summary.columns:
        return []
    read = effects(s.summary, s.baseline, keys=cell_columns(s.summary) + ["clients"])
    cfg = read["configuration"].astype(str)
    summ = read[(cfg != s.baseline) & ~cfg.map(is_aa)]
    if not len(summ):
        return []
    out = []
    for cell in cells(s.summary):
        here = in_cell(summ, cell)
        for k in sorted(here["clients"].astype(int).unique()):
            at = here[here["clients"].astype(int) == k].dropna(subset=["ratio"])
            if not len(at):
                continue
            base = f"{s.name}{cell_slug(cell)}.{int(k)}"
            best = at.loc[at["ratio"].idxmax()]
            entry = {"key": base, "label": (cell_label(cell) + ", " if cell else "") + f"{int(k)} clients",
                     # Logging faster than not logging, beyond the CI: not a cost, the anomaly (see its section).
                     "above_one": bool(best["ratio_ci_low"] > 1)}
            for which, r in (("best", best), ("worst", at.loc[at["ratio"].idxmin()])):
                where = {**cell, "configuration": str(r["configuration"]), "clients": int(k)}
                nums.add(f"{base}.{which}.configuration", {
                    "kind": "cell", "source": f"{s.name}.csv", "where": where, "column": "configuration"})
                add_ratio(nums, f"{base}.{which}", s.name, where)
                entry[f"{which}_note"] = effect_note(r["effect"])
            out.append(entry)
    return out


def environment_section(doc: dict, processed_dir: Path, nums, env_source: str) -> None:
    """``doc['environment']``: which of the machine's facts the environment record has (each a number)."""
    e = json.loads((processed_dir / env_source).read_text())
    doc["environment"] = {}
    for key in ENVIRONMENT_KEYS:
        if key in e:
            nums.add(f"env.{key}", {"kind": "env", "source": env_source, "key": key})
            doc["environment"][key] = True
    if "memory_bytes" in e:
        nums.add("env.memory_gb", {"kind": "scale", "factor": 1e-9, "sig": 3,
                                   "of": {"kind": "env", "source": env_source, "key": "memory_bytes"}})
        doc["environment"]["memory_gb"] = True
