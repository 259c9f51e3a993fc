"""The full-statement-log capture helper: on a real PostgreSQL, including interrupts, a killed connection and
every server it must refuse."""

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest

from logbench.servers import capture_pg as cap
from logbench.servers.capturing import Change
from logbench.servers.postgres import LocalPostgres
from logbench.base.settings import Settings
from logbench.studies import pg_destinations as study_mod

from conftest import Held, in_thread, interrupt_while_sleeping, needs_root, wait_for
from conftest import connector as conftest_connector

CURRENT = {"log_destination": "stderr", "log_line_prefix": "%m [%p] ", "lc_messages": "C",
           "log_min_duration_statement": "-1"}


# -- no server ---------------------------------------------------------------------------------------

def test_plan_reads_the_log_it_has_and_changes_only_what_differs():
    changes, fmt = cap.plan(CURRENT, {})
    assert fmt == "stderr" and changes == [Change("log_min_duration_statement", None, "0")]
    # a prefix pgBadger cannot parse is replaced; its ALTER SYSTEM entry is what the restore puts back
    changes, fmt = cap.plan({**CURRENT, "log_line_prefix": "%u "}, {"log_line_prefix": "%u "})
    assert [(c.name, c.before, c.during) for c in changes] == [
        ("log_line_prefix", "%u ", cap.PREFIX), ("log_min_duration_statement", None, "0")]
    # csvlog or jsonlog already written: read from it, the prefix does not matter
    assert cap.plan({**CURRENT, "log_destination": "stderr,jsonlog", "log_line_prefix": ""}, {})[1] == "jsonlog"
    assert cap.plan({**CURRENT, "log_destination": "jsonlog,csvlog"}, {})[1] == "csvlog"
    # syslog only: csvlog is added; messages in German become English; already capturing: nothing to do
    changes, fmt = cap.plan({**CURRENT, "log_destination": "syslog", "lc_messages": "de_DE.UTF-8"}, {})
    assert fmt == "csvlog" and {c.name: c.during for c in changes} == {
        "log_destination": "syslog,csvlog", "lc_messages": "C", "log_min_duration_statement": "0"}
    assert cap.plan({**CURRENT, "log_min_duration_statement": "0"}, {}) == ([], "stderr")


def test_restore_statements_put_back_the_entry_or_reset_it():
    r = cap.StatementLogResult(changes=[Change("log_line_prefix", "it's %m ", "x"),
                                        Change("log_min_duration_statement", None, "0")],
                               not_restored={"log_line_prefix": "gone", "log_min_duration_statement": "gone"})
    assert r.restore_statements() == ["ALTER SYSTEM SET log_line_prefix = 'it''s %m ';",
                                      "ALTER SYSTEM RESET log_min_duration_statement;", "SELECT pg_reload_conf();"]


def test_files_written_in_the_window():
    before = {"a.log": (10, 1.0), "b.log": (5, 1.0), "old.log": (7, 1.0)}
    after = {"a.log": (30, 2.0), "b.log": (2, 2.0), "old.log": (7, 1.0), "a.csv": (9, 2.0)}
    assert cap.written(before, after, "/l") == [cap.LogFile("/l/a.csv", "csvlog", 0, 9),
                                               cap.LogFile("/l/a.log", "stderr", 10, 30),
                                               cap.LogFile("/l/b.log", "stderr", 0, 2)]


def test_command_line_rejects_nonsense_and_unreachable_servers(tmp_path):
    r = subprocess.run([sys.executable, "-m", "logbench.servers.capture_pg", "-s", "0"], capture_output=True, text=True)
    assert r.returncode == cap.EXIT_BAD_USAGE and "--seconds must be > 0" in r.stderr
    r = subprocess.run([sys.executable, "-m", "logbench.servers.capture_pg", "-s", "1", "-h", str(tmp_path), "-U", "postgres"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == cap.EXIT_FAILED and "cannot connect" in r.stderr and "NOT restore" not in r.stderr


# -- a real server -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from logbench.base import paths
    import shutil
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="logbench-test-", dir=paths.scratch_root()))
    d.chmod(0o755)
    try:
        with LocalPostgres(Settings.of("postgresql", study_mod.BASE), log_dir=d / "log") as pg:
            yield pg
    finally:
        shutil.rmtree(d, ignore_errors=True)


def state(server) -> tuple[str, dict]:
    """What a capture must leave as it found it: postgresql.auto.conf's bytes and every logging setting in use."""
    with server.connect() as c:
        values = dict(c.execute("SELECT name, setting FROM pg_settings WHERE name LIKE 'log%' OR name = 'lc_messages'")
                      .fetchall())
    return Path(server.auto_conf).read_text(), values




# The server as a DBA might have it: a prefix pgBadger cannot parse set by ALTER SYSTEM (restored by ALTER SYSTEM
# SET), log_min_duration_statement from postgresql.conf (restored by ALTER SYSTEM RESET), and statements logged to
# stderr's file or to syslog only (csvlog added; syslog goes nowhere: the server's private /dev/log is empty).
@pytest.fixture
def before(request, server):
    with server.connect() as c:
        c.execute("ALTER SYSTEM SET log_line_prefix = '%u '")
        if getattr(request, "param", "stderr") == "syslog":
            c.execute("ALTER SYSTEM SET log_destination = 'syslog'")
        c.execute("SELECT pg_reload_conf()")
    time.sleep(0.2)
    yield state(server)
    with server.connect() as c:
        c.execute("ALTER SYSTEM RESET ALL")
        c.execute("SELECT pg_reload_conf()")
    time.sleep(0.2)


def connector(server, made=None):
    return conftest_connector(lambda: psycopg.connect(**server.conninfo, autocommit=True), made)


def capturing(server) -> bool:
    return server.show(["log_min_duration_statement"])["log_min_duration_statement"] == "0"


def backend_alive(server, pid: int) -> bool:
    """The backend ``pid`` still serves its session (a terminated one is gone from pg_stat_activity once it exited)."""
    with server.connect() as c:
        return c.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone()[0] > 0


@pytest.mark.integration
@needs_root
@pytest.mark.parametrize("before", ["stderr", "syslog"], indirect=True)
def test_captures_every_statement_and_restores_exactly(server, before):
    early = psycopg.connect(**server.conninfo, autocommit=True)  # opened before: a reload reaches it too
    held = Held()
    t, box = in_thread(lambda: cap.capture(connector(server), 1.0, sleep=held))
    assert held.started.wait(60) and wait_for(lambda: capturing(server))
    time.sleep(0.2)  # the reload reaches a session at its next statement: let the early one see it
    late = psycopg.connect(**server.conninfo, autocommit=True)
    for i in range(20):
        (early if i % 2 else late).execute(f"SELECT {i} AS captured")
    early.close()
    late.close()
    held.done.set()
    t.join(30)
    r = box["result"]
    assert r.ok and r.reconnects == 0 and r.interrupted_by is None and r.seconds >= 1.0
    assert state(server) == before
    names = [c.name for c in r.changes]
    if r.format == "csvlog":  # syslog only before: csvlog added; its prefix does not matter
        assert names == ["log_destination", "log_min_duration_statement"]
    else:
        assert r.format == "stderr" and names == ["log_line_prefix", "log_min_duration_statement"]
    [f] = r.capture_files()
    text = Path(f.path).read_bytes()[f.start:f.end].decode()
    logged = re.findall(r"duration: [0-9.]+ ms  statement: SELECT (\d+) AS captured", text)
    assert sorted(map(int, logged)) == list(range(20))
    # and nothing of the helper's own (its restore's ALTER SYSTEM RESET, its reloads, its reads of pg_settings):
    # only the workload's statements and this test's SHOW polls are in the window
    others = [line for line in text.splitlines() if "duration: " in line
              and not re.search(r"statement: (SELECT \d+ AS captured|SHOW \S+)", line)]
    assert others == [], others
    if r.format == "stderr":
        assert re.search(r"^\S+ \S+ UTC \[\d+\]: user=postgres,db=postgres,app=[^,]*,client=\[local\] LOG:  duration",
                         text, re.M), text
    assert r.pgbadger_command()[-1] == f.path


@pytest.mark.integration
@needs_root
@pytest.mark.parametrize("before, sig", [("stderr", signal.SIGINT), ("syslog", signal.SIGTERM)], indirect=["before"])
def test_command_line_interrupted_mid_capture_restores(server, before, sig):
    out = interrupt_while_sleeping([sys.executable, "-m", "logbench.servers.capture_pg", "-v", "-s", "60", "-h",
                                    str(server.socket_dir), "-p", str(server.port), "-U", "postgres", "postgres"],
                                   sig, lambda: capturing(server))
    assert f"Interrupted by {sig.name}" in out and "Restoring log_min_duration_statement (ALTER SYSTEM RESET)" in out
    assert "Captured" in out and "Digest it: pgbadger --format" in out
    assert state(server) == before


@pytest.mark.integration
@needs_root
def test_killed_connection_is_reconnected_to_restore(server, before):
    made, held = [], Held()
    t, box = in_thread(lambda: cap.capture(connector(server, made), 1.0, verbose=True, log=lambda m: None,
                                           sleep=held))
    assert held.started.wait(60) and capturing(server)
    with server.connect() as c:  # the helper's session, while it sleeps
        assert c.execute("SELECT pg_terminate_backend(%s)", [made[0].info.backend_pid]).fetchone()[0]
    assert wait_for(lambda: not backend_alive(server, made[0].info.backend_pid), 60)
    held.done.set()
    t.join(30)
    r = box["result"]
    assert r.ok and r.reconnects >= 1 and len(made) >= 2
    assert state(server) == before


@pytest.mark.integration
@needs_root
def test_what_cannot_be_restored_is_said_loudly_with_the_statements(server, before, capsys):
    made = []

    def connect_once():
        if made:
            raise psycopg.OperationalError("the test refuses to reconnect")
        return connector(server, made)()

    held = Held()
    t, box = in_thread(lambda: cap.capture(connect_once, 1.0, restore_timeout=1.0, sleep=held))
    # while it sleeps: a kill during its apply (its settle polls the same session) fails the apply, not the restore
    assert held.started.wait(60) and capturing(server)
    with server.connect() as c:
        c.execute("SELECT pg_terminate_backend(%s)", [made[0].info.backend_pid])
    assert wait_for(lambda: not backend_alive(server, made[0].info.backend_pid), 60)
    held.done.set()
    t.join(30)
    r = box["result"]
    assert not r.ok and set(r.not_restored) == {c.name for c in r.changes} and r.restored == []
    err = capsys.readouterr().err
    assert "could NOT restore" in err and "ALTER SYSTEM RESET log_min_duration_statement;" in err
    assert capturing(server)  # really still changed
    with server.connect() as c:  # and the printed statements do put it back
        for statement in r.restore_statements():
            c.execute(statement)
    assert wait_for(lambda: state(server) == before, 5)


def grants_in(text: str) -> set[str]:
    return set(re.findall(r"GRANT [^;]+;", text))


@pytest.mark.integration
@needs_root
def test_non_superuser_with_the_grants_is_accepted_and_without_them_refused_naming_them(server, before):
    """The refusal's GRANT statements, run as printed, are exactly what a non-superuser needs (PostgreSQL 15)."""
    with server.connect() as c:
        c.execute("CREATE ROLE capt LOGIN")
    def as_capt():
        return psycopg.connect(**{**server.conninfo, "user": "capt"}, autocommit=True)

    try:
        # none held: refused before anything changes, every grant named (this server's changes: the prefix and
        # the threshold, see the before fixture)
        r = subprocess.run([sys.executable, "-m", "logbench.servers.capture_pg", "-s", "1", "-h", str(server.socket_dir),
                            "-p", str(server.port), "-U", "capt", "-d", "dbname=postgres"],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == cap.EXIT_FAILED and "nothing was changed" in r.stderr, r.stderr
        assert "'capt' is not a superuser" in r.stderr and 'ALTER ROLE "capt" SUPERUSER' in r.stderr
        everything = {'GRANT ALTER SYSTEM ON PARAMETER log_line_prefix TO "capt";',
                      'GRANT ALTER SYSTEM ON PARAMETER log_min_duration_statement TO "capt";',
                      'GRANT SET ON PARAMETER log_min_duration_statement TO "capt";',
                      'GRANT EXECUTE ON FUNCTION pg_reload_conf() TO "capt";',
                      'GRANT EXECUTE ON FUNCTION pg_current_logfile(text) TO "capt";',
                      'GRANT EXECUTE ON FUNCTION pg_ls_logdir() TO "capt";',
                      'GRANT SELECT ON pg_file_settings TO "capt";',
                      'GRANT EXECUTE ON FUNCTION pg_show_all_file_settings() TO "capt";',
                      'GRANT pg_read_all_settings TO "capt";'}
        assert grants_in(r.stderr) == everything
        assert state(server) == before
        # the statements as printed, run by a superuser: accepted, captures, restores exactly
        with server.connect() as c:
            for g in sorted(grants_in(r.stderr)):
                c.execute(g)
        held = Held()
        t, box = in_thread(lambda: cap.capture(as_capt, 0.5, sleep=held))
        assert held.started.wait(60) and wait_for(lambda: capturing(server))
        with psycopg.connect(**server.conninfo, autocommit=True) as w:
            w.execute("SELECT 7 AS captured")
        held.done.set()
        t.join(30)
        res = box["result"]
        assert res.ok and res.format == "stderr" and [c.name for c in res.changes] == [
            "log_line_prefix", "log_min_duration_statement"]
        [f] = res.capture_files()
        assert "statement: SELECT 7 AS captured" in Path(f.path).read_bytes()[f.start:f.end].decode()
        assert state(server) == before
        # two taken away: refused, naming exactly those two
        with server.connect() as c:
            c.execute('REVOKE ALTER SYSTEM ON PARAMETER log_line_prefix FROM "capt"')
            c.execute('REVOKE EXECUTE ON FUNCTION pg_reload_conf() FROM "capt"')
        with pytest.raises(cap.Refused) as e:
            cap.capture(as_capt, 0.5)
        assert set(e.value.grants) == {'GRANT ALTER SYSTEM ON PARAMETER log_line_prefix TO "capt";',
                                       'GRANT EXECUTE ON FUNCTION pg_reload_conf() TO "capt";'}
        assert grants_in("\n".join(e.value.reasons)) == set(e.value.grants)
        assert state(server) == before
    finally:
        with server.connect() as c:
            c.execute("DROP OWNED BY capt")  # its grants, parameters' included
            c.execute("DROP ROLE capt")


@pytest.mark.integration
@needs_root
def test_standby_and_collector_off_are_refused_before_anything_changes(server):
    """One restart for both: the helper lists every reason at once."""
    with server.connect() as c:
        c.execute("ALTER SYSTEM SET logging_collector = off")
    signal_file = server.datadir / "standby.signal"
    signal_file.touch()
    os.chown(signal_file, server.user.uid, server.user.gid)
    server.restart()
    try:
        before = state(server)
        with pytest.raises(cap.Refused) as e:
            cap.capture(connector(server), 1.0)
        reasons = "\n".join(e.value.reasons)
        assert "read-only standby" in reasons and "logging_collector is off" in reasons
        assert "restart" in reasons and len(e.value.reasons) == 2
        assert state(server) == before
    finally:
        with server.connect() as c:
            c.execute("SELECT pg_promote()")
            c.execute("ALTER SYSTEM RESET logging_collector")
        server.restart()
    assert server.show(["logging_collector"]) == {"logging_collector": "on"}
