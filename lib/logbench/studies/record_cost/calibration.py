"""What study 11 times, apart from what it counts: this machine's calibration (issues 39 and 42).

The counts say how much work a record makes; the cost model needs what that work takes on this machine. Two
figures, measured after the counted starts of the same run:

- **the write() floor**: one ``os.write`` of a record's size to a file opened with ``O_APPEND`` (what PostgreSQL's
  logging collector and MariaDB's server do to their log files) and into a pipe drained by another process (a
  PostgreSQL backend's hop to its collector), at the bytes per record the run counted for its file destinations;
- **the time per instruction** of the baseline's backend: this machine's PostgreSQL with the ``none``
  configuration's settings, from the counted starts' pristine data directory, under no tool, one ``pgbench -S -M
  prepared`` client per load; the backend's user CPU per transaction over the user-space instructions per statement
  the same run counted for the same backend.

Both are timed, so they carry this VM's noise: every figure has its 95 % interval and n. Each timed batch of writes
and each load is a raw record (``calibration.jsonl`` beside ``starts.jsonl``, appended, never rewritten); the study's
``calibration`` table is computed from them (:func:`table`), and the findings read the floor from its published file
(``record_cost_calibration.csv``) instead of timing it themselves.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import psutil

from ...base import params
from ...counting import valgrind
from ...measure.controls import IdleState, cpuidle_driver
from ...base.errors import ParameterError, ToolError
from ...servers.postgres import LocalPostgres
from ...base.settings import Settings
from ...base.stats import Estimate, mean_ci, median_ci, ratio_ci
from ...workloads.pgbench import Pgbench, parse_output, read_completion_times
from . import analysis, pg
from .spec import PROFILES

RAW = "calibration.jsonl"
WRITE_TARGETS = ("file", "pipe")
# The configurations whose records end in a file: PostgreSQL's through the collector, MariaDB's written by the server
FILE_DESTINATIONS = ("stderr", "csvlog", "jsonlog", "slow_file", "general_file")
# A run that counted none of them (the baseline alone): a short, a typical and a long record
FALLBACK_SIZES = (100, 200, 400)
FLOOR_BATCHES, FLOOR_BATCH = 200, 100
# The first transactions of a load plan its prepared statement and fill the caches; pgbench's set-up connection is
# gone within milliseconds. A backend that has lived this long is the client's, and its window starts here.
WARMUP_S = 0.3
# How often the backend's CPU is read while it runs: the window ends at the last reading, so this costs no accuracy,
# only up to that much of the load's end; a reading's own resolution is the clock tick (/proc: 10 ms)
POLL_S = 0.05
COLUMNS = ["part", "target", "quantity", "nbytes", "value", "ci_low", "ci_high", "n", "batch", "unit", "statistic",
           "env_id"]


def settings(profile: str, repeats: object, seconds: object, *, versions: tuple[str, ...]) -> tuple[int, int]:
    """(timed loads, seconds each): the values given, else the profile's; (0, 0) where it calibrates nothing. A
    profile without them (the version sweep) has none: the calibration times this machine's PostgreSQL, a sweep
    counts its containers'. ParameterError naming the parameter otherwise."""
    profile_values = PROFILES.get(profile, {})
    repeats = params.non_negative_int("calibration_repeats", profile_values.get("calibration_repeats", 0)
                                      if repeats is None else repeats)
    if repeats == 0:
        return 0, 0
    if repeats < 2:
        raise ParameterError("calibration_repeats", repeats, "0 (no calibration) or at least 2 timed loads (an "
                             "interval needs two)")
    if versions:
        raise ParameterError("calibration_repeats", repeats, "0 with `versions`: the calibration times this "
                             "machine's PostgreSQL, a version sweep counts its containers'")
    seconds = params.positive_int("calibration_seconds", profile_values.get("calibration_seconds", 1)
                                  if seconds is None else seconds)
    return repeats, seconds


# --- the write() floor ------------------------------------------------------------------------------------------


def write_times(nbytes: int, target: str, *, batches: int = FLOOR_BATCHES, batch: int = FLOOR_BATCH,
                directory: Path | str) -> np.ndarray:
    """µs per ``os.write`` of ``nbytes`` bytes in each of ``batches`` timed batches of ``batch`` writes (timing a
    batch keeps the clock's own cost out). ``file`` appends to a file opened with ``O_APPEND`` in a temporary
    directory under ``directory`` (on the disk the servers' logs go to); ``pipe`` writes into a pipe that a ``cat``
    process drains, as a backend writes to PostgreSQL's logging collector."""
    if target not in WRITE_TARGETS:
        raise ValueError(f"target {target!r}; allowed: {WRITE_TARGETS}")
    if nbytes < 1 or batches < 2 or batch < 1:
        raise ValueError("nbytes >= 1, batches >= 2 and batch >= 1 are needed")
    buf = b"x" * (int(nbytes) - 1) + b"\n"
    per_write = np.empty(batches)
    with tempfile.TemporaryDirectory(prefix="logbench-floor-", dir=directory) as tmp:
        proc = None
        if target == "file":
            fd = os.open(Path(tmp) / "floor.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        else:
            proc = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
            fd = proc.stdin.fileno()
        try:
            for _ in range(batch):  # warm the page cache / the pipe
                os.write(fd, buf)
            for i in range(batches):
                t0 = time.perf_counter_ns()
                for _ in range(batch):
                    os.write(fd, buf)
                per_write[i] = (time.perf_counter_ns() - t0) / batch / 1000.0
        finally:
            if proc is None:
                os.close(fd)
            else:
                proc.stdin.close()
                proc.wait(timeout=30)
    return per_write


def record_sizes(rep: pd.DataFrame) -> list[int]:
    """The bytes per record of every file destination the run counted (its log's bytes over its records per
    statement, the mean over repeats), rounded and each once; :data:`FALLBACK_SIZES` where it counted none."""
    d = rep[rep["configuration"].isin(FILE_DESTINATIONS) & (rep["records_per_statement"] > 0)]
    per_record = (d["log_bytes_per_statement"] / d["records_per_statement"]).groupby(d["configuration"]).mean()
    return sorted({int(round(v)) for v in per_record}) or list(FALLBACK_SIZES)


# --- the time per instruction -------------------------------------------------------------------------------------


def _is_client_backend(pid: int) -> bool:
    """A backend serving a client over the server's socket (its title names the peer ``[local]``); a background
    process the postmaster starts during the load (an autovacuum worker) is none."""
    try:
        return "[local]" in " ".join(psutil.Process(pid).cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False


def _client_backend(pids, postmaster: int, keep: set[int], load: subprocess.Popen, timeout: float = 30.0,
                    is_client: Callable[[int], bool] = _is_client_backend) -> int:
    """The pid of the backend of the load's one client: the newest client backend, once it has lived
    :data:`WARMUP_S`. pgbench closes its set-up connection before its client connects, so the newest is the
    client's even while the set-up's backend is still exiting (two first seen in one poll: the higher pid, forked
    later); a background process is no client backend. The earlier rule, one backend alone for the warm-up, let a
    contended smoke load (``-T 1``) end before it was found (CI, 2026-11-28)."""
    first_seen: dict[int, float] = {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if load.poll() is not None:
            raise ToolError(f"pgbench exited ({load.returncode}) before its client's backend was found")
        now = time.monotonic()
        for p in pids.children(postmaster) - keep - set(first_seen):
            if pids.exists(p) and is_client(p):
                first_seen[p] = now
        alive = [p for p in first_seen if pids.exists(p)]
        if alive:
            newest = max(alive, key=lambda p: (first_seen[p], p))
            if now - first_seen[newest] >= WARMUP_S:
                return newest
        time.sleep(0.01)
    raise ToolError(f"no client backend of the postmaster ({postmaster}) lived {WARMUP_S} s within {timeout:.0f} s "
                    "of the load")


def _reading(backend: psutil.Process) -> tuple[float, float, float] | None:
    """(when, user s, system s) of a running backend (/proc/<pid>/stat), None once it has exited."""
    try:
        with backend.oneshot():
            if backend.status() == psutil.STATUS_ZOMBIE:
                return None
            t = backend.cpu_times()
            return time.time(), t.user, t.system
    except psutil.NoSuchProcess:
        return None


def timed_load(bench: Pgbench, pids, postmaster: int, seconds: int, work: Path) -> dict:
    """One ``pgbench -n -S -M prepared -c 1 -T seconds`` with every transaction logged: the backend's user and
    system CPU between a reading after its warm-up and the last reading before it exits, and the transactions
    pgbench logged as completed between the two (its log's timestamps and the readings are the same clock). Its
    connection's start-up and exit are outside the window, as the counted difference of two loads leaves them out."""
    keep = pids.children(postmaster)
    logs = Path(tempfile.mkdtemp(prefix="calibration-", dir=work))
    argv = bench.command(1, seconds, "prepared", log_prefix=logs / "pgbench_log", sampling_rate=1.0)
    load = subprocess.Popen(argv, env=bench.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        pid = _client_backend(pids, postmaster, keep, load)
        backend = psutil.Process(pid)
        first = last = _reading(backend)
        if first is None:
            raise ToolError(f"the client's backend ({pid}) exited at the start of the load")
        while (now := _reading(backend)) is not None:
            last = now
            time.sleep(POLL_S)
        stdout, stderr = load.communicate(timeout=seconds + 60)
        if load.returncode != 0:
            raise ToolError(f"`{' '.join(argv)}` exited {load.returncode}:\n{stderr[-2000:]}")
        done = read_completion_times(logs / "pgbench_log")
    except BaseException:
        load.kill()
        load.wait()
        raise
    finally:
        shutil.rmtree(logs, ignore_errors=True)
    transactions = int(np.count_nonzero((done > first[0]) & (done <= last[0])))
    if transactions == 0:
        raise ToolError(f"no transaction of the load completed between the readings of its backend ({pid})")
    pg._settle(pids, postmaster, keep)
    return {"seconds": seconds, "window_s": round(last[0] - first[0], 6), "transactions": transactions,
            "user_s": round(last[1] - first[1], 6), "system_s": round(last[2] - first[2], 6),
            "tps": float(parse_output(stdout)["tps"]), "backend_pid": pid}


def cpu_loads(prepared: pg.Prepared, base: Settings, *, repeats: int, seconds: int, work: Path,
              keep: Callable[[dict], None]) -> None:
    """``repeats`` timed loads on one server with ``base`` (the ``none`` configuration's settings) from the counted
    starts' pristine data directory, at the counted starts' fixed addresses (the same hash-table collisions, so the
    same instructions); ``keep`` gets each load's record as it finishes."""
    # The idle state held as the throughput studies hold it (their default idle_state = hold): a calibration made
    # free times a different machine. Free under haltpoll, study 11's five loads ran 10,195 tps at 45.0 µs of CPU and
    # 20.1 µs of user CPU a transaction, against 25,548 / 23.8 / 17.2 on the same VM without a driver (nothing to
    # hold); notebook 00's 1-client baseline, held, 45,177 tps, free 8,687. Each load records what was in force.
    with LocalPostgres(base, log_dir=work / "calibration-log", bindir=prepared.bindir,
                       launch_prefix=tuple(valgrind.fixed_addresses()), datadir_from=prepared.datadir) as server, \
            IdleState("hold") as idle:
        postmaster = server.postmaster()
        bench = Pgbench(server.binary("pgbench"), server.conninfo)
        driver = cpuidle_driver()
        for r in range(repeats):
            keep({"part": "cpu", "repeat": r, **timed_load(bench, server.pids, postmaster, seconds, work),
                  "idle_state": idle.in_force, "cpuidle_driver": driver})


# Why user time over user-space instructions: cachegrind counts the instructions a process executes in user space, and
# its user CPU time is the time the same process spent executing them, so their ratio is what one counted instruction
# takes on this machine, its cache misses and stalls included. It cannot include the kernel's work for the process
# (system time: its system calls, its context switches), the time it waits (for the client, for the disk), nor any
# other process's work (the collector's, pgbench's): those stay with the system calls counted beside, the system time
# in this table and the throughput studies.
def per_instruction(user_us: np.ndarray, instructions: np.ndarray) -> Estimate:
    """µs of user CPU per instruction: the mean user CPU per transaction over the mean instructions per statement
    (pgbench -S: one statement a transaction), with Fieller's interval for the ratio of two independent means
    (:func:`logbench.base.stats.ratio_ci`). With a single count (one pair of starts) the count is taken as exact: it
    repeats within ~0.5 % between starts, against the timing's several %, so the interval is the CPU's alone."""
    instructions = np.asarray(instructions, dtype=float)
    if instructions.size >= 2:
        return ratio_ci(user_us, instructions)
    e, c = mean_ci(user_us), float(instructions[0])
    return Estimate(e.value / c, e.low / c, e.high / c, e.n)


def _row(part: str, target: str, quantity: str, e: Estimate, unit: str, statistic: str, env_id: str,
         nbytes: float = np.nan, batch: float = np.nan) -> dict:
    return {"part": part, "target": target, "quantity": quantity, "nbytes": nbytes, "value": e.value,
            "ci_low": e.low, "ci_high": e.high, "n": e.n, "batch": batch, "unit": unit, "statistic": statistic,
            "env_id": env_id}


def table(records: pd.DataFrame, rep: pd.DataFrame) -> pd.DataFrame:
    """The calibration from its raw records and the same run's counted repeats (``rep``): a row per (target,
    bytes) of the write() floor (median µs per write over the batches, bootstrap interval, n batches of ``batch``
    writes), then the baseline backend's CPU per transaction (user; user and system), its load's transactions per
    second, its counted instructions per statement and the µs of user CPU per instruction, each with its 95 %
    interval and n. Deterministic: the same records give the same table."""
    rows = []
    env = str(records["env_id"].iloc[0]) if "env_id" in records.columns and len(records) else ""
    floors = records[records["part"] == "write_floor"]
    for (target, nbytes), g in floors.groupby(["target", "nbytes"], sort=False):
        per_write = np.concatenate([np.asarray(v, dtype=float) for v in g["per_write_us"]])
        rows.append(_row("write_floor", target, "write", median_ci(per_write), "µs per write",
                         "median over batches, percentile bootstrap", env, nbytes=int(nbytes),
                         batch=int(g["batch"].iloc[0])))
    loads = records[records["part"] == "cpu"]
    if len(loads):
        user_us = (1e6 * loads["user_s"] / loads["transactions"]).to_numpy(dtype=float)
        cpu_us = (1e6 * (loads["user_s"] + loads["system_s"]) / loads["transactions"]).to_numpy(dtype=float)
        over = "mean over timed loads, t interval"
        if "idle_state" in loads.columns:
            # what the loads ran under, beside the figure (a run made before the control has no such field)
            over += "; idle state " + ", ".join(sorted(set(loads["idle_state"].astype(str))))
        rows.append(_row("cpu", "backend", "user_cpu_per_transaction", mean_ci(user_us), "µs per transaction", over,
                         env))
        rows.append(_row("cpu", "backend", "cpu_per_transaction", mean_ci(cpu_us), "µs per transaction (user + "
                         "system)", over, env))
        rows.append(_row("cpu", "backend", "transactions_per_second", mean_ci(loads["tps"]), "transactions per "
                         "second (pgbench -c 1)", over, env))
        counted = rep[(rep["engine"] == "postgresql") & (rep["configuration"] == "none")
                      & (rep["counter"] == "cachegrind") & (rep["process"] == "backend")
                      & (rep["metric"] == "instructions")]["per_statement"].dropna().to_numpy(dtype=float)
        if counted.size:
            rows.append(_row("cpu", "backend", "instructions_per_statement", mean_ci(counted),
                             "user-space instructions per statement (counted, cachegrind)",
                             "mean over counted repeats, t interval", env))
            rows.append(_row("cpu", "backend", "time_per_instruction", per_instruction(user_us, counted),
                             "µs of user CPU per instruction", "ratio of means, Fieller interval" if counted.size > 1
                             else "the CPU's t interval over one count", env))
    return pd.DataFrame(rows, columns=COLUMNS)


def run(prepared: pg.Prepared | None, base: Settings, starts: pd.DataFrame, raw: Path, *, repeats: int, seconds: int,
        work: Path, env_id: str, say: Callable[[str], None]) -> None:
    """Time the write() floor at the run's record sizes, then (where this machine's PostgreSQL ran: ``prepared``)
    the baseline backend's CPU per transaction; every record appended to ``raw`` as it is made."""
    with raw.open("a") as f:
        def keep(record: dict) -> None:
            f.write(json.dumps({**record, "env_id": env_id}) + "\n")
            f.flush()

        sizes = record_sizes(analysis.per_repeat(starts))
        for target in WRITE_TARGETS:
            for nbytes in sizes:
                keep({"part": "write_floor", "target": target, "nbytes": nbytes, "batch": FLOOR_BATCH,
                      "per_write_us": [round(v, 5) for v in write_times(nbytes, target, directory=work)]})
        say(f"calibration: the write() floor to a file and into a pipe at {', '.join(map(str, sizes))} bytes")
        if prepared is not None:
            say(f"calibration: {repeats} timed loads of {seconds} s on the baseline's server")
            cpu_loads(prepared, base, repeats=repeats, seconds=seconds, work=work, keep=keep)


def load(output_dir: str | Path) -> pd.DataFrame | None:
    """A run directory's raw calibration records, None where it has none (a run without calibration)."""
    path = Path(output_dir) / RAW
    return pd.read_json(path, lines=True) if path.exists() and path.stat().st_size else None
