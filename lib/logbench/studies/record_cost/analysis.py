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
from ...base.stats import mean_ci

KEYS = ["engine", "server", "configuration", "baseline", "counter", "process", "metric", "call"]
# The processes a figure is given for; the rest of a server's processes are summed as "background".
MAIN_ROLES = ("backend", "logger", "rsyslogd", "postmaster", "connection", "process")
# MariaDB's connection thread is a part of its "process" (every thread): left out of a sum over processes
PART = "connection"


def with_totals(starts: pd.DataFrame) -> pd.DataFrame:
    """The long table of starts, the background processes summed into one role and every process's system
    calls also as one total (call "all")."""
    d = starts.copy()
    if "server" not in d.columns:  # starts from before the versions: this machine's server only
        d["server"] = "local"
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
    base = rep.set_index(["engine", "server", "configuration", "counter", "process", "metric", "call", "repeat"])[
        "per_statement"]
    key = list(zip(rep["engine"], rep["server"], rep["baseline"], rep["counter"], rep["process"], rep["metric"],
                   rep["call"], rep["repeat"]))
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
    for (engine, server, conf), g in summ.groupby(["engine", "server", "configuration"], sort=False):
        row = {"engine": engine, "server": server, "configuration": conf, "baseline": g["baseline"].iloc[0],
               "records_per_statement": g["records_per_statement"].iloc[0]}
        here = (inst["engine"] == engine) & (inst["server"] == server) & (inst["configuration"] == conf)
        for role in ("backend", "connection", "logger", "rsyslogd"):
            r = inst[here & (inst["process"] == role)]
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
                r = tab[(tab["engine"] == engine) & (tab["server"] == server) & (tab["configuration"] == conf)
                        & (tab["process"] == role)]
                if not r.empty:
                    row[f"{role}_{name}_per_record"] = r.iloc[0]["per_record"]
                    row[f"{role}_extra_{name}_per_statement"] = r.iloc[0]["extra_per_statement"]
        out.append(row)
    return pd.DataFrame(out)


def per_repeat_total(rep: pd.DataFrame, engine: str, conf: str, server: str | None = None,
                     column: str = "extra_per_statement") -> pd.Series:
    """The server's extra instructions per statement (``column``), every process summed, one value per repeat;
    of one ``server`` (a version), or of the only one the starts ran."""
    d = rep[(rep["engine"] == engine) & (rep["configuration"] == conf) & (rep["metric"] == "instructions")
            & (rep["process"] != PART)]
    if server is not None:
        d = d[d["server"] == server]
    return d.groupby("repeat")[column].sum()


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
    for (server, claim, says, a, b, expects) in ((s, *o) for s in rep["server"].drop_duplicates() for o in ORDERINGS):
        ta, tb = per_repeat_total(rep, "postgresql", a, server), per_repeat_total(rep, "postgresql", b, server)
        if ta.empty or tb.empty:
            continue
        diff = (ta - tb).dropna()
        e = mean_ci(diff.to_numpy())
        spread = max(float(ta.max() - ta.min()), float(tb.max() - tb.min()))
        differ = len(diff) > 1 and bool (e.low > 0 or e.high < 0) and abs(e.value) > spread
        counted = ("A higher" if e.value > 0 else "A lower") if differ else "similar"
        agree = {"higher": counted == "A higher", "similar": counted == "similar"}[expects]
        rows.append({"server": server, "claim": claim, "post_says": says, "a": a, "b": b, "difference": e.value,
                     "difference_low": e.low, "difference_high": e.high, "n": e.n, "ratio": ta.mean() / tb.mean(),
                     "counted": counted, "counts": "agree" if agree else "disagree"})
    return pd.DataFrame(rows)


# The figures a version sweep sets side by side: per record for a configuration that logs, per statement for the
# baseline (what a statement costs with nothing logged); of the process (or thread) that served the load and of
# what writes the record or works beside it: PostgreSQL's backend and logging collector, MariaDB's connection
# thread (which writes its records itself) and the whole mariadbd (every thread).
VERSION_METRICS = (("instructions", ""), ("syscalls", "writes"), ("bytes_written", ""))
VERSION_ROLES = ("backend", "logger", "connection", "process")
# The roles a baseline is compared by: the load's process or thread alone (a collector has nothing to do, and
# mariadbd's other threads do what they do whatever is logged)
LOAD_ROLES = ("backend", "connection")


def _version_number(server: str) -> tuple[int, ...]:
    head = server.split()[0]
    return tuple(int(p) for p in head.split(".") if p.isdigit())


def version_pairs(servers: list[str]) -> list[tuple[str, str]]:
    """Each version against the one before it, and the newest against the oldest (when there are three or more)."""
    s = sorted(servers, key=_version_number)
    pairs = list(zip(s, s[1:]))
    if len(s) > 2:
        pairs.append((s[0], s[-1]))
    return pairs


def version_differences(rep: pd.DataFrame, builds: dict[str, str]) -> pd.DataFrame:
    """Between servers (versions) of each engine: per configuration, counter, role and metric, B - A of the figure
    (per record; per statement for a baseline) paired by repeat (the versions' starts of a repeat were
    interleaved), its mean and 95 % interval over the repeats, B / A, each version's spread over its repeats, and
    what is compared: each server's build (``builds``: server -> "Debian's 13.23-0+deb11u4 (bullseye)", ...), so
    that a difference is read as one of those builds (compiler, libc), not of the source alone. Empty where no
    engine ran two servers."""
    rows = []
    for engine, d in rep.groupby("engine", sort=False):
        rows += _engine_differences(engine, d, builds)
    return pd.DataFrame(rows)


def _engine_differences(engine: str, d: pd.DataFrame, builds: dict[str, str]) -> list[dict]:
    servers = list(d["server"].drop_duplicates())
    if len(servers) < 2:
        return []
    pick = pd.Series(False, index=d.index)
    for metric, call in VERSION_METRICS:
        pick |= (d["metric"] == metric) & ((d["call"] == call) if call else True)
    d = version_rows(d[pick])
    rows = []
    for (conf, baseline, counter, role, metric, call), g in d.groupby(
            ["configuration", "baseline", "counter", "process", "metric", "call"], sort=False):
        figure = "per_statement" if conf == baseline else "per_record"
        wide = g.pivot_table(index="repeat", columns="server", values=figure, aggfunc="first")
        for a, b in version_pairs(servers):
            if a not in wide.columns or b not in wide.columns:
                continue
            diff = (wide[b] - wide[a]).dropna()
            if diff.empty:
                continue
            e = mean_ci(diff.to_numpy(dtype=float))
            rows.append({"engine": engine, "configuration": conf, "counter": counter, "process": role,
                         "metric": metric, "call": call,
                         "figure": figure, "a": a, "b": b, "a_value": float(wide[a].mean()),
                         "b_value": float(wide[b].mean()), "difference": e.value, "difference_low": e.low,
                         "difference_high": e.high, "n": e.n,
                         "ratio": float(wide[b].mean() / wide[a].mean()) if wide[a].mean() else float("nan"),
                         "a_spread": _spread(wide[a]), "b_spread": _spread(wide[b]),
                         "builds": f"{builds.get(b, b)} − {builds.get(a, a)}: these builds (each release's compiler "
                                   "and libc), not the source alone"})
    return rows


def version_rows(d: pd.DataFrame) -> pd.DataFrame:
    """The rows a version sweep compares, in a reading order (configuration as given, then metric, role): the
    backend and the collector of a configuration that logs (MariaDB: the connection thread and the whole server);
    the backend (the connection thread) alone of a baseline."""
    d = d[d["process"].isin(VERSION_ROLES) & ((d["configuration"] != d["baseline"]) | d["process"].isin(LOAD_ROLES))]
    metric = {m: i for i, (m, _) in enumerate(VERSION_METRICS)}
    conf = {c: i for i, c in enumerate(d["configuration"].drop_duplicates())}
    key = d["configuration"].map(conf) * 100 + d["metric"].map(metric).fillna(9) * 10 + d["process"].map(
        {r: i for i, r in enumerate(VERSION_ROLES)})
    return d.iloc[np.argsort(key.to_numpy(), kind="stable")]
