"""The paper's answer, in a DBA's words (issue 22 part 4): what logging every statement costs, per destination, as a
share of the throughput without logging at each number of clients per core, and per typical logged line in µs,
each with its CI and on a machine named by what it is, not by an environment hash.

The shares and their A/A controls come from the findings' model table (:mod:`logbench.analyze.models`, one model per
study and clients level, written by ``make findings`` as ``findings_models.csv`` before ``make paper`` reads it) where
it has the level: a cell's own interval spends its 3 runs on the noise, the model all the level's runs. Where it has
not (no model table yet, several hosts' runs side by side, a level without the A/A or an arm), the level is read
from the study's summary, and the entry says which levels are.

A study contributes to it through its spec's :class:`Headline` (which processed table, which cell, which
configuration stands for which destination, the workload in words); this module reads only the committed
processed files and adds every number to the paper's number registry by reference to a CSV cell, so nothing in
the abstract is typed by hand.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..base import records
from ..base.paths import stem as run_stem
from . import models as models_mod
from . import regression
from ..base.settings import aa_name
from ..base.formatting import sig_apart
from ..base.stats import effect_note, effects

# where a level's numbers come from: the study's summary (its per-cell intervals) or the model table
CELL, MODEL, MIXED = "cell", "model", "mixed"
READ = ("ratio", "ratio_ci_low", "ratio_ci_high")  # the summary's columns; the model table's: MODEL_READ
MODEL_READ = dict(zip(READ, ("ratio", "ci_low", "ci_high")))


@dataclass(frozen=True)
class Headline:
    """What a study's committed run says in the abstract."""

    stem: str  # the processed table: data/processed/<stem>.csv (the design with the narrowest intervals)
    words: str  # the workload as a DBA would say it
    arms: tuple[tuple[str, str], ...]  # (configuration, where its lines go, in words)
    cell: Mapping[str, str] = field(default_factory=dict)  # e.g. regime and test for MariaDB's summary
    # (configuration, the daemon in words): its logger CPU per second of run, where one process receives every line
    daemon: tuple[str, str] | None = None


def machine_label(engine: str, env: dict) -> str:
    """'PostgreSQL 15.18 (local server), 2 vCPUs AMD EPYC' from an environment record."""
    name = {"postgresql": "PostgreSQL", "mariadb": "MariaDB"}.get(engine, engine)
    version = str(env.get("server_version", "")).split(" ")[0].split("-")[0]
    backend = env.get("backend", "")
    where = {"local": "local server", "container": "server in a container"}.get(backend, backend)
    cpus = f"{env['cpu_count']} vCPUs {env.get('cpu_model', '')}".strip() if env.get("cpu_count") else ""
    return f"{name} {version}".strip() + (f" ({where})" if where else "") + (f", {cpus}" if cpus else "")


def _cell(row: pd.Series, column: str) -> dict:
    """The number spec of a :func:`_read` row's ``column`` (a summary column name) in the file it was read from."""
    col = MODEL_READ[column] if row["read_from"] == MODEL else column
    return {"kind": "cell", "source": row["source"], "where": dict(row["where"]), "column": col}


def _sources(shown: set[tuple[int, str]], cores: int) -> dict:
    """``intervals``: where the printed levels' numbers come from (:data:`MODEL`, :data:`CELL`, or :data:`MIXED`)
    and, when mixed, ``cell_levels``: the clients per core read from the summary."""
    froms = {f for _, f in shown}
    out = MIXED if len(froms) > 1 else next(iter(froms), CELL)
    return {"intervals": out,
            "cell_levels": [_per_core(k, cores) for k in sorted({k for k, f in shown if f == CELL})] if out == MIXED
            else []}


def add(doc: dict, nums, specs, processed_dir: Path) -> None:
    """``doc["headline"]``: one entry per study with a headline and committed data; numbers under ``headline.*``."""
    doc["headline"] = []
    coefs_file = processed_dir / "findings_regression.csv"
    coefs = pd.read_csv(coefs_file, keep_default_na=False) if coefs_file.exists() else None
    models_file = processed_dir / models_mod.FINDINGS_TABLE
    models = pd.read_csv(models_file) if models_file.exists() else None
    for spec in sorted(specs, key=lambda s: s.paper_order):
        h: Headline | None = getattr(spec, "headline", None)
        source = processed_dir / f"{h.stem}.csv" if h else None
        env_file = processed_dir / f"{h.stem}_environment.json" if h else None
        if h is None or not source.exists() or not env_file.exists():
            continue
        summary, env = pd.read_csv(source), json.loads(env_file.read_text())
        for col, want in h.cell.items():
            summary = summary[summary[col].astype(str) == want]
        # several hosts' runs side by side (the workflow's gather): one entry per environment, never pooled
        by = [c for c in ("host", "env_id") if c in summary.columns and summary[c].nunique() > 1]
        groups = summary.groupby(by, sort=True) if by else [((), summary)]
        for group, part in groups:
            values = dict(zip(by, group if isinstance(group, tuple) else (group,)))
            env_here = {**env, **({"env_id": str(part["env_id"].iloc[0])} if "env_id" in values else {})}
            tag = "".join(f".{v}" for v in values.values())
            # the model fits one host's runs table (environment.check_poolable): it has no row per host, so runs
            # gathered from several hosts are read from the summary, which keeps them apart
            model = None if values else model_cells(models, spec, h, summary)
            doc["headline"].append(_entry(nums, spec, dataclasses.replace(h, cell={**h.cell, **values}), part,
                                          source, env_here, coefs, coefs_file.name, model,
                                          processed_dir / f"{h.stem}_runs.csv", f"headline.{h.stem}{tag}",
                                          f" (host {values['host']})" if "host" in values else ""))


def _entry(nums, spec, h: Headline, summary: pd.DataFrame, source: Path, env: dict, coefs, coefs_name: str,
           model: pd.DataFrame | None, runs_file: Path, prefix: str, where_label: str) -> dict:
    cores = int(env.get("cpu_count") or 1)
    entry = {"stem": h.stem, "engine": spec.engine, "machine": machine_label(spec.engine, env) + where_label,
             "words": h.words, "arms": [], "typical": [], "unresolved": []}
    read = _read(summary, model, spec.baseline, [cfg for cfg, _ in h.arms], source.name, h.cell)
    # a level whose A/A control excludes 1 cannot tell an effect from the instrument: left out, and said so
    unresolved = aa_excludes_1(read, aa_name(spec.baseline))
    shown = set()
    for k in unresolved:
        key = f"{prefix}.aa.at{k}"
        row = read[(read["configuration"] == aa_name(spec.baseline)) & (read["clients"].astype(int) == k)].iloc[0]
        # an end just past 1 gets the digits that show it is (1.0007 would print 1.00, and read as holding 1)
        for col, name in zip(READ, ("estimate", "ci_low", "ci_high")):
            nums.add(f"{key}.{name}", {**_cell(row, col), "sig": 3 if name == "estimate" else sig_apart(row[col])})
        # the screen of anomalies (@sec-screen) reads the summaries; a model's A/A is counted in the models' table
        entry["unresolved"].append({"key": key, "per_core": _per_core(k, cores), "intervals": row["read_from"]})
        shown.add((k, row["read_from"]))
    # a share is printed with its interval; one inside the A/A spread of its level, or without an A/A to check, is
    # also said not to be an effect (stats.effect_reading), which its interval alone does not show. The A/A is the
    # one of the same source as the share (model or summary: _read reads a level whole from one of them).
    read = effects(read, spec.baseline, keys=["clients"])
    for cfg, label in h.arms:
        rows = read[(read["configuration"] == cfg) & ~read["clients"].astype(int).isin(unresolved)]
        rows = rows.sort_values("clients")
        if not len(rows) or "ratio" not in rows.columns:
            continue
        arm = {"label": label, "levels": []}
        for _, row in rows.iterrows():
            k = int(row["clients"])
            key = f"{prefix}.{cfg}.at{k}"
            for col, name in zip(READ, ("estimate", "ci_low", "ci_high")):
                nums.add(f"{key}.{name}", {"kind": "scale", "factor": 100.0, "sig": 2, "of": _cell(row, col)})
            arm["levels"].append({"key": key, "clients": k, "per_core": _per_core(k, cores),
                                  "note": effect_note(row["effect"]), "intervals": row["read_from"]})
            shown.add((k, row["read_from"]))
        entry["arms"].append(arm)
    entry.update(_sources(shown, cores))
    entry["typical"] = _typical(nums, coefs, coefs_name, spec.engine, env, h, prefix)
    entry["daemon"] = _daemon(nums, summary, source.name, runs_file, h, prefix)
    return entry


def study_profile(spec, stem: str) -> str | None:
    """The profile of ``spec``'s committed runs whose processed stem is ``stem`` (what the model table calls it)."""
    runs = [getattr(spec, "committed", None) or {}, *(getattr(spec, "extra_committed", None) or ())]
    for r in runs:
        profile = str(r.get("profile", "standard"))
        if run_stem(spec.name, profile) == stem:
            return profile
    return None


def model_cells(models: pd.DataFrame | None, spec, h: Headline, summary: pd.DataFrame) -> pd.DataFrame | None:
    """The model table's rows of the headline's study, committed run (profile), cell and baseline: one per clients
    level and arm (``arm``, ``clients``, ``ratio``, ``ci_low``, ``ci_high``, ``where``: the row's key in the table),
    or None where the table has none (not built yet, a study or run it does not model) or cannot tell them apart.

    A cell column of the headline (04's regime) the model's level is not split by (its runs table holds one value
    of it, so the model left it out) does not select. A model table whose copy of the summary's per-cell intervals
    (``cell_*``) differs from the summary's is older than the summary: an error, since then the abstract would
    print a model of other data (``make findings`` writes the table from the same processed files first)."""
    profile = study_profile(spec, h.stem)
    if models is None or profile is None or not len(models):
        return None
    rows = models[(models["study"] == spec.name) & (models["profile"] == profile)
                  & (models["baseline"].astype(str) == spec.baseline)]
    for col, want in h.cell.items():
        if col in rows and rows[col].notna().any():
            rows = rows[rows[col].astype(str) == str(want)]
    rows = rows[rows["clients"].notna()]
    if not len(rows) or rows.duplicated(["clients", "arm"]).any():
        return None
    _check_fresh(rows, summary, h)
    keys = ("study", "profile", "design", "level", "arm")
    return pd.DataFrame({"arm": rows["arm"].astype(str), "clients": rows["clients"].astype(int),
                         **{c: rows[c].astype(float) for c in ("ratio", "ci_low", "ci_high")},
                         "where": [{k: r[k] for k in keys} for _, r in rows.iterrows()]}).reset_index(drop=True)


def _check_fresh(rows: pd.DataFrame, summary: pd.DataFrame, h: Headline) -> None:
    if "cell_ratio" not in rows or not {"configuration", "clients", *READ} <= set(summary.columns):
        return
    s = summary.assign(clients=summary["clients"].astype(int), arm=summary["configuration"].astype(str))
    copied = rows[["clients", "arm", "cell_ratio", "cell_low", "cell_high"]].astype({"clients": int})
    both = copied.merge(s[["clients", "arm", *READ]], on=["clients", "arm"])
    for ours, theirs in (("cell_ratio", "ratio"), ("cell_low", "ratio_ci_low"), ("cell_high", "ratio_ci_high")):
        a, b = both[ours].astype(float), both[theirs].astype(float)
        known = a.notna() & b.notna()
        if not ((a[known] - b[known]).abs() <= 1e-5 * b[known].abs()).all():
            raise ValueError(f"{models_mod.FINDINGS_TABLE} does not hold {h.stem}.csv's {theirs} (it was built "
                             "from other processed data): run `make findings` before `make paper`")


def _read(summary: pd.DataFrame, model: pd.DataFrame | None, baseline: str, arms: list[str], source: str,
          cell: Mapping[str, str]) -> pd.DataFrame:
    """The headline's ratios per clients level in the summary's columns (configuration, clients, READ) with where
    each was read (``read_from``, ``source``, ``where``). A level comes whole from the model when the model has
    every row the summary has there (its A/A and the headline's arms), so that each share is read against the A/A
    of the same fit; otherwise whole from the summary (its per-cell intervals and its A/A), a fallback the entry
    names. Without an A/A in either, the model's shares are read as the summary's would be: no A/A to check."""
    aa = aa_name(baseline)
    want = [aa, *arms]
    s = summary[summary["configuration"].astype(str).isin(want)]
    s = s.assign(configuration=s["configuration"].astype(str), clients=s["clients"].astype(int))
    cols = [c for c in READ if c in s.columns]
    parts = []
    for k, lv in s.groupby("clients", sort=True):
        m = None if model is None else model[(model["clients"] == k) & model["arm"].isin(want)]
        if m is not None and len(m) and set(lv["configuration"]) <= set(m["arm"]):
            parts.append(pd.DataFrame({"configuration": m["arm"], "clients": k,
                                       **{c: m[MODEL_READ[c]] for c in READ}, "read_from": MODEL,
                                       "source": models_mod.FINDINGS_TABLE, "where": m["where"]}))
            continue
        # the model lacks this level (or its A/A or an arm): the summary's per-cell intervals, as before issue 40
        where = [{**cell, "configuration": c, "clients": k} for c in lv["configuration"]]
        parts.append(lv[["configuration", "clients", *cols]].assign(read_from=CELL, source=source, where=where))
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["configuration", "clients", *READ, "read_from", "source", "where"])
    return out


def aa_excludes_1(summary: pd.DataFrame, aa: str) -> list[int]:
    rows = summary[summary["configuration"] == aa]
    if "ratio_ci_low" not in rows.columns:
        return []
    bad = rows[(rows["ratio_ci_low"] > 1) | (rows["ratio_ci_high"] < 1)]
    return sorted(int(k) for k in bad["clients"])


def _per_core(clients: int, cores: int) -> str:
    x = clients / cores
    return f"{x:g}"


def _typical(nums, coefs: pd.DataFrame | None, source: str, engine: str, env: dict, h: Headline,
             prefix: str) -> list[dict]:
    """The typical line per family from the fit of this study's environment, regime and workload."""
    if coefs is None or not len(coefs):
        return []
    regime = regression.fit_regime(h.cell.get("regime"))
    key = regression.fit_key(engine, str(env.get("env_id", "")), regime, h.cell.get("test", ""))
    rows = coefs[(coefs["fit"] == key) & (coefs["model"] == "main")
                 & coefs["term"].str.startswith(regression.TYPICAL)]
    out = []
    for fam in regression.FAMILIES:
        term = regression.typical_term(fam)
        if not (rows["term"] == term).any():
            continue
        where = {"fit": key, "model": "main", "term": term}
        k = f"{prefix}.typical.{fam}"
        for col in ("estimate", "ci_low", "ci_high"):
            nums.add(f"{k}.{col}", {"kind": "cell", "source": source, "where": where, "column": col, "sig": 3})
        nums.add(f"{k}.bytes", {"kind": "cell", "source": source, "where": where, "column": "bytes", "sig": 3})
        out.append({"key": k, "label": regression.FAMILY_LABELS[fam]})
    return out


def _daemon(nums, summary: pd.DataFrame, source: str, runs_file: Path, h: Headline, prefix: str) -> dict | None:
    """The logging daemon's CPU as a share of one core, per clients level: its mean CPU seconds per run over the
    runs' measured length (``logger_cpu_s_mean`` / the median ``duration_s`` of that cell's runs)."""
    if h.daemon is None or "logger_cpu_s_mean" not in summary.columns or not runs_file.exists():
        return None
    cfg, words = h.daemon
    rows = summary[summary["configuration"] == cfg].sort_values("clients")
    columns = set(pd.read_csv(runs_file, nrows=0).columns)
    levels = []
    for k in rows["clients"].astype(int):
        key = f"{prefix}.{cfg}.daemon.at{k}"
        where = {**h.cell, "configuration": cfg, "clients": k}
        nums.add(key, {"kind": "div", "sig": 2,
                       "a": {"kind": "cell", "source": source, "where": where, "column": "logger_cpu_s_mean"},
                       "b": {"kind": "agg", "source": runs_file.name, "agg": "median", "column": "duration_s",
                             "where": {c: v for c, v in {**where, **records.MEASURED_WHERE}.items() if c in columns}}})
        levels.append({"key": key, "clients": k})
    return {"words": words, "levels": levels} if levels else None
