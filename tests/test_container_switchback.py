"""The switchback design on the container backend (testcontainers), PostgreSQL and MariaDB.

Each: a short switchback study whose servers run in containers, Ctrl-C (SIGINT to its process group, as a
terminal sends it) inside its second load; the first load's windows stay as recorded, no container, network,
volume or scratch directory is left, and the same study run again resumes: the cut load runs again whole and the
study completes. The switches reach the server in the container (PostgreSQL through the bind-mounted included
file and a reload, MariaDB by SET GLOBAL): the logging arms' windows hold their records, the others none.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psutil
import pytest

from conftest import study_process, wait_for, wait_for_records
from logbench.servers import containers

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("docker_engine"), pytest.mark.timeout(900)]

# two loads of one block of the arms in 2 s windows (1 s guard) at 1 client: after the lead-in second, a window ends
# every 3 s, 9 s of windows a load (PostgreSQL's 3 arms) or 12 s (MariaDB's 4). The cut, the cleanup and the resume
# are asserted, not the estimates; two blocks a load (18-24 s) only moved the signal's margins further from the ends
PG = ("pg_destinations", dict(profile="standard", design="switchback", destinations=["none", "stderr"], clients=[1],
                              scale=1, backend="container", blocks=1, loads=2, max_loads=2, window_s=2, guard_s=1,
                              warmup=1, target_halfwidth=None))
MARIADB = ("mysql_slowlog", dict(profile="switchback", backend="container", cells=["cpu/oltp_point_select"],
                                 clients=[1], tables=1, table_size=5000, buffer_pool_cpu="64M", blocks=1, loads=2,
                                 max_loads=2, window_s=2, guard_s=1, warmup=1, restart_warmup=0,
                                 target_halfwidth=None))
# the signal this long after the second load's load tool starts: its first window (lead-in, guard and window, ~4 s)
# ended 2 s before it, its last (~10 s at the least) ends 4 s after
SIGNAL_AFTER_S = 6


def load_tools(proc) -> set[int]:
    """The pids of the study's load tools now (pgbench or sysbench: the container backend's clients run here)."""
    found = set()
    for c in psutil.Process(proc.pid).children(recursive=True):
        try:
            if any(tool in " ".join(c.cmdline()) for tool in ("pgbench", "sysbench")):
                found.add(c.pid)
        except psutil.NoSuchProcess:
            pass
    return found


def _ours() -> set[str]:
    left = containers.leftovers()
    return set(left["containers"]) | set(left["networks"])


def _study(module: str, kwargs: dict, out: Path):
    import importlib

    m = importlib.import_module(f"logbench.studies.{module}")
    return m, m.define(**kwargs, output_dir=out)


@pytest.mark.parametrize("module,kwargs", [PG, MARIADB], ids=["postgresql", "mariadb"])
def test_ctrl_c_inside_a_container_switchback_load_leaves_nothing_and_a_rerun_resumes(module, kwargs, tmp_path):
    out = tmp_path / "o"
    _study(module, kwargs, out)  # bad parameters fail here, before any container starts
    before = _ours()
    volumes = containers.leftover_volumes()
    proc = study_process(f"""
        from logbench.studies import {module} as m
        m.run(m.define(**{kwargs!r}, output_dir={str(out)!r}), progress=False)
    """)
    runs_file = out / "runs.jsonl"
    try:
        wait_for_records(proc, runs_file, 400)  # the first load's windows, recorded once it ended
        # inside the second load: once its load tool runs (this host's pgbench or sysbench, the first since the first
        # load's), SIGNAL_AFTER_S; timed from the load itself, not from the first load's end, so a restart slowed by a
        # busy machine cannot move the signal before the load
        before_load = load_tools(proc)
        assert wait_for(lambda: load_tools(proc) - before_load or proc.poll() is not None, 300), \
            "the second load's load tool did not start within 300 s"
        assert proc.poll() is None, proc.stdout.read().decode(errors="replace")[-3000:]
        time.sleep(SIGNAL_AFTER_S)
        first = runs_file.read_text()
        assert _ours() - before, "the study's containers should be up now"
        os.killpg(proc.pid, signal.SIGINT)
        text = proc.communicate(timeout=120)[0].decode(errors="replace")
        assert proc.returncode != 0 and "KeyboardInterrupt" in text, text[-3000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    kept = runs_file.read_text()
    assert kept.startswith(first) and len(kept) > len(first), "the cut load's finished windows are kept too"
    assert _ours() <= before, _ours() - before
    assert containers.leftover_volumes() == volumes

    m, study = _study(module, kwargs, out)
    result = m.run(study, progress=False)
    assert runs_file.read_text().startswith(kept), "recorded windows are never rewritten"
    assert _ours() <= before and containers.leftover_volumes() == volumes
    runs = result.runs
    assert set(runs["backend"]) == {"container"}
    per_load = runs["extra"].map(lambda e: (e["load"], e["attempt"])).value_counts()
    whole = kwargs["blocks"] * len(study.planned_configurations)
    # load 0 ran once, load 1 was cut and ran again whole; the cut one's windows stay a load of their own
    assert sorted(k[0] for k, n in per_load.items() if n == whole) == [0, 1] and len(per_load) == 3, per_load
    logged = runs[runs["log_records_expected"] > 0]
    assert len(logged) and (logged["log_records_received"] > 0.9 * logged["log_records_expected"]).all(), \
        logged[["configuration", "log_records_expected", "log_records_received"]]
    assert (runs.loc[runs["log_records_expected"] == 0, "log_records_received"] == 0).all()
