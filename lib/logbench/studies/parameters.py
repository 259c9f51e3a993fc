"""The parameters every study shares (clients, repeats, duration, warm-up, seed, output paths, noise
controls), resolved against the study's profile and checked: :func:`study_fields`."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from ..measure import design
from ..base import params
from ..base.errors import ParameterError
from . import recorded as recorded_run
from .output import output_path, processed_path, stem
from .spec import StudySpec


def with_baseline(baseline: str, chosen: tuple[str, ...]) -> tuple[str, ...]:
    """The chosen names with the baseline first: every ratio needs it."""
    return (baseline,) + tuple(c for c in chosen if c != baseline)


def without_block_layout(fields: dict[str, object], swept: object) -> dict[str, object]:
    """``fields`` without the profile's block layout when ``swept`` names server versions: the planned layout (one
    baseline repeated per block, issue 40) was planned on one version's arms; a sweep runs each version's arms
    against its own baseline in the plain interleaved blocks, as its committed profile ``versions`` does."""
    return {k: v for k, v in fields.items() if k != "block_layout"} if swept else fields


def profile_lookup(profile: str, profiles: dict[str, dict[str, object]]) -> Callable[[str, object], object]:
    """Check ``profile`` (smoke/standard/full, or a study's own named profile: a key of ``profiles``);
    returns ``d(name, value)``: the value, or the profile's default when it is None."""
    params.choice("profile", profile, tuple(dict.fromkeys((*params.PROFILES, *profiles))))
    return lambda name, value: params.from_profile(name, value, profile, profiles)


def study_fields(spec: StudySpec, profile: str, profiles: dict[str, dict[str, object]], *,
                 whole_seconds: bool = False, clients: list[int] | None = None, repeats: int | None = None,
                 duration: float | None = None, warmup: float | None = None, warmup_blocks: int = 0,
                 seed: int | None = None, output_dir: str | Path | None = None,
                 processed_dir: str | Path | None = None, publish: bool = False, idle_state: str | None = None,
                 aa_control: bool | None = None, target_halfwidth: float | str | None = None,
                 time_budget_s: float | None = None, max_repeats: int | None = None, placement: str | None = None,
                 recorded: str | None = None, **unknown: object) -> dict[str, object]:
    """The :class:`~logbench.measure.design.Study` fields every study shares, checked (ParameterError otherwise).

    ``whole_seconds``: duration and warm-up are whole seconds (the load tool takes no fractions).
    The noise controls and adaptive repeats (None: the profile's value) are checked by the Study itself.
    Its signature declares the shared parameters (names, types, defaults: :func:`shared_parameters`).
    ``publish``: True only for the committed results (writes data/processed, see :func:`processed_path`).
    ``recorded``: None to measure; "committed" or a run directory to render that finished run instead
    (:mod:`.recorded`: nothing starts, the processed tables come from its records).
    """
    if unknown:
        name = sorted(unknown)[0]
        raise ParameterError(name, unknown[name], f"a parameter of study {spec.name!r}; the shared ones are "
                             + ", ".join(SHARED))
    d = profile_lookup(profile, profiles)
    publish = params.boolean("publish", publish)
    number, non_negative = ((params.positive_int, params.non_negative_int) if whole_seconds
                            else (params.positive_number, params.non_negative_number))
    controls = design.control_fields(profiles[profile], idle_state=idle_state, aa_control=aa_control,
                                     target_halfwidth=target_halfwidth, time_budget_s=time_budget_s,
                                     max_repeats=max_repeats, placement=placement)
    # A named profile's runs are a study of their own in the records and the processed files (common.stem).
    name = stem(spec.name, profile)
    # a block layout is the study's declaration (its profile's "block_layout"), not a parameter a user passes;
    # not "layout", which is study 02's switchback window layout
    layout = design.block_layout(profiles[profile].get("block_layout"))
    # so is a settle condition (its profile's "settle"); without one the runs follow each other as they always have
    settle = design.settle_condition(profiles[profile].get("settle"))
    return dict(
        name=name, engine=spec.engine, profile=profile,
        clients=params.int_list("clients", d("clients", clients)),
        repeats=params.positive_int("repeats", d("repeats", repeats)),
        duration=number("duration", d("duration", duration)),
        warmup=non_negative("warmup", d("warmup", warmup)),
        warmup_blocks=params.non_negative_int("warmup_blocks", warmup_blocks),
        seed=params.non_negative_int("seed", spec.seed if seed is None else seed),
        output_dir=(out := output_path(name, profile, output_dir)),
        processed_dir=processed_path(profile, processed_dir, publish=publish, output_dir=out),
        publish=publish,
        recorded=recorded_run.check(recorded),
        **controls,
        **({"block_layout": layout} if layout is not None else {}),
        **({"settle": settle} if settle is not None else {}),
    )



# study_fields' arguments that are how it is called, not parameters of a study
_HOW = ("spec", "profile", "profiles", "whole_seconds")


@lru_cache(maxsize=1)
def shared_parameters() -> dict[str, tuple[object, object]]:
    """The parameters every study shares, as study_fields' signature declares them: name -> (type, default)."""
    hints = typing.get_type_hints(study_fields)
    return {n: (hints[n], p.default) for n, p in inspect.signature(study_fields).parameters.items()
            if n not in _HOW and p.kind is p.KEYWORD_ONLY}


SHARED = tuple(shared_parameters())
# Shared parameters define() takes that no notebook offers: hooks for tests and for code that builds a study
# (instrument's series runs without the A/A control; tests/test_adaptive.py's warm-up blocks).
LIBRARY_ONLY = ("warmup_blocks", "aa_control")
# The help of each shared parameter (unit, allowed values), where a study's HELP does not say it
# otherwise: its notebook cell's comment and `run STUDY --help`'s text (declaration.declare).
HELP = {
    "clients": "pgbench -c (and -j) values, each > 0; None: the profile's",
    "repeats": "interleaved blocks, > 0; None: the profile's",
    "duration": "seconds measured per run, > 0; None: the profile's",
    "warmup": "seconds of unrecorded pgbench before each run, ≥ 0; None: the profile's",
    "seed": "seed of the randomized run order",
    "output_dir": "raw run records; None: results/<study>/<UTC time> (smoke: a temp dir)",
    "processed_dir": "tidy tables; None: <output_dir>/processed (with publish True: data/processed)",
    "publish": "True only for the committed reference run: its tidy tables go to data/processed (the paper's "
               "input); False: they stay with this run, under <output_dir>/processed",
    "idle_state": 'CPU idle state while measuring: "hold" (/dev/cpu_dma_latency held at 0, see notebook 00) or '
                  "\"free\"; None: profile's (\"hold\")",
    "target_halfwidth": 'adaptive repeats: relative ratio-CI half-width to reach, in (0, 1), or "off"; None: '
                        "profile's",
    "time_budget_s": "seconds the adaptive extra blocks may take, > 0; None: profile's",
    "max_repeats": "cap on repeat blocks (≥ repeats); None: profile's",
    "placement": "CPU placement: \"none\" (the scheduler's) or \"split\" (server and load tool on separate "
                 "CPUs); None: profile's (\"none\")",
    "recorded": 'None: measure; "committed": render the committed run from data/processed instead (nothing '
                "starts); or a run directory (runs.jsonl, environment.json) to render that run",
}
