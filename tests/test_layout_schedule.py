"""A declared block layout (design.BlockLayout, issue 40): the baseline more than once per block, orders balanced
for the previous arm (Williams), and the plans that would leave an arm without its baseline next to it refused
before anything runs. Pure scheduling: no server, the runner only on a fake bench."""

from __future__ import annotations

from collections import Counter

import pytest

from logbench.measure import design, runner
from logbench.measure.design import Adaptive, BlockLayout, Study, block_layout, layout_schedule, williams_rows
from logbench.base.errors import ParameterError
from logbench.base.settings import Configuration, Settings
from test_adaptive import NoisyBench


def _study(tmp_path, arms: int = 2, **kw) -> Study:
    names = ["none"] + [f"arm{i}" for i in range(arms)]
    cfgs = tuple(Configuration(n, Settings.of("postgresql", {} if n == "none" else {"log_min_duration_statement": 0}),
                               () if n == "none" else ("stderr",)) for n in names)
    base = dict(name="fake", engine="postgresql", backend="local", profile="smoke", configurations=cfgs,
                clients=(1, 4), repeats=3, duration=1, warmup=0, warmup_blocks=0, seed=5, output_dir=tmp_path,
                processed_dir=None, idle_state="free")
    return Study(**{**base, **kw})


@pytest.mark.parametrize("t", [1, 2, 3, 4, 7, 10, 11])
def test_williams_rows_balance_the_previous_treatment_and_the_place(t):
    rows = williams_rows(t)
    assert len(rows) == (2 * t if t % 2 and t > 1 else t) and all(sorted(r) == list(range(t)) for r in rows)
    follows = Counter((r[i], r[i + 1]) for r in rows for i in range(t - 1))
    assert len(follows) == t * (t - 1) and len(set(follows.values())) <= 1  # every ordered pair, equally often
    places = Counter((r[i], i) for r in rows for i in range(t))
    assert len(places) == t * t and len(set(places.values())) == 1


def test_without_a_layout_the_plan_is_the_old_schedule(tmp_path):
    study = _study(tmp_path)
    assert study.block_layout is None and study.slots == ("none", "arm0", "arm1", "none_again")
    assert study.plan() == design.schedule(study.slots, study.clients, study.repeats, study.seed)


def test_the_baseline_twice_and_its_aa_once_per_level_and_block(tmp_path):
    study = _study(tmp_path, arms=3, block_layout={"baseline_runs": 2, "aa_runs": 1, "order": "williams"}, repeats=4)
    assert study.block_layout == BlockLayout(2, 1, "williams")
    plan = study.plan()
    for block in range(4):
        for n in study.clients:
            got = Counter(p.configuration for p in plan if p.block == block and p.clients == n)
            assert got == {"none": 2, "none_again": 1, "arm0": 1, "arm1": 1, "arm2": 1}
    assert [p.position for p in plan] == list(range(len(plan))) and plan == study.plan()  # seeded


def test_williams_order_keeps_each_level_together_and_balances_the_previous_arm(tmp_path):
    # 4 distinct runs per level (baseline once, its A/A, two arms): a cycle is 4 blocks, each ordered pair once
    study = _study(tmp_path, block_layout={"baseline_runs": 1, "aa_runs": 1, "order": "williams"}, repeats=8)
    plan = study.plan()
    for block in range(8):
        levels = [p.clients for p in plan if p.block == block]
        assert levels == sorted(levels, key=levels.index)  # one contiguous sub-block per level
    for n in study.clients:
        follows = Counter((a.configuration, b.configuration) for a, b in zip(plan, plan[1:])
                          if a.block == b.block and a.clients == b.clients == n)
        assert len(follows) == 4 * 3 and set(follows.values()) == {2}  # two cycles: every pair twice


def test_random_order_with_a_layout_shuffles_the_whole_block(tmp_path):
    plan = layout_schedule(("none", "none", "a", "none_again"), (1, 4), 2, 3, BlockLayout(2, 1, "random"),
                           warmup_blocks=1)
    assert len(plan) == 3 * 8 and [p.warmup for p in plan[:8]] == [True] * 8 and plan[0].block == -1
    assert Counter(p.configuration for p in plan if p.block == 0) == {"none": 4, "a": 2, "none_again": 2}


def test_neighbours_are_counted_within_a_level_and_block():
    runs = [design.PlannedRun(i, b, c, n, False) for i, (b, c, n) in enumerate([
        (0, "a", 1), (0, "none", 1), (0, "b", 4), (0, "none", 4), (1, "b", 1), (1, "none_again", 1), (1, "a", 4)])]
    base = {"none": "none", "none_again": "none", "a": "none", "b": "none"}
    got = design.baseline_neighbours(runs, base)
    assert got == {("a", 1): 1, ("b", 4): 1, ("b", 1): 1, ("none_again", 1): 0, ("a", 4): 0}


@pytest.mark.parametrize("layout, parameter", [
    ({"baseline_runs": 0}, "block_layout.baseline_runs"), ({"baseline_runs": "2"}, "block_layout.baseline_runs"),
    ({"baseline_runs": True}, "block_layout.baseline_runs"), ({"aa_runs": -1}, "block_layout.aa_runs"),
    ({"order": "latin"}, "block_layout.order"), ({"baselines": 2}, "block_layout"), ("williams", "block_layout"),
])
def test_bad_layouts_name_their_parameter(tmp_path, layout, parameter):
    with pytest.raises(ParameterError, match=f"'{parameter}'"):
        _study(tmp_path, block_layout=layout)


def test_an_aa_run_without_an_aa_control_is_refused(tmp_path):
    with pytest.raises(ParameterError, match="'block_layout.aa_runs'"):
        _study(tmp_path, aa_control=False, block_layout={"aa_runs": 1})
    assert _study(tmp_path, arms=1, aa_control=False, block_layout={"aa_runs": 0}).slots == ("none", "arm0")


def test_a_layout_that_leaves_an_arm_without_its_baseline_next_to_it_is_refused(tmp_path):
    # one block, one baseline run among ten arms: it has two neighbours, eight arms have none
    with pytest.raises(ParameterError, match="'block_layout'.*never is"):
        _study(tmp_path, arms=10, repeats=1, aa_control=False, block_layout={"aa_runs": 0, "order": "williams"})
    # a whole Williams cycle (11 runs, odd: 22 rows) puts every arm next to the baseline
    ok = _study(tmp_path, arms=10, repeats=22, aa_control=False, block_layout={"aa_runs": 0, "order": "williams"})
    assert min(design.baseline_neighbours(ok.plan(), ok.baseline_map).values()) > 0


def test_extra_blocks_repeat_the_baseline_as_the_layout_does(tmp_path):
    study = _study(tmp_path, block_layout={"baseline_runs": 2, "order": "williams"}, target_halfwidth=0.03, max_repeats=5)
    values = {(c, n): [100.0, 130.0, 80.0] if c == "arm0" else [100.0, 100.1, 99.9]
              for c in ("none", "none_again", "arm0", "arm1") for n in (1, 4)}
    block = Adaptive(study, len(study.plan())).next_block(values)
    assert Counter(p.configuration for p in block if p.clients == 1) == {"none": 2, "none_again": 1, "arm0": 1}


def test_the_runner_records_a_layouts_plan(tmp_path):
    study = _study(tmp_path, block_layout={"baseline_runs": 2, "order": "williams"})
    runs = runner.execute(study, NoisyBench({"none": 1000.0, "none_again": 1000.0, "arm0": 900.0, "arm1": 800.0},
                                            {}), "env", progress=False)
    assert len(runs) == len(study.plan()) == 3 * 2 * 5
    assert list(runs["configuration"]) == [p.configuration for p in study.plan()]
    assert (runs.groupby(["repeat", "clients"])["configuration"].apply(lambda c: (c == "none").sum()) == 2).all()


def test_a_profile_declares_the_layout(tmp_path):
    from logbench.studies import parameters
    from logbench.studies.spec import StudySpec

    s = StudySpec(name="fake", engine="postgresql", title="t", post="000", baseline="none",
                           notebook="x.ipynb", seed=1)
    profiles = {"smoke": {"clients": [1], "repeats": 2, "duration": 1, "warmup": 0,
                          "block_layout": {"baseline_runs": 2, "order": "williams"}}}
    fields = parameters.study_fields(s, "smoke", profiles, output_dir=tmp_path)
    assert fields["block_layout"] == BlockLayout(2, 1, "williams")
    del profiles["smoke"]["block_layout"]
    assert "block_layout" not in parameters.study_fields(s, "smoke", profiles, output_dir=tmp_path)


def test_every_committed_run_defines_with_its_profile():
    """A switchback profile's "layout" is text (its windows' order, "permutation"): no block layout, no error; the
    committed runs of the versions and switchback profiles define as they did before block layouts, and those whose
    profile declares one (issue 40's planned schedules) get exactly it."""
    from logbench import jobs, studies

    for run in jobs.committed_runs():
        module = studies.module(run.study)
        study = module.define(**{k: v for k, v in run.parameters.items() if k != "publish"})
        declared = getattr(module, "PROFILES", {}).get(run.parameters.get("profile", "standard"), {})
        assert getattr(study, "block_layout", None) == block_layout(declared.get("block_layout")), run.stem


def test_a_block_layout_that_fails_one_of_04s_cells_is_refused_when_the_study_is_defined(monkeypatch):
    """Study 04 lays out each cell with a seed of its own (for_cell): a declared layout that leaves an arm without
    its baseline in one cell's schedule is refused by define(), before any server starts, not at that cell's turn
    (its committed run stopped there on 2026-11-28)."""
    from logbench.studies import mysql_slowlog as s04
    from logbench.studies.mysql_slowlog import spec

    monkeypatch.setitem(spec.PROFILES, "standard", {**spec.PROFILES["standard"], "repeats": 2,
                                                     "block_layout": {"baseline_runs": 2, "aa_runs": 2,
                                                                      "order": "williams"}})
    with pytest.raises(ParameterError, match="block_layout"):
        s04.define(profile="standard", backend="local", publish=False)
