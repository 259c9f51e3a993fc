"""The settle condition (controls.Settle, issue 40): before each run counts, Dirty + Writeback back to the level read
before the first run and the log daemons' CPU no longer advancing, up to a limit; the wait recorded per run.

The waiting logic is tested on a fake /proc (a scripted clock, meminfo text and daemon CPU readings): our own
logic, not the kernel's. The last test runs a real smoke study with settle on, under the bench lock."""

from __future__ import annotations

import json
import math

import pytest

from logbench.measure import controls, runner
from logbench.base import records
from logbench.measure.controls import Settle, SettleReference, settle, settle_reference
from logbench.base.errors import ParameterError

MEMINFO = """MemTotal:        8000000 kB
MemFree:         4000000 kB
Dirty:              {dirty} kB
Writeback:          {wb} kB
WritebackTmp:          0 kB
"""


class FakeProc:
    """A machine whose page cache and daemons drain on a script: reading i of /proc/meminfo gives dirty[i] +
    writeback[i]; the daemons' CPU advances by cpu_step[i] s in poll i; the clock moves only when slept."""

    def __init__(self, dirty, writeback, cpu_step):
        self.dirty, self.writeback, self.cpu_step = list(dirty), list(writeback), list(cpu_step)
        self.now, self.cpu, self.reads, self.sleeps = 100.0, 50.0, 0, 0

    def clock(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.now += s
        self.cpu += self.cpu_step[min(self.sleeps, len(self.cpu_step) - 1)]
        self.sleeps += 1

    def read_cpu(self) -> float:
        return self.cpu

    def read_dirty(self) -> int:
        i = min(self.reads, len(self.dirty) - 1)
        self.reads += 1
        return controls.dirty_writeback_kb(MEMINFO.format(dirty=self.dirty[i], wb=self.writeback[i]))


def test_meminfo_dirty_and_writeback_are_summed_in_kb():
    assert controls.dirty_writeback_kb(MEMINFO.format(dirty=1200, wb=34)) == 1234
    with pytest.raises(ValueError, match="Dirty and Writeback"):
        controls.dirty_writeback_kb("MemTotal: 1 kB\nDirty: 3 kB\n")
    assert controls.read_dirty_kb() >= 0  # the real file parses


def test_the_reference_is_the_idle_level_and_the_daemons_rate_over_one_poll():
    proc = FakeProc(dirty=[800], writeback=[0], cpu_step=[0.001])
    ref = settle_reference(Settle(limit_s=5, poll_s=0.5), proc.read_dirty, proc.read_cpu, clock=proc.clock,
                           sleep=proc.sleep)
    assert ref.dirty_kb == 800 and ref.cpu_rate == pytest.approx(0.002)


def test_the_wait_ends_when_the_page_cache_and_the_daemons_are_back_to_the_reference():
    # dirty pages drain 60 MB -> 20 MB -> 2 MB (within 4 MB of the reference's 1 MB) by the third poll, while the
    # daemon burns 0.2 s per 0.5 s poll for two polls, then nothing
    proc = FakeProc(dirty=[60000, 20000, 1500], writeback=[2000, 500, 500], cpu_step=[0.1, 0.1, 0.0, 0.0])
    ref = SettleReference(dirty_kb=1000, cpu_rate=0.0)
    got = settle(Settle(limit_s=10, poll_s=0.5), ref, proc.read_dirty, proc.read_cpu, clock=proc.clock,
                 sleep=proc.sleep)
    assert got.settled and got.seconds == pytest.approx(1.5) and got.dirty_kb == 2000 and got.cpu_rate == 0.0


def test_a_clean_page_cache_still_waits_for_a_busy_daemon():
    proc = FakeProc(dirty=[0], writeback=[0], cpu_step=[0.2, 0.2, 0.2, 0.001])
    got = settle(Settle(limit_s=10, poll_s=0.5, cpu_tolerance=0.01), SettleReference(0, 0.0), proc.read_dirty,
                 proc.read_cpu, clock=proc.clock, sleep=proc.sleep)
    assert got.settled and got.seconds == pytest.approx(2.0) and got.cpu_rate == pytest.approx(0.002)


def test_a_machine_that_never_settles_runs_at_the_limit_and_says_so():
    proc = FakeProc(dirty=[90000], writeback=[0], cpu_step=[0.0])
    got = settle(Settle(limit_s=2, poll_s=0.5), SettleReference(1000, 0.0), proc.read_dirty, proc.read_cpu,
                 clock=proc.clock, sleep=proc.sleep)
    assert not got.settled and got.seconds == pytest.approx(2.0)
    assert got.as_record(SettleReference(1000, 0.0)) == {"settled": False, "dirty_kb": 90000.0, "cpu_rate": 0.0,
                                                         "reference_dirty_kb": 1000, "reference_cpu_rate": 0.0}


def test_without_a_daemon_to_watch_only_the_page_cache_counts():
    proc = FakeProc(dirty=[5000, 100], writeback=[0, 0], cpu_step=[0.0])
    proc.read_cpu = lambda: math.nan
    got = settle(Settle(limit_s=5, poll_s=1), SettleReference(0, math.nan), proc.read_dirty, proc.read_cpu,
                 clock=proc.clock, sleep=proc.sleep)
    # the first reading (5000 kB) is beyond the 4096 kB of tolerance: one more poll
    assert got.settled and got.seconds == pytest.approx(2.0) and math.isnan(got.cpu_rate)


@pytest.mark.parametrize("declared, name", [
    ({"limit_s": 0.5}, "settle.limit_s"),  # shorter than the load tool's 1 s report interval
    ({"limit_s": 0}, "settle.limit_s"), ({"limit_s": "long"}, "settle.limit_s"),
    ({"limit_s": 5, "poll_s": 6}, "settle.poll_s"), ({"limit_s": 5, "poll_s": 0}, "settle.poll_s"),
    ({"limit_s": 5, "dirty_tolerance_kb": -1}, "settle.dirty_tolerance_kb"),
    ({"limit_s": 5, "cpu_tolerance": math.nan}, "settle.cpu_tolerance"),
    ({"limit_s": 5, "guard_s": 1}, "settle"), (30, "settle"),
])
def test_a_bad_settle_declaration_names_its_parameter_before_anything_starts(tmp_path, declared, name):
    from test_layout_schedule import _study

    with pytest.raises(ParameterError) as e:
        _study(tmp_path, settle=declared)
    assert e.value.parameter == name


def test_a_profile_declares_the_settle_condition_and_without_one_there_is_none(tmp_path):
    from logbench.studies import parameters
    from logbench.studies.spec import StudySpec

    s = StudySpec(name="fake", engine="postgresql", title="t", post="000", baseline="none", notebook="x.ipynb", seed=1)
    profiles = {"smoke": {"clients": [1], "repeats": 2, "duration": 1, "warmup": 0, "settle": {"limit_s": 20}}}
    assert parameters.study_fields(s, "smoke", profiles, output_dir=tmp_path)["settle"] == Settle(limit_s=20)
    profiles["smoke"]["settle"] = {"limit_s": 0.5}
    with pytest.raises(ParameterError, match="settle.limit_s"):
        # the Study refuses it, in define(), before any server starts
        from test_layout_schedule import _study
        _study(tmp_path, **{"settle": parameters.study_fields(s, "smoke", profiles, output_dir=tmp_path)["settle"]})
    del profiles["smoke"]["settle"]
    assert "settle" not in parameters.study_fields(s, "smoke", profiles, output_dir=tmp_path)


def _bench(study):
    from test_adaptive import NoisyBench

    return NoisyBench({c.name: 1000.0 for c in study.planned_configurations}, {})


def test_the_runner_waits_before_each_run_and_records_quiet_s(tmp_path, monkeypatch):
    from test_layout_schedule import _study

    # every run leaves 50 MB dirty that one poll later is written back
    levels = iter([0] + [50000, 0] * 1000)
    monkeypatch.setattr(controls, "read_dirty_kb", lambda: next(levels))
    study = _study(tmp_path, clients=(1,), repeats=2, settle={"limit_s": 3, "poll_s": 0.01})
    runs = runner.execute(study, _bench(study), "env")
    assert len(runs) == len(study.plan()) and (runs["quiet_s"] >= 0.01).all() and (runs["quiet_s"] < 3).all()
    assert all(e["settle"]["settled"] and e["settle"]["reference_dirty_kb"] == 0 for e in runs["extra"])


def test_without_a_settle_condition_runs_record_none_and_old_records_load(tmp_path):
    from test_layout_schedule import _study

    study = _study(tmp_path, clients=(1,), repeats=1)
    runs = runner.execute(study, _bench(study), "env")
    assert runs["quiet_s"].isna().all() and not any("settle" in e for e in runs["extra"])
    old = {k: v for k, v in json.loads((tmp_path / "runs.jsonl").read_text().splitlines()[0]).items()
           if k != "quiet_s"}
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "runs.jsonl").write_text(json.dumps(old) + "\n")
    assert math.isnan(records.load(tmp_path / "old" / "runs.jsonl")["quiet_s"].iloc[0])


@pytest.mark.integration
def test_a_real_smoke_study_with_settle_on_records_each_runs_wait(tmp_path):
    """A real PostgreSQL writing stderr through its log collector: every run waited, within the limit, and says
    whether the page cache and the collector came back to the level read before the first run."""
    import dataclasses

    from logbench.studies import pg_destinations as study_mod

    study = study_mod.define(profile="smoke", destinations=["stderr"], clients=[1], repeats=1, backend="local",
                             output_dir=tmp_path)
    study = dataclasses.replace(study, settle=Settle(limit_s=10, poll_s=0.25))
    runs = study_mod.run(study, progress=False).runs
    assert len(runs) and runs["quiet_s"].between(0.25 - 1e-9, 10 + 0.25 + 1).all()
    for e in runs["extra"]:
        assert isinstance(e["settle"]["settled"], bool) and e["settle"]["reference_dirty_kb"] >= 0
    # the record on disk carries it too (a new field, for these new runs)
    first = json.loads((tmp_path / "runs.jsonl").read_text().splitlines()[0])
    assert first["quiet_s"] == runs["quiet_s"].iloc[0]
