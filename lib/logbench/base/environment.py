"""The environment record: what machine and software a run happened on.

Collected once per study (as pyperf collects metadata on every run). The
``env_id`` hashes the fields that change what a measurement means — CPU, kernel,
clocksource, server and tool versions — so runs from different environments are
refused, not averaged (:func:`check_poolable`). The git commit is recorded but
not hashed: a change of analysis code does not change the machine.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import socket
import subprocess
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

import pandas as pd

from . import paths
from .errors import EnvironmentMismatch

CHECKED = ("hostname", "cpu_model", "cpu_count", "kernel", "clocksource", "server_version", "tools")


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def cpu_model() -> str:
    m = re.search(r"^model name\s*:\s*(.+)$", _read("/proc/cpuinfo"), re.MULTILINE)
    return m.group(1).strip() if m else platform.processor()


def clocksource() -> str:
    return _read("/sys/devices/system/clocksource/clocksource0/current_clocksource")


# What committed runs write (processed tables, the executed copies of a study's further runs, the findings'
# figures, the paper built from them): a change there does not make the code that ran differ from the commit.
# A study's own notebook is both its source and its executed copy: judged by its cells' code.
DERIVED = ("data/processed/", "notebooks/runs/", "paper/figures/", "paper/generated/", "paper/logbench.pdf")


def notebook_code(text: str, kinds: tuple[str, ...] | None = None) -> str:
    """A hash of a notebook's cells as code: types, sources and tags (outputs, counts, other metadata left out);
    ``kinds``: only the cells of these types (None: every cell)."""
    cells = [(c.get("cell_type"), "".join(c.get("source", "")), sorted(c.get("metadata", {}).get("tags", [])))
             for c in json.loads(text).get("cells", []) if kinds is None or c.get("cell_type") in kinds]
    return hashlib.sha256(json.dumps(cells, sort_keys=True).encode()).hexdigest()[:16]


def changed_sources(root: Path | str = paths.ROOT) -> list[str] | None:
    """Tracked files that differ from HEAD as code: not the derived outputs (DERIVED), not a notebook whose cells
    are HEAD's (an executed copy differs in its outputs only). None where there is no git repository."""
    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30)

    try:
        diff = git("diff", "--name-only", "HEAD")
        if diff.returncode != 0:
            return None
        changed = []
        for path in diff.stdout.splitlines():
            if path.startswith(DERIVED):
                continue
            if path.endswith(".ipynb") and (Path(root) / path).exists():
                head = git("show", f"HEAD:{path}")
                try:
                    if head.returncode == 0 and notebook_code(head.stdout) == notebook_code(
                            (Path(root) / path).read_text()):
                        continue
                except ValueError:
                    pass
            changed.append(path)
        return changed
    except OSError:
        return None


def git_commit() -> str:
    """HEAD's commit, with '+dirty' when the code differs from it (:func:`changed_sources`)."""
    try:
        rev = subprocess.run(["git", "-C", str(paths.ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
    except OSError:
        return ""
    if rev.returncode != 0:
        return ""
    return rev.stdout.strip() + ("+dirty" if changed_sources() else "")


def require_clean(root: Path | str = paths.ROOT) -> None:
    """Exit with the changed files named unless the code is HEAD's: a committed run must name the commit it ran."""
    changed = changed_sources(root)
    if changed:
        raise SystemExit(f"a committed run needs a clean tree (its environment record names the commit); "
                         f"commit or stash first: {', '.join(changed[:10])}{' ...' if len(changed) > 10 else ''}")


def pg_test_timing(binary: Path, seconds: int = 1) -> dict[str, float]:
    """PostgreSQL's own timer-overhead test: per-loop time (ns) and the share of loops under 1 µs."""
    try:
        out = subprocess.run([str(binary), "-d", str(seconds)], capture_output=True, text=True, timeout=seconds + 30).stdout
    except OSError:
        return {}
    res: dict[str, float] = {}
    m = re.search(r"Per loop time including overhead:\s*([\d.]+) ns", out)
    if m:
        res["timer_loop_ns"] = float(m.group(1))
    m = re.search(r"^\s+1\s+([\d.]+)\s+\d+\s*$", out, re.MULTILINE)
    if m:
        res["timer_under_1us_percent"] = float(m.group(1))
    return res


def installed(tool: str, package: str) -> str:
    """``tool``'s path on PATH; ToolError naming the Debian package that has it otherwise (the set-up's list)."""
    import shutil

    from .errors import ToolError

    path = shutil.which(tool)
    if path is None:
        raise ToolError(f"{tool} is not installed: `apt-get install {package}` (scripts/apt-packages.txt)")
    return path


def tool_version(argv: list[str]) -> str:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        return (r.stdout or r.stderr).strip().splitlines()[0]
    except (OSError, IndexError):
        return ""


def collect(*, server_version: str, tools: dict[str, str], extra: dict | None = None) -> dict:
    """The environment record; ``tools`` maps a tool name to its version line."""
    packages = {}
    for name in ("numpy", "pandas", "scipy", "statsmodels", "psycopg", "papermill", "testcontainers"):
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    env = {
        "hostname": socket.gethostname(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "memory_bytes": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
        "kernel": platform.release(),
        "os": _os_release(),
        "clocksource": clocksource(),
        "server_version": server_version,
        "tools": dict(sorted(tools.items())),
        "python": platform.python_version(),
        "packages": packages,
        "git_commit": git_commit(),
        **(extra or {}),
    }
    env["env_id"] = env_id(env)
    return env


def _os_release() -> str:
    m = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', _read("/etc/os-release"), re.MULTILINE)
    return m.group(1) if m else platform.platform()


def env_id(env: dict) -> str:
    key = json.dumps({k: env.get(k) for k in CHECKED}, sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def check_poolable(runs: pd.DataFrame) -> None:
    ids = sorted(set(runs["env_id"])) if len(runs) else []
    if len(ids) > 1:
        raise EnvironmentMismatch(
            f"runs come from {len(ids)} environments ({', '.join(ids)}); summaries pool one environment only: "
            "filter the runs by env_id first"
        )


def _environments(env: Mapping | None) -> dict[str, Mapping]:
    if not env:
        return {}
    return dict(env["variants"]) if "variants" in env else {"": env}


def first_environment(env: Mapping) -> Mapping:
    """The record of a one-server environment, or of a multi-server one's first server: what belongs to the machine
    (its cores, its tools, a default environment id) is the same in each."""
    return next(iter(_environments(env).values()))
