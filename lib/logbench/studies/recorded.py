"""A finished run, loaded instead of measured: the render half of "measure, then narrate" (issue 39).

A study's shared parameter ``recorded`` (:func:`.parameters.study_fields`) names what to render from:

- ``None`` (the default): measure, as always;
- a run directory (what a run wrote: ``runs.jsonl``, ``environment.json``, and a switchback run's ``pilot.json``):
  its records, analysed by the same code a measurement's are;
- ``"committed"``: the committed run of the study's stem, from ``data/processed``, its run
  directory rebuilt in the study's ``output_dir`` (:func:`committed_directory`): from ``<stem>_records.jsonl``, the
  raw records a published run keeps beside its tables (:func:`keep`), where there is one, exact; else from what the
  committed tables keep, every record field of ``<stem>_runs.csv`` (nested fields as JSON there, so exact; numbers as
  that table wrote them, to six significant digits, so a mean or a CI made from them may differ from the committed
  one in its last digit); ``<stem>_environment.json`` as it is, a switchback run's pilot from ``<stem>_pilot.csv``,
  and the planner's prediction (``planned.csv``) from the prediction columns of ``<stem>_planned.csv``.

Nothing starts: no server, no load, no Docker (``Study.resolved()`` is not called either: its ``backend='auto'``
asks the machine). :func:`.running.render` does the rest as a measured run's end does, so the processed tables come
from the same ``processed_tables``. What a committed render can show (``tests/test_recorded.py``, every committed
run): the runs table and the tables made run by run come back byte for byte; a mean, a CI, a ratio made from the
rounded numbers within that rounding. So a committed render never writes over the committed tables unless the run
kept its records (``<stem>_records.jsonl``, from the next published run on): then it is exact.
"""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import fields
from pathlib import Path

import pandas as pd

from ..base import paths, records
from ..base.errors import ParameterError

COMMITTED = "committed"
# What a run directory must hold (its raw records); the rest is optional (pilot.json: switchback only; planned.csv:
# the planner's prediction, written when a run it predicts started).
RUNS, ENVIRONMENT, PILOT, PLANNED = "runs.jsonl", "environment.json", "pilot.json", "planned.csv"
# Marks a run directory rebuilt from committed tables (what it was rebuilt from), so a render may replace it.
REBUILT = "rebuilt-from.txt"


def check(recorded: object) -> str | None:
    """``recorded`` as the study keeps it: None, "committed", or an existing run directory (its path as text);
    ParameterError otherwise, before anything starts."""
    if recorded is None:
        return None
    if not isinstance(recorded, (str, Path)) or not str(recorded):
        raise ParameterError("recorded", recorded, f'None (measure), "{COMMITTED}", or a run directory')
    if str(recorded) == COMMITTED:
        return COMMITTED
    d = Path(recorded)
    if not (d / RUNS).is_file() or not (d / ENVIRONMENT).is_file():
        raise ParameterError("recorded", recorded, f'None (measure), "{COMMITTED}", or a run directory holding '
                             f"{RUNS} and {ENVIRONMENT} (what a run wrote)")
    return str(d)


def source(study: object, processed_dir: Path | None = None) -> Path:
    """The run directory ``study.recorded`` names; for "committed", one rebuilt from the committed tables of the
    study's stem in its ``output_dir`` (a render's own run directory; never one holding measured records)."""
    if study.recorded != COMMITTED:
        return Path(study.recorded)
    out = Path(study.output_dir)
    if (out / RUNS).exists() and not (out / REBUILT).exists():
        raise ParameterError("output_dir", str(out), f"a directory without measured records ({RUNS}): a committed "
                             "render rebuilds the committed run's records there")
    return committed_directory(study.name, out, processed_dir or paths.PROCESSED,
                               cells=getattr(study, "cell_names", None))


def load(directory: Path) -> tuple[pd.DataFrame, dict, tuple[tuple[str, float], ...]]:
    """(runs, environment record, settings switches) of a run directory, as the measurement handed them over."""
    directory = Path(directory)
    runs = records.load(directory / RUNS)
    env = json.loads((directory / ENVIRONMENT).read_text())
    return runs, env, switches_of(runs)


def switches_of(runs: pd.DataFrame) -> tuple[tuple[str, float], ...]:
    """The settings switches a bench made, as its runs recorded them (one per run that switched)."""
    done = runs[runs["switch"].isin(("reload", "restart"))]
    return tuple((str(k), float(s)) for k, s in zip(done["switch"], done["switch_s"]))


# -- a run directory from the committed tables ------------------------------------------------------------------

_TYPES = {f.name: f.type for f in fields(records.Run)}


def _value(name: str, text: str) -> object:
    """A record field from its text in a processed runs table (records.flatten, then to_csv)."""
    if name in records.NESTED_FIELDS:
        return json.loads(text)
    tp = _TYPES[name]
    if tp == "bool":
        return text == "True"
    if tp == "str":
        return text
    if text == "":
        # an empty cell: a field the load tool did not report (None), or a not-recorded default (nan)
        return None
    number = float(text)
    if tp == "int" and number.is_integer():
        return int(number)
    return number


def committed_records(stem: str, processed_dir: Path = paths.PROCESSED) -> list[dict]:
    """Every run record of a committed run, from ``<stem>_runs.csv`` (warm-up runs included, as there): its record
    fields only, the study's own columns (derived from ``extra``) and the ``variant`` column left out."""
    path = Path(processed_dir) / f"{stem}_runs.csv"
    if not path.is_file():
        raise ParameterError("recorded", COMMITTED, f"a study whose committed run kept its runs table ({path.name} "
                             f"is not in {processed_dir})")
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [f for f in records.RUN_FIELDS if f not in table.columns and f not in records._DEFAULTS]
    if missing:
        raise ValueError(f"{path}: no column {', '.join(missing)}: not a runs table of logbench.base.records.Run")
    cols = [f for f in records.RUN_FIELDS if f in table.columns]
    return [{f: _value(f, row[f]) for f in cols} for row in table[cols].to_dict("records")]


def _plain(v: object) -> object:
    v = v.item() if hasattr(v, "item") else v
    return None if isinstance(v, float) and math.isnan(v) else v


def committed_directory(stem: str, into: Path, processed_dir: Path = paths.PROCESSED, *,
                        cells: tuple[str, ...] | list[str] | None = None) -> Path:
    """A run directory (``runs.jsonl``, ``environment.json``, ``pilot.json`` for a switchback run) rebuilt in
    ``into`` from the committed tables of ``stem``; returns ``into``. ``cells``: a study of several cells' names
    in its order (``cell_names``): its pilot.json keeps a cell by its index, its table by its name."""
    processed_dir, into = Path(processed_dir), Path(into)
    into.mkdir(parents=True, exist_ok=True)
    kept = processed_dir / f"{stem}_{KEPT}"
    if kept.is_file():
        (into / RUNS).write_bytes(kept.read_bytes())
    else:
        rows = committed_records(stem, processed_dir)
        with open(into / RUNS, "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, sort_keys=True) + "\n")
    (into / REBUILT).write_text(f"{kept if kept.is_file() else processed_dir / (stem + '_runs.csv')}\n")
    env = processed_dir / f"{stem}_environment.json"
    (into / ENVIRONMENT).write_text(env.read_text())
    pilot = processed_dir / f"{stem}_pilot.csv"
    if pilot.is_file():
        # the pilot's table is pilot.json as a frame, with the env_id column records.with_environment added
        frame = pd.read_csv(pilot)
        frame = frame.drop(columns=["env_id"], errors="ignore")
        if cells is not None and "cell" in frame:
            frame["cell"] = frame["cell"].map(lambda c: list(cells).index(c) if c in cells else c)
        (into / PILOT).write_text(json.dumps([{k: _plain(v) for k, v in r.items()}
                                              for r in frame.to_dict("records")]))
    planned = processed_dir / f"{stem}_planned.csv"
    if planned.is_file():
        # the prediction as the run wrote it when it started; what it reached is computed from the records again
        from ..analyze.planning import PREDICTED_COLUMNS

        pd.read_csv(planned)[PREDICTED_COLUMNS].to_csv(into / PLANNED, index=False)
    return into


# -- what a published run keeps of its records --------------------------------------------------------------------

KEPT = "records.jsonl"  # data/processed/<stem>_records.jsonl


def keep(study: object, processed_dir: Path) -> Path | None:
    """A published run's raw records beside its tables (``<stem>_records.jsonl``, its ``runs.jsonl`` as written),
    so that a committed render of it is exact: the runs table rounds its numbers. Replaced with the tables, by the
    next published run of the stem (data/raw, immutable, is no place for a record that a re-run replaces)."""
    records_file = Path(study.output_dir) / RUNS
    if not records_file.is_file():
        return None
    out = Path(processed_dir) / f"{study.name}_{KEPT}"
    shutil.copyfile(records_file, out)
    return out
