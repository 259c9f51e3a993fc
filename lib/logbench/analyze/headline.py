"""The paper's answer, in a DBA's words (issue 22 part 4): what logging every statement costs, per destination, as a
share of the throughput without logging at each number of clients per core, and per typical logged line in µs,
each with its CI and on a machine named by what it is, not by an environment hash.

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
from . import regression
from ..base.settings import aa_name
from ..base.stats import effect_note, effects


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


def _percent(source: str, where: dict, column: str) -> dict:
    return {"kind": "scale", "factor": 100.0, "sig": 2,
            "of": {"kind": "cell", "source": source, "where": where, "column": column}}


def add(doc: dict, nums, specs, processed_dir: Path) -> None:
    """``doc["headline"]``: one entry per study with a headline and committed data; numbers under ``headline.*``."""
    doc["headline"] = []
    coefs_file = processed_dir / "findings_regression.csv"
    coefs = pd.read_csv(coefs_file, keep_default_na=False) if coefs_file.exists() else None
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
            doc["headline"].append(_entry(nums, spec, dataclasses.replace(h, cell={**h.cell, **values}), part,
                                          source, env_here, coefs, coefs_file.name,
                                          processed_dir / f"{h.stem}_runs.csv", f"headline.{h.stem}{tag}",
                                          f" (host {values['host']})" if "host" in values else ""))


def _entry(nums, spec, h: Headline, summary: pd.DataFrame, source: Path, env: dict, coefs, coefs_name: str,
           runs_file: Path, prefix: str, where_label: str) -> dict:
    cores = int(env.get("cpu_count") or 1)
    entry = {"stem": h.stem, "engine": spec.engine, "machine": machine_label(spec.engine, env) + where_label,
             "words": h.words, "arms": [], "typical": [], "unresolved": []}
    # a level whose A/A control excludes 1 cannot tell an effect from the instrument: left out, and said so
    unresolved = aa_excludes_1(summary, aa_name(spec.baseline))
    for k in unresolved:
        key = f"{prefix}.aa.at{k}"
        where = {**h.cell, "configuration": aa_name(spec.baseline), "clients": k}
        for col, name in (("ratio", "estimate"), ("ratio_ci_low", "ci_low"), ("ratio_ci_high", "ci_high")):
            nums.add(f"{key}.{name}", {"kind": "cell", "source": source.name, "where": where, "column": col,
                                       "sig": 3})
        entry["unresolved"].append({"key": key, "per_core": _per_core(k, cores)})
    # a share is printed with its interval; one inside the A/A spread of its level, or without an A/A to check, is
    # also said not to be an effect (stats.effect_reading), which its interval alone does not show
    read = effects(summary, spec.baseline)
    for cfg, label in h.arms:
        rows = read[(read["configuration"] == cfg) & ~read["clients"].astype(int).isin(unresolved)]
        rows = rows.sort_values("clients")
        if not len(rows) or "ratio" not in rows.columns:
            continue
        arm = {"label": label, "levels": []}
        for k, effect in zip(rows["clients"].astype(int), rows["effect"]):
            key = f"{prefix}.{cfg}.at{k}"
            where = {**h.cell, "configuration": cfg, "clients": k}
            for col, name in (("ratio", "estimate"), ("ratio_ci_low", "ci_low"), ("ratio_ci_high", "ci_high")):
                nums.add(f"{key}.{name}", _percent(source.name, where, col))
            arm["levels"].append({"key": key, "clients": k, "per_core": _per_core(k, cores),
                                  "note": effect_note(effect)})
        entry["arms"].append(arm)
    entry["typical"] = _typical(nums, coefs, coefs_name, spec.engine, env, h, prefix)
    entry["daemon"] = _daemon(nums, summary, source.name, runs_file, h, prefix)
    return entry


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
