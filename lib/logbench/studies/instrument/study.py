"""Study 00's plan and run: ``define`` checks every parameter and freezes both schedules and the designs part
(ParameterError before any server starts); ``run`` executes them, each on a fresh server, and writes the
processed tables after all; ``design_summary``, the plan's table for the notebook."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ...base import params
from ...measure.bench import WrappedBench
from ...measure.benches import postgres as pg
from ...measure.design import VARIANT_SEP
from ...base.settings import Configuration
from .. import common
from .analysis import write_processed
from .spec import (ANOMALY_CONTROLS, ANOMALY_DESTINATIONS, BASELINE, CONTROLS, NAME, PROFILES, SKIP_SECONDS, SPEC,
                   ControlledStudy, InstrumentResult, InstrumentStudy)


def _labelled(configs: tuple[Configuration, ...], labels) -> tuple[Configuration, ...]:
    # Interleaved by label within each configuration, the baseline ("<first label>/none") first.
    return tuple(dataclasses.replace(c, name=f"{label}{VARIANT_SEP}{c.name}") for c in configs for label in labels)


# What each parameter means (unit, allowed values), one line each: notebook 00's generated
# parameters cell and `run STUDY --help` show it; a shared parameter not named here has parameters.HELP's.
HELP = {
    "profile": 'run size: "smoke" (seconds; tests), "standard" (~38 min; committed), "sessions" (the '
               'designs part as many rounds at 4 clients as fit its budget), "full" (longer series, more levels)',
    "controls": "noise-curve controls, subset of: free, hold, hold_split; None: all",
    "clients": "noise-curve pgbench -c values, each > 0; None: profile's ([1, 4])",
    "repeats": "interleaved blocks of long runs, > 0; None: profile's (2)",
    "series_s": "seconds per long run (pgbench -T with -P 1), > 3; None: profile's (40)",
    "anomaly_clients": "anomaly-test pgbench -c values; None: profile's ([1, 4])",
    "anomaly_repeats": "interleaved blocks of the anomaly test, > 0; None: profile's (5)",
    "duration": "seconds per anomaly-test run, > 0; None: profile's (4, as the committed studies ran)",
    "warmup": "seconds of unrecorded pgbench before each run, ≥ 0",
    "scale": "pgbench scale factor (16 MB per unit), > 0",
    "design_clients": "the designs part: pgbench -c values, each > 0; None: profile's ([4])",
    "design_rounds": "the designs part: rounds of one switchback and one block session per level and placement, "
                     "0 (no designs part) or ≥ 2; None: profile's (6)",
    "design_placements": 'the designs part: subset of "none" (the scheduler places server and pgbench), '
                         "\"split\" (server on CPU 0, pgbench on CPU 1); None: profile's ([\"none\", \"split\"])",
    "target_halfwidth": "ratio CI half-width the run-length table plans for (relative, > 0)",
    "output_dir": "raw run records (series/ and anomaly/ below it); None: results/instrument/<UTC time> (smoke: "
                  "a temp dir)",
    "pg_bindir": "PostgreSQL's bin directory (local backend); None: the newest installed",
}


# Its PROFILES' sampling rate and the designs part's block shape are fixed per profile; the notebook's
# target_halfwidth plans its run-length table, not a run.
@common.declare(PROFILES, help=HELP, settings=("sampling_rate", "design_blocks", "design_window_s", "design_guard_s",
                                    "design_block_repeats"), notebook_only={"target_halfwidth": (float, 0.03)})
def define(profile: str = "standard", controls: list[str] | None = None, clients: list[int] | None = None,
           repeats: int | None = None, series_s: int | None = None, anomaly_clients: list[int] | None = None,
           anomaly_repeats: int | None = None, duration: float | None = None, warmup: float | None = None,
           scale: int | None = None, seed: int | None = None, output_dir: str | Path | None = None,
           processed_dir: str | Path | None = None, publish: bool = False, pg_bindir: str | None = None,
           design_clients: list[int] | None = None, design_rounds: int | None = None,
           design_placements: list[str] | None = None) -> InstrumentStudy:
    """Check every parameter and freeze both schedules; raises ParameterError before anything starts."""
    d = common.profile_lookup(profile, PROFILES)
    publish = params.boolean("publish", publish)
    chosen = params.name_list("controls", list(CONTROLS) if controls is None else controls, CONTROLS)
    series_s = params.positive_int("series_s", d("series_s", series_s))
    if series_s <= SKIP_SECONDS + 1:
        raise params.ParameterError("series_s", series_s, f"a whole number of seconds > {SKIP_SECONDS + 1}")
    engine = pg.pg_fields(backend="local", image=None, scale=d("scale", scale), query_mode="prepared",
                          syslog_rate_limit=False, log_dir_on="disk", sampling_rate=d("sampling_rate", None),
                          shared_buffers="128MB", extra_settings=None, pg_bindir=pg_bindir)
    out = common.output_path(NAME, profile, output_dir)

    def part(name, destinations, labels, **shared) -> ControlledStudy:
        fields = common.study_fields(SPEC, profile, PROFILES, seed=seed, output_dir=out / name,
                                     processed_dir=None, warmup=warmup, idle_state="free", placement="none",
                                     target_halfwidth="off", **shared)
        configs = pg.configurations(destinations, pg.DESTINATIONS, engine["pg_bindir"], engine["base"], "prepared")
        # the parts write no processed tables of their own: run() writes the study's after both
        return pg.checked(ControlledStudy(**{**fields, "name": f"{NAME}_{name}", "processed_dir": None}, **engine,
                                          configurations=_labelled(configs, labels),
                                          progress=1 if name == "series" else 0))

    series = part("series", (BASELINE,), chosen, clients=d("clients", clients), repeats=d("repeats", repeats),
                  duration=series_s, aa_control=False)
    anomaly = part("anomaly", ANOMALY_DESTINATIONS, ANOMALY_CONTROLS, clients=d("anomaly_clients", anomaly_clients),
                   repeats=d("anomaly_repeats", anomaly_repeats), duration=d("duration", duration))
    from .design_comparison import sessions_for

    designs = sessions_for(SPEC, PROFILES, profile, engine, out / "designs", rounds=d("design_rounds", design_rounds),
                           clients=d("design_clients", design_clients), seed=seed, warmup=warmup, duration=duration,
                           lead_in_s=int(round(series.warmup)) + 1, placements=design_placements)
    return InstrumentStudy(profile=profile, series=series, anomaly=anomaly, controls=tuple(chosen),
                           processed_dir=common.processed_path(profile, processed_dir, publish=publish, output_dir=out),
                           publish=publish, designs=designs)


class ControlledBench(WrappedBench):
    """The PostgreSQL bench, with each configuration's control (its label) told to the runner, which
    holds it only while that run warms up and measures (``runner.execute``: ``controls_of``)."""

    def __init__(self, inner: pg.PgBench, progress: int):
        super().__init__(inner)
        inner.progress = progress

    def controls_of(self, configuration: Configuration) -> tuple[str, str]:
        return CONTROLS[configuration.name.partition(VARIANT_SEP)[0]]


def _run_part(study: ControlledStudy, progress: bool) -> common.StudyResult:
    def start(study, stack):
        bench, env = pg.start(study, stack)
        return ControlledBench(bench, study.progress), env

    return common.run_study(study, lambda result: {}, start=start, progress=progress)


def run(study: InstrumentStudy, *, progress: bool = True) -> InstrumentResult:
    """The noise curve first, then the anomaly test, each on a fresh server; the processed tables after both."""
    series = _run_part(study.series, progress)
    anomaly = _run_part(study.anomaly, progress)
    designs = None
    if study.designs is not None:
        from . import design_comparison

        designs = common.run_study(study.designs.study, lambda result: {},
                                   execute=design_comparison.execute(study.designs), progress=progress).runs
    result = InstrumentResult(study, series.runs, anomaly.runs, series.environment, designs)
    if study.processed_dir is not None:
        write_processed(result, Path(study.processed_dir))
    return result


def design_summary(study: InstrumentStudy) -> dict[str, object]:
    s, a = study.series, study.anomaly
    return {"profile": study.profile, "controls (noise curve)": list(study.controls),
            "clients (noise curve)": list(s.clients), "blocks (noise curve)": s.repeats,
            "seconds per long run": s.duration, "clients (anomaly)": list(a.clients),
            "blocks (anomaly)": a.repeats, "seconds per anomaly run": a.duration, "warm-up per run (s)": s.warmup,
            "scale": s.scale, "runs planned": len(s.plan()) + len(a.plan()), "seed": s.seed,
            "output": str(Path(s.output_dir).parent),
            **({"designs: clients": list(study.designs.study.clients), "designs: rounds": study.designs.rounds,
                "designs: placements": list(study.designs.placements),
                "designs: switchback session": f"{study.designs.study.switchback.blocks} blocks of 3 windows of "
                                               f"{study.designs.study.switchback.window_s} s",
                "designs: block session": f"{study.designs.block_repeats} blocks of 3 runs of {a.duration} s"}
               if study.designs is not None else {})}
