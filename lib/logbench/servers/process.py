"""Processes the suite starts: who runs them, how they are stopped, how much CPU they used.

Every daemon is started in a session of its own, so a Ctrl-C aimed at the
notebook does not reach it half-way through a run; the study stops it itself,
in order, from a ``finally``. A parent-death signal is the last line of defence
when the Python process is killed outright.
"""

from __future__ import annotations

import ctypes
import os
import pwd
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from ..errors import LogbenchError

# Tried in order when we run as root: PostgreSQL and MariaDB refuse to run as root.
UNPRIVILEGED_USERS = ("logbench", "postgres", "nobody")
_PR_SET_PDEATHSIG = 1


def is_root() -> bool:
    return os.geteuid() == 0


@dataclass(frozen=True)
class RunUser:
    name: str
    uid: int
    gid: int


def current_user() -> RunUser:
    pw = pwd.getpwuid(os.geteuid())
    return RunUser(pw.pw_name, pw.pw_uid, pw.pw_gid)


def server_user(preferred: str | None = None) -> RunUser:
    """The account database servers run as: ourselves, or an unprivileged one when we are root."""
    if not is_root():
        return current_user()
    for name in ((preferred,) if preferred else UNPRIVILEGED_USERS):
        try:
            pw = pwd.getpwnam(name)
        except KeyError:
            continue
        return RunUser(pw.pw_name, pw.pw_uid, pw.pw_gid)
    raise LogbenchError(
        f"running as root, but none of the unprivileged users {preferred or UNPRIVILEGED_USERS} exists; "
        "the README's set-up creates 'logbench'"
    )


def chown_tree(path: Path, user: RunUser) -> None:
    if not is_root():
        return
    for root, dirs, files in os.walk(path):
        os.chown(root, user.uid, user.gid)
        for name in dirs + files:
            os.chown(os.path.join(root, name), user.uid, user.gid, follow_symlinks=False)


def unreachable_parent(path: Path, user: RunUser) -> Path | None:
    """The first directory above ``path`` that ``user`` may not enter (pytest's 0700 temp roots), or None.

    Root's own access says nothing about it: the servers run as an unprivileged user.
    """
    import stat

    for d in reversed(Path(path).resolve().parents):
        st = d.stat()
        if st.st_uid == user.uid:
            bit = stat.S_IXUSR
        elif st.st_gid == user.gid:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if user.uid != 0 and not st.st_mode & bit:
            return d
    return None


def free_loopback_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Managed:
    """A context manager over ``start()`` and ``close()``: ``close()`` also runs when ``start()`` fails
    half-way, so nothing it had already started outlives the error. ``workdir`` is its private directory;
    setting it marks the directory as this process's (:func:`logbench.cleanup.claim`), so that what a
    killed study leaves there is found and removed by its guardian or the next study."""

    _workdir: Path | None = None

    @property
    def workdir(self) -> Path | None:
        return self._workdir

    @workdir.setter
    def workdir(self, value: Path | None) -> None:
        self._workdir = None if value is None else Path(value)
        if self._workdir is not None:
            from .. import cleanup

            cleanup.claim(self._workdir)

    @property
    def _wd(self) -> Path:
        if self.workdir is None:
            raise RuntimeError("server not started")
        return self.workdir

    def _remove_workdir(self) -> None:
        if self.workdir is not None:
            import shutil

            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def start(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class LocalDaemon(Managed):
    """A server we run as a child process (``proc``) in a private work directory (``workdir``)."""

    proc: subprocess.Popen | None = None

    def _stop_proc(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        try:
            self._stop_proc()
        finally:
            self._remove_workdir()

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise RuntimeError("server not running")
        return self.proc.pid

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


def _die_with_parent(sig: int = signal.SIGQUIT) -> Callable[[], None]:
    def set_pdeathsig() -> None:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, sig)
    return set_pdeathsig


def spawn(
    argv: Sequence[str],
    log_path: Path,
    *,
    user: RunUser | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    death_signal: int = signal.SIGQUIT,
) -> subprocess.Popen:
    """Start a daemon in its own session with stdout+stderr appended to ``log_path``.

    ``death_signal`` reaches it when our process dies: SIGQUIT is PostgreSQL's immediate shutdown and
    mariadbd's shutdown; rsyslogd ignores SIGQUIT (and SIGINT) outside debug mode and needs SIGTERM."""
    log = open(log_path, "ab")
    kwargs: dict = {}
    if user is not None and is_root() and user.uid != 0:
        kwargs.update(user=user.uid, group=user.gid, extra_groups=[])
    try:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent(death_signal),
            env=env,
            cwd=cwd,
            **kwargs,
        )
    finally:
        log.close()


def stop(proc: subprocess.Popen | None, signals: Sequence[tuple[int, float]]) -> None:
    """Send each (signal, grace seconds) in turn until the process is gone; then reap its group."""
    if proc is None:
        return
    for sig, grace in signals:
        if proc.poll() is not None:
            break
        try:
            proc.send_signal(sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=grace)
            break
        except subprocess.TimeoutExpired:
            continue
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=30)
    # Children that outlived their parent (backends, helpers) share its process group.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def tail(path: Path, lines: int = 30) -> str:
    try:
        text = Path(path).read_text(errors="replace")
    except OSError as e:
        return f"(no log at {path}: {e})"
    return "\n".join(text.splitlines()[-lines:])


def wait_until(probe: Callable[[], bool], *, timeout: float, interval: float = 0.1, alive: Callable[[], bool] = lambda: True) -> bool:
    """Poll ``probe`` until it returns True; False on timeout or when ``alive`` says the process died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if probe():
            return True
        if not alive():
            return False
        time.sleep(interval)
    return probe()


def children_settled(pid: int, transient: Callable[[psutil.Process], bool], timeout: float = 10.0) -> bool:
    """Wait until no child of ``pid`` is ``transient`` (a client's backend) and every exited one is reaped.

    A backend that has exited but is not yet reaped is counted nowhere (not live, not in the
    parent's children times), so CPU read in that window misses it; after a run we wait it out.
    """
    def settled() -> bool:
        try:
            kids = psutil.Process(pid).children()
        except psutil.NoSuchProcess:
            return True
        for k in kids:
            try:
                if k.status() == psutil.STATUS_ZOMBIE or transient(k):
                    return False
            except psutil.NoSuchProcess:
                continue
        return True

    return wait_until(settled, timeout=timeout, interval=0.02)


def tree_cpu_seconds(pid: int) -> float:
    """User+system CPU of a process, its live descendants and its reaped children.

    Backends that exit during a run are reaped by the postmaster, whose children
    times then include them; live ones are counted directly. A difference of two
    calls therefore covers everything the server spent between them.
    """
    try:
        root = psutil.Process(pid)
        t = root.cpu_times()
        total = t.user + t.system + t.children_user + t.children_system
        for child in root.children(recursive=True):
            try:
                c = child.cpu_times()
                total += c.user + c.system
            except psutil.NoSuchProcess:
                pass
        return total
    except psutil.NoSuchProcess:
        return float("nan")
