"""A study's run sequence: resolve the study (backend 'auto', images) -> interrupt handling -> start the
stack -> environment -> write the study -> execute -> write the processed files (:func:`run_study`)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..analyze import planning
from ..base import paths, records
from ..base.environment import _environments, first_environment
from ..measure import runner
from ..measure.runner import execute_all, switches_of
from ..measure.design import Study
from . import recorded


@dataclass(frozen=True)
class StudyResult:
    study: Study
    runs: pd.DataFrame
    environment: dict
    switches: tuple[tuple[str, float], ...] = ()  # (reload | restart, seconds) of every settings switch


Start = Callable[[Study, contextlib.ExitStack], tuple[object, dict]]
Execute = Callable[..., tuple[pd.DataFrame, list]]


def engine_halves(study: Study) -> tuple[Start | None, Execute]:
    """What starts and executes a study of this type when it passes neither: a PostgreSQL study's declared loads
    are brought up by ``benches.postgres.start`` (its servers, each bench running the load the study declares) and
    run by ``benches.postgres.execute`` (its design: blocks or switchback); any other type has no start of its own
    (None) and runs the plain schedule."""
    from ..measure.benches import postgres as pg

    if isinstance(study, pg.PgStudy):
        return pg.start, pg.execute
    return None, execute_all


def run_study(study: Study, tables: Callable[[StudyResult], dict[str, pd.DataFrame]], *, start: Start | None = None,
              execute: Execute | None = None, progress: bool = True) -> StudyResult:
    """Resolve the study, start everything it needs, run its schedule, stop and remove everything, write its files.

    ``study.resolved()`` decides what define() left to the run (backend 'auto', images) before anything
    starts; the resolved study is what is written, started and run. ``start(study, stack)`` enters the
    servers into ``stack`` and returns (bench, environment record); ``execute(study, bench, env, progress)``
    returns (runs, switches); either, not given, is the study type's (:func:`engine_halves`: a PostgreSQL study
    declares its load and needs neither). ``tables(result)`` gives the processed tables (``summary`` ->
    ``<name>.csv``).
    """
    from ..base import progress as channel

    if getattr(study, "recorded", None) is not None:
        return render(study, tables)
    own_start, own_execute = engine_halves(study)
    start, execute = start or own_start, execute or own_execute
    if start is None:
        raise TypeError(f"a {type(study).__name__} has no start of its own: run_study(..., start=...) brings up "
                        "its servers")
    study = study.resolved()
    # what the planner predicts this schedule reaches, from the committed runs as they are before this run can
    # replace them (a published standard run overwrites its own noise source)
    predicted = planning.predicted_for(study, paths.PROCESSED)
    reporter = channel.Reporter(study.name)
    with runner.terminate_as_interrupt(), contextlib.ExitStack() as stack:
        stack.callback(reporter.close)
        t0 = time.monotonic()
        reporter.say(f"{study.profile} profile; raw runs in {study.output_dir}; starting the servers")
        if predicted.attrs.get("not_predicted"):
            reporter.say(predicted.attrs["not_predicted"])
        with reporter.phase("starting the servers (and loading the data)"):
            bench, env = start(study, stack)
        reporter.say(f"servers up in {channel.duration(time.monotonic() - t0)}: {env_label(env)}")
        runner.write_study(study, env)
        if len(predicted):
            predicted.to_csv(Path(study.output_dir) / recorded.PLANNED, index=False)
        runs, switches = execute(study, bench, env, progress)
        reporter.say("stopping the servers")
    result = StudyResult(study, runs, env, tuple(switches))
    if study.processed_dir is not None:
        out = tables(result)
        if len(predicted):
            out = {**out, "planned": _planned(predicted, _model_view(out, runs), study)}
        else:
            # an earlier run's prediction and what it reached would sit beside runs it did not predict (04's
            # resolution run of 2026-11-28 left one so)
            (Path(study.processed_dir) / f"{study.name}_planned.csv").unlink(missing_ok=True)
        records.write_processed(study.name, Path(study.processed_dir), env, out)
        if study.publish:
            recorded.keep(study, Path(study.processed_dir))
        reporter.say(f"processed tables in {study.processed_dir}")
    return result


def _model_view(out: Mapping[str, pd.DataFrame], runs: pd.DataFrame) -> pd.DataFrame:
    """The runs as the model reads them: the processed runs table where the study writes one (its cell keys as
    columns, e.g. a MariaDB run's sysbench ``test``, which the raw records keep inside ``workload``; the planner's
    prediction was made per level of the same table of the committed runs), else the raw runs."""
    return out["runs"] if "runs" in out else runs


def _planned(predicted: pd.DataFrame, runs: pd.DataFrame, study: Study, *, say: bool = True) -> pd.DataFrame:
    """The planner's prediction beside what the run reached (``<stem>_planned.csv``); a run too short for the model
    (an interrupted one, a user's two blocks) keeps the prediction with the reached half-widths empty. ``say``: print
    what was reached (the run's last lines), or only return it (a notebook's section)."""
    try:
        table = planning.reached_vs_predicted(predicted, runs, baseline=study.baseline)
    except (ValueError, KeyError, np.linalg.LinAlgError) as e:
        if say:
            print(f"{study.name}: the model could not be fitted to this run ({e}); its planned table has the "
                  "prediction only")
        return predicted.assign(aa_hw=np.nan, median_hw=np.nan)
    if say:
        print(planning.reached_text(table))
    return table


def planned(result: StudyResult) -> pd.DataFrame:
    """What the planner predicted the run's schedule would reach, per level (``planned.csv`` of its run directory,
    written when it started; a committed render's from ``<stem>_planned.csv``), beside what it reached: the table
    :func:`run_study` writes as ``<stem>_planned.csv``. Empty where the run has no prediction (a study or profile
    the planner does not predict, no committed runs of its design when it started, a run from before the planner)."""
    study = result.study
    predicted = _recorded_prediction(Path(study.output_dir))
    if predicted is None:
        return pd.DataFrame(columns=[*planning.PREDICTED_COLUMNS, "aa_hw", "median_hw"])
    # the table this run wrote (reached on the processed runs, :func:`_model_view`); the raw runs where none was
    written = Path(study.processed_dir) / f"{study.name}_planned.csv" if study.processed_dir is not None else None
    if written is not None and written.is_file():
        return pd.read_csv(written)
    return _planned(predicted, result.runs, study, say=False)


def _recorded_prediction(directory: Path) -> pd.DataFrame | None:
    """The prediction a run directory kept from its start (``planned.csv``), or None: the run had none."""
    path = directory / recorded.PLANNED
    return pd.read_csv(path)[planning.PREDICTED_COLUMNS] if path.is_file() else None


def env_label(env: Mapping) -> str:
    """'<server version> (<backend>)' per server of an environment record (one, or its variants)."""
    return "; ".join(f"{label + ': ' if label else ''}{e.get('server_version', '?')} ({e.get('backend', '?')})"
                     for label, e in _environments(env).items())


def cores_of(environment: Mapping) -> int:
    """The machine's cores from a run's environment record (a version sweep's: its first server's; one machine)."""
    return int(first_environment(environment)["cpu_count"])


def render(study: Study, tables: Callable[[StudyResult], dict[str, pd.DataFrame]]) -> StudyResult:
    """:func:`run_study` without the measurement: the finished run ``study.recorded`` names (a run directory, or
    "committed": the committed run of its stem) loaded as the run would have handed it over, its processed tables
    written as a run writes them. A committed render never writes over the committed tables from the rounded numbers
    of their runs table: only a committed run that kept its records (recorded.keep) is rendered onto them again."""
    import copy

    directory = recorded.source(study)
    runs, env, switches = recorded.load(directory)
    # what reads the run directory (a switchback run's pilot.json) finds the recorded one
    study = copy.copy(study)
    object.__setattr__(study, "output_dir", directory)
    result = StudyResult(study, runs, env, switches)
    onto_rounded = (study.recorded == recorded.COMMITTED and study.processed_dir is not None
                    and Path(study.processed_dir).resolve() == paths.PROCESSED.resolve()
                    and not (paths.PROCESSED / f"{study.name}_{recorded.KEPT}").is_file())
    if study.processed_dir is not None and not onto_rounded:
        out = tables(result)
        predicted = _recorded_prediction(directory)
        if predicted is not None:
            out = {**out, "planned": _planned(predicted, _model_view(out, runs), study, say=False)}
        records.write_processed(study.name, Path(study.processed_dir), env, out)
        if study.publish:
            recorded.keep(study, Path(study.processed_dir))
    return result
