"""Evidence of contention on the way a log line leaves a backend, without hardware counters.

Post 003 blamed its collapse on backends queueing on the logging collector's pipe (``pipe_write`` ->
``mutex_lock`` -> ``osq_lock`` in its profiles). Three readings test that on a run of ours:

- :class:`WchanSampler` — every backend's ``/proc/<pid>/wchan`` at ``hz`` per second during the run: the
  kernel function each one sleeps in ("0": on a CPU or runnable). The share of samples in a pipe wait or a
  lock is the share of the backends' time spent blocked getting a line out;
- the voluntary / involuntary context switches of the backends and of the collector over the run
  (``/proc/<pid>/status``; a backend's counters start at zero when pgbench connects it);
- :func:`perf_profile` — a software ``perf record -e cpu-clock -g`` of the whole machine while a load runs,
  summarised to its top symbols (:func:`top_symbols`), as the post summarised its own.

The sampler reads each wchan with ``pread`` on a descriptor kept open, so 64 backends at 100 Hz cost a few
thousand cheap system calls a second — the same in every configuration, including the baseline.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import psutil

# What a sample of a sleeping backend is, by the kernel function it sleeps in. Kernels name a blocked pipe
# writer differently (pipe_wait up to 5.5, pipe_write, anon_pipe_write in 6.x); locks are mutexes, rw
# semaphores (a regular file's inode lock: a direct write to one file) and their optimistic spinners.
CATEGORIES = ("running", "pipe", "lock", "client", "other")
_PIPE = re.compile(r"pipe")
_LOCK = re.compile(r"mutex|rwsem|osq_lock|down_write|down_read|lock_page")
_CLIENT = re.compile(r"epoll|unix_stream|sock|poll_schedule|select")


def category(wchan: str) -> str:
    """running (on a CPU or runnable) | pipe (blocked writing into a pipe) | lock (waiting for a kernel lock) |
    client (waiting for the client's next message) | other."""
    w = wchan.strip()
    if w in ("", "0"):
        return "running"
    if _PIPE.search(w):
        return "pipe"
    if _LOCK.search(w):
        return "lock"
    if _CLIENT.search(w):
        return "client"
    return "other"


def _ctx(pid: int) -> tuple[int, int] | None:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    vol = re.search(r"^voluntary_ctxt_switches:\s+(\d+)", text, re.MULTILINE)
    inv = re.search(r"^nonvoluntary_ctxt_switches:\s+(\d+)", text, re.MULTILINE)
    return (int(vol.group(1)), int(inv.group(1))) if vol and inv else None


def server_processes(pid: int) -> tuple[list[int], int | None]:
    """(the client backends, the logging collector or None) under the server process ``pid``."""
    backends, collector = [], None
    try:
        kids = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return [], None
    for k in kids:
        try:
            cmd = " ".join(k.cmdline())
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
        if "[local]" in cmd or "127.0.0.1" in cmd:
            backends.append(k.pid)
        elif cmd.startswith("postgres: logger"):
            collector = k.pid
    return backends, collector


@dataclass(frozen=True)
class ContentionSample:
    """What the sampler saw over one run."""

    samples: int  # backend samples taken (backends × ticks)
    ticks: int
    by_category: dict[str, int]
    top_wchan: dict[str, int]  # the most frequent sleeping functions
    backend_ctx_voluntary: int
    backend_ctx_involuntary: int
    collector_ctx_voluntary: int  # -1: no collector running
    collector_ctx_involuntary: int

    def share(self, cat: str) -> float:
        return self.by_category.get(cat, 0) / self.samples if self.samples else float("nan")

    def as_extra(self) -> dict[str, object]:
        """Flat values for a run record's ``extra``."""
        out: dict[str, object] = {"wchan_samples": self.samples, "wchan_ticks": self.ticks,
                                  "wchan_top": dict(self.top_wchan)}
        for c in CATEGORIES:
            out[f"wchan_{c}_share"] = self.share(c)
        out.update(backend_ctx_voluntary=self.backend_ctx_voluntary,
                   backend_ctx_involuntary=self.backend_ctx_involuntary,
                   collector_ctx_voluntary=self.collector_ctx_voluntary,
                   collector_ctx_involuntary=self.collector_ctx_involuntary)
        return out


class WchanSampler:
    """Samples the wchan of every backend under ``server_pid`` at ``hz`` while the block runs (a thread).

    The backend list is refreshed every ``refresh_s`` (pgbench connects its clients after the block starts);
    each backend's context switches are its last reading, the collector's the difference over the block.
    """

    def __init__(self, server_pid: int, hz: float = 100.0, *, refresh_s: float = 0.25, top: int = 8,
                 processes: Callable[[int], tuple[list[int], int | None]] = server_processes):
        if not hz > 0:
            raise ValueError(f"hz must be > 0, not {hz!r}")
        self.server_pid, self.hz, self.refresh_s, self.top = server_pid, float(hz), refresh_s, top
        self._processes = processes
        self._fds: dict[int, int] = {}
        self._wchan: Counter[str] = Counter()
        self._ticks = 0
        self._ctx: dict[int, tuple[int, int]] = {}
        self._collector: int | None = None
        self._collector0: tuple[int, int] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="logbench-wchan")
        self.result: ContentionSample | None = None

    def _refresh(self) -> None:
        backends, collector = self._processes(self.server_pid)
        for pid in backends:
            if pid not in self._fds:
                try:
                    self._fds[pid] = os.open(f"/proc/{pid}/wchan", os.O_RDONLY)
                except OSError:
                    continue
        for pid in list(self._fds):
            c = _ctx(pid)
            if c is not None:
                self._ctx[pid] = c
        if collector is not None and self._collector is None:
            self._collector, self._collector0 = collector, _ctx(collector)

    def _tick(self) -> None:
        gone = []
        for pid, fd in self._fds.items():
            try:
                w = os.pread(fd, 128, 0).decode(errors="replace")
            except OSError:  # the backend exited
                gone.append(pid)
                continue
            self._wchan[w.strip() or "0"] += 1
        for pid in gone:
            os.close(self._fds.pop(pid))
        self._ticks += 1

    def _loop(self) -> None:
        period, next_refresh = 1.0 / self.hz, 0.0
        t_next = time.monotonic()
        while not self._stop.is_set():
            now = time.monotonic()
            if now >= next_refresh:
                self._refresh()
                next_refresh = now + self.refresh_s
            self._tick()
            t_next += period
            delay = t_next - time.monotonic()
            if delay > 0:
                self._stop.wait(delay)
            else:
                t_next = time.monotonic()  # fell behind: no burst of catch-up samples

    def __enter__(self) -> "WchanSampler":
        self._refresh()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._refresh()
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
        cats: Counter[str] = Counter()
        for w, n in self._wchan.items():
            cats[category(w)] += n
        sleeping = Counter({w: n for w, n in self._wchan.items() if w != "0"})
        coll1 = _ctx(self._collector) if self._collector is not None else None
        cv = ci = -1
        if self._collector0 is not None and coll1 is not None:
            cv, ci = coll1[0] - self._collector0[0], coll1[1] - self._collector0[1]
        self.result = ContentionSample(
            samples=sum(self._wchan.values()), ticks=self._ticks, by_category={c: cats.get(c, 0) for c in CATEGORIES},
            top_wchan=dict(sleeping.most_common(self.top)),
            backend_ctx_voluntary=sum(v for v, _ in self._ctx.values()),
            backend_ctx_involuntary=sum(i for _, i in self._ctx.values()),
            collector_ctx_voluntary=cv, collector_ctx_involuntary=ci)


# -- perf ----------------------------------------------------------------------------------------------------

def perf_binary() -> str | None:
    """The perf tool (Debian's linux-perf), or None."""
    return shutil.which("perf")


def perf_usable() -> bool:
    """Whether a software cpu-clock profile of the whole machine can be taken here (perf present; root, or
    kernel.perf_event_paranoid ≤ 0)."""
    if perf_binary() is None:
        return False
    if os.geteuid() == 0:
        return True
    try:
        return int(Path("/proc/sys/kernel/perf_event_paranoid").read_text()) <= 0
    except (OSError, ValueError):
        return False


class PerfRecord:
    """``perf record -e cpu-clock -g -a`` into ``path`` while the block runs (stopped with SIGINT)."""

    def __init__(self, path: Path, frequency: int = 499):
        self.path, self.frequency = Path(path), frequency
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> "PerfRecord":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            # -B -N: no build-id collection at the end (seconds per profile, and nothing is symbolised elsewhere)
            [perf_binary() or "perf", "record", "-q", "-B", "-N", "-e", "cpu-clock", "-g", "-a", "-F", str(self.frequency),
             "-o", str(self.path)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            start_new_session=True)
        self._wait_started()
        return self

    def _wait_started(self, timeout: float = 10.0) -> None:
        """Return once perf samples: it first writes a header, then a record of every existing process
        (a second or more on a loaded machine), then its samples in buffered bursts; the load must not start
        (and end) before that, or the profile is empty."""
        deadline, last, since = time.monotonic() + timeout, -1, time.monotonic()
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                size = self.path.stat().st_size
            except OSError:
                size = -1
            if size != last:
                last, since = size, time.monotonic()
            elif size > 4096 and time.monotonic() - since >= 0.2:
                return
            time.sleep(0.05)

    def __exit__(self, *exc) -> None:
        import signal

        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()


_LINE = re.compile(r"^\s*([\d.]+)%\s+(?:([\d.]+)%\s+)?(\S+)\s+(\S+)\s+\[(\.|k)\]\s+(.+?)\s*$")


def parse_report(text: str, children: bool) -> list[dict[str, object]]:
    """Rows of ``perf report --stdio -g none --sort comm,dso,sym``: percent(s), command, object, symbol."""
    rows = []
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        m = _LINE.match(line)
        if not m:
            continue
        first, second = float(m.group(1)), m.group(2)
        rows.append({"children_pct": first if children else None,
                     "self_pct": float(second) if (children and second) else (None if children else first),
                     "command": m.group(3), "object": m.group(4),
                     "space": "kernel" if m.group(5) == "k" else "user", "symbol": m.group(6)})
    return rows


# The processes of a run: the server's and the load tool's (this machine is shared; a system-wide profile
# also samples whatever else runs, which is left out, and the percentages are of these processes' samples).
PROFILED_COMMANDS = ("postgres", "pgbench")


def report_rows(data: Path, comms: Sequence[str] = PROFILED_COMMANDS) -> list[dict[str, object]]:
    """Every symbol of a perf.data file above 0.5 % with callees, with its self and with-callees shares (one
    ``perf report --children``: a symbol's self share never exceeds its share with callees, so none is missed)."""
    argv = [perf_binary() or "perf", "report", "-i", str(data), "--stdio", "-g", "none", "--sort",
            "comm,dso,sym", "--percent-limit", "0.5", "--children", "--comms", ",".join(comms),
            "--percentage", "relative"]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    return parse_report(r.stdout, children=True)


def top_symbols(rows: list[dict[str, object]], n: int = 15, *, children: bool = False) -> list[dict[str, object]]:
    """The ``n`` top symbols: by self time, or by time including callees (``children``), the view in which
    the post showed ``errfinish`` and ``EmitErrorReport``."""
    key = "children_pct" if children else "self_pct"
    return sorted(rows, key=lambda x: -(x[key] or 0))[:n]


def summarise_profiles(paths: Sequence[tuple[dict[str, object], Path]]) -> list[dict[str, object]]:
    """One row per (profile, symbol above 0.5 % with callees): each profile's key columns, its rank by time
    with callees, the self and with-callees shares."""
    out = []
    for keys, data in paths:
        if not Path(data).is_file():
            continue
        for rank, row in enumerate(top_symbols(report_rows(Path(data)), n=10**6, children=True), 1):
            out.append({**keys, "rank": rank, **row})
    return out


# -- the readings as columns, and a profile beside a published one --------------------------------------------

@dataclass(frozen=True)
class Evidence:
    """The per-run readings a bench records in a run's ``extra`` (:meth:`ContentionSample.as_extra`)."""

    wchan_samples: float
    wchan_running_share: float
    wchan_pipe_share: float
    wchan_lock_share: float
    wchan_client_share: float
    wchan_other_share: float
    backend_ctx_voluntary: float
    backend_ctx_involuntary: float
    collector_ctx_voluntary: float
    collector_ctx_involuntary: float
    blks_read: float


def with_evidence(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs with the readings as columns, per transaction (backends' switches, block reads), per second (the
    collector's switches; NaN without a collector) and the time per transaction (µs)."""
    import dataclasses

    r = runs.copy()
    for f in dataclasses.fields(Evidence):
        r[f.name] = pd.to_numeric(r["extra"].map(lambda e, n=f.name: (e or {}).get(n)), errors="coerce").astype(float)
    tx = r["transactions"].astype(float).where(r["transactions"] > 0)
    for c in ("backend_ctx_voluntary", "backend_ctx_involuntary", "blks_read"):
        r[f"{c}_per_tx"] = r[c] / tx
    for c in ("collector_ctx_voluntary", "collector_ctx_involuntary"):
        r[f"{c}_per_s"] = r[c].where(r[c] >= 0) / r["wall_s"].astype(float)
    r["us_per_tx"] = 1e6 / r["tps"].astype(float)
    return r


def top_table(rows: pd.DataFrame, view: str = "self", n: int = 10) -> pd.DataFrame:
    """A profile's top ``n`` symbols by self time (``view`` 'self') or with callees ('children')."""
    if not len(rows):
        return rows
    col = "self_pct" if view == "self" else "children_pct"
    return rows.sort_values(col, ascending=False).head(n)[["command", "object", "symbol", col]]


def beside_reference(rows: pd.DataFrame, reference: pd.DataFrame, symbols: dict[str, tuple[str, ...]],
                     label: str) -> pd.DataFrame:
    """Each published symbol (``reference``: profile, symbol, percent) with its largest share, beside ours (with
    callees, summed over processes and over the symbols whose names contain one of ``symbols[name]``: kernels
    and builds rename functions)."""
    out = []
    for sym, parts in symbols.items():
        theirs = reference[reference["symbol"] == sym]
        hit = rows[rows["symbol"].map(lambda x: any(p in str(x) for p in parts))] if len(rows) else rows
        top = theirs.loc[theirs["percent"].idxmax()] if len(theirs) else None
        out.append({"symbol": sym, "post (max over its profiles, %)": None if top is None else top["percent"],
                    "post: in": "–" if top is None else top["profile"].split(" (")[0],
                    f"{label} (%, with callees)": float(hit["children_pct"].sum()) if len(hit) else 0.0,
                    "ours: matched": ", ".join(sorted(set(hit["symbol"].astype(str)))) if len(hit) else "–"})
    return pd.DataFrame(out).set_index("symbol")
