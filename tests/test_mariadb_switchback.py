"""Study 04 on the switchback design: MariaDB's logs switched by SET GLOBAL inside one sysbench load.

The server's own behaviour the design rests on is asserted first (which variables an open session takes at
once), then a short real switchback study, then a server killed in the middle of a load.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import psutil
import pymysql
import pytest

from conftest import study_process, wait_for_records
from logbench.base import cleanup, paths
from logbench.measure import switchwindows
from logbench.measure.benches.mariadb import BASE
from logbench.base.errors import ParameterError
from logbench.servers import mariadb as mdb
from logbench.base.settings import Settings
from logbench.studies import mysql_slowlog as m

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

SMALL = dict(backend="local", cells=["cpu/oltp_point_select"], tables=1, table_size=5000, buffer_pool_cpu="64M",
             window_s=2, guard_s=1, warmup=1, restart_warmup=0, target_halfwidth=None)


def _slow_entries(server) -> int:
    return server.slow_log.read_bytes().count(mdb.SLOW_RECORD_MARKER) if server.slow_log.exists() else 0


def test_what_an_open_session_takes_at_once(tmp_path):
    """The module's premises, on the real server: general_log and slow_query_log switch open sessions, the
    latter only where the session connected with it on; long_query_time and log_slow_rate_limit do not reach
    an open session."""
    log_dir = cleanup.private_dir("logbench-log-", paths.scratch_root())  # reachable by the server's user
    with mdb.LocalMariaDB(Settings.of("mariadb", BASE), log_dir=log_dir) as srv:
        def one(conn, sql="SELECT 1"):
            before = _slow_entries(srv)
            conn.cursor().execute(sql)
            time.sleep(0.1)  # the entry is written after the answer
            return _slow_entries(srv) - before

        early = pymysql.connect(**srv.conninfo, autocommit=True)  # connected with the slow log off, lqt 10
        srv.query("SET GLOBAL long_query_time = 0")
        srv.query("SET GLOBAL slow_query_log = 1")
        assert one(early) == 0, "an open session keeps its own slow_query_log / long_query_time"
        connected = _slow_entries(srv)
        late = pymysql.connect(**srv.conninfo, autocommit=True)
        # pymysql sends SET NAMES as it connects (connections.py: set_character_set), which this session logs, after
        # its answer: on a loaded machine the entry landed inside the next window, which counted 2 (CI, 2026-11-29,
        # the fresh-machine container beside the host's tests). Wait for it, so a window holds its own statement.
        deadline = time.monotonic() + 10
        while _slow_entries(srv) < connected + 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _slow_entries(srv) == connected + 1, "a session that connected with the slow log on logs at once"
        assert one(late) == 1
        srv.query("SET GLOBAL slow_query_log = 0")
        assert one(late) == 0, "the global flag switches an open session that connected with it on"
        srv.query("SET GLOBAL slow_query_log = 1")
        assert one(late) == 1
        srv.query("SET GLOBAL log_slow_rate_limit = 100")
        assert sum(one(late) for _ in range(20)) == 20, "log_slow_rate_limit is the session's copy"
        srv.query("SET GLOBAL log_slow_rate_limit = 1")
        srv.query("SET GLOBAL general_log = 1")
        n0 = srv.general_log.read_bytes().count(mdb.GENERAL_RECORD_MARKER)
        early.cursor().execute("SELECT 2")
        time.sleep(0.1)
        assert srv.general_log.read_bytes().count(mdb.GENERAL_RECORD_MARKER) == n0 + 1
        early.close()
        late.close()
    shutil.rmtree(log_dir, ignore_errors=True)


@pytest.mark.parametrize("configurations, named", [
    (["off", "slow_1s", "slow_all"], "long_query_time"),
    (["off", "slow_all", "slow_sampled"], "log_slow_rate_limit"),
    (["off", "slow_all", "slow_all_devnull"], "slow_query_log_file"),
    (["off", "slow_all_table"], "log_output"),
])
def test_arms_a_running_session_cannot_take_are_refused_before_anything_starts(tmp_path, configurations, named):
    with pytest.raises(ParameterError) as e:
        m.define("switchback", configurations=configurations, output_dir=tmp_path / "o", **SMALL)
    assert e.value.parameter == "design" and named in str(e.value) and "'blocks'" in str(e.value)
    assert not (tmp_path / "o").exists()


def test_the_1s_threshold_runs_on_one_load_at_long_query_time_1_and_an_unused_log_counts_nothing(tmp_path):
    """resolution_1s (post 001's 1 s claim on the switchback design): off and slow_1s share a load, which connects at
    long_query_time = 1; the general log, which no arm turns on, is never made and its windows count 0 lines of it
    (its first committed attempt, 2026-11-29, failed opening the file that was not there)."""
    from logbench.measure.benches import mariadb_switchback as ms

    study = m.define("resolution_1s", output_dir=tmp_path / "o", **SMALL)
    assert [c.name for c in study.configurations] == ["off", "slow_1s"]
    assert ms.load_settings(study.configurations, Settings.of("mariadb", BASE)) == {"long_query_time": "1"}
    slow = tmp_path / "slow.log"
    slow.write_bytes(b"# Time: 1\nSELECT 1;\n")
    sinks = {"slow_file": type("S", (), {"path": slow, "records": ()})(),
             "general_file": type("S", (), {"path": tmp_path / "general.log", "records": ()})()}
    edge = type("E", (), {"at_switch": {"files": {"slow_file": 0, "general_file": 0}},
                          "at_guard": {"files": {"slow_file": 0, "general_file": 0}},
                          "at_end": {"files": {"slow_file": slow.stat().st_size, "general_file": 0}}})()
    cfg = type("C", (), {"records": ()})()
    got = ms.logged(sinks, cfg, ["slow_file"], edge)
    assert got.foreign == {"general_file": 0} and got.lines == 2 and got.in_guard == 0


def test_the_devnull_arm_runs_on_a_server_started_with_its_file_and_switches_the_slow_log_alone(tmp_path):
    """resolution_devnull (post 001's /dev/null claim on the switchback design): SET GLOBAL refuses /dev/null as a
    log file, so every load's server starts with it (the study's base) and no switch names it; the arms that write
    the slow log under two names are refused (the parametrized case above)."""
    from logbench.measure.benches import mariadb_switchback as ms

    study = m.define("resolution_devnull", output_dir=tmp_path / "o", **SMALL)
    assert [c.name for c in study.configurations] == ["off", "slow_all_devnull"]
    assert ms.start_settings(study.configurations) == {"slow_query_log_file": "/dev/null"}
    assert study.base_for("cpu").as_dict()["slow_query_log_file"] == "/dev/null"
    blocks = m.define("standard", output_dir=tmp_path / "b", backend="local")
    assert "slow_query_log_file" not in blocks.base_for("cpu").as_dict(), "the block design restarts per arm"
    server = type("S", (), {"initial": {"slow_query_log": "OFF", "long_query_time": "10.000000"}})()
    control = ms.Control(server, {"long_query_time": "0"})
    control.names = ["slow_query_log"]
    devnull = study.bench_configuration("slow_all_devnull").settings
    assert control.desired(devnull) == {"slow_query_log": "on", "long_query_time": "0"}


def test_a_window_not_longer_than_its_guard_is_refused(tmp_path):
    with pytest.raises(ParameterError) as e:
        m.define("switchback", output_dir=tmp_path / "o", **{**SMALL, "guard_s": 2})
    assert e.value.parameter == "window_s"


def test_a_williams_layout_its_arms_do_not_fit_is_refused_naming_blocks(tmp_path):
    with pytest.raises(ParameterError) as e:
        m.define("switchback", output_dir=tmp_path / "o", layout="williams", blocks=1, **SMALL)
    assert e.value.parameter == "blocks" and "'williams'" in str(e.value)
    assert not (tmp_path / "o").exists()


@pytest.mark.long_load
def test_real_switchback_study(tmp_path):
    """Two loads of two blocks on a real server: every window recorded with its switch, the records of each
    window counted against sysbench's statements, the estimator's table per cell, the carryover tables."""
    st = m.define("switchback", clients=[2], blocks=2, loads=2, max_loads=2, output_dir=tmp_path / "o", **SMALL)
    result = m.run(st, progress=False)
    runs = result.runs
    arms = [c.name for c in st.planned_configurations]
    assert len(runs) == 2 * 2 * len(arms)
    assert (runs["switch"] == "reload").all() and (runs["switch_s"] < 1).all()
    # the cell's declared load (spec.LOADS) ran as the one continuous load, named as every committed window names it
    assert set(runs["workload"]) == {m.spec.LOADS["oltp_point_select"].label} == {"sysbench oltp_point_select"}
    extra = runs["extra"]
    assert extra.map(lambda e: e["design"] == "switchback" and e["cell"] == 0 and e["load_settings"] ==
                     {"long_query_time": "0"}).all()
    logged = runs[runs["log_records_expected"] > 0]
    assert set(logged["configuration"]) == {"slow_all", "general_log"}
    # records by the files' sizes at the window edges: within 2 % in every window the estimator measures (a late
    # one, whose switch or guard's sync(2) ran into its measured seconds, is recorded and never measured)
    logged = switchwindows.in_time(logged)
    assert set(logged["configuration"]) == {"slow_all", "general_log"}, "no logging arm had a window in time"
    loss = (logged["log_records_expected"] - logged["log_records_received"]) / logged["log_records_expected"]
    assert loss.abs().max() < 0.02, logged[["configuration", "log_records_expected", "log_records_received"]]
    quiet = runs[runs["log_records_expected"] == 0]
    assert (quiet["log_records_received"] == 0).all()
    s = m.summary(runs)
    assert set(s["configuration"]) == set(arms) and (s["n"] == 4).all()
    assert s["ratio_method"].dropna().str.contains("loads").all(), s["ratio_method"]
    tables = m.processed_tables(result)
    assert len(tables["switches"]) == len(arms) and len(tables["pilot"]) == 1
    assert tables["pilot"]["cell"].tolist() == ["cpu/oltp_point_select"]


@pytest.mark.long_load
def test_the_server_killed_mid_load_fails_the_study_and_keeps_the_finished_windows(tmp_path):
    """SIGKILL to mariadbd inside the second load: the study stops with an error naming sysbench or the server,
    the first load's windows stay as they were recorded, and no process or directory of the study is left."""
    out = tmp_path / "o"
    # one block a load (8 s of windows): the kill and what stays are asserted, not the estimates
    proc = study_process(f"""
        from logbench.studies import mysql_slowlog as m
        st = m.define("switchback", clients=[2], blocks=1, loads=2, max_loads=2, output_dir={str(out)!r},
                      **{SMALL!r})
        m.run(st, progress=False)
    """)
    runs_file = out / "runs.jsonl"
    try:
        wait_for_records(proc, runs_file, 300)
        first = runs_file.read_text()
        time.sleep(6)  # inside the second load (its restart, lead-in 1 s, then a block of the 4 arms in 2 s windows)
        mine = [p for p in psutil.Process(proc.pid).children(recursive=True)]
        servers = [p for p in mine if "mariadbd" in " ".join(p.cmdline())]
        assert servers, [p.cmdline() for p in mine]
        dirs = {a.split("=", 1)[1] for p in servers for a in p.cmdline() if a.startswith("--datadir=")}
        servers[0].kill()
        text = proc.communicate(timeout=180)[0].decode(errors="replace")
        assert proc.returncode != 0
        assert "sysbench" in text or "server" in text.lower() or "MySQL" in text, text[-3000:]
        assert runs_file.read_text().startswith(first), "recorded windows are never rewritten"
        # (the cleanup watchdog outlives its study by design: it removes what a killed study leaves)
        left = [p for p in mine if p.is_running() and p.status() != psutil.STATUS_ZOMBIE
                and "logbench.base.cleanup" not in " ".join(p.cmdline())]
        assert not left, [p.cmdline() for p in left]
        assert not [d for d in dirs if Path(d).exists()], dirs
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
