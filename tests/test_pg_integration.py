"""A real PostgreSQL (and real rsyslog daemons, a real network namespace), seconds each."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from logbench.base import cleanup, paths, records
from logbench.base.errors import ParameterError, ServerStartError, SettingError
from logbench.servers import netns
from logbench.servers.postgres import LocalPostgres
from logbench.base.settings import Settings
from logbench.studies import pg_destinations as study_mod

from conftest import fail_the_load_tool_at, needs_root

pytestmark = pytest.mark.integration


def our_processes(marker: str) -> list[str]:
    """Live processes whose command line mentions ``marker`` (a temp dir of the study)."""
    out = []
    for p in psutil.process_iter(["cmdline", "status"]):
        try:
            if p.info["status"] != psutil.STATUS_ZOMBIE and marker in " ".join(p.info["cmdline"] or []):
                out.append(" ".join(p.info["cmdline"]))
        except psutil.NoSuchProcess:
            pass
    return out


def logbench_dirs() -> set[str]:
    found = set()
    for root in ("/var/tmp", "/dev/shm", "/tmp"):
        found |= {os.path.join(root, n) for n in os.listdir(root) if n.startswith(("logbench-pg-", "logbench-syslog-", "logbench-log-"))}
    return found


@needs_root
def test_every_destination_delivers_every_record(tmp_path):
    """All destinations, 2 clients: each sink receives exactly the records the runs produced.

    UDP may drop datagrams under load (that is what the study measures), so the remote UDP
    destination must deliver records but is allowed to lose some; all others must match exactly.
    """
    study = study_mod.define(profile="smoke", clients=[2], repeats=1, backend="local", output_dir=tmp_path / "out")
    result = study_mod.run(study, progress=False)
    runs = result.runs.set_index("configuration")
    assert set(runs.index) == set(study_mod.DESTINATIONS) | {"none_again"}  # with the A/A control
    assert runs.loc["none", "log_records_expected"] == 0
    assert runs.loc["none", "log_records_received"] == 0
    for name, (settings, sinks) in study_mod.DESTINATIONS.items():
        if name == "none":
            continue
        r = runs.loc[name]
        assert set(r["log_records_by_destination"]) == set(sinks)
        assert r["log_records_expected"] == (2 * r["transactions"] + 2) * len(sinks)  # prepared: bind+execute, parse/conn
        if name == "remote_syslog_udp":
            assert 0 < r["log_records_received"] <= r["log_records_expected"], name
        else:
            assert r["log_records_received"] == r["log_records_expected"], name
            assert r["log_loss"] == 0.0
        assert r["log_bytes"] > 0 and r["log_lines"] >= r["log_records_received"]
        assert r["tps"] > 0 and r["latency_samples"] > 0
    # Every run went in by reload: no destination needs the collector switched.
    assert set(runs["switch"]) <= {"reload", "none"}
    # The logger CPU by daemon adds up to the logger CPU; the remote host's (a namespace on these cores) works
    # only for the remote destinations, the local daemon for every syslog one.
    for name in ("syslog", "remote_syslog_udp", "remote_syslog_tcp"):
        by = runs.loc[name, "extra"]["logger_cpu_s_by_daemon"]
        assert set(by) == {"local", "remote"} and by["local"] > 0, (name, by)
        assert sum(by.values()) == pytest.approx(runs.loc[name, "logger_cpu_s"], abs=0.02)
    assert runs.loc["remote_syslog_tcp", "extra"]["logger_cpu_s_by_daemon"]["remote"] > 0
    assert (tmp_path / "out" / "runs.jsonl").is_file()
    assert (tmp_path / "out" / "environment.json").is_file()
    assert not netns.leftover_namespaces()


def test_simple_mode_counts_one_record_per_transaction(tmp_path):
    study = study_mod.define(profile="smoke", destinations=["csvlog", "jsonlog", "stderr"], clients=[1],
                             repeats=1, query_mode="simple", backend="local", output_dir=tmp_path)
    runs = study_mod.run(study, progress=False).runs
    logged = runs[~runs.configuration.isin(["none", "none_again"])]
    assert (logged.log_records_expected == logged.transactions).all()
    assert (logged.log_records_received == logged.log_records_expected).all()


def test_reload_when_enough_restart_when_required(log_dir):
    base = Settings.of("postgresql", study_mod.BASE)
    with LocalPostgres(base, log_dir=log_dir) as pg:
        pid = pg.pid
        sw = pg.apply(Settings.of("postgresql", {"log_min_duration_statement": 0}))
        assert sw.kind == "reload" and pg.pid == pid
        assert pg.show(["log_min_duration_statement"]) == {"log_min_duration_statement": "0"}
        # logging_collector is a postmaster setting: PostgreSQL reports pending_restart, we restart.
        sw = pg.apply(Settings.of("postgresql", {"logging_collector": False}))
        assert sw.kind == "restart" and sw.pending_restart == ("logging_collector",) and pg.pid != pid
        assert pg.show(["logging_collector", "log_min_duration_statement"]) == {
            "logging_collector": "off", "log_min_duration_statement": "-1"}  # the previous configuration is gone
        assert pg.apply(Settings.of("postgresql", {"logging_collector": False})).kind == "none"
        workdir = pg.workdir
    assert not workdir.exists()


def test_server_listens_only_on_a_private_socket(log_dir):
    with LocalPostgres(Settings.of("postgresql", study_mod.BASE), log_dir=log_dir) as pg:
        assert pg.show(["listen_addresses"]) == {"listen_addresses": ""}
        assert oct(pg.socket_dir.stat().st_mode & 0o777) == "0o700"
        conns = [c for c in psutil.Process(pg.pid).net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
        assert conns == []
        if os.geteuid() == 0:
            assert psutil.Process(pg.pid).username() != "root"


def test_server_that_cannot_start_shows_its_log(log_dir):
    base = Settings.of("postgresql", {**study_mod.BASE, "shared_buffers": "100TB"})
    before = logbench_dirs()
    with pytest.raises(ServerStartError, match="(?s)did not accept connections.*invalid value for parameter \"shared_buffers\""):
        with LocalPostgres(base, log_dir=log_dir):
            pass
    assert logbench_dirs() == before


@pytest.mark.parametrize(
    "kwargs, parameter, allowed",
    [
        ({"destinations": ["csvlog", "kafka"]}, "destinations", "'remote_syslog_udp'"),
        ({"destinations": []}, "destinations", "non-empty list"),
        ({"clients": []}, "clients", "non-empty list"),
        ({"clients": "[0, 4]"}, "clients", "> 0"),
        ({"clients": "four"}, "clients", "whole numbers"),
        ({"duration": 0}, "duration", "> 0"),
        ({"duration": -3}, "duration", "> 0"),
        ({"repeats": 0}, "repeats", "> 0"),
        ({"query_mode": "extended"}, "query_mode", "'simple', 'prepared'"),
        ({"profile": "quick"}, "profile", "'smoke', 'standard', 'full'"),
        ({"log_dir_on": "ramdisk"}, "log_dir_on", "'disk', 'tmpfs'"),
        ({"backend": "kubernetes"}, "backend", "'local'"),
        ({"sampling_rate": 2}, "sampling_rate", "(0, 1]"),
        ({"idle_state": "on"}, "idle_state", "'hold', 'free'"),
        ({"placement": "pinned"}, "placement", "'none', 'split'"),
        ({"target_halfwidth": 2, "max_repeats": 5}, "target_halfwidth", "(0, 1)"),
        ({"repeats": 3, "max_repeats": 2}, "max_repeats", ">= repeats (3)"),
        # the baseline alone compares nothing (its notebook failed half-way on an empty comparison)
        ({"destinations": ["none"]}, "destinations", "at least one destination besides 'none', of: 'stderr'"),
    ],
)
def test_bad_input_names_parameter_and_allowed_values(kwargs, parameter, allowed):
    before = logbench_dirs()
    with pytest.raises(ParameterError) as e:
        study_mod.define(profile=kwargs.pop("profile", "smoke"), **kwargs)
    assert e.value.parameter == parameter
    assert repr(parameter) in str(e.value) and allowed in str(e.value)
    assert logbench_dirs() == before  # raised before anything started


def test_unknown_setting_is_refused_before_a_server_starts():
    before = logbench_dirs()
    with pytest.raises(SettingError, match="does not know the setting.*'log_min_durration_statement'.*allowed"):
        study_mod.define(profile="smoke", extra_settings={"log_min_durration_statement": 0})
    with pytest.raises(ParameterError, match="'extra_settings'"):
        study_mod.define(profile="smoke", extra_settings="[1, 2]")
    assert logbench_dirs() == before


@needs_root
def test_failure_mid_study_stops_everything_and_keeps_recorded_runs(tmp_path, monkeypatch):
    """The load tool fails on the 4th run: the 3 finished runs stay, nothing is left running or on disk."""
    fail_the_load_tool_at(monkeypatch, 4)
    before = logbench_dirs()
    study = study_mod.define(profile="smoke", destinations=["syslog", "remote_syslog_tcp", "csvlog"],
                             clients=[1], repeats=1, backend="local", output_dir=tmp_path / "out")
    with pytest.raises(RuntimeError, match="injected"):
        study_mod.run(study, progress=False)
    assert len(records.load(tmp_path / "out" / "runs.jsonl")) == 3
    assert logbench_dirs() == before
    assert not netns.leftover_namespaces()
    assert our_processes("logbench-pg-") == [] and our_processes("logbench-syslog-") == []


@needs_root
def test_unreachable_log_directory_is_refused_with_a_reason(tmp_path):
    with pytest.raises(SettingError, match="not reachable by the server's user"):
        with LocalPostgres(Settings.of("postgresql", study_mod.BASE), log_dir=tmp_path / "log"):
            pass


@needs_root
def test_interrupt_stops_everything_and_keeps_recorded_runs(tmp_path):
    """SIGINT (Ctrl-C) in the middle of a study run in a real Python process."""
    out = tmp_path / "out"
    script = textwrap.dedent(f"""
        from logbench.studies import pg_destinations as s
        st = s.define(profile="smoke", destinations=["syslog", "remote_syslog_udp", "stderr"], clients=[1],
                      repeats=20, backend="local", output_dir={str(out)!r})
        s.run(st, progress=False)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True)
    runs = out / "runs.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not runs.exists() or len(runs.read_text().splitlines()) < 2):
        time.sleep(0.2)
    assert runs.exists(), "no run was recorded in time"
    # Only this study's directories (their owner file names its process): other work may run on the machine.
    mine = [d for d in logbench_dirs() | {str(p) for p in paths.scratch_root().glob(cleanup.NETNS_PREFIX + "*")}
            if (cleanup.read_owner(Path(d)) or {}).get("pid") == proc.pid]
    assert len(mine) >= 4, mine  # log, pg, syslog directories and the namespace's record
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0 and "KeyboardInterrupt" in err
    kept = records.load(runs)
    assert 2 <= len(kept) < 4 * 20
    assert [d for d in mine if os.path.exists(d)] == []
    assert [p for d in mine for p in our_processes(d)] == []


@needs_root
def test_rate_limited_syslog_drops_records_and_says_so(tmp_path):
    """With the old distributions' imuxsock limit (200 messages / 5 s per process) most records are dropped,
    visibly; the log host's network input takes what the local daemon forwards (rsyslog's imudp has no limit by
    default): one run's backend gets the same burst through, whichever way it goes. A warm-up second before each
    run: a limit on the log host's input as a whole was spent there, and the run's remote records were 0."""
    study = study_mod.define(profile="smoke", destinations=["syslog", "remote_syslog_udp"], clients=[1], repeats=1,
                             warmup=1, syslog_rate_limit=True, backend="local", output_dir=tmp_path)
    result = study_mod.run(study, progress=False)
    runs = result.runs[~result.runs["warmup"].astype(bool)].set_index("configuration")
    r = runs.loc["syslog"]
    assert r["log_records_expected"] > 1000
    assert 0 < r["log_records_received"] <= 200
    assert r["log_loss"] > 0.5
    remote = runs.loc["remote_syslog_udp"]
    assert remote["log_records_received"] == r["log_records_received"]
    # the environment record says so, where the claims about rate-limited syslog read it
    import json

    assert json.loads((tmp_path / "environment.json").read_text())["syslog_rate_limit"] is True


def test_log_directory_on_tmpfs(tmp_path):
    study = study_mod.define(profile="smoke", destinations=["csvlog"], clients=[1], repeats=1,
                             log_dir_on="tmpfs", backend="local", output_dir=tmp_path)
    runs = study_mod.run(study, progress=False).runs
    assert set(runs["log_dir_fs"]) == {"tmpfs"}
    logged = runs[runs.configuration == "csvlog"].iloc[0]
    assert logged["log_records_received"] == logged["log_records_expected"] > 0


def test_a_pgbench_run_reads_only_its_own_transaction_log(log_dir, tmp_path):
    """A study stopped mid-run (Ctrl-C) and resumed runs the same position again with the same log prefix:
    the interrupted pgbench's half-written log is removed when it is stopped, and one left by a study killed
    outright is not read as the new run's (CI failure of 2026-11-24: 'invalid column index 2 at row 687')."""
    import threading

    from logbench.workloads.pgbench import Pgbench

    with LocalPostgres(Settings.of("postgresql", study_mod.BASE), log_dir=log_dir) as pg:
        bench = Pgbench(pg.binary("pgbench"), pg.conninfo)
        bench.initialise(1)
        prefix = tmp_path / "txlog" / "run0003"
        prefix.parent.mkdir()
        # interrupted: the exception reaches run() while pgbench is writing its log
        threading.Timer(1.5, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        with pytest.raises(KeyboardInterrupt):
            bench.run(2, 5, "prepared", log_prefix=prefix, sampling_rate=1.0)
        assert list(prefix.parent.iterdir()) == []
        # killed outright: a truncated last line under another pid's name
        (prefix.parent / "run0003.4194000").write_text("0 1 87 0 1764000000 1\n0 2\n")
        r = bench.run(2, 2, "prepared", log_prefix=prefix, sampling_rate=1.0)
        assert r.latency_samples == r.transactions > 0
        assert list(prefix.parent.iterdir()) == []
