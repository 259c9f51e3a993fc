"""The carryover benchmarks' shared table (benchmarks/mariadb_carryover.py, benchmarks/pg_carryover.py): per bin
of seconds of a segment, the arm segments' mean log(tps) against the control segments', with a Welch t interval
over the segments."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import stats

BIN_S = 5


def print_bins(arm: np.ndarray, ctl: np.ndarray, before: int, arm_s: int, after: int, *, extra_header: str = "",
               extra: Callable[[int, int], str] | None = None) -> None:
    """``arm`` / ``ctl``: segments x seconds of log(tps) against each segment's first ``before`` s; ``extra(lo,
    hi)`` adds a column per bin (under ``extra_header``)."""
    seg = before + arm_s + after
    print(f"{'seconds':>14} {'arm':>8} {'control':>8} {'difference':>11} {'95 % CI':>18}  {extra_header}")
    edges = [(0, before, "before"), (before, before + arm_s, "arm on")]
    edges += [(before + arm_s + k, min(seg, before + arm_s + k + BIN_S), f"off +{k}-{k + BIN_S}")
              for k in range(0, after, BIN_S)]
    for lo, hi, label in edges:
        x, y = arm[:, lo:hi].mean(axis=1), ctl[:, lo:hi].mean(axis=1)
        d = x.mean() - y.mean()
        t = stats.ttest_ind(x, y, equal_var=False)
        ci = t.confidence_interval() if len(x) > 1 and len(y) > 1 else (math.nan, math.nan)
        print(f"{label:>14} {x.mean():8.3f} {y.mean():8.3f} {d:11.3f}   [{ci[0]:7.3f}, {ci[1]:7.3f}]  "
              f"n = {len(x)}, {len(y)}  {extra(lo, hi) if extra else ''}")
