"""The physical floor beside the regression: one ``write()`` of a log line's size to an ``O_APPEND`` file (what
a logging collector or a server does to its log file), or into a pipe drained by another process (the backend
→ logging collector hop of PostgreSQL's stderr/csvlog/jsonlog destinations)."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as sstats

from .. import paths
from ..stats import CONFIDENCE

@dataclass(frozen=True)
class WriteFloor:
    target: str  # "file" (O_APPEND) or "pipe" (drained by another process)
    nbytes: int
    batches: int
    batch: int
    median_us: float
    ci_low: float
    ci_high: float

    def as_dict(self) -> dict:
        return dict(self.__dict__)


WRITE_TARGETS = ("file", "pipe")


def write_floor(nbytes: int, *, target: str = "file", batches: int = 200, batch: int = 100,
                directory: Path | str | None = None, confidence: float = CONFIDENCE, seed: int = 0) -> WriteFloor:
    """Time ``os.write`` of ``nbytes`` bytes: ``batches`` timed batches of ``batch`` writes each.

    Each batch gives the mean time of one write (timing a batch keeps the clock's
    own overhead out); the floor is the median over batches with a percentile
    bootstrap CI (scipy). ``file`` appends to a file opened with ``O_APPEND`` in a
    temporary directory under ``directory`` (default: the suite's on-disk scratch
    root, where the servers' logs go); ``pipe`` writes into a pipe that a ``cat``
    process drains, as a backend writes to PostgreSQL's logging collector.
    """
    if target not in WRITE_TARGETS:
        raise ValueError(f"target {target!r}; allowed: {WRITE_TARGETS}")
    if nbytes < 1 or batches < 2 or batch < 1:
        raise ValueError("nbytes >= 1, batches >= 2 and batch >= 1 are needed")
    buf = b"x" * (int(nbytes) - 1) + b"\n"
    per_write = np.empty(batches)
    root = Path(directory) if directory is not None else paths.scratch_root()
    with tempfile.TemporaryDirectory(prefix="logbench-floor-", dir=root) as tmp:
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
    boot = sstats.bootstrap((per_write,), np.median, confidence_level=confidence, method="percentile",
                            n_resamples=2000, rng=np.random.default_rng(seed))
    return WriteFloor(target, int(nbytes), batches, batch, float(np.median(per_write)),
                      float(boot.confidence_interval.low), float(boot.confidence_interval.high))


def typical_record_bytes(data: pd.DataFrame, default: int = 200) -> int:
    """Median bytes per received record over the logging runs (the size the floor is measured at)."""
    b = data["bytes_per_record"].dropna()
    return int(round(float(b.median()))) if len(b) else default
