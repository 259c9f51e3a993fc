"""The Snakemake workflow (workflow/Snakefile, issue 15): its DAG, and the smoke profile end to end.

``snakemake --cores 1 --config profile=smoke`` runs here once per test session (a temporary working
directory, so nothing tracked and nothing under results/ is written): every study's smoke notebook, the
gather, 90_findings on the smoke data, the paper. Its executed study notebooks are then compared with the
committed ones cell by cell with nbval's own comparison (the cells nbval would compare; tags
``nbval-ignore-output`` / ``nbval-skip`` honoured), so each study's first smoke parameter set
(``SPEC.smoke[0]``) is executed once in the suite, not once here and once more under nbval
(tests/test_notebooks.py runs the others).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pandas as pd
import pytest
from nbval import plugin as nbval_plugin

from conftest import guardians_writing_to
from logbench.base import cleanup, paths
from logbench import jobs, studies

FRESH_INSIDE = "LOGBENCH_FRESH_MACHINE_INSIDE"  # tests/test_fresh_machine.py: no engine there, by design
SNAKEFILE = paths.ROOT / "workflow" / "Snakefile"
SNAKEMAKE = [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE)]


def snakemake(workdir: Path, *args: str, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*SNAKEMAKE, "--directory", str(workdir), *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def planned(out: str) -> list[tuple[str, dict[str, str]]]:
    """(rule, wildcards) of every job a dry run lists."""
    jobs_ = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", out):
        m = re.match(r"(?:local)?rule (\w+):", block)
        if m:
            w = re.search(r"^\s+wildcards: (.*)$", block, re.M)
            wc = dict(kv.split("=", 1) for kv in w.group(1).split(", ")) if w else {}
            jobs_.append((m.group(1), wc))
    return jobs_


# -- the DAG -----------------------------------------------------------------------------------------------------

def test_dry_run_lists_the_whole_suite(tmp_path):
    # two host labels: every study runs whole once on each (one dry run checks both, to keep CI's time)
    r = snakemake(tmp_path, "-n", "--config", "hosts=[a, b]")
    assert r.returncode == 0, r.stderr + r.stdout
    listed = planned(r.stdout)
    stems = sorted(r_.stem for r_ in jobs.profile_runs("standard"))
    study_jobs = [w for rule, w in listed if rule == "study"]
    assert sorted(w["stem"] for w in study_jobs if w["host"] == "a") == stems
    assert sorted(w["stem"] for w in study_jobs if w["host"] == "b") == stems
    assert len(study_jobs) == 2 * len(stems)
    assert sorted(w["stem"] for rule, w in listed if rule == "gather") == stems
    assert [rule for rule, _ in listed].count("findings") == 1
    assert {"paper", "all"} <= {rule for rule, _ in listed}
    assert not any(p.exists() for p in tmp_path.iterdir() if p.name != ".snakemake"), "a dry run wrote files"
    # one benchmark at a time on this machine, by the resource every study job takes (this machine's one
    # unit: test_smoke_profile_end_to_end)
    blocks = [b for b in re.split(r"\n(?=(?:local)?rule )", r.stdout) if re.match(r"(?:local)?rule study:", b)]
    assert all("host=1" in block for block in blocks)
    # a package study's job takes its whole package as input (editing study 07's spec, its loads, makes it out of date)
    wal = next(b for b in blocks if re.search(r"wildcards: .*stem=pg_wal_level\b", b))
    assert all(str(p) in wal for p in studies.sources("pg_wal_level")), wal


def test_committed_target_lists_every_committed_run(tmp_path):
    r = snakemake(tmp_path, "-n", "--forceall", "committed")
    assert r.returncode == 0, r.stderr + r.stdout
    listed = planned(r.stdout)
    assert sorted(w["stem"] for rule, w in listed if rule == "committed_study") == sorted(
        c.stem for c in jobs.committed_runs())
    assert {"committed_findings", "committed_paper", "committed"} <= {rule for rule, _ in listed}


def test_the_simulated_cluster_profile_is_a_valid_one(tmp_path):
    # The simulated cluster (each job in a container of its own: workflow/profiles/containers) is no longer run
    # in the suite: the real SLURM cluster (tests/test_workflow_slurm.py) covers the workflow over hosts. A dry
    # run still checks that the profile's keys are the generic cluster executor's and that its jobs resolve.
    r = snakemake(tmp_path, "-n", "--profile", str(paths.ROOT / "workflow" / "profiles" / "containers"),
                  "results/smoke/processed/pg_destinations.csv", "results/smoke/processed/log_rotation.csv",
                  "--config", "profile=smoke", "studies=[pg_destinations, log_rotation]", "hosts=[a, b]")
    assert r.returncode == 0, r.stderr + r.stdout
    study_jobs = [w for rule, w in planned(r.stdout) if rule == "study"]
    assert sorted((w["host"], w["stem"]) for w in study_jobs) == [
        (h, n) for h in "ab" for n in ("log_rotation", "pg_destinations")]
    assert not any(p.exists() for p in tmp_path.iterdir() if p.name != ".snakemake"), "a dry run wrote files"


def test_a_bad_profile_is_refused_naming_the_allowed_ones(tmp_path):
    r = snakemake(tmp_path, "-n", "--config", "profile=huge")
    assert r.returncode != 0
    assert "'profile'" in r.stdout + r.stderr and "smoke, standard, full" in r.stdout + r.stderr


# -- the registry's runs ---------------------------------------------------------------------------------------

def test_runs_come_from_the_registry():
    for s in studies.specs():
        smoke = next(r for r in jobs.profile_runs("smoke") if r.study == s.name and not r.extra)
        assert dict(smoke.parameters) == dict(s.smoke[0])
        committed = next(r for r in jobs.committed_runs() if r.study == s.name and not r.extra)
        assert dict(committed.parameters) == dict(s.committed)
        assert committed.committed_notebook == paths.NOTEBOOKS / s.notebook
        user = next(r for r in jobs.profile_runs("standard") if r.study == s.name and not r.extra)
        assert "publish" not in user.parameters, "a user's run never replaces the committed data"
    extras = [r for r in jobs.committed_runs() if r.extra]
    for r in extras:
        assert r.committed_notebook.parent == paths.NOTEBOOKS / "runs"
        assert r.committed_notebook.name == f"{Path(r.notebook).stem}.{r.profile}.ipynb"


def test_a_study_on_a_user_s_server_is_committed_on_a_handed_server():
    """Studies 12 and 13 have a committed run (their notebooks' outputs), on a throwaway server of their engine
    (logbench.servers.handed) whose connection string replaces handed.SERVER; no profile run (a user's server is the
    user's to name), no password in any parameter, the tables under results/committed/, not data/processed."""
    from logbench.servers import handed

    runs = {r.study: r for r in jobs.committed_runs() if r.handed}
    assert {n: r.handed for n, r in runs.items()} == {"own_server": "postgresql", "own_mariadb": "mariadb"}
    for name, r in runs.items():
        assert r.parameters["server"] == handed.SERVER and r.parameters["confirm"] is True
        assert r.profile == "standard" and "publish" not in r.parameters
        assert "password" not in jobs.papermill_yaml(r.parameters).lower()
        assert r.summary == Path("results/committed") / f"{name}.processed" / f"{name}.csv"
        assert r.committed_notebook == paths.NOTEBOOKS / studies.spec(name).notebook
        assert r.launcher("/py") == f"/py -m logbench.servers.handed {r.handed} --"
    # the suite's own studies: launched as they were, their summary in data/processed
    wal = next(r for r in jobs.committed_runs() if r.study == "pg_wal_level")
    assert wal.launcher("/py") == "" and wal.summary == paths.PROCESSED / "pg_wal_level.csv"
    assert not any(r.study in runs for p in jobs.PROFILES for r in jobs.profile_runs(p))
    assert [r.study for r in jobs.committed_runs(["own_mariadb"])] == ["own_mariadb"]
    assert jobs.profile_runs("smoke", ["own_mariadb"]) == []


def test_a_handed_committed_run_s_command_starts_its_server(tmp_path):
    r = snakemake(tmp_path, "-n", "-p", "--forceall", "results/committed/own_server.ipynb")
    assert r.returncode == 0, r.stderr + r.stdout
    assert [rule for rule, _ in planned(r.stdout)] == ["committed_study"], r.stdout
    command = r.stdout[r.stdout.index("require_clean"):]
    assert "-m logbench.servers.handed postgresql -- " in command and "-m papermill" in command
    assert "handed-server.invalid" in command and "results/committed/own_server.processed/own_server.csv" in command
    assert not any(p.exists() for p in tmp_path.iterdir() if p.name != ".snakemake"), "a dry run wrote files"


def test_unknown_study_or_override_is_refused():
    from logbench.base.errors import ParameterError

    with pytest.raises(ParameterError, match="'studies'"):
        jobs.profile_runs("smoke", ["no_such_study"])
    with pytest.raises(ParameterError, match="'parameters'"):
        jobs.profile_runs("smoke", (), {"no_such_study": {"seed": 1}})


def test_source_hash_is_the_code_not_the_outputs(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]}), nbformat.v4.new_code_cell("x")]
    p = tmp_path / "n.ipynb"
    nbformat.write(nb, p)
    before = jobs.source_hash(p)
    nb.cells[1].outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "1"}, execution_count=1)]
    nb.cells[1].execution_count = 1
    nbformat.write(nb, p)
    assert jobs.source_hash(p) == before, "executing a notebook must not make its study out of date"
    nb.cells.insert(1, nbformat.v4.new_markdown_cell("What `x` is."))
    nbformat.write(nb, p)
    assert jobs.source_hash(p) == before, "the notebook's prose is no input of its measurement"
    nb.cells[1].source = "What `x` is, said better."
    nbformat.write(nb, p)
    assert jobs.source_hash(p) == before
    nb.cells[2].source = "x + 1"
    nbformat.write(nb, p)
    assert jobs.source_hash(p) != before


# What the study rule runs, standing in for papermill: the executed notebook and the processed summary, at once.
FAKE_PAPERMILL = """
import json, shutil, sys
from pathlib import Path

source, executed, _, given = sys.argv[1:5]
shutil.copyfile(source, executed)
processed = Path(json.loads(given)["processed_dir"])
processed.mkdir(parents=True, exist_ok=True)
(processed / (processed.parent.name + ".csv")).write_text("x\\n1\\n")
"""


def test_a_prose_edit_reruns_no_study_a_code_edit_does(tmp_path):
    """Issue 39: a study's measurement depends on its notebook's code cells, not on its markdown. A copy of the
    workflow, the package and the notebooks, with papermill stood in for (no benchmark runs), runs study 07's smoke
    job once; after a markdown edit nothing is to be done, after a code edit the study runs again."""
    root = tmp_path / "repo"
    for d in ("lib", "workflow", "notebooks", "docker", "data/raw"):
        shutil.copytree(paths.ROOT / d, root / d, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    # The study rule runs `PYTHONPATH=<root>/lib python -m papermill`: a package there comes first.
    (root / "lib" / "papermill").mkdir()
    (root / "lib" / "papermill" / "__init__.py").write_text("")
    (root / "lib" / "papermill" / "__main__.py").write_text(FAKE_PAPERMILL)
    run = next(r for r in jobs.profile_runs("smoke") if r.study == "pg_wal_level" and not r.extra)
    target = f"results/smoke/any/{run.stem}/processed/{run.stem}.csv"
    work = tmp_path / "work"

    def dry_run() -> list[str]:
        r = subprocess.run([*SNAKEMAKE[:-2], "-s", str(root / "workflow" / "Snakefile"), "--directory", str(work),
                            "-n", target, "--config", "profile=smoke", "studies=[pg_wal_level]"],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr + r.stdout
        return [rule for rule, _ in planned(r.stdout)]

    r = subprocess.run([*SNAKEMAKE[:-2], "-s", str(root / "workflow" / "Snakefile"), "--directory", str(work),
                        "--cores", "1", target, "--config", "profile=smoke", "studies=[pg_wal_level]"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr + r.stdout
    assert (work / target).exists()
    assert dry_run() == []

    notebook = root / "notebooks" / run.notebook
    nb = nbformat.read(notebook, as_version=4)
    prose = next(c for c in nb.cells if c.cell_type == "markdown")
    prose.source += "\n\nA sentence added to the narrative."
    nbformat.write(nb, notebook)
    assert dry_run() == [], "a markdown edit made the study out of date"

    code = next(c for c in nb.cells if c.cell_type == "code" and "parameters" not in c.metadata.get("tags", []))
    code.source += "\nassert True"
    nbformat.write(nb, notebook)
    assert dry_run() == ["study"], "a code edit left the study up to date"


def test_a_study_s_input_is_its_module_or_its_whole_package():
    """Issue 24: editing a package study's bench or analysis makes that study out of date, as editing its module
    does for a one-module study."""
    packages = []
    for r in jobs.profile_runs("smoke") + jobs.committed_runs():
        mod = studies.module(r.study)
        if hasattr(mod, "__path__"):
            packages.append(r.study)
            files = set(Path(mod.__file__).parent.rglob("*.py"))
            assert files <= set(r.sources), f"{r.stem}: {sorted(map(str, files - set(r.sources)))} not inputs"
        else:
            assert r.sources == (Path(mod.__file__),)
    assert {"pg_wal_level", "log_rotation", "pg_idle_connections", "pg_destinations", "pg_audit_timing"} <= \
        set(packages), "studies 07, 06, 08, 02 and 05 are packages (studies/<name>/)"


def test_a_committed_run_refuses_changed_code_not_the_outputs_of_earlier_runs(tmp_path):
    from logbench.base import environment

    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "m.py").write_text("x = 1\n")
    (tmp_path / "data" / "processed").mkdir(parents=True)
    (tmp_path / "data" / "processed" / "s.csv").write_text("a\n1\n")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x")]
    nbformat.write(nb, tmp_path / "n.ipynb")
    (tmp_path / "notebooks" / "runs").mkdir(parents=True)
    nbformat.write(nb, tmp_path / "notebooks" / "runs" / "n.extra.ipynb")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c")
    assert environment.changed_sources(tmp_path) == []
    # what a committed study writes: its processed table, its executed notebook (outputs only), and a further
    # run's executed copy (made from the source notebook as it is now, which may differ from HEAD's copy)
    (tmp_path / "data" / "processed" / "s.csv").write_text("a\n2\n")
    other = nbformat.v4.new_notebook()
    other.cells = [nbformat.v4.new_code_cell("y")]
    nbformat.write(other, tmp_path / "notebooks" / "runs" / "n.extra.ipynb")
    nb.cells[0].outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "1"}, execution_count=1)]
    nbformat.write(nb, tmp_path / "n.ipynb")
    assert environment.changed_sources(tmp_path) == []
    environment.require_clean(tmp_path)
    # code: a notebook's cell, a module
    nb.cells[0].source = "x + 1"
    nbformat.write(nb, tmp_path / "n.ipynb")
    (tmp_path / "lib" / "m.py").write_text("x = 2\n")
    assert environment.changed_sources(tmp_path) == ["lib/m.py", "n.ipynb"]
    with pytest.raises(SystemExit, match="clean tree.*lib/m.py, n.ipynb"):
        environment.require_clean(tmp_path)
    assert environment.changed_sources(tmp_path / "nowhere") is None


# -- nbval's comparison of an executed notebook with the committed one -------------------------------------------

class _Cell:
    """What nbval's IPyNbCell.compare_outputs needs of its cell: nbval's default skips, no sanitizers."""

    colors = nbval_plugin.nocolors
    compare_outputs = nbval_plugin.IPyNbCell.compare_outputs
    sanitize = nbval_plugin.IPyNbCell.sanitize

    def format_output_compare(self, key, left, right):
        # nbval's own asks pytest for the diff's wording; the two values are enough here
        self.comparison_traceback.append(f"mismatch {key!r}\n<<< committed\n{left}\n>>> executed\n{right}")

    def __init__(self):
        # IPyNbFile's defaults without nbdime: images are not compared
        self.parent = SimpleNamespace(sanitize_patterns={}, skip_compare=(
            "metadata", "traceback", "prompt_number", "output_type", "name", "execution_count",
            "application/vnd.jupyter.widget-view+json", "image/png", "image/jpeg"))


def nbval_differences(executed: Path, reference: Path) -> list[str]:
    """The cells whose outputs nbval would find different (its options per cell: tags and comment markers)."""
    def code(path: Path) -> list:
        # papermill's injected cell: the committed run's parameters there, the smoke run's here
        return [c for c in nbformat.read(path, as_version=4).cells
                if c.cell_type == "code" and "injected-parameters" not in c.metadata.get("tags", [])]

    ran, ref = code(executed), code(reference)
    assert len(ran) == len(ref), f"{executed.name}: {len(ran)} code cells executed, {len(ref)} committed"
    out = []
    for i, (test, want) in enumerate(zip(ran, ref)):
        options = dict(nbval_plugin.find_metadata_tags(want.metadata))
        options.update(dict(nbval_plugin.find_comment_markers(want.source)))
        if options.get("skip") or not options.get("check", True) or want.execution_count is None:
            continue
        cell = _Cell()
        if not cell.compare_outputs(nbval_plugin.coalesce_streams(test.outputs),
                                    nbval_plugin.coalesce_streams(want.outputs)):
            out.append(f"cell {i}:\n" + "\n".join(map(str, cell.comparison_traceback))[-3000:])
    return out


def test_nbval_comparison_finds_a_changed_output(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("1", execution_count=1, outputs=[
        nbformat.v4.new_output("execute_result", {"text/plain": "1"}, execution_count=1)])]
    ref = tmp_path / "ref.ipynb"
    nbformat.write(nb, ref)
    assert nbval_differences(ref, ref) == []
    nb.cells[0].outputs[0]["data"]["text/plain"] = "2"
    ran = tmp_path / "ran.ipynb"
    nbformat.write(nb, ran)
    assert nbval_differences(ran, ref) and "2" in nbval_differences(ran, ref)[0]
    nb.cells[0].metadata["tags"] = ["nbval-ignore-output"]
    nbformat.write(nb, ref)
    assert nbval_differences(ran, ref) == []


# -- the smoke profile end to end ---------------------------------------------------------------------------------

SMOKE_TIMEOUT_S = 1800


def needs_docker(run: jobs.StudyRun) -> bool:
    """The container backend, or notebook 03 (both backends), as tests/test_notebooks.py decides."""
    return run.parameters.get("backend") == "container" or run.notebook.startswith("03_")


def docker_missing() -> str | None:
    from logbench.servers.containers import engine_answers

    return None if engine_answers() else "no Docker engine answers; `bash scripts/setup.sh --docker` starts one"


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    """``snakemake --cores 1 --config profile=smoke`` in a fresh working directory, once per session. Without a
    Docker engine (the fresh-machine container) the studies that need one are left out, and their tests skip."""
    work = tmp_path_factory.mktemp("workflow-smoke")
    args = ["--cores", "1", "--config", "profile=smoke"]
    without = docker_missing()
    if without and os.environ.get("CI") and not os.environ.get(FRESH_INSIDE):
        pytest.fail("CI must run the container tests: " + without)
    left = [r.study for r in jobs.profile_runs("smoke") if not (without and needs_docker(r))]
    if without:
        args.append("studies=[" + ", ".join(left) + "]")
    # what the studies' guardians remove: what a study's own teardown left (test_nothing_was_left_behind)
    guardian_log = work / "guardian.log"
    t0 = time.monotonic()
    r = snakemake(work, *args, timeout=SMOKE_TIMEOUT_S, env={**os.environ, cleanup.GUARDIAN_LOG: str(guardian_log)})
    wall = time.monotonic() - t0
    logs = "\n".join(f"--- {p}\n{p.read_text()[-3000:]}" for p in sorted(work.glob("results/smoke/**/*.log")))
    assert r.returncode == 0, f"{r.stdout[-5000:]}\n{r.stderr[-5000:]}\n{logs}"
    print(f"workflow smoke profile: {wall:.0f} s")
    return SimpleNamespace(dir=work, out=work / "results" / "smoke", args=args, studies=left, without=without,
                           wall=wall, log=r.stdout + r.stderr, guardian_log=guardian_log)


@pytest.mark.integration
@pytest.mark.workflow_smoke
# the session's smoke run is made in this test's set-up: its own time limit, not the suite's 900 s (in CI it shares
# the machine with the fresh-machine container, tests/conftest.py)
@pytest.mark.timeout(SMOKE_TIMEOUT_S + 120)
def test_smoke_profile_end_to_end(smoke_run):
    out = smoke_run.out
    assert 'Provided resources: host=Resource("host", 1)' in smoke_run.log, "this machine is one host"
    for r in jobs.profile_runs("smoke", smoke_run.studies):
        per_host = pd.read_csv(out / "any" / r.stem / "processed" / f"{r.stem}.csv")
        assert "env_id" in per_host.columns and per_host["env_id"].notna().all(), r.stem
        gathered = pd.read_csv(out / "processed" / f"{r.stem}.csv")
        assert set(gathered["host"]) == {"any"} and len(gathered) == len(per_host), r.stem
        assert json.loads((out / "processed" / f"{r.stem}_environment.json").read_text())["hosts"].keys() == {"any"}
    assert (out / "processed" / "findings_claims.csv").exists()
    assert (out / "notebooks" / "90_findings.ipynb").exists()
    pdf = out / "paper" / "logbench.pdf"
    assert pdf.read_bytes()[:5] == b"%PDF-"
    numbers = json.loads((out / "paper" / "generated" / "numbers.json").read_text())
    assert {s["name"] for s in numbers["studies"]} >= {r.study for r in jobs.profile_runs("smoke", smoke_run.studies)
                                                       if studies.spec(r.study).measures_logging}


@pytest.mark.integration
@pytest.mark.workflow_smoke
@pytest.mark.parametrize("name", [s.name for s in studies.specs()])
def test_smoke_notebook_matches_the_committed_one_under_nbval(smoke_run, name):
    run = next(r for r in jobs.profile_runs("smoke") if r.study == name and not r.extra)
    if name not in smoke_run.studies:
        pytest.skip(f"{run.notebook} left out of the workflow's smoke run: {smoke_run.without}")
    executed = smoke_run.out / "any" / run.stem / f"{run.stem}.ipynb"
    differences = nbval_differences(executed, paths.NOTEBOOKS / run.notebook)
    assert not differences, f"{run.notebook} (smoke, {dict(run.parameters)}):\n" + "\n".join(differences)


@pytest.mark.integration
@pytest.mark.workflow_smoke
def test_nothing_was_left_behind(smoke_run):
    """Every study's own teardown stopped and removed what it started: when its kernel ended, its guardian
    (logbench.base.cleanup) found nothing to remove. (The study's processes and directories are gone either way; the
    guardian would have removed what the teardown left before this test could look.)"""
    deadline = time.monotonic() + 60
    while guardians_writing_to(smoke_run.guardian_log) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not guardians_writing_to(smoke_run.guardian_log), "guardians still running after 60 s"
    left = smoke_run.guardian_log.read_text() if smoke_run.guardian_log.exists() else ""
    assert not left, f"the guardians of the smoke run's studies removed what their teardown left:\n{left}"


@pytest.mark.integration
@pytest.mark.workflow_smoke
def test_log_rotations_every_method_once_under_load(smoke_run):
    """tests/test_log_rotation.py's real run of study 06 is the smoke run's study: asserted on its runs here (that test
    runs it itself only when the workflow's smoke run is not part of the session)."""
    from logbench.base import records
    from logbench.studies import log_rotation as rot
    from test_log_rotation import check_every_method_once

    run = next(r for r in jobs.profile_runs("smoke") if r.study == rot.NAME and not r.extra)
    out = smoke_run.out / "any" / run.stem
    check_every_method_once(rot.define(**dict(run.parameters), output_dir=out), records.load(out / "runs.jsonl"))


def smoke_run_directory(smoke_run, study: str) -> Path:
    """The run directory (records, environment, processed tables) of ``study``'s first smoke parameter set."""
    run = next(r for r in jobs.profile_runs("smoke") if r.study == study and not r.extra)
    return smoke_run.out / "any" / run.stem


@pytest.mark.integration
@pytest.mark.workflow_smoke
def test_cost_prices_on_the_smoke_runs_study_11(smoke_run):
    """tests/test_cost_cli.py's ``--run`` on a real study 11 run, on the smoke run's (that test measures one of its own
    only when the workflow's smoke run is not part of the session)."""
    from test_cost_cli import check_prices_on_a_study_11_run

    check_prices_on_a_study_11_run(smoke_run_directory(smoke_run, "record_cost"))


@pytest.mark.integration
@pytest.mark.workflow_smoke
def test_the_smoke_runs_study_07_renders_to_the_tables_it_wrote(smoke_run, tmp_path):
    """tests/test_recorded.py's render of a measured block run, on the smoke run's study 07 (as above)."""
    from test_recorded import SMOKE_RENDERED, check_renders_to_the_tables_it_wrote

    run_dir = smoke_run_directory(smoke_run, "pg_wal_level")
    check_renders_to_the_tables_it_wrote("pg_wal_level", SMOKE_RENDERED, run_dir, run_dir / "processed", tmp_path)


@pytest.mark.integration
@pytest.mark.workflow_smoke
def test_a_changed_parameter_reruns_that_study_the_findings_and_the_paper_only(smoke_run):
    r = snakemake(smoke_run.dir, "-n", *smoke_run.args, "parameters={log_rotation: {seed: 7}}")
    assert r.returncode == 0, r.stderr + r.stdout
    listed = sorted((rule, w.get("stem", "")) for rule, w in planned(r.stdout))
    stem = next(x.stem for x in jobs.profile_runs("smoke") if x.study == "log_rotation" and not x.extra)
    assert listed == sorted([("study", stem), ("gather", stem), ("findings", ""), ("paper", ""), ("all", "")])
    assert "Params have changed" in r.stdout


@pytest.mark.integration
@pytest.mark.workflow_smoke
def test_nothing_to_do_after_the_run(smoke_run):
    r = snakemake(smoke_run.dir, "-n", *smoke_run.args)
    assert r.returncode == 0 and "Nothing to be done" in r.stdout + r.stderr, r.stdout[-3000:]


# -- results from several machines --------------------------------------------------------------------------------

def _summary(env_id: str, ratio: float) -> pd.DataFrame:
    return pd.DataFrame({"configuration": ["none", "stderr"], "clients": [1, 1], "n": [5, 5],
                         "ratio": [1.0, ratio], "ratio_ci_low": [float("nan"), ratio - 0.1],
                         "ratio_ci_high": [float("nan"), ratio + 0.1], "env_id": [env_id, env_id]})


def test_gather_keeps_each_host_and_environment_side_by_side(tmp_path):
    from logbench.publish import gather, report

    for host, env_id, ratio in (("a", "e1", 0.8), ("b", "e2", 0.6)):
        d = tmp_path / host
        d.mkdir()
        _summary(env_id, ratio).to_csv(d / "s.csv", index=False)
        (d / "s_environment.json").write_text(json.dumps({"env_id": env_id, "hostname": f"logbench-{host}",
                                                          "cpu_count": 2}))
    gather.gather(tmp_path / "out", {"a": tmp_path / "a", "b": tmp_path / "b"})
    merged = pd.read_csv(tmp_path / "out" / "s.csv")
    assert list(merged["host"]) == ["a", "a", "b", "b"] and list(merged["env_id"]) == ["e1", "e1", "e2", "e2"]
    assert list(merged["ratio"]) == [1.0, 0.8, 1.0, 0.6], "each host's ratio as it was: nothing pooled"
    env = json.loads((tmp_path / "out" / "s_environment.json").read_text())
    assert env["cpu_count"] == 2 and "hostname" not in env, "only what all hosts share is stated at the top"
    assert env["hosts"]["b"]["hostname"] == "logbench-b"
    # the findings and the paper: one cell per environment; a single environment adds no cell
    assert report.cells(merged) == [{"host": "a", "env_id": "e1"}, {"host": "b", "env_id": "e2"}]
    assert list(report.study_table(merged).columns[:3]) == ["host", "env_id", "configuration"]
    assert report.cells(_summary("e1", 0.8)) == [{}]
    from logbench.analyze.claims import StudyData

    side = report.environment_ratios({"s": StudyData(name="s", engine="postgresql", baseline="none",
                                                     runs=pd.DataFrame(), summary=merged, environment=env)})["s"]
    assert list(side.columns) == ["configuration", "clients", "a · e1", "b · e2"]
    assert list(side.loc[side["configuration"] == "stderr", ["a · e1", "b · e2"]].iloc[0]) == [
        "0.800 [0.700, 0.900]", "0.600 [0.500, 0.700]"]
    single = StudyData(name="s", engine="postgresql", baseline="none", runs=pd.DataFrame(),
                       summary=_summary("e1", 0.8), environment={})
    assert report.environment_ratios({"s": single}) == {}


def test_processed_tables_carry_their_environment():
    from logbench.base import records

    plain = pd.DataFrame({"configuration": ["none"], "n": [3]})
    assert list(records.with_environment(plain, {"env_id": "e1"})["env_id"]) == ["e1"]
    split = pd.DataFrame({"variant": ["local", "container"], "n": [3, 3]})
    env = {"variants": {"local": {"env_id": "e1"}, "container": {"env_id": "e2"}}}
    assert list(records.with_environment(split, env)["env_id"]) == ["e1", "e2"]
    # study 03 names its variants "backend": each backend is its own cell already, env_id adds none
    backends = pd.DataFrame({"backend": ["local", "container"], "configuration": ["none", "none"],
                             "clients": [1, 1], "n": [3, 3]})
    tagged = records.with_environment(backends, env)
    assert list(tagged["env_id"]) == ["e1", "e2"]
    from logbench.publish import report

    assert report.cell_columns(tagged) == ["backend"]
    runs = pd.DataFrame({"env_id": ["x"]})
    assert records.with_environment(runs, {"env_id": "e1"}) is runs, "the runs' own env_id is kept"
