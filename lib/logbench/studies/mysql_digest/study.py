"""Study 09's plan and run: ``define`` checks every parameter and freezes the study (ParameterError before any
server starts); ``run`` starts a server with the data, captures its full slow log under the mixed load and
digests it."""

from __future__ import annotations

import contextlib
import shutil
from functools import partial
from pathlib import Path

import numpy as np
import pymysql

from ...servers import capture
from ...base import environment, params
from ...measure.benches import mariadb as mb
from .. import common, digesting
from . import digest
from .analysis import label
from .spec import (BACKENDS, INDEXED_TABLE, LOAD, NAME, OWN_ORDER, OWN_STATEMENTS, PROFILES, SPEC, DigestResult,
                   DigestStudy)


# What each parameter means (unit, allowed values), one line each: notebook 09's generated
# parameters cell and `run STUDY --help` show it; a shared parameter not named here has parameters.HELP's.
HELP = {
    "profile": 'run size: "smoke" (seconds; tests), "standard" (~2.5 min; committed), "full" (a longer '
               "capture of more data)",
    "statements": "our own statements, subset of: unindexed_filter, indexed_filter, const_join, indexed_join, "
                  "unindexed_join, group_by; None: all",
    "duration": "seconds of capture (sysbench runs as long), whole seconds > 0; None: profile's (standard 20)",
    "clients": "sysbench --threads of the indexed workload, > 0; None: profile's (standard 2)",
    "tables": "sysbench --tables, > 0; None: profile's (standard 4)",
    "table_size": "rows per table, > 0; None: profile's (standard 100000)",
    "executions": "times each of our own statements runs during the capture, > 0; None: profile's (standard 20)",
    "seed": "seed of sysbench and of our statements' parameters, ≥ 0; None: 20120911 (the ebook's log dates)",
    "backend": '"local" only: the captured file is read on this machine',
    "mariadbd": "server binary; None: mariadbd on PATH or /usr/sbin",
    "output_dir": "raw record (captured log, pt-query-digest's JSON); None: results/mysql_digest/<UTC time> "
                  "(smoke: a temp dir)",
    "processed_dir": "the digest table; None: data/processed (smoke: not written)",
}


@common.declare(PROFILES, help=HELP)
def define(profile: str = "standard", statements: list[str] | None = None, duration: int | None = None,
           clients: int | None = None, tables: int | None = None, table_size: int | None = None,
           executions: int | None = None, seed: int | None = None, backend: str = "local",
           mariadbd: str | None = None, output_dir: str | Path | None = None,
           processed_dir: str | Path | None = None, publish: bool = False) -> DigestStudy:
    """Check every parameter and freeze the study; ParameterError before anything starts."""
    d = common.profile_lookup(profile, PROFILES)
    params.choice("backend", backend, BACKENDS)
    publish = params.boolean("publish", publish)
    chosen = params.name_list("statements", OWN_ORDER if statements is None else statements, OWN_STATEMENTS)
    engine = mb.mariadb_fields(backend="local", image=None, mariadbd=mariadbd, tables=d("tables", tables),
                               table_size=d("table_size", table_size))
    digest.tool_path()  # refused now, not after the load, when pt-query-digest is missing
    return DigestStudy(
        name=NAME, profile=profile, duration=params.positive_int("duration", d("duration", duration)),
        clients=params.positive_int("clients", d("clients", clients)), tables=engine["tables"],
        table_size=engine["table_size"], executions=params.positive_int("executions", d("executions", executions)),
        statements=tuple(chosen), seed=params.non_negative_int("seed", SPEC.seed if seed is None else seed),
        mariadbd=engine["mariadbd"], flavor=engine["flavor"], base=engine["base"],
        output_dir=(out := common.output_path(NAME, profile, output_dir)),
        processed_dir=common.processed_path(profile, processed_dir, publish=publish, output_dir=out), publish=publish)


def _values(study: DigestStudy, rng: np.random.Generator, name: str, i: int) -> object:
    """The statement's parameter for execution ``i``: a value that matches nothing for the filters, an id or
    k that exists for the joins."""
    if name in ("unindexed_filter", "indexed_filter"):
        return f"no-match-{i}"
    if name == "group_by":
        return int(study.table_size)
    return int(rng.integers(1, study.table_size + 1))


def _own_load(study: DigestStudy, server) -> dict[str, int]:
    """Each chosen statement ``executions`` times, interleaved, in a seeded order of parameters."""
    conn = pymysql.connect(**server.conninfo, database="sbtest", autocommit=True)
    try:
        with conn.cursor() as cur:
            def execute(name: str, value: object) -> None:
                cur.execute(OWN_STATEMENTS[name][0], (value,))
                cur.fetchall()

            return digesting.own_load(study, execute, partial(_values, study))
    finally:
        conn.close()


def run(study: DigestStudy, *, progress: bool = True) -> DigestResult:
    """Start a server with the data, capture its full slow log under the mixed load, digest it, stop."""
    out = Path(study.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        server, sb, prepare_s = stack.enter_context(mb.prepared_server(
            study.base, mariadbd=study.mariadbd, tables=study.tables, table_size=study.table_size))
        server.query(f"CREATE TABLE sbtest.{INDEXED_TABLE} LIKE sbtest.sbtest1")
        server.query(f"INSERT INTO sbtest.{INDEXED_TABLE} SELECT * FROM sbtest.sbtest1")
        server.query(f"ALTER TABLE sbtest.{INDEXED_TABLE} ADD INDEX c_idx (c)")
        box: dict = {}

        def load(seconds: float) -> None:
            # The capture's "sleep": while every statement is logged, sysbench and our own statements run.
            running = sb.start(LOAD, study.clients, int(seconds), seed=study.seed & 0x7FFFFFFF)
            box["own"] = _own_load(study, server)
            box["sysbench"] = running.wait()

        if progress:
            print(f"capturing {study.duration} s of sysbench ({study.clients} clients) and "
                  f"{study.executions} x {len(study.statements)} statements of our own", flush=True)
        cap = digesting.checked(capture.capture, lambda: pymysql.connect(**server.conninfo, autocommit=True),
                                study.duration, load)
        captured = out / "captured-slow.log"
        shutil.copyfile(cap.file, captured)
        env = environment.collect(
            server_version=server.version(),
            tools={"pt-query-digest": digest.tool_version(), **mb.server_tools(study.mariadbd, server, sb)},
            extra={"sysbench_prepare_s": prepare_s, "backend": "local", "flavor": server.flavor,
                   "capture_s": cap.seconds, "captured_bytes": captured.stat().st_size,
                   "captured_records": capture.count_records(captured), "own_executed": box["own"]})
    if progress:
        print(f"digesting {env['captured_bytes'] / 1e6:.1f} MB ({env['captured_records']} statements)", flush=True)
    report = digest.run_digest(captured)
    (out / "digest.json").write_text(report)
    sysb = box["sysbench"]
    result = DigestResult(study, label(digest.rows_rule(digest.parse(report))), env, captured,
                          {"transactions": sysb.transactions, "queries": sysb.queries,
                           "ignored_errors": sysb.ignored_errors})
    digesting.keep(study, env, result.digest)
    return result
