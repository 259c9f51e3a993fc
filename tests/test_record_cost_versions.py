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

from conftest import needs_root, study_process, wait_for_lines
from logbench import cleanup, paths
from logbench.benches.postgres import statement_records
from logbench.errors import ParameterError
from logbench.servers import containers
from logbench.studies import record_cost as rc
from logbench.studies.record_cost import analysis, pg


def test_an_unknown_version_is_refused_naming_the_allowed_ones():
    for bad in (["14"], ["13", "13"], ["10.11"], "16"):
        with pytest.raises(ParameterError) as e:
            rc.define(profile="smoke", versions=bad)
        assert e.value.parameter == "versions"
        assert "'13', '15', '17'" in str(e.value) and "servers.tsv" in str(e.value)


def test_no_versions_is_this_machines_server_only_and_a_sweep_interleaves_its_versions():
    assert rc.define(profile="smoke").versions == ()
    s = rc.define(profile="versions", repeats=2)
    assert s.versions == ("13", "15", "17") and s.mariadb_configurations == ()
    plan = pd.DataFrame(rc.plan(s))
    per_repeat = plan.groupby("repeat").apply(lambda g: len(set(zip(g.version, g.configuration, g.transactions,
                                                                    g.counter))))
    assert (per_repeat == 3 * len(s.configurations) * 2 * 2).all()
    assert plan[plan.repeat == 0]["version"].head(6).nunique() > 1  # not one version after the other
    with pytest.raises(ParameterError) as e:
        rc.define(profile="versions", configurations=["syslog"])
    assert e.value.parameter == "configurations"


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


@pytest.mark.integration
@needs_root
@pytest.mark.usefixtures("docker_engine")
@pytest.mark.timeout(300)
def test_sigterm_during_a_version_sweep_leaves_no_container_and_keeps_the_counted_starts(tmp_path):
    before = containers.leftovers()["containers"]
    out = tmp_path / "run"
    proc = study_process(f"""
        from logbench.studies import record_cost as rc
        rc.run(rc.define(profile="versions", configurations=["none", "stderr"], versions=["13", "17"], repeats=3,
                         transactions=[50, 250], counters=["cachegrind"], output_dir={str(out)!r}), progress=False)
    """)
    raw = out / "starts.jsonl"
    wait_for_lines(proc, raw, 180)
    time.sleep(1.5)  # into the next start: its container running
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=90)
    assert proc.returncode != 0
    assert containers.leftovers()["containers"] == before
    assert not list(paths.scratch_root().glob("logbench-record-cost-*"))
    assert not list(paths.scratch_root().glob("logbench-pgc-*"))
    kept = [json.loads(line) for line in raw.read_text().splitlines()]
    assert kept and {r["server"] for r in kept} <= {"13 (bullseye container)", "17 (trixie container)"}
