"""The workflow on a real SLURM cluster (issue 26): Debian 12's SLURM 22.05 and munge in containers on this
machine (scripts/slurm_cluster.sh: a controller with slurmctld and slurmdbd, two compute nodes, each alone in a
partition of its own), and `snakemake --profile workflow/profiles/slurm` run where sbatch works, in the
controller, through snakemake-executor-plugin-slurm as a user would run it.

Two studies' smoke runs on two host labels mapped to the two partitions. In the first run the PostgreSQL server
of one study job is killed once that job has recorded a run: SLURM and Snakemake report that job failed, the
study's error is in its log, and the other three jobs finish (--keep-going). The same command again resumes the
failed study from its recorded runs. Then every result has its node's hostname and env_id, sacct shows the jobs,
the findings and the paper (run here, on the gathered outputs) show the two environments side by side, never
pooled, and `down` leaves nothing. (This replaced the simulated cluster's run, tests/test_workflow_cluster.py,
whose assertions it carries; the simulated cluster's profile is dry-run in tests/test_workflow.py.)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time

import pandas as pd
import pytest

from logbench.base import paths
from logbench.publish import report

from conftest import needs_root

ROOT = paths.ROOT
SCRIPT = ROOT / "scripts" / "slurm_cluster.sh"
NAME = "logbench-slurm-test"
STUDIES = ("pg_destinations", "log_rotation")
HOSTS = {"a": ("part1", "node1"), "b": ("part2", "node2")}
KILLED = ("a", "pg_destinations")  # (host, study) whose server is killed mid-run in the first run
ENV = {**os.environ, "LOGBENCH_SLURM_NAME": NAME}

pytestmark = [pytest.mark.integration, pytest.mark.docker_engine, needs_root, pytest.mark.timeout(1200)]


def _docker(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)


def _cluster(*args: str, timeout: float = 1200, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout, env=ENV,
                          **kw)


def _left() -> list[str]:
    return (_docker("ps", "-aq", "--filter", f"label=org.logbench.slurm={NAME}").stdout.split()
            + _docker("network", "ls", "-q", "--filter", f"label=org.logbench.slurm={NAME}").stdout.split()
            + _docker("volume", "ls", "-q", "--filter", f"label=org.logbench.slurm={NAME}").stdout.split())


def _snakemake(work) -> list[str]:
    return ["bash", str(SCRIPT), "exec", "snakemake", "-s", str(ROOT / "workflow" / "Snakefile"),
            "--profile", str(ROOT / "workflow" / "profiles" / "slurm"),
            # the runs and their gathering; the findings and the paper on them are checked below, in-process
            # (tests/test_workflow.py runs the findings notebook and the paper through the workflow)
            *(f"results/smoke/processed/{name}.csv" for name in STUDIES),
            # a small cluster answers at once: the plugin's first status check after 1 s, not 40. The plugin waits
            # 10 s longer after each check that finds no job finished and goes back to this after one that does:
            # a job's end is seen ~10-20 s after it ends (5 s here saw the resumed job 45 s after its submission,
            # 1 s sees it at 33 s; the jobs end ~25 s after submission)
            "--slurm-init-seconds-before-status-checks", "1", "--keep-going",
            "--config", "profile=smoke", "studies=[" + ", ".join(STUDIES) + "]", "hosts=[" + ", ".join(HOSTS) + "]",
            "host_resources={" + ", ".join(f"{h}: {{slurm_partition: {p}}}" for h, (p, _) in HOSTS.items()) + "}",
            # one logging configuration each beside the baseline: the machinery is under test here, not the
            # configurations (the workflow's smoke run in tests/test_workflow.py runs them all)
            "parameters={pg_destinations: {destinations: [stderr]}, log_rotation: {methods: [copytruncate]}}"]


def _runs(path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()] if path.exists() else []


@pytest.fixture(scope="module")
def slurm_runs(tmp_path_factory):
    if shutil.which("docker") is None or _docker("info").returncode != 0:
        reason = "no Docker engine answers; `bash scripts/setup.sh --docker` starts one"
        if os.environ.get("CI"):
            pytest.fail("CI must run the container tests: " + reason)
        pytest.skip(reason)
    if _docker("image", "inspect", "logbench/debian:bookworm").returncode != 0:
        pytest.fail("logbench/debian:bookworm is not built; `bash scripts/setup.sh --docker` builds it")
    assert not _left(), f"a cluster named {NAME} is already up: bash scripts/slurm_cluster.sh down"
    work = tmp_path_factory.mktemp("slurm")
    t0 = time.monotonic()
    t_up = float("nan")
    try:
        up = _cluster("up", "--share", str(work))
        assert up.returncode == 0, up.stdout + up.stderr
        t_up = time.monotonic() - t0
        # first run: the killed job's server dies once its first run is on disk
        killed_out = work / "results" / "smoke" / KILLED[0] / KILLED[1]
        first = subprocess.Popen(_snakemake(work), cwd=work, env=ENV, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        node = f"{NAME}-{HOSTS[KILLED[0]][1]}"
        deadline = time.monotonic() + 600
        while not _runs(killed_out / "runs.jsonl"):
            assert first.poll() is None, first.stdout.read()[-4000:]
            assert time.monotonic() < deadline, "the study recorded no run in 600 s"
            time.sleep(0.2)
        recorded = _runs(killed_out / "runs.jsonl")
        # the oldest "postgres -D" in that node: the study's postmaster (its backends are "postgres: ...")
        kill = _docker("exec", node, "bash", "-c", "kill -KILL $(pgrep -o -f '/postgres -D ')")
        assert kill.returncode == 0, kill.stderr
        first_log = first.communicate(timeout=900)[0]
        # what the failed job left: its study's log (the rule's log, papermill's output; the re-run rewrites it),
        # the plugin's SLURM log of the job (kept when a job fails), the runs recorded before the kill
        study_log = (killed_out / "papermill.log").read_text()
        slurm_logs = {p.name: p.read_text() for p in
                      (work / ".snakemake" / "slurm_logs" / "rule_study").glob(f"{KILLED[0]}_{KILLED[1]}/*.log")}
        before = _runs(killed_out / "runs.jsonl")
        second = subprocess.run(_snakemake(work), cwd=work, env=ENV, capture_output=True, text=True, timeout=900)
        second_log = second.stdout + second.stderr
        assert second.returncode == 0, second_log[-6000:]
        sacct = _cluster("exec", "sacct", "-X", "-n", "-P", "-o", "JobID,JobName,Partition,NodeList,State,AllocCPUS",
                         cwd=work).stdout
        sinfo = _cluster("exec", "sinfo", "-N", "-h", "-o", "%N %c", cwd=work).stdout
        cpus = dict(ln.split() for ln in sinfo.splitlines())
    finally:
        down = _cluster("down", timeout=120)
    left = _left()
    print(f"SLURM cluster: up {t_up:.0f} s; up, failed run, resumed run and down {time.monotonic() - t0:.0f} s")
    print("sacct:\n" + sacct + "the killed study's error: "
          + next((ln for ln in reversed(study_log.splitlines()) if "Error" in ln), "(none)"))
    print("its SLURM log's end:\n" + "".join(slurm_logs.values())[-1500:])
    return dict(out=work / "results" / "smoke", first=first, first_log=first_log, second_log=second_log,
                study_log=study_log, slurm_logs=slurm_logs, recorded=recorded, before=before, sacct=sacct, cpus=cpus,
                down=down, left=left)


def test_each_study_ran_whole_on_each_node_through_slurm(slurm_runs):
    out = slurm_runs["out"]
    for name in STUDIES:
        for host, (_, node) in HOSTS.items():
            env = json.loads((out / host / name / "processed" / f"{name}_environment.json").read_text())
            assert env["hostname"] == node, (name, host, env["hostname"])
            runs = pd.read_csv(out / host / name / "processed" / f"{name}_runs.csv")
            assert set(runs["env_id"]) == {env["env_id"]}, "a study's runs all on one node"
        summary = pd.read_csv(out / "processed" / f"{name}.csv")
        envs = summary.groupby("host")["env_id"].unique()
        assert set(envs.index) == set(HOSTS) and all(len(e) == 1 for e in envs) and envs["a"][0] != envs["b"][0]
    # sacct: every study job on its partition's node, the whole node (--exclusive: all its CPUs, as slurm.conf
    # has them from the node's slurmd -C); the killed one FAILED, then its re-run COMPLETED
    jobs = [ln.split("|") for ln in slurm_runs["sacct"].splitlines() if ln.strip()]
    assert len(jobs) == len(STUDIES) * len(HOSTS) + 1, slurm_runs["sacct"]
    assert {(p, n) for _, _, p, n, _, _ in jobs} == {(p, n) for p, n in HOSTS.values()}
    assert all(c == slurm_runs["cpus"][n] for *_, n, _, c in jobs), (slurm_runs["sacct"], slurm_runs["cpus"])
    assert set(slurm_runs["cpus"].values()) == {str(os.cpu_count())}, "the nodes' real CPUs (this machine's)"
    states = [s for *_, s, _ in jobs]
    assert states.count("FAILED") == 1 and states.count("COMPLETED") == len(jobs) - 1, slurm_runs["sacct"]


def test_a_job_whose_server_died_failed_with_the_studys_error_and_resumed(slurm_runs):
    host, name = KILLED
    log = slurm_runs["first_log"]
    assert slurm_runs["first"].returncode != 0
    assert "Error in rule study" in log and f"host={host}, stem={name}" in log, log[-6000:]
    assert "SLURM-job" in log and "FAILED" in log, log[-6000:]
    # the other three jobs finished in the first run (--keep-going); the second ran the failed one only
    assert log.count("Finished jobid") >= len(STUDIES) * len(HOSTS) - 1, log[-6000:]
    assert slurm_runs["second_log"].count("SLURM jobid") == 1, slurm_runs["second_log"][-6000:]
    # the study's own error (the run's pgbench lost its server) in the study job's log; the job's SLURM log kept
    study_log = slurm_runs["study_log"]
    assert "Traceback" in study_log and ("pgbench" in study_log or "server" in study_log.lower()), study_log[-4000:]
    (slurm_log,) = slurm_runs["slurm_logs"].values()
    assert "Error in rule study" in slurm_log, slurm_log[-4000:]
    # the re-run resumed: the runs recorded before the kill kept, the notebook says how many it found
    study_dir = slurm_runs["out"] / host / name
    before = slurm_runs["before"]
    assert before[:len(slurm_runs["recorded"])] == slurm_runs["recorded"] and before
    assert f"{len(before)} runs already recorded" in (study_dir / f"{name}.ipynb").read_text()
    assert _runs(study_dir / "runs.jsonl")[:len(before)] == before, "the recorded runs kept, whole and unchanged"
    assert len(_runs(study_dir / "runs.jsonl")) == len(json.loads((study_dir / "plan.json").read_text()))


def test_results_come_back_side_by_side_never_pooled(slurm_runs, tmp_path):
    out = slurm_runs["out"]
    for name in STUDIES:
        summary = pd.read_csv(out / "processed" / f"{name}.csv")
        per_host = [pd.read_csv(out / h / name / "processed" / f"{name}.csv") for h in HOSTS]
        assert len(summary) == sum(map(len, per_host)), "rows concatenated, never recomputed over hosts"
        # each environment is a cell of its own in the findings and the paper: ratios with CIs per environment
        assert {c["host"] for c in report.cells(summary)} == set(HOSTS)
        assert {"host", "env_id"} <= set(report.study_table(summary).columns)
    studies, status = report.load_studies(out / "processed")
    assert set(STUDIES) <= set(studies)
    figures = report.study_figures({n: studies[n] for n in STUDIES})
    try:
        for name in STUDIES:
            assert {k for k in figures if k.startswith(f"study_{name}_")} == {
                f"study_{name}{report.cell_slug(c)}" for c in report.cells(studies[name].summary)}
    finally:
        import matplotlib.pyplot as plt

        plt.close("all")
    # 90_findings' table of them: one column per environment, each ratio with its CI
    side = report.environment_ratios({n: studies[n] for n in STUDIES})
    assert set(side) == set(STUDIES)
    for name in STUDIES:
        envs = [c for c in side[name].columns if " · " in c]
        assert sorted(c.split(" · ")[0] for c in envs) == sorted(HOSTS)
        assert side[name][envs].notna().all().all(), "every cell measured on both hosts"
    # the paper's data: the study's cells, figures and resolution per environment (the first study is the
    # one whose job was killed and resumed: its results are whole)
    doc = report.generate(out / "processed", tmp_path / "figures", tmp_path / "paper")
    entry = next(s for s in doc["studies"] if s["name"] == STUDIES[0])
    assert {r["label"].split(", ")[0] for r in entry["resolution"]} == set(HOSTS)
    assert {c["label"].split(", ")[0] for c in entry["cheapest"]} == set(HOSTS)


def test_down_leaves_nothing(slurm_runs):
    assert slurm_runs["down"].returncode == 0, slurm_runs["down"].stderr
    assert not slurm_runs["left"], f"left behind: {slurm_runs['left']}"
