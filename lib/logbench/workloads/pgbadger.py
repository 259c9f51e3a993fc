"""pgBadger, the PostgreSQL log analyser a DBA runs on a captured statement log, as a library call.

:func:`run` runs ``pgbadger`` (Debian's package of the same name, in ``scripts/apt-packages.txt``) with its
JSON output on log files in one of the formats PostgreSQL writes (stderr's file, csvlog, jsonlog, or a
syslog file) and returns the report; :func:`query_count` reads the number of queries it counted, the
number a test sets beside our own record counting (``logsinks``). Study 10's digest and the workload derived
from a captured log (:mod:`.from_log`) both read a log through it, so it sits here, below the studies.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..base import environment
from ..base.errors import ToolError

TOOL = "pgbadger"
# PostgreSQL's name of a destination -> pgBadger's --format. A syslog file in rsyslog's RSYSLOG_FileFormat
# (RFC 3339 times, what the suite's private daemons write) is pgBadger's "syslog2".
FORMATS = {"stderr": "stderr", "csvlog": "csv", "jsonlog": "jsonlog", "syslog": "syslog2"}


def tool_path() -> str:
    """pgbadger on PATH; ToolError saying how to get it otherwise."""
    return environment.installed(TOOL, "pgbadger")


def tool_version() -> str:
    r = subprocess.run([tool_path(), "--version"], capture_output=True, text=True, timeout=60)
    return r.stdout.strip()


def command(files: Sequence[Path | str], destination: str, *, prefix: str | None = None,
            outputs: Sequence[Path | str] = (), pid_dir: Path | str | None = None) -> list[str]:
    """pgBadger's command line for ``files`` written by ``destination`` (a PostgreSQL log_destination).

    ``prefix`` is the server's log_line_prefix (stderr and syslog lines start with it; csvlog and jsonlog
    have fields instead). ``outputs``: report files, their format by extension (.json, .html). ``pid_dir``:
    where pgBadger keeps its pid file (default /tmp, where a second pgBadger refuses to start while one runs).
    """
    if destination not in FORMATS:
        raise ValueError(f"pgBadger reads no {destination!r} log; one of {sorted(FORMATS)}")
    argv = [tool_path(), "--format", FORMATS[destination], "--quiet", "--jobs", "1"]
    if prefix is not None and destination in ("stderr", "syslog"):
        argv += ["--prefix", prefix]
    if pid_dir is not None:
        argv += ["--pid-dir", str(pid_dir)]
    for out in outputs:
        argv += ["--outfile", str(out)]
    return argv + [str(f) for f in files]


def run(files: Sequence[Path | str], destination: str, *, prefix: str | None = None,
        html: Path | None = None, timeout: float = 600.0) -> dict:
    """pgBadger's JSON report of ``files`` (and its HTML report written to ``html``, if given)."""
    with tempfile.TemporaryDirectory(prefix="logbench-pgbadger-") as tmp:
        out = Path(tmp) / "report.json"
        argv = command(files, destination, prefix=prefix, outputs=[out, *([html] if html else [])], pid_dir=tmp)
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0 or not out.is_file():
            raise ToolError(f"`{' '.join(argv)}` failed ({r.returncode}): {r.stderr[-2000:]}")
        return json.loads(out.read_text())


def query_count(report: dict) -> int:
    """The queries pgBadger counted (its report's "Queries" total)."""
    return int(report["overall_stat"]["queries_number"])


def counts_by_query(report: dict) -> dict[str, int]:
    """Queries per normalized statement (pgBadger's "normalyzed_info", its databases summed)."""
    out: dict[str, int] = {}
    for queries in report["normalyzed_info"].values():
        for query, info in queries.items():
            out[query] = out.get(query, 0) + int(info["count"])
    return out


# --query-numbering heads each dumped query with this line: a query's own text may span lines, so the heading,
# not the line or the semicolon, is what separates two of them.
_NUMBERED = "# Query #"


def all_queries(files: Sequence[Path | str], destination: str, *, prefix: str | None = None,
                timeout: float = 600.0) -> list[str]:
    """Every statement of ``files`` as pgBadger reads it (``--dump-all-queries``), in log order, bind parameters
    put in their placeholders' places: what a digest's normalized query stands for, execution by execution."""
    with tempfile.TemporaryDirectory(prefix="logbench-pgbadger-") as tmp:
        out = Path(tmp) / "queries.txt"
        argv = command(files, destination, prefix=prefix, outputs=[out], pid_dir=tmp)
        argv[1:1] = ["--dump-all-queries", "--query-numbering"]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0 or not out.is_file():
            raise ToolError(f"`{' '.join(argv)}` failed ({r.returncode}): {r.stderr[-2000:]}")
        text = out.read_text(errors="replace")
    queries: list[str] = []
    for line in text.splitlines(keepends=True):
        if line.startswith(_NUMBERED):
            queries.append("")
        elif queries:
            queries[-1] += line
    return [q.strip() for q in queries if q.strip()]
