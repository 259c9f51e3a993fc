"""Study 09: what the full slow log is for — a digest of a captured log (post 002, Percona's ebook, redone).

The ebook captures every statement of a running server for a while (``full-slow-log``, here
:mod:`logbench.capture`), feeds the file to ``pt-query-digest`` and reads each query's rows examined
against rows sent (Peter Zaitsev's chapter). Here a private MariaDB runs sysbench's well-indexed
``oltp_read_write`` while this study sends statements of its own, some well indexed and some not
(:data:`OWN_STATEMENTS`: the ebook's own examples on sysbench's table, an unindexed filter and a join
without an index); the capture helper logs all of it, Debian's ``pt-query-digest`` digests the file,
and :mod:`logbench.digest` ranks the fingerprints and applies the ebook's rule.

This is one capture, not a schedule of repeated runs against a baseline: the study keeps the
captured log and pt-query-digest's JSON as its raw record, and its processed table is the digest.
"""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pymysql

from .. import capture, digest, environment, params, paths, records
from ..benches import mariadb as mb
from . import common

NAME = "mysql_digest"
POST = "002_6799d5933fa4bed1.txt"  # the post this study redoes (shared/seeds)
BACKENDS = ("local",)  # the capture file is read on this machine
INDEXED_TABLE = "digest_indexed"  # sbtest1 again, with an index on c: the ebook's "if I index the table"

# name -> (statement with one %s, its pt-query-digest fingerprint, what it is, the ebook's example it mirrors)
OWN_STATEMENTS: dict[str, tuple[str, str, str, str]] = {
    "unindexed_filter": ("SELECT * FROM sbtest1 WHERE c = %s", "select * from sbtest? where c = ?",
                         "a filter on an unindexed column that matches nothing: every row examined, none sent",
                         "query 0 (002-051, 002-052)"),
    "indexed_filter": (f"SELECT * FROM {INDEXED_TABLE} WHERE c = %s", f"select * from {INDEXED_TABLE} where c = ?",
                       "the same filter on a copy of the table with an index on c",
                       "query 0 after adding an index (002-053)"),
    "const_join": ("SELECT * FROM sbtest1 a, sbtest1 b WHERE a.id = %s AND b.id = a.k",
                   "select * from sbtest? a, sbtest? b where a.id = ? and b.id = a.k",
                   "a join by primary keys (both tables const)", "query 1 (002-054..067)"),
    "indexed_join": ("SELECT * FROM sbtest1 a, sbtest1 b WHERE a.k = %s AND b.id = a.id",
                     "select * from sbtest? a, sbtest? b where a.k = ? and b.id = a.id",
                     "a join through the secondary index k, then the primary key", "query 2 (002-068..079)"),
    "unindexed_join": ("SELECT a.id, b.id FROM sbtest1 a JOIN sbtest1 b ON b.c = a.c WHERE a.id = %s",
                       "select a.id, b.id from sbtest? a join sbtest? b on b.c = a.c where a.id = ?",
                       "a join on an unindexed column: the second table scanned for each row of the first", ""),
    "group_by": ("SELECT k, COUNT(*) FROM sbtest1 WHERE id <= %s GROUP BY k",
                 "select k, count(*) from sbtest? where id <= ? group by k",
                 "an aggregate: rows sent are groups, so the rule does not apply", "query 3 (GROUP BY)"),
}
OWN_ORDER = list(OWN_STATEMENTS)

PROFILES: dict[str, dict[str, object]] = {
    # seconds: what tests and nbval run
    "smoke": {"duration": 2, "clients": 1, "tables": 1, "table_size": 2000, "executions": 5},
    # the committed run: ~2.5 min (load ~30 s, copy and index ~5 s, capture 20 s, digest of ~60 MB ~60 s)
    "standard": {"duration": 20, "clients": 2, "tables": 4, "table_size": 100000, "executions": 20},
    # a longer capture of more data
    "full": {"duration": 120, "clients": 2, "tables": 8, "table_size": 1000000, "executions": 50},
}


@dataclass(frozen=True, kw_only=True)
class DigestStudy:
    name: str
    profile: str
    duration: int  # seconds of capture (and of sysbench)
    clients: int  # sysbench threads
    tables: int
    table_size: int
    executions: int  # times each own statement runs
    statements: tuple[str, ...]
    seed: int
    mariadbd: str
    flavor: str
    base: object
    output_dir: Path
    processed_dir: Path | None
    backend: str = "local"
    publish: bool = False


@common.declare(PROFILES)
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


@dataclass(frozen=True)
class DigestResult:
    study: DigestStudy
    digest: pd.DataFrame  # one row per fingerprint, ranked, with the rule (digest.rows_rule) and `statement`
    environment: dict
    captured_log: Path  # in the output directory (raw)
    sysbench: dict  # what sysbench reported for its part of the load


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
    rng = np.random.default_rng(study.seed)
    done = dict.fromkeys(study.statements, 0)
    conn = pymysql.connect(**server.conninfo, database="sbtest", autocommit=True)
    try:
        with conn.cursor() as cur:
            for i in range(study.executions):
                for name in study.statements:
                    cur.execute(OWN_STATEMENTS[name][0], (_values(study, rng, name, i),))
                    cur.fetchall()
                    done[name] += 1
    finally:
        conn.close()
    return done


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
            running = sb.start("oltp_read_write", study.clients, int(seconds), seed=study.seed & 0x7FFFFFFF)
            box["own"] = _own_load(study, server)
            box["sysbench"] = running.wait()

        if progress:
            print(f"capturing {study.duration} s of sysbench ({study.clients} clients) and "
                  f"{study.executions} x {len(study.statements)} statements of our own", flush=True)
        cap = capture.capture(lambda: pymysql.connect(**server.conninfo, autocommit=True), study.duration, sleep=load)
        if not cap.ok:
            raise RuntimeError(f"the capture could not restore {sorted(cap.not_restored)}")
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
    (out / "environment.json").write_text(pd.Series(env).to_json(indent=2, default_handler=str) + "\n")
    sysb = box["sysbench"]
    result = DigestResult(study, label(digest.rows_rule(digest.parse(report))), env, captured,
                          {"transactions": sysb.transactions, "queries": sysb.queries,
                           "ignored_errors": sysb.ignored_errors})
    if study.processed_dir is not None:
        records.write_processed(NAME, Path(study.processed_dir), env, {"summary": result.digest})
    return result


def label(ruled: pd.DataFrame) -> pd.DataFrame:
    """Which of our own statements each fingerprint is ('' for the workload's and the sessions' own)."""
    by_fp = {fp: name for name, (_, fp, _, _) in OWN_STATEMENTS.items()}
    out = ruled.copy()
    out.insert(1, "statement", out["fingerprint"].map(by_fp).fillna(""))
    return out


def load_processed(processed_dir: Path = paths.PROCESSED) -> pd.DataFrame:
    return common.load_processed(NAME, "summary", processed_dir=processed_dir)[0]


# -- tables and findings for the notebook ---------------------------------------------------------------

def statement_table(study: DigestStudy) -> pd.DataFrame:
    rows = [{"statement": n, "SQL": OWN_STATEMENTS[n][0].replace("%s", "?"), "what": OWN_STATEMENTS[n][2],
             "the ebook's example": OWN_STATEMENTS[n][3] or "–"} for n in study.statements]
    return pd.DataFrame(rows).set_index("statement")


def ranked(result_digest: pd.DataFrame, top: int = 15) -> pd.DataFrame:
    """The digest as the notebook shows it: rank, count, times, rows per query, B/A and its reading."""
    g = result_digest.head(top).copy()
    g["fingerprint"] = g["fingerprint"].str.slice(0, 70)
    g["time total (ms)"] = 1e3 * g["time_total_s"]
    g["p95 (ms)"] = 1e3 * g["time_p95_s"]
    cols = {"rank": "rank", "statement": "ours", "fingerprint": "fingerprint", "count": "count",
            "time total (ms)": "time total (ms)", "time_share": "share of time", "p95 (ms)": "p95 (ms)",
            "rows_examined_per_query": "examined / query", "rows_sent_per_query": "sent / query (A)",
            "table_references": "tables", "examined_per_table": "B", "ratio": "B / A", "reading": "reading"}
    return g[list(cols)].rename(columns=cols).set_index("rank").round(4)


# The ebook's examples each of our statements mirrors: reference ids of its rows sent / rows examined.
EBOOK_ROWS = {"unindexed_filter": ("002-051", "002-052"), "indexed_filter": (None, "002-053"),
              "const_join": ("002-056", "002-057"), "indexed_join": ("002-070", "002-071")}


def ebook_examples() -> pd.DataFrame:
    """The ebook's rows sent / examined examples from the reference data (002-051..053 and its two joins)."""
    from .. import reference

    ids = [i for pair in EBOOK_ROWS.values() for i in pair if i]
    v = reference.load_values(POST)
    v = v[v["id"].astype(str).isin(ids)]
    return v[["id", "item", "metric", "value", "value_text", "line"]].reset_index(drop=True)


def beside_ebook(result_digest: pd.DataFrame) -> pd.DataFrame:
    """Our own statements next to the ebook's example each mirrors (its values from the reference data)."""
    ref = ebook_examples().set_index("id")["value"]
    rows = []
    for r in result_digest[result_digest["statement"] != ""].itertuples():
        sent_id, examined_id = EBOOK_ROWS.get(r.statement, (None, None))
        rows.append({"statement": r.statement, "the ebook's example": OWN_STATEMENTS[r.statement][3] or "–",
                     "ebook: sent": ref.get(sent_id, np.nan) if sent_id else np.nan,
                     "ebook: examined": ref.get(examined_id, np.nan) if examined_id else np.nan,
                     "ours: sent / query": r.rows_sent_per_query, "ours: examined / query": r.rows_examined_per_query,
                     "tables": r.table_references, "B / A": r.ratio, "reading": r.reading})
    order = {n: i for i, n in enumerate(OWN_ORDER)}
    return pd.DataFrame(rows).sort_values("statement", key=lambda s: s.map(order)).set_index("statement")


def finding(result_digest: pd.DataFrame) -> str:
    """Which fingerprints the rule flags, and what share of the captured time they took."""
    flagged = digest.candidates(result_digest)
    n_all = len(result_digest)
    perfect = result_digest[result_digest["rule_applies"] & (result_digest["ratio"] <= digest.PERFECT)]
    if not len(flagged):
        head = f"None of the {n_all} fingerprints is flagged (B/A ≥ 10)."
    else:
        names = ", ".join(f"`{r.statement or r.fingerprint[:50]}` (rank {r.rank}, B/A "
                          f"{'∞' if np.isinf(r.ratio) else f'{r.ratio:,.0f}'})" for r in flagged.itertuples())
        head = (f"{len(flagged)} of {n_all} fingerprints are serious candidates (B/A ≥ 10): {names}; together "
                f"{100 * flagged['time_share'].sum():.3g} % of the captured statements' time in "
                f"{int(flagged['count'].sum())} of {int(result_digest['count'].sum())} executions.")
    ours = [r.statement for r in perfect.itertuples() if r.statement]
    return head + (f" {len(perfect)} fingerprints are perfect (B ≤ A)" if len(perfect) else "") + (
        f", of ours: {', '.join(f'`{n}`' for n in ours)}." if ours else ".")


def paper_table(d: pd.DataFrame) -> pd.DataFrame:
    """The paper's digest table: each fingerprint's rank, count, share of time, p95, rows and the ebook's reading."""
    from ..claims import fmt

    return pd.DataFrame({
        "rank": d["rank"].astype(int).astype(str), "ours": d["statement"].fillna("").astype(str),
        "fingerprint": d["fingerprint"].astype(str).str.slice(0, 60), "count": d["count"].astype(int).astype(str),
        "share of time": (100 * d["time_share"]).map(lambda v: f"{fmt(v)} %"),
        "p95 (ms)": (1e3 * d["time_p95_s"]).map(fmt), "sent / query (A)": d["rows_sent_per_query"].map(fmt),
        "B": d["examined_per_table"].map(fmt), "B / A": d["ratio"].astype(float).map(fmt),
        "reading": d["reading"].astype(str)})


SPEC = common.StudySpec(
    name=NAME, engine="mariadb", title="MariaDB full slow log digested", post=POST, baseline="",
    notebook="09_mysql_digest.ipynb", seed=20120911, experiment="002/rows_examined",
    committed={"profile": "standard", "backend": "local", "publish": True},
    smoke=({"profile": "smoke", "backend": "local"},), paper_order=9, measures_logging=False,
    digest=common.DigestPaper(paper_table))
