"""What a digest study is made of beyond the skeleton: studies 09 (MariaDB, pt-query-digest) and 10 (PostgreSQL,
pgBadger) are the same method on two engines, so their common part lives here, below both (a study never
imports another).

A digest study is one capture, not a schedule of runs: the server logs every statement for ``duration``
seconds while a workload and the study's own statements run, the captured log is digested, and the ranked
digest is the processed table. Each study keeps what is its engine's: the workload, the capture tool, the
digest tool and its reading of the digest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..base import records


@dataclass(frozen=True, kw_only=True)
class DigestFields:
    """The fields every digest study freezes; a study's type adds its workload's and its server's."""

    name: str
    profile: str
    duration: int  # seconds of capture (and of the workload)
    clients: int  # the workload's clients (sysbench threads, pgbench clients)
    executions: int  # times each own statement runs
    statements: tuple[str, ...]
    seed: int
    output_dir: Path
    processed_dir: Path | None
    backend: str = "local"
    publish: bool = False


@dataclass(frozen=True)
class DigestOutcome:
    """What every digest study's run returns; a study's result type adds what its workload and tools reported."""

    study: DigestFields
    digest: pd.DataFrame  # one row per fingerprint or normalized query, ranked, with `statement` (ours or '')
    environment: dict
    captured_log: Path  # in the output directory (raw)


def own_load(study: DigestFields, execute: Callable[[str, object], object],
             value: Callable[[np.random.Generator, str, int], object]) -> dict[str, int]:
    """Each chosen statement ``executions`` times, interleaved, in a seeded order of parameters:
    ``execute(name, parameter)`` runs statement ``name`` and reads its rows, ``value(rng, name, i)`` is the
    parameter of its ``i``-th execution. Returns the executions of each statement."""
    rng = np.random.default_rng(study.seed)
    done = dict.fromkeys(study.statements, 0)
    for i in range(study.executions):
        for name in study.statements:
            execute(name, value(rng, name, i))
            done[name] += 1
    return done


def checked(capture: Callable[..., object], connect: Callable[[], object], seconds: float,
            load: Callable[[float], None]):
    """``capture(connect, seconds, sleep=load)`` (the engine's capture helper), refused if a setting it
    changed could not be restored."""
    cap = capture(connect, seconds, sleep=load)
    if not cap.ok:
        raise RuntimeError(f"the capture could not restore {sorted(cap.not_restored)}")
    return cap


def keep(study: DigestFields, environment: dict, digest: pd.DataFrame) -> None:
    """The environment beside the raw record, and the digest as the study's processed table where the run
    writes one."""
    text = pd.Series(environment).to_json(indent=2, default_handler=str) + "\n"
    (Path(study.output_dir) / "environment.json").write_text(text)
    if study.processed_dir is not None:
        records.write_processed(study.name, Path(study.processed_dir), environment, {"summary": digest})


def paper_columns(d: pd.DataFrame, query: str, heading: str) -> dict[str, pd.Series]:
    """The columns every digest's paper table starts with: rank, ours, the query (column ``query`` under
    ``heading``, its first 60 characters), count and share of time; a study adds its own after them."""
    from ..base.formatting import number as fmt

    return {"rank": d["rank"].astype(int).astype(str), "ours": d["statement"].fillna("").astype(str),
            heading: d[query].astype(str).str.slice(0, 60), "count": d["count"].astype(int).astype(str),
            "share of time": (100 * d["time_share"]).map(lambda v: f"{fmt(v)} %")}
