"""The MariaDB/MySQL study's plan and run: ``define`` checks every parameter and freezes the study, nothing
connected; ``run`` connects, refuses a server it must not touch before changing anything, and measures."""

from __future__ import annotations

import contextlib
import datetime as dt
import subprocess
from pathlib import Path

from ...base import environment, params, progress as channel
from ...measure.benches.mariadb import statement_records
from ...servers.capturing import Refused
from ...base.errors import ParameterError, ToolError
from ...servers import own_mariadb as own
from ...base.settings import Configuration, Settings
from ...workloads.sysbench import sysbench_binary
from .. import common, on_user_server
from .analysis import processed_tables
from .spec import ARMS, BASELINE, BUILTIN_DB, BUILTIN_TEST, DESTINATIONS, OFF, PROFILES, SPEC, OwnMariaDBStudy

# Options of sysbench's that the study sets itself (a user's own would point the load elsewhere or hide its numbers).
OWN_OPTIONS = ("--mysql-", "--db-", "--threads", "--time", "--events", "--report-interval", "--histogram",
               "--rand-seed", "--pgsql-")


def arm_settings(arm: str) -> dict[str, str]:
    return {**OFF, **ARMS[arm]}


def load_text(study: OwnMariaDBStudy) -> str:
    """How much load the study puts on the server, in a sentence (the confirmation's)."""
    where = (f"database {study.database!r} (your script {Path(study.script).name})" if not study.builtin else
             f"a database it creates and drops, {BUILTIN_DB!r} (sysbench {BUILTIN_TEST}, {study.table_size} rows)")
    return (f"{len(study.plan())} sysbench runs of {study.warmup:g} + {study.duration:g} s at "
            f"{'/'.join(map(str, study.clients))} thread(s), about {study.load_seconds / 60:.1f} min of load"
            f"{' (more while an arm is wide)' if study.adaptive else ''}, in {where}, switching the server's logging "
            f"by SET GLOBAL {len(study.planned_configurations)} ways and restoring it after")


def check_script(binary: Path, script: str) -> None:
    """sysbench's own verdict on a Lua script: its ``help`` command loads and runs the script's top level (and exits
    1 for a script without a help of its own, which is no fault: only a FATAL is)."""
    if not Path(script).is_file():
        raise ParameterError("script", script, "a sysbench Lua script file that exists")
    r = subprocess.run([str(binary), str(script), "help"], capture_output=True, text=True, timeout=60)
    if "FATAL" in r.stdout + r.stderr:
        raise ParameterError("script", script, "a Lua script sysbench accepts; sysbench said:\n"
                             + (r.stderr + r.stdout).strip()[-1500:])


# What each parameter means (unit, allowed values), one line each: notebook 13's generated
# parameters cell and `run STUDY --help` show it; a shared parameter not named here has parameters.HELP's.
HELP = {**on_user_server.HELP,
    "profile": 'run size: "smoke" (seconds), "standard" (~10 min of load on your server), "full"',
    "server": "key-value words: host, port, socket, user, defaults_file (an option file); no password (option "
              "file or MYSQL_PWD)",
    "database": "your database, where your script runs; None: the built-in load in a database the study creates "
                "and drops",
    "script": "your sysbench Lua script; None: the built-in oltp_point_select (with database None)",
    "script_options": "your script's own --name options with their values (not the connection, threads, time, seed)",
    "arms": "subset of: none, slow_file, slow_table, general_file; None: the profile's (standard: all)",
    "table_size": "the built-in load's rows, > 0; None: the profile's (standard: 100000)",
    "max_active": "refuse when more other sessions than this are active, ≥ 0",
    "sysbench": "the sysbench binary; None: the one on PATH",
    "clients": "sysbench --threads values, each > 0; None: the profile's",
    "warmup": "seconds of unrecorded sysbench before each run, ≥ 0; None: the profile's",
    "output_dir": "raw run records; None: results/own_mariadb/<UTC time> (smoke: a temp dir)",
}


@common.declare(PROFILES, help=HELP, without=("publish",))
def define(profile: str = "standard", server: str = "", database: str | None = None, script: str | None = None,
           script_options: list[str] | None = None, arms: list[str] | None = None, table_size: int | None = None,
           max_active: int = 0, confirm: bool = False, sysbench: str | None = None,
           **shared: object) -> OwnMariaDBStudy:
    """Check every parameter and freeze the study (ParameterError before anything connects).

    ``server``: host/port or socket, user, and an option file (``defaults_file=``), as the capture tool takes them;
    the password in that file or MYSQL_PWD, never in the string. ``database`` and ``script`` (a sysbench Lua
    script, with ``script_options``): the user's load, both or neither (neither: sysbench's oltp_point_select in a
    database the study creates and drops). ``confirm``: True, or a yes at the terminal, before it runs."""
    if shared.pop("publish", False):
        raise ParameterError("publish", True, "False: data/processed holds the suite's committed runs on its own "
                             "servers; a run on your server stays in its output_dir")
    d = common.profile_lookup(profile, PROFILES)
    srv = own.Server(server)
    chosen = params.name_list("arms", d("arms", arms), ARMS)
    max_active = params.non_negative_int("max_active", max_active)
    confirm = params.boolean("confirm", confirm)
    try:
        binary = sysbench_binary(sysbench)
    except ToolError as e:
        raise ParameterError("sysbench", sysbench, str(e)) from None
    if (database is None) != (script is None):
        raise ParameterError("database" if database is None else "script", database if database is None else script,
                             "both the database and the sysbench script of your own load, or neither (the built-in "
                             "load in a database the study creates and drops)")
    options = tuple(script_options or ())
    bad = [o for o in options if not isinstance(o, str) or not o.startswith("--") or o.startswith(OWN_OPTIONS)]
    if bad:
        raise ParameterError("script_options", bad, "your script's own --name=value options (the connection, "
                             "threads, time and seed are the study's)")
    if database is not None:
        if not isinstance(database, str) or not database or database == BUILTIN_DB:
            raise ParameterError("database", database, f"the name of your database (not {BUILTIN_DB!r}, the built-in "
                                 "load's)")
        check_script(binary, script)
        size = 0
    else:
        size = params.positive_int("table_size", d("table_size", table_size))
    fields = common.study_fields(SPEC, profile, PROFILES, whole_seconds=True, **shared)
    configs = []
    for a in common.with_baseline(BASELINE, chosen):
        settings = Settings.of("mariadb", arm_settings(a))
        configs.append(Configuration(a, settings, DESTINATIONS[a], statement_records(settings)))
    study = OwnMariaDBStudy(**fields, backend="own", configurations=tuple(configs), server=srv,
                            database=database or BUILTIN_DB, builtin=database is None,
                            script=str(Path(script).resolve()) if script else BUILTIN_TEST, script_options=options,
                            table_size=size, max_active=max_active, sysbench=str(binary))
    on_user_server.confirmed(confirm, load_text(study))
    return study


def start(study: OwnMariaDBStudy, stack: contextlib.ExitStack) -> tuple[object, dict]:
    """Connect, refuse what must not be touched (Refused: nothing changed), then the switcher (restoring on the way
    out), the built-in database if any, the study's own log files, and the environment record (host, port or
    socket, user: never a password)."""
    from ...measure.benches.own_mariadb import OwnMariaDBBench

    reporter = channel.Reporter(study.name)
    conn = study.server.connect()
    try:
        reasons, grants = own.refusals(conn, max_active=study.max_active,
                                       create_database=BUILTIN_DB if study.builtin else None,
                                       database=None if study.builtin else study.database,
                                       table_output=any("slow_table" in c.destinations for c in study.configurations))
        if reasons:
            raise Refused(reasons, grants)
        kind, version = own.flavor(conn)
        where = study.server.resolved(conn)
        pid = own.on_this_host(conn)
        conn_args, password = study.server.sysbench_args(conn, study.database)
        present = own.query(conn, "SHOW GLOBAL VARIABLES WHERE Variable_name IN ("
                            + ",".join(["%s"] * (len(own.EVERY_STATEMENT) + len(own.LOG_FILES))) + ")",
                            [*own.EVERY_STATEMENT, *own.LOG_FILES])
    finally:
        conn.close()
    current = {k.lower(): v for k, v in present}
    switcher = stack.enter_context(own.Switcher(study.server, say=reporter.say))
    files = own.study_files(current, dt.datetime.now(dt.timezone.utc))
    load = study.load
    argv = [study.sysbench, *load.script_args(), *conn_args, *load.options, f"--db-ps-mode={load.ps_mode}"]
    if study.builtin:
        stack.enter_context(own.own_database(switcher, BUILTIN_DB, say=reporter.say))
        argv[3:3] = ["--tables=1", f"--table-size={study.table_size}"]
        r = subprocess.run([*argv, "prepare"], capture_output=True, text=True, timeout=3600)
        if r.returncode != 0:
            said = (r.stderr + r.stdout).replace(password, "(not shown)") if password else r.stderr + r.stdout
            raise ToolError("sysbench prepare failed:\n" + said[-2000:])
    # the study's own files and every statement reaching the slow log, once, before the baseline; restored last
    switcher.apply({**files, **{k: v for k, v in own.EVERY_STATEMENT.items() if k in current}})
    switcher.apply(study.configuration(BASELINE).settings)
    log = own.SlowLog(switcher, files, local=pid is not None)
    reporter.say("records counted: mysql.slow_log through SQL (TABLE); files "
                 + (f"here ({', '.join(map(str, log.paths.values()))})" if log.how else f"NOT: {log.why_not}"))
    bench = OwnMariaDBBench(study, switcher, argv, password, log, version, pid)
    env = environment.collect(
        server_version=version, tools={"sysbench": subprocess.run([study.sysbench, "--version"], capture_output=True,
                                                                  text=True).stdout.strip()},
        extra={"backend": "own", "flavor": kind, "server": where, "server_on_this_host": pid is not None,
               "log_read": log.how or f"not counted: {log.why_not}", "log_files": files})
    return bench, env


def run(study: OwnMariaDBStudy, *, progress: bool = True) -> common.StudyResult:
    return common.run_study(study, processed_tables, start=start, progress=progress)
