"""A MariaDB study's load as a value (issue 39): a sysbench ``Workload`` (a bundled test or a Lua script, its options,
plain-text statements counted by sysbench), declared by studies 04, 06, 09 and 13 and dispatched by the shared
sysbench bench. Every command line the committed runs recorded is rebuilt from the declared load, so no recorded or
processed number changes."""

import json

import pandas as pd
import pytest

from logbench.base import paths
from logbench.base.errors import ParameterError, ToolError
from logbench.workloads import sysbench as sb
from logbench.workloads.workload import SYSBENCH_TESTS, Workload


def test_a_bundled_test_and_a_script():
    rw = Workload.sysbench("oltp_read_write")
    assert (rw.tool, rw.label, rw.ps_mode, rw.statements, rw.script_args(), rw.options) == (
        "sysbench", "sysbench oltp_read_write", "disable", 20, ["oltp_read_write"], ())
    assert rw.records(transactions=10, clients=4) == 200  # one record per plain-text statement
    assert Workload.sysbench().label == "sysbench oltp_point_select"
    assert Workload.sysbench("oltp_point_select", "prepared").ps_mode == "auto"
    assert sb.STATEMENTS_PER_TRANSACTION == SYSBENCH_TESTS and sb.TESTS == tuple(SYSBENCH_TESTS)


def test_a_lua_script_with_its_options(tmp_path):
    script = tmp_path / "app.lua"
    script.write_text("function event() end\n")
    own = Workload.sysbench(str(script), options=("--orders=5", "--skip-trx"))
    assert (own.label, own.statements, own.options) == ("sysbench app.lua", 0, ("--orders=5", "--skip-trx"))
    with pytest.raises(ValueError):
        own.records(transactions=1, clients=1)  # sysbench counts a script's statements, not we
    tool = sb.Sysbench({"unix_socket": "/x", "user": "root"}, tables=1, table_size=10)
    argv = tool.command(own, "run", threads=2, seconds=3, seed=7)
    assert argv[1] == str(script) and argv.index("--orders=5") == argv.index("--table-size=10") + 1
    assert argv[argv.index("--skip-trx") + 1] == "--threads=2"


@pytest.mark.parametrize("kwargs, field", [
    (dict(test="oltp_read_write", protocol="disable"), "workload.protocol"),
    (dict(test="tpcc"), "workload.script"),
    (dict(test="oltp_read_write", statements=19), "workload.statements"),
    (dict(test="oltp_read_write", options="--x=1"), "workload.options"),
    (dict(test="oltp_read_write", options=("x=1",)), "workload.options"),
])
def test_bad_fields_name_themselves(kwargs, field):
    with pytest.raises(ParameterError) as e:
        Workload.sysbench(**kwargs)
    assert e.value.parameter == field


def test_the_tool_takes_a_name_or_the_declared_load_alike():
    tool = sb.Sysbench({"unix_socket": "/x", "user": "root"}, tables=2, table_size=100)
    for test in SYSBENCH_TESTS:
        for action in ("prepare", "run"):
            assert tool.command(Workload.sysbench(test), action, threads=4, seconds=5, report_interval=1, seed=3) \
                == tool.command(test, action, threads=4, seconds=5, report_interval=1, seed=3)
    with pytest.raises(ToolError, match="no sysbench load"):
        tool.command(Workload.pgbench("select-only"), "run")


def _conninfo(args: list[str]) -> dict:
    opt = {a.split("=", 1)[0]: a.split("=", 1)[1] for a in args if a.startswith("--mysql-")}
    info = {"user": opt["--mysql-user"]}
    if "--mysql-socket" in opt:
        info["unix_socket"] = opt["--mysql-socket"]
    else:
        info.update(host=opt["--mysql-host"], port=int(opt["--mysql-port"]))
    if "--mysql-password" in opt:
        info["password"] = opt["--mysql-password"]
    return info


def _rebuilt(command: str, load: Workload) -> str:
    """``command`` (a run record's, without the binary) as the shared bench builds it from ``load``."""
    args = command.split()
    opt = {a.split("=", 1)[0]: a.split("=", 1)[1] for a in args if "=" in a}
    tool = sb.Sysbench(_conninfo(args), db=opt["--mysql-db"], tables=int(opt["--tables"]),
                       table_size=int(opt["--table-size"]))
    argv = tool.command(load, "run", threads=int(opt["--threads"]), seconds=int(opt["--time"]),
                        report_interval=int(opt["--report-interval"]), seed=int(opt["--rand-seed"]),
                        percentile=int(opt["--percentile"]))
    return " ".join(argv[1:])


@pytest.mark.parametrize("stem, loads", [
    ("mysql_slowlog", "mysql_slowlog"), ("mysql_slowlog_versions", "mysql_slowlog"), ("log_rotation", "log_rotation")])
def test_every_committed_command_line_is_the_declared_loads(stem, loads):
    """Each block run of 04 (and its version sweep) and of 06: its recorded sysbench command is what the bench
    builds now from the study's declared load (spec.LOADS) for that run's test."""
    from logbench import studies

    declared = studies.module(loads).spec.LOADS
    runs = pd.read_csv(paths.PROCESSED / f"{stem}_runs.csv")
    checked = 0
    for workload, extra in zip(runs["workload"], runs["extra"]):
        command = json.loads(extra).get("command") if isinstance(extra, str) else None
        test = workload.removeprefix("sysbench ")
        if not command or command.endswith("(one continuous load)"):
            continue
        assert declared[test].label == workload
        assert _rebuilt(command, declared[test]) == command
        checked += 1
    assert checked > 0


def test_the_switchback_windows_name_the_declared_load():
    from logbench.studies import mysql_slowlog

    runs = pd.read_csv(paths.PROCESSED / "mysql_slowlog_switchback_runs.csv")
    assert set(runs["workload"]) <= {w.label for w in mysql_slowlog.spec.LOADS.values()}


def test_each_mariadb_study_declares_its_load():
    from logbench.studies import log_rotation, mysql_digest, mysql_slowlog

    study = mysql_slowlog.define(profile="smoke", backend="local")
    assert study.for_cell(0).load == Workload.sysbench(study.workloads[0])
    rotation = log_rotation.define(profile="smoke", backend="local", workload="oltp_read_write")
    assert rotation.load == Workload.sysbench("oltp_read_write")
    assert mysql_digest.spec.LOAD == Workload.sysbench("oltp_read_write")
