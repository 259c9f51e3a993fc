"""The workload derived from a captured statement log (issue 41): pgBadger's normalized statements and counts ->
one pgbench script per statement, its share as weight, the parameters the log showed."""

import contextlib
import functools
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import psycopg
import pytest

from logbench.servers import capture_pg
from logbench import cli
from logbench.base import paths
from logbench.measure.benches.postgres import BASE
from logbench.base.errors import ParameterError
from logbench.servers.postgres import LocalPostgres, find_bindir
from logbench.base.settings import Settings
from logbench.workloads import from_log, pgbadger, user_scripts
from logbench.workloads.pgbench import Pgbench

FIXTURES = Path(__file__).parent / "fixtures"
PREFIX = BASE["log_line_prefix"]  # what the fixtures' server wrote (scripts/capture_pg_log_fixtures.py)
PGBENCH_S = "select abalance from pgbench_accounts where aid = ?;"
# pgbench -S -t 20 -c 2: 40 selects, and pgbench's two set-up statements before them (a count and a catalog query)
TOTAL, SELECTS = 42, 40


@functools.lru_cache
def _derived(fixture: str, top: int = 10) -> tuple[list, dict]:
    # pgBadger reads a log twice per derive (seconds): once per fixture and top for the whole module
    return from_log.derive(FIXTURES / fixture, top=top, prefix=PREFIX)


def _aids(text: str) -> list[int]:
    """The aid of every logged -S select, as the log shows it (simple: in the statement; prepared: its bind value)."""
    simple = re.findall(r"statement: SELECT abalance FROM pgbench_accounts WHERE aid = (\d+);", text)
    bound = re.findall(r"execute P_0: [^\n]*parameters: \$1 = '(\d+)'", text)  # the bind line has them too
    return [int(a) for a in simple or bound]


@pytest.mark.parametrize("fixture", ["pg15_min_duration_0_simple.log", "pg15_min_duration_0_simple.csv",
                                     "pg15_min_duration_0_prepared.csv", "pg15_log_statement_all_simple.log"])
def test_shares_weights_and_range_of_a_captured_log(fixture):
    scripts, info = _derived(fixture)
    assert info["statements_logged"] == TOTAL and info["normalized_statements"] == 3
    top = scripts[0]
    assert top.normalized == PGBENCH_S and top.count == SELECTS and top.share == pytest.approx(SELECTS / TOTAL)
    assert top.weight == round(10_000 * 40 / 42) == 9524
    assert [s.weight for s in scripts[1:]] == [round(10_000 / 42)] * 2 == [238, 238]
    assert sum(s.replay_share for s in scripts) == pytest.approx(1)
    aids = _aids((FIXTURES / fixture).read_text())
    assert len(aids) == SELECTS and top.matched == SELECTS
    [p1] = top.ranges
    assert top.parameters == "range" and (p1.low, p1.high) == (min(aids), max(aids))
    assert top.text.endswith(f"\\set p1 random({min(aids)}, {max(aids)})\n"
                             "SELECT abalance FROM pgbench_accounts WHERE aid = :p1;\n")
    # pgbench's count of its branches has no constant: replayed as it is
    count = next(s for s in scripts if "count(*) from pgbench_branches" in s.normalized)
    assert count.parameters == "none" and count.text.splitlines()[-1] == "select count(*) from pgbench_branches;"


def test_top_keeps_the_largest_shares_and_renormalizes_the_replay():
    [only], _ = _derived("pg15_min_duration_0_simple.csv", top=1)
    assert only.normalized == PGBENCH_S and only.weight == 9524 and only.replay_share == 1.0


def test_catalog_query_with_string_and_integers_is_replayed_as_logged():
    scripts, _ = _derived("pg15_min_duration_0_simple.csv")
    catalog = next(s for s in scripts if "pg_catalog.pg_class" in s.normalized)
    # its constants are a string ('pgbench_accounts') and integers: no pgbench variable fits the string
    assert catalog.parameters == "sampled" and catalog.variants == 1 and catalog.matched == 1
    assert "c.relname = 'pgbench_accounts'" in catalog.text and not catalog.simple_only


def test_written_scripts_and_manifest_are_what_pgbench_accepts(tmp_path):
    scripts, info = _derived("pg15_min_duration_0_prepared.csv")
    manifest = json.loads(from_log.write(scripts, info, tmp_path).read_text())
    assert manifest["pgbench_scripts"] == ["stmt_01.sql@9524", "stmt_02.sql@238", "stmt_03.sql@238"]
    assert [(s["file"], s["count"], s["normalized"]) for s in manifest["scripts"]][0] == ("stmt_01.sql", 40, PGBENCH_S)
    assert manifest["writes"] is False and "read-only" in manifest["statements_note"]
    assert "random(min, max)" in manifest["parameters_rule"]
    pgbench = find_bindir(None) / "pgbench"
    user_scripts.check(pgbench, tuple(user_scripts.parse(a, tmp_path) for a in manifest["pgbench_scripts"]))


@pytest.mark.parametrize("normalized, expected", [
    ("select abalance from pgbench_accounts where aid = ?;", True),
    ("with t as (select ? as x) select * from t;", True),
    ("(select ?) union (select ?);", True),
    ("select * from orders where id = ? for update;", False),
    ("select * from orders where id = ? for no key update;", False),
    ("select nextval(?);", False),
    ("select pg_advisory_lock(?);", False),
    ("select * into t2 from t;", False),
    ("with d as (delete from t where id = ? returning *) select * from d;", False),
    ("update pgbench_accounts set abalance = abalance + ? where aid = ?;", False),
    ("insert into t values (?);", False),
    ("begin;", False),
    ("explain analyze select ?;", False),
])
def test_read_only_is_a_select_without_writes_locks_or_side_effects(normalized, expected):
    assert from_log.read_only(normalized) is expected


def test_pattern_reads_constants_strings_and_lists_from_an_execution():
    p = from_log.pattern("select * from t where a = ? and b = ? and c in (...) and d = ?;")
    m = p.regex.fullmatch("SELECT *\n  FROM t WHERE a = 'it''s' AND b = -7 AND c IN (1, 2,3) and d = NULL ;")
    assert m is not None and p.kinds == ("constant", "constant", "list", "constant")
    assert m.groups() == ("'it''s'", "-7", "IN (1, 2,3)", "NULL")
    # a decimal normalizes to "?.?": its two halves are not integers of their own
    assert from_log.pattern("select ?.?;").glued == frozenset({0, 1})


@pytest.mark.parametrize("top", [0, -1, "3", 2.5, True])
def test_bad_top_is_refused_naming_it(top):
    with pytest.raises(ParameterError) as e:
        from_log.derive(FIXTURES / "pg15_min_duration_0_simple.csv", top=top)
    assert e.value.parameter == "top"


def test_missing_empty_and_statementless_logs_are_refused_naming_the_log(tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_text("")
    # log_duration alone: duration lines without statement text, nothing pgBadger can normalize
    for log in (tmp_path / "none.csv", empty, FIXTURES / "pg15_log_duration_simple.log"):
        with pytest.raises(ParameterError) as e:
            from_log.derive(log, prefix=PREFIX)
        assert e.value.parameter == "log", log
    # PostgreSQL 17's prepared statements: pgBadger 12 reads no bind value from its "Parameters:" detail line and
    # leaves "aid =;", which no script may replay
    with pytest.raises(ParameterError, match="bind values") as e:
        from_log.derive(FIXTURES / "versions" / "pg17_min_duration_0_prepared.csv")
    assert e.value.parameter == "log"
    with pytest.raises(ParameterError) as e:
        from_log.derive(FIXTURES / "pg15_min_duration_0_simple.csv", destination="eventlog")
    assert e.value.parameter == "format"


def test_command_line_writes_the_scripts_and_exits_2_on_a_bad_parameter(tmp_path, capsys):
    out = tmp_path / "w"
    assert cli.main(["workload-from-log", str(FIXTURES / "pg15_min_duration_0_simple.log"), "--top", "2",
                     "--prefix", PREFIX, "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "stmt_01.sql", "stmt_02.sql"]
    assert "stmt_01.sql@9524" in capsys.readouterr().out
    assert cli.main(["workload-from-log", str(tmp_path / "nothing.log")]) == 2
    assert "parameter 'log'" in capsys.readouterr().err


# -- a real server: capture a load's statement log, derive its workload, replay it, capture the replay ----------

# The captured load: integer keys (a range), a string built from a key (replayed as logged), an IN list (replayed as
# logged) and a write, left out by default. Weights 6:3:2:1 over the read-only ones, plus the write's 2.
LOAD = {
    "accounts.sql@6": "\\set aid random(1, 100000)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n",
    "branches.sql@3": "\\set bid random(1, 1)\nSELECT bbalance FROM pgbench_branches WHERE bid = :bid;\n",
    "filler.sql@2": "\\set tid random(1, 10)\nSELECT tid FROM pgbench_tellers WHERE filler = 'f:tid' OR tid = :tid;\n",
    "in_list.sql@1": "\\set t random(1, 10)\nSELECT count(*) FROM pgbench_tellers WHERE tid IN (:t, 3, 5);\n",
    "update.sql@2": "\\set tid random(1, 10)\nUPDATE pgbench_tellers SET tbalance = tbalance + 1 WHERE tid = :tid;\n",
}
TOLERANCE = 0.05  # absolute, on a share: ~3 binomial standard deviations of the difference at 2 x 2000 statements


@pytest.fixture
def server(log_dir):
    with LocalPostgres(Settings.of("postgresql", BASE), log_dir=log_dir) as pg:
        Pgbench(pg.binary("pgbench"), pg.conninfo).initialise(1)
        yield pg


def _captured(server, argv: list[str], into: Path) -> tuple[Path, capture_pg.StatementLogResult]:
    """The statement log the capture tool captures while ``argv`` (pgbench) runs to its end."""
    bench = Pgbench(server.binary("pgbench"), server.conninfo)

    def load(_seconds: float) -> None:
        subprocess.run([str(bench.binary), *argv], env=bench.env, capture_output=True, text=True, check=True,
                       timeout=120)

    cap = capture_pg.capture(lambda: psycopg.connect(**server.conninfo, autocommit=True), 0.1, sleep=load)
    assert cap.ok
    with into.open("wb") as out:
        for f in cap.capture_files():
            with open(f.path, "rb") as src:
                src.seek(f.start)
                out.write(src.read(f.end - f.start))
    return into, cap


@pytest.mark.integration
def test_derived_workload_replays_the_captured_mix(server, tmp_path):
    work = Path(tempfile.mkdtemp(prefix="logbench-wlog-", dir=paths.scratch_root()))
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, work, ignore_errors=True)
        args = []
        for arg, text in LOAD.items():
            name, weight = arg.split("@")
            (work / name).write_text(text)
            args += ["-f", f"{work / name}@{weight}"]
        log, cap = _captured(server, ["-n", "-c", "2", "-t", "1000", *args], work / "load.log")
        scripts, info = from_log.derive(log, top=4, destination=cap.format, prefix=cap.prefix)
        assert [s.parameters for s in scripts] == ["range", "range", "sampled", "sampled"]
        assert not any(s.normalized.startswith("update") for s in scripts)
        # the write only when asked (this database is the test's own)
        with_writes, winfo = from_log.derive(log, top=5, destination=cap.format, prefix=cap.prefix, writes=True)
        [update] = [s for s in with_writes if s.normalized.startswith("update")]
        assert not update.read_only and update.parameters == "range" and winfo["writes"] is True
        by_table = {s.normalized: s for s in scripts}
        accounts = by_table["select abalance from pgbench_accounts where aid = ?;"]
        assert accounts.parameters == "range" and 1 <= accounts.ranges[0].low < accounts.ranges[0].high <= 100000
        filler = next(s for s in scripts if "filler" in s.normalized)
        assert filler.parameters == "sampled" and re.search(r"filler = 'f\d+'", filler.text)
        in_list = next(s for s in scripts if " in (" in s.normalized)
        assert in_list.parameters == "sampled" and in_list.variants > 1

        out = work / "derived"
        from_log.write(scripts, info, out)
        pgbench = [str(server.binary("pgbench"))]
        env = Pgbench(server.binary("pgbench"), server.conninfo).env
        derived = [a for s in scripts for a in ("-f", str(out / s.argument()))]
        for mode in ("simple", "extended", "prepared"):
            r = subprocess.run([*pgbench, "-n", "-t", "5", "-M", mode, *derived], env=env, capture_output=True,
                               text=True, timeout=60)
            assert r.returncode == 0, (mode, r.stderr[-2000:])

        replay, rcap = _captured(server, ["-n", "-c", "2", "-t", "1000", *derived], work / "replay.log")
        counts = pgbadger.counts_by_query(pgbadger.run([replay], rcap.format, prefix=rcap.prefix))
        ours = {s.normalized: counts.get(s.normalized, 0) for s in scripts}
        assert sum(ours.values()) == 2000, counts
        captured_total = sum(s.count for s in scripts)
        for s in scripts:
            replayed = ours[s.normalized] / 2000
            assert replayed == pytest.approx(s.count / captured_total, abs=TOLERANCE), (s.normalized, replayed)
            assert replayed == pytest.approx(s.replay_share, abs=TOLERANCE), (s.normalized, replayed)
