"""The full-slow-log capture helper: on a real MariaDB, including interrupts and a dropped connection."""

import datetime as dt
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pymysql
import pytest

from logbench.servers import capture as cap
from logbench.servers import mariadb as mdb
from logbench.base.settings import Settings

WATCHED = ["slow_query_log", "slow_query_log_file", "long_query_time", "log_slow_rate_limit", "log_output"]
# A server that already logs slow queries (to the table, sampled): the helper must change and restore all of it.
START = {"slow_query_log": True, "long_query_time": 2, "log_slow_rate_limit": 5, "log_output": "TABLE"}

from conftest import Held, connector as conftest_connector, in_thread, interrupt_while_sleeping, wait_for


# -- no server ---------------------------------------------------------------------------------------

def test_capture_file_is_next_to_the_slow_log_with_a_timestamp():
    when = dt.datetime(2012, 11, 22, 11, 24, 13)
    assert cap.capture_file_name("/var/log/mysql/mysql-slow.log", when) == "/var/log/mysql/mysql-slow.log-full-20121122112413"
    assert cap.capture_file_name("mysql-slow.log", when) == "mysql-slow.log-full-20121122112413"  # under datadir
    assert cap.capture_file_name("/a/slow.log", when, "/b") == "/b/slow.log-full-20121122112413"


def test_plan_changes_only_what_differs_in_a_safe_order():
    current = {"slow_query_log": "OFF", "slow_query_log_file": "/x/slow.log", "long_query_time": "10.000000",
               "log_output": "TABLE", "log_slow_rate_limit": "1", "log_slow_min_examined_row_limit": "100"}
    changes = cap.plan(current, "/x/slow.log-full-1")
    assert [c.name for c in changes] == ["slow_query_log_file", "log_output", "log_slow_min_examined_row_limit",
                                         "long_query_time", "slow_query_log"]
    assert changes[1].during == "TABLE,FILE" and changes[2].during == "0"
    # already logging everything to a file: only the file changes
    current = {"slow_query_log": "ON", "slow_query_log_file": "/x/s.log", "long_query_time": "0.000000",
               "log_output": "FILE"}
    assert [c.name for c in cap.plan(current, "/x/s.log-full-1")] == ["slow_query_log_file"]
    # MySQL 8: no MariaDB-only variables, min_examined_row_limit by its MySQL name; NONE becomes FILE
    current = {"slow_query_log": "OFF", "slow_query_log_file": "/x/s.log", "long_query_time": "10.000000",
               "log_output": "NONE", "min_examined_row_limit": "5"}
    plan = {c.name: c.during for c in cap.plan(current, "/x/s.log-full-1")}
    assert plan["log_output"] == "FILE" and plan["min_examined_row_limit"] == "0"


def test_restore_statements_are_valid_sql_for_what_failed():
    r = cap.CaptureResult(file="f", flavor="mariadb",
                          changes=[cap.Change("long_query_time", "10.000000", "0"), cap.Change("slow_query_log_file", "/a b/x.log", "y")],
                          not_restored={"long_query_time": "gone", "slow_query_log_file": "gone"})
    assert r.restore_statements() == ["SET GLOBAL long_query_time = 10.000000;",
                                      "SET GLOBAL slow_query_log_file = '/a b/x.log';", "FLUSH SLOW LOGS;"]


# -- a real server -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def server():
    log_dir = Path(tempfile.mkdtemp(prefix="logbench-test-log-", dir="/var/tmp"))
    try:
        with mdb.LocalMariaDB(Settings.of("mariadb", START), log_dir=log_dir) as m:
            yield m
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)


@pytest.fixture
def original(server):
    before = server.show(WATCHED)
    yield before
    # leave the server as the next test expects it, whatever this one did
    for name, value in before.items():
        server.query(f"SET GLOBAL {name} = {mdb.sql_literal(value)}")


def connector(server, made=None):
    return conftest_connector(lambda: pymysql.connect(**server.conninfo, autocommit=True), made)


def session_alive(server, thread_id: int) -> bool:
    """The server still lists the session ``thread_id`` (a killed one is gone once its thread ended)."""
    return bool(server.query("SELECT ID FROM information_schema.PROCESSLIST WHERE ID = %s", (int(thread_id),)))


@pytest.mark.integration
def test_captures_new_sessions_statements_and_restores_everything(server, original):
    held = Held()
    t, box = in_thread(lambda: cap.capture(connector(server), 2.0, sleep=held))
    assert held.started.wait(60) and wait_for(lambda: server.show(["slow_query_log_file"])["slow_query_log_file"] != original["slow_query_log_file"]
                    and server.show(["slow_query_log"])["slow_query_log"] == "ON"
                    and server.show(["long_query_time"])["long_query_time"] == "0.000000")
    client = pymysql.connect(**server.conninfo, autocommit=True)  # a session opened during the capture
    with client.cursor() as cur:
        for i in range(25):
            cur.execute("SELECT %s AS captured", (i,))
    client.close()
    held.done.set()
    t.join(30)
    r = box["result"]
    assert r.ok and r.reconnects == 0 and r.interrupted_by is None and r.seconds >= 2.0
    assert [c.name for c in r.changes] == ["slow_query_log_file", "log_output", "log_slow_rate_limit", "long_query_time"]
    assert sorted(r.restored) == sorted(c.name for c in r.changes)
    assert server.show(WATCHED) == original
    assert cap.count_records(r.file) >= 25  # its SET NAMES too: every statement of the session
    assert b"SELECT 24 AS captured" in Path(r.file).read_bytes()


@pytest.mark.integration
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_command_line_interrupted_mid_capture_restores(server, original, sig):
    out = interrupt_while_sleeping([sys.executable, "-m", "logbench.servers.capture", "-v", "-s", "60", "--socket",
                                    str(server.socket_path), "--user", "root"], sig,
                                   lambda: server.show(["long_query_time"])["long_query_time"] == "0.000000")
    assert f"Interrupted by {sig.name}" in out and "Restoring long_query_time=2.000000" in out
    assert "Captured" in out
    assert server.show(WATCHED) == original


@pytest.mark.integration
def test_interrupt_in_process_restores_then_reraises(server, original):
    def interrupted_sleep(seconds):
        raise KeyboardInterrupt

    with pytest.raises(cap.CaptureInterrupted) as e:
        cap.capture(connector(server), 30, sleep=interrupted_sleep)
    assert e.value.result.ok and e.value.result.interrupted_by == "SIGINT"
    assert server.show(WATCHED) == original


@pytest.mark.integration
def test_dropped_connection_is_reconnected_to_restore(server, original):
    made, held = [], Held()
    t, box = in_thread(lambda: cap.capture(connector(server, made), 1.5, verbose=True, log=lambda m: None,
                                           sleep=held))
    assert held.started.wait(60) and server.show(["long_query_time"])["long_query_time"] == "0.000000"
    server.query(f"KILL {made[0].thread_id()}")  # the helper's session, while it sleeps
    assert wait_for(lambda: not session_alive(server, made[0].thread_id()), 60)
    held.done.set()
    t.join(30)
    r = box["result"]
    assert r.ok and r.reconnects >= 1 and len(made) >= 2
    assert server.show(WATCHED) == original


@pytest.mark.integration
def test_what_cannot_be_restored_is_said_loudly_with_the_statements(server, original, capsys):
    made = []

    def connect_once():
        if made:
            raise pymysql.err.OperationalError(2003, "Can't connect (the test refuses)")
        return connector(server, made)()

    held = Held()
    t, box = in_thread(lambda: cap.capture(connect_once, 1.0, restore_timeout=1.0, sleep=held))
    # while it sleeps: a kill during its apply fails the apply, not the restore
    assert held.started.wait(60) and server.show(["long_query_time"])["long_query_time"] == "0.000000"
    server.query(f"KILL {made[0].thread_id()}")
    assert wait_for(lambda: not session_alive(server, made[0].thread_id()), 60)
    held.done.set()
    t.join(30)
    r = box["result"]
    assert not r.ok and set(r.not_restored) == {c.name for c in r.changes} and r.restored == []
    err = capsys.readouterr().err
    assert "could NOT restore" in err and "SET GLOBAL long_query_time = 2.000000;" in err
    assert server.show(["long_query_time"])["long_query_time"] == "0.000000"  # really still changed
    for statement in r.restore_statements():  # and the printed statements do put it back
        server.query(statement.rstrip(";"))
    assert server.show(WATCHED) == original


@pytest.mark.integration
def test_command_line_rejects_nonsense_and_unreachable_servers(tmp_path):
    r = subprocess.run([sys.executable, "-m", "logbench.servers.capture", "-s", "0"], capture_output=True, text=True)
    assert r.returncode == cap.EXIT_BAD_USAGE and "--seconds must be > 0" in r.stderr
    r = subprocess.run([sys.executable, "-m", "logbench.servers.capture", "-s", "1", "--socket", str(tmp_path / "none.sock"),
                        "--user", "root"], capture_output=True, text=True, timeout=60)
    assert r.returncode == cap.EXIT_FAILED and "Can't connect" in r.stderr and "NOT restore" not in r.stderr
