"""Noise controls of the measuring machine and the counters that show whether they held.

The CPU idle state is the control that matters most on this VM: with the
``haltpoll`` cpuidle driver an idle vCPU pays a wake-up on every client round
trip, so a mostly idle baseline server runs *slower* than a busy logging one
(issue 10). Holding ``/dev/cpu_dma_latency`` at 0 keeps the CPUs out of deep
idle states for as long as the file stays open — what ``pyperf system tune``
and tuned's ``latency-performance`` profile do. The request ends when the file
descriptor is closed, so :class:`IdleState` closes it whatever happens.

:func:`snapshot` / :func:`delta` read the machine counters around one run:
cpuidle entries and residency per idle state (summed over CPUs), and steal time;
:class:`ContextSwitches` counts the server's context switches during one run.
"""

from __future__ import annotations

import dataclasses
import math
import os
import struct
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import ParameterError

IDLE_STATES = ("hold", "free")
NO_DRIVER = "unavailable: no cpuidle driver (the kernel idles by HLT whatever the latency request)"

DMA_LATENCY = Path("/dev/cpu_dma_latency")
CPU_SYSFS = Path("/sys/devices/system/cpu")
PROC_STAT = Path("/proc/stat")

# Steal above this fraction of the run's CPU capacity (wall seconds x CPUs) flags the run: another
# tenant took a share of the machine large enough to move a 3 % effect (the A/A resolution goal).
HIGH_STEAL_FRACTION = 0.02


class IdleState:
    """Hold the CPUs out of deep idle states while measuring (``hold``), or leave them alone (``free``).

    ``in_force`` says what actually happened: ``"hold"``, ``"free"`` or ``"unavailable: <reason>"``
    (no device, no permission, no cpuidle driver to read the request); a study without the control still runs and
    records that.
    The descriptor is opened close-on-exec, so servers and load tools started while it is held do
    not inherit it and the request cannot outlive this object.
    """

    def __init__(self, mode: str = "hold", device: Path | str = DMA_LATENCY):
        self._fd: int | None = None
        if mode not in IDLE_STATES:
            raise ParameterError("idle_state", mode, IDLE_STATES)
        self.mode = mode
        self.device = Path(device)
        self.in_force = "free" if mode == "free" else "not entered"

    def __enter__(self) -> IdleState:
        if self.mode == "free":
            self.in_force = "free"
            return self
        try:
            fd = os.open(self.device, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            self.in_force = f"unavailable: {self.device} does not exist"
            return self
        except PermissionError:
            self.in_force = f"unavailable: no permission to open {self.device} (needs root)"
            return self
        except OSError as e:
            self.in_force = f"unavailable: cannot open {self.device}: {e.strerror}"
            return self
        self._fd = fd
        try:
            # The kernel reads a native 32-bit integer: the allowed wake-up latency in microseconds.
            os.write(fd, struct.pack("i", 0))
        except BaseException as e:
            self.close()
            if not isinstance(e, OSError):
                raise
            self.in_force = f"unavailable: cannot write {self.device}: {e.strerror}"
            return self
        if cpuidle_driver() == "none":
            # No cpuidle driver: the kernel idles by HLT (default_idle) and no code reads the latency request. The
            # Intel Xeon VM without one ran notebook 00's 1-client baseline at 34,121 tps "held" and 32,510 free
            # (n = 5 each, intervals overlapping), and study 04's point selects at 23,800 tps where haltpoll, held,
            # gave 43,400: a record saying "hold" there would claim a control that did nothing.
            self.close()
            self.in_force = NO_DRIVER
            return self
        self.in_force = "hold"
        return self

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    @property
    def holding(self) -> bool:
        return self._fd is not None

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        self.close()

    def __repr__(self) -> str:
        return f"IdleState(mode={self.mode!r}, in_force={self.in_force!r})"


PLACEMENTS = ("none", "split")


class Placement:
    """Where the server and the load generator run: ``none`` (the scheduler decides) or ``split``
    (the server's process tree on the first half of our CPUs, the load tool on the other half).

    For ``split``, the calling thread is pinned to the load CPUs while the context is open, so the
    load tools it starts inherit them; :meth:`pin_server` moves every thread of the server's tree
    to the server CPUs (call it after each settings switch: a restarted server is our child too,
    and new backends inherit the postmaster's CPUs). ``in_force`` says what held, e.g.
    ``"split: server 0, load 1"`` or ``"unavailable: one CPU"``.
    """

    def __init__(self, mode: str = "none"):
        if mode not in PLACEMENTS:
            raise ParameterError("placement", mode, PLACEMENTS)
        self.mode = mode
        self.in_force = "none"
        self.server_cpus: set[int] = set()
        self.load_cpus: set[int] = set()
        self._saved: set[int] | None = None
        self._server_pid: int | None = None

    def __enter__(self) -> Placement:
        if self.mode == "none":
            return self
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            self.in_force = "unavailable: one CPU"
            return self
        half = len(cpus) // 2
        self.server_cpus, self.load_cpus = set(cpus[:half]), set(cpus[half:])
        self._saved = set(cpus)
        os.sched_setaffinity(0, self.load_cpus)
        self.in_force = (f"split: server {','.join(map(str, sorted(self.server_cpus)))}, "
                         f"load {','.join(map(str, sorted(self.load_cpus)))}")
        return self

    def pin_server(self, pid: int | None) -> None:
        if pid is None or not self.server_cpus:
            return
        self._server_pid = pid
        self._set_tree(pid, self.server_cpus)

    def _set_tree(self, pid: int, cpus: set[int]) -> None:
        for _, t in _tree_tasks(pid):
            try:
                os.sched_setaffinity(int(t), cpus)
            except OSError:
                pass  # a thread that just exited

    def __exit__(self, *exc) -> None:
        saved, self._saved = self._saved, None
        if saved is not None:
            os.sched_setaffinity(0, saved)
            # A server that outlives this placement (the next run may use none) gets every CPU back.
            pid, self._server_pid = self._server_pid, None
            if pid is not None:
                self._set_tree(pid, saved)


def cpuidle_driver() -> str:
    """The kernel's cpuidle driver (``haltpoll``, ``intel_idle``, ``acpi_idle``...), or ``"none"``."""
    try:
        return (CPU_SYSFS / "cpuidle" / "current_driver").read_text().strip() or "none"
    except OSError:
        return "none"


def _cpuidle_counters() -> dict[str, int]:
    out: dict[str, int] = {}
    for state in sorted(CPU_SYSFS.glob("cpu[0-9]*/cpuidle/state[0-9]*")):
        try:
            name = (state / "name").read_text().strip()
            usage = int((state / "usage").read_text())
            resid = int((state / "time").read_text())
        except (OSError, ValueError):
            continue
        out[f"cpuidle_usage/{name}"] = out.get(f"cpuidle_usage/{name}", 0) + usage
        out[f"cpuidle_time_us/{name}"] = out.get(f"cpuidle_time_us/{name}", 0) + resid
    return out


def steal_seconds() -> float:
    """Steal time of all CPUs together since boot (the aggregate ``cpu`` line of /proc/stat)."""
    try:
        for line in PROC_STAT.read_text().splitlines():
            parts = line.split()
            if parts and parts[0] == "cpu":
                # user nice system idle iowait irq softirq steal ...
                return int(parts[8]) / os.sysconf("SC_CLK_TCK") if len(parts) > 8 else float("nan")
    except OSError:
        pass
    return float("nan")


def snapshot() -> dict:
    """The machine's noise counters now, flat keys: cpuidle usage and residency per state (summed
    over CPUs), steal seconds, the monotonic clock."""
    out: dict = {"monotonic_s": time.monotonic(), "steal_s": steal_seconds()}
    out.update(_cpuidle_counters())
    return out


def delta(before: dict, after: dict) -> dict:
    """Per-run differences of two :func:`snapshot` values (keys present in both)."""
    return {k: after[k] - before[k] for k in after if k in before}


def cpuidle_usage(d: dict) -> dict[str, int]:
    """The idle-state entries of a :func:`delta`, keyed by state name."""
    prefix = "cpuidle_usage/"
    return {k[len(prefix):]: int(v) for k, v in d.items() if k.startswith(prefix)}


def high_steal(steal_s: float, wall_s: float, cpus: int | None = None) -> bool:
    """True when steal took more than :data:`HIGH_STEAL_FRACTION` of the run's CPU capacity."""
    cpus = cpus or os.cpu_count() or 1
    if not wall_s > 0 or steal_s != steal_s:
        return False
    return steal_s / (wall_s * cpus) > HIGH_STEAL_FRACTION


def _tree_pids(pid: int) -> list[int]:
    """``pid`` and its descendants, from the kernel's per-thread children lists (no /proc scan)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                try:
                    with open(f"/proc/{p}/task/{task}/children") as f:
                        todo.extend(int(c) for c in f.read().split())
                except OSError:
                    pass
        except OSError:
            pass
    return out


def _tree_tasks(pid: int):
    """(process, thread id) of every thread of the process tree under ``pid`` now."""
    for p in _tree_pids(pid):
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tasks:
            yield p, t


def _ctx_switches(pid: int) -> dict[int, tuple[int, int]]:
    """Per thread of the tree: (voluntary, involuntary) context switches so far."""
    out = {}
    for p, t in _tree_tasks(pid):
        vol = invol = None
        try:
            with open(f"/proc/{p}/task/{t}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        vol = int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches:"):
                        invol = int(line.split()[1])
        except OSError:
            continue
        if vol is not None and invol is not None:
            out[int(t)] = (vol, invol)
    return out


class ContextSwitches:
    """Voluntary and involuntary context switches of a process tree while the block runs.

    The kernel keeps no total of a reaped child's context switches that /proc shows, so the tree's
    threads are read every ``interval`` seconds and each thread's last reading counts: a backend
    that exits during the run loses at most its last ``interval``. Threads born during the run
    count from zero. ``voluntary``/``involuntary`` are -1 when ``pid`` is None.
    """

    def __init__(self, pid: int | None, interval: float = 0.25):
        self.pid, self.interval = pid, interval
        self.first: dict[int, tuple[int, int]] = {}
        self.last: dict[int, tuple[int, int]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="logbench-ctx-switches")

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.last.update(_ctx_switches(self.pid))

    def __enter__(self) -> "ContextSwitches":
        if self.pid is not None:
            self.first = _ctx_switches(self.pid)
            self.last = dict(self.first)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.pid is not None:
            self._stop.set()
            self._thread.join()
            self.last.update(_ctx_switches(self.pid))

    def _total(self, i: int) -> int:
        if self.pid is None:
            return -1
        return sum(v[i] - self.first.get(t, (0, 0))[i] for t, v in self.last.items())

    @property
    def voluntary(self) -> int:
        return self._total(0)

    @property
    def involuntary(self) -> int:
        return self._total(1)


# -- the settle condition (issue 40) ----------------------------------------------------------------------------
# What one run leaves behind (a syslog daemon draining its queue, the page cache a logging run dirtied being
# written back) slows the next run, whichever arm it is: a fixed pause either wastes time or is too short. A study
# that declares a settle condition waits, before each run counts, until the machine is back where it was before
# the first run: Dirty + Writeback in /proc/meminfo at the reference level and the log daemons' CPU time no
# longer advancing faster than it did then.

MEMINFO = Path("/proc/meminfo")
# The load tools here report once a second (pgbench -P 1, sysbench --report-interval=1, the switchback's seconds:
# switchback.REPORT_INTERVAL_S): the shortest time in which what a run leaves behind is seen at all.
LOAD_REPORT_INTERVAL_S = 1.0


def dirty_writeback_kb(meminfo: str) -> int:
    """Dirty + Writeback of a /proc/meminfo text, in kB: page cache not yet on disk and being written now."""
    got = {}
    for line in meminfo.splitlines():
        key, _, rest = line.partition(":")
        if key in ("Dirty", "Writeback"):
            got[key] = int(rest.split()[0])
    if len(got) != 2:
        raise ValueError(f"/proc/meminfo without Dirty and Writeback: {sorted(got)} only")
    return got["Dirty"] + got["Writeback"]


def read_dirty_kb(path: Path = MEMINFO) -> int:
    return dirty_writeback_kb(Path(path).read_text())


@dataclass(frozen=True)
class Settle:
    """A study's settle condition (its profile's ``"settle"``; None: no settle step, the runs follow each other
    as they always have).

    - ``limit_s``: the longest wait before a run; a run whose wait reaches it runs anyway, and its record says
      so (``extra["settle"]["settled"]``): stopping a study because the host stays busy would lose the block.
    - ``poll_s``: seconds between readings; the daemons' CPU rate is taken over one poll.
    - ``dirty_tolerance_kb``: how far above the reference Dirty + Writeback may stay (the page cache never stands
      still to the kB: the server's own checkpoints and the journal write a little all the time).
    - ``cpu_tolerance``: the daemons' CPU seconds per second allowed above their reference rate.
    """

    limit_s: float
    poll_s: float = 0.25
    dirty_tolerance_kb: int = 4096
    cpu_tolerance: float = 0.01

    def __post_init__(self):
        def number(v: object) -> bool:
            return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v

        if not (number(self.limit_s) and self.limit_s > 0):
            raise ParameterError("settle.limit_s", self.limit_s, "seconds > 0")
        if not (number(self.poll_s) and 0 < self.poll_s <= self.limit_s):
            raise ParameterError("settle.poll_s", self.poll_s, f"seconds > 0 and <= limit_s ({self.limit_s})")
        for name in ("dirty_tolerance_kb", "cpu_tolerance"):
            if not (number(getattr(self, name)) and getattr(self, name) >= 0):
                raise ParameterError(f"settle.{name}", getattr(self, name), "a number >= 0")

    def check(self, report_interval_s: float = LOAD_REPORT_INTERVAL_S) -> None:
        """ParameterError unless the limit lasts at least one report of the load tool: a shorter wait cannot
        outlast what the previous run's last reported second left behind."""
        if self.limit_s < report_interval_s:
            raise ParameterError("settle.limit_s", self.limit_s,
                                 f"seconds >= the load tool's report interval ({report_interval_s:g} s)")

    def as_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def settle_condition(declared: object) -> Settle | None:
    """A profile's ``"settle"`` (None, a :class:`Settle` or a mapping of its fields) as a Settle."""
    if declared is None or isinstance(declared, Settle):
        return declared
    if not isinstance(declared, Mapping):
        raise ParameterError("settle", declared, "None or a mapping of limit_s, poll_s, dirty_tolerance_kb, "
                             "cpu_tolerance")
    unknown = set(declared) - {f.name for f in dataclasses.fields(Settle)}
    if unknown:
        raise ParameterError("settle", declared, "keys limit_s, poll_s, dirty_tolerance_kb, cpu_tolerance only; "
                             "not " + ", ".join(sorted(unknown)))
    return Settle(**declared)


@dataclass(frozen=True)
class SettleReference:
    """The quiet machine a settle waits for: Dirty + Writeback (kB) and the daemons' CPU rate (s/s; NaN: no
    daemon to watch), measured before the first run."""

    dirty_kb: float
    cpu_rate: float


@dataclass(frozen=True)
class Settled:
    """One wait: how long it took, whether the condition held (False: the limit was reached), the last reading."""

    seconds: float
    settled: bool
    dirty_kb: float
    cpu_rate: float

    def as_record(self, reference: SettleReference) -> dict[str, object]:
        return {"settled": self.settled, "dirty_kb": self.dirty_kb, "cpu_rate": self.cpu_rate,
                "reference_dirty_kb": reference.dirty_kb, "reference_cpu_rate": reference.cpu_rate}


def _rate(cpu0: float, cpu1: float, dt_s: float) -> float:
    return (cpu1 - cpu0) / dt_s if dt_s > 0 else math.nan


def settle_reference(condition: Settle, read_dirty, read_cpu, *, clock=time.monotonic,
                     sleep=time.sleep) -> SettleReference:
    """The reference, read over one poll on the idle machine (servers up, no load yet). ``read_dirty``: kB;
    ``read_cpu``: the daemons' cumulative CPU seconds (NaN: none)."""
    t0, cpu0 = clock(), read_cpu()
    sleep(condition.poll_s)
    t1, cpu1 = clock(), read_cpu()
    return SettleReference(float(read_dirty()), _rate(cpu0, cpu1, t1 - t0))


def settle(condition: Settle, reference: SettleReference, read_dirty, read_cpu, *, clock=time.monotonic,
           sleep=time.sleep) -> Settled:
    """Wait until Dirty + Writeback is within ``dirty_tolerance_kb`` of the reference and the daemons' CPU rate
    over the last poll within ``cpu_tolerance`` of theirs, or ``limit_s`` has passed. A daemon CPU reading of
    NaN (no daemon, or the reference had none) leaves the page cache as the only condition. The first reading
    comes one poll in: an idle daemon is one whose CPU time did not move for a while, not at one instant."""
    t0 = clock()
    t_prev, cpu_prev = t0, read_cpu()
    while True:
        sleep(condition.poll_s)
        now, cpu = clock(), read_cpu()
        rate = _rate(cpu_prev, cpu, now - t_prev)
        dirty = float(read_dirty())
        quiet_cpu = (rate != rate or reference.cpu_rate != reference.cpu_rate
                     or rate <= reference.cpu_rate + condition.cpu_tolerance)
        clean = dirty <= reference.dirty_kb + condition.dirty_tolerance_kb
        if (clean and quiet_cpu) or now - t0 >= condition.limit_s:
            return Settled(now - t0, bool(clean and quiet_cpu), dirty, rate)
        t_prev, cpu_prev = now, cpu
