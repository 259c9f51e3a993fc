"""A separate network host for the remote-syslog destinations: a network namespace of our own.

The namespace gets one end of a veth pair and an address from 198.18.0.0/15,
the range RFC 2544 sets aside for benchmark networks, so it cannot collide with
any real network this machine is on; the other end stays in the root namespace.
Traffic between them never leaves this machine.
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from ..base import cleanup, paths
from ..base.cleanup import leftover_namespaces  # noqa: F401  (the tests check here that none is left)
from ..base.errors import LogbenchError, ToolError
from . import process

PREFIX = cleanup.NAMESPACE_PREFIX


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and r.returncode != 0:
        raise ToolError(f"`ip {' '.join(args)}` failed: {r.stderr.strip()}")
    return r


@dataclass
class NetworkHost:
    """A network namespace with its own address; a context manager that removes it."""

    name: str = ""
    host_address: str = ""
    address: str = ""

    def __enter__(self) -> "NetworkHost":
        if not process.is_root():
            raise LogbenchError("the remote syslog host needs root (it is a network namespace of its own)")
        tag = uuid.uuid4().hex[:6]
        self.name = PREFIX + tag
        # One /30 of the /15 per study, picked by the tag, so two studies at once do not collide.
        base = (int(tag, 16) % 32768) * 4
        prefix = f"198.{18 + base // 65536}.{(base // 256) % 256}"
        self.host_address, self.address = f"{prefix}.{base % 256 + 1}", f"{prefix}.{base % 256 + 2}"
        veth, peer = cleanup.host_link(self.name), f"lbp{tag}"
        try:
            # A namespace has no directory of its own: this record names its owner, so that a killed
            # study's namespace is found and deleted (logbench.base.cleanup).
            self._record().mkdir()
            cleanup.claim(self._record())
            _ip("netns", "add", self.name)
            _ip("link", "add", veth, "type", "veth", "peer", "name", peer)
            _ip("link", "set", peer, "netns", self.name)
            _ip("addr", "add", f"{self.host_address}/30", "dev", veth)
            _ip("link", "set", veth, "up")
            _ip("-n", self.name, "addr", "add", f"{self.address}/30", "dev", peer)
            _ip("-n", self.name, "link", "set", peer, "up")
            _ip("-n", self.name, "link", "set", "lo", "up")
        except BaseException:
            self.close()
            raise
        return self

    def _record(self) -> Path:
        return paths.scratch_root() / (cleanup.NETNS_PREFIX + self.name)

    def exec_prefix(self) -> list[str]:
        return ["ip", "netns", "exec", self.name]

    def close(self) -> None:
        if not self.name:
            return
        cleanup.remove_namespace(self.name)
        shutil.rmtree(self._record(), ignore_errors=True)
        self.name = ""

    def __exit__(self, *exc) -> None:
        self.close()
