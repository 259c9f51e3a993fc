"""Study 11 (record_cost) across versions (issue 38's version part): one counted start of PostgreSQL 13 in its
bullseye container (the image's valgrind around the server, pids read in the container's namespace), bad versions
refused before anything starts, and the version differences computed by hand."""

from __future__ import annotations

import json
import shutil
import signal
import time

import pandas as pd
import pytest

from conftest import needs_root, processes_naming, study_process, wait_for_lines
from logbench.base import cleanup, paths
from logbench.measure.benches.postgres import statement_records
from logbench.base.errors import ParameterError
from logbench.servers import containers
from logbench.studies import record_cost as rc
from logbench.publish.paper import counted
from logbench.studies.record_cost import analysis, pg, report


def test_an_unknown_version_is_refused_naming_the_allowed_ones():
    for bad in (["14"], ["13", "13"], ["10.6"], "16", ["10.5", "10.5"]):
        with pytest.raises(ParameterError) as e:
            rc.define(profile="smoke", versions=bad)
        assert e.value.parameter == "versions"
        assert "PostgreSQL '13', '15', '17'" in str(e.value) and "MariaDB '10.5', '10.11', '11.8'" in str(e.value)
        assert "servers.tsv" in str(e.value)


def test_no_versions_is_this_machines_server_only_and_a_sweep_interleaves_its_versions():
    assert rc.define(profile="smoke").versions == ()
    s = rc.define(profile="versions", repeats=2)
    assert s.versions == ("13", "15", "17", "10.5", "10.11", "11.8")
    assert s.mariadb_configurations == ("none", "slow_file", "slow_table", "general_file")
    plan = pd.DataFrame(rc.plan(s))
    assert set(zip(plan.engine, plan.version)) == {("postgresql", v) for v in ("13", "15", "17")} | {
        ("mariadb", v) for v in ("10.5", "10.11", "11.8")}
    pg, mdb = plan[plan.engine == "postgresql"], plan[plan.engine == "mariadb"]
    per_repeat = pg.groupby("repeat").apply(lambda g: len(set(zip(g.version, g.configuration, g.transactions,
                                                                  g.counter))))
    assert (per_repeat == 3 * len(s.configurations) * 2 * 2).all()
    # MariaDB: one callgrind start of both sizes (no size named) and a strace start of each size, per version
    assert (mdb.groupby("repeat").size() == 3 * 4 * (1 + 2)).all()
    assert mdb[mdb.counter == "cachegrind"]["transactions"].isna().all()
    assert plan[plan.repeat == 0]["version"].head(6).nunique() > 1  # not one version after the other
    with pytest.raises(ParameterError) as e:
        rc.define(profile="versions", configurations=["syslog"])
    assert e.value.parameter == "configurations"
    # MariaDB's versions only: PostgreSQL runs this machine's server, where syslog is wired (as root)
    only = rc.define(profile="smoke", versions=["11.8"], mariadb_configurations=["slow_file"])
    assert rc.study.servers(only) == ("local",) and rc.study.servers(only, "mariadb") == ("11.8",)
    assert only.mariadb_configurations == ("none", "slow_file")


def test_a_mariadb_version_refuses_what_it_cannot_run_before_anything_starts():
    # this machine's mariadbd beside a version's: each version runs its image's
    with pytest.raises(ParameterError) as e:
        rc.define(profile="smoke", versions=["10.5"], mariadb_configurations=["slow_file"],
                  mariadbd="/usr/sbin/mariadbd")
    assert e.value.parameter == "mariadbd" and "image" in str(e.value)
    # PostgreSQL's syslog destinations with a PostgreSQL version among MariaDB's: refused as before
    with pytest.raises(ParameterError) as e:
        rc.define(profile="smoke", versions=["10.5", "17"], configurations=["syslog"],
                  mariadb_configurations=["slow_file"])
    assert e.value.parameter == "configurations"
    with pytest.raises(ParameterError) as e:
        rc.define(profile="versions", mariadb_configurations=["syslog"])
    assert e.value.parameter == "mariadb_configurations"


def test_version_differences_are_paired_by_repeat_and_name_the_builds():
    rows = []
    for server, per in (("13 (bullseye container)", 3000.0), ("15 (bookworm container)", 2500.0)):
        for r, noise in enumerate((0.0, 10.0, -10.0)):
            rows.append({"engine": "postgresql", "server": server, "configuration": "stderr", "baseline": "none",
                         "counter": "cachegrind", "process": "backend", "metric": "instructions", "call": "",
                         "repeat": r, "per_statement": 0.0, "per_record": per + noise})
    d = analysis.version_differences(pd.DataFrame(rows), {"13 (bullseye container)": "A build",
                                                          "15 (bookworm container)": "B build"})
    r = d.iloc[0]
    assert (r["a"], r["b"]) == ("13 (bullseye container)", "15 (bookworm container)")
    assert r["difference"] == pytest.approx(-500) and r["difference_low"] == pytest.approx(-500)  # noise paired
    assert r["n"] == 3 and r["ratio"] == pytest.approx(2500 / 3000)
    assert "B build − A build" in r["builds"] and "not the source alone" in r["builds"]
    assert analysis.version_pairs(["17 (x)", "13 (x)", "15 (x)"]) == [("13 (x)", "15 (x)"), ("15 (x)", "17 (x)"),
                                                                     ("13 (x)", "17 (x)")]


def test_each_engines_versions_are_compared_among_themselves_with_their_own_roles():
    rows = []
    cells = (("postgresql", "15 (bookworm container)", "none", "backend", 100.0),
             ("postgresql", "17 (trixie container)", "none", "backend", 90.0),
             ("mariadb", "10.5 (bullseye container)", "none", "connection", 50000.0),
             ("mariadb", "11.8 (trixie container)", "none", "connection", 60000.0),
             ("mariadb", "10.5 (bullseye container)", "slow_file", "connection", 2000.0),
             ("mariadb", "11.8 (trixie container)", "slow_file", "connection", 2500.0),
             ("mariadb", "10.5 (bullseye container)", "slow_file", "process", 2100.0),
             ("mariadb", "11.8 (trixie container)", "slow_file", "process", 2600.0),
             # a baseline's whole server is not compared: its other threads do what they do whatever is logged
             ("mariadb", "10.5 (bullseye container)", "none", "process", 51000.0),
             ("mariadb", "11.8 (trixie container)", "none", "process", 61000.0))
    for engine, server, conf, role, value in cells:
        for r in range(2):
            rows.append({"engine": engine, "server": server, "configuration": conf, "baseline": "none",
                         "counter": "callgrind" if engine == "mariadb" else "cachegrind", "process": role,
                         "metric": "instructions", "call": "", "repeat": r, "per_statement": value,
                         "per_record": value})
    builds = {s: rc.study.build_of(s, e) for e, s, *_ in cells}
    assert builds["11.8 (trixie container)"] == "Debian's 1:11.8.9+ds-0+deb13u1 (trixie)"
    d = analysis.version_differences(pd.DataFrame(rows), builds)
    got = {(r.engine, r.configuration, r.process): (r.a, r.b, r.difference) for r in d.itertuples()}
    assert got == {("postgresql", "none", "backend"): ("15 (bookworm container)", "17 (trixie container)", -10.0),
                   ("mariadb", "none", "connection"): ("10.5 (bullseye container)", "11.8 (trixie container)",
                                                       10000.0),
                   ("mariadb", "slow_file", "connection"): ("10.5 (bullseye container)", "11.8 (trixie container)",
                                                            500.0),
                   ("mariadb", "slow_file", "process"): ("10.5 (bullseye container)", "11.8 (trixie container)",
                                                         500.0)}
    assert all("1:10.5.29-0+deb11u1" in b for b in d[d.engine == "mariadb"]["builds"])
    table = report.between_versions_table(d)
    assert list(table["engine"]) == list(d["engine"]) and "mariadbd (every thread)" in set(table["process"])
    # a between-versions file from before MariaDB's versions: PostgreSQL's alone
    assert set(report.between_versions_table(d[d.engine == "postgresql"].drop(columns="engine"))["engine"]) == {
        "postgresql"}
    assert counted.version_servers(d) == ("PostgreSQL 15 (bookworm) and 17 (trixie) and MariaDB 10.5 (bullseye) "
                                          "and 11.8 (trixie)")
    figures = pd.DataFrame(rows).query("repeat == 0").assign(n=2, per_statement_low=0.0, per_statement_high=0.0,
                                                             per_record_low=0.0, per_record_high=0.0)
    wide = report.per_version_table(figures)
    assert list(wide.columns[:4]) == ["engine", "configuration", "process", "figure"]
    assert wide.loc[wide.engine == "mariadb", "15 (bookworm container)"].eq("—").all()


@pytest.mark.integration
@needs_root  # the container's processes are read through /proc as root
@pytest.mark.usefixtures("docker_engine")
@pytest.mark.timeout(600)
def test_one_counted_start_in_the_postgresql_13_container():
    before = containers.leftovers()["containers"]
    work = cleanup.private_dir("logbench-test-")
    work.chmod(0o755)
    try:
        prepared = pg.prepare_container(work, version="13", scale=1, base=rc.study._pg_settings("none"))
        assert prepared.version.startswith("13.") and prepared.server == "13 (bullseye container)"
        settings = rc.study._pg_settings("stderr")
        got = {c: pg.count_start(prepared, settings, statement_records(settings, "prepared"), protocol="prepared",
                                 transactions=50, counter=c, syslog=False, remote=False, work=work)
               for c in ("cachegrind", "strace")}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    inst = {c.process: c.value for c in got["cachegrind"].counts if c.metric == "instructions"}
    assert inst["backend"] > 1e6 and inst["logger"] > 1e4 and inst["postmaster"] > 0
    # every statement's bind and execute records, counted in the log the container wrote on the host
    assert got["cachegrind"].records >= 100 and got["strace"].records >= 100
    writes = {(c.process, c.call): c.value for c in got["strace"].counts if c.metric == "syscalls"}
    assert writes[("backend", "write")] >= 100 and writes[("logger", "write")] >= 1
    assert containers.leftovers()["containers"] == before  # every counted container removed


def _stopped_leaving_nothing(proc, containers_before: list[str], workdir_prefix: str) -> None:
    """SIGTERM to a study's process: it exits with an error, and leaves no container (besides ``containers_before``),
    no work directory of the study's and none of its counted servers' (``workdir_prefix``)."""
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=90)
    assert proc.returncode != 0
    assert containers.leftovers()["containers"] == containers_before
    assert not list(paths.scratch_root().glob("logbench-record-cost-*"))
    assert not list(paths.scratch_root().glob(f"{workdir_prefix}*"))


@pytest.mark.integration
@needs_root
@pytest.mark.usefixtures("docker_engine")
@pytest.mark.timeout(300)
def test_sigterm_during_a_version_sweep_leaves_no_container_and_keeps_the_counted_starts(tmp_path):
    before = containers.leftovers()["containers"]
    out = tmp_path / "run"
    proc = study_process(f"""
        from logbench.studies import record_cost as rc
        rc.run(rc.define(profile="versions", configurations=["none", "stderr"], mariadb_configurations=[],
                         versions=["13", "17"], repeats=3, transactions=[50, 250], counters=["cachegrind"],
                         output_dir={str(out)!r}), progress=False)
    """)
    raw = out / "starts.jsonl"
    wait_for_lines(proc, raw, 180)
    time.sleep(1.5)  # into the next start: its container running
    _stopped_leaving_nothing(proc, before, "logbench-pgc-")
    kept = [json.loads(line) for line in raw.read_text().splitlines()]
    assert kept and {r["server"] for r in kept} <= {"13 (bullseye container)", "17 (trixie container)"}


@pytest.mark.integration
@needs_root  # the container's processes and threads are read through /proc as root
@pytest.mark.usefixtures("docker_engine")
@pytest.mark.timeout(300)
def test_a_mariadb_version_counts_a_slow_log_record_in_its_container_and_sigterm_leaves_nothing(tmp_path):
    """MariaDB 11.8 (trixie's build) in its container, the study's own path: the baseline and the slow log under
    callgrind (both loads in one start, callgrind_control run in the container), repeat 0 counted in full; a
    SIGTERM in repeat 1 stops it, and no container, process or work directory is left."""
    before = containers.leftovers()["containers"]
    out = tmp_path / "run"
    proc = study_process(f"""
        from logbench.studies import record_cost as rc
        rc.run(rc.define(profile="versions", configurations=[], mariadb_configurations=["none", "slow_file"],
                         versions=["11.8"], repeats=3, transactions=[20, 60], counters=["cachegrind"],
                         output_dir={str(out)!r}), progress=False)
    """)
    raw = out / "starts.jsonl"
    deadline = time.monotonic() + 240
    while not (raw.exists() and len({json.loads(x)["start"] for x in raw.read_text().splitlines()}) >= 2):
        assert proc.poll() is None, proc.stdout.read().decode(errors="replace")[-3000:]
        assert time.monotonic() < deadline, "repeat 0 not counted within 240 s"
        time.sleep(0.2)
    time.sleep(1.5)  # into repeat 1's first start: its container running
    _stopped_leaving_nothing(proc, before, "logbench-mdbc-")
    assert processes_naming("mariadbd", str(paths.scratch_root())) == []
    tables = rc.load(out)
    assert set(tables["starts"]["server"]) == {"11.8 (trixie container)"}
    slow = tables["figures"]
    slow = slow[(slow["configuration"] == "slow_file") & (slow["process"] == "connection")
                & (slow["metric"] == "instructions")].iloc[0]
    assert slow["records_per_statement"] == 1 and slow["counter"] == "callgrind"
    assert slow["per_record"] > 0
