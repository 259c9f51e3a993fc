"""Study 10: PostgreSQL's full statement log digested by pgBadger — study 09's workflow on PostgreSQL (issue 25).

A DBA logs every statement of a running server for a while (``logbench-full-statement-log``, here
:mod:`logbench.capture_pg`), restores the settings, and digests the log with pgBadger to find what is worth
optimizing. Here a private PostgreSQL runs pgbench's select-only load while this study sends statements of
its own with known plans (:data:`OWN_STATEMENTS`: an unindexed filter, its indexed twin, a join without an
index); the capture logs all of it, pgBadger (``--format`` of the captured file, JSON for the tables, HTML
beside the raw record) digests the file, and the normalized queries are ranked by total time, count and mean.

The capture's own statements (its restore's ``ALTER SYSTEM RESET``, its reloads, its reads of the settings) are
not in the log (``capture_pg.QUIET``): what is ranked is the workload.

One capture, not a schedule of repeated runs: the captured log, pgBadger's JSON and HTML are the raw record,
the ranked digest the processed table. PostgreSQL's log has no rows examined, so the ebook's B / A rule
(study 09) cannot be applied here; the plans' difference shows in the time per execution.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import psycopg

from .. import capture_pg, environment, params, paths, pgbadger, records
from ..benches import postgres as pg
from ..servers.postgres import LocalPostgres, find_bindir
from ..settings import Settings
from ..workloads.pgbench import Pgbench, parse_output
from . import common

NAME = "pg_digest"
POST = "002_6799d5933fa4bed1.txt"  # the ebook's workflow (study 09's post), redone on PostgreSQL
BACKENDS = ("local",)  # the captured file is read on this machine
INDEXED_TABLE = "digest_indexed"  # pgbench_accounts copied, with an index on abalance
QUERY_MODE = "prepared"  # pgbench's; pgBadger adds a prepared statement's parse and bind to its execute

# name -> (statement with one %s, a piece of pgBadger's normalized text that names it, what it is)
OWN_STATEMENTS: dict[str, tuple[str, str, str]] = {
    "unindexed_filter": ("SELECT * FROM pgbench_accounts WHERE abalance = %s",
                         "from pgbench_accounts where abalance =",
                         "a filter on an unindexed column that matches nothing: a sequential scan of every row"),
    "indexed_filter": (f"SELECT * FROM {INDEXED_TABLE} WHERE abalance = %s",
                       f"from {INDEXED_TABLE} where abalance =",
                       "the same filter on a copy of the table with an index on abalance"),
    "unindexed_join": ("SELECT a.aid FROM pgbench_tellers t JOIN pgbench_accounts a ON a.abalance = t.tbalance "
                       "WHERE t.tid = %s AND a.bid = t.bid",
                       "join pgbench_accounts a on a.abalance = t.tbalance",
                       "a join on unindexed columns: the accounts table scanned for the teller's row"),
}
OWN_ORDER = list(OWN_STATEMENTS)

PROFILES: dict[str, dict[str, object]] = {
    # seconds: what tests and nbval run
    "smoke": {"duration": 2, "clients": 1, "scale": 1, "executions": 5, "rate": 1000},
    # the committed run: 31 s in all on the 2-vCPU host (a 20 s capture of 20 MB); the log's size
    # is rate x duration, and pgBadger's time follows it
    "standard": {"duration": 20, "clients": 2, "scale": 10, "executions": 20, "rate": 2000},
    "full": {"duration": 120, "clients": 2, "scale": 50, "executions": 50, "rate": 2000},
}


@dataclass(frozen=True, kw_only=True)
class PgDigestStudy:
    name: str
    profile: str
    duration: int  # seconds of capture (and of pgbench)
    clients: int  # pgbench clients
    scale: int  # pgbench -s
    executions: int  # times each own statement runs
    rate: int  # pgbench -R: transactions per second of the load (a steady server's, and the log's size)
    statements: tuple[str, ...]
    seed: int
    pg_bindir: str
    output_dir: Path
    processed_dir: Path | None
    backend: str = "local"
    publish: bool = False


@common.declare(PROFILES)
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


@dataclass(frozen=True)
class PgDigestResult:
    study: PgDigestStudy
    digest: pd.DataFrame  # one row per normalized query, ranked by total time, with `statement`
    report: dict  # pgBadger's JSON
    environment: dict
    captured_log: Path  # in the output directory (raw)
    html: Path  # pgBadger's HTML report, beside it
    pgbench: dict  # what pgbench reported for its part of the load
    own: dict[str, int]  # executions of each own statement


def _value(study: PgDigestStudy, rng: np.random.Generator, name: str, i: int) -> int:
    """The filters look for a balance no select-only account has (it stays 0); the join, for a teller."""
    if name == "unindexed_join":
        return int(rng.integers(1, 10 * study.scale + 1))
    return -1 - i


def _own_load(study: PgDigestStudy, conninfo: dict) -> dict[str, int]:
    """Each chosen statement ``executions`` times, interleaved, in a seeded order of parameters."""
    rng = np.random.default_rng(study.seed)
    done = dict.fromkeys(study.statements, 0)
    with psycopg.connect(**conninfo, autocommit=True) as conn:
        for i in range(study.executions):
            for name in study.statements:
                conn.execute(OWN_STATEMENTS[name][0], (_value(study, rng, name, i),)).fetchall()
                done[name] += 1
    return done


def _capture_bytes(files: list[capture_pg.LogFile], into: Path) -> None:
    """The window's bytes of each captured file, one after the other."""
    with into.open("wb") as out:
        for f in files:
            with open(f.path, "rb") as src:
                src.seek(f.start)
                out.write(src.read(f.end - f.start))


def run(study: PgDigestStudy, *, progress: bool = True) -> PgDigestResult:
    """Start a server with pgbench's tables, capture its full statement log under the mixed load, digest it."""
    out = Path(study.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
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
        box: dict = {}

        def load(seconds: float) -> None:
            # The capture's "sleep": while every statement is logged, pgbench and our own statements run.
            running = subprocess.Popen([*bench.command(study.clients, max(1, int(seconds)), QUERY_MODE), "-R", str(study.rate)], env=bench.env,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                box["own"] = _own_load(study, server.conninfo)
            finally:
                stdout, stderr = running.communicate(timeout=seconds + 120)
            if running.returncode != 0:
                raise RuntimeError(f"pgbench failed: {stderr[-2000:]}")
            box["pgbench"] = parse_output(stdout)

        if progress:
            print(f"capturing {study.duration} s of pgbench -S ({study.clients} clients, {study.rate} tps, scale {study.scale}) and "
                  f"{study.executions} x {len(study.statements)} statements of our own", flush=True)
        cap = capture_pg.capture(lambda: psycopg.connect(**server.conninfo, autocommit=True), study.duration,
                                 sleep=load)
        if not cap.ok:
            raise RuntimeError(f"the capture could not restore {sorted(cap.not_restored)}")
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
    (out / "environment.json").write_text(pd.Series(env).to_json(indent=2, default_handler=str) + "\n")
    table = ranked_queries(report)
    result = PgDigestResult(study, table, report, env, captured, html, box["pgbench"], box["own"])
    if study.processed_dir is not None:
        records.write_processed(NAME, Path(study.processed_dir), env, {"summary": table})
    return result


def which_statement(query: str) -> str:
    """Which of our own statements a normalized query is ('' for pgbench's and the sessions' own)."""
    q = " ".join(query.lower().split())
    return next((name for name, (_, piece, _) in OWN_STATEMENTS.items() if piece in q), "")


def ranked_queries(report: dict) -> pd.DataFrame:
    """pgBadger's normalized queries (databases summed), ranked by total time: count, total, mean, min, max."""
    rows: dict[str, dict] = {}
    for queries in report["normalyzed_info"].values():
        for query, info in queries.items():
            r = rows.setdefault(query, {"query": query, "count": 0, "time_total_ms": 0.0,
                                        "time_min_ms": np.inf, "time_max_ms": 0.0})
            r["count"] += int(info["count"])
            r["time_total_ms"] += float(info.get("duration", 0) or 0)
            r["time_min_ms"] = min(r["time_min_ms"], float(info.get("min", np.inf) or np.inf))
            r["time_max_ms"] = max(r["time_max_ms"], float(info.get("max", 0) or 0))
    t = pd.DataFrame(list(rows.values()), columns=["query", "count", "time_total_ms", "time_min_ms", "time_max_ms"])
    t["time_mean_ms"] = t["time_total_ms"] / t["count"]
    t["time_share"] = t["time_total_ms"] / t["time_total_ms"].sum()
    t.insert(1, "statement", t["query"].map(which_statement))
    t = t.sort_values(["time_total_ms", "query"], ascending=[False, True]).reset_index(drop=True)
    t.insert(0, "rank", np.arange(1, len(t) + 1))
    t["rank_by_count"] = t["count"].rank(ascending=False, method="min").astype(int)
    t["rank_by_mean"] = t["time_mean_ms"].rank(ascending=False, method="min").astype(int)
    return t


def load_processed(processed_dir: Path = paths.PROCESSED) -> pd.DataFrame:
    return common.load_processed(NAME, "summary", processed_dir=processed_dir)[0]


# -- tables and findings for the notebook ---------------------------------------------------------------

def statement_table(study: PgDigestStudy) -> pd.DataFrame:
    rows = [{"statement": n, "SQL": OWN_STATEMENTS[n][0].replace("%s", "$1"), "what": OWN_STATEMENTS[n][2]}
            for n in study.statements]
    return pd.DataFrame(rows).set_index("statement")


def ranked(digest: pd.DataFrame, top: int = 15, by: str = "time_total_ms") -> pd.DataFrame:
    """The digest as the notebook shows it, ordered by ``by`` (time_total_ms, count or time_mean_ms)."""
    g = digest.sort_values([by, "query"], ascending=[False, True]).head(top).copy()
    g["query"] = g["query"].str.slice(0, 70)
    cols = {"rank": "rank by total", "rank_by_count": "by count", "rank_by_mean": "by mean", "statement": "ours",
            "query": "normalized query", "count": "count", "time_total_ms": "total (ms)",
            "time_share": "share of time", "time_mean_ms": "mean (ms)", "time_max_ms": "max (ms)"}
    return g[list(cols)].rename(columns=cols).set_index("rank by total").round(4)


def own_counts(result: PgDigestResult) -> pd.DataFrame:
    """Our statements as run beside pgBadger's count of them, and pgbench's transactions beside its query."""
    d = result.digest
    rows = [{"statement": n, "executed": result.own.get(n, 0),
             "pgBadger's count": int(d.loc[d["statement"] == n, "count"].sum()),
             "mean (ms)": float(d.loc[d["statement"] == n, "time_mean_ms"].mean())} for n in result.study.statements]
    return pd.DataFrame(rows).set_index("statement")


def finding(digest: pd.DataFrame) -> str:
    """Where the captured time went, and the indexed twin's mean beside the unindexed filter's."""
    top = digest.iloc[0]
    ours = digest[digest["statement"] != ""].set_index("statement")
    text = (f"{len(digest)} normalized queries; the most total time: "
            f"{'`' + top['statement'] + '`' if top['statement'] else 'a query not of ours'} "
            f"({100 * top['time_share']:.3g} % of the captured time in {int(top['count'])} executions).")
    if {"unindexed_filter", "indexed_filter"} <= set(ours.index):
        u, i = ours.loc["unindexed_filter", "time_mean_ms"], ours.loc["indexed_filter", "time_mean_ms"]
        text += (f" The unindexed filter takes {u:.3g} ms per execution, its indexed twin {i:.3g} ms "
                 f"({u / i:,.0f}x): the index is what is worth adding.")
    return text


def paper_table(d: pd.DataFrame) -> pd.DataFrame:
    """The paper's digest table: each normalized query's rank by total time, count and mean, and its times."""
    from ..claims import fmt

    return pd.DataFrame({
        "rank": d["rank"].astype(int).astype(str), "ours": d["statement"].fillna("").astype(str),
        "normalized query": d["query"].astype(str).str.slice(0, 60), "count": d["count"].astype(int).astype(str),
        "share of time": (100 * d["time_share"]).map(lambda v: f"{fmt(v)} %"),
        "mean (ms)": d["time_mean_ms"].map(fmt), "max (ms)": d["time_max_ms"].map(fmt),
        "by count": d["rank_by_count"].astype(int).astype(str), "by mean": d["rank_by_mean"].astype(int).astype(str)})


def _ours(statement: str, column: str, **more) -> dict:
    return {"kind": "cell", "where": {"statement": statement}, "column": column, **more}


# What the paper's text states, each from the processed table: our statements' ranks and means, the filter's two plans
# side by side, and how many normalized queries the log held.
PAPER_NUMBERS = {
    "queries": {"kind": "agg", "agg": "count"},
    **{f"{n}.{key}": _ours(n, column, **more) for n in OWN_ORDER
       for key, column, more in (("rank", "rank", {}), ("mean_ms", "time_mean_ms", {"sig": 3}))},
    "unindexed_join.count": _ours("unindexed_join", "count"),
    "filter_index_factor": {"kind": "div", "a": _ours("unindexed_filter", "time_mean_ms"),
                            "b": _ours("indexed_filter", "time_mean_ms"), "sig": 2},
}


SPEC = common.StudySpec(
    name=NAME, engine="postgresql", title="PostgreSQL full statement log digested by pgBadger", post=POST,
    baseline="", notebook="10_pg_digest.ipynb", seed=20120911,
    committed={"profile": "standard", "backend": "local", "publish": True},
    smoke=({"profile": "smoke", "backend": "local"},), paper_order=10, measures_logging=False,
    digest=common.DigestPaper(paper_table, PAPER_NUMBERS))
