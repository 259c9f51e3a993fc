"""The paper's section on what one log record costs, counted (study 11, issue 38): the table of cost per record
by configuration, the posts' orderings as the counts see them, and the numbers its text states, each read from
``data/processed/record_cost_*.csv``."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .tables import add_table

FIGURES = "record_cost_figures.csv"
ORDERINGS = "record_cost_orderings.csv"
BETWEEN = "record_cost_versions_between_versions.csv"
CLAIMS = "findings_claims.csv"  # the throughput verdicts the orderings stand beside  # the version sweep's (profile versions) differences


def _cell(conf: str, process: str, column: str, *, engine: str = "postgresql", sig: int = 3) -> dict:
    return {"kind": "cell", "source": FIGURES, "column": column, "sig": sig,
            "where": {"engine": engine, "configuration": conf, "process": process, "metric": "instructions"}}


def _estimate(nums, key: str, conf: str, process: str, column: str) -> None:
    for suffix, col in (("estimate", column), ("ci_low", f"{column}_low"), ("ci_high", f"{column}_high")):
        nums.add(f"{key}.{suffix}", _cell(conf, process, col), optional=True)


def _one_label(table: pd.DataFrame) -> pd.DataFrame:
    """The notebook's table with engine (and server, one per engine here) folded into the configuration's label,
    so that the paper's narrow columns hold the numbers."""
    label = table["engine"].map({"postgresql": "PG", "mariadb": "MariaDB"}).fillna(table["engine"])
    out = table.drop(columns=[c for c in ("engine", "server", "configuration") if c in table.columns])
    out.insert(0, "configuration", label + " " + table["configuration"])
    return out


def version_servers(between: pd.DataFrame) -> str:
    """The versions a sweep compared, per engine, with each one's Debian release, as the paper's sentence names
    them: 'PostgreSQL 13 (bullseye), 15 (bookworm) and 17 (trixie) and MariaDB 10.5 (bullseye), ...'."""
    from ...studies.record_cost.analysis import _version_number

    engines = between["engine"] if "engine" in between.columns else pd.Series("postgresql", index=between.index)
    said = []
    for engine in engines.drop_duplicates():
        mine = between[engines == engine]
        servers = sorted(set(mine["a"]) | set(mine["b"]), key=_version_number)
        # "13 (bullseye container)" -> "13 (bullseye)"
        named = [s.replace(" container)", ")") for s in servers]
        said.append(f"{_ENGINES.get(engine, engine)} " + (", ".join(named[:-1]) + " and " + named[-1]
                                                          if len(named) > 1 else named[0]))
    return " and ".join(said)


_ENGINES = {"postgresql": "PostgreSQL", "mariadb": "MariaDB"}


def record_cost_section(doc: dict, processed_dir: Path, gen: Path, nums) -> None:
    """``doc['record_cost']``: the cost table's and the orderings table's paths ('' until the study ran) and which
    of its numbers exist."""
    from ...studies.record_cost import report

    doc["record_cost"] = {"table": "", "orderings": "", "syslog": False, "versions": "", "version_servers": ""}
    if (processed_dir / BETWEEN).exists():
        between = pd.read_csv(processed_dir / BETWEEN, keep_default_na=False, na_values=[""])
        between = between[between["metric"] == "instructions"]  # the calls and bytes stay in the notebook
        if not between.empty:
            table = _one_label(report.between_versions_table(between))
            if "builds compared" in table.columns:
                # what a difference of builds means is the paragraph's, said once: each row names its two builds
                table["builds compared"] = table["builds compared"].astype(str).str.split(": these builds").str[0]
            doc["record_cost"]["versions"] = add_table(doc, gen, table, "record_cost_versions")
            doc["record_cost"]["version_servers"] = version_servers(between)
    src = processed_dir / FIGURES
    if not src.exists():
        return
    figures = pd.read_csv(src, keep_default_na=False, na_values=[""])
    figures["call"] = figures["call"].fillna("")
    doc["record_cost"]["table"] = add_table(doc, gen, _one_label(report.cost_table(figures)), "record_cost")
    if (processed_dir / ORDERINGS).exists():
        orderings = pd.read_csv(processed_dir / ORDERINGS)
        if not orderings.empty:
            claims = processed_dir / CLAIMS
            verdicts = pd.read_csv(claims) if claims.exists() else None
            doc["record_cost"]["orderings"] = add_table(doc, gen, report.orderings_table(orderings, verdicts),
                                                        "record_cost_orderings")
    _estimate(nums, "rc.none.backend", "none", "backend", "per_statement")
    _estimate(nums, "rc.stderr.backend", "stderr", "backend", "per_record")
    _estimate(nums, "rc.stderr.logger", "stderr", "logger", "per_record")
    nums.add("rc.stderr.extra", _cell("stderr", "backend", "extra_per_statement"), optional=True)
    nums.add("rc.n", {**_cell("none", "backend", "n"), "int": True}, optional=True)
    load = {"kind": "agg", "source": FIGURES, "column": "per_statement_spread",
            "where": {"process": "backend", "metric": "instructions"}}
    nums.add("rc.spread.median", {"kind": "scale", "factor": 100, "sig": 2, "of": {**load, "agg": "median"}},
             optional=True)
    nums.add("rc.spread.max", {"kind": "scale", "factor": 100, "sig": 2, "of": {**load, "agg": "max"}},
             optional=True)
    if ((figures["configuration"] == "syslog") & (figures["process"] == "rsyslogd")).any():
        _estimate(nums, "rc.syslog.rsyslogd", "syslog", "rsyslogd", "per_record")
        _estimate(nums, "rc.syslog.backend", "syslog", "backend", "per_record")
        doc["record_cost"]["syslog"] = True
