"""Study 06's plan and run: ``define`` checks every parameter and freezes the study (ParameterError before any
server starts), ``run`` executes it; the plan's tables for the notebook (``method_table``, ``design_summary``)."""

from __future__ import annotations

import pandas as pd

from ...base import params
from ...measure import runner
from ...measure.benches import mariadb as mb
from ...base.errors import ParameterError
from ...base.settings import Configuration, Settings, validate_mariadb
from .. import common
from .analysis import processed_tables
from .bench import RotationBench
from .spec import BASE, BASELINE, METHODS, PROFILES, SETTLE_S, SPEC, WORKLOADS, LogRotationStudy


# What each parameter means (unit, allowed values), one line each: notebook 06's generated
# parameters cell and `run STUDY --help` show it; a shared parameter not named here has parameters.HELP's.
HELP = {
    "profile": 'run size: "smoke" (seconds; tests), "standard" (~6 min; committed), "full" (paper-grade)',
    "methods": "subset of: none, copytruncate, rename_flush, rename_flush_disabled, ebook_long_query_time; None: "
               'all ("none" is always added: it is the baseline)',
    "workload": 'sysbench test: "oltp_point_select" (most records per second) or "oltp_read_write"',
    "clients": "sysbench --threads values, each > 0; None: profile's ([4])",
    "repeats": "interleaved blocks, > 0; None: profile's (5)",
    "duration": "seconds of load per run (sysbench --time), whole seconds ≥ 3",
    "rotate_at": "seconds after the load starts when the rotation starts; leaves whole seconds before and after it",
    "log_size_mb": "MB of filler in the slow log before each run (the size rotated), ≥ 0",
    "pause": "seconds the disabling methods wait before and after the flush (the ebook: 2)",
    "tracer_rate": "numbered tracer statements per second, in (0, 2000]",
    "tables": "sysbench --tables, > 0",
    "table_size": "rows per table, > 0",
    "seed": "seed of the randomized run order (the ebook's date)",
    "backend": "\"local\" (the machine's mariadbd), \"container\" (testcontainers, the same server flags and "
               'settings), or "auto": container when a Docker engine answers, else local',
    "image": "container image; None: the official mariadb:10.11 where available, else the locally built "
             "logbench/mariadb:10.11",
    "mariadbd": "server binary; None: mariadbd on PATH or /usr/sbin (with a container it only checks the settings)",
    "versions": "MariaDB series run side by side in containers, one interleaved schedule, each its own baseline "
                'and A/A: any of "10.5", "10.11", "11.8" (docker/servers.tsv; backend "container" or '
                '"auto", no image); None: one server',
    "output_dir": "raw run records; None: results/log_rotation/<UTC time> (smoke: a temp dir)",
}


@common.declare(PROFILES, help=HELP, without=("warmup", "warmup_blocks"))
def define(profile: str = "standard", methods: list[str] | None = None, workload: str = "oltp_point_select",
           rotate_at: float | None = None, log_size_mb: int | None = None, pause: float | None = None,
           tracer_rate: float | None = None, tables: int | None = None, table_size: int | None = None,
           backend: str = "auto", image: str | None = None, mariadbd: str | None = None,
           versions: list[str] | None = None, **shared: object) -> LogRotationStudy:
    """Check every parameter and freeze the study; raises ParameterError/SettingError before anything starts.
    ``shared``: the parameters every study has (common.SHARED) but warm-up: each run is one continuous load.
    ``versions``: MariaDB series (docker/servers.tsv) run side by side in containers, one interleaved schedule,
    each its own baseline and A/A control (never pooled; issue 23)."""
    d = common.profile_lookup(profile, PROFILES)
    swept = None if versions is None else mb.check_versions(versions, backend, image)
    chosen = common.with_baseline(BASELINE, params.name_list("methods", list(METHODS) if methods is None else methods,
                                                             METHODS))
    params.choice("workload", workload, WORKLOADS)
    for name in ("warmup", "warmup_blocks"):
        if name in shared:
            raise ParameterError(name, shared[name], "not a parameter of this study (each run is one continuous load)")
    engine = mb.mariadb_fields(backend=backend, image=image, mariadbd=mariadbd, tables=d("tables", tables),
                               table_size=d("table_size", table_size), base=BASE)
    validate_mariadb(engine["base"], engine["mariadbd"])
    study = LogRotationStudy(
        **common.study_fields(SPEC, profile, PROFILES, whole_seconds=True, warmup=0, **shared), **engine,
        configurations=tuple(Configuration(m, Settings.of("mariadb"), ("slow_file",)) for m in chosen),
        workload=workload,
        rotate_at=params.positive_number("rotate_at", d("rotate_at", rotate_at)),
        log_size_mb=params.non_negative_int("log_size_mb", d("log_size_mb", log_size_mb)),
        pause=params.non_negative_number("pause", d("pause", pause)),
        tracer_rate=params.positive_number("tracer_rate", d("tracer_rate", tracer_rate)),
    )
    if study.duration < 3:
        raise ParameterError("duration", study.duration, "a whole number of seconds >= 3 (seconds before and after the rotation)")
    # The rotation, its settle second and one more whole second must end before the final (unused) second.
    latest = study.duration - 2 * study.pause - SETTLE_S - 1.0
    if not 2.0 <= study.rotate_at <= latest:
        raise ParameterError("rotate_at", study.rotate_at,
                             f"seconds in [2, duration - 2 x pause - {SETTLE_S + 1:g}] = [2, {latest:g}]: throughput "
                             "before and after the rotation must both be seen")
    if study.tracer_rate > 2000:
        raise ParameterError("tracer_rate", study.tracer_rate, "at most 2000 statements/s (the tracer must not be the load)")
    if swept:
        # configurations "mariadb10.5/rename_flush": each version's server rotates its own log (runner.SplitBench)
        study = mb.with_variants(study, [(f"mariadb{v}", study.backend, None, v) for v in swept])
    return study


def run(study: LogRotationStudy, *, progress: bool = True) -> common.StudyResult:
    """Start a server (one per version of a sweep), load the data, run the schedule, stop and remove everything
    again."""
    def start(study, stack):
        if study.variants:
            benches, envs = {}, {}
            for label, *_ in study.variants:
                server, sb, envs[label] = mb.start(study.variant(label), stack)
                benches[label] = RotationBench(study, server, sb)
                stack.callback(benches[label].close)
            return runner.SplitBench(benches, envs), {"variants": envs}
        server, sb, env = mb.start(study, stack)
        bench = RotationBench(study, server, sb)
        stack.callback(bench.close)
        return bench, env

    return common.run_study(study, processed_tables, start=start, progress=progress)


def method_table(study: LogRotationStudy) -> pd.DataFrame:
    what = {
        "none": "no rotation: the same analysis at the same instant (placebo)",
        "copytruncate": "copy the file to .1, then truncate it in place (logrotate copytruncate)",
        "rename_flush": "rename to .1, then FLUSH SLOW LOGS (the ebook's advice)",
        "rename_flush_disabled": "rename, SET GLOBAL slow_query_log = OFF, pause, FLUSH SLOW LOGS, pause, ON "
                                 "(the ebook's 'disable during rotation')",
        "ebook_long_query_time": "rename, SET GLOBAL long_query_time = 2000, pause, FLUSH SLOW LOGS, pause, restore "
                                 "(the ebook's literal postrotate script)",
    }
    # a version sweep's configurations are each method once per version ("mariadb10.5/none"): the methods once
    names = dict.fromkeys(c.name.rpartition(runner.SplitBench.SEP)[2] for c in study.configurations)
    return pd.DataFrame([{"method": n, "what": what[n]} for n in names]).set_index("method")


def design_summary(study: LogRotationStudy) -> dict[str, object]:
    return {"profile": study.profile, "backend": study.backend + (f" ({study.image})" if study.image else ""),
            **({"versions": ", ".join(v for *_, v in study.variants)} if study.variants else {}),
            "workload": study.load.label, "clients": list(study.clients),
            "repeats": study.repeats, "runs planned": len(study.plan()), "duration (s)": study.duration,
            "rotation at (s)": study.rotate_at, "slow log before rotation (MB of filler)": study.log_size_mb,
            "pause around the flush (s)": study.pause, "tracer (statements/s)": study.tracer_rate,
            "data": f"{study.tables} x {study.table_size} rows", "seed": study.seed, "output": str(study.output_dir)}
