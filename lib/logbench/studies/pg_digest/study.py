"""Study 10's plan and run: ``define`` checks every parameter and freezes the study (ParameterError before any
server starts); ``run`` starts a server with pgbench's tables, captures its full statement log under the mixed
load and digests it with pgBadger."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import psycopg

from ...servers import capture_pg
from ...base import environment, params, paths
from ...measure.benches import postgres as pg
from ...servers.postgres import LocalPostgres, find_bindir
from ...base.settings import Settings
from ...workloads import pgbadger
from ...workloads.pgbench import Pgbench, parse_output
from .. import common, digesting
from .analysis import ranked_queries
from .spec import (BACKENDS, INDEXED_TABLE, NAME, OWN_ORDER, OWN_STATEMENTS, PROFILES, QUERY_MODE, SPEC,
                   PgDigestResult, PgDigestStudy)


# What each parameter means (unit, allowed values), one line each: notebook 10's generated
# parameters cell and `run STUDY --help` show it; a shared parameter not named here has parameters.HELP's.
HELP = {
    "profile": 'run size: "smoke" (seconds; tests), "standard" (committed), "full" (a longer capture of '
               "more data)",
    "statements": "our own statements, subset of: unindexed_filter, indexed_filter, unindexed_join; None: all",
    "duration": "seconds of capture (pgbench runs as long), whole seconds > 0; None: profile's (standard 20)",
    "clients": "pgbench clients, > 0; None: profile's (standard 2)",
    "scale": "pgbench -s (100,000 accounts each), > 0; None: profile's (standard 10)",
    "executions": "times each of our own statements runs during the capture, > 0; None: profile's (standard 20)",
    "rate": "pgbench -R, transactions per second, > 0; None: profile's (standard 2000)",
    "seed": "seed of our statements' parameters, ≥ 0; None: 20120911",
    "backend": '"local" only: the captured file is read on this machine',
    "pg_bindir": "PostgreSQL's bin directory; None: the newest installed",
    "output_dir": "raw record (captured log, pgBadger's JSON and HTML); None: results/pg_digest/<UTC time> "
                  "(smoke: a temp dir)",
    "processed_dir": "the digest table; None: <output_dir>/processed (publish: data/processed)",
    "publish": "True only for the committed reference run: its tidy tables go to data/processed",
}


@common.declare(PROFILES, help=HELP)
def define(profile: str = "standard", statements: list[str] | None = None, duration: int | None = None,
           clients: int | None = None, scale: int | None = None, executions: int | None = None,
           rate: int | None = None, seed: int | None = None, backend: str = "local", pg_bindir: str | None = None,
           output_dir: str | Path | None = None, processed_dir: str | Path | None = None,
           publish: bool = False) -> PgDigestStudy:
    """Check every parameter and freeze the study; ParameterError before anything starts."""
    d = common.profile_lookup(profile, PROFILES)
    params.choice("backend", backend, BACKENDS)
    publish = params.boolean("publish", publish)
    chosen = params.name_list("statements", OWN_ORDER if statements is None else statements, OWN_STATEMENTS)
    pgbadger.tool_path()  # refused now, not after the load, when pgBadger is missing
    return PgDigestStudy(
        name=NAME, profile=profile, duration=params.positive_int("duration", d("duration", duration)),
        clients=params.positive_int("clients", d("clients", clients)),
        scale=params.positive_int("scale", d("scale", scale)),
        executions=params.positive_int("executions", d("executions", executions)),
        rate=params.positive_int("rate", d("rate", rate)), statements=tuple(chosen),
        seed=params.non_negative_int("seed", SPEC.seed if seed is None else seed),
        pg_bindir=str(find_bindir(pg_bindir)),
        output_dir=(out := common.output_path(NAME, profile, output_dir)),
        processed_dir=common.processed_path(profile, processed_dir, publish=publish, output_dir=out), publish=publish)


def _value(study: PgDigestStudy, rng: np.random.Generator, name: str, i: int) -> int:
    """The filters look for a balance no select-only account has (it stays 0); the join, for a teller."""
    if name == "unindexed_join":
        return int(rng.integers(1, 10 * study.scale + 1))
    return -1 - i


def _own_load(study: PgDigestStudy, conninfo: dict) -> dict[str, int]:
    """Each chosen statement ``executions`` times, interleaved, in a seeded order of parameters."""
    with psycopg.connect(**conninfo, autocommit=True) as conn:
        return digesting.own_load(study, lambda name, value: conn.execute(OWN_STATEMENTS[name][0], (value,)).fetchall(),
                                  partial(_value, study))


def _capture_bytes(files: list[capture_pg.LogFile], into: Path) -> None:
    """The window's bytes of each captured file, one after the other."""
    with into.open("wb") as out:
        for f in files:
            with open(f.path, "rb") as src:
                src.seek(f.start)
                out.write(src.read(f.end - f.start))


def _prepared(study: PgDigestStudy, stack: contextlib.ExitStack) -> tuple[LocalPostgres, Pgbench, float]:
    """A private server logging into a scratch directory, pgbench's tables and their indexed copy; and the
    seconds pgbench's initialisation took."""
    work = Path(tempfile.mkdtemp(prefix="logbench-pg-digest-", dir=paths.scratch_root()))
    stack.callback(shutil.rmtree, work, ignore_errors=True)
    work.chmod(0o755)  # the server's user writes its log there
    server = stack.enter_context(LocalPostgres(Settings.of("postgresql", pg.BASE), log_dir=work / "log",
                                               bindir=study.pg_bindir))
    bench = Pgbench(server.binary("pgbench"), server.conninfo)
    init_s = bench.initialise(study.scale)
    with server.connect() as c:
        c.execute(f"CREATE TABLE {INDEXED_TABLE} AS SELECT * FROM pgbench_accounts")
        c.execute(f"CREATE INDEX ON {INDEXED_TABLE} (abalance)")
        c.execute(f"VACUUM ANALYZE {INDEXED_TABLE}")
    return server, bench, init_s


def _mixed_load(study: PgDigestStudy, server: LocalPostgres, bench: Pgbench, box: dict) -> Callable[[float], None]:
    """The capture's "sleep": while every statement is logged, pgbench and our own statements run (what each
    reported, into ``box``)."""

    def load(seconds: float) -> None:
        running = subprocess.Popen([*bench.command(study.clients, max(1, int(seconds)), QUERY_MODE), "-R", str(study.rate)], env=bench.env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            box["own"] = _own_load(study, server.conninfo)
        finally:
            stdout, stderr = running.communicate(timeout=seconds + 120)
        if running.returncode != 0:
            raise RuntimeError(f"pgbench failed: {stderr[-2000:]}")
        box["pgbench"] = parse_output(stdout)

    return load


def run(study: PgDigestStudy, *, progress: bool = True) -> PgDigestResult:
    """Start a server with pgbench's tables, capture its full statement log under the mixed load, digest it."""
    out = Path(study.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        server, bench, init_s = _prepared(study, stack)
        box: dict = {}
        if progress:
            print(f"capturing {study.duration} s of pgbench -S ({study.clients} clients, {study.rate} tps, scale {study.scale}) and "
                  f"{study.executions} x {len(study.statements)} statements of our own", flush=True)
        cap = digesting.checked(capture_pg.capture, lambda: psycopg.connect(**server.conninfo, autocommit=True),
                                study.duration, _mixed_load(study, server, bench, box))
        captured = out / f"captured.{cap.format}"
        _capture_bytes(cap.capture_files(), captured)
        env = environment.collect(
            server_version=server.version(),
            tools={"pgbadger": pgbadger.tool_version(), "pgbench": bench.version()},
            extra={"pgbench_init_s": init_s, "backend": "local", "capture_s": cap.seconds, "format": cap.format,
                   "prefix": cap.prefix, "captured_bytes": captured.stat().st_size, "own_executed": box["own"]})
    if progress:
        print(f"digesting {env['captured_bytes'] / 1e6:.1f} MB with pgBadger", flush=True)
    html = out / "pgbadger.html"
    report = pgbadger.run([captured], env["format"], prefix=env["prefix"], html=html)
    (out / "pgbadger.json").write_text(pd.Series(report).to_json())
    table = ranked_queries(report)
    result = PgDigestResult(study, table, env, captured, report=report, html=html, pgbench=box["pgbench"],
                            own=box["own"])
    digesting.keep(study, env, table)
    return result
