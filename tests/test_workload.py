"""The Workload value (logbench.workloads.workload; issue 39): a study's load as a value, script or built-in,
protocol, records per transaction counted. The PostgreSQL load tool reads it: with its default (pgbench -S) every
command and every count is what it was before, so no recorded or processed number changes."""

import doctest
from pathlib import Path

import pytest

from logbench.base.errors import ParameterError
from logbench.workloads import pgbench as pgbench_mod
from logbench.workloads import workload as workload_mod
from logbench.workloads.workload import Workload

CONN = {"host": "/tmp", "port": 5432, "user": "u", "dbname": "d"}


def test_its_docstring_example_runs():
    assert doctest.testmod(workload_mod).failed == 0


@pytest.mark.parametrize("mode", ["simple", "prepared"])
def test_the_default_command_is_pgbench_s_as_before(mode, tmp_path):
    tool = pgbench_mod.Pgbench(Path("/usr/bin/pgbench"), CONN)
    # the argv every committed run's records name (extra.command), by hand
    assert tool.command(4, 10.0, mode, progress=1) == [
        "/usr/bin/pgbench", "-n", "-S", "-M", mode, "-c", "4", "-j", "4", "-T", "10", "-P", "1"]
    assert tool.command(4, 10.0, mode, workload=Workload.pgbench("select-only", mode)) == tool.command(4, 10.0, mode)


@pytest.mark.parametrize("mode", ["simple", "prepared"])
@pytest.mark.parametrize("tx, clients", [(0, 1), (1, 1), (1000, 4), (123457, 64)])
def test_select_only_counts_as_the_tool_counted(mode, tx, clients):
    before = {"simple": (1, 0), "prepared": (2, 1)}[mode]  # records per transaction, per connection (pgbench.py)
    assert pgbench_mod.expected_records(mode, tx, clients) == tx * before[0] + clients * before[1]
    assert Workload.pgbench("select-only", mode).label == "pgbench -S"


def test_a_builtin_and_a_script_file(tmp_path):
    tpcb = Workload.pgbench("tpcb-like", "prepared")
    # pgbench's default script: no argument names it (as study 07 ran it); its record name is 07's
    assert (tpcb.label, tpcb.script_args(), tpcb.statements) == ("pgbench TPC-B-like", [], 7)
    update = Workload.pgbench("simple-update")
    assert (update.label, update.script_args()) == ("pgbench -b simple-update", ["-b", "simple-update"])
    assert tpcb.records(transactions=10, clients=2) == 7 * (10 * 2 + 2)
    script = tmp_path / "two.sql"
    script.write_text("SELECT 1;\nSELECT 2;\n")
    own = Workload.pgbench(str(script), "simple", statements=2)
    assert (own.label, own.script_args(), own.records(5, 3)) == ("pgbench -f two.sql", ["-f", str(script)], 10)
    cmd = pgbench_mod.Pgbench(Path("/usr/bin/pgbench"), CONN).command(2, 5, "simple", workload=own)
    assert cmd[:5] == ["/usr/bin/pgbench", "-n", "-f", str(script), "-M"]


@pytest.mark.parametrize("kwargs, field", [
    (dict(script="select-only", protocol="extended"), "workload.protocol"),
    (dict(script="nosuch"), "workload.script"),
    (dict(script="select-only", statements=3), "workload.statements"),
])
def test_bad_fields_name_themselves(kwargs, field):
    with pytest.raises(ParameterError, match=field.replace(".", r"\.")):
        Workload.pgbench(**kwargs)


def test_a_script_file_declares_its_statements(tmp_path):
    script = tmp_path / "s.sql"
    script.write_text("SELECT 1;\n")
    for bad in (None, 0, True, "1"):
        with pytest.raises(ParameterError, match="workload.statements"):
            Workload.pgbench(str(script), statements=bad)


def test_the_run_s_mode_and_the_workload_s_protocol_agree():
    with pytest.raises(ParameterError, match="workload.protocol"):
        pgbench_mod.Pgbench(Path("/usr/bin/pgbench"), CONN).command(1, 1, "simple",
                                                                     workload=Workload.pgbench(protocol="prepared"))
