"""Every program the suite runs comes from a package the README's set-up installs.

A machine that already had a package from earlier work hides a missing line in
``scripts/apt-packages.txt`` (issue 14: ``my_print_defaults``, which
``mariadb-install-db`` runs, is in ``mariadb-client-core``, which nothing listed).
So each program is resolved the way the suite resolves it, its file is mapped to
its Debian package with ``dpkg -S``, and that package must be in the list's
dependency closure (``apt-cache depends --recurse``, no recommends: set-up installs
none) or be part of every Debian system (Essential or Priority required, what
``debootstrap --variant=minbase`` installs). A second guard scans the sources for
programs started by name, so a new one cannot be added without a row here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path

import pytest

from logbench.base import paths

ROOT = paths.ROOT
APT_LIST = ROOT / "scripts" / "apt-packages.txt"

pytestmark = pytest.mark.skipif(shutil.which("dpkg-query") is None or shutil.which("apt-cache") is None,
                                reason="not a Debian/Ubuntu system: no dpkg / apt-cache")


def _pg(name: str) -> str:
    from logbench.servers.postgres import find_bindir

    return str(find_bindir() / name)


def _mariadbd() -> str:
    from logbench.servers.mariadb import find_mariadbd

    return str(find_mariadbd())


def _install_db() -> str:
    from logbench.servers.mariadb import find_install_db, find_mariadbd

    return str(find_install_db(find_mariadbd()))


# Only the directories dpkg installs into: a program in /usr/local or a pyenv shim is not what a fresh
# machine has.
SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


def _on_path(name: str):
    def resolve() -> str | None:
        return shutil.which(name, path=SYSTEM_PATH)
    return resolve


def _rsyslogd() -> str:
    from logbench.servers.syslog import rsyslogd_binary

    return rsyslogd_binary()


def _sysbench() -> str:
    from logbench.workloads.sysbench import sysbench_binary

    return str(sysbench_binary())


# program -> (how the suite finds it, who runs it). Programs of the Docker set-up (docker, dockerd,
# debootstrap) are not here: scripts/setup_docker.sh installs their packages itself.
PROGRAMS = {
    "postgres": (lambda: _pg("postgres"), "servers/postgres.py: the local PostgreSQL server"),
    "initdb": (lambda: _pg("initdb"), "servers/postgres.py: the data directory"),
    "pgbench": (lambda: _pg("pgbench"), "workloads/pgbench.py: the PostgreSQL load"),
    "pg_basebackup": (lambda: _pg("pg_basebackup"), "test_own_server.py: a standby, refused"),
    "pg_test_timing": (lambda: _pg("pg_test_timing"), "environment.py: timer overhead in the environment record"),
    "mariadbd": (_mariadbd, "servers/mariadb.py: the local MariaDB server"),
    "mariadb-install-db": (_install_db, "servers/mariadb.py: the data directory"),
    "my_print_defaults": (_on_path("my_print_defaults"), "run by mariadb-install-db"),
    "resolveip": (_on_path("resolveip"), "run by mariadb-install-db"),
    "rsyslogd": (_rsyslogd, "servers/syslog.py: the private syslog daemons"),
    "sysbench": (_sysbench, "workloads/sysbench.py: the MariaDB load"),
    "ip": (_on_path("ip"), "servers/netns.py: the remote log host's network namespace"),
    "unshare": (_on_path("unshare"), "servers/postgres.py: the server's private mount namespace"),
    "setpriv": (_on_path("setpriv"), "servers/private_dev.sh: drops root inside the namespace"),
    "mount": (_on_path("mount"), "servers/private_dev.sh: the private /dev"),
    "sh": (_on_path("sh"), "servers/postgres.py runs private_dev.sh with it"),
    "cat": (_on_path("cat"), "studies/record_cost/calibration.py: the write() floor"),
    "git": (_on_path("git"), "environment.py: the commit in the environment record"),
    "pdftotext": (_on_path("pdftotext"), "tests/test_paper.py: the built paper's text"),
    "pdfinfo": (_on_path("pdfinfo"), "logbench.publish.paper.layout: the appendix's first page (named destinations)"),
    "pdftohtml": (_on_path("pdftohtml"), "logbench.publish.paper.layout: the built paper's type sizes"),
    "make": (_on_path("make"), "the README's `make paper` / `make findings`"),
    "python3": (_on_path("python3"), "scripts/setup.sh: the virtual environment"),
    "useradd": (_on_path("useradd"), "scripts/setup.sh: the logbench user"),
    "sha256sum": (_on_path("sha256sum"), "scripts/setup.sh: the pyproject.toml stamp"),
    "perf": (_on_path("perf"), "contention.py: the cpu-clock profiles of study 05 (pg_audit_timing)"),
    "pgbadger": (_on_path("pgbadger"), "pgbadger.py: the digest of a captured PostgreSQL statement log"),
}


def _apt_list() -> list[str]:
    return [ln.split("#")[0].strip() for ln in APT_LIST.read_text().splitlines() if ln.split("#")[0].strip()]


@cache
def _closure() -> frozenset[str]:
    r = subprocess.run(["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
                        "--no-breaks", "--no-replaces", "--no-enhances", *_apt_list()],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"apt-cache depends failed (run `apt-get update` once?):\n{r.stderr}"
    return frozenset(ln.strip() for ln in r.stdout.splitlines() if ln and not ln.startswith(" "))


def _owner(path: str) -> str:
    """The package that ships ``path`` (looked up as given, then as its real path, for usrmerge links)."""
    for p in dict.fromkeys([path, os.path.realpath(path)]):
        for q in dict.fromkeys([p, re.sub(r"^/usr(?=/s?bin/)", "", p), re.sub(r"^/(?=s?bin/)", "/usr/", p)]):
            r = subprocess.run(["dpkg-query", "-S", q], capture_output=True, text=True)
            owners = [ln.split(":")[0].strip() for ln in r.stdout.splitlines() if not ln.startswith("diversion")]
            if r.returncode == 0 and owners:
                return owners[0]
    return ""


def _in_every_debian(pkg: str) -> bool:
    r = subprocess.run(["dpkg-query", "-W", "-f", "${Essential} ${Priority}", pkg], capture_output=True, text=True)
    return r.returncode == 0 and (r.stdout.startswith("yes") or r.stdout.endswith("required"))


def test_the_package_list_is_resolvable():
    # apt-cache knows nothing before the first `apt-get update` (a fresh container); an empty closure would
    # make every lookup below fail with a misleading message.
    closure = _closure()
    missing = [p for p in _apt_list() if p not in closure]
    assert not missing, f"apt-cache does not know {missing}: typo in {APT_LIST.name}, or run `apt-get update`"


@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_program_comes_from_a_listed_package(program):
    resolve, used_by = PROGRAMS[program]
    try:
        path = resolve()
    except Exception as e:  # the suite's own lookup raising is the finding: say it with the program's use
        path, why = None, str(e)
    else:
        why = "not on PATH"
    assert path and Path(path).exists(), (
        f"{program} ({used_by}) is not installed after set-up ({why}): add the Debian package that ships it "
        f"to {APT_LIST.relative_to(ROOT)}")
    pkg = _owner(path)
    assert pkg, f"{program} at {path} belongs to no Debian package (dpkg -S); the suite must not rely on it"
    assert pkg in _closure() or _in_every_debian(pkg), (
        f"{program} ({used_by}) comes from {pkg}, which is neither in {APT_LIST.relative_to(ROOT)} nor pulled in "
        f"by it nor in every Debian system: add `{pkg}` to the list")


# Programs started by name in the sources: subprocess/Popen argv literals, shutil.which, a bench's
# binary("..."), a shell script's `exec`. A program found here must have a row in PROGRAMS.
_STARTED = [
    re.compile(r'(?:subprocess\.(?:run|Popen|check_output|check_call)|process\.spawn)\(\s*\[\s*"([\w.+-]+)"'),
    re.compile(r'shutil\.which\(\s*"([\w.+-]+)"'),
    re.compile(r'\bbinary\(\s*"([\w.+-]+)"\)'),
    re.compile(r'^\s*argv\s*=\s*\[\s*"([\w.+-]+)"', re.M),
]
# Not programs of this machine: run inside the containers (their images install them), or the test's own tools.
_ELSEWHERE = {"docker", "psql", "mariadb", "mysql", "logger", "apt-cache", "dpkg-query"}
_SHELL_WORDS = {"set", "shift", "exec", "for", "do", "done", "if", "then", "else", "fi", "case", "esac", "while",
                "echo", "printf", "test", "cd", "export", "return", "exit", "local", "read", "trap", "true", "false"}


def test_every_program_started_by_name_is_listed():
    found: dict[str, str] = {}
    for f in sorted((ROOT / "lib").rglob("*.py")) + sorted((ROOT / "tests").rglob("*.py")):
        if f.resolve() == Path(__file__).resolve():
            continue
        text = f.read_text()
        # a test's own `argv = [...]` lists are often docker or pytest arguments, not programs
        for rx in _STARTED if f.is_relative_to(ROOT / "lib") else _STARTED[:3]:
            for m in rx.finditer(text):
                found.setdefault(m.group(1), str(f.relative_to(ROOT)))
    for f in sorted((ROOT / "lib").rglob("*.sh")):
        for m in re.finditer(r"^\s*(?:exec\s+)?([a-z][\w.+-]*)\s", f.read_text(), re.M):
            found.setdefault(m.group(1), str(f.relative_to(ROOT)))

    def needs_a_row(name: str) -> bool:
        if name in PROGRAMS or name in _ELSEWHERE or name in _SHELL_WORDS:
            return False
        path = _on_path(name)()
        # base-system tools (coreutils' ln, mkdir) need no row
        return path is None or not _in_every_debian(_owner(path))

    unlisted = {p: where for p, where in found.items() if needs_a_row(p)}
    assert not unlisted, (f"programs started by name without a row in {Path(__file__).name}'s PROGRAMS "
                          f"(add one, and its package to scripts/apt-packages.txt): {unlisted}")
