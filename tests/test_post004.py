"""Post 004's three experiments: WAL by wal_level, log_statement = all per sink, sessions held open (real servers)."""

import psycopg
import pytest

from logbench.base.errors import ParameterError
from logbench.servers import process
from logbench.servers.postgres import LocalPostgres
from logbench.base.settings import Settings
from logbench.studies import common
from logbench.studies import pg_destinations, pg_idle_connections, pg_wal_level
from logbench.measure.benches.postgres import imports, wal
from logbench.studies.pg_wal_level import spec as pg_wal
from logbench.workloads import sessions as pg_sessions
from logbench.workloads.pgbench import Pgbench
from logbench.workloads.workload import Import

from conftest import needs_root


def server(log_dir, **settings) -> LocalPostgres:
    return LocalPostgres(Settings.of("postgresql", {**pg_wal.WAL_BASE, **settings}), log_dir=log_dir)


# -- bad input: before any server starts ---------------------------------------------------------------------

@pytest.mark.parametrize("build, parameter", [
    (lambda: pg_wal_level.define(profile="smoke", levels=["minimal", "hot_standby"]), "levels"),
    (lambda: pg_wal_level.define(profile="smoke", transactions=0), "transactions"),
    (lambda: pg_wal_level.define(profile="smoke", transactions=-5), "transactions"),
    (lambda: pg_idle_connections.define(profile="smoke", sessions=10_000), "sessions"),
    (lambda: pg_idle_connections.define(profile="smoke", max_connections=[2]), "max_connections"),
    (lambda: pg_idle_connections.define(profile="smoke", kinds=["busy"]), "kinds"),
    (lambda: pg_destinations.define(profile="smoke", backend="local", statement_logging="log_all"),
     "statement_logging"),
    (lambda: pg_wal_level.define(profile="post004"), "profile"),
    (lambda: pg_wal_level.define(profile="smoke", import_scale=0), "import_scale"),
])
def test_bad_input_names_the_parameter(build, parameter):
    with pytest.raises(ParameterError) as e:
        build()
    assert e.value.parameter == parameter


def test_a_named_profile_has_its_own_stem():
    assert common.stem("pg_destinations", "standard") == "pg_destinations"
    study = pg_destinations.define(profile="post004", backend="local")
    assert study.name == "pg_destinations_post004" and "pg_destinations_post004" in str(study.output_dir)
    assert {c.name for c in study.configurations} == {"none", "stderr", "syslog"}
    assert all(c.settings.get("log_statement") == "all" and "log_min_duration_statement" not in c.settings
               for c in study.configurations if c.name != "none")
    assert dict(pg_destinations.SPEC.extra_committed[0])["profile"] == "post004"
    # the default keeps post 000's mechanism
    std = pg_destinations.define(profile="standard", backend="local")
    assert std.name == "pg_destinations" and std.query_mode == "prepared"
    assert all(c.settings.get("log_min_duration_statement") == "0" for c in std.configurations if c.name != "none")


def test_the_import_runs_at_its_own_scale_the_posts_in_the_committed_profile():
    """The import's WAL ratio is a function of the scale (minimal's hardly grows): the standard profile imports at
    the post's 100 while its OLTP dataset stays at 20; an explicit import_scale wins."""
    std = pg_wal_level.define(profile="standard")
    assert (std.import_scale, std.scale) == (100, 20)
    assert pg_wal_level.define(profile="smoke", import_scale=3).import_scale == 3
    assert pg_wal_level.design_summary(std)["import scale"] == 100


# -- WAL -----------------------------------------------------------------------------------------------------


@pytest.mark.integration
def test_wal_bytes_grow_with_a_known_insert(log_dir):
    rows, pad = 5_000, 200
    with server(log_dir) as pg:
        with pg.connect() as c:
            c.execute("CREATE TABLE known (id int, pad text)")
        before = wal.counters(pg)
        with pg.connect() as c:
            c.execute("INSERT INTO known SELECT i, repeat('x', %s) FROM generate_series(1, %s) i", [pad, rows])
        grew = wal.counters(pg).minus(before)
    # every heap tuple is in the WAL (replica, a table not created in this transaction): at least its payload
    assert grew["wal_records"] >= rows
    assert grew["wal_lsn_bytes"] >= rows * pad
    assert grew["wal_bytes"] >= rows * pad


@pytest.mark.integration
def test_minimal_takes_the_skip_path_on_import(log_dir):
    got = {}
    for level in ("minimal", "replica"):
        with server(log_dir, **pg_wal.WAL_LEVELS[level]) as pg:
            got[level] = imports.import_steps(pg, Import(scale=1, fillfactor=70, generate="g"))
    assert got["minimal"]["wal_skipped"] and not got["replica"]["wal_skipped"]
    # the data itself (~19 MB at scale 1, fillfactor 70) is in replica's WAL, not in minimal's
    assert got["replica"]["gen_wal_lsn_bytes"] > 0.5 * got["replica"]["data_bytes"]
    assert got["minimal"]["gen_wal_lsn_bytes"] < wal.SKIP_FRACTION * got["replica"]["gen_wal_lsn_bytes"]
    # the position after the import holds initdb's WAL too: beyond the import's own bytes on a fresh instance
    for level in got:
        assert got[level]["wal_position_end"] > got[level]["wal_lsn_bytes"] > 0


# -- sessions held open --------------------------------------------------------------------------------------

def backends(pg, want: int) -> int:
    """Other client backends, once they number ``want`` or 10 s passed (pgbench's backends exit after it returns)."""
    def count() -> int:
        with pg.connect() as c:
            return int(c.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'")
                       .fetchone()[0]) - 1
    process.wait_until(lambda: count() == want, timeout=10.0)
    return count()


@pytest.mark.integration
@pytest.mark.parametrize("kind, state", [("sleep", "active"), ("idle", "idle")])
def test_sessions_are_open_during_a_run_and_gone_after_even_after_a_failure(log_dir, kind, state):
    n = 25
    with server(log_dir, max_connections=40) as pg:
        bench = Pgbench(pg.binary("pgbench"), pg.conninfo)
        bench.initialise(1)
        with pg_sessions.SessionPool(pg, n, kind) as pool:
            assert pool.settled(n) == (n, n)
            r = bench.run(2, 1, "prepared")
            assert r.transactions > 0 and pool.count(state) == n
        assert pool.count() == 0 and backends(pg, 0) == 0
        with pytest.raises(RuntimeError, match="mid-run"):
            with pg_sessions.SessionPool(pg, n, kind) as pool:
                assert backends(pg, n) == n
                raise RuntimeError("mid-run")
        assert pool.count() == 0 and backends(pg, 0) == 0
        # the slots are free again: as many new connections as the sessions held
        conns = [psycopg.connect(**pg.conninfo) for _ in range(n)]
        for c in conns:
            c.close()


# -- log_statement = all: exact record counts per sink --------------------------------------------------------

@needs_root
@pytest.mark.integration
@pytest.mark.parametrize("query_mode", ["simple", "prepared"])
def test_log_statement_all_record_counts_are_exact(tmp_path, query_mode):
    study = pg_destinations.define(profile="smoke", backend="local", statement_logging="log_statement_all",
                                   destinations=["none", "stderr", "csvlog"], query_mode=query_mode, clients=[2],
                                   repeats=1, aa_control=False, output_dir=tmp_path / "out")
    runs = pg_destinations.run(study, progress=False).runs
    logged = runs[runs["configuration"] != "none"]
    assert len(logged) == 2
    # one "statement:" (simple) or "execute <name>:" (prepared) record per transaction, none lost or extra
    assert (logged["log_records_expected"] == logged["transactions"]).all()
    assert (logged["log_records_received"] == logged["log_records_expected"]).all()


@pytest.mark.integration
def test_a_restart_setting_set_at_its_running_value_settles_by_restart(log_dir):
    # max_connections = 100 is the default: a reload neither moves its source nor flags a pending restart
    with server(log_dir) as pg:
        sw = pg.apply(Settings.of("postgresql", {"max_connections": 100}))
        assert sw.kind == "restart" and pg.effective(pg.applied) == {"max_connections": None}
        assert pg.apply(Settings.of("postgresql", {"max_connections": 100, "log_min_duration_statement": 0})).kind \
            == "reload"


def test_idle_connection_slopes_count_the_aa_runs_and_give_each_block_its_intercept():
    """A block that ran slow as a whole is not a trend across max_connections, and the A/A runs are runs of the
    baseline's max_connections, counted with it (pg_idle_connections.slopes)."""
    import pandas as pd

    rows = []
    wiggle = {"max100": 3.0, "max100_again": -3.0, "max300": 2.0, "max600": -2.0}
    for block, speed in ((0, 1.0), (1, 0.7), (2, 1.0)):
        for name, w in wiggle.items():
            rows.append({"configuration": name, "clients": 2, "repeat": block, "warmup": False,
                         "tps": 1000.0 * speed + w * (block + 1),
                         "extra": {"sessions": 0, "server_pss_mb": 30.0 + w, "server_uss_mb": 20.0}})
    slopes = pg_idle_connections.slopes(pd.DataFrame(rows))
    none = slopes[slopes["kind"] == "none"].iloc[0]
    assert none["n"] == 12
    assert none["ci_low"] <= 0 <= none["ci_high"], none
    # the slow block is its own intercept, not noise: the interval is a few tps per 100 wide, not hundreds
    assert none["ci_high"] - none["ci_low"] < 20, none
