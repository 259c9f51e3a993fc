"""Private rsyslog daemons: the local one the server writes to, and the remote log host.

The local daemon listens on a unix socket of the study's own (the server sees it
as ``/dev/log`` in its mount namespace) and routes by facility, so that switching
between the syslog destinations is a PostgreSQL reload, not a daemon restart:

* ``local0`` -> a file on this host (the post's ``local0.* /var/tmp/postgres.log``)
* ``local1`` -> forwarded over UDP to the remote host (the post's ``local0.* @host``)
* ``local2`` -> forwarded over TCP to the remote host (asked for in the post's comments)

The remote daemon runs in a network namespace of its own (:mod:`.netns`) and
writes what it receives to a file. Rate limiting of the inputs is a parameter:
off, as current rsyslog ships, or on with the interval/burst older
distributions shipped (5 s / 200 messages).
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..base import paths
from ..base.errors import ServerStartError
from . import process
from .netns import NetworkHost

FACILITY_FILE, FACILITY_UDP, FACILITY_TCP = "local0", "local1", "local2"
REMOTE_PORT = 514
# Older rsyslog (and the distributions of the post's time) rate-limited the local socket by default.
RATE_LIMIT_ON = {"interval": 5, "burst": 200}


def rsyslogd_binary() -> str:
    found = shutil.which("rsyslogd") or ("/usr/sbin/rsyslogd" if Path("/usr/sbin/rsyslogd").exists() else None)
    if not found:
        raise ServerStartError("rsyslogd not found; the README's set-up installs Debian's rsyslog package")
    return found


def _rate(rate_limit: bool) -> str:
    if rate_limit:
        return f'RateLimit.Interval="{RATE_LIMIT_ON["interval"]}" RateLimit.Burst="{RATE_LIMIT_ON["burst"]}"'
    return 'RateLimit.Interval="0"'


@dataclass(frozen=True)
class SyslogFiles:
    local: Path
    remote: Path | None


class Rsyslog(process.ChildProcess):
    """One rsyslogd with a config of ours, in the foreground, optionally inside a network namespace.

    Its work directory is its owner's (:class:`SyslogPair`'s), so it uses the start template's
    launch-and-probe half only: its config checked (``-N1``) -> launched -> ready when its socket
    exists and, for a log host, a TCP client gets in."""

    def __init__(self, config: str, workdir: Path, *, netns: NetworkHost | None = None, ready_tcp: tuple[str, int] | None = None,
                 ready_socket: Path | None = None, name: str = "rsyslog", launch_prefix: tuple[str, ...] = ()):
        self.config, self.workdir, self.netns, self.name = config, workdir, netns, name
        self.launch_prefix = tuple(launch_prefix)  # a counting tool it runs under (logbench.counting)
        self.ready_tcp, self.ready_socket = ready_tcp, ready_socket
        self.proc: subprocess.Popen | None = None

    @property
    def what(self) -> str:
        return self.name

    @property
    def log(self) -> Path:
        return self.workdir / f"{self.name}.stderr"

    @property
    def conf(self) -> Path:
        return self.workdir / f"{self.name}.conf"

    def start(self, timeout: float = 20.0) -> None:
        self.start_timeout = timeout
        self.conf.write_text(self.config)
        check = subprocess.run([rsyslogd_binary(), "-N1", "-f", str(self.conf)], capture_output=True, text=True,
                               timeout=30)
        if check.returncode != 0:
            raise ServerStartError(f"rsyslogd rejected the {self.name} config:\n{check.stdout}{check.stderr}")
        self._launch_ready()

    def _launch(self) -> None:
        argv = [*self.launch_prefix, rsyslogd_binary(), "-n", "-f", str(self.conf), "-i",
                str(self.workdir / f"{self.name}.pid")]
        if self.netns is not None:
            argv = self.netns.exec_prefix() + argv
        self.proc = process.spawn(argv, self.log, death_signal=signal.SIGTERM)

    def _probe(self) -> bool:
        if self.ready_socket is not None and not self.ready_socket.exists():
            return False
        if self.ready_tcp is not None:
            try:
                with socket.create_connection(self.ready_tcp, timeout=1):
                    return True
            except OSError:
                return False
        return True

    def _log_tail(self) -> str:
        return process.tail(self.log)

    def _stop_proc(self) -> None:
        process.stop(self.proc, [(signal.SIGTERM, 10.0)])
        self.proc = None

    def stop(self) -> None:
        self._stop_proc()

    def cpu_seconds(self) -> float:
        return process.tree_cpu_seconds(self.proc.pid) if self.proc else float("nan")


class NamespaceLogHost:
    """The remote log host as a network namespace of our own running rsyslogd."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.netns: NetworkHost | None = None
        self.daemon: Rsyslog | None = None
        self.file = workdir / "remote" / "syslog-remote.log"
        self.address = ""

    def start(self) -> None:
        (self.workdir / "remote").mkdir(exist_ok=True)
        self.netns = NetworkHost().__enter__()
        self.address = self.netns.address
        self.daemon = Rsyslog(remote_config(self.address, self.file, self.workdir / "spool-remote"),
                              self.workdir, netns=self.netns, ready_tcp=(self.address, REMOTE_PORT), name="rsyslog-remote")
        self.daemon.start()

    def cpu_seconds(self) -> float:
        return self.daemon.cpu_seconds() if self.daemon else 0.0

    def close(self) -> None:
        try:
            if self.daemon is not None:
                self.daemon.stop()
        finally:
            if self.netns is not None:
                self.netns.close()
                self.netns = None


# RSYSLOG_FileFormat with the time each message reached this daemon, in UTC, to the microsecond: a record is
# placed in its switchback window by when it arrived (the forwarded format carries only the sender's whole
# second), and the daemons' clocks read like PostgreSQL's %m (log_timezone = UTC) whatever the host's zone.
FILE_TEMPLATE = ('template(name="logbench" type="string" string="%timegenerated:::date-utc,date-rfc3339% %HOSTNAME% '
                 '%syslogtag%%msg:::sp-if-no-1st-sp%%msg:::drop-last-lf%\\n")\n')


def remote_config(address: str, file: Path | str, spool: Path | str) -> str:
    """The log host's rsyslog: UDP and TCP inputs on ``address``, everything to ``file``.

    No rate limit, whatever the database host's socket has (imuxsock's per-process limit, which the post's
    distributions shipped on, is the local daemon's): rsyslog's network inputs never had one by default (imudp's and imtcp's RateLimit.Interval default to 0), so
    the log host takes whatever the database host's daemon forwards. A limit here too throttled the one forwarding
    sender as a whole: 200 messages per 5 s for all backends together, spent by each arm's warm-up (post000's
    committed run before this: 0 or 100 remote records a run where the local file kept 101 per backend)."""
    return (
        f'global(workDirectory="{spool}" processInternalMessages="on")\n' + FILE_TEMPLATE +
        'module(load="imudp")\nmodule(load="imtcp")\n'
        f'input(type="imudp" address="{address}" port="{REMOTE_PORT}" {_rate(False)})\n'
        f'input(type="imtcp" address="{address}" port="{REMOTE_PORT}" {_rate(False)})\n'
        f'*.* action(type="omfile" file="{file}" template="logbench")\n'
    )


class SyslogPair(process.Managed):
    """The local daemon and, if wanted, the remote log host; a context manager.

    ``remote_host`` builds the log host from its work directory: a network
    namespace by default; the container backend passes a container on a Docker network.
    """

    def __init__(self, *, remote: bool, rate_limit: bool, log_dir: Path, remote_host=NamespaceLogHost,
                 local_prefix: tuple[str, ...] = ()):
        self.remote_wanted, self.rate_limit, self.log_dir = remote, rate_limit, Path(log_dir)
        self.local_prefix = tuple(local_prefix)  # a counting tool the local daemon runs under
        self.remote_host_factory = remote_host
        self.workdir: Path | None = None
        self.host = None
        self.local: Rsyslog | None = None

    @property
    def socket(self) -> Path:
        return self.workdir / "sock" / "log"

    @property
    def files(self) -> SyslogFiles:
        return SyslogFiles(self.log_dir / "syslog-local.log", self.host.file if self.host is not None else None)

    def start(self) -> None:
        self.workdir = Path(tempfile.mkdtemp(prefix="logbench-syslog-", dir=paths.scratch_root()))
        for d in ("sock", "spool-local", "spool-remote"):
            (self.workdir / d).mkdir()
        self.workdir.chmod(0o755)
        (self.workdir / "sock").chmod(0o755)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        forward = ""
        if self.remote_wanted:
            self.host = self.remote_host_factory(self.workdir)
            self.host.start()
            target = self.host.address
            forward = (
                f'{FACILITY_UDP}.* action(type="omfwd" target="{target}" port="{REMOTE_PORT}" protocol="udp")\n'
                f'{FACILITY_TCP}.* action(type="omfwd" target="{target}" port="{REMOTE_PORT}" protocol="tcp")\n'
            )
        self.local = Rsyslog(self._local_config(forward), self.workdir, ready_socket=self.socket, name="rsyslog-local",
                             launch_prefix=self.local_prefix)
        self.local.start()

    def _local_config(self, forward: str) -> str:
        return (
            f'global(workDirectory="{self.workdir / "spool-local"}")\n' + FILE_TEMPLATE +
            'module(load="imuxsock" SysSock.Use="off")\n'
            f'input(type="imuxsock" Socket="{self.socket}" CreatePath="on" {_rate(self.rate_limit)})\n'
            f'{FACILITY_FILE}.* action(type="omfile" file="{self.files.local}" template="logbench")\n'
            + forward
        )

    def cpu_seconds(self) -> float:
        return sum(self.cpu_parts().values())

    def cpu_parts(self) -> dict[str, float]:
        """Each daemon's CPU seconds: the remote log host shares this machine's cores (a namespace, not another
        machine), so what it costs is kept apart from the local daemon's."""
        return {name: d.cpu_seconds() for name, d in (("local", self.local), ("remote", self.host)) if d is not None}

    def close(self) -> None:
        try:
            if self.local is not None:
                self.local.stop()
        finally:
            try:
                if self.host is not None:
                    self.host.close()
                    self.host = None
            finally:
                self._remove_workdir()

