"""The clock: what one timer read costs here (``pg_test_timing``, repeated), and what timing settings read.

Post 003 quoted one ``pg_test_timing -d 10`` (42.38 ns per loop) and reasoned that a setting that only reads
the clock a few times per statement cannot cost much. Here the test is repeated for a confidence interval
with its histogram, and the clock reads a setting adds per transaction are counted where the server counts
them (``track_io_timing`` times every block read: two reads per read system call, ``pg_stat_database.blks_read``),
so its measured cost can be set against reads × cost per read.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pandas as pd

from ..base import stats

POST_003_LOOP_NS = 42.38  # the post's pg_test_timing, "Per loop time including overhead"
# Clock reads per timed block read: INSTR_TIME_SET_CURRENT before and after the read (bufmgr.c).
READS_PER_TIMED_BLOCK = 2

_LOOP = re.compile(r"Per loop time including overhead:\s*([\d.]+) ns")
# "< us   % of total      count" rows (PostgreSQL ≤ 17); later versions print "<= ns" rows: both are read.
_ROW = re.compile(r"^\s*(\d+)\s+([\d.]+)\s+(\d+)\s*$", re.MULTILINE)


def parse_test_timing(text: str) -> tuple[float, pd.DataFrame]:
    """(ns per loop, the histogram: ``below_us``, ``percent``, ``count``) of one pg_test_timing output."""
    m = _LOOP.search(text)
    loop = float(m.group(1)) if m else float("nan")
    rows = [(int(a), float(b), int(c)) for a, b, c in _ROW.findall(text.split("Histogram", 1)[-1])]
    return loop, pd.DataFrame(rows, columns=["below_us", "percent", "count"])


def test_timing(binary: Path, *, repeats: int = 5, seconds: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``repeats`` runs of ``pg_test_timing -d seconds``: (one row per run: ``repeat``, ``loop_ns``;
    the histograms, one row per run and bucket)."""
    loops, hists = [], []
    for i in range(repeats):
        out = subprocess.run([str(binary), "-d", str(seconds)], capture_output=True, text=True,
                             timeout=seconds + 60).stdout
        loop, hist = parse_test_timing(out)
        loops.append({"repeat": i, "loop_ns": loop})
        hists.append(hist.assign(repeat=i))
    return pd.DataFrame(loops), (pd.concat(hists, ignore_index=True) if hists else pd.DataFrame())


def loop_summary(loops: pd.DataFrame) -> dict[str, float]:
    """Mean ns per loop with its 95 % CI, beside the post's."""
    e = stats.mean_ci(loops["loop_ns"].astype(float))
    return {"loop_ns": e.value, "loop_ns_ci_low": e.low, "loop_ns_ci_high": e.high, "n": e.n,
            "post_loop_ns": POST_003_LOOP_NS}


def histogram_summary(hists: pd.DataFrame) -> pd.DataFrame:
    """Per bucket: the mean share of loops over the repeats with its CI."""
    rows = []
    for b, g in hists.groupby("below_us", sort=True):
        e = stats.mean_ci(g["percent"].astype(float))
        rows.append({"below_us": int(b), "percent": e.value, "percent_ci_low": e.low, "percent_ci_high": e.high,
                     "n": e.n})
    return pd.DataFrame(rows)


def predicted_cost_us(blocks_read_per_tx: float, loop_ns: float) -> float:
    """µs per transaction that track_io_timing's clock reads cost at ``loop_ns`` each."""
    return blocks_read_per_tx * READS_PER_TIMED_BLOCK * loop_ns / 1000.0
