"""A finished run rendered instead of measured (``recorded``: logbench.studies.recorded; issue 39's "committed notebooks
whose measurement did not change are re-rendered from their recorded runs, not re-measured").

The committed runs keep no raw records (data/raw holds the posts' numbers and the claims): what a committed render
reads is the committed tables, ``<stem>_runs.csv`` (every record field; nested ones as JSON) and
``<stem>_environment.json``, or ``<stem>_records.jsonl`` where a published run kept its records. Here: for every
committed run of a study that renders, the tables rebuilt from those files against the committed ones (byte for
byte where the numbers are exact; within the runs table's six-digit rounding where they are not); and, on real
servers, a measured run rendered from its run directory gives the bytes it wrote. Nothing is written outside
pytest's temporary directory (data/processed is only read).
"""

from __future__ import annotations

import filecmp
import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from conftest import the_smoke_run_is_here
from logbench import jobs, studies
from logbench.base import paths, records
from logbench.base.errors import ParameterError
from logbench.studies import recorded

# Studies whose run is no schedule of Run records (their own run(), no ``recorded`` parameter), and why a committed
# render of them is not made from data/processed.
NOT_RENDERED = {
    "instrument": "its three parts' records (noise series, anomaly, design sessions) are kept only as derived tables "
                  "(instrument_series.csv is per-second, not the records); no instrument_runs.csv",
    "mysql_digest": "its table is pt-query-digest's digest of a captured slow log, which is not committed",
    "pg_digest": "its table is pgBadger's digest of a captured statement log, which is not committed",
    "record_cost": "record_cost_starts.csv keeps its raw starts, but its calibration table is made from the raw "
                   "write() and load timings (calibration.jsonl), which are not committed",
}


def committed_renders() -> list[jobs.StudyRun]:
    return [r for r in jobs.committed_runs() if r.study not in NOT_RENDERED and r.measured]


def test_every_study_either_renders_or_says_why_not():
    declares = {s.name for s in studies.specs() if "recorded" in studies.module(s.name).define.declaration.parameters}
    assert declares == {s.name for s in studies.specs()} - set(NOT_RENDERED)
    assert set(NOT_RENDERED) <= {s.name for s in studies.specs()}


def own_files(stem: str, processed: Path = paths.PROCESSED) -> set[str]:
    """The committed files of ``stem`` (not those of a longer stem beginning with it: pg_destinations_versions)."""
    others = [r.stem for r in jobs.committed_runs() if r.stem != stem and r.stem.startswith(stem + "_")]
    return {p.name for p in processed.glob(f"{stem}*")
            if p.name in (f"{stem}.csv",) or (p.name.startswith(stem + "_")
                                              and not any(p.name.startswith(o + "_") or p.name == f"{o}.csv"
                                                          for o in others))}


def render(run: jobs.StudyRun, tmp: Path) -> Path:
    """The committed run of ``run`` rendered from data/processed; its processed tables in ``tmp/processed``."""
    module = studies.module(run.study)
    params = {k: v for k, v in run.parameters.items() if k != "publish"}
    study = module.define(**params, recorded="committed", output_dir=str(tmp / "out"),
                          processed_dir=str(tmp / "processed"))
    assert study.recorded == "committed"
    module.run(study, progress=False)
    return tmp / "processed"


_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _close(a: str, b: str) -> bool:
    """Two numbers as a table or a sentence printed them agree within what a six-digit input can move: a relative
    1e-4 (a CI's or a p-value's sixth digit), 1e-5 (a ratio's), or one unit of the last digit shown (a sentence's
    "0.026 %")."""
    x, y = float(a), float(b)
    digits = min(len(t.split("e")[0].partition(".")[2]) for t in (a.lower(), b.lower()))
    # abs_tol: a ratio or a log ratio (of order 1) made from six-digit numbers is known to about 1e-5
    return math.isclose(x, y, rel_tol=1e-4, abs_tol=1e-5) or ("e" not in (a + b).lower()
                                                               and abs(x - y) <= 1.0001 * 10.0 ** -digits)


def beyond_precision(rebuilt: Path, committed: Path, *, new_columns: tuple[str, ...] = ()) -> list[str]:
    """The cells of two CSV tables that differ by more than rounding their inputs to six digits moves them: a
    relative 1e-4 of the cell, or of its column's largest value (a slope or a difference near zero is made from
    numbers of that size), or one unit of the last digit a sentence shows. ``new_columns``: columns today's code adds
    that the committed run's did not write (left out of the comparison)."""
    a, b = (pd.read_csv(f, dtype=str, keep_default_na=False) for f in (rebuilt, committed))
    a = a.drop(columns=[c for c in new_columns if c in a and c not in b])
    if list(a.columns) != list(b.columns) or a.shape != b.shape:
        return [f"{committed.name}: columns or shape differ: {list(a.columns)} {a.shape}, {list(b.columns)} {b.shape}"]
    out = []
    for col in a.columns:
        scale = pd.to_numeric(b[col], errors="coerce").abs().max()
        for i, (x, y) in enumerate(zip(a[col], b[col])):
            if x == y:
                continue
            nx, ny = _NUMBER.findall(x), _NUMBER.findall(y)
            if (_NUMBER.sub("#", x) != _NUMBER.sub("#", y) or len(nx) != len(ny)
                    or not all(_close(u, v) or (scale == scale and abs(float(u) - float(v)) <= 1e-4 * scale)
                               for u, v in zip(nx, ny))):
                out.append(f"{committed.name} row {i} {col}: {x!r} rebuilt, {y!r} committed")
    return out


# Fields the run record gained after every committed run (records.RunRecord): a render writes them (empty), the
# committed runs tables do not have them
RECORD_FIELDS_SINCE = ("quiet_s",)

# What today's code writes that the committed run's code did not (the committed runs are older than these
# changes; a committed run made now writes them too): a render shows them, the comparison leaves them out.
NEWER_THAN_COMMITTED = {
    "pg_destinations_post004": {"tables": ("per_record",), "columns": ()},
    # the runs table's variant column, the summary's server_version (a version sweep's, written for every run since)
    "pg_audit_timing_switchback": {"tables": (), "columns": ("variant", "server_version")},
    # and the block design's measured columns, which the runs table of a switchback run has carried (empty) since
    "mysql_slowlog_switchback": {"tables": (), "columns": (
        "variant", "server_version", "bp_read_requests", "bp_reads", "bp_miss_share", "measured_regime",
        "memory_limit_hits", "memory_usage_bytes", "page_cache_growth_bytes", "disk_reads", "disk_reads_per_s",
        "settle_s", "history_at_end_of_previous", "history_at_start", "settled", "settle_on")},
}


@pytest.mark.parametrize("run", committed_renders(), ids=lambda r: r.stem)
def test_a_committed_run_rebuilds_its_processed_tables(run, tmp_path):
    """Every table comes back: the runs table and what is made run by run byte for byte; a mean, a CI, a ratio
    (made from numbers the runs table rounded to six digits) within that rounding, unless the committed run kept
    its records (<stem>_records.jsonl): then every byte."""
    out = render(run, tmp_path)
    newer = NEWER_THAN_COMMITTED.get(run.stem, {"tables": (), "columns": ()})
    written = {p.name for p in out.iterdir()} - {f"{run.stem}_{t}.csv" for t in newer["tables"]}
    # the planner's prediction was made before the run, from the committed runs it then replaced: a render carries
    # it over from the committed <stem>_planned.csv and fits what the run reached again (studies.running)
    committed = own_files(run.stem) - {f"{run.stem}_{recorded.KEPT}"}
    assert written == committed, (f"written, not committed: {sorted(written - committed)}; committed, not written: "
                                  f"{sorted(committed - written)}")
    differ = [n for n in sorted(written) if not filecmp.cmp(out / n, paths.PROCESSED / n, shallow=False)]
    if (paths.PROCESSED / f"{run.stem}_{recorded.KEPT}").exists():
        assert not differ, f"{run.stem}: rebuilt from its records, not byte-identical: {differ}"
    assert f"{run.stem}_environment.json" not in differ
    if not newer["columns"]:
        runs = f"{run.stem}_runs.csv"
        rebuilt, kept = (pd.read_csv(d / runs, dtype=str, keep_default_na=False) for d in (out, paths.PROCESSED))
        # every cell of every column the committed table has, as it wrote it: only fields the run record gained
        # later (RECORD_FIELDS_SINCE) may be new
        assert set(rebuilt.columns) - set(kept.columns) <= set(RECORD_FIELDS_SINCE), runs
        assert rebuilt[list(kept.columns)].equals(kept), "the records did not survive the runs table's round trip"
    far = [line for n in differ
           for line in beyond_precision(out / n, paths.PROCESSED / n,
                                        new_columns=(*newer["columns"], *RECORD_FIELDS_SINCE))]
    assert not far, "\n".join(far[:20])


def test_a_committed_render_onto_data_processed_writes_nothing(tmp_path):
    """The committed rule's render (publish=True, recorded="committed") reads data/processed and leaves it as it
    was: its tables are what the committed run wrote (the test above)."""
    module = studies.module("pg_wal_level")
    before = {p.name: p.stat().st_mtime_ns for p in paths.PROCESSED.iterdir()}
    study = module.define(profile="standard", publish=True, recorded="committed", output_dir=str(tmp_path / "out"))
    assert Path(study.processed_dir).resolve() == paths.PROCESSED.resolve()
    result = module.run(study, progress=False)
    assert {p.name: p.stat().st_mtime_ns for p in paths.PROCESSED.iterdir()} == before
    assert len(result.runs) == len(pd.read_csv(paths.PROCESSED / "pg_wal_level_runs.csv"))


def test_a_run_directory_renders_through_the_same_tables(tmp_path):
    """A run directory (runs.jsonl, environment.json) renders through the same processed_tables: here one rebuilt
    from the committed tables renders as the committed render does, byte for byte."""
    d = recorded.committed_directory("pg_idle_connections", tmp_path / "run")
    assert {p.name for p in d.iterdir()} == {"runs.jsonl", "environment.json", recorded.REBUILT}
    module = studies.module("pg_idle_connections")
    study = module.define(profile="standard", recorded=str(d), output_dir=str(tmp_path / "out"),
                          processed_dir=str(tmp_path / "processed"))
    result = module.run(study, progress=False)
    assert Path(result.study.output_dir) == d
    via_committed = render(next(r for r in jobs.committed_runs() if r.stem == "pg_idle_connections"), tmp_path / "c")
    for f in (tmp_path / "processed").iterdir():
        assert filecmp.cmp(f, via_committed / f.name, shallow=False), f.name


def check_renders_to_the_tables_it_wrote(name: str, given: dict, run_dir: Path, measured: Path, tmp: Path) -> None:
    """A measured run's directory rendered (``recorded``): every processed table byte for byte what the measurement
    wrote into ``measured`` (a switchback run's pilot included)."""
    module = studies.module(name)
    again = module.define(**given, recorded=str(run_dir), output_dir=str(tmp / "unused"), processed_dir=str(tmp / "r"))
    module.run(again, progress=False)
    names = sorted(p.name for p in measured.iterdir())
    assert names == sorted(p.name for p in (tmp / "r").iterdir())
    assert [n for n in names if not filecmp.cmp(measured / n, tmp / "r" / n, shallow=False)] == []
    assert not (tmp / "unused").exists()


@pytest.mark.integration
def test_a_measured_switchback_run_renders_to_the_tables_it_wrote(tmp_path):
    """The render half proper: a run measured (a real server, one load of two blocks of two arms in 2 s windows at
    1 client, ~15 s, its pilot first), then rendered from its run directory."""
    given = dict(profile="standard", design="switchback", destinations=["none", "stderr"], clients=[1], scale=1,
                 backend="local", blocks=2, loads=1, max_loads=1, window_s=2, guard_s=1, warmup=1,
                 target_halfwidth=None)
    module = studies.module("pg_destinations")
    module.run(module.define(**given, output_dir=str(tmp_path / "run"), processed_dir=str(tmp_path / "m")),
               progress=False)
    check_renders_to_the_tables_it_wrote("pg_destinations", given, tmp_path / "run", tmp_path / "m", tmp_path)


# study 07's first smoke parameter set: what the workflow's smoke run measures (tests/test_workflow.py renders it)
SMOKE_RENDERED = dict(studies.spec("pg_wal_level").smoke[0])


@pytest.mark.integration
@pytest.mark.smoke_run_study
def test_a_measured_block_run_renders_to_the_tables_it_wrote(tmp_path, request):
    """The same for study 07's smoke run (the block design, seconds). The workflow's smoke run makes this same run
    (SPEC.smoke[0]): where it is in this session, tests/test_workflow.py renders that one instead."""
    if the_smoke_run_is_here(request):
        pytest.skip("rendered from the workflow's smoke run of study 07 in this session (tests/test_workflow.py)")
    module = studies.module("pg_wal_level")
    module.run(module.define(**SMOKE_RENDERED, output_dir=str(tmp_path / "run"), processed_dir=str(tmp_path / "m")),
               progress=False)
    check_renders_to_the_tables_it_wrote("pg_wal_level", SMOKE_RENDERED, tmp_path / "run", tmp_path / "m", tmp_path)


def test_a_committed_render_never_replaces_measured_records(tmp_path):
    (tmp_path / "runs.jsonl").write_text("")
    study = studies.module("pg_wal_level").define(profile="standard", recorded="committed",
                                                  output_dir=str(tmp_path), processed_dir=str(tmp_path / "p"))
    with pytest.raises(ParameterError, match="output_dir"):
        studies.module("pg_wal_level").run(study, progress=False)
    assert (tmp_path / "runs.jsonl").read_text() == ""


def test_a_published_run_keeps_its_records_for_an_exact_render(tmp_path):
    """What a published run keeps (<stem>_records.jsonl) is what a committed render reads first: exact records."""
    run_dir = recorded.committed_directory("pg_wal_level", tmp_path / "run")
    study = studies.module("pg_wal_level").define(profile="standard", recorded=str(run_dir), publish=True,
                                                  processed_dir=str(tmp_path / "published"))
    studies.module("pg_wal_level").run(study, progress=False)
    kept = tmp_path / "published" / "pg_wal_level_records.jsonl"
    assert kept.read_bytes() == (run_dir / "runs.jsonl").read_bytes()
    again = recorded.committed_directory("pg_wal_level", tmp_path / "again", tmp_path / "published")
    assert (again / "runs.jsonl").read_bytes() == kept.read_bytes()
    assert str(kept) in (again / recorded.REBUILT).read_text()


def test_a_switchback_run_directory_keeps_its_pilot(tmp_path):
    d = recorded.committed_directory("pg_audit_timing_switchback", tmp_path)
    pilot = json.loads((d / "pilot.json").read_text())
    assert pilot and "env_id" not in pilot[0] and {"clients", "halfwidth"} <= set(pilot[0])


def test_records_rebuilt_from_a_runs_table_have_the_record_types(tmp_path):
    d = recorded.committed_directory("pg_wal_level", tmp_path)
    runs = records.load(d / "runs.jsonl")
    first = runs.iloc[0]
    assert isinstance(first["settings"], dict) and isinstance(first["extra"], dict)
    assert isinstance(first["destinations"], list) and first["warmup"] in (True, False)
    assert list(runs.columns) == list(records.RUN_FIELDS)


@pytest.mark.parametrize("value", [3, "", "nowhere", "commited"])
def test_recorded_must_name_committed_or_a_run_directory(value, tmp_path):
    with pytest.raises(ParameterError, match="recorded") as e:
        studies.module("pg_wal_level").define(profile="smoke", recorded=value)
    assert "committed" in str(e.value)


def test_a_directory_without_records_is_no_recorded_run(tmp_path):
    with pytest.raises(ParameterError, match="runs.jsonl"):
        studies.module("pg_wal_level").define(profile="smoke", recorded=str(tmp_path))


def test_committed_without_a_runs_table_names_the_parameter(tmp_path):
    study = studies.module("pg_wal_level").define(profile="smoke", recorded="committed", output_dir=str(tmp_path))
    with pytest.raises(ParameterError, match="recorded"):
        recorded.source(study, processed_dir=tmp_path)


def test_the_command_line_renders_a_committed_run(tmp_path, capsys):
    from logbench import cli

    assert cli.main(["run", "pg_wal_level", "-p", "recorded", "committed", "-p", "processed_dir",
                     str(tmp_path / "processed"), "--output-dir", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "rendered from committed" in printed and "runs.jsonl" in printed
    assert filecmp.cmp(tmp_path / "processed" / "pg_wal_level_steps.csv", paths.PROCESSED / "pg_wal_level_steps.csv",
                       shallow=False)
    assert (tmp_path / "out" / "runs.jsonl").exists()
    assert "recorded (str | None, default None)" in cli.study_help("pg_wal_level")


def test_the_rendered_target_measures_nothing(tmp_path):
    """`snakemake rendered`: a render job per committed notebook that offers `recorded` (every one whose study
    takes it: its generated cell offers it), never a study or committed_study job, which would measure."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(paths.ROOT / "workflow" / "Snakefile"),
                        "--directory", str(tmp_path), "-n", "--forceall", "rendered"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr + r.stdout
    ready = sorted(run.stem for run in jobs.committed_runs() if run.renders and run.measured)
    listed = re.findall(r"rule (\w+):\n(?:.*\n)*?\s+wildcards: stem=(\w+)", r.stdout)
    assert sorted(stem for rule, stem in listed if rule == "committed_render") == ready
    assert not {rule for rule, _ in listed} - {"committed_render"}
