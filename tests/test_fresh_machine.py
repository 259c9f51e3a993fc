"""The README's set-up and test suite on a machine that has nothing installed (issue 14).

A clean, privileged container from ``logbench/debian:bookworm`` (the debootstrap
``minbase`` tree ``scripts/setup_docker.sh`` imports: a fresh Debian, no package
added) gets a clone of the repository's HEAD (committed files only, so a file that
exists only in a working copy cannot make it pass), then runs

    bash scripts/setup.sh          # the README's set-up, timed on its own
    bash run.sh test               # the README's second command (set-up again: idempotent)

with ``LOGBENCH_DOCKER=0``: no engine and no images inside (Docker-in-Docker would
add a debootstrap and three image builds, minutes, to test what
``tests/test_container_images.py`` already tests on the host), so the container
backend's tests skip there with their own stated reason, and this test skips itself
(no recursion). Every other test runs: real PostgreSQL, MariaDB, rsyslog, network
and mount namespaces, sysbench, pgbench, the capture helper, nbval of the local
notebooks, the paper. A skip for any other reason fails this test. Left out inside, to keep CI's
time: ``tests/test_interrupts.py`` (six papermill studies stopped by signals and faults, ~5 min; nothing
in them depends on the machine being fresh, and the guardian they rely on is tested inside by
``tests/test_cleanup.py``), the tests on the workflow's smoke run of every study (marker ``workflow_smoke``,
~6 min: the workflow schedules the same notebooks whose own tests and nbval run inside, and Snakemake itself is
exercised inside by the workflow's dry-run tests) and those that would measure one of its studies again (marker
``smoke_run_study``: on the host they assert on the smoke run's), and the long real loads (marker ``long_load``,
~4 min: the switchback loads of both engines, study 05's, the log rotations under load), whose programs the shorter
integration tests run inside too. The host runs all of them. Set-up installs the local servers at the default images' patch level
(docker/servers.tsv), so the test that they match runs inside: there set-up installed them.

When the host's tree is HEAD, the commit the container ran (a CI clone), the two run side by side
(``tests/conftest.py``): the container starts with the session and runs in the background while the host runs what
cannot pass inside, the tests that need a Docker engine (the container backend's, the SLURM cluster's) and those
left out for time except the long loads (the signals, the workflow's smoke run). Then this test waits for the
container and asserts as it always did, and every test that passed inside (``-rp``: a line per passed test) is not
run a second time on the host: the same test on the same code, once, on the machine with only what set-up
installs. Then the host runs the long loads, with the machine to itself again, and anything that failed inside.
On the 2 vCPUs both sides are CPU-bound, so each runs about twice as slowly beside the other: the long loads follow
the check because the two sides before it end about together without them (docs/testing.md has the measured
times), and the tests seen to depend on the machine's speed wait for what they need, not for a fixed time (the
capture helpers' windows, the container switchback's signal, the stopped collector's pipe, study 11's calibration
loads). Elsewhere (a tree with changes, or this test deselected) nothing is reordered or skipped.

The host's ``/sys/fs/cgroup`` is mounted read-write when the container cannot be ``--privileged`` (this VM's
runc refuses it): a fresh machine's root can make a memory cgroup (study 02's IO-bound regime), a container
sees its cgroups read-only otherwise. Its ``/var/tmp`` is a directory of the host's disk, as a machine's is on its
disk (overlayfs has no block device whose reads the IO-bound regime could pace).

pip inside reaches the same package sources the host's pip does: the host's
effective pip configuration (``pip config list``: files and ``PIP_*`` variables) is
passed in as ``PIP_*`` variables, and every local path it names (CA bundle, wheel
directories, ``file://`` indexes, constraints) is mounted read-only under
``/run/logbench-host`` (not at its own path: the container's ``ca-certificates``
package rewrites ``/etc/ssl/certs``). Proxy variables are passed as they are.

Deselect with ``-m "not fresh_machine"`` when iterating locally; it takes minutes.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from conftest import BACKGROUND_CONTAINERS, FRESH_RUN, PASSED_INSIDE
from logbench.base import paths

BASE_IMAGE = "logbench/debian:bookworm"
INSIDE = "LOGBENCH_FRESH_MACHINE_INSIDE"
HOST_MOUNT = "/run/logbench-host"
# Whole run inside: set-up ~2 min, tests ~13 min alone on the 2-core machine, about twice that beside the host's own
# tests (conftest.py); generous for a loaded one.
TIMEOUT_S = 3000
# Skips allowed inside: the container backend (no engine there, by design) and this test itself.
ALLOWED_SKIP = re.compile(r"Docker engine|docker CLI|docker info|setup_docker|fresh-machine container", re.I)

pytestmark = [pytest.mark.fresh_machine, pytest.mark.integration, pytest.mark.timeout(TIMEOUT_S + 120)]


def _docker(*args: str, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, **kw)


def _why_not_runnable() -> str | None:
    if os.environ.get(INSIDE):
        return "this is the fresh-machine container itself: the check does not run inside itself"
    if os.geteuid() != 0:
        return "needs root: the container is privileged (the suite makes mount and network namespaces inside)"
    if shutil.which("docker") is None:
        return "no docker CLI; `bash scripts/setup.sh --docker` installs an engine and builds the base image"
    try:
        if _docker("info", "--format", "{{.ServerVersion}}", timeout=20).returncode != 0:
            return "no Docker engine answers; `bash scripts/setup.sh --docker` starts one"
    except subprocess.TimeoutExpired:
        return "`docker info` did not answer within 20 s"
    if _docker("image", "inspect", BASE_IMAGE).returncode != 0:
        return f"{BASE_IMAGE} is not built; `bash scripts/setup.sh --docker` builds it"
    return None


def privileged_args() -> list[str]:
    """``--privileged``, or where this host's own bounding set lacks a capability (a VM sandbox without
    CAP_SYS_RESOURCE: runc then refuses ``--privileged``), every capability it has, unconfined: what
    scripts/docker_privilege.py says, as for the cluster scripts."""
    return subprocess.run([sys.executable, str(paths.ROOT / "scripts" / "docker_privilege.py"), BASE_IMAGE],
                          capture_output=True, text=True, check=True, timeout=180).stdout.split()


def pip_passthrough(config_lines: list[str], exists=os.path.exists) -> tuple[dict[str, str], dict[str, str]]:
    """``pip config list`` output -> (PIP_* variables, {host path: container path}) for the container.

    Each local path a value names (plain or ``file://``) is mapped under ``HOST_MOUNT``.
    """
    env: dict[str, str] = {}
    mounts: dict[str, str] = {}
    for line in config_lines:
        m = re.match(r"^(?:[\w:-]*)\.([\w-]+)='(.*)'$", line.strip())
        if not m:
            continue
        key, value = m.groups()
        out = []
        for token in value.split():
            scheme, path = ("file://", token[7:]) if token.startswith("file://") else ("", token)
            if path.startswith("/") and exists(path):
                # a file:// index's pages link to its files by relative paths (../../files/...): mount its parent
                top = str(Path(path.rstrip("/")).parent) if scheme else path
                mounts[top] = HOST_MOUNT + top
                token = scheme + HOST_MOUNT + path
            out.append(token)
        env["PIP_" + key.upper().replace("-", "_")] = " ".join(out)
    return env, mounts


def test_pip_passthrough_maps_local_paths():
    env, mounts = pip_passthrough(
        ["global.cert='/etc/ssl/certs/ca.crt'", "global.extra-index-url='file:///opt/pypi/simple https://x/simple'",
         ":env:.default-timeout='180'", "global.find-links='/absent'"],
        exists=lambda p: p != "/absent")
    assert env == {"PIP_CERT": HOST_MOUNT + "/etc/ssl/certs/ca.crt",
                   "PIP_EXTRA_INDEX_URL": f"file://{HOST_MOUNT}/opt/pypi/simple https://x/simple",
                   "PIP_DEFAULT_TIMEOUT": "180", "PIP_FIND_LINKS": "/absent"}
    assert mounts == {"/etc/ssl/certs/ca.crt": HOST_MOUNT + "/etc/ssl/certs/ca.crt",
                      "/opt/pypi": HOST_MOUNT + "/opt/pypi"}


def _clone_head(dest: Path) -> str:
    head = subprocess.run(["git", "-C", str(paths.ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(paths.ROOT), str(dest)], check=True, timeout=300)
    subprocess.run(["git", "-C", str(dest), "checkout", "-q", head], check=True, timeout=300)
    return head


# What the check leaves out inside (the module's docstring says why); the host runs it while the container runs.
LEFT_OUT_FILES = ("tests/test_interrupts.py",)
LEFT_OUT_MARKERS = ("workflow_smoke", "long_load", "smoke_run_study")

INSIDE_SCRIPT = r"""
set -uo pipefail
cd /logbench
t0=$(date +%s)
bash scripts/setup.sh || { echo "FRESH: set-up failed"; exit 90; }
t1=$(date +%s)
echo "FRESH: set-up took $((t1 - t0)) s"
LOGBENCH_DOCKER=0 bash run.sh test -q -p no:cacheprovider IGNORES -m "MARKERS" --durations=15 -rap
rc=$?
echo "FRESH: tests took $(( $(date +%s) - t1 )) s, exit $rc"
exit $rc
""".replace("IGNORES", " ".join(f"--ignore={f}" for f in LEFT_OUT_FILES)).replace(
    "MARKERS", " and ".join(f"not {m}" for m in LEFT_OUT_MARKERS))


def runs_on_the_host_only(item) -> bool:
    """``item`` (a collected test) cannot pass inside: left out there (above), or it needs a Docker engine (conftest's
    ``docker_engine`` fixture, or the ``docker_engine`` marker where a module checks for the engine itself)."""
    return (item.nodeid.split("::")[0] in LEFT_OUT_FILES
            or any(item.get_closest_marker(m) is not None for m in LEFT_OUT_MARKERS)
            or item.get_closest_marker("docker_engine") is not None
            or "docker_engine" in getattr(item, "fixturenames", ()))


def around_the_check(items: list, check) -> list:
    """The session's order when the container runs in the background (conftest.py): first what only the host runs,
    beside the container; then the check, which waits for it; then the long loads (left out inside, run on the host
    once the container has ended: their loads have the machine to themselves, and the two lanes before the check end
    about together without them); then the rest, where what passed inside skips. A host-only test this misses runs
    after the check, on the host, as before."""
    others = [i for i in items if i is not check]
    beside = [i for i in others if runs_on_the_host_only(i) and i.get_closest_marker("long_load") is None]
    after = [i for i in others if runs_on_the_host_only(i) and i.get_closest_marker("long_load") is not None]
    return [*beside, check, *after, *[i for i in others if not runs_on_the_host_only(i)]]


_REASON = _why_not_runnable()


class FreshRun:
    """The check's container: :meth:`start` returns once it runs (in the background), :meth:`finish` waits for it and
    removes it. conftest.py starts it with the session when the host skips afterwards what passed inside, so the
    host's own tests run meanwhile; otherwise the test starts it itself and waits."""

    def __init__(self, work: Path):
        self.work = work
        self.name = f"logbench-fresh-{uuid.uuid4().hex[:8]}"
        self.log = work / "inside.log"
        self.head = ""
        self.container_id = ""
        self.proc: subprocess.Popen | None = None
        self.t0 = 0.0

    def start(self) -> "FreshRun":
        clone = self.work / "logbench"
        self.head = _clone_head(clone)
        cfg = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
        pip_env, mounts = pip_passthrough(cfg.splitlines())
        env = {**pip_env, INSIDE: "1", "DEBIAN_FRONTEND": "noninteractive"}
        env.update({k: v for k, v in os.environ.items() if k.lower() in ("http_proxy", "https_proxy", "no_proxy")})
        if paths.SEEDS.is_dir():  # the README keeps the five posts next to the repository: ../shared/seeds
            mounts[str(paths.SEEDS)] = "/shared/seeds"
        argv = ["create", *privileged_args(), "--name", self.name, "-w", "/logbench"]
        # A machine has its CPU-latency device; a container only if given it (--privileged passes every device,
        # the capability fallback none): the idle-state control and its tests must run inside too.
        if os.path.exists("/dev/cpu_dma_latency"):
            argv += ["--device", "/dev/cpu_dma_latency"]
        if "--privileged" not in argv and os.path.isdir("/sys/fs/cgroup"):
            argv += ["-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw"]
        # A machine's /var/tmp (the servers' scratch root) is on its disk; a container's is on overlayfs, no block
        # device, so study 02's paced reads could not be tested inside: give it a directory of the host's disk.
        scratch = self.work / "var-tmp"
        scratch.mkdir(mode=0o1777)
        scratch.chmod(0o1777)
        argv += ["-v", f"{scratch}:/var/tmp:rw"]
        for k, v in sorted(env.items()):
            argv += ["-e", f"{k}={v}"]
        for host, inside in sorted(mounts.items()):
            argv += ["-v", f"{host}:{inside}:ro"]
        argv += [BASE_IMAGE, "bash", "-c", INSIDE_SCRIPT]
        self.t0 = time.monotonic()
        try:
            r = _docker(*argv)
            assert r.returncode == 0, r.stderr
            self.container_id = r.stdout.strip()
            # a copy, not a bind mount: the container owns its tree and the .venv it makes goes with it
            r = _docker("cp", f"{clone}/.", f"{self.name}:/logbench", timeout=300)
            assert r.returncode == 0, r.stderr
            # its servers' command lines name /var/tmp as the host's do: the host's tests that look for their own
            # processes leave the container's out (conftest.processes_naming)
            BACKGROUND_CONTAINERS.add(self.container_id)
            with open(self.log, "w") as out:
                self.proc = subprocess.Popen(["docker", "start", "-a", self.name], stdout=out,
                                             stderr=subprocess.STDOUT)
        except BaseException:
            self.remove()
            raise
        return self

    def finish(self) -> tuple[int, str, float]:
        """(the suite's exit status inside, its output, seconds since the start) once it ended; then removed. A run
        past TIMEOUT_S is stopped: its exit status is then the killed ``docker start``'s."""
        try:
            try:
                rc = self.proc.wait(timeout=max(1.0, TIMEOUT_S - (time.monotonic() - self.t0)))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                rc = self.proc.wait()
                with open(self.log, "a") as out:
                    out.write(f"\nFRESH: stopped after {TIMEOUT_S} s\n")
        finally:
            self.remove()
        return rc, self.log.read_text(errors="replace"), time.monotonic() - self.t0

    def remove(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        _docker("rm", "-f", "-v", self.name, timeout=120)
        BACKGROUND_CONTAINERS.discard(self.container_id)


def start_in_background(work: Path) -> FreshRun:
    """conftest.py's start of the check with the session (only where this module's test runs, on a tree that is
    HEAD)."""
    return FreshRun(work).start()


@pytest.mark.skipif(_REASON is not None, reason=_REASON or "")
def test_readme_commands_pass_in_a_clean_container(tmp_path, request):
    run = request.config.stash.get(FRESH_RUN, None) or FreshRun(tmp_path).start()
    if isinstance(run, BaseException):  # the start with the session failed: its error is this test's
        raise run
    returncode, text, wall = run.finish()
    timings = "; ".join(re.findall(r"^FRESH: (.*)$", text, re.M))
    print(f"fresh machine at {run.head[:10]}: {wall:.0f} s in all ({timings}); log {run.log}")
    # What passed inside is not run again on the host (conftest.py: only on a tree that is HEAD); taken before the
    # verdict, so after a failure inside the host still runs the failed test and the rest, not what passed.
    passed = set(re.findall(r"^PASSED (tests/\S.*?)\s*$", text, re.M))
    if PASSED_INSIDE in request.config.stash:
        request.config.stash[PASSED_INSIDE] |= passed
    text = re.sub(r"^PASSED .*\n", "", text, flags=re.M)  # the tail below shows failures and skips, not passes
    assert returncode == 0, f"in a clean container ({timings}; its whole log: {run.log}):\n{text[-8000:]}"
    skipped = re.findall(r"^SKIPPED \[\d+\] (.*)$", text, re.M)
    # The posts' texts go in only if this clone has them beside it (../shared/seeds): a clone elsewhere skips their
    # spot checks on the host too, and the container cannot be asked for more than the host has.
    allowed = ALLOWED_SKIP if paths.SEEDS.is_dir() else re.compile(ALLOWED_SKIP.pattern + "|seed texts not found",
                                                                   re.I)
    unexpected = [s for s in skipped if not allowed.search(s)]
    assert not unexpected, f"tests skipped on a fresh machine for a reason other than Docker: {unexpected}"
    assert re.search(r"\d+ passed", text), text[-3000:]


class _Item:
    """A collected test as around_the_check reads it: its node id, markers and fixtures."""

    def __init__(self, nodeid: str, markers: tuple[str, ...] = (), fixtures: tuple[str, ...] = ()):
        self.nodeid, self.markers, self.fixturenames = nodeid, markers, fixtures

    def get_closest_marker(self, name: str):
        return name if name in self.markers else None  # pytest's is a Mark; only its presence is read


def test_the_host_runs_its_own_tests_beside_the_container_then_the_check_then_the_long_loads():
    check = _Item("tests/test_fresh_machine.py::test_readme_commands_pass_in_a_clean_container")
    items = [_Item("tests/test_a.py::plain"), _Item("tests/test_interrupts.py::signal"),
             _Item("tests/test_b.py::load", markers=("long_load", "integration")), check,
             _Item("tests/test_c.py::engine", fixtures=("tmp_path", "docker_engine")),
             _Item("tests/test_w.py::smoke", markers=("workflow_smoke",)),
             _Item("tests/test_n.py::nb[container]", markers=("docker_engine",)),
             _Item("tests/test_s.py::again", markers=("smoke_run_study",)), _Item("tests/test_d.py::plain")]
    order = [i.nodeid for i in around_the_check(items, check)]
    assert order == ["tests/test_interrupts.py::signal", "tests/test_c.py::engine", "tests/test_w.py::smoke",
                     "tests/test_n.py::nb[container]", "tests/test_s.py::again", check.nodeid,
                     "tests/test_b.py::load", "tests/test_a.py::plain", "tests/test_d.py::plain"]
    # what runs beside the container is exactly what the container leaves out or cannot run
    inside = INSIDE_SCRIPT.split("run.sh test", 1)[1]
    assert "--ignore=tests/test_interrupts.py" in inside
    assert all(f"not {m}" in inside for m in ("workflow_smoke", "long_load", "smoke_run_study"))


def test_a_process_of_the_background_container_is_not_the_hosts():
    """processes_naming leaves out what runs in the check's container (its id in the process's cgroup path), and only
    while one runs: here this process's own cgroup path stands for the container's."""
    from conftest import in_background_container

    groups = [line.split(":", 2)[2] for line in Path("/proc/self/cgroup").read_text().splitlines()]
    own = max(groups, key=len)  # a container's is /docker/<id> (or docker-<id>.scope) in every hierarchy
    assert not in_background_container(os.getpid())
    BACKGROUND_CONTAINERS.add(own)
    try:
        assert in_background_container(os.getpid())
        assert not in_background_container(2 ** 22 + 1)  # no such process
    finally:
        BACKGROUND_CONTAINERS.discard(own)
