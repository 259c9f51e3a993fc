"""What a user running a study gets (issue 17): their results kept apart from the committed ones (publish),
progress on a channel outside the notebook, the answer in the terminal, their numbers beside the reference
machine's, and run.sh's usage text."""

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from logbench import answer, paths, progress, studies
from logbench.errors import ParameterError
from logbench.plots import fmt_ci
from logbench.studies import common
from logbench.studies import pg_destinations as study_mod

from conftest import needs_root


def tree_digest(root: Path) -> dict[str, tuple[int, str]]:
    """Every file under ``root``: (mtime_ns, sha256): a write that leaves the content equal still shows."""
    return {str(p.relative_to(root)): (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(root.rglob("*")) if p.is_file()}


# -- publish: only the committed run writes data/processed -------------------------------------------------

def test_processed_path_by_publish(tmp_path):
    out = tmp_path / "run"
    assert common.processed_path("standard", output_dir=out) == out / "processed"
    assert common.processed_path("smoke", output_dir=out) == out / "processed"
    assert common.processed_path("standard", publish=True, output_dir=out) == paths.PROCESSED
    assert common.processed_path("standard", tmp_path / "mine", output_dir=out) == tmp_path / "mine"
    with pytest.raises(ParameterError, match="'publish'.*smoke"):
        common.processed_path("smoke", publish=True, output_dir=out)
    with pytest.raises(ParameterError, match="'processed_dir'.*publish=True"):
        common.processed_path("standard", str(paths.PROCESSED), output_dir=out)


def test_publish_is_a_checked_shared_parameter(tmp_path):
    assert "publish" in common.SHARED
    s = study_mod.define(profile="standard", destinations=["stderr"], backend="local", output_dir=tmp_path)
    assert (s.publish, s.processed_dir) == (False, tmp_path / "processed")
    assert study_mod.define(profile="standard", backend="local", publish=True).processed_dir == paths.PROCESSED
    with pytest.raises(ParameterError, match="'publish'.*True or False"):
        study_mod.define(profile="standard", backend="local", publish="yes")


def test_every_committed_run_publishes():
    for s in studies.specs():
        for run in (s.committed, *getattr(s, "extra_committed", ())):
            assert run.get("publish") is True, f"{s.name}: committed run {dict(run)} lacks 'publish': True"


@pytest.fixture(scope="module")
def user_run(tmp_path_factory):
    """A real, short non-smoke run of study 02 as a user makes it (publish left False), with the progress
    channel on; data/processed digested before and after."""
    if os.geteuid() != 0:
        pytest.skip("needs root: the study's syslog destinations need a mount namespace")
    tmp = tmp_path_factory.mktemp("user-run")
    channel = tmp / "progress.txt"
    before = tree_digest(paths.PROCESSED)
    old = os.environ.get(progress.ENV)
    os.environ[progress.ENV] = str(channel)
    try:
        study = study_mod.define(profile="standard", destinations=["stderr"], clients=[1], repeats=2, duration=1,
                                 warmup=0, scale=1, target_halfwidth="off", backend="local", output_dir=tmp / "out")
        result = study_mod.run(study, progress=False)
    finally:
        if old is None:
            os.environ.pop(progress.ENV)
        else:
            os.environ[progress.ENV] = old
    return study, result, before, tree_digest(paths.PROCESSED), channel.read_text()


@pytest.mark.integration
@needs_root
def test_a_user_run_never_touches_data_processed(user_run):
    study, result, before, after, _ = user_run
    assert after == before
    own = Path(study.output_dir) / "processed"
    assert {p.name for p in own.iterdir()} == {"pg_destinations.csv", "pg_destinations_runs.csv",
                                               "pg_destinations_environment.json"}
    assert len(pd.read_csv(own / "pg_destinations_runs.csv")) == len(result.runs) == 6


@pytest.mark.integration
@needs_root
def test_progress_lines_reach_the_channel_not_the_notebook(user_run, capsys):
    study, result, *_, lines = user_run
    text = lines.splitlines()
    assert any("servers up in" in ln for ln in text)
    for i in range(1, 7):
        assert any(f"run {i}/6: " in ln and "elapsed" in ln and "left" in ln for ln in text), lines
    assert any("6/6 runs recorded in" in ln for ln in text)
    assert any(f"processed tables in {study.processed_dir}" in ln for ln in text)


@pytest.mark.integration
@needs_root
def test_the_answer_of_a_recorded_run(user_run, tmp_path):
    study, result, *_ = user_run
    out = Path(study.output_dir)
    r = subprocess.run([sys.executable, "-m", "logbench.answer", str(out)], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "PYTHONPATH": str(paths.ROOT / "lib")})
    assert r.returncode == 0, r.stderr
    summary = pd.read_csv(out / "processed" / "pg_destinations.csv")
    row = summary[summary.configuration == "stderr"].iloc[0]
    assert fmt_ci(row.ratio, row.ratio_ci_low, row.ratio_ci_high) in r.stdout
    assert "A/A ratio" in r.stdout and "reference ratio" in r.stdout
    assert str(out / "runs.jsonl") in r.stdout or "runs.jsonl" in r.stdout
    # the same from an executed notebook: papermill's parameters say where the run wrote; --html exports it
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# a run")])
    nb.metadata["papermill"] = {"input_path": "notebooks/02_pg_destinations.ipynb",
                                "parameters": {"profile": "standard", "output_dir": str(out)}}
    executed = tmp_path / "02_pg_destinations.out.ipynb"
    nbformat.write(nb, executed)
    assert answer.main(["--html", str(executed)]) == 0
    html = executed.with_suffix(".html")
    assert html.exists() and "a run" in html.read_text()
    text = answer.answer(executed)
    assert "02_pg_destinations.out.html" in text and fmt_ci(row.ratio, row.ratio_ci_low, row.ratio_ci_high) in text


# -- the user's numbers beside the reference machine's -------------------------------------------------------

def _ratio_table(name: str) -> bool:
    cols = pd.read_csv(paths.PROCESSED / f"{name}.csv", nrows=0).columns
    return "n" in cols and "ratio_ci_low" in cols


COMPARED = [s for s in studies.specs() if (paths.PROCESSED / f"{s.name}.csv").exists() and _ratio_table(s.name)]
# a study whose summary is not a ratio table (the digest: one capture, B/A per fingerprint) compares a named value
VALUED = [s for s in studies.specs() if (paths.PROCESSED / f"{s.name}.csv").exists() and not _ratio_table(s.name)]


@pytest.mark.parametrize("spec", VALUED, ids=[s.name for s in VALUED])
def test_beside_reference_of_a_value_without_an_interval(spec):
    ref = pd.read_csv(paths.PROCESSED / f"{spec.name}.csv")
    mine = ref.assign(ratio=ref["ratio"] * 2).iloc[1:]
    b = common.beside_reference(spec, mine, keys=["fingerprint"], value="ratio")
    assert list(b.cells.columns) == ["yours: ratio", "reference: ratio"]
    first = ref.iloc[1]
    assert b.cells.loc[first["fingerprint"], "reference: ratio"] == f"{first['ratio']:.4g}"
    assert b.cells.loc[ref.iloc[0]["fingerprint"], "yours: ratio"] == "–"  # a cell only the reference ran


@pytest.mark.parametrize("spec", COMPARED, ids=[s.name for s in COMPARED])
def test_beside_reference_on_the_committed_data(spec):
    ref = pd.read_csv(paths.PROCESSED / f"{spec.name}.csv")
    env = json.loads((paths.PROCESSED / f"{spec.name}_environment.json").read_text())
    cols = list(ref.columns)
    keys = cols[:cols.index("n")]
    # "this run": the reference with other ratios and one cell missing
    mine = ref.assign(ratio=ref["ratio"] * 0.9).iloc[1:]
    b = common.beside_reference(spec, mine, environment=env)
    assert list(b.cells.columns) == ["yours: ratio [95 % CI] (n)", "reference: ratio [95 % CI] (n)"]
    assert list(b.cells.index.names) == keys
    compared = ref[ref["ratio_ci_low"].notna()]
    for _, r in compared.iterrows():
        key = tuple(r[k] for k in keys) if len(keys) > 1 else r[keys[0]]
        assert b.cells.loc[key, "reference: ratio [95 % CI] (n)"] == fmt_ci(
            r.ratio, r.ratio_ci_low, r.ratio_ci_high, int(r.n))
    assert len(b.cells) == len(compared.drop_duplicates(keys))
    assert "CPU" in b.environment.index and "server" in b.environment.index
    assert any(c.startswith("reference") for c in b.environment.columns)
    assert "<table" in b._repr_html_()


def test_beside_reference_of_the_published_run_and_of_a_study_without_one(tmp_path):
    summary = pd.read_csv(paths.PROCESSED / "pg_destinations.csv")
    published = common.beside_reference(study_mod.SPEC, summary, publish=True)
    assert "published reference" in published.note and published.cells is None
    absent = common.beside_reference("no_such_stem", summary, reference_dir=tmp_path)
    assert "No committed reference" in absent.note and absent.cells is None


def test_every_study_notebook_shows_the_reference_and_takes_publish():
    import papermill

    for s in studies.specs():
        nb = nbformat.read(paths.NOTEBOOKS / s.notebook, as_version=4)
        assert any("common.beside_reference(" in c.source for c in nb.cells), s.notebook
        assert "publish" in papermill.inspect_notebook(str(paths.NOTEBOOKS / s.notebook)), s.notebook


# -- progress channel and usage ------------------------------------------------------------------------------

def test_progress_counter_and_heartbeat(tmp_path):
    channel = tmp_path / "p.txt"
    rep = progress.Reporter("demo", path=channel, heartbeat_s=0.2)
    counter = progress.RunCounter(rep, 4, done=1, nominal_s=2.0, budget_s=30)
    counter.starting("csvlog", 4)
    with rep.phase("run 2/4: csvlog × 4"):
        time.sleep(0.7)
    counter.finished()
    counter.grown(3, "block 2 for 1 cell(s) wider than ±3 %")
    rep.close()
    text = channel.read_text()
    assert "demo: run 2/4: csvlog × 4 client(s) · 0s elapsed, ~6s left (+ adaptive blocks, at most 30s)" in text
    assert "so far)" in text  # the heartbeat while the run ran
    assert "7 planned" in text
    silent = progress.Reporter("demo", path=None)
    silent.say("nothing")  # no channel: a no-op
    assert progress.duration(3725) == "1h02m" and progress.duration(65) == "1m05s"


def test_usage_lists_every_study():
    env = {**os.environ, "PYTHONPATH": str(paths.ROOT / "lib"),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    r = subprocess.run(["bash", str(paths.ROOT / "run.sh")], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2
    assert "bash run.sh study" in r.stderr and "bash run.sh test" in r.stderr
    for s in studies.specs():
        assert s.notebook in r.stderr and s.title in r.stderr
