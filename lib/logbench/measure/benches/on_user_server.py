"""What a bench on a server the user names reports the same way for either engine (studies 12 and 13)."""

from __future__ import annotations

import math

from ..bench import Bench
from ...servers import process
from ...base.settings import Configuration


class OnUserServerBench(Bench):
    """A server the study did not start: its CPU is read only where its process is on this host (``server_pid``
    None elsewhere), it has no logging collector of ours, its settings are what the switch asked for (the switcher
    read them back before the run), and its log was read as ``log.how`` says (on this host, through SQL) or not."""

    backend = "own"
    server_process: int | None = None  # the server's pid on this host, None for a remote one

    def apply(self, configuration: Configuration):
        """Switch the user's server by its switcher (``self.switcher``), each real switch kept in ``self.switches``
        as (kind, seconds until the server reported it)."""
        sw = self.switcher.apply(configuration.settings)
        if sw.kind != "none":
            self.switches.append((sw.kind, sw.seconds))
        return sw

    def server_cpu(self) -> float:
        pid = self.server_pid()
        return process.tree_cpu_seconds(pid) if pid is not None else math.nan

    def server_pid(self) -> int | None:
        return self.server_process

    def logger_cpu(self) -> float:
        return 0.0

    def effective_settings(self, configuration: Configuration) -> dict:
        return configuration.settings.as_dict()

    def log_dir_fs(self) -> str:
        return self.log.how or "unread"
