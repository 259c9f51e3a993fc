"""Study 02's plan and run: ``define`` checks every parameter and freezes the study (ParameterError or SettingError
before any server starts; the IO-bound regime's preconditions), ``run`` executes it; the plan's tables for the
notebook (``configuration_table``, ``design_summary``)."""

from __future__ import annotations

import re

import pandas as pd

from ...base import params, paths
from ...measure.benches import postgres as pg
from ...base.errors import ParameterError
from ...servers import memlimit
from ...measure.switchback.design import LAYOUT_HELP
from .. import common
from .analysis import processed_tables
from .spec import (ARMS, BASELINE, BYTES_PER_SCALE, DESTINATIONS, IO_BOUND_FACTOR, PROFILES, SPEC,
                   PgDestinationsStudy, with_statement_logging)


# What each parameter means (unit, allowed values), one line each: notebook 02's generated
# parameters cell and `run STUDY --help` show it; a shared parameter not named here has parameters.HELP's.
HELP = {
    "profile": 'run size: "smoke" (seconds; tests), "standard" (~15 min; committed), "full" (paper-grade), '
               "\"io_bound\" (~11 min; committed: the post's IO-bound half under a memory limit, reads at a "
               "disk's pace) or \"post004\" (post 004's log_statement all to none / stderr / syslog at 8 "
               "clients, ~6 min) or \"post000\" (post 000's cached half as it ran: its five configurations and "
               "two sampled ones at 1 / 2 / 4 clients, rsyslog rate-limited, ~14 min); a named profile has its "
               "own processed files",
    "destinations": "subset of: none, stderr, csvlog, jsonlog, syslog, remote_syslog_udp, remote_syslog_tcp, "
                    '"syslog,csvlog", and the sampled stderr_sample_1pct, stderr_sample_10pct; None: the '
                    "profile's (standard: every destination at full rate; \"none\" is always added: it is the "
                    "baseline)",
    "clients": "pgbench -c (and -j) values, each > 0; None: profile's ([1, 4, 8] as in the post)",
    "repeats": "design blocks: interleaved blocks of separate runs, > 0; None: profile's",
    "duration": "design blocks: seconds measured per run (pgbench -T), > 0",
    "warmup": "seconds of unrecorded pgbench before each run (blocks) or before the first window of each load "
              "(switchback), ≥ 0",
    "design": '"switchback" (every arm switched by reload inside one continuous load per clients level) or '
              "\"blocks\" (a separate run per configuration); None: the profile's (blocks in every profile: "
              "notebook 00 measured the switchback design less efficient than separate runs at 2 clients per "
              "core)",
    "window_s": "switchback: seconds per window, whole, at least guard_s + 1; None: profile's (standard: 4)",
    "guard_s": "switchback: seconds after each switch that are not measured, whole, ≥ 0; None: profile's "
               "(standard: 1)",
    "layout": LAYOUT_HELP,
    "blocks": "switchback: blocks per load, > 0; None: profile's (standard: 2)",
    "loads": "switchback: independent loads per clients level, the server restarted before each, > 0; None: "
             "profile's (standard: 4)",
    "max_loads": "switchback: more loads, up to this many (≥ loads), while an arm is wider than "
                 "target_halfwidth; None: profile's",
    "scale": "pgbench scale factor (16 MB per unit); the profile's fits in memory; e.g. 2000 for the post's "
             "IO-bound variant",
    "query_mode": "pgbench -M: \"simple\" or \"prepared\"; None: the profile's (prepared, as the post's cached "
                  "run; io_bound and post004: simple)",
    "statement_logging": 'how every statement is logged: "min_duration_0" (log_min_duration_statement 0, post '
                         "000) or \"log_statement_all\" (log_statement all, post 004); None: the profile's "
                         "(post004: log_statement_all, else min_duration_0)",
    "syslog_rate_limit": "rsyslog input rate limiting: False (current rsyslog default) or True (5 s / 200 "
                         "messages, as older distributions shipped); None: the profile's (post000: True, else "
                         "False)",
    "log_dir_on": "where PostgreSQL's own log files go: \"disk\" (/var/tmp) or \"tmpfs\" (/dev/shm, as in a "
                  "comment on the post)",
    "sampling_rate": "fraction of transactions pgbench logs for latency percentiles, (0, 1]",
    "shared_buffers": "PostgreSQL shared_buffers; None: profile's (128MB; io_bound: 32MB)",
    "memory_limit_mb": "memory cgroup limit (MB, page cache included) on the local server's processes, data "
                       "evicted from the page cache first: makes the data not fit; None: profile's (io_bound: "
                       "192; others: no limit)",
    "read_iops": "under memory_limit_mb, disk reads per second allowed to the server's processes (a slow disk's "
                 "pace); None: profile's (io_bound: 160; others: unpaced)",
    "extra_settings": 'more PostgreSQL settings for every configuration, e.g. {"track_io_timing": "on"}; '
                      "names checked against the server's catalog",
    "seed": "seed of the randomized run order (the post's date)",
    "backend": "\"local\" (the machine's PostgreSQL binaries), \"container\" (testcontainers), or \"auto\": "
               "container when a Docker engine answers, else local",
    "versions": "container only: PostgreSQL major versions to sweep in one interleaved schedule, from 13, 15, 17 "
                "(docker/servers.tsv; each image built on first use); None: one server",
    "image": "container image; None: the official postgres:15 where available, else the locally built "
             "logbench/postgres:15",
    "output_dir": "raw run records; None: results/pg_destinations/<UTC time> (smoke: a temp dir)",
    "pg_bindir": "PostgreSQL's bin directory (local backend); None: the newest installed",
}


@common.declare(PROFILES, help=HELP)
def define(profile: str = "standard", destinations: list[str] | None = None, scale: int | None = None,
           query_mode: str | None = None, statement_logging: str | None = None, syslog_rate_limit: bool | None = None,
           log_dir_on: str = "disk", sampling_rate: float | None = None, shared_buffers: str | None = None,
           extra_settings: dict | None = None, backend: str = "auto", image: str | None = None,
           versions: list[str] | None = None, pg_bindir: str | None = None, memory_limit_mb: int | str | None = None,
           read_iops: int | str | None = None, design: str | None = None, window_s: int | None = None,
           guard_s: int | None = None, layout: str | None = None, blocks: int | None = None, loads: int | None = None,
           max_loads: int | None = None, **shared: object) -> PgDestinationsStudy:
    """Check every parameter and freeze the study; raises ParameterError/SettingError before anything starts.
    ``shared``: the parameters every study has (common.SHARED: clients, repeats, duration, warmup, seed, ...).
    ``query_mode``, ``shared_buffers``, ``destinations``, ``memory_limit_mb``, ``read_iops``,
    ``syslog_rate_limit``: None takes the profile's, if it has one (rate limiting: off unless the profile's)."""
    d = common.profile_lookup(profile, PROFILES)
    own = PROFILES[profile]
    versions = own.get("versions") if versions is None else versions
    chosen = params.name_list("destinations", own.get("destinations", list(DESTINATIONS)) if destinations is None
                              else destinations, ARMS)
    if not [c for c in chosen if c != BASELINE]:
        # its notebook compares destinations with the baseline; the baseline against itself alone is notebook 00's
        raise ParameterError("destinations", destinations, "a list with at least one destination besides "
                             f"{BASELINE!r}, of: " + ", ".join(repr(x) for x in ARMS if x != BASELINE))
    swept = pg.swept_versions(versions)  # checked once, here: the default destinations depend on it
    if destinations is None and swept is not None:
        chosen = _every_version_has(chosen, swept)
    mechanism = own.get("statement_logging", "min_duration_0") if statement_logging is None else statement_logging
    table = with_statement_logging(ARMS, mechanism)
    query_mode = own.get("query_mode", "prepared") if query_mode is None else query_mode
    engine = pg.pg_fields(backend=backend, image=image, scale=d("scale", scale), query_mode=query_mode,
                          syslog_rate_limit=own.get("syslog_rate_limit", False) if syslog_rate_limit is None
                          else syslog_rate_limit, log_dir_on=log_dir_on,
                          sampling_rate=d("sampling_rate", sampling_rate),
                          shared_buffers=own.get("shared_buffers", "128MB") if shared_buffers is None else shared_buffers,
                          extra_settings=extra_settings, pg_bindir=pg_bindir)
    limit, iops = memlimit.limit_parameters(own.get("memory_limit_mb") if memory_limit_mb is None else memory_limit_mb,
                                            own.get("read_iops") if read_iops is None else read_iops, engine["backend"])
    if limit is not None:
        _check_memory_limit(limit, engine, profile, iops)
    fields = common.without_block_layout(common.study_fields(SPEC, profile, PROFILES, **shared), swept)
    configs = pg.configurations(common.with_baseline(BASELINE, chosen), table, engine["pg_bindir"], engine["base"],
                                engine["query_mode"])
    sb = pg.switchback_design(own, configs, engine["pg_bindir"], design=design, window_s=window_s, guard_s=guard_s,
                              layout=layout, blocks=blocks, loads=loads, max_loads=max_loads,
                              lead_in_s=fields["warmup"], versions=swept, memory_limit_mb=limit)
    study = PgDestinationsStudy(**fields, **engine, memory_limit_mb=limit, read_iops=iops, configurations=configs,
                                switchback=sb)
    return pg.checked(study, swept)


def _every_version_has(chosen: list[str], swept: tuple[str, ...]) -> list[str]:
    """A sweep's default destinations: those every swept major has, the others said and left out (jsonlog before
    15), so ``versions=["13", "17"]`` alone runs; named in ``destinations``, one a version lacks is refused
    (pg.checked)."""
    from ...measure.versions import JSONLOG_FROM, pg_has

    return common.sweep_default(SPEC.name, swept, chosen, lambda c: all(pg_has(v, ARMS[c][1]) for v in swept),
                                f"jsonlog came in PostgreSQL {JSONLOG_FROM}")


def _check_memory_limit(limit_mb: int, engine: dict, profile: str, read_iops: int | None = None) -> None:
    """The IO-bound regime's preconditions, before any server starts."""
    buffers = engine["base"].get("shared_buffers", "128MB")
    m = re.fullmatch(r"(\d+)\s*(kB|MB|GB)", str(buffers))
    buffers_mb = int(m.group(1)) * {"kB": 1 / 1024, "MB": 1, "GB": 1024}[m.group(2)] if m else 128
    if limit_mb < buffers_mb + 64:
        raise ParameterError("memory_limit_mb", limit_mb, f"at least shared_buffers ({buffers}) + 64 MB: the "
                             "server's own memory counts against the limit")
    data_mb = engine["scale"] * BYTES_PER_SCALE / 2**20
    if profile != "smoke" and data_mb < IO_BOUND_FACTOR * limit_mb:
        raise ParameterError("scale", engine["scale"], f"at least {IO_BOUND_FACTOR} x the memory limit in data "
                             f"(scale {engine['scale']} ≈ {data_mb:.0f} MB against {limit_mb} MB), or the regime is "
                             "not IO-bound; raise the scale or lower memory_limit_mb")
    # what the machine allows last: a value wrong anywhere is named as such, also where no cgroup is mounted;
    # the server's data directory is made under the scratch root: its disk is the one whose reads are paced
    memlimit.check_machine(limit_mb, read_iops, paths.scratch_root())


def run(study: pg.PgStudy, *, progress: bool = True) -> common.StudyResult:
    """Start everything the study needs, run its schedule, stop and remove everything again."""
    return common.run_study(study, processed_tables, progress=progress)


def configuration_table(study: pg.PgStudy) -> pd.DataFrame:
    """Each configuration: the settings it changes from the base, and where its records are counted."""
    rows = []
    for c in study.configurations:
        changed = {k: v for k, v in c.settings.items() if study.base.get(k) != v}
        rows.append({"configuration": c.name,
                     "settings (over the base)": ", ".join(f"{k}={v!r}" for k, v in changed.items()) or "(base only)",
                     "sinks": ", ".join(c.destinations) or "–"})
    return pd.DataFrame(rows).set_index("configuration")


design_summary = pg.design_summary
