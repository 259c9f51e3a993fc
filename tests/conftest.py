import os
import signal
import threading
import time

import pytest

needs_root = pytest.mark.skipif(
    os.geteuid() != 0,
    reason="needs root: the server gets a private /dev/log (mount namespace) and remote syslog a network namespace",
)


@pytest.fixture
def docker_engine():
    """A Docker engine for the container backend: skip without one, except in CI, where it must run."""
    from logbench.servers.containers import engine_answers

    if not engine_answers():
        reason = "no Docker engine answers; `bash scripts/setup.sh --docker` installs and starts one"
        if os.environ.get("CI"):
            pytest.fail("CI must run the container tests: " + reason)
        pytest.skip(reason)


@pytest.fixture
def log_dir():
    """A log directory (not yet created) under a scratch directory the server's unprivileged user can reach
    (pytest's own temporary root is closed to it); removed afterwards."""
    import shutil
    import tempfile
    from pathlib import Path

    from logbench.base import paths

    d = Path(tempfile.mkdtemp(prefix="logbench-test-", dir=paths.scratch_root()))
    d.chmod(0o755)
    yield d / "log"
    shutil.rmtree(d, ignore_errors=True)


def study_process(script: str):
    """A study run by ``python -c script`` in a session of its own (a terminal's Ctrl-C goes to its group), with
    the repository's lib on its path; stdout and stderr together in ``stdout``."""
    import subprocess
    import sys
    import textwrap

    from logbench.base import paths

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(paths.ROOT / "lib"), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)


def interrupted_mid_load(script: str, loading, sig: int) -> tuple[int, str]:
    """``script`` run as :func:`study_process`, signalled with ``sig`` half a second after ``loading()`` says its
    load runs (its whole session: what a terminal's Ctrl-C reaches); its exit status and output."""
    import time

    proc = study_process(script)
    try:
        assert wait_for(lambda: loading() or proc.poll() is not None, 60)
        assert proc.poll() is None, proc.stdout.read().decode(errors="replace")
        time.sleep(0.5)
        os.killpg(proc.pid, sig)
        output = proc.communicate(timeout=60)[0].decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, output


def files_holding(root, secret: str) -> list[str]:
    """Every file under ``root`` whose bytes hold ``secret`` (a password no file a run writes may keep)."""
    from pathlib import Path

    return [str(p) for p in Path(root).rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def processes_naming(program: str, marker: str) -> list[str]:
    """The command lines of the running ``program`` processes (as this host sees them: a container's too) that name
    ``marker`` (a work directory): what a test checks is gone after a study."""
    import psutil

    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            cmd = " ".join(p.info["cmdline"] or [])
        except psutil.NoSuchProcess:
            continue
        if program in cmd and marker in cmd and not in_background_container(p.pid):
            found.append(cmd)
    return found


# The fresh-machine check's container while it runs beside the host's tests (tests/test_fresh_machine.py): its
# suite's servers run under its own /var/tmp, the same path in their command lines as the host's.
BACKGROUND_CONTAINERS: set[str] = set()


def in_background_container(pid: int) -> bool:
    """The process runs in the fresh-machine check's container (its cgroup path names the container's id)."""
    if not BACKGROUND_CONTAINERS:
        return False
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            groups = f.read()
    except OSError:
        return False
    return any(c in groups for c in BACKGROUND_CONTAINERS)


def wait_for_records(proc, runs_file, within_s: float) -> None:
    """Until ``runs_file`` holds a record; fails with the study's output if it ends first, or after ``within_s``."""
    import time

    from logbench.base import records

    deadline = time.monotonic() + within_s
    while not (runs_file.exists() and records.load(runs_file).shape[0] > 0):
        assert proc.poll() is None, proc.stdout.read().decode(errors="replace")[-3000:]
        assert time.monotonic() < deadline, f"no window recorded within {within_s:.0f} s"
        time.sleep(0.2)


def wait_for_lines(proc, path, within_s: float) -> None:
    """Until ``path`` (a study's raw record, one JSON line per count) holds a line; fails with the study's output
    if it ends first, or after ``within_s``."""
    import time

    deadline = time.monotonic() + within_s
    while not (path.exists() and path.read_text().strip()):
        assert proc.poll() is None, proc.stdout.read().decode(errors="replace")[-3000:]
        assert time.monotonic() < deadline, f"nothing recorded in {path.name} within {within_s:.0f} s"
        time.sleep(0.2)


def blank_run(position: int, **fields):
    """A run record with a placeholder in every field without a default, ``position`` and ``fields`` set."""
    import dataclasses
    import typing

    from logbench.base import records

    hints = typing.get_type_hints(records.Run)
    blank = {int: 0, float: 1.0, str: "x", bool: False, dict: {}, tuple: ()}
    values = {f.name: blank[hints[f.name]] for f in dataclasses.fields(records.Run)
              if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    return records.Run(**{**values, "position": position, **fields})


# The fresh-machine check (tests/test_fresh_machine.py) runs the suite again in a clean container, on a clone of
# HEAD. When it runs in this session on a tree that is HEAD, the container starts with the session and runs in the
# background while the host runs what cannot pass inside: the tests that need a Docker engine (the container
# backend's, the SLURM cluster's; no engine inside) and what the check leaves out (the signals, the workflow's smoke
# run). Nothing of those depends on the container's result. The check's test then waits for the container, and a
# test that passed inside is not run a second time here: the same test on the same code, on a machine with only
# what set-up installs. The long loads follow the check (the machine is then the host's alone), and a test that
# failed or did not run inside runs here too (test_fresh_machine.around_the_check). A session ended early (-x,
# Ctrl-C, or SIGTERM, which then stops it as Ctrl-C does) removes the container at its end. Elsewhere (a tree with
# changes, the check deselected, no engine) the order and the runs are as collected.
FRESH_TEST = "tests/test_fresh_machine.py::test_readme_commands_pass_in_a_clean_container"
PASSED_INSIDE = pytest.StashKey[set]()
FRESH_RUN = pytest.StashKey[object]()  # the container started with the session (test_fresh_machine.FreshRun)
_FRESH_MODULE = pytest.StashKey[object]()
_SIGTERM_BEFORE = pytest.StashKey[object]()


def _tree_is_head() -> bool:
    import subprocess

    from logbench.base import paths

    try:
        r = subprocess.run(["git", "-C", str(paths.ROOT), "status", "--porcelain"], capture_output=True, text=True,
                           timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0 and not r.stdout.strip()


# The overlap needs cores to spare: on 2 vCPUs both halves are CPU-bound, and of the five whole CI runs made with it
# (2026-11-28/29) three failed, each on a test the other half starved (study 11's counts 0.73 % apart, an
# interrupted load's backend still active at the next test's start, two 1-2 s pgbench loads that processed no
# transaction); the runs one side after the other (40-41 min) had passed. Below this many cores the check runs
# first, alone, and what passed inside still skips on the host afterwards.
OVERLAP_MIN_CORES = 4


def pytest_collection_modifyitems(session, config, items):
    fresh = next((i for i in items if i.nodeid == FRESH_TEST), None)
    if fresh is None or getattr(fresh.module, "_REASON", "") is not None or not _tree_is_head():
        return
    if (os.cpu_count() or 1) < OVERLAP_MIN_CORES:
        items[:] = [fresh, *[i for i in items if i is not fresh]]
        config.stash[PASSED_INSIDE] = set()
        return
    items[:] = fresh.module.around_the_check(items, fresh)
    config.stash[PASSED_INSIDE] = set()  # filled by the check with what passed inside
    config.stash[_FRESH_MODULE] = fresh.module


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    module = session.config.stash.get(_FRESH_MODULE, None)
    if module is None or session.config.option.collectonly or session.testsfailed:
        return
    # under pytest's base temporary directory (its last three kept), as the test's own tmp_path was: the log inside
    # stays readable after a failure
    work = session.config._tmp_path_factory.mktemp("fresh-machine")
    try:
        session.config.stash[FRESH_RUN] = module.start_in_background(work)
    except Exception as e:  # noqa: BLE001 - the check's test reports it; the host's own tests run regardless
        session.config.stash[FRESH_RUN] = e
        return
    # SIGTERM's default (a CI runner's stop, `kill`) ends this process where it stands and the container runs on
    # without it: end the session as Ctrl-C does instead, whose teardown (pytest_sessionfinish) removes it.
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        session.config.stash[_SIGTERM_BEFORE] = signal.signal(signal.SIGTERM, _stop_as_ctrl_c)


def _stop_as_ctrl_c(signum, frame):
    raise KeyboardInterrupt(f"stopped by signal {signum}")


def pytest_sessionfinish(session):
    run = session.config.stash.get(FRESH_RUN, None)
    if hasattr(run, "remove"):  # a session stopped before the check's test joined it (-x, Ctrl-C): nothing left
        run.remove()
    if _SIGTERM_BEFORE in session.config.stash:
        signal.signal(signal.SIGTERM, session.config.stash[_SIGTERM_BEFORE])


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if item.nodeid in item.config.stash.get(PASSED_INSIDE, ()):
        pytest.skip("passed in the fresh-machine container on this commit (tests/test_fresh_machine.py)")


def pytest_configure(config):
    # Registered here, not in pyproject.toml: a change there re-installs every .venv at the next set-up.
    config.addinivalue_line(
        "markers", "fresh_machine: the README's commands in a clean Debian container (minutes; -m 'not fresh_machine')")
    config.addinivalue_line(
        "markers", "workflow_smoke: uses the workflow's smoke run of every study (one session fixture, ~6 min)")
    config.addinivalue_line(
        "markers", "long_load: a real load of a minute or more whose programs shorter tests run too (the fresh-machine "
                   "check leaves it out to keep CI's time; -m 'not long_load')")
    config.addinivalue_line(
        "markers", "docker_engine: needs a Docker engine, checked by its module rather than by the docker_engine "
                   "fixture (the fresh-machine check's ordering reads either)")
    config.addinivalue_line(
        "markers", "smoke_run_study: a real run of a study that the workflow's smoke run makes alike (its first smoke "
                   "parameter set): skipped where that run is in the session, whose test asserts the same on it; the "
                   "fresh-machine check leaves it out (the host asserts on its smoke run)")
    # A suite started in the background of a non-interactive shell (`cmd &`) inherits SIGINT ignored, and so would
    # every process it starts: the tests that stop a study with Ctrl-C would then test nothing. Python-level
    # handlers reset to the default at exec, so the children get a working SIGINT again.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def the_smoke_run_is_here(request) -> bool:
    """Whether the workflow's smoke run of every study (tests/test_workflow.py's session fixture ``smoke_run``) is
    part of this session: a test marked ``smoke_run_study`` then skips, and its assertions run on that run's study
    (tests/test_workflow.py), which measured the same study with the same parameters once already."""
    return any("smoke_run" in item.fixturenames for item in request.session.items)


# A notebook under nbval (tests/test_notebooks.py) runs once per session: a test that asserts on what the same run
# recorded (the container backend's study 02 and 04, tests/test_containers.py and tests/test_mariadb_containers.py)
# reads it instead of running that study a second time. Its temporary directory (a smoke run's results go there)
# is kept until the session ends.
@pytest.fixture(scope="session")
def nbval_run(tmp_path_factory):
    """``nbval_run(name, parameters)``: nbval of a copy of notebooks/``name`` with ``parameters`` injected ("{tmp}"
    is the run's directory), once per session: its exit status and output, the study's results directory (a smoke
    run's, or None), what its guardians removed (``cleanup.GUARDIAN_LOG``: a teardown that left something), and the
    study containers, networks and volumes before and after it (a run with backend="container")."""
    import json
    import shutil
    import tempfile

    done, scratches = {}, []

    def run(name: str, parameters: dict):
        key = (name, json.dumps(parameters, sort_keys=True))
        if key not in done:
            scratches.append(tempfile.mkdtemp(prefix="lb-nbval-"))
            done[key] = _nbval(name, parameters, tmp_path_factory.mktemp("nbval"), scratches[-1])
        return done[key]

    yield run
    for s in scratches:
        shutil.rmtree(s, ignore_errors=True)


def _nbval(name: str, parameters: dict, tmp, scratch: str):
    import subprocess
    import sys
    from pathlib import Path
    from types import SimpleNamespace

    import papermill

    from logbench.base import cleanup, paths

    params = {k: v.format(tmp=tmp) if isinstance(v, str) else v for k, v in parameters.items()}
    copy = tmp / name
    papermill.execute_notebook(str(paths.NOTEBOOKS / name), str(copy), parameters=params, prepare_only=True,
                               progress_bar=False)
    guardian_log = tmp / "guardian.log"
    in_containers = parameters.get("backend") == "container"
    before = _study_containers() if in_containers else None
    # A smoke run keeps its results under the temporary directory (common.output_path) for its user to read;
    # under test that directory is the run's own, short (servers' socket paths) and removed after the session.
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env", "--nbval-cell-timeout=900",
         "-p", "no:cacheprovider", "-q", str(copy)],
        cwd=tmp, capture_output=True, text=True, timeout=1800,
        env={**os.environ, "TMPDIR": scratch, cleanup.GUARDIAN_LOG: str(guardian_log)},
    )
    wait_for(lambda: not guardians_writing_to(guardian_log), timeout=60)
    results = sorted(Path(scratch).glob("logbench-smoke-*/*"))
    return SimpleNamespace(
        returncode=r.returncode, output=f"{r.stdout[-6000:]}\n{r.stderr[-2000:]}",
        results=results[0] if len(results) == 1 else None,
        guardians_removed=guardian_log.read_text() if guardian_log.exists() else "",
        guardians_running=guardians_writing_to(guardian_log),
        containers_before=before, containers_after=_study_containers() if in_containers else None)


def _study_containers():
    """(every logbench study's containers and networks, every volume) now."""
    from logbench.servers import containers

    left = containers.leftovers()
    return (set(left["containers"]) | set(left["networks"]),
            {v.name for v in containers._docker().volumes.list()})


def guardians_writing_to(log) -> list[int]:
    """The study guardians (logbench.base.cleanup) still running with ``log`` as their report file."""
    import psutil

    from logbench.base import cleanup

    found = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        try:
            if "logbench.base.cleanup" in " ".join(p.info["cmdline"] or []) and \
                    p.environ().get(cleanup.GUARDIAN_LOG) == str(log):
                found.append(p.info["pid"])
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return found


def connector(connect, made=None):
    """A capture helper's ``connect``: a fresh autocommit session from ``connect()`` each call, each one also
    appended to ``made`` (so a test can kill the one in use)."""
    def session():
        c = connect()
        if made is not None:
            made.append(c)
        return c
    return session


def in_thread(fn):
    """``fn`` on a thread of its own: (the thread, a box that gets 'result' or 'error')."""
    box = {}

    def target():
        try:
            box["result"] = fn()
        except BaseException as e:  # noqa: BLE001
            box["error"] = e

    t = threading.Thread(target=target)
    t.start()
    return t, box


class Held:
    """A capture's ``sleep`` that the test holds open: ``started`` is set once the capture has made its changes and
    sleeps (its apply and settle done), and after the ``seconds`` it was given it sleeps on until the test sets
    ``done`` (at most ``within`` seconds more). What the test does in the window (its statements, a kill of the
    helper's session) is then inside it however slowly a loaded machine gets there, and never in the apply; the
    capture is real throughout."""

    def __init__(self, within: float = 120.0):
        self.started, self.done, self.within = threading.Event(), threading.Event(), within

    def __call__(self, seconds: float) -> None:
        self.started.set()
        time.sleep(seconds)
        self.done.wait(self.within)


def wait_for(predicate, timeout=20.0):
    """True as soon as ``predicate()`` is, False after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def interrupt_while_sleeping(command: list[str], sig, capturing) -> str:
    """Run a capture tool's command line (``python -m logbench.servers.capture...``, ``-s 60``) until it sleeps, check that
    ``capturing()`` (its settings are on, with its output so far as the message), send it ``sig``: what it printed
    from then on, once it exited with 128 + the signal's number (its stderr as the message)."""
    import subprocess

    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("Sleeping 60 seconds"):
            break
    assert capturing(), "".join(lines)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig.value, err
    assert "could NOT restore" not in err
    return out


def fail_the_load_tool_at(monkeypatch, call: int) -> None:
    """pgbench's ``call``-th run in this test raises RuntimeError("injected failure of the load tool"), a failure
    mid-study; the runs before it are real."""
    from logbench.workloads import pgbench

    real_run, calls = pgbench.Pgbench.run, []

    def failing_run(self, *a, **kw):
        calls.append(1)
        if len(calls) == call:
            raise RuntimeError("injected failure of the load tool")
        return real_run(self, *a, **kw)

    monkeypatch.setattr(pgbench.Pgbench, "run", failing_run)
