"""Study 11 (record_cost): counts that repeat, start-up that cancels, a record that costs more than no record,
bad input refused before anything starts, and an interrupted run that leaves nothing behind (issue 38).

One counted run serves the integration tests (module fixture): the baseline and stderr, two repeats of a small and
a large load under cachegrind and strace (16 starts, ~2 min here), then a calibration of 5 timed loads (~15 s)."""

from __future__ import annotations

import json
import signal
import time

import pandas as pd
import psutil
import pytest

from conftest import needs_root, study_process, wait_for_lines
from logbench.base import cleanup, paths
from logbench.base.errors import ParameterError
from logbench.measure import controls
from logbench.studies import record_cost as rc
from logbench.studies.record_cost import analysis, calibration, pg

SIZES = [200, 1000]
COUNTS_REPEAT = 0.015  # two loads' wait paths apart (below), against wall time's ~10 %


def test_bad_input_is_refused_before_anything_starts():
    for kwargs, name in (({"transactions": [300, 60]}, "transactions"), ({"transactions": [5, 300]}, "transactions"),
                         ({"transactions": [300]}, "transactions"), ({"counters": ["perf"]}, "counters"),
                         ({"configurations": ["stdout"]}, "configurations"), ({"repeats": 0}, "repeats"),
                         ({"backend": "container"}, "backend"),
                         ({"configurations": [], "mariadb_configurations": []}, "configurations")):
        with pytest.raises(ParameterError) as e:
            rc.define(profile="smoke", **kwargs)
        assert e.value.parameter == name, kwargs


def test_every_configuration_brings_its_baseline_and_every_repeat_holds_every_cell_once():
    s = rc.define(profile="smoke", configurations=["stderr_simple", "csvlog"], mariadb_configurations=[],
                  repeats=2, counters=["cachegrind", "strace"])
    assert s.configurations == ("none_simple", "none", "stderr_simple", "csvlog")
    plan = pd.DataFrame(rc.plan(s))
    assert len(plan) == 2 * 4 * 2 * 2
    cells = plan.groupby("repeat").apply(lambda g: len(set(zip(g.configuration, g.transactions, g.counter))))
    assert (cells == 16).all()
    # seeded: the same plan again, another order in the second repeat
    assert rc.plan(s) == rc.plan(s)
    first, second = (plan[plan.repeat == r]["configuration"].tolist() for r in (0, 1))
    assert first != second


def _starts(values: dict, records: dict) -> pd.DataFrame:
    """A hand-made table of starts: {(configuration, transactions, repeat): backend instructions}."""
    rows = []
    for (conf, n, r), v in values.items():
        rows.append({"start": len(rows), "repeat": r, "position": 0, "engine": "postgresql", "configuration": conf,
                     "baseline": "none", "transactions": n, "counter": "cachegrind", "statements": n,
                     "records": records[conf] * n + 1, "log_bytes": 0, "seconds": 1.0, "env_id": "x",
                     "process": "backend", "metric": "instructions", "call": "", "value": v})
    return pd.DataFrame(rows)


def test_per_statement_and_per_record_by_hand():
    # start-up 1,000,000; none 40,000 per statement; stderr 90,000 (2 records per statement: 25,000 each)
    values = {(c, n, r): 1e6 + per * n + r for c, per in (("none", 4e4), ("stderr", 9e4)) for n in (100, 500)
              for r in (0, 1)}
    rep = analysis.per_record(analysis.per_repeat(_starts(values, {"none": 0, "stderr": 2})))
    s = analysis.summary(rep).set_index("configuration")
    assert s.loc["none", "per_statement"] == pytest.approx(4e4)
    assert s.loc["stderr", "per_statement"] == pytest.approx(9e4)
    assert s.loc["stderr", "records_per_statement"] == pytest.approx(2)
    assert s.loc["stderr", "per_record"] == pytest.approx(25000)
    assert s.loc["stderr", "per_statement_spread"] == pytest.approx(0)
    assert pd.isna(s.loc["none", "per_record"])  # no record, no cost per record


@pytest.fixture(scope="module")
def counted(tmp_path_factory):
    out = tmp_path_factory.mktemp("record_cost")
    # the calibration's timed loads: 5 of 2 s, not the smoke profile's 3 of 1 s, so its interval on the time per
    # instruction stays above zero when another suite shares the 2 vCPUs (CI: the fresh-machine container beside the
    # host's tests): the same figure and assertions, on more of the load (~6 s more)
    study = rc.define(profile="smoke", configurations=["none", "stderr"], mariadb_configurations=[], repeats=2,
                      transactions=SIZES, counters=["cachegrind", "strace"], output_dir=out / "run",
                      calibration_repeats=5, calibration_seconds=2)
    return study, rc.run(study, progress=False)


def _fig(t, conf, process="backend", metric="instructions", call=""):
    f = t["figures"]
    return f[(f.configuration == conf) & (f.process == process) & (f.metric == metric) & (f.call == call)].iloc[0]


@pytest.mark.integration
@needs_root
def test_two_starts_count_the_same_and_a_record_costs_more_than_none(counted):
    _, t = counted
    none, stderr = _fig(t, "none"), _fig(t, "stderr")
    # counts repeat between starts, where wall time does not. Not the 0.5 % (report.SPREAD_GOAL): that is
    # a sensitivity target, judged in the committed run with nothing else running. What is left is timing: a
    # statement whose next message has not arrived when the backend reads takes the socket's wait path
    # (WaitEventSetWait, secure_read, recv's EAGAIN, epoll_wait; ~215 instructions, 0.5 % of one), and how many do
    # depends on who is scheduled first. cg_diff of two 1,000-transaction starts, quiet and beside 3 busy loops:
    # 213,968 fewer instructions, all on that path (the 200-transaction starts beside them: 43,600 apart). A
    # difference of two loads can swing by up to twice that; CI saw 0.73 % in the fresh-machine container
    assert none["n"] == 2 and none["per_statement_spread"] <= COUNTS_REPEAT
    assert stderr["per_statement_spread"] <= COUNTS_REPEAT
    assert stderr["records_per_statement"] == 2  # bind and execute, counted in the log
    assert none["records_per_statement"] == 0
    assert stderr["per_record"] > 1000 and stderr["per_record_low"] > 0
    assert _fig(t, "stderr", "logger")["per_record"] > 100  # the collector writes every record
    # one write() to the collector's pipe per record, deterministic
    assert _fig(t, "stderr", "backend", "syscalls", "writes")["per_record"] == pytest.approx(1.0)
    assert _fig(t, "stderr", "logger", "syscalls", "writes")["per_record"] == pytest.approx(1.0, abs=0.02)
    assert _fig(t, "stderr", "backend", "bytes_written")["per_record"] > 100


@pytest.mark.integration
@needs_root
def test_the_run_times_its_calibration_after_its_counts(counted):
    """The write() floor at stderr's counted bytes per record, to a file and into a pipe, and the baseline backend's
    user CPU per transaction over its counted instructions per statement, each with its interval and n; kept raw,
    and published as the study's calibration table."""
    study, t = counted
    cal = t["calibration"]
    floors = cal[cal["part"] == "write_floor"]
    stderr = _fig(t, "stderr")
    assert list(floors["target"]) == ["file", "pipe"]
    # the floor's size is the mean over repeats of each repeat's bytes per record, rounded; the figure's ratio of
    # means can round to the next byte (244.5 either side: seen 244 vs 245)
    size = stderr["log_bytes_per_statement"] / stderr["records_per_statement"]
    assert len(set(floors["nbytes"])) == 1 and abs(floors["nbytes"].iloc[0] - size) <= 1
    assert (floors["n"] == calibration.FLOOR_BATCHES).all()
    assert (0 < floors["ci_low"]).all() and floors["value"].between(floors["ci_low"], floors["ci_high"]).all()
    cpu = cal[cal["part"] == "cpu"].set_index("quantity")
    user, per = cpu.loc["user_cpu_per_transaction"], cpu.loc["time_per_instruction"]
    assert user["n"] == study.calibration_repeats and cpu.loc["cpu_per_transaction", "value"] > user["value"] > 0
    assert per["value"] == pytest.approx(user["value"] / _fig(t, "none")["per_statement"], rel=0.01)
    assert 1e-5 < per["ci_low"] <= per["value"] <= per["ci_high"] < 1e-2  # 0.01 to 10 ns an instruction
    raw = [json.loads(line) for line in (study.output_dir / calibration.RAW).read_text().splitlines()]
    assert len(raw) == 2 + study.calibration_repeats and {r["env_id"] for r in raw} == {t["environment"]["env_id"]}
    assert (study.processed_dir / "record_cost_calibration.csv").exists()
    # the loads ran under the idle-state control the throughput studies use, and say what was in force
    loads = [r for r in raw if r["part"] == "cpu"]
    assert {r["cpuidle_driver"] for r in loads} == {controls.cpuidle_driver()}
    assert all(r["idle_state"] == "hold" or r["idle_state"].startswith("unavailable: ") for r in loads)


@pytest.mark.integration
@needs_root
def test_start_up_cancels_the_count_grows_in_proportion_to_the_load(counted, tmp_path):
    """Three loads of the baseline: the count per added transaction is the same from the small to the middle load
    as from the middle to the large, and far below a count over a single load (start-up and connection in it)."""
    study, t = counted
    work = cleanup.private_dir("logbench-test-")
    work.chmod(0o755)  # the server's user enters it
    try:
        prepared = pg.prepare(work, bindir=study.pg_bindir, scale=1, base=rc.study._pg_settings("none"))
        got = {n: sum(c.value for c in pg.count_start(prepared, rc.study._pg_settings("none"), (), protocol="prepared",
                                                     transactions=n, counter="cachegrind", syslog=False, remote=False,
                                                     work=work).counts if c.process == "backend")
               for n in (SIZES[0], (SIZES[0] + SIZES[1]) // 2, SIZES[1])}
    finally:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    (a, ca), (b, cb), (c, cc) = sorted(got.items())
    low, high = (cb - ca) / (b - a), (cc - cb) / (c - b)
    assert abs(low - high) / high < 0.01, (low, high)
    assert cc / c > 2 * high  # a single load's count is mostly start-up: only the difference measures the load
    assert _fig(t, "none")["per_statement"] == pytest.approx(high, rel=0.01)


@pytest.mark.integration
@needs_root
@pytest.mark.timeout(300)
def test_sigterm_stops_every_process_and_keeps_the_counted_starts(tmp_path):
    out = tmp_path / "run"
    proc = study_process(f"""
        from logbench.studies import record_cost as rc
        rc.run(rc.define(profile="smoke", configurations=["none", "stderr"], mariadb_configurations=[], repeats=3,
                         transactions=[50, 250], counters=["cachegrind"], output_dir={str(out)!r}), progress=False)
    """)
    raw = out / "starts.jsonl"
    wait_for_lines(proc, raw, 180)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    assert proc.returncode != 0
    time.sleep(1)
    left = [p for p in psutil.process_iter(["cmdline"]) if any("logbench-record-cost-" in a
                                                                for a in (p.info["cmdline"] or []))]
    assert not left, [p.info["cmdline"] for p in left]
    assert not list(paths.scratch_root().glob("logbench-record-cost-*"))
    kept = [json.loads(line) for line in raw.read_text().splitlines()]
    assert kept and {r["start"] for r in kept} <= set(range(2 * 2 * 3))
