"""The A/A control and adaptive repeats, driven through the real runner with a fake noisy bench.

The fake replaces the database only: what is under test is our scheduler (which blocks run,
which cells they hold, when they stop) and what the runner writes about it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest

from logbench.measure import design, runner
from logbench.base import records
from logbench.measure.design import Adaptive, Study, aa_name
from logbench.base.errors import ParameterError
from logbench.base.settings import Configuration, Settings


@dataclass
class _Switch:
    kind: str = "none"
    seconds: float = 0.0


class NoisyBench(runner.Bench):
    """tps = mean x (1 + cv x N(0, 1)), seeded by the run's position; cv per (configuration, clients)."""

    engine, backend, workload, server_version, query_mode, scale = "postgresql", "local", "fake", "0", "fake", 1

    def __init__(self, means: dict, cvs: dict, seed: int = 0):
        self.means, self.cvs, self.seed = means, cvs, seed
        self.seen: list[str] = []

    def apply(self, configuration):
        return _Switch()

    def warm(self, run, seconds):
        pass

    def measure(self, run, seconds):
        self.seen.append(run.configuration)
        rng = np.random.default_rng([self.seed, run.position])
        mean = self.means[run.configuration]
        cv = self.cvs.get((run.configuration, run.clients), 0.002)
        tps = mean * (1 + cv * rng.standard_normal())
        return runner.Measurement(transactions=int(tps), failed=0, tps=tps, latency_mean_ms=1.0, latency_stddev_ms=0.1,
                                  latency_p50_ms=1.0, latency_p95_ms=1.0, latency_p99_ms=1.0, latency_samples=10,
                                  wall_s=1.0, threads=run.clients, extra={})

    def sinks(self, configuration):
        return []

    def expected_records(self, configuration, run, m):
        return 0

    def server_cpu(self):
        return 0.0

    def logger_cpu(self):
        return 0.0

    def effective_settings(self, configuration):
        return configuration.settings.as_dict()

    def log_dir_fs(self):
        return "tmpfs"


def _study(tmp_path, **kw) -> Study:
    cfgs = tuple(Configuration(n, Settings.of("postgresql", s), d) for n, s, d in (
        ("none", {}, ()), ("quiet", {"log_min_duration_statement": 0}, ("stderr",)),
        ("noisy", {"log_min_duration_statement": 0, "log_destination": "csvlog"}, ("csvlog",))))
    base = dict(name="fake", engine="postgresql", backend="local", profile="smoke", configurations=cfgs,
                clients=(1, 4), repeats=3, duration=1, warmup=0, warmup_blocks=0, seed=5, output_dir=tmp_path,
                processed_dir=None, idle_state="free")
    return Study(**{**base, **kw})


MEANS = {"none": 1000.0, "quiet": 800.0, "noisy": 500.0}


def _run(study, means=MEANS, cvs=None):
    bench = NoisyBench(means, cvs if cvs is not None else {("noisy", 4): 0.2})
    runs = runner.execute(study, bench, "env", progress=False)
    return runs, bench


def test_aa_configuration_is_the_baseline_in_settings_and_sinks(tmp_path):
    study = _study(tmp_path)
    aa = study.configuration(aa_name("none"))
    assert aa.name == "none_again" == study.aa_configuration
    base = study.configuration("none")
    assert aa.settings == base.settings and aa.destinations == base.destinations
    assert study.bench_configuration("none_again") is study.configuration("none")
    assert "none_again" not in [c.name for c in study.configurations]  # the study's own list stays as declared
    assert {p.configuration for p in study.plan()} == {"none", "quiet", "noisy", "none_again"}
    assert not any(p.configuration == "none_again" for p in _study(tmp_path, aa_control=False).plan())


def test_aa_runs_are_baseline_runs_under_another_name(tmp_path):
    runs, bench = _run(_study(tmp_path))
    assert "none_again" not in bench.seen  # the bench cannot tell the A/A control from the baseline
    aa, base = runs[runs.configuration == "none_again"], runs[runs.configuration == "none"]
    assert len(aa) == len(base) == 6
    assert aa["settings"].map(json.dumps).unique().tolist() == base["settings"].map(json.dumps).unique().tolist()
    assert aa["destinations"].map(tuple).unique().tolist() == base["destinations"].map(tuple).unique().tolist()


def test_aa_is_identical_in_settings_for_a_real_study_definition(tmp_path):
    pg = pytest.importorskip("logbench.studies.pg_destinations")
    try:
        study = pg.define(profile="smoke", destinations=["stderr"], backend="local", output_dir=tmp_path)
    except Exception as e:  # no PostgreSQL binaries here
        pytest.skip(str(e))
    aa, base = study.configuration(study.aa_configuration), study.configuration(study.baseline)
    assert (aa.settings, aa.destinations) == (base.settings, base.destinations)
    assert study.base.merged(aa.settings) == study.base.merged(base.settings)


def test_extra_blocks_hold_only_the_wide_cells_and_their_baselines(tmp_path):
    study = _study(tmp_path, target_halfwidth=0.03, max_repeats=8)
    runs, _ = _run(study)
    extra = runs[runs["repeat"] >= study.repeats]
    # Only noisy at 4 clients is wide; its ratio needs the baseline (and the A/A control) beside it.
    assert set(zip(extra.configuration, extra.clients)) == {("noisy", 4), ("none", 4), ("none_again", 4)}
    assert sorted(extra["repeat"].unique()) == list(range(3, 8))
    assert all(len(g) == 3 for _, g in extra.groupby("repeat"))
    report = json.loads((tmp_path / "adaptive.json").read_text())
    assert report["stopped"] == "max_repeats" and report["blocks"] == 8
    cells = {(c["configuration"], c["clients"]): c for c in report["cells"]}
    assert cells[("noisy", 4)]["n"] == 8 and cells[("noisy", 4)]["halfwidth"] > 0.03
    assert cells[("quiet", 4)]["n"] == 3 and cells[("quiet", 4)]["halfwidth"] <= 0.03
    assert cells[("noisy", 1)]["n"] == 3


def test_schedule_json_is_what_ran(tmp_path):
    study = _study(tmp_path, target_halfwidth=0.03, max_repeats=6)
    runner.write_study(study, {"env_id": "env"})
    runs, _ = _run(study)
    ran = json.loads((tmp_path / "schedule.json").read_text())
    assert [(p["position"], p["block"], p["configuration"], p["clients"]) for p in ran] == list(
        zip(runs.position, runs.repeat, runs.configuration, runs.clients))
    assert [p["position"] for p in ran] == list(range(len(ran)))
    assert len(ran) > len(study.plan())


def test_precise_cells_add_no_block(tmp_path):
    study = _study(tmp_path, target_halfwidth=0.03, max_repeats=8)
    runs, _ = _run(study, cvs={})
    assert runs["repeat"].max() == study.repeats - 1
    assert json.loads((tmp_path / "adaptive.json").read_text())["stopped"] == "precise"


def test_time_budget_stops_the_extra_blocks(tmp_path):
    study = _study(tmp_path, target_halfwidth=0.03, time_budget_s=0.0)
    runs, _ = _run(study)
    assert runs["repeat"].max() == study.repeats - 1
    assert json.loads((tmp_path / "adaptive.json").read_text())["stopped"] == "time_budget"


def test_stopping_depends_on_precision_not_on_the_estimate(tmp_path):
    """Halving the noisy configuration's throughput (same spread, relative) changes the ratio, not the schedule."""
    a = _study(tmp_path / "a", target_halfwidth=0.05, max_repeats=12)
    b = _study(tmp_path / "b", target_halfwidth=0.05, max_repeats=12)
    cvs = {("noisy", 4): 0.06}
    ra, _ = _run(a, cvs=cvs)
    rb, _ = _run(b, means={**MEANS, "noisy": 250.0}, cvs=cvs)
    key = ["position", "repeat", "configuration", "clients"]
    assert ra[key].equals(rb[key])
    assert ra["repeat"].max() > a.repeats - 1  # it did adapt


def test_scheduler_alone_is_seeded_and_continues_positions(tmp_path):
    study = _study(tmp_path, target_halfwidth=0.03, max_repeats=5)
    values = {(c, n): [100.0, 130.0, 80.0] if c == "quiet" else [100.0, 100.1, 99.9]
              for c in ("none", "none_again", "quiet", "noisy") for n in (1, 4)}
    one, two = Adaptive(study, 24), Adaptive(study, 24)
    b1, b2 = one.next_block(values), two.next_block(values)
    assert b1 == b2 and [p.position for p in b1] == list(range(24, 30)) and {p.block for p in b1} == {3}
    assert {(p.configuration, p.clients) for p in b1} == {
        (c, n) for c in ("quiet", "none", "none_again") for n in (1, 4)}


@pytest.mark.parametrize("kw, parameter", [
    ({"idle_state": "off"}, "idle_state"),
    ({"target_halfwidth": 0.0, "max_repeats": 5}, "target_halfwidth"),
    ({"target_halfwidth": 0.03}, "target_halfwidth"),  # neither a budget nor a cap
    ({"max_repeats": 2}, "max_repeats"),  # below repeats
    ({"time_budget_s": -1}, "time_budget_s"),
])
def test_bad_adaptive_parameters_name_themselves(tmp_path, kw, parameter):
    with pytest.raises(ParameterError, match=f"'{parameter}'"):
        _study(tmp_path, **kw)


def test_idle_state_recorded_per_run(tmp_path):
    runs, _ = _run(_study(tmp_path, idle_state="hold"))
    assert runs["idle_state"].iloc[0] in ("hold",) or runs["idle_state"].iloc[0].startswith("unavailable:")
    assert (runs["idle_state"] == runs["idle_state"].iloc[0]).all()
    assert runs["cpuidle_driver"].astype(bool).all()
    # recorded, and flagged only where the VM did steal time (how much this shared VM steals is not ours to assert)
    assert (runs["steal_s"] >= 0).all() and (~runs["high_steal"].astype(bool) | (runs["steal_s"] > 0)).all()
    assert (runs["server_ctx_voluntary"] == -1).all()  # the fake has no server process


def test_old_runs_jsonl_still_loads_with_defaults(tmp_path):
    runs, _ = _run(_study(tmp_path))
    new = json.loads((tmp_path / "runs.jsonl").read_text().splitlines()[0])
    old = {k: v for k, v in new.items() if k not in ("idle_state", "cpuidle_driver", "cpuidle_usage", "steal_s",
                                                        "server_ctx_involuntary", "server_ctx_voluntary", "high_steal")}
    path = tmp_path / "old" / "runs.jsonl"
    path.parent.mkdir()
    path.write_text(json.dumps(old) + "\n")
    df = records.load(path)
    row = df.iloc[0]
    assert row["idle_state"] == "" and row["cpuidle_usage"] == {} and np.isnan(row["steal_s"])
    assert row["server_ctx_involuntary"] == -1 and not row["high_steal"]
    assert list(df.columns) == list(records.RUN_FIELDS)
    records.flatten(df)


def test_each_variant_gets_its_aa_control_and_ratios_against_its_own_baseline(tmp_path):
    cfgs = tuple(Configuration(f"{v}/{n}", Settings.of("postgresql", s), d) for n, s, d in (
        ("none", {}, ()), ("x", {"log_min_duration_statement": 0}, ("stderr",))) for v in ("local", "container"))
    study = _study(tmp_path, configurations=cfgs, clients=(1,), target_halfwidth=0.03, max_repeats=4)
    assert study.aa_configurations == {"local/none_again": "local/none", "container/none_again": "container/none"}
    assert study.baseline_of("container/x") == "container/none"
    values = {(c.name, 1): [100.0, 100.1, 99.9] for c in study.planned_configurations}
    values[("container/x", 1)] = [100.0, 140.0, 70.0]
    block = Adaptive(study, 100).next_block(values)
    assert {p.configuration for p in block} == {"container/x", "container/none", "container/none_again"}


def _dma_fds() -> int:
    import os
    from pathlib import Path

    from logbench.measure import controls

    n = 0
    for fd in Path("/proc/self/fd").iterdir():
        try:
            n += os.readlink(fd) == str(controls.DMA_LATENCY)
        except OSError:
            pass
    return n


@pytest.mark.parametrize("exc", [RuntimeError, KeyboardInterrupt])
def test_execute_releases_the_idle_state_after_a_failure_or_an_interrupt(tmp_path, exc):
    """The control is held while runs execute and released however execution ends; runs so far stay."""
    import os

    from logbench.measure import controls

    held = []

    class Failing(NoisyBench):
        def measure(self, run, seconds):
            held.append(_dma_fds())
            if len(held) == 3:
                raise exc("injected")
            return super().measure(run, seconds)

    before = _dma_fds()
    with pytest.raises(exc):
        runner.execute(_study(tmp_path, idle_state="hold"), Failing(MEANS, {}), "env", progress=False)
    assert _dma_fds() == before
    if os.access(controls.DMA_LATENCY, os.W_OK):
        assert held == [before + 1] * 3
    assert len(records.load(tmp_path / "runs.jsonl")) == 2
    assert len(json.loads((tmp_path / "schedule.json").read_text())) == 2  # what ran, even now


def test_loss_is_not_defined_where_the_bench_says_so(tmp_path):
    from logbench.base.logsinks import FileSink
    from logbench.base.settings import RecordShape

    log = tmp_path / "log"
    duration = RecordShape("duration", (b"duration:",), per_transaction=1)

    class Sampled(NoisyBench):
        def sinks(self, configuration):
            return [FileSink("stderr", log, (duration,))] if configuration.destinations else []

        def measure(self, run, seconds):
            with open(log, "a") as f:
                f.write("duration: 1 ms\n" * 90)
            return super().measure(run, seconds)

        def expected_records(self, configuration, run, m):
            return 100

        def loss_defined(self, configuration):
            return configuration.name != "noisy"

    runs = runner.execute(_study(tmp_path, clients=(1,), repeats=2), Sampled(MEANS, {}), "env", progress=False)
    assert runs[runs.configuration == "noisy"]["log_loss"].isna().all()
    assert runs[runs.configuration == "quiet"]["log_loss"].tolist() == pytest.approx([0.1, 0.1])
    assert (runs[runs.configuration == "noisy"]["log_records_received"] == 90).all()


def test_a_resumed_study_counts_the_extra_blocks_it_already_ran_against_its_budget(tmp_path):
    first = _study(tmp_path, target_halfwidth=0.03, time_budget_s=1000.0, max_repeats=4)
    runs, _ = _run(first)
    extra = int((runs["repeat"] >= first.repeats).sum())
    assert extra > 0  # one extra block over the wide cells
    # Resumed with nothing of the plan left, a run is assumed to take the nominal 1 s: the recorded extra
    # runs have spent `extra` seconds of a budget of extra + 0.5, so no further block fits.
    again = _study(tmp_path, target_halfwidth=0.03, time_budget_s=extra + 0.5)
    runs2, bench = _run(again)
    assert len(runs2) == len(runs) and bench.seen == []
    assert json.loads((tmp_path / "adaptive.json").read_text())["stopped"] == "time_budget"


def test_adaptive_decisions_reach_the_progress_channel(tmp_path, monkeypatch):
    channel = tmp_path / "progress.txt"
    monkeypatch.setenv("LOGBENCH_PROGRESS", str(channel))
    study = _study(tmp_path, target_halfwidth=0.03, max_repeats=5)
    runs, _ = _run(study)
    text = channel.read_text()
    extra = int((runs["repeat"] >= study.repeats).sum())
    assert f"adaptive: block 4 for 1 cell(s) wider than ±3 %; 3 more runs, {len(study.plan()) + 3} planned" in text
    assert "adaptive blocks stopped: " in text
    assert f"{len(runs)}/{len(study.plan()) + extra} runs recorded in" in text


def test_one_progress_line_per_block_and_nothing_in_the_notebook(tmp_path, monkeypatch, capfd):
    channel = tmp_path / "progress.txt"
    monkeypatch.setenv("LOGBENCH_PROGRESS", str(channel))
    study = _study(tmp_path, warmup_blocks=1)
    bench = NoisyBench(MEANS, {("noisy", 4): 0.2})
    runs = runner.execute(study, bench, "env", progress=True)  # progress=True: still no bar, no warning
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    lines = channel.read_text().splitlines()
    per_block = len(study.plan()) // (study.repeats + 1)
    blocks = [ln for ln in lines if " done · " in ln]
    assert len(blocks) == study.repeats + 1, lines
    assert f"fake: warm-up block 1/1 done · {per_block}/{len(runs)} runs · " in blocks[0]
    for b, ln in enumerate(blocks[1:], start=1):
        assert f"fake: block {b}/{study.repeats} done · {per_block * (b + 1)}/{len(runs)} runs · " in ln
        assert "elapsed, ~" in ln and "left" in ln
    # from the second block on each arm has an interval; the widest (noisy at 4 clients) is named first
    assert "· noisy/none ×4: 0." in blocks[-1] and " ± " in blocks[-1] and "2 more (each within ± " in blocks[-1]
    assert blocks[-1].index("noisy/none ×4") < blocks[-1].index(" ± ")
    assert not any(": run " in ln for ln in lines)  # no line per run


def test_a_variants_running_estimate_names_its_server_once():
    """A sweep's progress line read "pg13/stderr/pg13/none ×4": the server's label once, then arm/baseline."""
    from types import SimpleNamespace

    values = {("pg13/stderr", 4): [1.0, 1.1, 0.9], ("pg13/none", 4): [2.0, 2.1, 1.9], ("stderr", 4): [1.0, 1.1],
              ("none", 4): [2.0, 2.1]}
    swept = SimpleNamespace(baselines={"pg13/none"}, baseline_of=lambda c: "pg13/none")
    assert list(runner.running_estimates(swept, SimpleNamespace(pairs=[("pg13/stderr", 4)]), values)) == [
        "pg13 stderr/none ×4"]
    one = SimpleNamespace(baselines={"none"}, baseline_of=lambda c: "none")
    assert list(runner.running_estimates(one, SimpleNamespace(pairs=[("stderr", 4)]), values)) == ["stderr/none ×4"]


def test_a_wrapped_split_bench_answers_each_run_with_its_own_bench_not_the_base_defaults(tmp_path):
    """SplitBench and the wrappers (e.g. ControlledBench) inherit Bench's defaults: each optional answer
    must still be the bench's that ran the run (a default there would hide a PostgreSQL bench's collector)."""

    class Collector(NoisyBench):
        def collector_cpu(self):
            return float(len(self.seen))  # one second per measured run

        def logger_cpu_parts(self):
            return {"rsyslogd": 2.0 * len(self.seen)}

    cfgs = tuple(Configuration(f"{label}/{n}", Settings.of("postgresql", {}), ())
                 for label in ("a", "b") for n in ("none", "quiet"))
    means = {c.name: 1000.0 for c in cfgs}
    split = runner.SplitBench({"a": Collector(means, {}), "b": NoisyBench(means, {})},
                              {"a": {"env_id": "env-a"}, "b": {"env_id": "env-b"}})
    runs = runner.execute(_study(tmp_path, configurations=cfgs, clients=(1,), repeats=2), runner.WrappedBench(split),
                          "env", progress=False)
    label = runs.configuration.str.partition("/")[0]
    assert sorted(set(zip(label, runs.env_id))) == [("a", "env-a"), ("b", "env-b")]
    a, b = runs[label == "a"].extra, runs[label == "b"].extra
    assert len(a) == len(b) == 6
    assert a.map(lambda e: (e["collector_cpu_s"], e["logger_cpu_s_by_daemon"])).tolist() == [(1.0, {"rsyslogd": 2.0})] * 6
    assert not b.map(lambda e: "collector_cpu_s" in e or "logger_cpu_s_by_daemon" in e).any()


def test_the_switches_of_a_wrapped_split_bench_are_every_servers():
    """A wrapped SplitBench (e.g. a ControlledBench over a version sweep): its ``switches`` through __getattr__
    would be only the server running last's."""
    from logbench.studies.running import switches_of

    a, b = NoisyBench({}, {}), NoisyBench({}, {})
    a.switches, b.switches = [("reload", 0.1)], [("restart", 2.0)]
    split = runner.SplitBench({"a": a, "b": b}, {"a": {"env_id": "a"}, "b": {"env_id": "b"}})
    assert switches_of(runner.WrappedBench(split)) == switches_of(split) == [("reload", 0.1), ("restart", 2.0)]
