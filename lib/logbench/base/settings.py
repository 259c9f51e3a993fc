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

import difflib
import re
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from .errors import ParameterError, SettingError

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
class RecordShape:
    """One kind of log record a configuration must produce: how its line is recognised, and how many are due.

    A line is such a record when it holds every one of ``markers`` and none of ``absent``. The number
    due is ``per_statement`` per statement the workload sent, ``per_transaction`` per transaction,
    ``per_connection`` per client connection and ``per_run`` once per run (the load tool's own set-up
    statements, where they cannot be told apart by their text).
    """

    kind: str  # what the record is, e.g. "duration+statement", "statement", "duration", "slow entry"
    markers: tuple[bytes, ...]
    absent: tuple[bytes, ...] = ()
    per_statement: float = 0.0
    per_transaction: float = 0.0
    per_connection: float = 0.0
    per_run: float = 0.0

    def matches(self, line: bytes) -> bool:
        return all(m in line for m in self.markers) and not any(a in line for a in self.absent)

    def expected(self, *, statements: int = 0, transactions: int = 0, connections: int = 0, runs: int = 1) -> float:
        return (self.per_statement * statements + self.per_transaction * transactions
                + self.per_connection * connections + self.per_run * runs)

    def as_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "markers": [m.decode() for m in self.markers],
                "absent": [a.decode() for a in self.absent], "per_statement": self.per_statement,
                "per_transaction": self.per_transaction, "per_connection": self.per_connection,
                "per_run": self.per_run}


@dataclass(frozen=True)
class HeldSessions:
    """Sessions a configuration holds open on the server while each of its runs measures (study 08: the post's
    "active but idle" connections): ``kind`` "sleep" (each running ``pg_sleep``), "idle" (connected, no query) or
    "none" (no session, the sessions' evidence still recorded: the sweep's baseline); ``count`` sessions, or None:
    every connection slot the working clients leave (:func:`logbench.workloads.sessions.count`). Opened before the
    run, counted, closed after it, by the shared PostgreSQL bench."""

    KINDS = ("none", "sleep", "idle")

    kind: str
    count: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in self.KINDS:
            raise ParameterError("sessions.kind", self.kind, self.KINDS)
        if self.count is not None and (isinstance(self.count, bool) or not isinstance(self.count, int)
                                       or self.count < 0):
            raise ParameterError("sessions.count", self.count, "None (every free slot) or a whole number ≥ 0")

    def as_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "count": self.count}


@dataclass(frozen=True)
class Configuration:
    """A named point of a study: the settings under test plus how to read its log, and the sessions it holds open
    while it runs, where it declares some."""

    name: str
    settings: Settings
    # Where this configuration's statement records land; names from servers.destinations.
    destinations: tuple[str, ...] = ()
    # What each of those destinations must receive (every destination the same records).
    records: tuple[RecordShape, ...] = ()
    # Sessions held open during each of its runs; None: none, and no evidence of them recorded.
    sessions: HeldSessions | None = None

    def expected_records(self, *, statements: int = 0, transactions: int = 0, connections: int = 0,
                         runs: int = 1) -> int:
        """Records one destination must receive for a run of this many statements, transactions, connections
        (``runs`` 0: seconds inside a load, where the load tool's own set-up statements are not)."""
        return int(round(sum(r.expected(statements=statements, transactions=transactions, connections=connections,
                                        runs=runs) for r in self.records)))

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "settings": self.settings.as_dict(), "destinations": list(self.destinations),
                "records": [r.as_dict() for r in self.records],
                **({"sessions": self.sessions.as_dict()} if self.sessions is not None else {})}


# The A/A control: the baseline measured again under another name. It logs nothing a baseline does
# not, so its ratio to the baseline must be 1; its CI's width is the study's resolution.
AA_SUFFIX = "_again"


def aa_name(baseline: str) -> str:
    return f"{baseline}{AA_SUFFIX}"


def is_aa(configuration: object) -> bool:
    """An A/A control row (``<baseline>_again``): the baseline again, never a logging configuration."""
    return str(configuration).endswith(AA_SUFFIX)


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


# --- MariaDB / MySQL ----------------------------------------------------------------------------

# Options the server class sets itself (where the server listens, where its files are); a study
# that set them would break the private-socket / loopback-only / private-directory guarantee.
MARIADB_MANAGED = frozenset({
    "datadir", "socket", "port", "bind_address", "skip_networking", "pid_file", "log_error", "tmpdir",
    "user", "basedir", "mysqlx", "mysqlx_port", "mysqlx_socket", "mysqlx_bind_address", "admin_address",
    "log_bin", "skip_log_bin", "skip_grant_tables", "init_file",
})

_BOOL_WORDS = ("on", "off", "1", "0", "true", "false", "yes", "no")
_NUMBER = r"-?\d+(\.\d+)?[kKmMgGtT]?"


@dataclass(frozen=True)
class MariadbOption:
    """One server variable as ``mariadbd --verbose --help`` describes it."""

    name: str  # underscore form, as SHOW VARIABLES spells it
    kind: str  # 'bool', 'number', 'string' (from the option's ``--name``, ``=#``, ``=name`` form)
    default: str  # the value the binary would use with --no-defaults
    choices: tuple[str, ...] = ()  # 'One of:' enumerations and 'Any combination of:' sets
    combination: bool = False  # True: a comma-separated subset of choices (log_output)


def _norm(name: str) -> str:
    return name.strip().replace("-", "_")


@lru_cache(maxsize=8)
def mariadb_catalog(mariadbd_binary: str) -> dict[str, MariadbOption]:
    """The server's own list of variables with kinds and defaults, read without starting a server.

    Works for MariaDB (``mariadbd``) and MySQL 8 (``mysqld``): both print a
    ``Variables (--variable-name=value)`` table after the option descriptions.
    """
    try:
        r = subprocess.run([mariadbd_binary, "--no-defaults", "--verbose", "--help"],
                           capture_output=True, text=True, timeout=120)
    except OSError as e:
        raise SettingError(f"cannot read the settings catalog from {mariadbd_binary!r}: {e}") from e
    out = r.stdout
    if "Variables (--variable-name=value)" not in out:
        raise SettingError(f"`{mariadbd_binary} --no-defaults --verbose --help` printed no variable table "
                           f"(exit {r.returncode}): {(r.stderr or out)[-800:]}")
    head, _, table = out.partition("Variables (--variable-name=value)")
    # Option descriptions: '  --name[=#]  text' lines, continued by deeper-indented lines.
    kinds: dict[str, tuple[str, tuple[str, ...], bool]] = {}
    current, desc = None, []

    def flush():
        if current is None:
            return
        name, form = current
        text = " ".join(desc)
        choices: tuple[str, ...] = ()
        m = re.search(r"(One of|Any combination of): (.*?)(?:\.\s|\.?$)", text)
        if m and form != "#":
            toks = [t.strip() for t in m.group(2).split(",")]
            # Only a clean list is enforced: a description we misread must not reject a valid value.
            if all(re.fullmatch(r"[A-Za-z0-9_.]+", t) for t in toks):
                choices = tuple(toks)
        kinds[name] = ({"": "bool", "#": "number"}.get(form, "string"), choices,
                       bool(m) and m.group(1) == "Any combination of")

    for line in head.splitlines():
        m = re.match(r"^  (?:-\w, )?--([a-z0-9][a-z0-9_-]*)(\[?=(#|name)\]?)?\s*(.*)$", line)
        if m:
            flush()
            current, desc = (_norm(m.group(1)), m.group(3) or ""), [m.group(4)]
        elif current is not None and line.startswith("      "):
            desc.append(line.strip())
    flush()
    catalog: dict[str, MariadbOption] = {}
    started = False
    for line in table.splitlines():
        if line.startswith("-----"):
            started = True
            continue
        if not started:
            continue
        if not line.strip():
            break
        name, _, default = line.partition(" ")
        name = _norm(name)
        kind, choices, combination = kinds.get(name, ("string", (), False))
        if default.strip() in ("TRUE", "FALSE") and name not in kinds:
            kind = "bool"
        catalog[name] = MariadbOption(name, kind, default.strip(), choices, combination)
    return catalog


def mariadb_flavor(mariadbd_binary: str | Path) -> tuple[str, str]:
    """('mariadb' or 'mysql', version) from ``--version``; the code paths differ where the two servers do."""
    try:
        out = subprocess.run([str(mariadbd_binary), "--version"], capture_output=True, text=True, timeout=60).stdout
    except OSError as e:
        raise SettingError(f"cannot run {mariadbd_binary!r} --version: {e}") from e
    m = re.search(r"Ver\s+(\d+\.\d+\.\d+)(\S*)", out)
    version = m.group(1) if m else ""
    return ("mariadb" if "mariadb" in out.lower() else "mysql"), version


def validate_mariadb(settings: Settings, mariadbd_binary: str | Path) -> None:
    """Raise :class:`SettingError` for any name the server does not know, or a value of the wrong kind.

    Names may be given with '-' or '_' (the server takes both); names and kinds
    come from ``mariadbd --no-defaults --verbose --help``, so no server is needed.
    """
    if settings.engine != "mariadb":
        raise SettingError(f"settings for engine {settings.engine!r} handed to a MariaDB/MySQL server; allowed: 'mariadb'")
    catalog = mariadb_catalog(str(mariadbd_binary))
    managed = [n for n in settings if _norm(n) in MARIADB_MANAGED]
    if managed:
        raise SettingError(
            f"setting(s) {', '.join(map(repr, managed))} are managed by logbench's server class "
            "(private socket, loopback only, private directory); leave them out")
    unknown = [n for n in settings if _norm(n) not in catalog]
    if unknown:
        hints = []
        for n in unknown:
            close = difflib.get_close_matches(_norm(n), list(catalog), n=3, cutoff=0.75)
            hints.append(f"{n!r}" + (f" (did you mean {', '.join(close)}?)" if close else ""))
        raise SettingError(
            f"{Path(str(mariadbd_binary)).name} does not know the setting(s) {'; '.join(hints)}; allowed: any "
            f"variable listed by `{mariadbd_binary} --no-defaults --verbose --help` "
            f"(e.g. {', '.join(sorted(n for n in catalog if n.startswith(('slow_', 'long_q', 'log_output', 'general_log'))))})")
    bad = []
    for n, v in settings.items():
        opt = catalog[_norm(n)]
        if opt.kind == "bool" and v.lower() not in _BOOL_WORDS:
            bad.append(f"{n}={v!r} (allowed: ON or OFF)")
        elif opt.kind == "number" and not re.fullmatch(_NUMBER, v):
            bad.append(f"{n}={v!r} (allowed: a number, optionally with a K/M/G/T suffix)")
        elif opt.choices and opt.combination:
            allowed = {c.lower() for c in opt.choices} | {"all"}
            if not v or any(p.strip().lower() not in allowed for p in v.split(",")):
                bad.append(f"{n}={v!r} (allowed: any comma-separated combination of {', '.join(opt.choices)})")
        elif opt.choices and not v.isdigit() and v.lower() not in {c.lower() for c in opt.choices}:
            bad.append(f"{n}={v!r} (allowed: {', '.join(opt.choices)})")
    if bad:
        raise SettingError("invalid value(s) for the server: " + "; ".join(bad))
