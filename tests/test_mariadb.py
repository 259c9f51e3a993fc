"""A real MariaDB from the machine's binaries (seconds each): settings, records, bad input, no orphans."""

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from logbench.base import paths
from logbench.base.errors import ParameterError, ServerStartError, SettingError
from logbench.servers import mariadb as mdb
from logbench.servers.process import is_root
from logbench.base.settings import Settings, mariadb_catalog, validate_mariadb
from logbench.studies import mysql_slowlog as study_mod

BINARY = mdb.find_mariadbd()


def mariadbd_processes(marker: str | Path = "logbench-mariadb-") -> list[str]:
    marker = str(marker)
    out = []
    for p in psutil.process_iter(["cmdline", "status"]):
        try:
            cmd = " ".join(p.info["cmdline"] or [])
            if p.info["status"] != psutil.STATUS_ZOMBIE and "mariadbd" in cmd and marker in cmd:
                out.append(cmd)
        except psutil.NoSuchProcess:
            pass
    return out


def leftovers(scratch: Path) -> list[str]:
    """Anything a server or study left in this test's private scratch root, and any server still running from it."""
    return sorted(p.name for p in scratch.iterdir()) + mariadbd_processes(scratch)


@pytest.fixture
def scratch(monkeypatch):
    """A private scratch root for this test's servers: other test sessions may run servers at the same time."""
    import shutil
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="logbench-test-scratch-", dir="/var/tmp"))
    os.chmod(d, 0o755)  # the unprivileged server user must be able to enter it
    monkeypatch.setattr(paths, "scratch_root", lambda: d)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def log_dir():
    """A log directory the unprivileged server user can reach (pytest's own temp root is 0700)."""
    import shutil
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="logbench-test-log-", dir="/var/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


# -- settings, without a server ---------------------------------------------------------------------

def test_catalog_knows_the_slow_log_variables_and_their_kinds():
    cat = mariadb_catalog(str(BINARY))
    assert cat["slow_query_log"].kind == "bool"
    assert cat["long_query_time"].kind == "number"
    assert cat["log_output"].combination and set(cat["log_output"].choices) == {"NONE", "FILE", "TABLE"}
    assert "O_DIRECT" in cat["innodb_flush_method"].choices


@pytest.mark.parametrize("values, message", [
    ({"slow_query_logg": 1}, "did you mean slow_query_log"),
    ({"long_query_time": "fast"}, "allowed: a number"),
    ({"slow_query_log": "maybe"}, "allowed: ON or OFF"),
    ({"log_output": "FILE,SYSLOG"}, "combination of NONE, FILE, TABLE"),
    ({"innodb_flush_method": "O_FAST"}, "allowed: fsync"),
    ({"socket": "/tmp/x.sock"}, "managed by logbench"),
    ({"bind_address": "0.0.0.0"}, "managed by logbench"),
])
def test_validation_names_what_is_wrong_and_what_is_allowed(values, message):
    with pytest.raises(SettingError, match=message):
        validate_mariadb(Settings.of("mariadb", values), BINARY)


def test_validation_accepts_dashes_sizes_and_postgres_settings_are_refused():
    validate_mariadb(Settings.of("mariadb", {"log-output": "TABLE,FILE", "innodb_buffer_pool_size": "1G",
                                             "slow_query_log": True, "long_query_time": 0.5}), BINARY)
    with pytest.raises(SettingError, match="engine"):
        validate_mariadb(Settings.of("postgresql", {"log_statement": "all"}), BINARY)


def test_literals_and_value_comparison():
    assert mdb.sql_literal("0") == "0" and mdb.sql_literal("1G") == str(2**30)
    assert mdb.sql_literal("/dev/null") == "'/dev/null'" and mdb.sql_literal("it's") == "'it\\'s'"
    assert mdb.same_value("on", "ON") and mdb.same_value("1", "ON") and not mdb.same_value("off", "ON")
    assert mdb.same_value("0", "0.000000") and mdb.same_value("128M", "134217728")
    assert mdb.same_value("TABLE", "table") and not mdb.same_value("/a/B", "/a/b")


def test_mysql8_command_line_switches_off_x_protocol_and_binlog(tmp_path):
    m = mdb.LocalMariaDB(Settings.of("mariadb", {"long_query_time": 1}), log_dir=tmp_path / "log")
    m.workdir = tmp_path
    m.flavor = "mysql"
    argv = m.command(m.base)
    assert "--mysqlx=OFF" in argv and "--skip-log-bin" in argv and "--skip-networking" in argv
    assert argv[1] == "--no-defaults" and "--long-query-time=1" in argv
    m.flavor = "mariadb"
    assert "--mysqlx=OFF" not in m.command(m.base)
    m.workdir = None


@pytest.mark.parametrize("kwargs, parameter, allowed", [
    ({"profile": "quick"}, "profile", "'smoke', 'standard', 'full'"),
    ({"configurations": ["slow_all", "slow_everything"]}, "configurations", "'slow_all_devnull'"),
    ({"configurations": "[slow_all"}, "configurations", "a non-empty list"),
    ({"cells": ["cpu/tpcc"]}, "cells", "'cpu/oltp_read_write'"),
    ({"clients": "[1, 0]"}, "clients", "whole numbers > 0"),
    ({"repeats": 0}, "repeats", "> 0"),
    ({"duration": 1.5}, "duration", "whole number"),
    ({"sample_rate": 1}, "sample_rate", ">= 2"),
    ({"buffer_pool_cpu": "lots"}, "buffer_pool_cpu", "a size in bytes"),
    ({"profile": "standard", "buffer_pool_cpu": "16M"}, "buffer_pool_cpu", "at least 1.25 x the data"),
    ({"profile": "standard", "buffer_pool_io": "512M"}, "buffer_pool_io", "at most a quarter"),
    # the io regime's pacing: a read cap needs the memory limit, the limit a local server with room for itself
    ({"read_iops": 100}, "read_iops", "None without memory_limit_mb"),
    ({"memory_limit_mb": 256, "read_iops": -3}, "read_iops", "a whole number > 0"),
    ({"memory_limit_mb": "lots"}, "memory_limit_mb", "a whole number > 0"),
    ({"memory_limit_mb": 256, "backend": "container"}, "memory_limit_mb", "None with the container backend"),
    ({"memory_limit_mb": 256}, "memory_limit_mb", "set backend to 'local'"),  # 'auto' may resolve to a container
    ({"memory_limit_mb": 40, "backend": "local", "cells": ["io/oltp_read_write"]}, "memory_limit_mb",
     "at least buffer_pool_io (8M) + 48 MB"),
])
def test_bad_parameters_fail_before_any_server_starts(kwargs, parameter, allowed, scratch):
    with pytest.raises(ParameterError) as e:
        study_mod.define(**{"profile": "smoke", **kwargs})
    assert e.value.parameter == parameter and allowed in str(e.value)
    assert leftovers(scratch) == []


def test_a_profiles_pacing_is_dropped_with_its_reason_where_it_cannot_hold():
    """The standard profile paces its io regime; on a container backend it runs unpaced and says why (the claims'
    pace requirement then refuses a verdict), while the cpu-only cells have nothing to pace."""
    st = study_mod.define(profile="standard", backend="container", output_dir="/tmp/unused")
    assert st.memory_limit_mb is None and "container" in st.pacing_off
    st = study_mod.define(profile="standard", backend="local", cells=["cpu/oltp_read_write"], output_dir="/tmp/unused")
    assert st.memory_limit_mb is None and st.read_iops is None and st.pacing_off == ""
    assert study_mod.PROFILES["standard"]["memory_limit_mb"] and study_mod.PROFILES["standard"]["read_iops"]


def test_a_run_says_from_its_own_counters_whether_it_was_io_bound():
    pool0 = {"Innodb_buffer_pool_read_requests": 1000, "Innodb_buffer_pool_reads": 10}
    pool1 = {"Innodb_buffer_pool_read_requests": 2000, "Innodb_buffer_pool_reads": 310}
    mem0 = {"limit_hits": 0, "file_bytes": 0, "disk_reads": 100}
    mem1 = {"limit_hits": 0, "file_bytes": 0, "disk_reads": 400, "usage_bytes": 90 * 2**20}
    e = study_mod.io_evidence(pool0, pool1, mem0, mem1, 2.0)
    # 300 of 1000 pages missed the pool, and the paced disk served 300 reads (O_DIRECT: no page cache grew)
    assert e["bp_miss_share"] == pytest.approx(0.3) and e["disk_reads_per_s"] == 150 and e["measured_regime"] == "io_bound"
    assert study_mod.io_evidence(pool0, pool1, mem0, {**mem1, "disk_reads": 110}, 2.0)["measured_regime"] == "cached"
    assert study_mod.io_evidence(pool0, pool1, None, None, 2.0)["measured_regime"] == "unverified"  # no cgroup
    few = {**pool1, "Innodb_buffer_pool_reads": 20}
    assert study_mod.io_evidence(pool0, few, None, None, 2.0)["measured_regime"] == "cached"


def test_papermill_strings_are_accepted():
    st = study_mod.define(profile="smoke", clients="[1, 2]", configurations='["slow_all"]',
                          cells='["io/oltp_point_select", "cpu/oltp_read_write"]', output_dir="/tmp/unused")
    assert st.clients == (1, 2)
    assert [c.name for c in st.configurations] == ["off", "slow_all"]  # the baseline is always there
    assert st.cell_names == ("cpu/oltp_read_write", "io/oltp_point_select")  # one restart per regime


def test_expected_records_per_configuration():
    def s(name):
        return study_mod.define(profile="smoke", configurations=[name], output_dir="/tmp/unused").configuration(name).settings

    assert study_mod.expected_statement_records(s("slow_all"), 1000) == 1000
    assert study_mod.expected_statement_records(s("general_log"), 1000) == 1000
    assert study_mod.expected_statement_records(s("slow_all_table"), 1000) == 1000
    assert study_mod.expected_statement_records(s("slow_sampled"), 1000) == 10
    assert study_mod.expected_statement_records(s("slow_1s"), 1000) == 0
    assert study_mod.expected_statement_records(s("off"), 1000) == 0
    # a sampled log's count is approximate: its loss is not defined (NaN in the run record)
    assert not study_mod.loss_defined(s("slow_sampled"))
    assert all(study_mod.loss_defined(s(n)) for n in ("slow_all", "general_log", "slow_all_table", "off"))


def test_slow_log_entries_split_at_headers():
    data = (b"/usr/sbin/mariadbd, Version: 10.11 started with:\nTcp port: 0\nTime\t\tId Command\tArgument\n"
            b"# Time: 261122  6:27:30\n# User@Host: root[root] @ localhost []\n# Query_time: 0.1  Lock_time: 0\n"
            b"SET timestamp=1;\nSELECT 1;\n"
            b"# User@Host: root[root] @ localhost []\n# Query_time: 0.2  Lock_time: 0\nSET timestamp=1;\nSELECT\n2;\n")
    entries = mdb.slow_log_entries(data)
    assert len(entries) == 2 and entries[1].endswith(b"SELECT\n2;\n") and entries[0].startswith(b"# Time:")


# -- a real server ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def server():
    import shutil
    import tempfile

    log_dir = Path(tempfile.mkdtemp(prefix="logbench-test-log-", dir="/var/tmp"))
    try:
        with mdb.LocalMariaDB(Settings.of("mariadb", study_mod.BASE), log_dir=log_dir) as m:
            yield m
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)


@pytest.mark.integration
def test_server_is_private(server):
    v = server.global_variables(["skip_networking", "port", "socket", "datadir"])
    assert v["skip_networking"] == "ON"
    assert v["socket"] == str(server.socket_path)
    assert stat.S_IMODE(os.stat(server.socket_path.parent).st_mode) == 0o700
    assert Path(v["datadir"].rstrip("/")) == server.datadir
    if is_root():
        assert psutil.Process(server.pid).username() != "root"
    assert not any(c.laddr and c.status == psutil.CONN_LISTEN for c in psutil.Process(server.pid).net_connections("inet"))


@pytest.mark.integration
def test_tcp_listens_on_loopback_only(log_dir):
    with mdb.LocalMariaDB(Settings.of("mariadb"), log_dir=log_dir, listen_tcp=True) as m:
        listening = [c.laddr for c in psutil.Process(m.pid).net_connections("inet") if c.status == psutil.CONN_LISTEN]
        assert listening and all(a.ip == "127.0.0.1" for a in listening)
        import pymysql
        with pymysql.connect(**m.tcp_conninfo) as c, c.cursor() as cur:
            cur.execute("SELECT 1")


@pytest.mark.integration
def test_apply_sets_globals_restarts_for_startup_only_and_reverts(server):
    sw = server.apply(Settings.of("mariadb", {"slow_query_log": True, "long_query_time": 0}))
    assert sw.kind == "reload"
    assert server.show(["slow_query_log", "long_query_time"]) == {"slow_query_log": "ON", "long_query_time": "0.000000"}
    pid = server.pid
    sw = server.apply(Settings.of("mariadb", {"slow_query_log": True, "long_query_time": 0,
                                              "slow_query_log_file": "/dev/null"}))
    assert sw.kind == "restart" and sw.pending_restart == ("slow_query_log_file",) and server.pid != pid
    assert server.show(["slow_query_log_file"])["slow_query_log_file"] == "/dev/null"
    # leaving /dev/null needs no restart: a real file can be opened at run time
    sw = server.apply(Settings.of("mariadb", {"general_log": True}))
    assert sw.kind == "reload"
    v = server.show(["slow_query_log", "long_query_time", "slow_query_log_file", "general_log"])
    assert v == {"slow_query_log": "OFF", "long_query_time": "10.000000", "slow_query_log_file": str(server.slow_log),
                 "general_log": "ON"}
    assert server.apply(Settings.of("mariadb", {"general_log": True})).kind == "none"
    sw = server.apply(Settings.of("mariadb", {"innodb_flush_method": "fsync"}))  # read-only variable
    assert sw.kind == "restart" and server.show(["innodb_flush_method"])["innodb_flush_method"] == "fsync"
    # going back to the base needs a restart again: the read-only variable returns to its start value
    assert server.apply(Settings.of("mariadb")).kind == "restart"
    assert server.show(["general_log", "innodb_flush_method"]) == {"general_log": "OFF", "innodb_flush_method": "O_DIRECT"}


@pytest.mark.integration
def test_new_settings_reach_new_sessions_only(server):
    """Why the studies start sysbench after apply(): sessions keep the values they connected with."""
    server.apply(Settings.of("mariadb"))
    old = server.connect(quiet=False)
    server.apply(Settings.of("mariadb", {"slow_query_log": True, "long_query_time": 0}))
    new = server.connect(quiet=False)
    with old.cursor() as a, new.cursor() as b:
        a.execute("SELECT @@session.long_query_time")
        b.execute("SELECT @@session.long_query_time")
        assert (a.fetchone()[0], b.fetchone()[0]) == (10.0, 0.0)
    old.close()
    new.close()
    server.apply(Settings.of("mariadb"))


@pytest.mark.integration
def test_quiet_session_stays_out_of_every_log(server):
    server.apply(Settings.of("mariadb", {"slow_query_log": True, "long_query_time": 0, "general_log": True}))
    c = server.connect()  # quiet
    slow, general = mdb.slow_file_sink(server.slow_log), mdb.general_file_sink(server.general_log)
    marks = slow.mark(), general.mark()
    with c.cursor() as cur:
        for _ in range(20):
            cur.execute("SELECT 'quiet please'")
    c.close()
    assert slow.count_since(marks[0]).records == 0 and general.count_since(marks[1]).records == 0
    server.apply(Settings.of("mariadb"))


@pytest.mark.integration
def test_table_sink_counts_rows(server):
    server.apply(Settings.of("mariadb", {"slow_query_log": True, "long_query_time": 0, "log_output": "TABLE"}))
    sink = mdb.TableSink(server)
    sink.truncate()
    mark = sink.mark()
    c = server.connect(quiet=False)  # its SET NAMES is one more row
    with c.cursor() as cur:
        for i in range(7):
            cur.execute("SELECT %s", (i,))
    c.close()
    got = sink.count_since(mark)
    assert got.records == 8 and got.bytes > 0
    server.apply(Settings.of("mariadb"))


@pytest.mark.integration
def test_every_configuration_logs_where_expected(tmp_path, scratch):
    """Each configuration once under sysbench: the counted sinks get exactly the statements sent."""
    # The local path; tests/test_mariadb_containers.py runs the same under the container backend.
    study = study_mod.define(profile="smoke", repeats=1, clients=[2], cells=["cpu/oltp_read_write"],
                             backend="local", output_dir=tmp_path / "out")
    result = study_mod.run(study, progress=False)
    runs = study_mod.expand(result.runs).set_index("configuration")
    assert set(runs.index) == set(study_mod.CONFIGURATIONS) | {"off_again"}  # with the A/A control
    sent = runs["queries"] + runs["failed"]
    slow_grew = runs["extra"].map(lambda e: e["slow_file_bytes_during_run"])
    for name in ("slow_all", "general_log", "slow_all_table"):
        assert runs.loc[name, "log_records_received"] == runs.loc[name, "log_records_expected"] == sent[name] > 0
    assert runs.loc["slow_all", "log_records_by_destination"] == {"slow_file": sent["slow_all"]}
    # the table and the general log take the records; the slow-log file gets none
    assert slow_grew["general_log"] == slow_grew["slow_all_table"] == slow_grew["off"] == 0
    assert slow_grew["slow_all"] > 0
    # /dev/null: expected recorded, received unknowable, and nothing reached the file
    assert runs.loc["slow_all_devnull", "log_records_expected"] == sent["slow_all_devnull"]
    assert runs.loc["slow_all_devnull", "log_records_received"] != runs.loc["slow_all_devnull", "log_records_received"]
    assert slow_grew["slow_all_devnull"] == 0 and runs.loc["slow_all_devnull", "switch"] == "restart"
    assert runs.loc["slow_1s", "log_records_received"] == 0 and runs.loc["off", "log_records_received"] == 0
    # sampling keeps a statement whose *global* query id is a multiple of 100 when it is logged: a small
    # sample, but its size depends on how the sessions interleave (a CI run at 2 clients kept 204 where
    # sent / 100 was 317), so only that it sampled is asserted, not a binomial scatter around 1 %
    exp, got = runs.loc["slow_sampled", ["log_records_expected", "log_records_received"]]
    assert 0 < got < 10 * exp
    # ... but which ones depends on how the sessions interleave: no loss is computed against it
    assert runs.loc["slow_sampled", "log_loss"] != runs.loc["slow_sampled", "log_loss"]
    assert runs.loc["slow_all", "log_loss"] == 0
    assert leftovers(scratch) == []
    assert (tmp_path / "out" / "runs.jsonl").exists() and (tmp_path / "out" / "schedule.json").exists()


@pytest.mark.integration
def test_unreachable_log_directory_is_refused_before_start(tmp_path, scratch):
    if not is_root():
        pytest.skip("as a normal user the server runs as ourselves and can reach our directories")
    os.chmod(tmp_path, 0o700)
    with pytest.raises(ServerStartError, match="cannot enter"):
        with mdb.LocalMariaDB(Settings.of("mariadb"), log_dir=tmp_path / "sub" / "log"):
            pass
    assert leftovers(scratch) == []


@pytest.mark.integration
def test_failed_start_leaves_nothing_behind(log_dir, scratch):
    # The data directory is initialised with 16k pages; InnoDB refuses to open it with 4k.
    m = mdb.LocalMariaDB(Settings.of("mariadb", {"innodb_page_size": "4k"}), log_dir=log_dir,
                         start_timeout=30)
    with pytest.raises(ServerStartError, match="error log"):
        with m:
            pass
    assert m.workdir is None and m.proc is None
    assert leftovers(scratch) == []


@pytest.mark.integration
def test_interrupt_inside_the_server_block_stops_and_removes_it(log_dir, scratch):
    with pytest.raises(KeyboardInterrupt):
        with mdb.LocalMariaDB(Settings.of("mariadb"), log_dir=log_dir) as m:
            pid, wd = m.pid, m.workdir
            raise KeyboardInterrupt
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert not wd.exists() and leftovers(scratch) == []


@pytest.mark.integration
def test_sigterm_mid_study_keeps_finished_runs_and_leaves_no_orphan(tmp_path, scratch):
    out = tmp_path / "out"
    code = textwrap.dedent(f"""
        from pathlib import Path
        from logbench.base import paths
        paths.scratch_root = lambda: Path({str(scratch)!r})
        from logbench.studies import mysql_slowlog as s
        st = s.define(profile="smoke", repeats=20, clients=[1], configurations=["slow_all"],
                      backend="local", output_dir={str(out)!r})
        s.run(st, progress=False)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    runs = out / "runs.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not runs.exists() or len(runs.read_text().splitlines()) < 2):
        time.sleep(0.2)
    assert runs.exists(), proc.stderr.read() if proc.poll() is not None else "no run recorded in time"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0 and "KeyboardInterrupt" in err
    kept = [json.loads(line) for line in runs.read_text().splitlines()]
    assert len(kept) >= 2 and all(r["study"] == "mysql_slowlog" for r in kept)
    time.sleep(0.5)
    assert leftovers(scratch) == []
