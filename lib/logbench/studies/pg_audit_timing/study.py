"""Study 05's plan and run: ``define`` checks every parameter and freezes the study (ParameterError before any
server starts), ``run`` measures the clock and executes it; the plan's tables for the notebook
(``configuration_table``, ``design_summary``)."""

from __future__ import annotations

from ...measure import clock, contention
from ...base import params
from ...measure.benches import postgres as pg
from ...base.errors import ParameterError, SettingError
from .. import common
from .analysis import processed_tables
from .spec import BASELINE, CONFIGURATIONS, DIRECT, PROFILES, SPEC, AuditTimingStudy


@common.declare(PROFILES)
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

    return common.run_study(study, start, processed_tables, execute=pg.execute, progress=progress)


# the plan's tables for the notebook: the PostgreSQL study type's
configuration_table = pg.configuration_table
design_summary = pg.design_summary
