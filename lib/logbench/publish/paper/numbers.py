"""``numbers.json``: every in-text number with its provenance, and :func:`generate`, which writes ``generated/``.

No number in the paper is typed by hand: each in-text number carries a ``spec`` saying which processed file, row
and column it came from (:func:`resolve`; ``tests/test_paper.py`` re-reads it from there and finds its text, as
:func:`render` prints it, in the PDF). :func:`generate` calls one section per part of the paper, in the order
their tables and figures are listed.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd

from ...analyze import claim_rules
from ...analyze import claims as claims_mod
from ...analyze import daemons, discussion, headline, regression
from ...base import paths
from ...base.formatting import rounded
from ... import studies as studies_registry
from ...analyze.claims import fmt, fmt_p
from ..findings import load_studies
from ...base.stats import CONFIDENCE
from . import cost_model, costs, counted, guide, per_study, sections, versions
from .tables import GENERATED, add_figure, add_table, posts_table


def _missing(value) -> bool:
    if value is None or value is pd.NA:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


class Numbers:
    """Every in-text number with its provenance (``spec``), read from the processed files."""

    def __init__(self, processed_dir: Path):
        self.dir = Path(processed_dir)
        self.items: dict[str, dict] = {}
        self._cache: dict[str, object] = {}

    def _load(self, source: str):
        if source not in self._cache:
            p = self.dir / source
            self._cache[source] = json.loads(p.read_text()) if source.endswith(".json") else pd.read_csv(p)
        return self._cache[source]

    def add(self, key: str, spec: dict, *, optional: bool = False) -> str | None:
        """Register a number; a missing value (NaN, empty) is skipped when optional, else printed as '—'."""
        value = resolve(spec, self._load, constants=CONSTANTS)
        if _missing(value):
            if optional:
                return None
            value = None
        text = render(value, spec) if value is not None else "—"
        if isinstance(value, float) and math.isinf(value):
            # an unbounded interval's end (Fieller, few runs): JSON has no infinity, so its text "inf"/"-inf"
            value = str(value)
        self.items[key] = {"text": text, "value": value, "spec": spec}
        return text

    def get(self, key: str) -> str:
        return self.items[key]["text"]


# Constants of the method that the paper states (the test compares them with the code).
CONSTANTS = {
    "claims.MAX_CLIENTS_PER_CORE": claims_mod.MAX_CLIENTS_PER_CORE,
    "regression.COOKS_FACTOR": regression.COOKS_FACTOR,
    "regression.BYTES_PER_KB": regression.BYTES_PER_KB,
    "stats.CONFIDENCE_PERCENT": round(100 * CONFIDENCE),
    "claims.EQUIVALENCE_PERCENT": round(100 * claims_mod.EQUIVALENCE),
    **{f"claim_rules.POST_CORES.{p}": c for p, c in claim_rules.POST_CORES.items() if c is not None},
    "claim_rules.POST_001_MAX_PER_CORE": claim_rules.POST_001_MAX_PER_CORE,
    "daemons.UPPER_WITHIN": daemons.UPPER_WITHIN,
}


def resolve(spec: dict, load, constants: dict | None = None):
    """The value a spec points at. Kinds: cell (one row's column), agg (count/nunique/max/min/first/list over
    rows), env (a key of a JSON record), constant, div and mul (two specs), scale (a spec times a factor), inv (a
    factor over a spec: µs per transaction from transactions per second)."""
    kind = spec["kind"]
    if kind == "constant":
        return (constants or CONSTANTS)[spec["name"]]
    if kind == "div":
        return resolve(spec["a"], load, constants) / resolve(spec["b"], load, constants)
    if kind == "mul":
        return resolve(spec["a"], load, constants) * resolve(spec["b"], load, constants)
    if kind == "inv":
        return spec["factor"] / resolve(spec["of"], load, constants)
    if kind == "scale":
        return resolve(spec["of"], load, constants) * spec["factor"]
    data = load(spec["source"])
    if kind == "env":
        return data[spec["key"]]
    rows = data
    for col, want in spec.get("where", {}).items():
        rows = rows[rows[col].astype(str) == str(want)]
    if kind == "cell":
        if len(rows) != 1:
            raise ValueError(f"spec {spec} matches {len(rows)} rows, not 1")
        v = rows[spec["column"]].iloc[0]
        return v.item() if hasattr(v, "item") else v
    if kind == "agg":
        col = rows[spec["column"]] if spec.get("column") else rows
        how = spec["agg"]
        if how == "count":
            return int(len(rows))
        if how == "nunique":
            return int(col.nunique())
        if how == "list":
            return sorted(int(x) for x in col.unique()) if spec.get("int") else sorted(str(x) for x in col.unique())
        if how == "first":
            v = col.iloc[0]
            return v.item() if hasattr(v, "item") else v
        v = getattr(col, how)()
        return v.item() if hasattr(v, "item") else v
    raise ValueError(f"spec kind {kind!r}")


def render(value, spec: dict) -> str:
    """The text of a value: numbers with ``sig`` significant digits (fmt), or, where the spec says ``grouped`` (a
    large rate: a daemon's ceiling), at ``sig`` digits with the thousands grouped (formatting.rounded; a whole count
    grouped, all its digits kept); lists joined, text as is."""
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if isinstance(value, bool):
        return str(value)
    if spec.get("kind") == "constant":
        return str(value)
    if spec.get("p_value"):
        return fmt_p(float(value))
    if isinstance(value, (int, float)):
        if spec.get("int") or (isinstance(value, int) and "sig" not in spec):
            return f"{int(value):,}" if spec.get("grouped") else str(int(value))
        return (rounded if spec.get("grouped") else fmt)(float(value), spec.get("sig", 3))
    return str(value)


def constants_section(nums: Numbers) -> None:
    """The method's constants the text states (the posts' cores are registered with the threats)."""
    for key, name in (("confidence", "stats.CONFIDENCE_PERCENT"), ("equivalence", "claims.EQUIVALENCE_PERCENT"),
                      ("max_clients_per_core", "claims.MAX_CLIENTS_PER_CORE"),
                      ("cooks_factor", "regression.COOKS_FACTOR"),
                      ("bytes_per_kb", "regression.BYTES_PER_KB"),
                      ("max_clients_per_core_001", "claim_rules.POST_001_MAX_PER_CORE"),
                      ("ceiling_upper_within", "daemons.UPPER_WITHIN")):
        nums.add(key, {"kind": "constant", "name": name})


def generate(processed_dir: Path | str = paths.PROCESSED, figures_dir: Path | str = paths.FIGURES,
             build_dir: Path | str = paths.PAPER) -> dict:
    """Write ``<build_dir>/generated/`` (numbers.json and the tables) from the processed data; returns numbers.json."""
    processed_dir, figures_dir, build_dir = Path(processed_dir), Path(figures_dir), Path(build_dir)
    gen = build_dir / GENERATED
    if gen.exists():
        shutil.rmtree(gen)
    gen.mkdir(parents=True)
    nums = Numbers(processed_dir)
    doc: dict = {"studies": [], "missing_studies": [], "engines": [], "floors": [], "figures": [], "tables": [],
                 "switchback_studies": []}
    # the sections in the order their tables and figures are listed
    doc["posts_table"] = add_table(doc, gen, posts_table(), "posts")
    constants_section(nums)
    found, status = load_studies(processed_dir)
    per_study.studies_section(doc, processed_dir, gen, nums, found, status, figures_dir)
    costs.costs_section(doc, processed_dir, gen, nums, found, figures_dir)
    counted.record_cost_section(doc, processed_dir, gen, nums)
    cost_model.cost_model_section(doc, processed_dir, gen, nums)
    guide.guide_section(doc, processed_dir, gen, nums)
    sections.claims_section(doc, processed_dir, gen, nums)
    headline.add(doc, nums, studies_registry.specs(), processed_dir)
    sections.anomaly_section(doc, processed_dir, gen, nums, found)
    sections.screen_section(doc, processed_dir, gen, nums)
    sections.digest_section(doc, processed_dir, gen, nums)
    versions.versions_section(doc, processed_dir, gen)
    sections.designs_section(doc, processed_dir, gen)
    sections.models_section(doc, processed_dir, gen, nums)
    doc["instrument_figure"] = add_figure(doc, figures_dir, "instrument_cv")
    doc["headline_figure"] = add_figure(doc, figures_dir, "headline")
    sections.threats_section(doc, processed_dir, nums)
    discussion.add(doc, nums, processed_dir)
    discussion.add_sampling(doc, nums, processed_dir)
    doc["numbers"] = nums.items
    (gen / "numbers.json").write_text(json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False, default=str,
                                                 allow_nan=False) + "\n")
    return doc
