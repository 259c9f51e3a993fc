"""Where a study's server runs (the machine's binaries or a container), and on what file system it logs.

A study's ``define()`` checks the backend and image *names* only (:func:`check_backend`,
:func:`check_image`): it asks no Docker engine anything. Which backend 'auto' means, and whether an
image is there, is decided when the study runs (:func:`resolve_backend`, each engine's ``resolved()``),
before any server starts, and recorded with its runs.
"""

from __future__ import annotations

import re
from pathlib import Path

import psutil

from ...base import params

# "auto": the container when a Docker engine answers, else the machine's binaries.
BACKENDS = ("auto", "local", "container")

# An image reference as Docker parses it: [registry[:port]/]path[:tag][@digest], lower-case path components.
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE = re.compile(rf"^(?:[a-zA-Z0-9.-]+(?::[0-9]+)?/)?{_COMPONENT}(?:/{_COMPONENT})*"
                    r"(?::[\w][\w.-]{0,127})?(?:@sha256:[0-9a-f]{64})?$")


def check_backend(backend: str) -> str:
    return params.choice("backend", backend, BACKENDS)


def check_image(image: object) -> str | None:
    """The image name as given (None for the default image), refused unless Docker could parse it."""
    if image is None or image == "":
        return None
    if not isinstance(image, str) or not _IMAGE.match(image):
        raise params.ParameterError("image", image, "None (the default image), or an image name such as "
                                    "'postgres:15' or 'registry.example:5000/team/mariadb:10.11'")
    return image


def resolve_backend(backend: str) -> str:
    """'auto' -> 'container' when a Docker engine answers, else 'local'; 'container' needs an engine.
    Asks the engine: call it when the study runs, not when it is defined."""
    from ...servers.containers import engine_answers

    check_backend(backend)
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
