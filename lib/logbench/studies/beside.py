"""This run's ratios beside the committed reference machine's, cell by cell, and both environments
(:func:`beside_reference`, one cell per study notebook)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..base import paths
from .running import _environments
from .spec import StudySpec


ENVIRONMENT_ROWS = {"CPU": "cpu_model", "cores": "cpu_count", "memory (GiB)": "memory_bytes", "kernel": "kernel",
                    "OS": "os", "clocksource": "clocksource", "server": "server_version", "backend": "backend",
                    "env_id": "env_id"}


@dataclass(frozen=True)
class Beside:
    """The user's run beside the committed reference: ``cells`` (ratio [95 % CI] (n) of each, cell by cell),
    ``environment`` (machine and server of each), ``note`` (what is compared, or why nothing is)."""

    note: str
    cells: pd.DataFrame | None = None
    environment: pd.DataFrame | None = None

    def _repr_html_(self) -> str:
        import html

        parts = [f"<p>{html.escape(self.note)}</p>"]
        for frame in (self.cells, self.environment):
            if frame is not None:
                parts.append(frame.to_html())
        return "\n".join(parts)

    def __str__(self) -> str:
        parts = [self.note]
        for frame in (self.cells, self.environment):
            if frame is not None:
                parts.append(frame.to_string())
        return "\n\n".join(parts)


def environment_beside(yours: Mapping | None, reference: Mapping | None) -> pd.DataFrame:
    """Rows CPU, cores, memory, kernel, OS, clocksource, server, backend, env_id; one column per server of
    each side ('yours', 'reference'; 'yours (local)', ... for a study on several servers)."""
    cols = {}
    for side, env in (("yours", yours), ("reference", reference)):
        for label, e in _environments(env).items():
            values = {}
            for row, key in ENVIRONMENT_ROWS.items():
                v = e.get(key)
                values[row] = f"{v / 2**30:.1f}" if key == "memory_bytes" and isinstance(v, (int, float)) else v
            cols[f"{side} ({label})" if label else side] = values
    return pd.DataFrame(cols).reindex(list(ENVIRONMENT_ROWS)).fillna("–")


def value_cells(frame: pd.DataFrame, keys: list[str], value: str = "ratio") -> pd.Series:
    """Each cell's ``value`` as text, indexed by ``keys``: 'v [low, high] (n=…)' where the frame has its
    interval (cells without one, a baseline's ratio, are left out), else the value alone (one capture)."""
    from ..base.formatting import ci_text

    lo, hi = f"{value}_ci_low", f"{value}_ci_high"
    if lo in frame.columns:
        rows = frame[frame[lo].notna() | frame[hi].notna()]
        text = [ci_text(r[value], r[lo], r[hi], n=int(r["n"])) for _, r in rows.iterrows()]
    else:  # a value without an interval (one capture, not repeated runs)
        rows = frame
        text = [f"{r[value]:.4g}" if pd.notna(r[value]) else "–" for _, r in rows.iterrows()]
    return rows[keys].assign(text=text).drop_duplicates(keys).set_index(keys)["text"]


def beside_reference(spec_or_name: StudySpec | str, summary: pd.DataFrame, keys: list[str] | None = None, *,
                     environment: Mapping | None = None, publish: bool = False,
                     reference_dir: Path = paths.PROCESSED, value: str = "ratio") -> Beside:
    """This run's ratios beside the committed reference machine's, cell by cell, and both environments.

    One cell per study notebook, after the run (tag it ``nbval-ignore-output``)::

        from logbench.studies import common
        common.beside_reference(study_mod.SPEC, summary, environment=result.environment, publish=study.publish)

    ``spec_or_name``: the study's spec, or the stem of its processed files (a named profile's own stem,
    ``stem(name, profile)``); the reference is ``<reference_dir>/<stem>.csv`` and ``<stem>_environment.json``
    (data/processed: what the committed run published). ``summary``: this run's summary, in the processed
    summary's columns (ratio, ratio_ci_low, ratio_ci_high, n). ``keys``: the columns that name a cell
    (default: the summary's columns before ``n`` that the reference has too, e.g. configuration, clients;
    regime and test in study 04, backend in 03, control in 00). ``environment``: this run's environment
    record (``result.environment``; a study on several servers: ``{"variants": {label: record}}``).
    ``publish``: this run is the reference itself (``study.publish``): the note says so, no comparison.
    ``value``: the column compared (default the throughput ratio; e.g. the digest's rows examined per row sent),
    with its ``<value>_ci_low`` / ``_ci_high`` when the summary has them. Rows without an interval (a baseline's
    ratio, 1 by definition) are left out, unless the value has no interval at all.
    """
    stem = spec_or_name.name if isinstance(spec_or_name, StudySpec) else str(spec_or_name)
    ref_csv, ref_env = Path(reference_dir) / f"{stem}.csv", Path(reference_dir) / f"{stem}_environment.json"
    if publish:
        return Beside(f"This run is the published reference (publish=True): its tables are {ref_csv} and "
                      f"{ref_env.name}, which later runs on other machines are compared with; nothing to compare "
                      "it with here.")
    if not ref_csv.exists():
        return Beside(f"No committed reference for {stem!r} ({ref_csv} is absent): nothing to compare this run with.",
                      environment=environment_beside(environment, None))
    import json

    ref = pd.read_csv(ref_csv)
    ref_environment = json.loads(ref_env.read_text()) if ref_env.exists() else None
    if keys is None:
        cols = list(summary.columns)
        keys = [c for c in cols[:cols.index("n")] if c in ref.columns]
    missing = [k for k in keys if k not in summary.columns or k not in ref.columns]
    if missing:
        raise KeyError(f"beside_reference: key column(s) {missing} not in both this run's summary and {ref_csv}")

    lo = f"{value}_ci_low"
    yours, theirs = value_cells(summary, keys, value), value_cells(ref, keys, value)
    what = f"{value} [95 % CI] (n)" if lo in summary.columns else value
    table = pd.concat({f"yours: {what}": yours, f"reference: {what}": theirs}, axis=1)
    # this run's cells first, in its order; then cells only the reference ran
    order = list(yours.index) + [i for i in theirs.index if i not in set(yours.index)]
    table = table.reindex(order).fillna("–")
    note = (("Throughput ratio to the baseline" if value == "ratio" else f"`{value}`")
            + f", this run beside the committed reference run ({ref_csv.name}), "
            "each with its own 95 % interval and n; the machines differ (below), so a difference is a finding "
            "about the machines only where both runs' A/A controls show no bias.")
    return Beside(note, table, environment_beside(environment, ref_environment))

