"""Resuming a study with the same output directory (issue 14): same schedule, recorded runs skipped,
a different study or environment refused with what differs."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from logbench.measure import resume, runner
from logbench.base.errors import EnvironmentMismatch
from logbench.studies import pg_destinations as study_mod

ENV = {"hostname": "h", "cpu_model": "c", "cpu_count": 2, "kernel": "6.1", "clocksource": "tsc",
       "server_version": "15.8", "tools": {}, "env_id": "aaaa"}


def _study(tmp_path, **kw):
    return study_mod.define(**{"profile": "smoke", "clients": [1, 2], "repeats": 2, "backend": "local",
                               "output_dir": tmp_path, **kw})


def test_the_same_seed_gives_the_same_schedule_and_recorded_runs_are_skipped(tmp_path):
    study = _study(tmp_path)
    plan = study.plan()
    assert plan == _study(tmp_path).plan()
    done = pd.DataFrame([{"position": p.position, "repeat": p.block, "configuration": p.configuration,
                          "clients": p.clients} for p in plan[:5]])
    todo, resumed = resume.remaining(plan, done)
    assert resumed == 5 and todo == list(plan[5:])
    assert resume.remaining(plan, pd.DataFrame()) == (list(plan), 0)


def test_a_run_that_is_not_in_this_schedule_is_refused(tmp_path):
    plan = _study(tmp_path).plan()
    p = plan[0]
    other = next(c for c in ("none", "csvlog", "stderr") if c != p.configuration)
    done = pd.DataFrame([{"position": 0, "repeat": p.block, "configuration": other, "clients": p.clients}])
    with pytest.raises(resume.ResumeRefused, match="position 0"):
        resume.remaining(plan, done)


def test_an_empty_directory_starts_fresh_and_the_same_study_resumes(tmp_path):
    study = _study(tmp_path)
    assert resume.check(study, ENV, tmp_path) is False
    runner.write_study(study, ENV)
    assert resume.check(_study(tmp_path), ENV, tmp_path) is True


def test_other_parameters_are_refused_naming_them(tmp_path):
    runner.write_study(_study(tmp_path), ENV)
    with pytest.raises(resume.ResumeRefused, match=r"repeats: 2 recorded, 3 now"):
        resume.check(_study(tmp_path, repeats=3), ENV, tmp_path)
    with pytest.raises(resume.ResumeRefused, match=r"seed: .* recorded, 7 now"):
        runner.write_study(_study(tmp_path, seed=7), ENV)
    assert json.loads((tmp_path / "study.json").read_text())["seed"] != 7  # the record was not overwritten


def test_another_environment_is_refused_naming_what_differs(tmp_path):
    runner.write_study(_study(tmp_path), ENV)
    moved = {**ENV, "hostname": "other", "env_id": "bbbb"}
    with pytest.raises(EnvironmentMismatch, match=r'hostname: "h" recorded, "other" now'):
        resume.check(_study(tmp_path), moved, tmp_path)


def test_only_runs_of_this_schedule_count(tmp_path):
    plan = _study(tmp_path).plan()
    p = plan[0]
    other_cell = pd.DataFrame([{"position": 0, "repeat": p.block, "configuration": "x", "clients": 99, "seed": 1}])
    assert resume.remaining(plan, other_cell, seed=_study(tmp_path).seed) == (list(plan), 0)


def test_a_record_made_before_a_field_existed_resumes_at_that_fields_default_only(tmp_path):
    """A study type gains a field (e.g. contention sampling): a record without it ran as the default does."""
    runner.write_study(_study(tmp_path), ENV)
    record = json.loads((tmp_path / "study.json").read_text())
    del record["wchan_hz"]
    (tmp_path / "study.json").write_text(json.dumps(record))
    assert resume.check(_study(tmp_path), ENV, tmp_path) is True
    import dataclasses

    sampling = dataclasses.replace(_study(tmp_path), wchan_hz=100.0)
    with pytest.raises(resume.ResumeRefused, match=r"wchan_hz: null recorded, 100.0 now"):
        resume.check(sampling, ENV, tmp_path)
