"""Study 08's plan and run: ``define`` checks every parameter and freezes the study, each configuration with the
sessions it holds open (ParameterError before any server starts), ``run`` executes it on the shared PostgreSQL bench,
which holds them open around each run; the plan's tables for the notebook (``design_summary``, ``session_table``)."""

from __future__ import annotations

import pandas as pd

from ...base import params
from ...measure.benches import postgres as pg
from ...base.errors import ParameterError
from ...workloads.sessions import MARGIN
from .. import common
from .analysis import processed_tables
from .spec import KINDS, PROFILES, SPEC, IdleConnectionsStudy, held_sessions, name_of, parse


# What each parameter means (unit, allowed values), one line each: notebook 08's generated
# parameters cell and `run STUDY --help` show it; a shared parameter not named here has parameters.HELP's.
HELP = {
    "profile": 'run size: "smoke" (seconds; tests), "standard" (~9.5 min; committed), "full" (100 to 2000, '
               '30 s runs), "versions" (~17 min; committed: the standard runs on PostgreSQL 13, 15 and 17 in '
               "containers, its own processed files)",
    "max_connections": "max_connections values, each ≥ the largest clients level + 3; None: the profile's "
                       "(standard: [100, 300, 600])",
    "kinds": "subset of: none (test 1), sleep (pg_sleep sessions, tests 2/3), idle (connected, no query); None: all",
    "sessions": "sessions per sleep/idle run, > 0 and ≤ the smallest max_connections - clients - 2; None: fill "
                "every free slot (the post)",
    "duration": "seconds measured per run (pgbench -T), > 0; None: the profile's",
    "scale": "pgbench scale factor; None: the profile's (standard: 10)",
    "query_mode": 'pgbench -M: "simple" or "prepared"',
    "shared_buffers": "PostgreSQL shared_buffers",
    "versions": "PostgreSQL majors run side by side in containers, one interleaved schedule, each its own "
                "baseline and A/A: any of \"13\", \"15\", \"17\" (docker/servers.tsv); None: the profile's "
                '(versions: ["13", "15", "17"]), else one server',
    "backend": "\"local\" (the machine's PostgreSQL 15), \"container\" (testcontainers) or \"auto\" (container "
               "when a Docker engine answers); None: local, or container with versions (a sweep runs in "
               "containers only)",
    "output_dir": "raw run records; None: results/pg_idle_connections/<UTC time> (smoke: a temp dir)",
    "processed_dir": "tidy summary; None: data/processed (smoke: not written)",
    "idle_state": "CPU idle state while measuring: \"hold\" or \"free\"; None: profile's (\"hold\")",
    "placement": "CPU placement: \"none\" or \"split\"; None: profile's (\"none\")",
    "sampling_rate": "fraction of transactions pgbench logs for latency percentiles, (0, 1]; None: none logged",
    "pg_bindir": "PostgreSQL's bin directory (local backend); None: the newest installed",
}


@common.declare(PROFILES, help=HELP)
def define(profile: str = "standard", max_connections: list[int] | None = None, kinds: list[str] | None = None,
           sessions: int | None = None, scale: int | None = None, query_mode: str = "prepared",
           sampling_rate: float | None = None, shared_buffers: str = "128MB", pg_bindir: str | None = None,
           versions: list[str] | None = None, backend: str | None = None, **shared: object) -> IdleConnectionsStudy:
    """Check every parameter and freeze the study (ParameterError before any server starts). ``versions``: a
    list of PostgreSQL majors (docker/servers.tsv) run side by side in containers (None: the profile's, if it
    has them); ``backend``: None is 'local' without versions and 'container' with them."""
    d = common.profile_lookup(profile, PROFILES)
    versions = PROFILES[profile].get("versions") if versions is None else versions
    levels = tuple(sorted(params.int_list("max_connections", d("max_connections", max_connections))))
    chosen = params.name_list("kinds", list(KINDS) if kinds is None else kinds, KINDS)
    fields = common.study_fields(SPEC, profile, PROFILES, whole_seconds=True, **shared)
    most = max(fields["clients"])
    low = [m for m in levels if m < most + MARGIN + 1]
    if low:
        raise ParameterError("max_connections", low, f"each ≥ {most + MARGIN + 1}: the largest clients "
                             f"level ({most}) plus {MARGIN} spare slots plus at least one session")
    n = None if sessions is None else params.positive_int("sessions", sessions)
    if n is not None and n > levels[0] - most - MARGIN:
        raise ParameterError("sessions", n, f"at most {levels[0] - most - MARGIN}: max_connections "
                             f"{levels[0]} minus {most} working clients minus {MARGIN} spare slots "
                             "(None: fill every free slot)")
    if backend is None:
        backend = "local" if versions is None else "container"
    engine = pg.pg_fields(backend=backend, image=None, scale=d("scale", scale), query_mode=query_mode,
                          syslog_rate_limit=False, log_dir_on="disk", sampling_rate=d("sampling_rate", sampling_rate),
                          shared_buffers=shared_buffers, extra_settings=None, pg_bindir=pg_bindir)
    # The baseline (the smallest max_connections, no sessions) is always measured: every ratio needs it.
    names = [name_of(levels[0], "none")] + [name_of(m, k) for m in levels for k in chosen
                                             if (m, k) != (levels[0], "none")]
    table = {nm: ({"max_connections": parse(nm)[0]}, ()) for nm in names}
    # every configuration declares its sessions (kind "none": none held, their evidence still recorded); the load
    # is every PostgreSQL study's default, pgbench -S
    study = IdleConnectionsStudy(
        **fields, **engine, max_connections=levels, kinds=chosen, sessions=n,
        configurations=pg.configurations(tuple(names), table, engine["pg_bindir"], engine["base"], query_mode,
                                         sessions={nm: held_sessions(nm, n) for nm in names}))
    return pg.checked(study, pg.swept_versions(versions))


def run(study: IdleConnectionsStudy, *, progress: bool = True) -> common.StudyResult:
    return common.run_study(study, processed_tables, progress=progress)


def design_summary(study: IdleConnectionsStudy) -> dict[str, object]:
    return {**pg.design_summary(study), "max_connections": list(study.max_connections), "kinds": list(study.kinds),
            "sessions": "fill" if study.sessions is None else study.sessions}


def session_table(study: IdleConnectionsStudy) -> pd.DataFrame:
    """Sessions each configuration holds open at each clients level."""
    return pd.DataFrame([{"configuration": c.name, "clients": k, "kind": study.sessions_of(c.name, k)[0],
                          "sessions": study.sessions_of(c.name, k)[1]}
                         for c in study.configurations for k in study.clients]).set_index(["configuration", "clients"])
