"""The run record: one immutable value per measured run, appended to disk as it finishes.

Runs are stored as JSON lines (``runs.jsonl``): a run is flushed and fsynced the
moment it ends, so an interrupt or a crash later in the study loses nothing
already measured.
"""

from __future__ import annotations

import copy
import json
import os
import warnings
from dataclasses import MISSING, asdict, dataclass, field, fields, make_dataclass
from pathlib import Path

import pandas as pd


def _reported():
    # A field the load tool reports for the run: the bench hands it over in a Measurement (below), built from these.
    return field(metadata={"reported": True})


@dataclass(frozen=True)
class Run:
    # what was run
    study: str
    configuration: str
    settings: dict
    destinations: tuple
    engine: str
    server_version: str
    backend: str
    workload: str
    query_mode: str
    scale: int
    clients: int
    threads: int = _reported()
    # where in the design
    repeat: int
    position: int
    warmup: bool
    seed: int
    started_at: str
    duration_s: float
    wall_s: float = _reported()
    switch: str
    switch_s: float
    # what the load tool saw
    transactions: int = _reported()
    failed: int = _reported()
    tps: float = _reported()
    latency_mean_ms: float = _reported()
    latency_stddev_ms: float = _reported()
    latency_p50_ms: float = _reported()
    latency_p95_ms: float = _reported()
    latency_p99_ms: float = _reported()
    latency_samples: int = _reported()
    # what the log destinations received
    log_records_expected: int
    log_records_received: int
    log_loss: float
    log_records_by_destination: dict
    log_lines: int
    log_bytes: int
    log_lines_per_s: float
    log_bytes_per_s: float
    # what the server and loggers spent
    server_cpu_s: float
    logger_cpu_s: float
    # provenance
    env_id: str
    log_dir_fs: str
    # the noise controls in force and what the machine did meanwhile (see logbench.measure.controls);
    # defaults are what a record written before they existed means: not recorded
    idle_state: str = ""  # "hold", "free", "unavailable: <reason>"
    cpuidle_driver: str = ""
    cpuidle_usage: dict = field(default_factory=dict)  # idle-state name -> entries during the run, all CPUs
    steal_s: float = float("nan")  # all CPUs together
    server_ctx_involuntary: int = -1  # the server's process tree, during the run; -1: not recorded
    server_ctx_voluntary: int = -1
    high_steal: bool = False  # steal above controls.HIGH_STEAL_FRACTION: flagged and shown, never dropped
    quiet_s: float = float("nan")  # seconds waited for the study's declared settle condition before the run; NaN: none
    # declared (not "settle_s": MariaDB's records already name their purge-history wait so)
    extra: dict = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True, default=str)


RUN_FIELDS = tuple(f.name for f in fields(Run))
# The fields a Measurement carries into the record as they are (its ``extra`` is merged with what the runner adds).
REPORTED_FIELDS = tuple(f.name for f in fields(Run) if f.metadata.get("reported"))

# What the load tool reported for one run (a bench's ``measure()``): the record's reported fields, declared once in
# Run (a subclass would put them first in the record, and the processed runs tables' columns follow its order),
# and ``extra``; keywords only (its fields stand in the record's order, apart).
Measurement = make_dataclass("Measurement", [(f.name, f.type) for f in fields(Run) if f.name in REPORTED_FIELDS]
                             + [("extra", "dict")], frozen=True, kw_only=True)
Measurement.__module__ = __name__
Measurement.__doc__ = "What the load tool reported for one run: the record's reported fields, and extra."


def _repair_tail(path: Path) -> None:
    """A crash (power loss) can leave the last record half-written, without its newline: a whole record
    just gets its newline; a partial one is cut off, with a warning, so the next record starts on a line
    of its own."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            if f.tell() == 0:
                return
            f.seek(-1, os.SEEK_END)
            if f.read(1) == b"\n":
                return
            data = path.read_bytes()
    except FileNotFoundError:
        return
    start = data.rfind(b"\n") + 1
    try:
        json.loads(data[start:])
    except ValueError:
        warnings.warn(f"{path}: removed a truncated last line ({len(data) - start} bytes, a run that was being "
                      "written when the study was cut off); the complete runs before it are kept", stacklevel=3)
        with open(path, "r+b") as f:
            f.truncate(start)
            os.fsync(f.fileno())
        return
    with open(path, "ab") as f:
        f.write(b"\n")
        os.fsync(f.fileno())


def append(path: Path, run: Run) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    _repair_tail(path)
    with open(path, "a", encoding="utf-8") as f:
        f.write(run.to_json() + "\n")
        f.flush()
        os.fsync(f.fileno())


def load(path: Path) -> pd.DataFrame:
    """All runs of a ``runs.jsonl`` as a frame, one row per run, columns in record order."""
    path = Path(path)
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()] if path.exists() else []
    rows = []
    for i, line in enumerate(lines, 1):
        try:
            rows.append(json.loads(line))
        except ValueError as e:
            if i < len(lines):
                raise ValueError(f"{path}, line {i} of {len(lines)} is not a run record ({e}); the file is damaged "
                                 "in the middle, not just cut off at the end") from e
            warnings.warn(f"{path}: the last line is truncated ({len(line)} characters, a run cut off while being "
                          f"written, e.g. by a power loss); ignored, the {len(rows)} complete runs before it are "
                          "kept", stacklevel=2)
    # Records written before a field existed get its default, not a missing value.
    rows = [{**{k: copy.copy(v) for k, v in _DEFAULTS.items()}, **r} for r in rows]
    df = pd.DataFrame(rows, columns=list(RUN_FIELDS))
    return df


def measured(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` without its warm-up runs (a table without a ``warmup`` column has none): the runs every summary,
    finding and fit is made of. The flag is read as text, so a table read back from CSV filters as the records
    do in memory (``astype(bool)`` would take the text "False" for true and drop every run)."""
    if "warmup" not in runs.columns:
        return runs
    return runs[~runs["warmup"].astype(str).str.lower().isin(("true", "1"))]


def read_measured(processed_dir: Path | str, stem: str) -> pd.DataFrame | None:
    """The measured runs (:func:`measured`) of the processed table ``<stem>_runs.csv`` in ``processed_dir``, indexed
    from 0; None where there is no such file (the study has not been run), which a reader tells apart from a file
    of warm-up runs only (an empty frame)."""
    f = Path(processed_dir) / f"{stem}_runs.csv"
    return measured(pd.read_csv(f)).reset_index(drop=True) if f.exists() else None


# :func:`measured` as a where-spec of the paper's numbers (paper.numbers.resolve compares the cells' text), kept
# in numbers.json with each number it selects; restricted to the columns a table has, as measured() is.
MEASURED_WHERE = {"warmup": "False"}


def _default(f) -> object:
    if f.default is not MISSING:
        return f.default
    return f.default_factory() if f.default_factory is not MISSING else MISSING


_DEFAULTS = {f.name: _default(f) for f in fields(Run) if _default(f) is not MISSING}


# Record fields holding dicts or tuples: JSON text in the flat CSV files.
NESTED_FIELDS = ("settings", "log_records_by_destination", "extra", "destinations", "cpuidle_usage")


def flatten(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs as a flat, CSV-ready frame: nested fields as sorted JSON text."""
    flat = runs.copy()
    for col in NESTED_FIELDS:
        flat[col] = flat[col].map(lambda v: json.dumps(v, sort_keys=True))
    return flat


def write_processed(name: str, processed_dir: Path, environment: dict,
                    tables: dict[str, pd.DataFrame | None]) -> dict[str, Path]:
    """A study's derived files: ``tables['summary']`` as ``<name>.csv``, every other table as
    ``<name>_<key>.csv``, and the environment record as ``<name>_environment.json``. A table given as None
    has no rows in this kind of run (a block-design run has no switch table): an earlier run's file of that
    name is removed, so data/processed never mixes two runs."""
    processed_dir = Path(processed_dir)
    processed_dir.mkdir(parents=True, exist_ok=True)
    out = {}
    for key, frame in tables.items():
        path = processed_dir / (f"{name}.csv" if key == "summary" else f"{name}_{key}.csv")
        if frame is None:
            path.unlink(missing_ok=True)
            continue
        out[key] = path
        with_environment(frame, environment).to_csv(out[key], index=False, float_format="%.6g")
    out["environment"] = processed_dir / f"{name}_environment.json"
    out["environment"].write_text(json.dumps(environment, indent=2, sort_keys=True, default=str) + "\n")
    return out


def processor_of(processed_dir: Path | str, name: str) -> str:
    """The processor a processed table's runs ran on: its environment record's ``cpu_model`` ("" where there is no
    record, or the record has none at its top, e.g. a version sweep's, which keeps one per variant)."""
    f = Path(processed_dir) / f"{name}_environment.json"
    return str(json.loads(f.read_text()).get("cpu_model") or "") if f.is_file() else ""


def idle_driver_of(processed_dir: Path | str, name: str) -> str:
    """The cpuidle driver a processed table's runs ran under (their records' ``cpuidle_driver``, the most common;
    "" where the table or the column is missing). Not in the environment record, which names the processor only: the
    same Intel Xeon VM ran point selects at 1 connection at 23,800 tps with no driver and 43,400 under haltpoll
    (study 04, 2026-11-28), its windows' noise four times apart."""
    f = Path(processed_dir) / f"{name}_runs.csv"
    return idle_driver(pd.read_csv(f, usecols=lambda c: c == "cpuidle_driver")) if f.is_file() else ""


def idle_driver(runs: pd.DataFrame) -> str:
    """The cpuidle driver runs ran under (their records' ``cpuidle_driver``, the most common; "" unknown)."""
    col = runs["cpuidle_driver"].dropna().astype(str) if "cpuidle_driver" in runs else pd.Series(dtype=str)
    return str(col.mode().iloc[0]) if len(col) else ""


def with_environment(frame: pd.DataFrame, environment: dict) -> pd.DataFrame:
    """``frame`` with an ``env_id`` column (last) where it has none, so a table from one machine stays
    distinguishable beside the same table from another (``logbench.publish.gather``). A multi-server study's
    record (``{"variants": {label: record}}``) gives each row its variant's environment (the column whose
    values are the variants' labels); a table of such a study without one is left as it is."""
    if "env_id" in frame.columns:
        return frame
    if "env_id" in environment:
        return frame.assign(env_id=environment["env_id"])
    variants = {label: rec.get("env_id") for label, rec in environment.get("variants", {}).items()}
    # the column naming the variant: "variant", or a study's own name for it (study 03: "backend")
    for col in ("variant", *frame.columns):
        if variants and col in frame.columns and len(frame) and set(frame[col].astype(str)) <= set(variants):
            return frame.assign(env_id=frame[col].astype(str).map(variants))
    return frame


def loss(expected: int, received: int) -> float:
    """Fraction of expected log records that did not arrive (negative: more arrived than expected)."""
    return float("nan") if expected == 0 else 1.0 - received / expected
