"""Where a study's server runs (the machine's binaries or a container), and on what file system it logs."""

from __future__ import annotations

from pathlib import Path

import psutil

from .. import params

# "auto": the container when a Docker engine answers, else the machine's binaries.
BACKENDS = ("auto", "local", "container")


def resolve_backend(backend: str) -> str:
    """'auto' -> 'container' when a Docker engine answers, else 'local'; 'container' needs an engine."""
    from ..servers.containers import engine_answers

    params.choice("backend", backend, BACKENDS)
    if backend == "local":
        return backend
    answers = engine_answers()
    if backend == "container" and not answers:
        raise params.ParameterError(
            "backend", backend, "'local', or 'auto'/'container' once a Docker engine answers "
            "(`bash scripts/setup.sh --docker` installs and starts one)")
    return "container" if answers else "local"


def filesystem_of(path: Path) -> str:
    """The type of the file system holding ``path`` (its longest mount point), '' if none matches."""
    best = ("", "")
    for p in psutil.disk_partitions(all=True):
        if str(path).startswith(p.mountpoint) and len(p.mountpoint) > len(best[0]):
            best = (p.mountpoint, p.fstype)
    return best[1]
