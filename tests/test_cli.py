"""``python -m logbench run STUDY`` (logbench.cli, issue 39): the measurement apart from its notebook. It checks the
parameters with the study's define() before anything starts (exit status 2), lists the studies and a study's
declared parameters, and a real run writes the run directory the notebook's run would."""

import json
import os
import subprocess
import sys

import pytest

from logbench import cli, studies
from logbench.base import paths
from logbench.studies.declaration import default_of

ENV = {**os.environ, "PYTHONPATH": str(paths.ROOT / "lib")}


def logbench(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "logbench", *args], capture_output=True, text=True, env=ENV,
                          timeout=timeout)


@pytest.fixture
def nothing_runs(monkeypatch):
    """Every study's run() refused: what a refused command must never reach."""
    called = []
    for s in studies.specs():
        monkeypatch.setattr(studies.module(s.name), "run", lambda study: called.append(study))
    return called


def test_help_lists_every_study():
    r = logbench("--help")
    assert r.returncode == 0, r.stderr
    for s in studies.specs():
        assert s.name in r.stdout and s.notebook in r.stdout
    assert "run STUDY --help" in r.stdout


def test_a_study_s_help_lists_its_declared_parameters_with_their_defaults(capsys):
    assert cli.main(["run", "pg_wal_level", "--help"]) == 0
    out = capsys.readouterr().out
    declared = studies.module("pg_wal_level").define.declaration.offered()
    for name in cli.parameters("pg_wal_level"):
        assert f"  {name} (" in out, name
    assert "fillfactor (int, default 70)" in out, "a default as define() declares it"
    assert "seed (int | None, default 20140321)" in out, "the seed's None is the spec's seed"
    assert "pgbench -F, 10 to 100" in out, "the help the study declares (its HELP)"
    # every help line is the declaration's (shared ones included), read without the notebook
    for name, p in cli.parameters("pg_wal_level").items():
        assert p.help and f"\n      {p.help}\n" in out, name
    assert set(cli.parameters("pg_wal_level")) == set(declared) - set(
        studies.module("pg_wal_level").define.declaration.notebook_only)


def test_a_study_s_help_does_not_read_its_notebook(monkeypatch, capsys):
    """The help is the declaration's: a missing notebook directory changes nothing in it."""
    from logbench.base import paths

    assert cli.main(["run", "pg_wal_level", "--help"]) == 0
    before = capsys.readouterr().out
    monkeypatch.setattr(paths, "NOTEBOOKS", paths.ROOT / "no-such-directory")
    assert cli.main(["run", "pg_wal_level", "--help"]) == 0
    assert capsys.readouterr().out == before


def test_an_unknown_study_is_refused_naming_the_known_ones():
    r = logbench("run", "no_such_study", "-p", "profile", "smoke")
    assert r.returncode == 2
    assert "parameter 'study' got 'no_such_study'" in r.stderr and "pg_wal_level" in r.stderr
    assert logbench("run", "no_such_study", "--help").returncode == 2


@pytest.mark.parametrize("args, named, allowed", [
    (["-p", "no_such", "1"], "no_such", "a parameter of study 'pg_wal_level': profile, levels"),
    (["-p", "clients", "many"], "clients", "list[int] | None"),
    (["-p", "repeats", "0"], "repeats", "a whole number > 0"),  # define()'s own check
    (["-p", "profile", "huge"], "profile", "smoke"),
    (["-p", "output_dir", "/a", "--output-dir", "/b"], "output_dir", "--output-dir"),
])
def test_a_bad_parameter_is_refused_before_anything_starts(tmp_path, capsys, nothing_runs, args, named, allowed):
    out = tmp_path / "run"
    where = [] if "--output-dir" in args else ["--output-dir", str(out)]
    assert cli.main(["run", "pg_wal_level", *args, *where]) == 2
    err = capsys.readouterr().err
    assert f"parameter {named!r} got" in err and allowed in err, err
    assert nothing_runs == [] and not out.exists()


def test_the_exit_status_of_a_bad_parameter_is_2():
    r = logbench("run", "pg_wal_level", "-p", "levels", "[minimal, bogus]")
    assert r.returncode == 2 and "parameter 'levels'" in r.stderr, r.stderr
    assert r.stdout == ""


def test_values_are_read_by_their_declared_type():
    assert cli.value_of("clients", "[1, 8]", list[int] | None) == [1, 8]
    assert cli.value_of("clients", "4", list[int] | None) == [4]
    assert cli.value_of("versions", "[13, 15]", list[str] | None) == ["13", "15"]
    assert cli.value_of("shared_buffers", "128", str) == "128"
    assert cli.value_of("publish", "true", bool) is True
    assert cli.value_of("scale", "None", int | None) is None
    assert cli.value_of("target_halfwidth", "0.05", float | str | None) == 0.05


def test_given_parameters_reach_define_as_the_notebook_passes_them(nothing_runs, tmp_path):
    cli.run("pg_wal_level", [("profile", "smoke"), ("levels", "[replica]")], str(tmp_path / "run"))
    [study] = nothing_runs
    # the notebook: its generated cell's defaults, papermill's injected values over them, given() picks them
    decl = studies.module("pg_wal_level").define.declaration
    spec = studies.spec("pg_wal_level")
    namespace = {n: default_of(p, spec) for n, p in decl.offered().items()}
    namespace |= {"profile": "smoke", "levels": ["replica"], "output_dir": str(tmp_path / "run")}
    as_the_notebook = studies.module("pg_wal_level").define(**decl.given(namespace))
    assert study == as_the_notebook
    assert [c.name for c in study.configurations] == ["import/minimal", "oltp/minimal", "import/replica",
                                                      "oltp/replica"]


def test_the_run_directory_of_every_study_is_its_output_dir(tmp_path):
    for s in studies.specs():
        study = studies.module(s.name).define(**{**s.smoke[0], "output_dir": str(tmp_path / s.name)})
        assert cli.run_directory(study) == tmp_path / s.name, s.name


@pytest.mark.integration
def test_a_smoke_run_writes_the_run_directory(tmp_path):
    out = tmp_path / "wal"
    # one level beside the baseline (6 runs, not 8): the run directory and the terminal's lines are under test here;
    # every level's smoke run is the workflow's (tests/test_workflow.py)
    r = logbench("run", "pg_wal_level", "-p", "profile", "smoke", "-p", "levels", "[replica]", "--output-dir",
                 str(out), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    for name in ("runs.jsonl", "study.json", "environment.json"):
        assert (out / name).exists(), name
    runs = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert runs and all(run["study"] == "pg_wal_level" for run in runs)
    assert (out / "processed" / "pg_wal_level.csv").exists()
    assert (out / "processed" / "pg_wal_level_environment.json").exists()
    assert f"raw records       {out}" in r.stdout and f"processed tables  {out / 'processed'}" in r.stdout
    assert "starting the servers" in r.stderr, "progress goes to the terminal"


def test_plan_help_is_its_usage_not_a_directory():
    """``plan --help`` once read "--help" as PROCESSED_DIR and crashed on its missing tables."""
    r = logbench("plan", "--help")
    assert r.returncode == 0, r.stderr
    assert "PROCESSED_DIR" in r.stdout and "pg_destinations_runs.csv" in r.stdout and not r.stderr


def test_plan_names_the_directory_without_runs_tables(tmp_path, capsys):
    from logbench.analyze import planning

    for where in (tmp_path, tmp_path / "absent"):
        assert cli.main(["plan", str(where)]) == 2
        err = capsys.readouterr().err
        assert f"parameter 'PROCESSED_DIR' got {str(where)!r}" in err
        assert all(t in err for t in planning.runs_tables()), err


def test_plan_plans_the_studies_whose_runs_tables_the_directory_holds(tmp_path, monkeypatch):
    """A user's processed directory of one study 02 run: that study planned, with its seed; the rest not asked for."""
    import shutil

    from logbench.analyze import planning

    shutil.copy(paths.PROCESSED / "pg_destinations_runs.csv", tmp_path)
    # the real planning takes a minute over every study; what is planned, from where, is what this checks
    asked = []
    monkeypatch.setattr(planning, "print_plans", lambda processed, seeds: asked.append((processed, seeds)))
    assert cli.main(["plan", str(tmp_path)]) == 0
    assert asked == [(tmp_path, {"pg_destinations": int(studies.spec("pg_destinations").seed)})]
