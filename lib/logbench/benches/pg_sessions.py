"""Moved to :mod:`logbench.studies.pg_idle_connections.bench` (issue 24: a study's bench lives in its package);
this name stays importable for older code and for committed notebook 08's text, which names it."""

from ..studies.pg_idle_connections.bench import (KINDS, MARGIN, OPENERS, SLEEP_S, SessionPool, SessionsBench,
                                                 server_memory_mb)

__all__ = ["KINDS", "MARGIN", "OPENERS", "SLEEP_S", "SessionPool", "SessionsBench", "server_memory_mb"]
