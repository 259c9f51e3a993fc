"""The MariaDB study on a user's own server: a real MariaDB started by the test and handed to the study as a user's
would be (TCP, a user with a password the study did not set), real sysbench; the study switches, measures, counts
and leaves ``SHOW GLOBAL VARIABLES`` as it found it, also after SIGINT / SIGTERM mid-load and a killed connection;
every refusal before anything changes; no password in any file a run writes."""

import signal

import pymysql
import pytest

from logbench.publish import answer
from logbench.servers.capturing import Refused
from logbench.base.errors import ParameterError
from logbench.servers import mariadb as mdb
from logbench.servers import handed
from logbench.servers import own_mariadb as own
from logbench.base.settings import Settings
from logbench.studies import own_mariadb as study_mod

from conftest import files_holding, in_thread, interrupted_mid_load, processes_naming, wait_for

PASSWORD = "Qz7-own-mariadb-secret-0815"
# what a run must leave as it found it
WATCHED = ["slow_query_log", "slow_query_log_file", "long_query_time", "log_output", "general_log",
           "general_log_file", "log_slow_rate_limit", "log_slow_min_examined_row_limit", "min_examined_row_limit"]
# A DBA's server: a slow log already on, to the table, sampled, at 2 s
START = {"slow_query_log": True, "long_query_time": 2, "log_slow_rate_limit": 5, "log_output": "TABLE"}


# -- no server -------------------------------------------------------------------------------------------

def test_parameters_are_refused_before_anything_connects(monkeypatch, tmp_path):
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    with pytest.raises(ParameterError, match=r"'confirm'.*sysbench runs .* min of load") as e:
        study_mod.define(profile="smoke", server="host=nowhere")
    assert "SET GLOBAL" in str(e.value) and "restoring it after" in str(e.value)
    with pytest.raises(ParameterError, match="'server'") as e:
        study_mod.define(profile="smoke", server=f"host=localhost password={PASSWORD}", confirm=True)
    assert PASSWORD not in str(e.value)
    for wrong in ("host=x dbname=y", "port=abc", "justaword", "defaults_file=/nowhere.cnf"):
        with pytest.raises(ParameterError, match="'server'"):
            study_mod.define(profile="smoke", server=wrong, confirm=True)
    with pytest.raises(ParameterError, match="'script'"):
        study_mod.define(profile="smoke", database="app", confirm=True)
    with pytest.raises(ParameterError, match="'arms'"):
        study_mod.define(profile="smoke", arms=["none", "log_everything"], confirm=True)
    with pytest.raises(ParameterError, match="'publish'"):
        study_mod.define(profile="smoke", publish=True, confirm=True)
    with pytest.raises(ParameterError, match="'database'"):
        study_mod.define(profile="smoke", database=study_mod.BUILTIN_DB, script="x.lua", confirm=True)
    with pytest.raises(ParameterError, match="'script_options'"):
        study_mod.define(profile="smoke", script_options=["--mysql-host=elsewhere"], confirm=True)
    bad = tmp_path / "bad.lua"
    bad.write_text("function event(\n")
    with pytest.raises(ParameterError, match=r"(?s)'script'.*bad\.lua"):
        study_mod.define(profile="smoke", database="app", script=str(bad), confirm=True)


def test_arms_and_their_records():
    study = study_mod.define(profile="smoke", arms=list(study_mod.ARMS), confirm=True)
    by = {c.name: c for c in study.configurations}
    assert by["none"].destinations == () and by["none"].records == ()
    assert by["slow_table"].settings["log_output"] == "TABLE" and by["slow_table"].destinations == ("slow_table",)
    assert [r.per_statement for r in by["general_file"].records] == [1]
    # every arm sets every variable: a switch lands on the same state whatever ran before it
    assert all(set(c.settings) == set(study_mod.arm_settings("none")) for c in study.configurations)


# -- a real server, handed over ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def server():
    # as the committed run's server is made (logbench.servers.handed): the account 'owner', every privilege
    with handed.mariadb(Settings.of("mariadb", START), password=PASSWORD) as h:
        assert h.spec == spec(h.server) and h.env == {"MYSQL_PWD": PASSWORD}
        yield h.server


def spec(server, user="owner") -> str:
    return f"host=127.0.0.1 port={server.port} user={user}"


def state(server) -> tuple:
    """SHOW GLOBAL VARIABLES of every watched variable, and the databases: what a study must leave as it found."""
    return server.show(WATCHED), sorted(r[0] for r in server.query("SHOW DATABASES"))


@pytest.fixture
def before(server, monkeypatch):
    monkeypatch.setenv("MYSQL_PWD", PASSWORD)
    found = state(server)
    yield found
    for name, value in found[0].items():  # leave the server as the next test expects it, whatever this one did
        server.query(f"SET GLOBAL {name} = {mdb.sql_literal(value)}")



@pytest.mark.integration
def test_builtin_load_every_arm_counted_and_restored(server, before, tmp_path):
    study = study_mod.define(profile="smoke", server=spec(server), arms=list(study_mod.ARMS), repeats=1,
                             confirm=True, output_dir=str(tmp_path / "out"))
    result = study_mod.run(study)
    runs = result.runs.set_index("configuration")
    assert set(runs.index) == {"none", "slow_file", "slow_table", "general_file", "none_again"}
    for arm in ("slow_file", "slow_table", "general_file"):
        r = runs.loc[arm]
        # every statement's record, counted where the server wrote it: sysbench's connections were opened after
        # the switch (a new process per run), so each took long_query_time = 0
        assert r["log_records_expected"] == r["extra"]["statements"] > 100 and r["log_loss"] == 0, (arm, r)
    assert runs.loc["slow_table", "extra"]["log_read"] == "sql" and runs.loc["slow_file", "extra"]["log_read"] == "file"
    assert runs.loc[["none", "none_again"], "log_records_received"].eq(0).all()
    switched = result.runs[result.runs["switch"] == "set_global"]
    assert len(switched) >= 3 and (switched["switch_s"] < 5).all()
    assert result.environment["server"] == {"host": "127.0.0.1", "port": str(server.port), "user": "owner"}
    assert state(server) == before
    text = answer.answer(tmp_path / "out")
    assert "Logging on your own MariaDB/MySQL" in text and "slow_table" in text and "A/A ratio" in text
    # the password reached the server (TCP asks for it) and sysbench, and no file of the run
    assert files_holding(tmp_path, PASSWORD) == []
    assert PASSWORD not in str(result.runs["extra"].tolist())


@pytest.mark.integration
def test_own_script_in_own_database(server, before, tmp_path):
    server.query("CREATE DATABASE IF NOT EXISTS app")
    server.query("CREATE TABLE IF NOT EXISTS app.t (id INT PRIMARY KEY, v INT)")
    server.query("INSERT IGNORE INTO app.t VALUES (1, 0), (2, 0), (3, 0)")
    script = tmp_path / "two.lua"
    # two statements a transaction: sysbench counts both, the slow log must hold both
    script.write_text("function thread_init()\n  drv = sysbench.sql.driver()\n  con = drv:connect()\nend\n"
                      "function event()\n  con:query('SELECT v FROM t WHERE id = 1')\n"
                      "  con:query('UPDATE t SET v = v + 1 WHERE id = 2')\nend\n"
                      "function thread_done()\n  con:disconnect()\nend\n")
    study = study_mod.define(profile="smoke", server=spec(server), database="app", script=str(script), repeats=1,
                             arms=["none", "slow_file"], confirm=True, output_dir=str(tmp_path / "out"))
    runs = study_mod.run(study).runs.set_index("configuration")
    r = runs.loc["slow_file"]
    assert r["extra"]["statements"] == 2 * r["transactions"] and r["log_loss"] == 0
    assert r["log_records_received"] == r["extra"]["statements"]
    after = state(server)
    # the user's database stays; the study only creates and drops its own
    assert after[0] == before[0] and set(after[1]) == set(before[1]) | {"app"}


@pytest.mark.integration
def test_refusals_before_anything_changes(server, before, tmp_path):
    def refused(**kw):
        study = study_mod.define(profile="smoke", confirm=True, output_dir=str(tmp_path / "out"), **kw)
        found = state(server)
        with pytest.raises(Refused) as e:
            study_mod.run(study)
        assert state(server) == found
        return e.value

    # another session busy beyond max_active = 0
    busy = pymysql.connect(**server.conninfo, autocommit=True)
    t, _ = in_thread(lambda: busy.cursor().execute("SELECT SLEEP(5)"))
    try:
        assert wait_for(lambda: server.query("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE "
                                             "INFO LIKE 'SELECT SLEEP%'")[0][0] == 1, 5)
        e = refused(server=spec(server))
        assert any("1 other session(s) are active" in r for r in e.reasons), e.reasons
    finally:
        t.join(10)
        busy.close()
    # a user without the privileges: the grants printed
    for host in ("127.0.0.1", "localhost"):
        server.query(f"DROP USER IF EXISTS 'plain'@'{host}'")
        server.query(f"CREATE USER 'plain'@'{host}' IDENTIFIED BY '{PASSWORD}'")
    e = refused(server=spec(server, "plain"), arms=["none", "slow_table"])
    account = "'plain'@'localhost'"  # the account the server matched a connection from 127.0.0.1 to
    assert {f"GRANT SUPER ON *.* TO {account};", f"GRANT SELECT ON mysql.slow_log TO {account};",
            f"GRANT SLAVE MONITOR ON *.* TO {account};", f"GRANT PROCESS ON *.* TO {account};",
            f"GRANT ALL ON `{study_mod.BUILTIN_DB}`.* TO {account};"} == set(e.grants), e.grants
    held = [r for r in e.reasons if "GRANT USAGE ON *.* TO `plain`@`localhost`;" in r]  # what it holds, printed
    assert held and "IDENTIFIED" not in held[0] and "PASSWORD" not in held[0], e.reasons
    # ... and with exactly those, it runs (and restores) as that user
    for g in e.grants:
        server.query(g)
    study = study_mod.define(profile="smoke", server=spec(server, "plain"), arms=["none", "slow_table"], repeats=1,
                             confirm=True, output_dir=str(tmp_path / "plain"))
    found = state(server)
    runs = study_mod.run(study).runs
    assert (runs[runs["configuration"] == "slow_table"]["log_loss"] == 0).all()
    assert state(server) == found
    # a read-only server (a replica's state)
    server.query("SET GLOBAL read_only = ON")
    try:
        e = refused(server=spec(server))
        assert any("read-only" in r for r in e.reasons)
    finally:
        server.query("SET GLOBAL read_only = OFF")
    # the built-in load's database exists already: never written into
    server.query(f"CREATE DATABASE {study_mod.BUILTIN_DB}")
    try:
        e = refused(server=spec(server))
        assert any("exists already" in r for r in e.reasons)
    finally:
        server.query(f"DROP DATABASE {study_mod.BUILTIN_DB}")


def _loading(server) -> bool:
    return server.query("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = %s AND USER = 'owner'",
                        [study_mod.BUILTIN_DB])[0][0] > 1


@pytest.mark.integration
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_mid_load_restores_everything(server, before, tmp_path, sig):
    out = tmp_path / "out"
    returncode, output = interrupted_mid_load(f"""
        from logbench.studies import own_mariadb as s
        s.run(s.define(profile="smoke", server={spec(server)!r}, arms=["none", "slow_file"], duration=30,
                       confirm=True, output_dir={str(out)!r}))
    """, lambda: _loading(server), sig)
    assert returncode != 0 and "could NOT restore" not in output, output
    assert "KeyboardInterrupt" in output
    assert state(server) == before
    assert processes_naming("sysbench", study_mod.BUILTIN_DB) == []
    assert files_holding(tmp_path, PASSWORD) == [] and PASSWORD not in output


@pytest.mark.integration
def test_killed_connection_is_reconnected_and_restored(server, before, tmp_path):
    study = study_mod.define(profile="smoke", server=spec(server), arms=["none", "slow_file"], repeats=2,
                             confirm=True, output_dir=str(tmp_path / "out"))
    t, box = in_thread(lambda: study_mod.run(study))
    assert wait_for(lambda: _loading(server), 60)
    # the study's control session: the owner's one connection outside the load's database
    killed = [r[0] for r in server.query("SELECT ID FROM information_schema.PROCESSLIST WHERE USER = 'owner' AND "
                                         "(DB IS NULL OR DB <> %s)", [study_mod.BUILTIN_DB])]
    assert killed
    for i in killed:
        server.query(f"KILL {i}")
    t.join(120)
    assert "error" not in box, box.get("error")
    assert len(box["result"].runs) == 2 * 3
    assert state(server) == before


@pytest.mark.integration
def test_what_cannot_be_restored_is_said_with_the_statements(server, before, capsys):
    from logbench.base.errors import SettingError

    sw = own.Switcher(own.Server(spec(server)), restore_timeout=1.0)
    with pytest.raises(SettingError, match="not restored.*long_query_time"):
        with sw:
            sw.apply({"long_query_time": "0"})
            conn_id = sw.session.conn.thread_id()

            def refuse():
                raise pymysql.err.OperationalError(2003, "the test refuses to reconnect")

            sw.session.connect = refuse
            server.query(f"KILL {conn_id}")
    err = capsys.readouterr().err
    assert "could NOT restore" in err and "SET GLOBAL long_query_time = 2.000000;" in err
    server.query("SET GLOBAL long_query_time = 2.000000")
    assert state(server) == before


@pytest.mark.integration
def test_notebook_on_a_handed_server_keeps_the_password_out(server, before, tmp_path):
    import subprocess
    import sys

    import nbformat
    import papermill

    from logbench.base import paths

    out = tmp_path / "out"
    executed = tmp_path / "13_own_mariadb.out.ipynb"
    papermill.execute_notebook(str(paths.NOTEBOOKS / "13_own_mariadb.ipynb"), str(executed), progress_bar=False,
                               parameters={"profile": "smoke", "server": spec(server), "repeats": 1, "confirm": True,
                                           "arms": ["none", "slow_table"], "output_dir": str(out)},
                               cwd=str(tmp_path))
    r = subprocess.run([sys.executable, "-m", "logbench.publish.answer", "--html", str(executed)], capture_output=True,
                       text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Logging on your own MariaDB/MySQL" in r.stdout and "A/A ratio" in r.stdout
    text = "".join(str(c.get("outputs", "")) for c in nbformat.read(executed, as_version=4).cells)
    assert "slow_table" in text and "records read: file" in text
    # every section has something to show on this run: the cost model priced slow_table's rows
    assert "## The cost model beside it" in text and "predicted, CPU-bound" in text
    assert "cores: the server's (its process ran on this host)" in text
    assert executed.with_suffix(".html").exists()
    assert files_holding(tmp_path, PASSWORD) == []
    assert state(server) == before
