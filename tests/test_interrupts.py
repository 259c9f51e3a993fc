"""Ctrl-C, SIGTERM and SIGKILL to papermill stop a study within seconds and leave nothing behind (issue 14).

The real thing: papermill runs notebook 02 (smoke profile, local backend, the file, syslog and remote-syslog
destinations, so PostgreSQL, two rsyslogd and a network namespace are up), and once the first run is on disk
it gets the signal a terminal's Ctrl-C sends (SIGINT to its process group), the one ``timeout`` or a
scheduler sends (SIGTERM to papermill alone), or SIGKILL. Papermill's kernel runs in a session of its own,
so it never sees the terminal's signal itself: papermill's kernel manager interrupts it, then SIGTERMs and
SIGKILLs it seconds later, or (papermill killed) ipykernel exits when its parent is gone. Whichever way the
kernel ends, every process, namespace and directory the study made must be gone within seconds (the study's
own teardown, else its guardian, :mod:`logbench.base.cleanup`), the runs already recorded stay, and papermill's
exit status is non-zero.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from conftest import needs_root, wait_for
from logbench.base import cleanup, paths
from logbench.servers import netns

pytestmark = [pytest.mark.integration, needs_root, pytest.mark.timeout(600)]

PAPERMILL = Path(sys.executable).with_name("papermill")
CLEAN_WITHIN_S = 15.0


def _owned_by(pid: int) -> list[Path]:
    return [d for root in (paths.scratch_root(), paths.tmpfs_root()) for d in root.glob(cleanup.PREFIX + "*")
            if (rec := cleanup.read_owner(d)) is not None and int(rec.get("pid", -1)) == pid]


def _processes_in(dirs: list[Path]) -> list[str]:
    out = []
    for p in psutil.process_iter(["pid", "name", "cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if any(str(d) in cmd for d in dirs) and "logbench.base.cleanup" not in cmd:
            out.append(f"{p.info['pid']} {p.info['name']}")
    return out


def _kernel_of(pm: subprocess.Popen) -> psutil.Process:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for c in psutil.Process(pm.pid).children(recursive=True):
            if "ipykernel" in " ".join(c.cmdline()):
                return c
        time.sleep(0.2)
    raise AssertionError("papermill started no kernel within 120 s")


def _lines(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()] if path.exists() else []


ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(paths.ROOT / "lib"), os.environ.get("PYTHONPATH", "")])}


def argv(tmp_path: Path, repeats: int, extra: tuple[str, ...] = (), duration: int = 2) -> list[str]:
    return [str(PAPERMILL), str(paths.NOTEBOOKS / "02_pg_destinations.ipynb"), str(tmp_path / "out.ipynb"),
            "-p", "profile", "smoke", "-p", "backend", "local", "-p", "duration", str(duration), "-p", "repeats",
            str(repeats), "-p", "clients", "[1]", "-p", "destinations", '["csvlog", "syslog", "remote_syslog_udp"]',
            "-p", "output_dir", str(tmp_path / "runs"), *extra]


class Study:
    """Notebook 02 under papermill, up to its first recorded run; what its kernel owns. 2 s runs: the signal or the
    fault lands right after the first one is recorded, while the next one runs; how long a run lasts is not what
    these tests look at, and its seconds were theirs (5 s runs made the first one take 5)."""

    def __init__(self, tmp_path: Path, repeats: int = 3, extra: tuple[str, ...] = (), duration: int = 2):
        self.out = tmp_path / "runs"
        self.argv = argv(tmp_path, repeats, extra, duration)
        # start_new_session: papermill leads its own process group, as a shell's foreground job does
        self.pm = subprocess.Popen(self.argv, env=ENV, start_new_session=True, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT)
        self.kernel = _kernel_of(self.pm)
        deadline = time.monotonic() + 300
        while not self.runs():
            assert self.pm.poll() is None, self.pm.stdout.read().decode(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "no run recorded within 300 s"
            time.sleep(0.2)
        self.owned = _owned_by(self.kernel.pid)
        self.namespaces = [d.name[len(cleanup.NETNS_PREFIX):] for d in self.owned
                           if d.name.startswith(cleanup.NETNS_PREFIX)]
        assert self.namespaces and _processes_in(self.owned), f"the study should be up now: {self.owned}"
        assert {d.name.split("-")[1] for d in self.owned} >= {"log", "syslog", "pg", "netns"}, self.owned
        self.recorded = self.runs()

    def runs(self) -> list[dict]:
        return _lines(self.out / "runs.jsonl")

    def left(self) -> list[str]:
        left = [str(d) for d in self.owned if d.exists()] + _processes_in(self.owned)
        left += [f"namespace {n}" for n in self.namespaces if n in netns.leftover_namespaces()]
        k = self.kernel
        left += ["kernel"] if k.is_running() and k.status() != psutil.STATUS_ZOMBIE else []
        return left

    def wait_clean(self, t0: float, within: float) -> float:
        while self.left() and time.monotonic() - t0 < within + 30:
            time.sleep(0.1)
        return time.monotonic() - t0

    def daemon(self, needle: str) -> psutil.Process:
        for p in psutil.process_iter(["cmdline"]):
            cmd = " ".join(p.info["cmdline"] or [])
            if any(str(d) in cmd for d in self.owned) and needle in cmd:
                return p
        raise AssertionError(f"no process of the study matches {needle!r}")

    def kill(self) -> None:
        if self.pm.poll() is None:
            os.killpg(self.pm.pid, signal.SIGKILL)
            self.pm.wait()


def stop_and_check(study: Study, how: str) -> None:
    """Send ``how`` once the first run is recorded: papermill exits non-zero, everything the study made is gone
    within CLEAN_WITHIN_S, every recorded run stays whole, and the study did not run to its end."""
    t0 = time.monotonic()
    if how == "ctrl-c":
        os.killpg(study.pm.pid, signal.SIGINT)
    elif how == "sigterm":
        study.pm.send_signal(signal.SIGTERM)
    else:
        study.pm.kill()
    study.pm.wait(timeout=60)
    exited = time.monotonic() - t0
    took = study.wait_clean(t0, CLEAN_WITHIN_S)
    print(f"{how}: papermill exited {study.pm.returncode} after {exited:.1f} s; everything gone after {took:.1f} s")
    assert not study.left(), f"left behind {took:.0f} s after {how}: {study.left()}"
    assert took <= CLEAN_WITHIN_S, f"cleaning up after {how} took {took:.1f} s"
    assert study.pm.returncode != 0
    after = study.runs()
    assert after[:len(study.recorded)] == study.recorded  # every recorded run kept, whole and unchanged
    assert len(after) < len(json.loads((study.out / "plan.json").read_text())), "the study ran to its end"


# Ctrl-C is checked by the resume test below, on the study it then resumes: the signal lands right after the first
# recorded run in both, so a study of its own for it would repeat that test's first half.
@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_a_signal_to_papermill_stops_the_study_and_leaves_nothing(how, tmp_path):
    study = Study(tmp_path)
    try:
        stop_and_check(study, how)
    finally:
        study.kill()


def test_the_postmaster_killed_mid_run_fails_the_study_clearly(tmp_path):
    """SIGKILL to the postmaster: the run in progress fails (pgbench loses its connections), the study
    stops with an error naming the server, the earlier runs stay, nothing is left."""
    study = Study(tmp_path)
    try:
        postmaster = study.daemon("postgres -D")
        t0 = time.monotonic()
        postmaster.kill()
        text = study.pm.communicate(timeout=120)[0].decode(errors="replace")
        took = study.wait_clean(t0, 60)
        print(f"postmaster SIGKILL: papermill exited {study.pm.returncode} after {took:.1f} s")
        assert study.pm.returncode != 0
        assert "pgbench" in text or "server" in text.lower(), text[-3000:]
        assert not study.left(), study.left()
        assert study.runs()[:len(study.recorded)] == study.recorded
    finally:
        study.kill()


def test_the_private_rsyslog_killed_mid_run_shows_as_loss_or_fails(tmp_path):
    """The local rsyslogd killed: PostgreSQL's syslog() then goes nowhere. Never a hang, never a
    complete-looking run: every later run with a syslog destination records loss, or the study fails. 1 s runs (the
    smoke profile's): a dead daemon receives nothing however long a run is, and the nine runs after the kill are
    this test's time."""
    study = Study(tmp_path, repeats=2, duration=1)
    try:
        t0 = time.monotonic()
        study.daemon("rsyslog-local.conf").kill()
        study.pm.communicate(timeout=300)
        study.wait_clean(t0, 60)
        later = study.runs()[len(study.recorded):]
        syslog_runs = [r for r in later if any("syslog" in d for d in r["destinations"]) and not r["warmup"]]
        print(f"rsyslog killed: papermill exited {study.pm.returncode}; later syslog runs' loss "
              f"{[round(r['log_loss'], 3) for r in syslog_runs]}")
        assert study.pm.returncode != 0 or (syslog_runs and all(r["log_loss"] > 0 for r in syslog_runs))
        assert not study.left(), study.left()
    finally:
        study.kill()


def test_a_study_stopped_by_ctrl_c_resumes_where_it_stopped(tmp_path):
    """Ctrl-C (SIGINT to papermill's process group, as a terminal sends it) stops the study and leaves nothing
    (stop_and_check); run again with the same output_dir: the same schedule, the recorded runs skipped, the rest
    run; other parameters are refused, saying what differs. 2 blocks of 1 s runs (the smoke profile's): the
    resume, not the runs, is tested."""
    study = Study(tmp_path, repeats=2, duration=1)
    try:
        stop_and_check(study, "ctrl-c")
    finally:
        study.kill()
    before = study.runs()
    schedule = json.loads((study.out / "plan.json").read_text())
    assert 0 < len(before) < len(schedule)
    other = subprocess.run(argv(tmp_path, repeats=3, duration=1), env=ENV, capture_output=True, text=True,
                           timeout=600)
    assert other.returncode != 0 and "repeats: 2 recorded, 3 now" in other.stdout + other.stderr
    again = subprocess.run(study.argv, env=ENV, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    after = study.runs()
    assert after[:len(before)] == before
    assert sorted(r["position"] for r in after) == list(range(len(schedule)))
    assert [(r["position"], r["configuration"]) for r in after[len(before):]] == \
        [(p["position"], p["configuration"]) for p in schedule[len(before):]]
    nb = json.loads((tmp_path / "out.ipynb").read_text())
    assert f"{len(before)} runs already recorded" in json.dumps(nb)


# The switchback design: two loads of one block of the 5 arms (the A/A control too) in 2 s windows at 1 client
# (10 s of windows a load; 2 blocks made it 20 s): the cut and the rerun are asserted, not the estimates.
SWITCHBACK = ("-p", "design", "switchback", "-p", "window_s", "2", "-p", "guard_s", "1", "-p", "layout", "permutation",
              "-p", "blocks", "1", "-p", "loads", "2", "-p", "max_loads", "2")


def test_ctrl_c_inside_a_switchback_load_keeps_its_finished_windows_and_a_rerun_resumes(tmp_path):
    study = Study(tmp_path, extra=SWITCHBACK)  # returns once the first load's windows are recorded
    try:
        first = len(study.recorded)
        # inside the second load: once its pgbench runs (the kernel's first since the first load's), its first whole
        # second and a 2 s window or two, ~6 s before its end
        def loading() -> bool:
            try:
                return any("pgbench" in " ".join(c.cmdline()) for c in study.kernel.children(recursive=True))
            except psutil.NoSuchProcess:  # a child (a psql, a reload) ended between the listing and its reading
                return False

        assert wait_for(loading, 60), "the second load's pgbench did not start within 60 s"
        time.sleep(5)
        t0 = time.monotonic()
        os.killpg(study.pm.pid, signal.SIGINT)
        study.pm.wait(timeout=60)
        took = study.wait_clean(t0, CLEAN_WITHIN_S)
        assert study.pm.returncode != 0
        assert not study.left(), f"left behind {took:.0f} s after ctrl-c: {study.left()}"
        kept = study.runs()
        assert len(kept) > first, "the interrupted load's finished windows should have been kept"
        rerun = subprocess.run(study.argv, env=ENV, capture_output=True, timeout=400)
        assert rerun.returncode == 0, rerun.stdout.decode(errors="replace")[-3000:]
        final = study.runs()
        assert final[:len(kept)] == kept, "recorded windows are never rewritten"
        by_attempt: dict[tuple, int] = {}
        for r in final:
            key = (r["extra"]["load"], r["extra"]["attempt"])
            by_attempt[key] = by_attempt.get(key, 0) + 1
        whole = [k for k, n in by_attempt.items() if n == first]
        # load 0 ran once, load 1 was cut short and ran again whole; the cut one's windows stay a load of their own
        assert sorted(k[0] for k in whole) == [0, 1] and len(by_attempt) == 3, by_attempt
    finally:
        study.kill()
