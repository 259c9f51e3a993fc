"""record_cost's MariaDB half with a real mariadbd (no mocks), small loads: a slow-log record costs instructions
(callgrind, the connection's thread counted apart), the slow log holds one record per statement sent, and strace
sees the record's write. About 40 s; run under the bench lock like any test that starts a server."""

import shutil
import tempfile
from pathlib import Path

import pytest

from conftest import processes_naming
from logbench.base import paths
from logbench.studies.record_cost import mariadb as rc

pytestmark = pytest.mark.integration  # every test here starts this machine's mariadbd under a counting tool

SMALL, LARGE = 40, 160


def per_statement(pair, role):
    a, b = pair
    value = {x: sum(c.value for c in s.counts if c.process == role and c.metric == "instructions") for x, s in
             (("a", a), ("b", b))}
    return (value["b"] - value["a"]) / (b.statements - a.statements)


@pytest.fixture(scope="module")
def prepared():
    # The server's user must reach the logs: pytest's own temporary root is closed to it.
    scratch = Path(tempfile.mkdtemp(prefix="logbench-test-record-cost-", dir=paths.scratch_root()))
    scratch.chmod(0o755)
    try:
        yield rc.prepare(scratch / "work", table_size=1000), scratch / "work"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture(scope="module")
def callgrind_pairs(prepared):
    p, work = prepared
    return {c: rc.count_pair(p, c, SMALL, LARGE, "callgrind", work) for c in ("none", "slow_file")}


def test_a_slow_log_record_costs_the_connection_instructions(callgrind_pairs):
    none, slow = callgrind_pairs["none"], callgrind_pairs["slow_file"]
    for role in ("connection", "process"):
        assert per_statement(slow, role) > per_statement(none, role) + 1000, role
    # the connection's thread is part of the process; the background threads add little during a load
    for start in (*none, *slow):
        counts = {c.process: c.value for c in start.counts}
        assert 0 < counts["connection"] <= counts["process"] < 1.05 * counts["connection"]


def test_the_slow_log_holds_one_record_per_statement_sent(callgrind_pairs):
    for start, events in zip(callgrind_pairs["slow_file"], (SMALL, LARGE)):
        assert (start.transactions, start.statements, start.records) == (events, events, events)
        assert start.log_bytes > 100 * events
    for start in callgrind_pairs["none"]:
        assert (start.records, start.log_bytes) == (0, 0)


def test_strace_sees_the_slow_logs_writes(prepared):
    p, work = prepared
    got = {c: rc.count_start(p, c, SMALL, "strace", work) for c in ("none", "slow_file")}
    calls = {c: {(x.process, x.call): x.value for x in s.counts if x.metric == "syscalls"} for c, s in got.items()}
    written = {c: {x.process: x.value for x in s.counts if x.metric == "bytes_written"} for c, s in got.items()}
    assert got["slow_file"].records == SMALL
    # one write(2) per record, on the connection's thread, which writes nothing else (its results go by sendto)
    assert calls["slow_file"][("connection", "write")] == got["slow_file"].records
    assert calls["none"].get(("connection", "write"), 0) == 0
    assert calls["slow_file"][("connection", "sendto")] >= SMALL
    # what the connection wrote more than without the log is the log's bytes (to a few bytes: the two starts'
    # answers to the client are not byte for byte the same)
    extra = written["slow_file"]["connection"] - written["none"]["connection"]
    assert extra == pytest.approx(got["slow_file"].log_bytes, rel=0.01)
    total = {role: sum(v for (r, _), v in calls["slow_file"].items() if r == role) for role in ("connection", "process")}
    assert total["process"] > total["connection"] > 2 * SMALL


def test_nothing_is_left_running_or_on_disk(prepared, callgrind_pairs):
    p, work = prepared
    assert processes_naming("mariadbd", str(work)) == []
    assert sorted(x.name for x in work.iterdir()) == ["mariadb-pristine"]
