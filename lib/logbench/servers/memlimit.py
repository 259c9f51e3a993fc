"""A memory limit on a server's processes, page cache included, and optionally a limit on their reads per
second: how an IO-bound regime is made on a small dataset and a fast disk.

Post 000 ran its IO-bound half on a 29 GB database; here the server's processes go into a
memory cgroup of their own whose limit counts the page cache their reads bring in, and the data
files are evicted from the page cache before the run, so the data no longer fits however much
RAM the machine has. The cgroup is created under this process's own memory cgroup (cgroup v1: the
``memory`` hierarchy) or, on cgroup v2, under the root where the memory controller is enabled for
children; it is removed on exit, its processes moved back first.

Missing the page cache is not enough to be slow: this VM's virtual disk answers a random 8 kB read in
~0.1 ms (the host caches it), the post's seven SATA disks in ~7 ms. ``read_iops`` caps the reads the
processes may issue to the data's disk per second (cgroup v1 ``blkio.throttle.read_iops_device``, v2
``io.max riops``), so a read waits for its turn as on a slow disk.

:func:`available` says whether this machine allows it (checked before any server starts);
:class:`MemoryLimit` is the context manager; :func:`evict` drops files from the page cache
(``posix_fadvise(DONTNEED)``: clean pages only, for every reader, without privileges).
:func:`limit_parameters` and :func:`check_machine` are the checks every study with such a regime makes before
any server starts; :func:`io_bound` reads a run's own counters to say whether it was IO-bound.
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

import psutil

from ..base.errors import ParameterError

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


def _own_v1(controller: str, probe: str) -> Path | None:
    """This process's cgroup directory in the v1 hierarchy of ``controller`` (``probe``: a file it must hold)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        hid, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            # The hierarchy may be mounted from a cgroup below its root (a container's own): the process's
            # path is then relative to that mount's root, not to /sys/fs/cgroup/<controller>.
            for root, point, opts in _mounts("cgroup"):
                if controller in opts and (path == root or path.startswith(root.rstrip("/") + "/")):
                    d = point / os.path.relpath(path, root)
                    if (d / probe).exists():
                        return d.resolve()
    return None


def _v2_root_with(controller: str) -> bool:
    # cgroup v2 (unified): a cgroup that holds processes cannot give its children controllers ("no internal
    # processes"), so the limit goes under the root, whose children get the controller (systemd enables it).
    subtree = CGROUP_ROOT / "cgroup.subtree_control"
    return subtree.exists() and controller in subtree.read_text().split()


def _own_memory_cgroup() -> tuple[Path, str] | None:
    """(directory of this process's memory cgroup, 'v1' | 'v2'), or None when there is none to nest in."""
    d = _own_v1("memory", "memory.limit_in_bytes")
    if d is not None:
        return d, "v1"
    return (CGROUP_ROOT, "v2") if _v2_root_with("memory") else None


def _own_io_cgroup(version: str) -> Path | None:
    """Where a read limit nests: v1's blkio hierarchy, or v2's root (the memory limit's own cgroup)."""
    if version == "v1":
        return _own_v1("blkio", "blkio.throttle.read_iops_device")
    return CGROUP_ROOT if _v2_root_with("io") else None


def block_device(path: Path) -> str | None:
    """'major:minor' of the whole disk holding ``path`` (a throttle applies to a disk, not a partition), or None
    when no block device holds it (tmpfs, overlay, a network filesystem)."""
    dev = os.stat(path).st_dev
    sysfs = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    if not sysfs.exists():
        return None
    if (sysfs / "partition").exists():
        sysfs = sysfs.resolve().parent
    return (sysfs / "dev").read_text().strip()


def available(read_limit_on: Path | None = None) -> str:
    """'' when a memory cgroup (and, given a path, a read limit on the disk holding it) can be made here,
    else why not (for a ParameterError)."""
    own = _own_memory_cgroup()
    if own is None:
        return "no memory cgroup controller (v1 or v2) is mounted for this process"
    if not os.access(own[0], os.W_OK):
        return (f"{own[0]} is not writable (run as root; a container sees its cgroups read-only unless run "
                "--privileged or given the host's /sys/fs/cgroup read-write)")
    if read_limit_on is not None:
        io = _own_io_cgroup(own[1])
        if io is None:
            return "no block IO cgroup controller (v1 blkio or v2 io) to limit reads with"
        if not os.access(io, os.W_OK):
            return f"{io} is not writable (run as root)"
        if block_device(read_limit_on) is None:
            return f"{read_limit_on} is on no block device (tmpfs, overlay?): there is no disk's reads to limit"
    return ""


def limit_parameters(memory_limit_mb: object, read_iops: object, backend: str) -> tuple[int | None, int | None]:
    """(memory limit in MB, reads per second), each None when off; ParameterError naming the parameter when a
    value is wrong or the two do not go together. What the machine allows is :func:`check_machine`'s, last."""
    from ..base import params

    limit = params.positive_int_or_off("memory_limit_mb", memory_limit_mb)
    iops = params.positive_int_or_off("read_iops", read_iops)
    if iops is not None and limit is None:
        raise ParameterError("read_iops", iops, "None without memory_limit_mb: reads served by the page cache "
                             "reach no disk, so there is nothing to pace")
    if limit is not None and backend != "local":
        raise ParameterError("memory_limit_mb", limit, "None with the container backend (the limit is a cgroup "
                             "on the local server's processes): set backend to 'local'")
    return limit, iops


def check_machine(limit_mb: int, read_iops: int | None, read_limit_on: Path) -> None:
    """Whether this machine allows the limit (and a read limit on the disk holding ``read_limit_on``, where the
    server's data directory is made); ParameterError naming the parameter it refuses."""
    why = available()
    if why:
        raise ParameterError("memory_limit_mb", limit_mb, f"None on this machine: {why}")
    why = available(read_limit_on=read_limit_on) if read_iops else ""
    if why:
        raise ParameterError("read_iops", read_iops, f"None on this machine: {why}")


# A run is IO-bound when at least this share of the pages it needed missed the server's own buffers and those
# misses came from storage, not the page cache: the memory limit was reached while it ran (the cache was full and
# reclaiming), its page cache grew by at least half the bytes of the pages missed (they were read in during the
# run), or the disk served at least half as many reads as pages missed (reads that bypass the page cache,
# O_DIRECT, counted by the read limit's cgroup).
IO_BOUND_MISS_SHARE = 0.1


def io_bound(missed: int, needed: int, *, limit_hits: int, page_cache_growth: int, page_bytes: int,
             disk_reads: int | None = None) -> bool:
    """Whether a run was IO-bound by its own counters (see IO_BOUND_MISS_SHARE): ``missed`` of the ``needed``
    pages were not in the server's buffers."""
    missed_enough = needed > 0 and missed / needed >= IO_BOUND_MISS_SHARE
    from_storage = (limit_hits > 0 or page_cache_growth >= 0.5 * missed * page_bytes
                    or (disk_reads is not None and disk_reads >= 0.5 * missed))
    return bool(missed_enough and from_storage)


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
    """A memory cgroup with a limit (and optionally a cap on reads per second from the disk holding
    ``read_limit_on``), nested in this process's own; processes are moved in with :meth:`add_tree` and moved
    back out (and the cgroups removed) on exit."""

    def __init__(self, limit_bytes: int, read_iops: int | None = None, read_limit_on: Path | None = None):
        own = _own_memory_cgroup()
        if own is None:
            raise RuntimeError(available())
        self.parent, self.version = own
        self.limit_bytes = int(limit_bytes)
        name = f"logbench-{secrets.token_hex(4)}"
        self.path = self.parent / name
        self.read_iops = int(read_iops) if read_iops else None
        self.device: str | None = None
        self.io_parent = self.io_path = None
        if self.read_iops:
            on = Path(read_limit_on or ".")
            why = available(on)
            if why:
                raise RuntimeError(why)
            self.device = block_device(on)
            self.io_parent = _own_io_cgroup(self.version)
            self.io_path = self.path if self.version == "v2" else self.io_parent / name

    def __enter__(self) -> "MemoryLimit":
        self.path.mkdir()
        if self.version == "v2":
            (self.path / "memory.max").write_text(str(self.limit_bytes))
            if (self.path / "memory.swap.max").exists():
                (self.path / "memory.swap.max").write_text("0")
        else:
            (self.path / "memory.limit_in_bytes").write_text(str(self.limit_bytes))
        if self.read_iops:
            if self.version == "v2":
                (self.path / "io.max").write_text(f"{self.device} riops={self.read_iops}")
            else:
                self.io_path.mkdir()
                (self.io_path / "blkio.throttle.read_iops_device").write_text(f"{self.device} {self.read_iops}")
        return self

    def _cgroups(self) -> list[tuple[Path, Path]]:
        """(cgroup, its parent) for each hierarchy the processes are in."""
        out = [(self.path, self.parent)]
        if self.io_path is not None and self.io_path != self.path:
            out.append((self.io_path, self.io_parent))
        return out

    def add_tree(self, pid: int) -> int:
        """Move ``pid`` and its descendants in (processes forked later follow their parent); returns how many."""
        procs = [pid] + [c.pid for c in psutil.Process(pid).children(recursive=True)]
        moved = 0
        for p in procs:
            try:
                for cgroup, _ in self._cgroups():
                    (cgroup / "cgroup.procs").write_text(str(p))
                moved += 1
            except (ProcessLookupError, OSError):
                pass  # a process that ended meanwhile
        return moved

    def reads(self) -> int:
        """Reads the processes issued to the limited disk so far (0 without a read limit)."""
        if not self.read_iops:
            return 0
        if self.version == "v2":
            for line in (self.path / "io.stat").read_text().splitlines():
                dev, *fields = line.split()
                if dev == self.device:
                    return int(dict(f.split("=") for f in fields).get("rios", 0))
            return 0
        for line in (self.io_path / "blkio.throttle.io_serviced").read_text().splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[0] == self.device and parts[1] == "Read":
                return int(parts[2])
        return 0

    def stats(self) -> dict[str, int]:
        """Usage, how often the limit was hit, the page cache charged to the cgroup now, reads from the disk."""
        if self.version == "v2":
            stat = dict(line.split() for line in (self.path / "memory.stat").read_text().splitlines())
            events = dict(line.split() for line in (self.path / "memory.events").read_text().splitlines())
            return {"usage_bytes": int((self.path / "memory.current").read_text()),
                    "limit_hits": int(events.get("max", 0)), "file_bytes": int(stat.get("file", 0)),
                    "disk_reads": self.reads()}
        stat = dict(line.split() for line in (self.path / "memory.stat").read_text().splitlines())
        return {"usage_bytes": int((self.path / "memory.usage_in_bytes").read_text()),
                "limit_hits": int((self.path / "memory.failcnt").read_text()),
                "file_bytes": int(stat.get("cache", 0)), "disk_reads": self.reads()}

    def __exit__(self, *exc) -> None:
        for cgroup, parent in reversed(self._cgroups()):
            _remove(cgroup, parent)


def _remove(cgroup: Path, parent: Path) -> None:
    """Move the cgroup's processes back to its parent and remove it (retrying while they leave)."""
    procs = cgroup / "cgroup.procs"
    for _ in range(50):
        try:
            pids = [p for p in procs.read_text().split() if p]
        except OSError:
            return
        for p in pids:
            try:
                (parent / "cgroup.procs").write_text(p)
            except OSError:
                pass
        try:
            cgroup.rmdir()
            return
        except OSError:
            time.sleep(0.1)
