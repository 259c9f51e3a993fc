"""The frozen settings value a study hands to a server.

A :class:`Settings` is an ordered, immutable mapping of server setting names to
values, tagged with the engine it is for. It is built once from the notebook's
parameters and flows unchanged to whichever backend starts the server, so the
record of a run can always say exactly what the server was told.

Names are validated against the server's own catalog (for PostgreSQL,
``postgres --describe-config``, which needs no running server) so a typo fails
before the first run, not after an hour of measurements.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from .errors import SettingError

ENGINES = ("postgresql", "mariadb")


def _render(value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


@dataclass(frozen=True)
class Settings(Mapping[str, str]):
    """Immutable ``name -> value`` settings for one engine; values kept as strings."""

    engine: str
    items_: tuple[tuple[str, str], ...] = field(default=())

    @classmethod
    def of(cls, engine: str, values: Mapping[str, object] | None = None) -> "Settings":
        if engine not in ENGINES:
            raise SettingError(f"engine {engine!r} unknown; allowed: {', '.join(ENGINES)}")
        values = dict(values or {})
        return cls(engine, tuple(sorted((str(k), _render(v)) for k, v in values.items())))

    def __getitem__(self, key: str) -> str:
        for k, v in self.items_:
            if k == key:
                return v
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self.items_)

    def __len__(self) -> int:
        return len(self.items_)

    def merged(self, other: Mapping[str, object]) -> "Settings":
        """A new value with ``other`` laid over this one (``other`` wins)."""
        values = dict(self.items_)
        values.update({k: _render(v) for k, v in other.items()})
        return Settings.of(self.engine, values)

    def as_dict(self) -> dict[str, str]:
        return dict(self.items_)


@dataclass(frozen=True)
class Configuration:
    """A named point of a study: the settings under test plus how to read its log."""

    name: str
    settings: Settings
    # Where this configuration's statement records land; names from servers.destinations.
    destinations: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "settings": self.settings.as_dict(), "destinations": list(self.destinations)}


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    context: str  # postmaster = restart needed; sighup/superuser/user = reload or session
    vartype: str
    allowed: str


@lru_cache(maxsize=8)
def postgres_catalog(postgres_binary: str) -> dict[str, CatalogEntry]:
    """PostgreSQL's own list of settings, read without starting a server."""
    try:
        out = subprocess.run(
            [postgres_binary, "--describe-config"], check=True, capture_output=True, text=True, timeout=60
        ).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise SettingError(f"cannot read the settings catalog from {postgres_binary!r}: {e}") from e
    catalog = {}
    for line in out.splitlines():
        cols = line.split("\t")
        if len(cols) < 5:
            continue
        catalog[cols[0]] = CatalogEntry(cols[0], cols[1], cols[3], cols[-1] if len(cols) > 9 else "")
    return catalog


def validate_postgres(settings: Settings, postgres_binary: str | Path) -> None:
    """Raise :class:`SettingError` for any name PostgreSQL does not know or will not take."""
    catalog = postgres_catalog(str(postgres_binary))
    unknown = [n for n in settings if n not in catalog]
    if unknown:
        raise SettingError(
            f"PostgreSQL does not know the setting(s) {', '.join(map(repr, unknown))}; "
            f"allowed: any name listed by `{postgres_binary} --describe-config` "
            f"(e.g. {', '.join(sorted(n for n in catalog if n.startswith('log_'))[:6])}, ...)"
        )
    fixed = [n for n in settings if catalog[n].context == "internal"]
    if fixed:
        raise SettingError(f"setting(s) {', '.join(fixed)} are compiled in (context 'internal') and cannot be set")


def postgres_needs_restart(settings: Settings, postgres_binary: str | Path) -> list[str]:
    """Names whose context is 'postmaster': the catalog's prediction, checked later by pending_restart."""
    catalog = postgres_catalog(str(postgres_binary))
    return [n for n in settings if catalog.get(n) and catalog[n].context == "postmaster"]
