"""A memory limit on a server's processes, page cache included: how an IO-bound regime is made on a small dataset.

Post 000 ran its IO-bound half on a 29 GB database; here the server's processes go into a
memory cgroup of their own whose limit counts the page cache their reads bring in, and the data
files are evicted from the page cache before the run, so the data no longer fits however much
RAM the machine has. The cgroup is created under this process's own memory cgroup (cgroup v1: the
``memory`` hierarchy) or, on cgroup v2, under the root where the memory controller is enabled for
children; it is removed on exit, its processes moved back first.

:func:`available` says whether this machine allows it (checked before any server starts);
:class:`MemoryLimit` is the context manager; :func:`evict` drops files from the page cache
(``posix_fadvise(DONTNEED)``: clean pages only, for every reader, without privileges).
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

import psutil

CGROUP_ROOT = Path("/sys/fs/cgroup")


def _mounts(fstype: str) -> list[tuple[str, Path, list[str]]]:
    """(root inside the hierarchy, mount point, super options) of every mount of ``fstype``."""
    out = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        pre, _, post = line.partition(" - ")
        fields, tail = pre.split(), post.split()
        if len(fields) >= 5 and tail and tail[0] == fstype:
            out.append((fields[3], Path(fields[4]), tail[-1].split(",")))
    return out


def _own_memory_cgroup() -> tuple[Path, str] | None:
    """(directory of this process's memory cgroup, 'v1' | 'v2'), or None when there is none to nest in."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        hid, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            # The hierarchy may be mounted from a cgroup below its root (a container's own): the process's
            # path is then relative to that mount's root, not to /sys/fs/cgroup/memory.
            for root, point, opts in _mounts("cgroup"):
                if "memory" in opts and (path == root or path.startswith(root.rstrip("/") + "/")):
                    d = point / os.path.relpath(path, root)
                    if (d / "memory.limit_in_bytes").exists():
                        return d.resolve(), "v1"
    # cgroup v2 (unified): a cgroup that holds processes cannot give its children controllers ("no internal
    # processes"), so the limit goes under the root, whose children get the memory controller (systemd enables it).
    subtree = CGROUP_ROOT / "cgroup.subtree_control"
    if subtree.exists() and "memory" in subtree.read_text().split():
        return CGROUP_ROOT, "v2"
    return None


def available() -> str:
    """'' when a memory cgroup can be made here, else why not (for a ParameterError)."""
    own = _own_memory_cgroup()
    if own is None:
        return "no memory cgroup controller (v1 or v2) is mounted for this process"
    if not os.access(own[0], os.W_OK):
        return (f"{own[0]} is not writable (run as root; a container sees its cgroups read-only unless run "
                "--privileged or given the host's /sys/fs/cgroup read-write)")
    return ""


def evict(root: Path) -> int:
    """Drop every regular file under ``root`` from the page cache; returns the bytes asked to drop."""
    total = 0
    for p in Path(root).rglob("*"):
        try:
            if not p.is_file() or p.is_symlink():
                continue
            fd = os.open(p, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.fsync(fd)  # dirty pages are not dropped: write them first
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            total += os.fstat(fd).st_size
        except OSError:
            pass
        finally:
            os.close(fd)
    return total


class MemoryLimit:
    """A memory cgroup with a limit, nested in this process's own; processes are moved in with
    :meth:`add_tree` and moved back out (and the cgroup removed) on exit."""

    def __init__(self, limit_bytes: int):
        own = _own_memory_cgroup()
        if own is None:
            raise RuntimeError(available())
        self.parent, self.version = own
        self.limit_bytes = int(limit_bytes)
        self.path = self.parent / f"logbench-{secrets.token_hex(4)}"

    def __enter__(self) -> "MemoryLimit":
        self.path.mkdir()
        if self.version == "v2":
            (self.path / "memory.max").write_text(str(self.limit_bytes))
            if (self.path / "memory.swap.max").exists():
                (self.path / "memory.swap.max").write_text("0")
        else:
            (self.path / "memory.limit_in_bytes").write_text(str(self.limit_bytes))
        return self

    def add_tree(self, pid: int) -> int:
        """Move ``pid`` and its descendants in (processes forked later follow their parent); returns how many."""
        procs = [pid] + [c.pid for c in psutil.Process(pid).children(recursive=True)]
        moved = 0
        for p in procs:
            try:
                (self.path / "cgroup.procs").write_text(str(p))
                moved += 1
            except (ProcessLookupError, OSError):
                pass  # a process that ended meanwhile
        return moved

    def stats(self) -> dict[str, int]:
        """Usage, how often the limit was hit, and the page cache charged to the cgroup now."""
        if self.version == "v2":
            stat = dict(line.split() for line in (self.path / "memory.stat").read_text().splitlines())
            events = dict(line.split() for line in (self.path / "memory.events").read_text().splitlines())
            return {"usage_bytes": int((self.path / "memory.current").read_text()),
                    "limit_hits": int(events.get("max", 0)), "file_bytes": int(stat.get("file", 0))}
        stat = dict(line.split() for line in (self.path / "memory.stat").read_text().splitlines())
        return {"usage_bytes": int((self.path / "memory.usage_in_bytes").read_text()),
                "limit_hits": int((self.path / "memory.failcnt").read_text()),
                "file_bytes": int(stat.get("cache", 0))}

    def __exit__(self, *exc) -> None:
        procs = (self.path / "cgroup.procs")
        for _ in range(50):
            try:
                pids = [p for p in procs.read_text().split() if p]
            except OSError:
                break
            for p in pids:
                try:
                    (self.parent / "cgroup.procs").write_text(p)
                except OSError:
                    pass
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.1)
