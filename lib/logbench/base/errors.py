"""One exception base for the suite.

Messages say what was wrong *and* what is allowed, so a notebook user can fix a
parameter without reading the source.
"""

from __future__ import annotations

from collections.abc import Iterable


class LogbenchError(Exception):
    """Base of every error logbench raises on purpose."""


class ParameterError(LogbenchError, ValueError):
    """A study parameter is invalid; raised before any server starts."""

    def __init__(self, parameter: str, value: object, allowed: str | Iterable[object]):
        if not isinstance(allowed, str):
            allowed = ", ".join(repr(a) for a in allowed)
        self.parameter = parameter
        self.value = value
        self.allowed = allowed
        super().__init__(f"parameter {parameter!r} got {value!r}; allowed: {allowed}")


class SettingError(LogbenchError, ValueError):
    """A server setting name or value the server itself does not accept."""


class ServerStartError(LogbenchError, RuntimeError):
    """A server did not come up; the message carries the tail of its log."""


class ToolError(LogbenchError, RuntimeError):
    """An external tool (pgbench, rsyslogd, ip, ...) failed or printed something unparseable."""


class EnvironmentMismatch(LogbenchError):
    """Runs from different environments were about to be pooled."""
