"""From counted starts to figures: per statement, per record, with their spread over independent starts.

A start ran a load of N transactions; each (configuration, counter, repeat) has a small and a large start, and
``(count_large - count_small) / (N_large - N_small)`` is that repeat's count per transaction: whatever a start
costs once (the server's start-up, the load tool's connection, the shutdown) cancels. pgbench -S and sysbench's
point select send one statement per transaction, so per transaction is per statement.

A configuration's cost per record is its count per statement less its baseline's (the same protocol, nothing
logged, the same repeat), over the records per statement that its log received (counted in the log, per repeat,
by the same difference). Each figure is given per repeat, then as a mean with its Student-t interval over the
repeats, and the spread (max - min) / mean that the issue's 0.5 % goal reads.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...counting.strace import WRITES
from ...stats import mean_ci

KEYS = ["engine", "configuration", "baseline", "counter", "process", "metric", "call"]
# The processes a figure is given for; the rest of a server's processes are summed as "background".
MAIN_ROLES = ("backend", "logger", "rsyslogd", "postmaster", "connection", "process")
# MariaDB's connection thread is a part of its "process" (every thread): left out of a sum over processes
PART = "connection"


def with_totals(starts: pd.DataFrame) -> pd.DataFrame:
    """The long table of starts, the background processes summed into one role and every process's system
    calls also as one total (call "all")."""
    d = starts.copy()
    d["process"] = d["process"].where(d["process"].isin(MAIN_ROLES), "background")
    group = [c for c in d.columns if c != "value"]
    d = d.groupby(group, dropna=False, as_index=False)["value"].sum()
    calls = d[d["metric"] == "syscalls"]
    by = [c for c in group if c != "call"]
    total = calls.groupby(by, dropna=False, as_index=False)["value"].sum().assign(call="all")
    # the calls that move bytes out (write, sendto, ...): deterministic where the others (epoll_wait, futex,
    # a read that finds nothing yet) follow the timing of the processes around them
    writes = calls[calls["call"].isin(WRITES)].groupby(by, dropna=False, as_index=False)["value"].sum()
    return pd.concat([d, total[d.columns], writes.assign(call="writes")[d.columns]], ignore_index=True)


def per_repeat(starts: pd.DataFrame) -> pd.DataFrame:
    """One row per (configuration, counter, repeat, process, metric, call): the count per statement and the
    log's records and bytes per statement, each the difference of the large and the small start."""
    d = with_totals(starts)
    small, large = d["transactions"].min(), d["transactions"].max()
    if small == large:
        raise ValueError("every start ran the same number of transactions: no difference to take")
    idx = [*KEYS, "repeat"]
    lo = d[d["transactions"] == small].set_index(idx)
    hi = d[d["transactions"] == large].set_index(idx)
    both = lo.add_suffix("_small").join(hi.add_suffix("_large"), how="inner")
    dn = large - small
    out = pd.DataFrame({
        "per_statement": (both["value_large"] - both["value_small"]) / dn,
        "records_per_statement": (both["records_large"] - both["records_small"]) / dn,
        "log_bytes_per_statement": (both["log_bytes_large"] - both["log_bytes_small"]) / dn,
    }).reset_index()
    return out


def per_record(rep: pd.DataFrame) -> pd.DataFrame:
    """Each repeat's extra count per statement over its baseline's (same counter, process, metric, call and
    repeat), and that over the records per statement (NaN where the log received none)."""
    base = rep.set_index(["engine", "configuration", "counter", "process", "metric", "call", "repeat"])[
        "per_statement"]
    key = list(zip(rep["engine"], rep["baseline"], rep["counter"], rep["process"], rep["metric"], rep["call"],
                   rep["repeat"]))
    # a process the baseline does not have (rsyslogd) costs nothing there
    rep = rep.assign(baseline_per_statement=[base.get(k, 0.0) for k in key])
    rep["extra_per_statement"] = rep["per_statement"] - rep["baseline_per_statement"]
    records = rep["records_per_statement"].where(rep["records_per_statement"] > 0)
    rep["per_record"] = rep["extra_per_statement"] / records
    return rep


def _estimate(values: pd.Series, prefix: str) -> dict[str, float]:
    e = mean_ci(values.to_numpy(dtype=float))
    return {prefix: e.value, f"{prefix}_low": e.low, f"{prefix}_high": e.high}


def _spread(values: pd.Series) -> float:
    v = values.dropna().to_numpy(dtype=float)
    if v.size < 2 or np.mean(v) == 0:
        return float("nan")
    return float((v.max() - v.min()) / abs(v.mean()))


def summary(rep: pd.DataFrame) -> pd.DataFrame:
    """One row per (configuration, counter, process, metric, call): per statement, extra per statement over the
    baseline, per record, each mean [95 % CI] over the repeats, their spreads and n."""
    rows = []
    for key, g in rep.groupby(KEYS, sort=False, dropna=False):
        rows.append({**dict(zip(KEYS, key)), "n": int(g["per_statement"].notna().sum()),
                     **_estimate(g["per_statement"], "per_statement"),
                     "per_statement_spread": _spread(g["per_statement"]),
                     **_estimate(g["extra_per_statement"], "extra_per_statement"),
                     **_estimate(g["per_record"], "per_record"),
                     "per_record_spread": _spread(g["per_record"]),
                     "records_per_statement": float(g["records_per_statement"].mean()),
                     "log_bytes_per_statement": float(g["log_bytes_per_statement"].mean())})
    return pd.DataFrame(rows)


def headline(summ: pd.DataFrame) -> pd.DataFrame:
    """The study's table: per configuration, the server's user-space instructions per statement and per record
    (backend or connection thread, collector, syslog daemon), the write-like system calls and bytes per record,
    and the records per statement its log received."""
    inst = summ[(summ["metric"] == "instructions")]
    calls = summ[(summ["metric"] == "syscalls") & (summ["call"] == "writes")]
    written = summ[summ["metric"] == "bytes_written"]
    out = []
    for (engine, conf), g in summ.groupby(["engine", "configuration"], sort=False):
        row = {"engine": engine, "configuration": conf, "baseline": g["baseline"].iloc[0],
               "records_per_statement": g["records_per_statement"].iloc[0]}
        for role in ("backend", "connection", "logger", "rsyslogd"):
            r = inst[(inst["engine"] == engine) & (inst["configuration"] == conf) & (inst["process"] == role)]
            if r.empty:
                continue
            r = r.iloc[0]
            row[f"{role}_instructions_per_statement"] = r["per_statement"]
            row[f"{role}_instructions_spread"] = r["per_statement_spread"]
            row[f"{role}_instructions_per_record"] = r["per_record"]
            row[f"{role}_instructions_per_record_low"] = r["per_record_low"]
            row[f"{role}_instructions_per_record_high"] = r["per_record_high"]
            row[f"{role}_extra_instructions_per_statement"] = r["extra_per_statement"]
        for name, tab in (("write_calls", calls), ("bytes_written", written)):
            for role in ("backend", "connection", "logger", "rsyslogd"):
                r = tab[(tab["engine"] == engine) & (tab["configuration"] == conf) & (tab["process"] == role)]
                if not r.empty:
                    row[f"{role}_{name}_per_record"] = r.iloc[0]["per_record"]
                    row[f"{role}_extra_{name}_per_statement"] = r.iloc[0]["extra_per_statement"]
        out.append(row)
    return pd.DataFrame(out)


def per_repeat_total(rep: pd.DataFrame, engine: str, conf: str) -> pd.Series:
    """The server's extra instructions per statement, every process summed, one value per repeat."""
    d = rep[(rep["engine"] == engine) & (rep["configuration"] == conf) & (rep["metric"] == "instructions")
            & (rep["process"] != PART)]
    return d.groupby("repeat")["extra_per_statement"].sum()


# The posts' orderings the counts speak to: (claim id in data/raw/claims.csv, what the post says, A, B, what a
# claim expects of A - B: "higher", "similar")
ORDERINGS = (
    ("000-cached-similar", "destinations cost about the same (csvlog against stderr)", "csvlog", "stderr", "similar"),
    ("000-cached-similar", "destinations cost about the same (syslog against stderr)", "syslog", "stderr", "similar"),
    ("004-syslog-vs-file", "syslog costs more than a log file", "syslog", "stderr", "higher"),
    ("003-28-small", "log_statement and log_duration alone cost about the same", "log_statement_all", "log_duration",
     "similar"),
)


def orderings(rep: pd.DataFrame) -> pd.DataFrame:
    """The counts as a second line of evidence on the posts' orderings: the difference A - B of the server's extra
    instructions per statement (every process), its 95 % interval over the paired repeats, and the rule: A and B
    differ when the interval excludes 0 and the difference is larger than either's spread over the starts;
    'similar' otherwise. What counts cannot see (kernel time, waits on the pipe, contention) the throughput
    verdicts keep."""
    rows = []
    for claim, says, a, b, expects in ORDERINGS:
        ta, tb = per_repeat_total(rep, "postgresql", a), per_repeat_total(rep, "postgresql", b)
        if ta.empty or tb.empty:
            continue
        diff = (ta - tb).dropna()
        e = mean_ci(diff.to_numpy())
        spread = max(float(ta.max() - ta.min()), float(tb.max() - tb.min()))
        differ = len(diff) > 1 and bool (e.low > 0 or e.high < 0) and abs(e.value) > spread
        counted = ("A higher" if e.value > 0 else "A lower") if differ else "similar"
        agree = {"higher": counted == "A higher", "similar": counted == "similar"}[expects]
        rows.append({"claim": claim, "post_says": says, "a": a, "b": b, "difference": e.value,
                     "difference_low": e.low, "difference_high": e.high, "n": e.n, "ratio": ta.mean() / tb.mean(),
                     "counted": counted, "counts": "agree" if agree else "disagree"})
    return pd.DataFrame(rows)
