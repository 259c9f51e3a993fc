"""Where a study's files go: the stem of a run, its raw records' directory, and the one place that decides
whether a run may write the committed processed files (issue 17); reading a study's processed tables back."""

from __future__ import annotations

import datetime as dt
import secrets
import tempfile
from pathlib import Path

import pandas as pd

from ..base import paths
from ..base.paths import stem  # noqa: F401  (the studies name their files by it)
from ..base.errors import ParameterError


def output_path(name: str, profile: str, given: object = None) -> Path:
    """Raw records: given, else results/<name>/<UTC time>; a smoke run goes to a fresh temporary
    path (created when the run starts, not now)."""
    if given:
        return Path(given)
    if profile == "smoke":
        return Path(tempfile.gettempdir()) / f"logbench-smoke-{secrets.token_hex(4)}" / name
    return paths.RESULTS / name / dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def processed_path(profile: str, given: object = None, *, publish: bool = False,
                   output_dir: object = None) -> Path | None:
    """Where the tidy tables go — the one place that decides whether a run may replace the committed
    processed files (issue 17): ``given``, else data/processed for a published run (``publish=True``:
    the committed-results workflow), else ``<output_dir>/processed`` (a user's run keeps its own
    results; a smoke run's output_dir is a temporary directory). Without an output_dir, None: none written.

    Only ``publish=True`` may write data/processed, also when named as ``given``; a smoke run is never published.
    """
    if publish and profile == "smoke":
        raise ParameterError("publish", publish, "False for a smoke run (its numbers are not results)")
    if given:
        out = Path(given)
        if not publish and out.resolve() == paths.PROCESSED.resolve():
            raise ParameterError("processed_dir", given, "any directory but data/processed, which only a run "
                                 "with publish=True (the committed results) writes")
        return out
    if publish:
        return paths.PROCESSED
    return Path(output_dir) / "processed" if output_dir else None


def load_processed(name: str, *tables: str, processed_dir: Path = paths.PROCESSED) -> tuple[pd.DataFrame, ...]:
    """A study's processed tables: "summary" is ``<name>.csv``, any other key ``<name>_<key>.csv``."""
    return tuple(pd.read_csv(Path(processed_dir) / (f"{name}.csv" if t == "summary" else f"{name}_{t}.csv"))
                 for t in tables)

