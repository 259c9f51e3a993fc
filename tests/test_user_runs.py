"""What a user running a study gets (issue 17): their results kept apart from the committed ones (publish),
progress on a channel outside the notebook, the answer in the terminal, their numbers beside the reference
machine's, and run.sh's usage text."""

import hashlib
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from logbench.publish import answer
from logbench.base import paths, progress, records
from logbench import studies
from logbench.base.errors import ParameterError
from logbench.base.formatting import ci_text
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
        # the block design's progress lines (the switchback design's own: tests/test_switchback.py)
        study = study_mod.define(profile="standard", design="blocks", destinations=["stderr"], clients=[1], repeats=2,
                                 duration=1, warmup=0, scale=1, target_halfwidth="off", backend="local",
                                 output_dir=tmp / "out")
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
    # the planner's prediction beside what the run reached (issue 40): a standard profile's run has one, where the
    # committed runs it predicts from ran on this machine's processor under its cpuidle driver (else it predicts
    # nothing)
    from logbench.base import environment
    from logbench.measure import controls

    same = (records.processor_of(paths.PROCESSED, "pg_destinations") in ("", environment.cpu_model())
            and records.idle_driver_of(paths.PROCESSED, "pg_destinations") in ("", controls.cpuidle_driver()))
    assert {p.name for p in own.iterdir()} == {"pg_destinations.csv", "pg_destinations_runs.csv",
                                               "pg_destinations_per_record.csv", "pg_destinations_environment.json",
                                               *(["pg_destinations_planned.csv"] if same else [])}
    # the standard profile's block layout: the baseline x3 and the A/A x2 beside stderr, 6 runs a block
    assert len(pd.read_csv(own / "pg_destinations_runs.csv")) == len(result.runs) == len(study.plan()) == 12


@pytest.mark.integration
@needs_root
def test_progress_lines_reach_the_channel_not_the_notebook(user_run, capsys):
    study, result, *_, lines = user_run
    text = lines.splitlines()
    assert any("servers up in" in ln for ln in text)
    # one line per block (not per run): runs done / planned, time left, each arm's running ratio
    for b, done in ((1, 6), (2, 12)):
        assert any(f"block {b}/2 done · {done}/12 runs · " in ln and "elapsed" in ln and "left" in ln
                   and "stderr/none ×1: " in ln and "none_again/none ×1: " in ln for ln in text), lines
    assert not any(" run 1/12: " in ln for ln in text), lines
    assert any("12/12 runs recorded in" in ln for ln in text)
    assert any(f"processed tables in {study.processed_dir}" in ln for ln in text)


@pytest.mark.integration
@needs_root
def test_the_answer_of_a_recorded_run(user_run, tmp_path):
    study, result, *_ = user_run
    out = Path(study.output_dir)
    r = subprocess.run([sys.executable, "-m", "logbench.publish.answer", str(out)], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "PYTHONPATH": str(paths.ROOT / "lib")})
    assert r.returncode == 0, r.stderr
    summary = pd.read_csv(out / "processed" / "pg_destinations.csv")
    row = summary[summary.configuration == "stderr"].iloc[0]
    assert ci_text(row.ratio, row.ratio_ci_low, row.ratio_ci_high) in r.stdout
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
    assert "02_pg_destinations.out.html" in text and ci_text(row.ratio, row.ratio_ci_low, row.ratio_ci_high) in text


# -- the user's numbers beside the reference machine's -------------------------------------------------------

def _ratio_table(name: str) -> bool:
    cols = pd.read_csv(paths.PROCESSED / f"{name}.csv", nrows=0).columns
    return "n" in cols and "ratio_ci_low" in cols


COMPARED = [s for s in studies.specs() if (paths.PROCESSED / f"{s.name}.csv").exists() and _ratio_table(s.name)]
# a study whose summary is not a ratio table (the digest: one capture, B/A per fingerprint) compares a named value
VALUED = [s for s in studies.specs() if (paths.PROCESSED / f"{s.name}.csv").exists() and not _ratio_table(s.name)]


# each valued study's key and value, as its notebook compares them
VALUED_AS = {"mysql_digest": ("fingerprint", "ratio"), "pg_digest": ("query", "time_mean_ms"),
             "record_cost": (["engine", "configuration"], "backend_instructions_per_record")}


@pytest.mark.parametrize("spec", VALUED, ids=[s.name for s in VALUED])
def test_beside_reference_of_a_value_without_an_interval(spec):
    key, value = VALUED_AS[spec.name]
    keys = key if isinstance(key, list) else [key]

    def at(row):  # a row's cell in the comparison's index
        return tuple(row[k] for k in keys) if len(keys) > 1 else row[keys[0]]

    ref = pd.read_csv(paths.PROCESSED / f"{spec.name}.csv")
    ref = ref[ref[value].notna()].reset_index(drop=True)  # the cells that have the value (a baseline has no record)
    mine = ref.assign(**{value: ref[value] * 2}).iloc[1:]
    b = common.beside_reference(spec, mine, keys=keys, value=value)
    assert list(b.cells.columns) == [f"yours: {value}", f"reference: {value}"]
    first = ref.iloc[1]
    assert b.cells.loc[at(first), f"reference: {value}"] == f"{first[value]:.4g}"
    assert b.cells.loc[at(ref.iloc[0]), f"yours: {value}"] == "–"  # a cell only the reference ran


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
        assert b.cells.loc[key, "reference: ratio [95 % CI] (n)"] == ci_text(
            r.ratio, r.ratio_ci_low, r.ratio_ci_high, n=int(r.n))
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


def test_block_line_names_the_widest_arms(tmp_path):
    est = {"csvlog/none ×4": (0.9731, 0.012), "stderr/none ×4": (0.48, 0.0625), "syslog/none ×1": (0.5, math.nan),
           "jsonlog/none ×4": (0.91, 0.02), "none_again/none ×4": (1.004, 0.015), "syslog/none ×4": (0.7, 0.009)}
    line = progress.block_line(3, 4, est, 250, 85, runs=(36, 48))
    assert line == ("block 3/4 done · 36/48 runs · 4m10s elapsed, ~1m25s left · syslog/none ×1: 0.500 ± ? · "
                    "stderr/none ×4: 0.480 ± 6.2 % · jsonlog/none ×4: 0.910 ± 2.0 % · "
                    "none_again/none ×4: 1.004 ± 1.5 % · 2 more (each within ± 1.2 %)")
    assert progress.block_line(1, 1, {}, 3, what="warm-up block") == "warm-up block 1/1 done · 3s elapsed"
    assert progress.block_line(1, 2, {"a/b ×1": (math.nan, math.nan)}, 0, 0) == "block 1/2 done · 0s elapsed, ~0s left · a/b ×1: –"
    # the reporter says it on the channel (another executor's own estimates); the counter adds the runs
    channel = tmp_path / "p.txt"
    rep = progress.Reporter("demo", path=channel)
    assert rep.block(1, 2, {"x/y ×2": (1.1, 0.03)}, 5, 5) == "block 1/2 done · 5s elapsed, ~5s left · x/y ×2: 1.100 ± 3.0 %"
    counter = progress.RunCounter(rep, 6, done=3, nominal_s=2.0, budget_s=30)
    counter.block_done(1, 2, {"x/y ×2": (1.1, 0.03)})
    text = channel.read_text()
    assert "demo: block 1/2 done · 5s elapsed, ~5s left · x/y ×2: 1.100 ± 3.0 %" in text
    assert "demo: block 1/2 done · 3/6 runs · 0s elapsed, ~6s left (+ adaptive blocks, at most 30s) · x/y ×2: " in text


def test_a_phase_heartbeat_at_its_own_pace_and_text(tmp_path):
    channel = tmp_path / "p.txt"
    rep = progress.Reporter("demo", path=channel, heartbeat_s=0.2)
    where = {"run": "run 1/3"}
    with rep.phase(lambda: f"block 1: {where['run']}", every=1.5):
        time.sleep(0.8)
        where["run"] = "run 2/3"
        time.sleep(1.5)
    rep.close()
    beats = [ln for ln in channel.read_text().splitlines() if "so far)" in ln]
    assert len(beats) == 1 and "demo: block 1: run 2/3 (" in beats[0]  # one beat after 1.5 s, not one per 0.2 s


# -- the HTML report -------------------------------------------------------------------------------------

def test_the_html_report_puts_the_answer_first_and_leaves_code_and_stderr_out(tmp_path):
    out = tmp_path / "run"
    (out / "processed").mkdir(parents=True)
    for name in ("pg_destinations.csv", "pg_destinations_environment.json"):
        (out / "processed" / name).write_bytes((paths.PROCESSED / name).read_bytes())
    png = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
    v4 = nbformat.v4
    nb = v4.new_notebook(cells=[
        v4.new_markdown_cell("# 02 · the narrative title\n\nWhy this study ran."),
        v4.new_code_cell("import secret_input_marker", outputs=[
            v4.new_output("stream", name="stderr", text="TqdmWarning: IProgress not found\n"),
            v4.new_output("stream", name="stdout", text="108 runs recorded\n"),
            v4.new_output("display_data", data={"application/vnd.jupyter.widget-view+json": {"model_id": "x"},
                                                "text/plain": "widget_text_marker 0%|"})]),
        v4.new_code_cell("parameters_marker = 1"),
        v4.new_code_cell("plot_marker()", outputs=[v4.new_output("display_data", data={"image/png": png,
                                                                                    "text/plain": "<Figure>"})]),
    ])
    nb.metadata["papermill"] = {"input_path": "notebooks/02_pg_destinations.ipynb",
                                "parameters": {"profile": "standard", "output_dir": str(out)}}
    executed = tmp_path / "02_pg_destinations.out.ipynb"
    nbformat.write(nb, executed)
    before = executed.read_bytes()
    html = answer.export_html(executed).read_text()
    assert executed.read_bytes() == before  # the notebook itself is left as it ran
    for gone in ("secret_input_marker", "parameters_marker", "plot_marker", "IProgress", "TqdmWarning",
                 "widget_text_marker", 'data-mime-type="application/vnd.jupyter.stderr"'):
        assert gone not in html, gone
    assert "108 runs recorded" in html and "Why this study ran." in html
    assert "data:image/png;base64," + png[:20] in html  # figures stay embedded
    summary = pd.read_csv(out / "processed" / "pg_destinations.csv")
    row = summary[summary.configuration == "stderr"].iloc[0]
    first = html.index("The answer")
    assert first < html.index(ci_text(row.ratio, row.ratio_ci_low, row.ratio_ci_high)) < html.index("the narrative title")
    assert first < html.index("A/A ratio") < html.index("the narrative title")
    assert "02_pg_destinations.out.html" in html  # the answer names the report it is in
    # a notebook that is not a study's still exports, without an answer
    other = tmp_path / "90_findings.out.ipynb"
    nbformat.write(v4.new_notebook(cells=[v4.new_markdown_cell("# findings")]), other)
    text = answer.export_html(other).read_text()
    assert "findings" in text and "The answer" not in text


def test_usage_lists_every_study():
    env = {**os.environ, "PYTHONPATH": str(paths.ROOT / "lib"),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    r = subprocess.run(["bash", str(paths.ROOT / "run.sh")], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2
    assert "bash run.sh study" in r.stderr and "bash run.sh test" in r.stderr
    for s in studies.specs():
        assert s.notebook in r.stderr and s.title in r.stderr
