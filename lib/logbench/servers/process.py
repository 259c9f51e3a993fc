"""Processes the suite starts: who runs them, how they are stopped, how much CPU they used.

Every daemon is started in a session of its own, so a Ctrl-C aimed at the
notebook does not reach it half-way through a run; the study stops it itself,
in order, from a ``finally``. A parent-death signal is the last line of defence
when the Python process is killed outright.

:class:`Managed` is the one start template of every server (configure -> launch
-> real probe; :class:`Launched` is its launch-and-probe half, which the log
daemons use too); the servers' modules fill in its hooks.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from ..base import cleanup, paths
from ..base.errors import LogbenchError, ServerStartError, SettingError

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


def copy_datadir(source: Path, datadir: Path, user: RunUser) -> None:
    """A server's data directory copied from ``source`` (mode 0700, the server's user's): every start of a counted
    server begins from the same files."""
    shutil.copytree(source, datadir, symlinks=True)
    datadir.chmod(0o700)
    chown_tree(datadir, user)


def hand_over(path: Path, user: RunUser) -> None:
    """Let the server's ``user`` write in the directory tree ``path``: as root, give it the tree; as
    anyone else, only a server running as another uid (a container's) needs the directories opened to all."""
    if is_root():
        chown_tree(path, user)
    elif user.uid != os.geteuid():
        for root, _, _ in os.walk(path):
            os.chmod(root, 0o777)


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


class UnreachableLogDir(SettingError, ServerStartError):
    """The server's user cannot enter a directory on the way to its log directory: a log directory that
    does not work for this server (SettingError) and the reason it cannot start (ServerStartError)."""


class Launched:
    """The second half of the start template: :meth:`_launch`, then wait until :meth:`_probe` — a real
    client — gets an answer; a launch that never answers (or dies) is stopped and reported with the tail
    of its log. Every start and restart of every server and log daemon here goes through it."""

    what = "the server"  # in error messages
    start_timeout: float = 60.0

    def _launch_ready(self, *args) -> None:
        """Launch (``args`` go to :meth:`_launch`) and wait until the probe answers."""
        self._launch(*args)
        self._wait_ready()

    def _wait_ready(self) -> None:
        if wait_until(self._probe, timeout=self.start_timeout, alive=self.running):
            return
        state, tail = self._exit_state(), self._log_tail()
        self._stop_proc()
        raise ServerStartError(f"{self.what} did not accept connections within {self.start_timeout:.0f} s "
                               f"({state}); last lines of its log:\n{tail}")

    def _launch(self, *args) -> None:
        raise NotImplementedError

    def _probe(self) -> bool:
        """True once a real client gets an answer (not merely a process or a socket file)."""
        raise NotImplementedError

    def running(self) -> bool:
        raise NotImplementedError

    def _exit_state(self) -> str:
        return "still running" if self.running() else "it exited"

    def _log_tail(self) -> str:
        return ""

    def _stop_proc(self) -> None:
        raise NotImplementedError


class ChildProcess(Launched):
    """Launched as a child process of ours (``proc``)."""

    proc: subprocess.Popen | None = None

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise RuntimeError("server not running")
        return self.proc.pid

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _exit_state(self) -> str:
        return f"exit code {self.proc.poll() if self.proc is not None else None}"


class Managed(Launched):
    """A server with a private work directory, started by the one template and context-managed.

    :meth:`start` is the template every server here follows, as testcontainers' ``DbContainer.start()``:
    its log directory and a private work directory, handed to the user the server runs as ->
    :meth:`_configure` (its files, its data directory) -> launch and wait until a real probe answers
    (:class:`Launched`) -> :meth:`_started`. ``close()`` also runs when ``start()`` fails half-way, so
    nothing it had already started outlives the error. Setting ``workdir`` marks the directory as this
    process's (:func:`logbench.base.cleanup.claim`), so that what a killed study leaves there is found and
    removed by its guardian or the next study.
    """

    workdir_prefix = "logbench-"
    private_dirs: tuple[str, ...] = ()  # made (mode 0700) in the work directory before _configure
    log_dir: Path
    # The server opens host paths itself (a local process), so every directory above its log directory
    # must let its user in; a container gets its directories as bind mounts and needs no such check.
    opens_host_paths = True
    _workdir: Path | None = None

    @property
    def workdir(self) -> Path | None:
        return self._workdir

    @workdir.setter
    def workdir(self, value: Path | None) -> None:
        self._workdir = None if value is None else Path(value)
        if self._workdir is not None:
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
        user = self._server_user()
        self.log_dir.mkdir(parents=True, exist_ok=True)
        blocked = unreachable_parent(self.log_dir, user) if self.opens_host_paths else None
        if blocked is not None:
            raise UnreachableLogDir(
                f"the log directory {self.log_dir} is not reachable by the server's user {user.name!r}: it cannot "
                f"enter {blocked} (mode {oct(blocked.stat().st_mode & 0o777)}); use a directory under "
                f"{paths.scratch_root()} or /dev/shm")
        self.workdir = Path(tempfile.mkdtemp(prefix=self.workdir_prefix, dir=paths.scratch_root()))
        for d in self.private_dirs:
            (self.workdir / d).mkdir(mode=0o700)
        hand_over(self.workdir, user)
        hand_over(self.log_dir, user)
        self._configure()
        self._launch_ready()
        self._started()

    def _server_user(self) -> RunUser:
        """Who the server runs as (owns its directories when we are root)."""
        raise NotImplementedError

    def _configure(self) -> None:
        """The server's files in the work directory: configuration, data directory."""

    def _started(self) -> None:
        """After the first start answered (e.g. read the server's initial variables)."""

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


class OwnDirectories:
    """A server whose data and socket directories are its work directory's ``data`` and ``sock``: the local
    servers, and the counted containers (whose bind mounts they are)."""

    @property
    def datadir(self) -> Path:
        return self._wd / "data"

    @property
    def socket_dir(self) -> Path:
        return self._wd / "sock"


class LocalDaemon(ChildProcess, Managed):
    """A server we run as a child process (``proc``) in a private work directory (``workdir``), as ``user``."""

    user: RunUser

    def _server_user(self) -> RunUser:
        return self.user

    def close(self) -> None:
        try:
            self._stop_proc()
        finally:
            self._remove_workdir()


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

    Not needed for a correct CPU reading (:func:`tree_cpu_seconds` is consistent at any moment),
    but it puts the CPU a run's backends spend on exiting into that run rather than the next.
    An exiting child whose command line can no longer be read counts as not settled.
    """
    def settled() -> bool:
        try:
            kids = psutil.Process(pid).children()
        except psutil.NoSuchProcess:
            return True
        for k in kids:
            try:
                if k.status() == psutil.STATUS_ZOMBIE or not k.cmdline() or transient(k):
                    return False
            except psutil.ZombieProcess:
                return False
            except psutil.NoSuchProcess:
                continue
        return True

    return wait_until(settled, timeout=timeout, interval=0.02)


def _tree_times(pid: int) -> tuple[dict[int, float], float] | None:
    """Per process of the tree its reaped children's CPU seconds, and the tree's total; None when a
    descendant vanished while being read. Raises NoSuchProcess when ``pid`` itself is gone."""
    root = psutil.Process(pid)
    kids = root.children(recursive=True)
    t = root.cpu_times()
    reaped = {pid: t.children_user + t.children_system}
    total = t.user + t.system + reaped[pid]
    for p in kids:
        try:
            c = p.cpu_times()  # a zombie still reports its final times
        except psutil.NoSuchProcess:
            return None
        reaped[p.pid] = c.children_user + c.children_system
        total += c.user + c.system + reaped[p.pid]
    return reaped, total


def child_ctx_switches(pid: int, which: Callable[[psutil.Process], bool]) -> tuple[float, float]:
    """(voluntary, involuntary) context switches so far of the one child of ``pid`` that ``which`` picks (as
    child_cpu_seconds); NaNs when there is none or it is gone."""
    try:
        for child in psutil.Process(pid).children():
            try:
                if which(child):
                    c = child.num_ctx_switches()
                    return float(c.voluntary), float(c.involuntary)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
    except psutil.NoSuchProcess:
        pass
    return float("nan"), float("nan")


def child_cpu_seconds(pid: int, which: Callable[[psutil.Process], bool]) -> float:
    """User+system CPU of the one child of ``pid`` that ``which`` picks (a long-lived server process such as
    PostgreSQL's logging collector); NaN when there is none or it is gone."""
    try:
        for child in psutil.Process(pid).children():
            try:
                if which(child):
                    t = child.cpu_times()
                    return t.user + t.system
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
    except psutil.NoSuchProcess:
        pass
    return float("nan")


def tree_cpu_seconds(pid: int, attempts: int = 50) -> float:
    """User+system CPU of a process, its descendants, and every descendant they reaped: a cumulative
    counter, so the difference of two calls is what the server spent between them.

    A backend's CPU moves from its own /proc entry into its parent's children times when the
    parent reaps it. Read in that moment, it would be in neither: the old one-pass reading lost a
    whole backend's CPU that way (0.02 s for a 4 s run at thousands of tps). A reading is
    therefore kept only when the next one finds the same processes with the same reaped times;
    NaN (unknown, not wrong) when the tree never held still or is gone.
    """
    try:
        last = _tree_times(pid)
        for _ in range(attempts):
            now = _tree_times(pid)
            if now is not None and last is not None and now[0] == last[0]:
                return now[1]
            last = now
    except psutil.NoSuchProcess:
        pass
    return float("nan")



def server_memory_mb(pid: int) -> dict[str, float]:
    """A server's process tree's memory: the sum of PSS (shared pages split among the processes sharing
    them) and of USS (pages private to each process), MB, and its process count."""
    pss = uss = 0
    procs = [psutil.Process(pid)]
    with contextlib.suppress(psutil.NoSuchProcess):
        procs += procs[0].children(recursive=True)
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            m = p.memory_full_info()
            pss, uss = pss + m.pss, uss + m.uss
    return {"server_pss_mb": pss / 2**20, "server_uss_mb": uss / 2**20, "server_processes": len(procs)}


class HostPids:
    """This host's processes by their pids here: what a study polls and signals of a local server (a container's
    are :class:`logbench.servers.counted_container.NamespacePids`, with the same methods)."""

    @staticmethod
    def children(pid: int) -> set[int]:
        return {c.pid for c in psutil.Process(pid).children()}

    @staticmethod
    def exists(pid: int) -> bool:
        """Running, not exited: a zombie has closed its files and written what it writes at exit; an orphan's
        stays one until this host's init reaps it, which here took 1.2-1.7 s (a server's logging collector,
        orphaned when the postmaster exits first)."""
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    @staticmethod
    def kill(pid: int, sig: int) -> None:
        os.kill(pid, sig)

    @staticmethod
    def host(pid: int) -> int:
        """The process in this host's /proc: itself."""
        return pid

    @staticmethod
    def thread(host_tid: int) -> int:
        """A thread by its id in this pid space: itself."""
        return host_tid


HOST_PIDS = HostPids()
