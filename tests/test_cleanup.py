"""Leftovers of killed studies: found by their owner file, stopped, removed and named (issue 14)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from conftest import needs_root
from logbench.base import cleanup, paths
from logbench.servers import netns

LIB = str(paths.ROOT / "lib")


def _dead_owner(d: Path) -> None:
    p = subprocess.Popen(["true"])
    p.wait()
    (d / cleanup.OWNER_FILE).write_text(json.dumps({"pid": p.pid, "started": 0.0, "cmdline": "killed study"}))


def test_only_directories_of_gone_owners_are_removed_with_what_runs_in_them(tmp_path):
    dead, mine, unknown = (tmp_path / f"logbench-pg-{n}" for n in ("dead", "mine", "unknown"))
    for d in (dead, mine, unknown):
        d.mkdir()
    _dead_owner(dead)
    cleanup.claim(mine, guard=False)
    server = subprocess.Popen(["sleep", "300"], cwd=dead, start_new_session=True)
    try:
        assert cleanup.leftovers(tmp_path) == [dead]
        removed = cleanup.sweep(tmp_path)
        server.wait(timeout=10)  # (its status is gone: the sweep reaped it, being its parent here)
        assert f"process {server.pid} (sleep)" in removed and f"directory {dead}" in removed
        assert not dead.exists() and mine.exists() and unknown.exists()
    finally:
        if server.poll() is None:
            server.kill()


def test_a_reused_pid_is_not_the_owner(tmp_path):
    d = tmp_path / "logbench-syslog-x"
    d.mkdir()
    me = psutil.Process()
    (d / cleanup.OWNER_FILE).write_text(json.dumps({"pid": me.pid, "started": me.create_time() - 3600}))
    assert cleanup.leftovers(tmp_path) == [d]


def test_logbench_clean_names_what_it_removes(tmp_path):
    d = tmp_path / "logbench-log-abc"
    d.mkdir()
    _dead_owner(d)
    env = {**os.environ, "PYTHONPATH": LIB}
    dry = subprocess.run([sys.executable, "-m", "logbench.base.cleanup", "--root", str(tmp_path), "--dry-run"],
                         capture_output=True, text=True, env=env)
    assert dry.returncode == 0 and f"would remove {d}" in dry.stdout and d.exists()
    r = subprocess.run([sys.executable, "-m", "logbench.base.cleanup", "--root", str(tmp_path)],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0 and f"removed directory {d}" in r.stdout and not d.exists()
    again = subprocess.run([sys.executable, "-m", "logbench.base.cleanup", "--root", str(tmp_path)],
                           capture_output=True, text=True, env=env)
    assert "nothing left behind" in again.stdout


@needs_root
def test_a_leftover_network_namespace_is_deleted_with_its_veth_pair():
    """A killed study's namespace, found by its record: the sweep deletes it and the host's end of its pair."""
    host = netns.NetworkHost().__enter__()
    try:
        name, link = host.name, cleanup.host_link(host.name)
        record = paths.scratch_root() / (cleanup.NETNS_PREFIX + name)
        _dead_owner(record)  # its study was killed: the record's owner is gone
        assert name in netns.leftover_namespaces() and _link(link)
        removed = cleanup.sweep(paths.scratch_root(), owner_pid=cleanup.read_owner(record)["pid"])
        assert f"network namespace {name}" in removed and f"directory {record}" in removed
        assert name not in netns.leftover_namespaces() and not _link(link) and not record.exists()
    finally:
        host.close()


def _link(name: str) -> bool:
    return subprocess.run(["ip", "link", "show", name], capture_output=True).returncode == 0


CHILD = r"""
import sys, time
from pathlib import Path
from logbench.servers.syslog import SyslogPair
pair = SyslogPair(remote=True, rate_limit=False, log_dir=Path(sys.argv[1])).__enter__()
print(pair.workdir, pair.host.netns.name, flush=True)
time.sleep(300)
"""


@needs_root
@pytest.mark.integration
def test_the_guardian_removes_what_a_sigkilled_process_left(tmp_path):
    """SIGKILL runs no ``finally``: the two rsyslogd, the network namespace and the directories would stay."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path / "logs")], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": LIB})
    try:
        workdir, ns = child.stdout.readline().split()
        daemons = [p for p in psutil.process_iter(["cmdline"]) if workdir in " ".join(p.info["cmdline"] or [])]
        assert len(daemons) == 2 and ns in netns.leftover_namespaces()
        child.kill()
        child.wait()
        t0 = time.monotonic()
        while time.monotonic() - t0 < 15 and (Path(workdir).exists() or ns in netns.leftover_namespaces()):
            time.sleep(0.1)
        gone, alive = psutil.wait_procs(daemons, timeout=5)
        assert not alive, f"still running: {alive}"
        assert not Path(workdir).exists() and ns not in netns.leftover_namespaces()
        assert not (paths.scratch_root() / (cleanup.NETNS_PREFIX + ns)).exists()
    finally:
        if child.poll() is None:
            child.kill()


@pytest.mark.integration
def test_a_container_bind_mounting_a_leftover_is_removed_with_its_labelled_network(tmp_path, docker_engine):
    import uuid

    d = paths.scratch_root() / f"logbench-pg-{uuid.uuid4().hex[:8]}"
    d.mkdir()
    _dead_owner(d)
    tag = uuid.uuid4().hex[:8]
    label = f"{cleanup.CONTAINER_LABEL}={tag}"
    net = subprocess.run(["docker", "network", "create", "--label", label, f"logbench-{tag}"],
                         capture_output=True, text=True)
    assert net.returncode == 0, net.stderr
    run = subprocess.run(["docker", "run", "-d", "--label", label, "--network", f"logbench-{tag}", "-v", f"{d}:/x",
                          "logbench/rsyslog:8"], capture_output=True, text=True)
    try:
        assert run.returncode == 0, run.stderr
        removed = cleanup.sweep(paths.scratch_root(), owner_pid=json.loads((d / cleanup.OWNER_FILE).read_text())["pid"])
        assert any(r.startswith("container ") for r in removed) and any(r.startswith("network ") for r in removed)
        ps = subprocess.run(["docker", "ps", "-aq", "--filter", f"label={label}"], capture_output=True, text=True)
        assert ps.stdout.strip() == "" and not d.exists()
    finally:
        subprocess.run(["docker", "rm", "-f", "-v", run.stdout.strip()], capture_output=True)
        subprocess.run(["docker", "network", "rm", f"logbench-{tag}"], capture_output=True)
