"""Leftovers of studies whose process is gone: find them, stop them, remove them, name them.

A study's own ``finally`` stops what it started. It cannot when its process is
killed outright: papermill's kernel manager sends SIGKILL a few seconds after an
interrupt, ipykernel ``_exit``s when papermill dies, a machine loses power. So
every private work directory carries an owner file (:data:`OWNER_FILE`: the pid
and start time of the process that made it), and

* a **guardian** (one small detached process per owning process, started with
  the first work directory) waits for the owner to end and then removes what it
  left: processes started in those directories, containers whose bind mounts
  are inside them (and their labelled networks and volumes), network
  namespaces, the directories themselves;
* every study sweeps leftovers of dead owners once when it starts its first
  server, and ``logbench-clean`` (``python -m logbench.base.cleanup``) does the same
  by hand, naming what it removed.

A directory whose owner still runs is never touched, so studies and tests
running at the same time on one machine leave each other alone.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil

OWNER_FILE = ".logbench-owner"
# A file a guardian appends what it removed to, one line each; unset, it says nothing (it has no terminal). A test of
# studies run in other processes (the workflow's smoke run) reads it: their guardians remove what a study's own
# teardown left before the test could look.
GUARDIAN_LOG = "LOGBENCH_GUARDIAN_LOG"
PREFIX = "logbench-"
NETNS_PREFIX = "logbench-netns-"  # a namespace's own record directory: logbench-netns-<namespace name>
# Our network namespaces (servers.netns) are lbns-<tag>, the host's end of each one's veth pair lbh<tag>: named
# here, where a killed study's namespace is removed with `ip` (as its containers are with `docker`), so that this
# module, which every server imports to claim its directories, imports no server.
NAMESPACE_PREFIX, HOST_LINK_PREFIX = "lbns-", "lbh"
CONTAINER_LABEL = "org.logbench.study"
GUARD_POLL_S = 0.2


def _scratch() -> Path:
    from . import paths

    return paths.scratch_root()


def owner_record(pid: int | None = None) -> dict:
    p = psutil.Process(pid or os.getpid())
    return {"pid": p.pid, "started": p.create_time(), "cmdline": " ".join(p.cmdline())[:300]}


def alive(record: dict) -> bool:
    """The owner still runs: same pid and same start time (a reused pid is another process)."""
    try:
        p = psutil.Process(int(record["pid"]))
        return abs(p.create_time() - float(record["started"])) < 0.5 and p.status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied, KeyError, ValueError, TypeError):
        return False


def read_owner(directory: Path) -> dict | None:
    try:
        return json.loads((Path(directory) / OWNER_FILE).read_text())
    except (OSError, ValueError):
        return None


_guarded: set[int] = set()


def claim(directory: Path, *, guard: bool = True) -> None:
    """Mark ``directory`` as this process's; the first claim also starts the guardian and sweeps once."""
    directory = Path(directory)
    rec = owner_record()
    tmp = directory / (OWNER_FILE + ".tmp")
    tmp.write_text(json.dumps(rec))
    tmp.chmod(0o644)
    os.replace(tmp, directory / OWNER_FILE)
    if guard and os.getpid() not in _guarded:
        _guarded.add(os.getpid())
        for line in sweep():
            print(f"logbench: removed a leftover of an earlier study: {line}", file=sys.stderr)
        start_guardian(rec)


def _guardian_report(line: str) -> None:
    path = os.environ.get(GUARDIAN_LOG)
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


def private_dir(prefix: str, root: Path | None = None) -> Path:
    """``tempfile.mkdtemp`` under ``root`` (default: the scratch root), claimed as this process's."""
    import tempfile

    d = Path(tempfile.mkdtemp(prefix=prefix, dir=root or _scratch()))
    claim(d)
    return d


def _roots() -> list[Path]:
    from . import paths

    return list(dict.fromkeys([paths.scratch_root(), paths.tmpfs_root()]))


def start_guardian(record: dict) -> subprocess.Popen:
    """A detached process that cleans up after ``record``'s process once it is gone, however it ended."""
    # its own session: a Ctrl-C or a kill of the study's process group must not reach it
    return subprocess.Popen(
        [sys.executable, "-m", "logbench.base.cleanup", "--guard", str(record["pid"]), repr(record["started"])],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, close_fds=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).parents[2]),
                                                                      os.environ.get("PYTHONPATH")]))},
    )


def leftovers(root: Path | None = None, *, owner_pid: int | None = None) -> list[Path]:
    """Work directories under ``root`` (default: the scratch and tmpfs roots) whose owner is gone
    (only those of ``owner_pid``, if given)."""
    if root is None:
        return [d for r in _roots() for d in leftovers(r, owner_pid=owner_pid)]
    found = []
    try:
        entries = sorted(Path(root).iterdir())
    except OSError:
        return []
    for d in entries:
        if not d.name.startswith(PREFIX) or not d.is_dir() or d.is_symlink():
            continue
        rec = read_owner(d)
        if rec is None or alive(rec):
            continue  # no owner file: not ours to judge (made before owner files, or being set up right now)
        if owner_pid is not None and int(rec.get("pid", -1)) != owner_pid:
            continue
        found.append(d)
    return found


def _processes_in(directory: Path) -> list[psutil.Process]:
    d = str(directory)
    hits = []
    for p in psutil.process_iter(["pid", "cmdline", "cwd"]):
        try:
            if p.pid == os.getpid():
                continue
            cmd = " ".join(p.info["cmdline"] or [])
            cwd = p.info["cwd"] or ""
            if d in cmd or cwd == d or cwd.startswith(d + "/"):
                hits.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return hits


def _stop_processes(procs: list[psutil.Process], grace: float = 5.0) -> list[str]:
    names = []
    for p in procs:
        try:
            names.append(f"process {p.pid} ({p.name()})")
            p.send_signal(signal.SIGTERM)
        except psutil.NoSuchProcess:
            continue
    _, survivors = psutil.wait_procs(procs, timeout=grace)
    for p in survivors:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(survivors, timeout=grace)
    return names


def _docker(*args: str) -> subprocess.CompletedProcess | None:
    if shutil.which("docker") is None:
        return None
    try:
        return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None


def _containers_in(directory: Path) -> list[tuple[str, str, str]]:
    """(id, name, label value) of our containers with a bind mount inside ``directory``."""
    r = _docker("ps", "-aq", "--filter", f"label={CONTAINER_LABEL}")
    if r is None or r.returncode != 0 or not r.stdout.split():
        return []
    r = _docker("inspect", *r.stdout.split())
    if r is None or r.returncode != 0:
        return []
    hits = []
    for c in json.loads(r.stdout):
        sources = [m.get("Source", "") for m in c.get("Mounts", [])]
        if any(s == str(directory) or s.startswith(str(directory) + "/") for s in sources):
            hits.append((c["Id"], c["Name"].lstrip("/"), c["Config"]["Labels"].get(CONTAINER_LABEL, "")))
    return hits


def _remove_containers(directory: Path) -> list[str]:
    removed = []
    for cid, name, tag in _containers_in(directory):
        _docker("rm", "-f", "-v", cid)
        removed.append(f"container {name}")
        for kind in ("network", "volume"):
            r = _docker(kind, "ls", "-q", "--filter", f"label={CONTAINER_LABEL}={tag}")
            for obj in (r.stdout.split() if r is not None and r.returncode == 0 and tag else []):
                if (_docker(kind, "rm", obj) or subprocess.CompletedProcess([], 1)).returncode == 0:
                    removed.append(f"{kind} {obj}")
    return removed


def host_link(namespace: str) -> str:
    """The host's end of the veth pair of our namespace ``namespace``."""
    return HOST_LINK_PREFIX + namespace[len(NAMESPACE_PREFIX):]


def leftover_namespaces() -> list[str]:
    """Our network namespaces that exist now (a test checks there are none after a failure)."""
    try:
        names = os.listdir("/run/netns")
    except FileNotFoundError:
        return []
    return [n for n in names if n.startswith(NAMESPACE_PREFIX)]


def remove_namespace(name: str) -> None:
    """Delete our namespace ``name`` and the host's end of its veth pair, each quietly if it is gone (deleting
    the namespace deletes its own end, and with it the pair, unless the pair was made but not yet split)."""
    for args in (("netns", "delete", name), ("link", "delete", host_link(name))):
        subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)


def remove(directory: Path) -> list[str]:
    """Stop and remove everything of one leftover work directory; what was removed, one phrase each."""
    directory = Path(directory)
    done = _stop_processes(_processes_in(directory))
    done += _remove_containers(directory)
    if directory.name.startswith(NETNS_PREFIX):
        name = directory.name[len(NETNS_PREFIX):]
        if name in leftover_namespaces():
            remove_namespace(name)
            done.append(f"network namespace {name}")
    shutil.rmtree(directory, ignore_errors=True)
    done.append(f"directory {directory}")
    return done


def sweep(root: Path | None = None, *, owner_pid: int | None = None) -> list[str]:
    out = []
    for d in leftovers(root, owner_pid=owner_pid):
        out += remove(d)
    return out


def guard(pid: int, started: float, *, poll: float = GUARD_POLL_S, root: Path | None = None,
          report: Callable[[str], None] = lambda s: None) -> list[str]:
    """Wait for the owner (pid, start time) to end, then remove what it left."""
    rec = {"pid": pid, "started": started}
    while alive(rec):
        time.sleep(poll)
    removed = sweep(root, owner_pid=pid)
    for line in removed:
        report(line)
    return removed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="logbench-clean",
        description="Stop and remove what studies left behind when their process was killed: server and syslog "
                    "processes, containers, network namespaces and the private directories under the scratch "
                    "root (/var/tmp). Only leftovers whose owner process is gone are touched.")
    ap.add_argument("--root", type=Path, default=None, help="scratch root to look in (default: /var/tmp)")
    ap.add_argument("--dry-run", action="store_true", help="only list what would be removed")
    ap.add_argument("--guard", nargs=2, metavar=("PID", "STARTED"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.guard:
        # Ignore the interrupts meant for the study: the guardian must outlive them to clean up.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        guard(int(a.guard[0]), float(a.guard[1]), root=a.root, report=_guardian_report)
        return 0
    found = leftovers(a.root)
    if not found:
        print("logbench-clean: nothing left behind")
        return 0
    for d in found:
        rec = read_owner(d) or {}
        if a.dry_run:
            print(f"would remove {d} (owner pid {rec.get('pid')}, gone: {rec.get('cmdline', '')[:80]})")
            continue
        for line in remove(d):
            print(f"removed {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
