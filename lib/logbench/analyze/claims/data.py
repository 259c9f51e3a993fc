"""A study's processed data as the claims see it, and the runs a claim is about: the claims file's cell syntax
(';'-separated lists, ``column=value`` filters), the regime of each run, and the restriction to a claim's."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pandas as pd
# pgbench database size per scale unit, from post 000's own numbers (scale 200 = 2997 MB, 2000 = 29 GB).
PGBENCH_BYTES_PER_SCALE = 15e6

REGIMES = ("", "cached", "io_bound")

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
