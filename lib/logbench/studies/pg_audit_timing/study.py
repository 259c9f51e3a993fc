"""Study 05's plan and run: ``define`` checks every parameter and freezes the study (ParameterError before any
server starts), ``run`` measures the clock and executes it; the plan's tables for the notebook
(``configuration_table``, ``design_summary``)."""

from __future__ import annotations

from ...measure import clock, contention
from ...base import params
from ...measure.benches import postgres as pg
from ...base.errors import ParameterError, SettingError
from ...measure.switchback.design import LAYOUT_HELP
from .. import common
from .analysis import processed_tables
from .spec import BASELINE, CONFIGURATIONS, DIRECT, PROFILES, SPEC, AuditTimingStudy


# What each parameter means (unit, allowed values), one line each: notebook 05's generated
# parameters cell and `run STUDY --help` show it; a shared parameter not named here has parameters.HELP's.
HELP = {
    "profile": 'run size: "smoke" (seconds; tests), "standard" (~8 min; committed: blocks, every '
               'configuration), "full" (paper-grade), "switchback" (~25 min; committed: the reloadable arms '
               "switched inside one load per level); a named profile has its own processed files",
    "configurations": "subset of: none, log_statement_all, log_duration, log_statement_all_duration, "
                      "log_statement_all_duration_io_timing, io_timing, log_statement_all_duration_pipe, "
                      "log_statement_all_duration_direct; None: the profile's (\"none\" is always added: the "
                      "baseline)",
    "clients": "pgbench -c (and -j) values, each > 0; None: profile's ([2, 8, 64]: 1, 4 and 32 per core on 2 cores)",
    "repeats": "design blocks: interleaved blocks of separate runs, > 0; None: profile's (5)",
    "duration": "design blocks: seconds measured per run (pgbench -T), > 0",
    "warmup": "seconds of unrecorded pgbench before each run (blocks: the perf profile is taken in a warm-up) or "
              "before the first window of each load (switchback), ≥ 0",
    "design": '"blocks" (a separate run per configuration) or "switchback" (every arm switched by reload '
              "inside one continuous load per clients level; the direct arm, a restart, is refused); None: the "
              "profile's",
    "window_s": "switchback: seconds per window, whole, at least guard_s + 1; None: profile's (switchback: 3)",
    "guard_s": "switchback: seconds after each switch that are not measured, whole, ≥ 0; None: profile's "
               "(switchback: 1)",
    "layout": LAYOUT_HELP,
    "blocks": "switchback: blocks per load, > 0; None: profile's (switchback: 3)",
    "loads": "switchback: independent loads per clients level, the server restarted before each, > 0; None: "
             "profile's (switchback: 5)",
    "max_loads": "switchback: more loads, up to this many (≥ loads), while an arm is wider than "
                 "target_halfwidth; None: profile's",
    "scale": "pgbench scale factor (15 MB per unit); the post used 300; the profile's fits in memory",
    "wchan_hz": "samples per second of every backend's /proc/<pid>/wchan, > 0; None: profile's (100)",
    "perf_profile": "a perf cpu-clock profile in the warm-up of each cell's first measured run (needs perf, "
                    "root; blocks only); None: the profile's (on for blocks, off for switchback)",
    "timing_repeats": "pg_test_timing -d 1 runs for the clock's CI, > 0; None: profile's (5)",
    "log_dir_on": "where PostgreSQL's log files go: \"disk\" (/var/tmp) or \"tmpfs\" (/dev/shm)",
    "sampling_rate": "fraction of transactions pgbench logs for latency percentiles, (0, 1]",
    "shared_buffers": "PostgreSQL shared_buffers",
    "extra_settings": "more PostgreSQL settings for every configuration; names checked against the server's catalog",
    "versions": "PostgreSQL majors run side by side in containers, one interleaved schedule (blocks), each its "
                'own baseline and A/A: any of "13", "15", "17" (docker/servers.tsv); the direct arm cannot '
                "run in a container and is left out; None: one server",
    "backend": "\"local\" (the machine's PostgreSQL 15), \"container\" (testcontainers; not the direct arm) or "
               '"auto" (container when a Docker engine answers); None: local, or container with versions (a '
               "sweep runs in containers only)",
    "seed": "seed of the randomized run order (the post's date)",
    "output_dir": "raw run records; None: results/pg_audit_timing/<UTC time> (smoke: a temp dir)",
    "processed_dir": "tidy summary; None: data/processed (smoke: not written)",
    "publish": "True only for the committed run (issue 17 decides who writes data/processed)",
    "idle_state": "CPU idle state while measuring: \"hold\" or \"free\"; None: profile's (\"hold\")",
    "placement": "CPU placement: \"none\" or \"split\"; None: profile's (\"none\")",
    "target_halfwidth": "adaptive blocks (or loads, switchback): relative ratio-CI half-width in (0, 1), or "
                        "\"off\"; None: profile's",
    "time_budget_s": "seconds the adaptive extra blocks (or loads) may take, > 0; None: profile's",
    "pg_bindir": "PostgreSQL's bin directory (local backend); None: the newest installed",
}


@common.declare(PROFILES, help=HELP)
def define(profile: str = "standard", configurations: list[str] | None = None, scale: int | None = None,
           wchan_hz: float | None = None, perf_profile: bool | None = None, timing_repeats: int | None = None,
           log_dir_on: str = "disk", sampling_rate: float | None = None, shared_buffers: str = "128MB",
           extra_settings: dict | None = None, pg_bindir: str | None = None, design: str | None = None,
           window_s: int | None = None, guard_s: int | None = None, layout: str | None = None,
           blocks: int | None = None, loads: int | None = None, max_loads: int | None = None,
           versions: list[str] | None = None, backend: str | None = None, **shared: object) -> AuditTimingStudy:
    """Check every parameter and freeze the study (ParameterError before anything starts). ``perf_profile`` and
    the switchback design's parameters: None takes the profile's (a profile without ``perf_profile`` profiles).
    ``versions``: PostgreSQL majors (docker/servers.tsv) run side by side in containers, the block design only;
    ``backend``: None is 'local' without versions and 'container' with them. The direct arm
    (``logging_collector = off``: the backends write the server's stderr, a file the study names) runs only on
    the local backend; a sweep's default configurations are the profile's without it (said on the progress
    channel)."""
    d = common.profile_lookup(profile, PROFILES)
    own = PROFILES[profile]
    swept = pg.swept_versions(versions)
    if backend is None:
        backend = "local" if swept is None else "container"
    default = own["configurations"]
    if swept is not None and configurations is None:
        default = common.sweep_default(SPEC.name, swept, default, lambda c: c != DIRECT, "its sink is the server's "
                                       "stderr, which in a container is Docker's log, not a file the study names")
    chosen = params.name_list("configurations", default if configurations is None else configurations,
                              CONFIGURATIONS)
    if DIRECT in chosen and backend != "local":
        raise ParameterError("configurations", list(chosen), f"without {DIRECT!r} on backend {backend!r} (a version "
                             "sweep runs in containers): a container's stderr is Docker's log, not a file the study "
                             "names; any of " + ", ".join(repr(c) for c in CONFIGURATIONS if c != DIRECT))
    hz = params.positive_number("wchan_hz", d("wchan_hz", wchan_hz))
    try:
        engine = pg.pg_fields(backend=backend, image=None, scale=d("scale", scale), query_mode="prepared",
                              syslog_rate_limit=False, log_dir_on=log_dir_on,
                              sampling_rate=d("sampling_rate", sampling_rate), shared_buffers=shared_buffers,
                              extra_settings=extra_settings, pg_bindir=pg_bindir)
    except SettingError as e:
        raise ParameterError("extra_settings", extra_settings, f"settings PostgreSQL knows ({e})") from None
    fields = common.study_fields(SPEC, profile, PROFILES, whole_seconds=True, **shared)
    configs = pg.configurations(common.with_baseline(BASELINE, chosen), CONFIGURATIONS, engine["pg_bindir"],
                                engine["base"], "prepared")
    # Refused before anything starts when an arm needs a restart (the pipe pair's direct arm): design 'blocks'.
    sb = pg.switchback_design(own, configs, engine["pg_bindir"], design=design, window_s=window_s, guard_s=guard_s,
                              layout=layout, blocks=blocks, loads=loads, max_loads=max_loads,
                              lead_in_s=fields["warmup"], versions=swept)
    profiled = params.boolean("perf_profile", (own.get("perf_profile", True) and sb is None)
                              if perf_profile is None else perf_profile)
    if profiled and sb is not None:
        raise ParameterError("perf_profile", perf_profile, "False with design 'switchback': the profile is taken "
                             "in a separate run's warm-up, and a switchback load has none (the block design "
                             "profiles every cell)")
    if profiled and not contention.perf_usable():
        raise ParameterError("perf_profile", perf_profile, "False here: perf is missing or not allowed (install "
                             "linux-perf; run as root or with kernel.perf_event_paranoid ≤ 0)")
    study = AuditTimingStudy(
        **fields, **engine, configurations=configs, wchan_hz=hz, perf_profile=profiled, switchback=sb,
        timing_repeats=params.positive_int("timing_repeats", d("timing_repeats", timing_repeats)))
    return pg.checked(study, swept)


def run(study: AuditTimingStudy, *, progress: bool = True) -> common.StudyResult:
    def start(study, stack):
        bench, env = pg.start(study, stack)
        # the host's clock, once: a version sweep's servers share it (a SplitBench answers for its first server)
        loops, hist = clock.test_timing(bench.pg.binary("pg_test_timing"), repeats=study.timing_repeats)
        env["clock"] = {"loops": loops.to_dict("records"), "histogram": hist.to_dict("records")}
        return bench, env

    return common.run_study(study, processed_tables, start=start, progress=progress)


# the plan's tables for the notebook: the PostgreSQL study type's
configuration_table = pg.configuration_table
design_summary = pg.design_summary
