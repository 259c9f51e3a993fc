"""A study declares its load; the shared PostgreSQL bench runs it (issue 39: "a Workload ... that the runner
dispatches, so a study declares its load instead of writing a bench").

Study 07 declares an ``Import`` (pgbench -i step by step, a fresh server per run) and a counted TPC-B-like
``Workload``, WAL counted around both; study 08 declares, per configuration, the sessions it holds open
(``Configuration.sessions``). Unit tests: which command each declaration yields (the argv 07's own bench ran, by
hand), and bad declarations named. Integration tests (real servers, seconds): each study's run on the shared bench
keeps every field its committed runs recorded.
"""

import dataclasses
import json
from pathlib import Path

import pandas as pd
import pytest

from logbench.base import paths
from logbench.base.errors import ParameterError
from logbench.base.settings import HeldSessions
from logbench.measure.benches import postgres as pg
from logbench.measure.benches.postgres import load as load_mod
from logbench.studies import pg_idle_connections, pg_wal_level
from logbench.studies.running import engine_halves
from logbench.workloads import sessions
from logbench.workloads.pgbench import Pgbench
from logbench.workloads.workload import Import, Workload

BIN = "/usr/bin/pgbench"
CONN = {"host": "/tmp", "port": 5432, "user": "u", "dbname": "d"}


def tool() -> Pgbench:
    return Pgbench(Path(BIN), CONN)


def test_its_docstring_examples_run():
    import doctest

    assert doctest.testmod(load_mod).failed == 0


# -- which command a declaration yields ---------------------------------------------------------------------

def test_07s_oltp_load_yields_the_command_its_own_bench_ran():
    study = pg_wal_level.define(profile="standard")
    oltp = study.load_of("oltp")
    assert (oltp.wal, oltp.checkpoint_first, dict(oltp.tags)) == (True, True, {"phase": "oltp"})
    w = oltp.workload_for(study.query_mode)
    assert w.label == "pgbench TPC-B-like (-t)"  # the record's workload, as 07's runs named it
    # 07's bench ran ["-n", "-M", "simple", "-c", C, "-j", C, "-t", transactions // C]: 15,000 over 2 clients
    assert tool().command(2, study.duration, "simple", workload=w) == [
        BIN, "-n", "-M", "simple", "-c", "2", "-j", "2", "-t", "7500"]
    # its warm-up: the same script for the warm-up's seconds
    assert tool().command(2, 2, "simple", workload=w.timed()) == [
        BIN, "-n", "-M", "simple", "-c", "2", "-j", "2", "-T", "2"]
    assert Workload.pgbench("tpcb-like", transactions=5).per_client(8) == 1  # at least one each


def test_07s_import_load_yields_pgbench_i_one_step_at_a_time():
    study = pg_wal_level.define(profile="standard")
    imp = study.load_of("import")
    assert imp.fresh and imp.wal and imp.workload == Import(scale=100, fillfactor=70, generate="g")
    # 07's bench ran ["-i", "-q", "-I", letters, "-F", fillfactor, "-s", scale] per step
    assert [Pgbench.init_args(100, fillfactor=70, steps=letters) for _, letters in imp.workload.steps()] == [
        ["-i", "-q", "-I", "dt", "-F", "70", "-s", "100"], ["-i", "-q", "-I", "g", "-F", "70", "-s", "100"],
        ["-i", "-q", "-I", "v", "-F", "70", "-s", "100"], ["-i", "-q", "-I", "p", "-F", "70", "-s", "100"]]
    assert [s for s, _ in Import(1, generate="G").steps()] == ["dt", "gen", "v", "p"]
    assert Import(1, generate="G").steps()[1] == ("gen", "G")
    # every other study's dataset: as before; 07's OLTP dataset at its fillfactor
    assert Pgbench.init_args(10) == ["-i", "-q", "-s", "10"]
    assert study.fillfactor == 70 and Pgbench.init_args(20, fillfactor=70) == ["-i", "-q", "-F", "70", "-s", "20"]


def test_a_study_that_declares_no_load_runs_pgbench_s():
    study = pg_idle_connections.define(profile="smoke")
    assert study.loads == () and study.load_of() == pg.Load()
    assert study.load_of().label(study.query_mode) == "pgbench -S"
    assert tool().command(1, 1, study.query_mode, workload=study.load_of().workload_for(study.query_mode)) == \
        tool().command(1, 1, study.query_mode)


def test_08s_configurations_declare_the_sessions_they_hold():
    study = pg_idle_connections.define(profile="smoke")  # max_connections 10 and 30, clients 1
    held = {c.name: c.sessions for c in study.configurations}
    assert held["max10"] == HeldSessions("none", 0) and held["max30_sleep"] == HeldSessions("sleep", None)
    assert study.sessions_of("max30_sleep", 1) == ("sleep", 30 - 1 - sessions.MARGIN)
    assert study.sessions_of("max10_again", 1) == ("none", 0)  # the A/A control is its baseline's
    assert pg_idle_connections.define(profile="smoke", sessions=3).sessions_of("max30_idle", 1) == ("idle", 3)
    # the declaration is in the study's record; a configuration declaring none keeps its record as it was
    assert study.configuration("max30_sleep").as_dict()["sessions"] == {"kind": "sleep", "count": None}
    assert "sessions" not in pg_wal_level.define(profile="smoke").configurations[0].as_dict()


def test_run_study_takes_a_postgresql_study_s_start_and_execute_from_its_type():
    assert engine_halves(pg_wal_level.define(profile="smoke")) == (pg.start, pg.execute)


# -- bad declarations, named ------------------------------------------------------------------------------

@pytest.mark.parametrize("build, field", [
    (lambda: Workload.pgbench("tpcb-like", transactions=0), "workload.transactions"),
    (lambda: Workload.pgbench("tpcb-like", transactions=True), "workload.transactions"),
    (lambda: Workload.pgbench("tpcb-like", transactions="5"), "workload.transactions"),
    (lambda: Import(scale=0), "import.scale"),
    (lambda: Import(scale=1, fillfactor=5), "import.fillfactor"),
    (lambda: Import(scale=1, generate="x"), "import.generate"),
    (lambda: HeldSessions("busy"), "sessions.kind"),
    (lambda: HeldSessions("idle", -1), "sessions.count"),
    (lambda: pg.Load("pgbench -S"), "load.workload"),
    (lambda: pg.Load(Workload.sysbench("oltp_point_select")), "load.workload"),  # a MariaDB load
    (lambda: pg.Load(Import(1), checkpoint_first=True), "load.checkpoint_first"),
])
def test_a_bad_declaration_names_its_field(build, field):
    with pytest.raises(ParameterError) as e:
        build()
    assert e.value.parameter == field


def test_loads_are_checked_against_the_study_before_anything_starts():
    study = pg_wal_level.define(profile="smoke")
    imp, oltp = study.load_of("import"), study.load_of("oltp")
    cases = [
        (study, {"warmup": oltp}, "loads"),  # no such server
        (study, {"oltp": pg.Load(Workload.pgbench("tpcb-like", "prepared"))}, "query_mode"),
        (study, {"import": imp, "oltp": imp}, "loads"),  # nothing started once: no environment to share
        (dataclasses.replace(study, variants=(("import", "container", None, None), ("oltp", "local", None, None))),
         {"import": imp, "oltp": oltp}, "backend"),
    ]
    for s, loads, parameter in cases:
        with pytest.raises(ParameterError) as e:
            pg.with_loads(s, loads)
        assert e.value.parameter == parameter, loads


# -- real runs on the shared bench keep every field the committed runs recorded ------------------------------

def committed_extra_keys(stem: str, by: str) -> dict[str, set[str]]:
    runs = pd.read_csv(paths.PROCESSED / f"{stem}_runs.csv")
    keys: dict[str, set[str]] = {}
    for group, extra in zip(runs[by], runs["extra"]):
        keys.setdefault(str(group), set()).update(json.loads(extra))
    return keys


def extra_keys(runs: pd.DataFrame, group) -> dict[str, set[str]]:
    keys: dict[str, set[str]] = {}
    for extra in runs["extra"]:
        keys.setdefault(str(group(extra)), set()).update(extra)
    return keys


# What 07's OLTP runs keep now that the shared bench runs them, as every pgbench run of that bench does: its argv,
# pgbench's connection time, the logging collector's CPU and context switches.
OLTP_ADDED = {"command", "initial_connection_ms", "collector_cpu_s", "collector_ctx_voluntary",
              "collector_ctx_involuntary"}


@pytest.mark.integration
def test_07_on_the_shared_bench_keeps_its_records(tmp_path):
    study = pg_wal_level.define(profile="smoke", levels=["minimal", "replica"], aa_control=False,
                                output_dir=tmp_path / "out")
    result = pg_wal_level.run(study, progress=False)
    runs = result.runs
    phase = runs["configuration"].str.partition("/")[0]
    assert sorted(set(zip(phase, runs["workload"]))) == [("import", "pgbench -i (step by step)"),
                                                         ("oltp", "pgbench TPC-B-like (-t)")]
    oltp, imp = runs[phase == "oltp"], runs[phase == "import"]
    assert (oltp["transactions"] == 200).all() and (oltp["switch"] != "fresh").all()  # 200 counted on 1 client
    assert (imp["switch"] == "fresh").all() and (imp["scale"] == 1).all()
    assert oltp["extra"].map(lambda e: e["wal_lsn_bytes_per_tx"] > 0 and e["command"].endswith("-t 200")).all()
    skipped = dict(zip(imp["configuration"], imp["extra"].map(lambda e: e["wal_skipped"])))
    assert skipped == {"import/minimal": True, "import/replica": False}
    now, before = extra_keys(runs, lambda e: e["phase"]), committed_extra_keys("pg_wal_level", "phase")
    assert now["import"] == before["import"]
    assert before["oltp"] <= now["oltp"] and now["oltp"] - before["oltp"] <= OLTP_ADDED
    # one environment record for both phases (one server installation), every field the committed one has
    committed_env = json.loads((paths.PROCESSED / "pg_wal_level_environment.json").read_text())
    assert "variants" not in result.environment and set(committed_env) <= set(result.environment)
    assert result.environment["fillfactor"] == 70


@pytest.mark.integration
def test_08_on_the_shared_bench_holds_its_sessions_and_keeps_its_records(tmp_path):
    study = pg_idle_connections.define(profile="smoke", max_connections=[10, 20], kinds=["sleep", "idle"],
                                       repeats=1, output_dir=tmp_path / "out")
    runs = pg_idle_connections.run(study, progress=False).runs
    assert (runs["workload"] == "pgbench -S").all()
    for name, extra in zip(runs["configuration"], runs["extra"]):
        kind, n = study.sessions_of(name, 1)
        assert (extra["session_kind"], extra["sessions"], extra["sessions_open_before"],
                extra["sessions_open_after_run"], extra["sessions_left_after_close"]) == (kind, n, n, n, 0), name
    assert set(runs["extra"].map(lambda e: e["sessions"])) == {0, 10 - 1 - 2, 20 - 1 - 2}
    now = extra_keys(runs, lambda e: e["session_kind"])
    before = committed_extra_keys("pg_idle_connections", "session_kind")
    assert now == {k: before[k] for k in now}


# -- the switchback design runs the declared load as its continuous load ----------------------------------------

SELECT_ONLY_SCRIPT = "\\set aid random(1, 100000 * :scale)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n"


def switchback_study(tmp_path, **kw):
    from logbench.studies import pg_destinations

    given = dict(profile="standard", design="switchback", destinations=["none", "stderr"], clients=[2], scale=1,
                 backend="local", blocks=2, loads=2, max_loads=2, window_s=2, guard_s=1, warmup=1,
                 output_dir=tmp_path / "out")
    return pg_destinations.define(**{**given, **kw})


def test_a_switchback_study_takes_a_timed_declared_load(tmp_path):
    script = tmp_path / "select.sql"
    script.write_text(SELECT_ONLY_SCRIPT)
    study = switchback_study(tmp_path)
    own = pg.Load(Workload.pgbench(str(script), study.query_mode, statements=1), tags=(("load", "script"),))
    assert pg.with_loads(study, {"": own}).load_of() == own
    tpcb = pg.Load(Workload.pgbench("tpcb-like", study.query_mode))
    assert pg.with_loads(study, {"": tpcb}).load_of().label(study.query_mode) == "pgbench TPC-B-like"


@pytest.mark.parametrize("load, said", [
    (pg.Load(Workload.pgbench("tpcb-like", "simple", transactions=1000)), "counted"),
    (pg.Load(Import(scale=1)), "import"),
    (pg.Load(Workload.pgbench("select-only", "simple"), wal=True), "WAL"),
    (pg.Load(Workload.pgbench("select-only", "simple"), checkpoint_first=True), "checkpoint"),
])
def test_a_switchback_study_refuses_a_load_that_is_not_timed_naming_design(load, said, tmp_path):
    study = switchback_study(tmp_path, query_mode="simple")
    with pytest.raises(ParameterError) as e:
        pg.with_loads(study, {"": load})
    assert e.value.parameter == "design" and said in str(e.value)


def test_a_counted_load_set_by_hand_is_refused_when_the_switchback_study_resolves(tmp_path):
    study = switchback_study(tmp_path, query_mode="simple")
    counted = pg.Load(Workload.pgbench("tpcb-like", "simple", transactions=10))
    with pytest.raises(ParameterError) as e:
        dataclasses.replace(study, loads=(("", counted),)).resolved()  # before any server starts
    assert e.value.parameter == "design"


def test_the_continuous_load_runs_the_declared_script_and_pgbench_s_by_default(tmp_path):
    from logbench.workloads.pgbench import ContinuousLoad

    prefix = tmp_path / "txlog" / "sb"
    tail = ["-l", "--aggregate-interval=1", f"--log-prefix={prefix}"]
    # the argv every committed switchback window's load ran, by hand; the default declared explicitly is the same
    default = [BIN, "-n", "-S", "-M", "prepared", "-c", "4", "-j", "4", "-T", "60", "-P", "1", *tail]
    assert ContinuousLoad(tool(), 4, 60, "prepared", prefix).argv == default
    assert ContinuousLoad(tool(), 4, 60, "prepared", prefix, Workload.pgbench("select-only", "prepared")).argv == \
        default
    script = tmp_path / "select.sql"
    script.write_text(SELECT_ONLY_SCRIPT)
    own = Workload.pgbench(str(script), "simple", statements=1)
    assert ContinuousLoad(tool(), 2, 30, "simple", prefix, own).argv == [
        BIN, "-n", "-f", str(script), "-M", "simple", "-c", "2", "-j", "2", "-T", "30", "-P", "1", *tail]
    with pytest.raises(ParameterError) as e:
        ContinuousLoad(tool(), 2, 30, "simple", prefix, Workload.pgbench("tpcb-like", transactions=100))
    assert e.value.parameter == "workload.transactions"


@pytest.mark.integration
def test_a_switchback_run_of_a_declared_script_load(tmp_path):
    """pgbench -S's own statement as a script file, switched between none and stderr in 2 s windows (one load of 2
    blocks, 2 clients, ~20 s): every window ran the script (its record says so, with the declared load's tags), and
    the stderr windows hold the records its statement leaves. One load: what is asserted is each window's load and
    records, the same in any load (a second load, on a restarted server, is the estimator's, which
    tests/test_switchback.py asserts on a real load)."""
    from logbench.measure import switchwindows
    from logbench.studies import pg_destinations

    script = tmp_path / "select.sql"
    script.write_text(SELECT_ONLY_SCRIPT)
    study = switchback_study(tmp_path, query_mode="simple", loads=1, max_loads=1)
    study = pg.with_loads(study, {"": pg.Load(Workload.pgbench(str(script), "simple", statements=1),
                                              tags=(("load", "script"),))})
    runs = pg_destinations.run(study, progress=False).runs
    every = switchwindows.windows_frame(runs, in_time=False)
    assert len(every) == 1 * 2 * 3
    assert set(runs["workload"]) == {"pgbench -f select.sql (one continuous load)"}
    assert runs["extra"].map(lambda e: e["load"] == "script" and e["design"] == "switchback").all()
    for r in switchwindows.in_time(runs).itertuples():
        assert r.transactions > 0
        if r.configuration == "stderr":
            assert r.log_records_received > 0
            assert abs(r.log_records_received - r.log_records_expected) <= 4 * r.clients
        else:
            assert r.log_records_received == 0
