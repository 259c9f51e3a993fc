"""What study 11's notebook shows: the configurations, the table a DBA reads, repeatability against the goal,
the system calls by call, the counted evidence on the posts' orderings, and the findings sentence by sentence,
each from the processed tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...base.formatting import ci_text, number
from . import analysis, mariadb
from .spec import PG_CONFIGURATIONS

SPREAD_GOAL = 0.005  # the issue's: instructions per statement repeat within 0.5 % between starts
ROLES = {"backend": "backend", "connection": "connection thread", "logger": "logging collector",
         "rsyslogd": "rsyslogd"}
# and, in the versions' tables, MariaDB's whole server (the cost table leaves it out: it holds the connection's)
VERSION_ROLE_NAMES = {**ROLES, "process": "mariadbd (every thread)"}


MARIADB_WHAT = {"none": "nothing logged (the baseline)", "slow_file": "slow log at long_query_time = 0 to a file",
                "slow_table": "the same into mysql.slow_log (log_output = TABLE)",
                "general_file": "the general log to a file", "slow_file_verbose": "slow log with "
                "log_slow_verbosity = 'innodb,query_plan' (two more lines per entry)"}


def configuration_table(study) -> pd.DataFrame:
    rows = [{"engine": "postgresql", "configuration": c, "protocol": PG_CONFIGURATIONS[c].protocol,
             "baseline": PG_CONFIGURATIONS[c].baseline, "what": PG_CONFIGURATIONS[c].what,
             "settings": ", ".join(f"{k}={v}" for k, v in PG_CONFIGURATIONS[c].settings.items())}
            for c in study.configurations]
    if study.mariadb_configurations:
        rows += [{"engine": "mariadb", "configuration": c, "protocol": "text", "baseline": "none",
                  "what": MARIADB_WHAT.get(c, ""),
                  "settings": ", ".join(f"{k}={v}" for k, v in mariadb.CONFIGURATIONS[c].items())}
                 for c in study.mariadb_configurations]
    return pd.DataFrame(rows)


def _servers(d: pd.DataFrame) -> pd.DataFrame:
    """``d`` with its ``server`` column (a table from before the versions: this machine's server)."""
    return d if "server" in d.columns else d.assign(server="local")


def _server_column(out: pd.DataFrame, d: pd.DataFrame) -> pd.DataFrame:
    """A printed table keeps its ``server`` column only where more than one server ran (a version sweep)."""
    return out.drop(columns="server") if "server" in out.columns and d["server"].nunique() < 2 else out


def _fig(summ: pd.DataFrame, engine: str, conf: str, role: str, metric: str, call: str = "",
         server: str | None = None) -> pd.Series | None:
    r = summ[(summ["engine"] == engine) & (summ["configuration"] == conf) & (summ["process"] == role)
             & (summ["metric"] == metric) & (summ["call"].fillna("") == call)]
    if server is not None:
        r = r[r["server"] == server]
    return None if r.empty else r.iloc[0]


def _ci(r: pd.Series | None, col: str) -> str:
    if r is None or pd.isna(r[col]):
        return ""
    return ci_text(r[col], r[f"{col}_low"], r[f"{col}_high"], n=int(r["n"]))


def cost_table(figures: pd.DataFrame) -> pd.DataFrame:
    """Per configuration: records per statement, and for each process that works for a record its user-space
    instructions per record [95 % CI, n], then the server's extra instructions per statement over the baseline
    (every process summed), its write calls and bytes per record."""
    figures = _servers(figures)
    rows = []
    for (engine, server, conf), g in figures.groupby(["engine", "server", "configuration"], sort=False):
        row = {"engine": engine, "server": server, "configuration": conf,
               "records / statement": number(g["records_per_statement"].iloc[0])}
        total = g[(g["metric"] == "instructions") & (g["process"] != analysis.PART)]["extra_per_statement"].sum()
        for role, label in ROLES.items():
            r = _fig(figures, engine, conf, role, "instructions", server=server)
            if r is not None:
                row[f"{label}: instructions / record"] = _ci(r, "per_record")
        row["extra instructions / statement (all processes)"] = number(total)
        for role in ("backend", "connection"):
            w = _fig(figures, engine, conf, role, "syscalls", "writes", server)
            b = _fig(figures, engine, conf, role, "bytes_written", server=server)
            if w is not None:
                row[f"{ROLES[role]}: write calls / record"] = number(w["per_record"])
            if b is not None:
                row[f"{ROLES[role]}: bytes / record"] = number(b["per_record"])
        rows.append(row)
    return _server_column(pd.DataFrame(rows).fillna(""), figures)


# The calibration's rows in words (calibration.table's quantity); µs per instruction is printed in ns
CALIBRATION_WHAT = {"write": "one write() of {nbytes} bytes to a {target}",
                    "user_cpu_per_transaction": "the baseline's backend: user CPU per transaction",
                    "cpu_per_transaction": "the baseline's backend: user + system CPU per transaction",
                    "transactions_per_second": "its load: transactions per second (one client)",
                    "instructions_per_statement": "its user-space instructions per statement (counted)",
                    "time_per_instruction": "user CPU per instruction"}


def calibration_table(calibration: pd.DataFrame) -> pd.DataFrame:
    """This machine's calibration as the notebook prints it: each timed figure, the estimate [95 % CI] (n), its
    unit and how it was summarised."""
    ns = calibration["quantity"] == "time_per_instruction"
    return pd.DataFrame({
        "what": [CALIBRATION_WHAT[q].format(nbytes=int(b) if pd.notna(b) else "", target=t)
                 for q, b, t in zip(calibration["quantity"], calibration["nbytes"], calibration["target"])],
        "estimate [95 % CI] (n)": [ci_text(v, lo, hi, factor=1000.0 if per else 1.0, n=int(n)) for v, lo, hi, n, per
                                   in zip(calibration["value"], calibration["ci_low"], calibration["ci_high"],
                                          calibration["n"], ns)],
        "unit": calibration["unit"].where(~ns, "ns of user CPU per instruction"),
        "summarised": [s + (f" ({int(b)} writes each)" if pd.notna(b) else "")
                       for s, b in zip(calibration["statistic"], calibration["batch"])]})


def repeatability(figures: pd.DataFrame) -> pd.DataFrame:
    """The spread (max - min) / mean of the instructions per statement over the starts, per configuration and
    process, against the 0.5 % goal; the daemons' are as measured (their reads batch records by timing)."""
    figures = _servers(figures)
    d = figures[(figures["metric"] == "instructions") & figures["process"].isin(list(ROLES))]
    d = d[d["per_statement"].abs() > 1]
    out = _server_column(d[["engine", "server", "configuration", "process", "n", "per_statement",
                            "per_statement_spread"]].copy(), figures)
    load = out["process"].isin(["backend", "connection"])
    out["within 0.5 %"] = np.where(~load, "(daemon)", np.where(out["n"] < 2, "(n = 1)", np.where(
        out["per_statement_spread"] <= SPREAD_GOAL, "yes", "no")))
    out["per_statement"] = out["per_statement"].map(number)
    out["per_statement_spread"] = (100 * out["per_statement_spread"]).map(lambda v: f"{number(v)} %")
    return out.rename(columns={"per_statement": "instructions / statement", "per_statement_spread": "spread"})


def syscall_table(syscalls: pd.DataFrame, roles=("backend", "logger", "rsyslogd", "connection")) -> pd.DataFrame:
    """System calls per record by call, where a configuration makes any (extra over its baseline, > 0.01)."""
    syscalls = _servers(syscalls)
    d = syscalls[syscalls["process"].isin(roles) & (syscalls["extra_per_statement"].abs() > 0.01)]
    d = d[d["records_per_statement"] > 0]
    index = ["engine", "server", "configuration", "process"] if syscalls["server"].nunique() > 1 else [
        "engine", "configuration", "process"]
    out = d.pivot_table(index=index, columns="call", values="per_record", aggfunc="first")
    return out.round(3).fillna(0)


def findings(figures: pd.DataFrame, rep: pd.DataFrame) -> str:
    """The findings, each from the tables: the baseline's work per statement, what logging every statement adds,
    the destinations' cost per record side by side, and how well the counts repeat."""
    figures, rep = _servers(figures), _servers(rep)
    out = []
    inst = figures[figures["metric"] == "instructions"]
    for (engine, role), server in ((e, s) for e in (("postgresql", "backend"), ("mariadb", "connection"))
                                   for s in figures["server"].drop_duplicates()):
        base = _fig(figures, engine, "none", role, "instructions", server=server)
        if base is None:
            continue
        who = f"{engine} {server}" if figures["server"].nunique() > 1 else engine
        out.append(f"- **{who}**: with nothing logged the {ROLES[role]} executes {_ci(base, 'per_statement')} "
                   "user-space instructions per statement.")
        logged = inst[(inst["engine"] == engine) & (inst["server"] == server) & (inst["process"] == role)
                      & (inst["records_per_statement"] > 0)]
        for _, r in logged.iterrows():
            total = analysis.per_repeat_total(rep, engine, r["configuration"], server)
            out.append(f"  - `{r['configuration']}`: {number(r['records_per_statement'])} records per statement; "
                       f"the {ROLES[role]} {_ci(r, 'per_record')} instructions per record; the whole server "
                       f"(every process or thread) {number(total.mean())} more per statement "
                       f"({number(total.mean() / base['per_statement'] * 100)} % of the baseline's {ROLES[role]}).")
    spread = figures[(figures["metric"] == "instructions") & figures["process"].isin(["backend", "connection"])]
    spread = spread["per_statement_spread"].dropna()
    if len(spread):
        out.append(f"- Repeatability: the load's process repeats to {number(100 * spread.median())} % "
                   f"(median over configurations; largest {number(100 * spread.max())} %) between independent "
                   f"starts; the goal is 0.5 %.")
    return "\n".join(out)


def orderings_table(orderings: pd.DataFrame, verdicts: pd.DataFrame | None = None) -> pd.DataFrame:
    """The posts' orderings as the notebook and the paper print them; with ``verdicts`` (the findings' claims
    table, ``findings_claims.csv``), each claim's throughput verdict and its decisive ratio beside the counts'."""
    if orderings.empty:
        return orderings
    orderings = _servers(orderings)
    table = pd.DataFrame({
        "server": orderings["server"], "claim": orderings["claim"], "the post says": orderings["post_says"],
        "A": orderings["a"], "B": orderings["b"],
        "A − B, instructions / statement": [ci_text(v, lo, hi, n=int(n)) for v, lo, hi, n in zip(
            orderings["difference"], orderings["difference_low"], orderings["difference_high"], orderings["n"])],
        "A / B": orderings["ratio"].map(number), "counted": orderings["counted"], "counts": orderings["counts"]})
    if verdicts is not None:
        by_claim = verdicts.drop_duplicates("claim_id").set_index("claim_id")
        table["throughput verdict"] = [
            f"{by_claim.at[c, 'verdict']}: {by_claim.at[c, 'measured_at']} "
            f"{ci_text(by_claim.at[c, 'value'], by_claim.at[c, 'ci_low'], by_claim.at[c, 'ci_high'])}"
            if c in by_claim.index else "not judged" for c in orderings["claim"]]
    return _server_column(table, orderings)


_METRIC = {("instructions", ""): "instructions", ("syscalls", "writes"): "write calls", ("bytes_written", ""): "bytes"}


def per_version_table(figures: pd.DataFrame) -> pd.DataFrame:
    """A version sweep's figures side by side, one column per server: per engine, configuration, role and metric,
    per record [95 % CI, n] (per statement for the baseline: what a statement costs with nothing logged); the other
    engine's servers are '—'."""
    figures = _servers(figures)
    rows = []
    for engine, d in figures.groupby("engine", sort=False):
        servers = sorted(d["server"].unique(), key=analysis._version_number)
        d = analysis.version_rows(d[[(m, c) in _METRIC for m, c in zip(d["metric"], d["call"].fillna(""))]])
        for (conf, baseline, counter, role, metric, call), g in d.groupby(
                ["configuration", "baseline", "counter", "process", "metric", "call"], sort=False):
            figure = "per_statement" if conf == baseline else "per_record"
            if g[figure].isna().all():
                continue
            by = g.set_index("server")
            rows.append({"engine": engine, "configuration": conf,
                         "process": VERSION_ROLE_NAMES.get(role, role),
                         "figure": f"{_METRIC[(metric, call)]} / {'statement' if conf == baseline else 'record'}",
                         **{s: _ci(by.loc[s], figure) if s in by.index else "—" for s in servers}})
    return pd.DataFrame(rows).fillna("—")


def between_versions_table(between: pd.DataFrame) -> pd.DataFrame:
    """Each version against the one before it (and the newest against the oldest), of each engine: B − A [95 % CI
    over the paired repeats, n], B / A, each one's spread over its repeats, and what is compared: Debian's build of
    each on its own release, so a difference of those builds, not of the source alone. A table from before
    MariaDB's versions has no engine column: PostgreSQL's alone."""
    if between.empty:
        return between
    engines = between["engine"] if "engine" in between.columns else pd.Series("postgresql", index=between.index)
    return pd.DataFrame({
        "engine": engines,
        "configuration": between["configuration"],
        "process": between["process"].map(lambda r: VERSION_ROLE_NAMES.get(r, r)),
        "figure": [f"{_METRIC[(m, c if isinstance(c, str) else '')]} / {f.removeprefix('per_')}"
                   for m, c, f in zip(between["metric"], between["call"], between["figure"])],
        "A": between["a"], "B": between["b"],
        "B − A": [ci_text(v, lo, hi, n=int(n)) for v, lo, hi, n in zip(
            between["difference"], between["difference_low"], between["difference_high"], between["n"])],
        "B / A": between["ratio"].map(number),
        "spread A, B": [f"{number(100 * a)} %, {number(100 * b)} %" for a, b in zip(between["a_spread"],
                                                                                between["b_spread"])],
        "builds compared": between["builds"]})
