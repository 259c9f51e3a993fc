"""Ctrl-C, SIGTERM and SIGKILL to papermill stop a study within seconds and leave nothing behind (issue 14).

The real thing: papermill runs notebook 02 (smoke profile, local backend, the file, syslog and remote-syslog
destinations, so PostgreSQL, two rsyslogd and a network namespace are up), and once the first run is on disk
it gets the signal a terminal's Ctrl-C sends (SIGINT to its process group), the one ``timeout`` or a
scheduler sends (SIGTERM to papermill alone), or SIGKILL. Papermill's kernel runs in a session of its own,
so it never sees the terminal's signal itself: papermill's kernel manager interrupts it, then SIGTERMs and
SIGKILLs it seconds later, or (papermill killed) ipykernel exits when its parent is gone. Whichever way the
kernel ends, every process, namespace and directory the study made must be gone within seconds (the study's
own teardown, else its guardian, :mod:`logbench.cleanup`), the runs already recorded stay, and papermill's
exit status is non-zero.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from conftest import needs_root
from logbench import cleanup, paths
from logbench.servers import netns

pytestmark = [pytest.mark.integration, needs_root, pytest.mark.timeout(600)]

PAPERMILL = Path(sys.executable).with_name("papermill")
CLEAN_WITHIN_S = 15.0


def _owned_by(pid: int) -> list[Path]:
    return [d for root in (paths.scratch_root(), paths.tmpfs_root()) for d in root.glob(cleanup.PREFIX + "*")
            if (rec := cleanup.read_owner(d)) is not None and int(rec.get("pid", -1)) == pid]


def _processes_in(dirs: list[Path]) -> list[str]:
    out = []
    for p in psutil.process_iter(["pid", "name", "cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if any(str(d) in cmd for d in dirs) and "logbench.cleanup" not in cmd:
            out.append(f"{p.info['pid']} {p.info['name']}")
    return out


def _kernel_of(pm: subprocess.Popen) -> psutil.Process:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for c in psutil.Process(pm.pid).children(recursive=True):
            if "ipykernel" in " ".join(c.cmdline()):
                return c
        time.sleep(0.2)
    raise AssertionError("papermill started no kernel within 120 s")


def _lines(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()] if path.exists() else []


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm", "sigkill"])
def test_a_signal_to_papermill_stops_the_study_and_leaves_nothing(how, tmp_path):
    out = tmp_path / "runs"
    argv = [str(PAPERMILL), str(paths.NOTEBOOKS / "02_pg_destinations.ipynb"), str(tmp_path / "out.ipynb"),
            "-p", "profile", "smoke", "-p", "backend", "local", "-p", "duration", "5", "-p", "repeats", "3",
            "-p", "clients", "[1]", "-p", "destinations", '["csvlog", "syslog", "remote_syslog_udp"]',
            "-p", "output_dir", str(out)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(paths.ROOT / "lib"), os.environ.get("PYTHONPATH", "")])}
    # start_new_session: papermill leads its own process group, as a shell's foreground job does
    pm = subprocess.Popen(argv, env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        kernel = _kernel_of(pm)
        deadline = time.monotonic() + 300
        while not _lines(out / "runs.jsonl"):
            assert pm.poll() is None, pm.stdout.read().decode(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "no run recorded within 300 s"
            time.sleep(0.2)
        owned = _owned_by(kernel.pid)
        namespaces = [d.name[len(cleanup.NETNS_PREFIX):] for d in owned if d.name.startswith(cleanup.NETNS_PREFIX)]
        assert namespaces and _processes_in(owned), f"the study should be up now: {owned}"
        assert {d.name.split("-")[1] for d in owned} >= {"log", "syslog", "pg", "netns"}, owned
        recorded = _lines(out / "runs.jsonl")

        t0 = time.monotonic()
        if how == "ctrl-c":
            os.killpg(pm.pid, signal.SIGINT)
        elif how == "sigterm":
            pm.send_signal(signal.SIGTERM)
        else:
            pm.kill()
        pm.wait(timeout=60)
        exited = time.monotonic() - t0

        def clean() -> list[str]:
            left = [str(d) for d in owned if d.exists()] + _processes_in(owned)
            left += [f"namespace {n}" for n in namespaces if n in netns.leftover_namespaces()]
            left += ["kernel"] if kernel.is_running() and kernel.status() != psutil.STATUS_ZOMBIE else []
            return left

        while clean() and time.monotonic() - t0 < CLEAN_WITHIN_S + 30:
            time.sleep(0.1)
        took = time.monotonic() - t0
        print(f"{how}: papermill exited {pm.returncode} after {exited:.1f} s; everything gone after {took:.1f} s")
        assert not clean(), f"left behind {took:.0f} s after {how}: {clean()}"
        assert took <= CLEAN_WITHIN_S, f"cleaning up after {how} took {took:.1f} s"
        assert pm.returncode != 0
        after = _lines(out / "runs.jsonl")
        assert after[:len(recorded)] == recorded  # every recorded run kept, whole and unchanged
        assert len(after) < 9, "the study ran to its end"
    finally:
        if pm.poll() is None:
            os.killpg(pm.pid, signal.SIGKILL)
            pm.wait()
