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

    from logbench import paths

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

    from logbench import paths

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(paths.ROOT / "lib"), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)


def wait_for_records(proc, runs_file, within_s: float) -> None:
    """Until ``runs_file`` holds a record; fails with the study's output if it ends first, or after ``within_s``."""
    import time

    from logbench import records

    deadline = time.monotonic() + within_s
    while not (runs_file.exists() and records.load(runs_file).shape[0] > 0):
        assert proc.poll() is None, proc.stdout.read().decode(errors="replace")[-3000:]
        assert time.monotonic() < deadline, f"no window recorded within {within_s:.0f} s"
        time.sleep(0.2)


def blank_run(position: int, **fields):
    """A run record with a placeholder in every field without a default, ``position`` and ``fields`` set."""
    import dataclasses
    import typing

    from logbench import records

    hints = typing.get_type_hints(records.Run)
    blank = {int: 0, float: 1.0, str: "x", bool: False, dict: {}, tuple: ()}
    values = {f.name: blank[hints[f.name]] for f in dataclasses.fields(records.Run)
              if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    return records.Run(**{**values, "position": position, **fields})


# The fresh-machine check (tests/test_fresh_machine.py) runs the suite again in a clean container, on a clone of
# HEAD. When it runs in this session on a tree that is HEAD, it runs first, and a test that passed inside is not run
# a second time here: the same test on the same code, on a machine with only what set-up installs. What cannot pass
# inside runs here as before: the container backend's tests (no engine inside), and what the check leaves out
# (signals, the workflow's smoke run, the long loads). A test that failed or did not run inside runs here too.
FRESH_TEST = "tests/test_fresh_machine.py::test_readme_commands_pass_in_a_clean_container"
PASSED_INSIDE = pytest.StashKey[set]()


def _tree_is_head() -> bool:
    import subprocess

    from logbench import paths

    try:
        r = subprocess.run(["git", "-C", str(paths.ROOT), "status", "--porcelain"], capture_output=True, text=True,
                           timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0 and not r.stdout.strip()


def pytest_collection_modifyitems(session, config, items):
    fresh = next((i for i in items if i.nodeid == FRESH_TEST), None)
    if fresh is None or getattr(fresh.module, "_REASON", "") is not None or not _tree_is_head():
        return
    items.remove(fresh)
    items.insert(0, fresh)
    config.stash[PASSED_INSIDE] = set()  # filled by the check with what passed inside


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
    # A suite started in the background of a non-interactive shell (`cmd &`) inherits SIGINT ignored, and so would
    # every process it starts: the tests that stop a study with Ctrl-C would then test nothing. Python-level
    # handlers reset to the default at exec, so the children get a working SIGINT again.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


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


def wait_for(predicate, timeout=20.0):
    """True as soon as ``predicate()`` is, False after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def interrupt_while_sleeping(command: list[str], sig, capturing) -> str:
    """Run a capture tool's command line (``python -m logbench.capture...``, ``-s 60``) until it sleeps, check that
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
