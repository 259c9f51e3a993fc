"""Study 05 (post 003): its records, its contention evidence and its bad input, on a real server (seconds each)."""

import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from logbench.measure import clock, contention
from logbench.base import paths
from logbench.base.errors import ParameterError
from logbench.servers.postgres import LocalPostgres
from logbench.base.settings import Settings
from logbench.studies import pg_audit_timing as study_mod

from conftest import needs_root, wait_for

PG_TEST_TIMING_15 = """Testing timing overhead for 1 second.
Per loop time including overhead: 34.72 ns
Histogram of timing durations:
  < us   % of total      count
     1     96.65060   27836070
     2      3.34599     963668
     4      0.00120        347
     8      0.00024         68
"""


# perf report --stdio -g none --sort comm,dso,sym --children (perf 6.1), captured once
PERF_REPORT = """# Children      Self  Command   Shared Object         Symbol
# ........  ........  ........  ....................  .........................................
#
    67.09%     0.00%  postgres  libc.so.6             [.] __libc_start_call_main
    13.45%     0.36%  postgres  postgres              [.] errfinish
     7.75%     7.75%  postgres  [kernel.kallsyms]     [k] _raw_spin_unlock_irqrestore
     3.88%     3.88%  pgbench   [kernel.kallsyms]     [k] finish_task_switch.isra.0
"""


@pytest.fixture
def scratch():
    """A directory the server's unprivileged user can reach (pytest's tmp_path is closed to it)."""
    import shutil

    d = Path(tempfile.mkdtemp(prefix="logbench-test-", dir=paths.scratch_root()))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("kwargs, parameter", [
    ({"configurations": ["none", "log_everything"]}, "configurations"),
    ({"clients": [0]}, "clients"),
    ({"clients": [-4, 2]}, "clients"),
    ({"extra_settings": {"log_statment": "all"}}, "extra_settings"),
    ({"wchan_hz": 0}, "wchan_hz"),
])
def test_bad_input_is_refused_before_a_server_starts(kwargs, parameter):
    with pytest.raises(ParameterError) as e:
        study_mod.define(profile="smoke", **kwargs)
    assert e.value.parameter == parameter


@pytest.mark.parametrize("kwargs, parameter", [
    # the direct arm's logging_collector = off needs a restart: a switch inside a running load cannot apply it
    ({"profile": "switchback", "configurations": ["none", study_mod.DIRECT]}, "design"),
    ({"profile": "standard", "design": "switchback", "window_s": 3, "guard_s": 1, "layout": "permutation",
      "blocks": 2, "loads": 2}, "design"),
    ({"profile": "switchback", "configurations": ["none", "log_duration"], "perf_profile": True}, "perf_profile"),
    ({"profile": "switchback", "window_s": 1, "guard_s": 1}, "window_s"),
    ({"profile": "switchback", "layout": "abba"}, "layout"),
])
def test_switchback_input_is_refused_before_a_server_starts(kwargs, parameter):
    with pytest.raises(ParameterError) as e:
        study_mod.define(**{"profile": "smoke", **kwargs})
    assert e.value.parameter == parameter


def test_the_switchback_profile_switches_what_a_reload_applies():
    study = study_mod.define(profile="switchback")
    assert study.switchback is not None and not study.perf_profile
    assert study_mod.DIRECT not in {c.name for c in study.configurations}
    assert study_mod.define(profile="standard").switchback is None


def test_wchan_categories_and_the_clock_parser():
    assert [contention.category(w) for w in ("0", "anon_pipe_write", "pipe_wait", "__mutex_lock.constprop.0",
                                             "rwsem_down_write_slowpath", "do_epoll_wait", "do_nanosleep")] == [
        "running", "pipe", "pipe", "lock", "lock", "client", "other"]
    loop, hist = clock.parse_test_timing(PG_TEST_TIMING_15)
    assert loop == 34.72
    assert hist["below_us"].tolist() == [1, 2, 4, 8] and hist["count"].iloc[0] == 27836070
    # two clock reads per timed block read, at 34.72 ns each: 0.5 blocks per transaction cost 0.03472 µs
    assert clock.predicted_cost_us(0.5, loop) == pytest.approx(0.03472)


def test_perf_report_rows_and_views():
    rows = contention.parse_report(PERF_REPORT, children=True)
    assert [(r["command"], r["symbol"], r["children_pct"], r["self_pct"], r["space"]) for r in rows] == [
        ("postgres", "__libc_start_call_main", 67.09, 0.0, "user"), ("postgres", "errfinish", 13.45, 0.36, "user"),
        ("postgres", "_raw_spin_unlock_irqrestore", 7.75, 7.75, "kernel"),
        ("pgbench", "finish_task_switch.isra.0", 3.88, 3.88, "kernel")]
    assert [r["symbol"] for r in contention.top_symbols(rows, 2)] == ["_raw_spin_unlock_irqrestore",
                                                                      "finish_task_switch.isra.0"]
    assert [r["symbol"] for r in contention.top_symbols(rows, 2, children=True)] == ["__libc_start_call_main",
                                                                                     "errfinish"]


@pytest.mark.integration
@needs_root
def test_every_configuration_writes_exactly_its_records(tmp_path):
    """Each configuration, 2 clients, once: its sink receives exactly the records it declares (none for
    none and track_io_timing alone); the collector-off pair's records are counted in the study's file."""
    study = study_mod.define(profile="smoke", configurations=list(study_mod.CONFIGURATIONS), repeats=1, warmup=0,
                             perf_profile=False, output_dir=tmp_path / "out")
    runs = study_mod.run(study, progress=False).runs.set_index("configuration")
    assert set(runs.index) == set(study_mod.CONFIGURATIONS) | {"none_again"}
    for name, (_, sinks) in study_mod.CONFIGURATIONS.items():
        r = runs.loc[name]
        assert set(r["log_records_by_destination"]) == set(sinks), name
        assert r["log_records_received"] == r["log_records_expected"], name
        # prepared -S at 2 clients: log_statement one "execute" per transaction; log_duration a bare duration per
        # bind and execute, per connection's parse and per pgbench set-up statement (2)
        tx, statement, duration = r["transactions"], "log_statement" in name, "duration" in name
        assert r["log_records_expected"] == statement * tx + duration * (2 * tx + 2 + 2), name
        assert r["extra"]["wchan_samples"] > 0, name
    assert runs.loc[study_mod.DIRECT, "settings"]["logging_collector"] == "off"
    assert runs.loc[study_mod.DIRECT, "log_records_by_destination"]["stderr_direct"] > 0


@pytest.mark.integration
@needs_root
def test_logging_collector_off_writes_to_the_studys_file(scratch):
    log_dir, direct = scratch / "log", scratch / "log" / "direct.log"
    base = Settings.of("postgresql", {"logging_collector": True, "log_destination": "stderr",
                                      "log_filename": "postgresql.log"})
    with LocalPostgres(base, log_dir=log_dir, stderr_file=direct) as server:
        server.apply(Settings.of("postgresql", {"logging_collector": False, "log_statement": "all"}))
        with server.connect() as c:
            c.execute("SELECT 'audit-me-directly'")
        time.sleep(0.2)
        assert "audit-me-directly" in direct.read_text()
        collector_file = log_dir / "postgresql.log"
        assert not collector_file.exists() or "audit-me-directly" not in collector_file.read_text()


def _pipe_waits(server_pid: int) -> int:
    """How many client backends under ``server_pid`` sleep writing into a pipe now."""
    waits = 0
    for pid in contention.server_processes(server_pid)[0]:
        try:
            waits += contention.category(Path(f"/proc/{pid}/wchan").read_text()) == "pipe"
        except OSError:
            pass
    return waits


@pytest.mark.integration
@needs_root
def test_wchan_sampler_sees_backends_blocked_on_a_stopped_collector(scratch):
    """With the logging collector stopped, its pipe fills and every logging backend blocks writing into it."""
    base = Settings.of("postgresql", {"logging_collector": True, "log_destination": "stderr",
                                      "log_filename": "postgresql.log", "log_statement": "all"})
    with LocalPostgres(base, log_dir=scratch / "log") as server:
        _, collector = contention.server_processes(server.pid)
        assert collector is not None
        env = {"PGHOST": str(server.socket_dir), "PGPORT": str(server.port), "PGUSER": "postgres",
               "PGDATABASE": "postgres", "PATH": "/usr/bin:/bin"}
        loop = "DO $$ BEGIN FOR i IN 1..100000000 LOOP RAISE LOG 'fill the pipe %', i; END LOOP; END $$"
        os.kill(collector, signal.SIGSTOP)
        clients = []
        try:
            clients = [subprocess.Popen([str(server.binary("psql")), "-c", loop], env=env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(2)]
            # both clients' backends blocked on the full pipe before the sampling starts, however long a loaded
            # machine takes to start them
            assert wait_for(lambda: _pipe_waits(server.pid) >= 2, 60), "the backends did not block on the pipe"
            with contention.WchanSampler(server.pid, hz=100) as sampler:
                time.sleep(0.5)
        finally:
            os.kill(collector, signal.SIGCONT)
            for p in clients:
                p.kill()
                p.wait()
    got = sampler.result
    assert got.samples >= 50
    assert got.share("pipe") > 0.9, got


@pytest.mark.integration
@pytest.mark.long_load
@needs_root
def test_a_switchback_run_counts_each_windows_records_and_estimates_every_arm(tmp_path):
    """none, log_duration, both with track_io_timing and the A/A control switched by reload inside one load,
    2 clients, 2 blocks, 2 loads of 2 s windows (~1 min; marked long_load): a logging window holds its own arm's
    records (by their timestamps, up to the few that cross an edge), the baseline's none; every arm gets the
    switchback estimator's interval; track_io_timing's cost comes from its ratio, and the contention finding says
    why it has no evidence."""
    from logbench.measure import switchwindows

    study = study_mod.define(profile="switchback", clients=[2], configurations=[
        "none", "log_duration", "log_statement_all_duration_io_timing", "io_timing"], blocks=2, loads=2, max_loads=2,
        window_s=2, scale=1, warmup=1, timing_repeats=1, output_dir=tmp_path / "out")
    result = study_mod.run(study, progress=False)
    w = switchwindows.windows_frame(result.runs)
    assert set(w["arm"]) == {"none", "none_again", "log_duration", "log_statement_all_duration_io_timing",
                             "io_timing"}, w["arm"].value_counts()
    for r in switchwindows.in_time(result.runs).itertuples():
        logging = r.configuration in ("log_duration", "log_statement_all_duration_io_timing")
        if logging:
            # prepared -S: a duration per bind and execute, plus one execute under log_statement = all
            per_tx = 2 + ("statement" in r.configuration)
            assert r.log_records_expected == per_tx * r.transactions
            assert abs(r.log_records_received - r.log_records_expected) <= 4 * per_tx * r.clients, r
        else:
            assert r.log_records_received == 0 and sum(r.extra["foreign_records"].values()) == 0, r
    s = study_mod.summary(result.runs, 2)
    assert set(s["design"]) == {"switchback"}
    arms = s[s["configuration"] != study_mod.BASELINE]
    assert arms["ratio_ci_low"].notna().all() and (arms["ratio_ci_low"] <= arms["ratio"]).all()
    assert (arms["ratio"] <= arms["ratio_ci_high"]).all()
    both = arms[arms["configuration"] == "log_statement_all_duration_io_timing"].iloc[0]
    assert both["ratio"] < 0.9, both.to_dict()  # three records a transaction through the collector cost
    tables = study_mod.processed_tables(result)
    io = tables["io_timing"]
    assert len(io) == 1 and io["ci_low"].iloc[0] <= io["added_us_per_tx"].iloc[0] <= io["ci_high"].iloc[0]
    assert "not counted per switchback window" in study_mod.finding_io_timing(io)
    assert "No contention evidence" in study_mod.finding_contention(s)
    assert len(tables["switches"]) and len(tables["carryover_test"])
