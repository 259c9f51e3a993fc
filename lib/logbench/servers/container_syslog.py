"""The remote log host of the container backend: an rsyslog container on a Docker network the study creates
(the namespace host's counterpart, :class:`logbench.servers.syslog.NamespaceLogHost`)."""

from __future__ import annotations

import socket
import uuid
from pathlib import Path

# The engine and image helpers through their module (containers._docker, not a copy of the name), so whatever
# replaces one there (a test's stand-in engine) is what this server uses too, as when it lived in containers.py.
from . import containers, process
from .syslog import REMOTE_PORT, remote_config


class ContainerLogHost(process.Launched):
    """The remote log host as an rsyslog container on a study-created Docker network.

    Its files are in its owner's (:class:`~logbench.servers.syslog.SyslogPair`'s) work directory,
    so it uses the start template's launch-and-probe half: network and config -> container -> ready
    when a TCP client gets in."""

    what = "the rsyslog container"
    start_timeout = 30.0

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.file = workdir / "remote" / "syslog-remote.log"
        self.address = ""
        self.network = None
        self.container = None
        self._host_pid = 0

    def start(self) -> None:
        import docker

        (self.workdir / "remote").mkdir(exist_ok=True)
        (self.workdir / "remote-conf").mkdir(exist_ok=True)
        self.tag = uuid.uuid4().hex[:8]
        # A /24 of the benchmarking range per study; 198.19.0.0/16 keeps clear of the namespace hosts.
        subnet = f"198.19.{int(self.tag[:4], 16) % 256}.0/24"
        ipam = docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(subnet=subnet)])
        self.network = containers._docker().networks.create(f"logbench-{self.tag}", driver="bridge", ipam=ipam,
                                                 labels={containers.LABEL: self.tag})
        (self.workdir / "remote-conf" / "rsyslog.conf").write_text(
            remote_config("0.0.0.0", "/var/log/remote/syslog-remote.log", "/var/spool/rsyslog"))
        self._launch_ready()

    def _launch(self) -> None:
        self.container = (
            containers._testcontainers()(containers.resolve_image("rsyslog"))
            .with_name(f"logbench-rsyslog-{self.tag}")
            .with_volume_mapping(str(self.workdir / "remote"), "/var/log/remote", "rw")
            .with_volume_mapping(str(self.workdir / "remote-conf" / "rsyslog.conf"),
                                 "/etc/rsyslog-logbench/rsyslog.conf", "ro")
            .with_kwargs(labels={containers.LABEL: self.tag}, network=self.network.name)
        )
        self.container.start()
        wrapped = self.container.get_wrapped_container()
        wrapped.reload()
        self._host_pid = int(wrapped.attrs["State"]["Pid"])
        self.address = wrapped.attrs["NetworkSettings"]["Networks"][self.network.name]["IPAddress"]

    def _probe(self) -> bool:
        try:
            with socket.create_connection((self.address, REMOTE_PORT), timeout=1):
                return True
        except OSError:
            return False

    def running(self) -> bool:
        return self.container is not None and containers._alive(self._host_pid)

    def _log_tail(self) -> str:
        return containers._logs_of(self.container)

    def _stop_proc(self) -> None:
        containers._remove(self.container)
        self.container = None
        self._host_pid = 0

    def cpu_seconds(self) -> float:
        return process.tree_cpu_seconds(self._host_pid) if self.container else 0.0

    def close(self) -> None:
        self._stop_proc()
        if self.network is not None:
            try:
                self.network.remove()
            finally:
                self.network = None
