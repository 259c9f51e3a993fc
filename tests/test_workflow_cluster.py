"""The workflow on a simulated cluster (issue 15): Snakemake's generic cluster executor with a submit command
that starts every study job in a container of its own, from the suite's image (workflow/profiles/containers,
workflow/scripts/container_submit.sh). Each container is a "host": its own hostname, kernel namespaces,
PostgreSQL or MariaDB and syslog; the repository and the working directory are its shared filesystem.

Two studies' smoke runs on two hosts, ``a`` and ``b``: every run comes back, each host's results keep their
own environment, and the findings and the paper (run on the submitting machine) show the two environments
side by side, never pooled.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pandas as pd
import pytest

from logbench import paths, report

from conftest import needs_root

ROOT = paths.ROOT
IMAGE = os.environ.get("LOGBENCH_SUITE_IMAGE", "logbench/suite:latest")
BASE_IMAGE = "logbench/debian:bookworm"
# The two cheapest smoke studies, one per engine (PostgreSQL, MariaDB).
STUDIES = ("pg_destinations", "log_rotation")
HOSTS = ("a", "b")
LABEL = "org.logbench.cluster-job"

pytestmark = [pytest.mark.integration, needs_root, pytest.mark.timeout(2400)]


def _docker(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def suite_image():
    if shutil.which("docker") is None or _docker("info").returncode != 0:
        reason = "no Docker engine answers; `bash scripts/setup.sh --docker` starts one"
        if os.environ.get("CI"):
            pytest.fail("CI must run the container tests: " + reason)
        pytest.skip(reason)
    if _docker("image", "inspect", BASE_IMAGE).returncode != 0:
        pytest.fail(f"{BASE_IMAGE} is not built; `bash scripts/setup.sh --docker` (setup_docker) builds it")
    # idempotent: seconds when the image is current, minutes the first time (apt and pip in the build)
    r = subprocess.run(["bash", str(ROOT / "scripts" / "build_suite_image.sh")], capture_output=True, text=True,
                       timeout=1800, env={**os.environ, "LOGBENCH_SUITE_IMAGE": IMAGE})
    assert r.returncode == 0, r.stdout + r.stderr
    return IMAGE


@pytest.fixture(scope="module")
def cluster_run(suite_image, tmp_path_factory):
    work = tmp_path_factory.mktemp("cluster")
    scripts = ROOT / "workflow" / "scripts"
    argv = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "workflow" / "Snakefile"), "--directory", str(work),
            "--profile", str(ROOT / "workflow" / "profiles" / "containers"),
            "--cluster-generic-submit-cmd", str(scripts / "container_submit.sh"),
            "--cluster-generic-cancel-cmd", str(scripts / "container_cancel.sh"),
            "--config", "profile=smoke", "studies=[" + ", ".join(STUDIES) + "]",
            "hosts=[" + ", ".join(HOSTS) + "]",
            # one logging configuration each beside the baseline: the machinery is under test here, not the
            # configurations (the workflow's smoke run in tests/test_workflow.py runs them all)
            "parameters={pg_destinations: {destinations: [stderr]}, log_rotation: {methods: [copytruncate]}}",
            # all four jobs at once (the profile says 2): the containers share this machine's two cores, and a
            # smoke run's time is mostly fixed-length runs and start-ups
            "--jobs", str(len(STUDIES) * len(HOSTS)),
            # the runs and their gathering; the findings and the paper on them are checked below, in-process
            # (tests/test_workflow.py runs the findings notebook and the paper through the workflow)
            *(f"results/smoke/processed/{name}.csv" for name in STUDIES)]
    t0 = time.monotonic()
    r = subprocess.run(argv, capture_output=True, text=True, timeout=2000,
                       env={**os.environ, "LOGBENCH_SUITE_IMAGE": suite_image})
    wall = time.monotonic() - t0
    logs = "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}"
                     for p in sorted((work / ".snakemake" / "logbench-cluster").glob("*.log")))
    leftover = _docker("ps", "-aq", "--filter", f"label={LABEL}").stdout.split()
    assert r.returncode == 0, f"{r.stdout[-4000:]}\n{r.stderr[-4000:]}\n{logs}"
    print(f"simulated cluster, {len(STUDIES)} studies x {len(HOSTS)} hosts: {wall:.0f} s")
    return work / "results" / "smoke", r.stdout + r.stderr, logs, leftover


def test_each_study_ran_whole_on_each_host_in_its_own_container(cluster_run):
    out, log, job_logs, leftover = cluster_run
    me = os.uname().nodename
    for name in STUDIES:
        for host in HOSTS:
            env = json.loads((out / host / name / "processed" / f"{name}_environment.json").read_text())
            assert env["hostname"] == f"logbench-{host}" != me, (name, host, env["hostname"])
            runs = pd.read_csv(out / host / name / "processed" / f"{name}_runs.csv")
            assert set(runs["env_id"]) == {env["env_id"]}, "a study's runs all on one host"
    # jobs went through the submit command, one container each, and none is left
    assert log.count("Submitted job") >= len(STUDIES) * len(HOSTS), log[-3000:]
    assert not leftover, f"containers left behind: {leftover}"


def test_results_come_back_side_by_side_never_pooled(cluster_run, tmp_path):
    out, *_ = cluster_run
    for name in STUDIES:
        summary = pd.read_csv(out / "processed" / f"{name}.csv")
        assert set(summary["host"]) == set(HOSTS)
        envs = summary.groupby("host")["env_id"].unique()
        assert all(len(e) == 1 for e in envs) and envs["a"][0] != envs["b"][0]
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
    # the paper's data: the study's cells, figures and resolution per environment
    doc = report.generate(out / "processed", tmp_path / "figures", tmp_path / "paper")
    entry = next(s for s in doc["studies"] if s["name"] == STUDIES[0])
    assert {r["label"].split(", ")[0] for r in entry["resolution"]} == set(HOSTS)
    assert {c["label"].split(", ")[0] for c in entry["cheapest"]} == set(HOSTS)
