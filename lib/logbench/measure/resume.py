"""Resuming a study that stopped part-way: same output directory, same study, same environment.

The schedule is a function of the study (its seed included), so a study run again
with the same parameters plans the same runs in the same order; the runs already
in ``runs.jsonl`` are skipped. A study whose parameters or environment differ from
the recorded one is refused, saying what differs: pooling its runs with the old
ones would mix two experiments.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ..base.environment import CHECKED
from ..base.errors import EnvironmentMismatch, LogbenchError

# Where the output goes is not part of what the study measures.
NOT_COMPARED = ("output_dir", "processed_dir", "publish")


class ResumeRefused(LogbenchError):
    """The output directory holds runs of a different study or environment."""


def _plain(value) -> object:
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def _defaults(study) -> dict:
    """The study type's field defaults, as a recorded study.json would hold them."""
    import dataclasses

    out = {}
    for f in dataclasses.fields(study):
        if f.default is not dataclasses.MISSING:
            out[f.name] = _plain(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = _plain(f.default_factory())
    return out


def _differences(recorded: dict, now: dict, keys) -> list[str]:
    return [f"{k}: {json.dumps(recorded.get(k), default=str)} recorded, {json.dumps(now.get(k), default=str)} now"
            for k in keys if recorded.get(k) != now.get(k)]


def check(study, environment: dict, output_dir: Path) -> bool:
    """True when ``output_dir`` holds an earlier start of this very study in this environment (resume),
    False when it holds none; raises when it holds a different one."""
    out = Path(output_dir)
    study_file, env_file = out / "study.json", out / "environment.json"
    if not study_file.exists():
        return False
    recorded = json.loads(study_file.read_text())
    now = _plain(study.describe())
    # A field the record lacks was added to the study type after the record was made: the recorded study ran
    # as its default does (e.g. no contention sampling), so only a value other than the default differs.
    defaults = _defaults(study)
    keys = sorted(k for k in (set(recorded) | set(now)) - set(NOT_COMPARED)
                  if not (k not in recorded and k in defaults and now.get(k) == defaults[k]))
    diff = _differences(recorded, now, keys)
    if diff:
        raise ResumeRefused(f"{out} holds runs of a study with other parameters; use another output_dir, or the "
                            "recorded parameters to resume it. Differences: " + "; ".join(diff))
    if env_file.exists():
        old_env = json.loads(env_file.read_text())
        if old_env.get("env_id") != environment.get("env_id"):
            diff = _differences(_plain(old_env), _plain(environment), CHECKED)
            raise EnvironmentMismatch(
                f"{out} holds runs from another environment (env_id {old_env.get('env_id')} recorded, "
                f"{environment.get('env_id')} now); runs of two environments are not pooled. Differences: "
                + ("; ".join(diff) or "(none among the checked fields: the record was made by another version)"))
    return True


def remaining(plan, runs: pd.DataFrame, seed: int | None = None) -> tuple[list, int]:
    """The planned runs not yet recorded, and how many were (matched on position, block, configuration,
    clients: a recorded run at a position the plan gives to another pair is an error). With ``seed``,
    only runs of that schedule count (a study running several schedules into one file, each seeded
    apart, as the MariaDB study's cells are)."""
    if runs is not None and seed is not None and "seed" in runs.columns:
        runs = runs[runs["seed"] == seed]
    if runs is None or len(runs) == 0:
        return list(plan), 0
    done = {}
    for r in runs.itertuples(index=False):
        done[int(r.position)] = (int(r.repeat), str(r.configuration), int(r.clients))
    todo = []
    for p in plan:
        key = done.get(p.position)
        if key is None:
            todo.append(p)
        elif key != (p.block, p.configuration, p.clients):
            raise ResumeRefused(f"runs.jsonl has {key} at position {p.position} where the schedule has "
                                f"{(p.block, p.configuration, p.clients)}: not this study's schedule")
    return todo, len(plan) - len(todo)
