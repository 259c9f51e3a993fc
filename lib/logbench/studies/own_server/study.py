"""Study 12's plan and run: ``define`` checks every parameter (the scripts by pgbench itself) and freezes the study,
nothing connected; ``run`` connects, refuses a server it must not touch before changing anything, and measures."""

from __future__ import annotations

import contextlib
from pathlib import Path

from ...base import environment, params, progress as channel
from ...servers.capture_pg import Refused
from ...base.errors import ParameterError
from ...servers import own_postgres as own
from ...servers import postgres as pgserver
from ...base.settings import Configuration, RecordShape, Settings
from ...workloads import user_scripts
from ...workloads.pgbench import Pgbench
from .. import common, on_user_server
from .analysis import processed_tables
from .spec import (APP, ARMS, BASELINE, BUILTIN_DB, COUNTED_ONLY, FILE_DESTINATIONS, OFF, PROFILES, QUERY_MODES, SPEC,
                   OwnServerStudy)

# The built-in load: pgbench's select-only transaction, in a script so that every load runs the same way.
BUILTIN_SCRIPT = "\\set aid random(1, 100000 * {scale})\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n"
# A stderr file says which session wrote a line only through the prefix: %a names the load's application.
STDERR_PREFIX = "%m [%p] app=%a "


def arm_settings(arm: str, destination: str, slow_ms: int, sample_rate: float) -> dict[str, str]:
    values = {**OFF, **{k: v.format(slow_ms=slow_ms) for k, v in ARMS[arm].items()},
              "log_destination": destination, "log_statement_sample_rate": f"{sample_rate:g}"}
    if destination == "stderr":
        values["log_line_prefix"] = STDERR_PREFIX
    return values


def records_of(arm: str, query_mode: str, statements_per_connection: int) -> tuple[RecordShape, ...]:
    """The records an arm's statements leave, told from other sessions' by the load's application name.

    With every statement logged (PostgreSQL 15's shapes, as study 02 counts them): ``log_min_duration_statement =
    0`` one "duration: … statement:" line per statement (simple), a bind and an execute line per statement and a
    parse line per statement and connection (prepared); ``log_statement = all`` one "statement:" (simple) or
    "execute …:" (prepared) line per statement. A threshold or a sample logs a subset: counted, none due."""
    app = APP.encode()
    if arm == BASELINE:
        return ()
    if arm == "statement_all":
        simple = query_mode == "simple"
        return (RecordShape("statement", (app, b"statement: "), absent=(b"duration: ",), per_statement=float(simple)),
                RecordShape("execute", (app, b"execute "), absent=(b"duration: ",), per_statement=float(not simple)))
    if arm in COUNTED_ONLY:
        return (RecordShape("duration+statement (subset)", (app, b"duration: ")),)
    if query_mode == "simple":
        return (RecordShape("duration+statement", (app, b"duration: "), per_statement=1),)
    return (RecordShape("duration+statement", (app, b"duration: "), per_statement=2,
                        per_connection=statements_per_connection),)


def load_text(study: OwnServerStudy) -> str:
    """How much load the study puts on the server, in a sentence (the confirmation's)."""
    runs = len(study.plan())
    minutes = study.load_seconds / 60
    where = (f"database {study.database!r} (your scripts: "
             + ", ".join(f"{Path(s.path).name}@{s.weight}" for s in study.scripts) + ")"
             if not study.builtin else f"a database it creates and drops, {BUILTIN_DB!r} (pgbench -i -s {study.scale})")
    return (f"{runs} pgbench runs of {study.warmup:g} + {study.duration:g} s at {'/'.join(map(str, study.clients))} "
            f"client(s), about {minutes:.1f} min of load{' (more while an arm is wide)' if study.adaptive else ''}, in "
            f"{where}, switching the server's logging by ALTER SYSTEM + reload {len(study.planned_configurations)} "
            "ways and restoring it after")


# What each parameter means (unit, allowed values), one line each: notebook 12's generated
# parameters cell and `run STUDY --help` show it; a shared parameter not named here has parameters.HELP's.
HELP = {**on_user_server.HELP,
    "profile": 'run size: "smoke" (seconds), "standard" (~12 min of load on your server), "full"',
    "server": 'libpq connection string WITHOUT a password (PGPASSWORD or ~/.pgpass give it); "": the PG* variables',
    "database": "your database, where your scripts run; None: the built-in load in a database the study creates "
                "and drops",
    "scripts": 'your pgbench scripts, "file" or "file@weight"; None: the built-in load (with database None)',
    "query_mode": 'pgbench -M: "simple" or "prepared"',
    "arms": "subset of: none, min_duration_0, statement_all, sampled, slow; None: the profile's (standard: all)",
    "destination": 'log_destination while measuring: "stderr", "csvlog" or "jsonlog" (15+)',
    "slow_ms": "the slow arm's log_min_duration_statement, ms, > 0",
    "sample_rate": "the sampled arm's log_statement_sample_rate, 0 to 1",
    "scale": "the built-in load's pgbench scale, > 0; None: the profile's (standard: 10)",
    "max_active": "refuse when more other client sessions than this are active, ≥ 0",
    "pg_bindir": "where pgbench is; None: the newest installed PostgreSQL's",
    "output_dir": "raw run records; None: results/own_server/<UTC time> (smoke: a temp dir)",
}


@common.declare(PROFILES, help=HELP, without=("publish",))
def define(profile: str = "standard", server: str = "", database: str | None = None,
           scripts: list[str] | None = None, query_mode: str = "simple", arms: list[str] | None = None,
           destination: str = "csvlog", slow_ms: int = 100, sample_rate: float = 0.1, scale: int | None = None,
           max_active: int = 0, confirm: bool = False, pg_bindir: str | None = None,
           **shared: object) -> OwnServerStudy:
    """Check every parameter and freeze the study (ParameterError before anything connects).

    ``server``: a libpq connection string without a password (PGPASSWORD or ~/.pgpass give it); ``database``
    and ``scripts`` (``file`` or ``file@weight``): the user's load, both or neither (neither: the built-in
    select-only load in a database the study creates and drops); ``confirm``: the study puts load on the server
    and switches its logging: True, or an answer at the terminal, before it runs."""
    if shared.pop("publish", False):
        raise ParameterError("publish", True, "False: data/processed holds the suite's committed runs on its own "
                             "servers; a run on your server stays in its output_dir")
    d = common.profile_lookup(profile, PROFILES)
    dsn = own.Dsn(server)
    params.choice("query_mode", query_mode, QUERY_MODES)
    params.choice("destination", destination, FILE_DESTINATIONS)
    chosen = params.name_list("arms", d("arms", arms), ARMS)
    slow_ms = params.positive_int("slow_ms", slow_ms)
    sample_rate = params.fraction("sample_rate", sample_rate)
    max_active = params.non_negative_int("max_active", max_active)
    confirm = params.boolean("confirm", confirm)
    bindir = pgserver.find_bindir(pg_bindir)
    if (database is None) != (scripts is None):
        raise ParameterError("database" if database is None else "scripts", database if database is None else scripts,
                             "both the database and the scripts of your own load, or neither (the built-in load in a "
                             "database the study creates and drops)")
    if database is not None:
        if not isinstance(database, str) or not database or database == BUILTIN_DB:
            raise ParameterError("database", database, f"the name of your database (not {BUILTIN_DB!r}, the built-in "
                                 "load's)")
        if not isinstance(scripts, (list, tuple)) or not scripts:
            raise ParameterError("scripts", scripts, "a non-empty list of pgbench script files ('file' or "
                                 "'file@weight')")
        parsed = tuple(user_scripts.parse(s) for s in scripts)
        user_scripts.check(bindir / "pgbench", parsed)
        n_scale, per_conn = 0, sum(s.statements for s in parsed)
    else:
        parsed, n_scale, per_conn = (), params.positive_int("scale", d("scale", scale)), 1
    fields = common.study_fields(SPEC, profile, PROFILES, whole_seconds=True, **shared)
    configs = tuple(Configuration(a, Settings.of("postgresql", arm_settings(a, destination, slow_ms, sample_rate)),
                                  () if a == BASELINE else (destination,), records_of(a, query_mode, per_conn))
                    for a in common.with_baseline(BASELINE, chosen))
    study = OwnServerStudy(**fields, backend="own", configurations=configs, server=dsn,
                           database=database or BUILTIN_DB, builtin=database is None, scripts=parsed,
                           query_mode=query_mode, scale=n_scale, destination=destination, max_active=max_active,
                           pg_bindir=str(bindir), slow_ms=slow_ms, sample_rate=sample_rate)
    on_user_server.confirmed(confirm, load_text(study))
    return study


def _pgbench_target(conn_params: dict[str, str], database: str) -> dict[str, object]:
    return {"host": conn_params["host"], "port": conn_params["port"], "user": conn_params["user"], "dbname": database}


def start(study: OwnServerStudy, stack: contextlib.ExitStack) -> tuple[object, dict]:
    """Connect, refuse what must not be touched (Refused: nothing changed), then the switcher (restoring on the way
    out), the built-in database if any, the log reader and the environment record (host, port, database, user:
    never a password)."""
    from ...measure.benches.own_postgres import OwnPgBench

    reporter = channel.Reporter(study.name)
    settings = {k: v for c in study.configurations for k, v in c.settings.items()}
    with study.server.connect() as conn:
        reasons, grants = own.refusals(conn, settings=settings, destination=study.destination,
                                       max_active=study.max_active,
                                       create_database=BUILTIN_DB if study.builtin else None)
        if not study.builtin and not reasons and not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                                                                  [study.database]).fetchone():
            reasons.append(f"database {study.database!r} does not exist on this server")
        if reasons:
            raise Refused(reasons, grants)
        where = study.server.parameters(conn)
        version = conn.execute("SHOW server_version").fetchone()[0]
        postmaster = own.on_this_host(conn)
    switcher = stack.enter_context(own.Switcher(study.server, say=reporter.say))
    scripts = study.scripts
    if study.builtin:
        stack.enter_context(own.own_database(study.server, BUILTIN_DB, say=reporter.say))
        init = Pgbench(Path(study.pg_bindir) / "pgbench", _pgbench_target(where, BUILTIN_DB), env=own.Dsn.child_env())
        init.initialise(study.scale)
        out = Path(study.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        builtin = out / "select_only.sql"
        builtin.write_text(BUILTIN_SCRIPT.format(scale=study.scale))
        scripts = (user_scripts.Script(str(builtin), 1, 1),)
    pgb = Pgbench(Path(study.pg_bindir) / "pgbench", _pgbench_target(where, study.database), scripts=tuple(
        (s.path, s.weight) for s in scripts), env={**own.Dsn.child_env(), "PGAPPNAME": own.APP})
    # the destination's file exists once the baseline's settings are in effect: the log reader is chosen then
    switcher.apply(study.configuration(BASELINE).settings)
    log = own.ServerLog(switcher, study.destination, local=postmaster is not None)
    reporter.say("records counted " + {"file": "from the server's log file here",
                                       "sql": "through SQL (pg_read_binary_file)"}.get(log.how, f"NOT: {log.why_not}"))
    env = environment.collect(
        server_version=version, tools={"pgbench": pgb.version()},
        extra={"backend": "own", "server": where, "server_on_this_host": postmaster is not None,
               "log_read": log.how or f"not counted: {log.why_not}", "destination": study.destination})
    return OwnPgBench(study, switcher, pgb, scripts, log, version, postmaster), env


def run(study: OwnServerStudy, *, progress: bool = True) -> common.StudyResult:
    return common.run_study(study, processed_tables, start=start, progress=progress)
