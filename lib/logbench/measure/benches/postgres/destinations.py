"""PostgreSQL's logging configurations: the base settings, the destinations a study picks from, and the records
pgbench -S's statements must leave in each (what a run's loss is counted against)."""

from __future__ import annotations

from pathlib import Path

from ....base.errors import SettingError
from ....servers.syslog import FACILITY_FILE, FACILITY_TCP, FACILITY_UDP
from ....base.settings import Configuration, HeldSessions, RecordShape, Settings, validate_postgres
from ....workloads.pgbench import (RECORD_MARKER, RECORDS_PER_CONNECTION, RECORDS_PER_TRANSACTION,
                                  SETUP_STATEMENTS)

# With logging_collector = off every backend writes its lines to the server's own stderr: this file in the
# study's log directory (opened O_APPEND by the launcher), counted as the sink "stderr_direct".
STDERR_DIRECT = "postgresql_direct.log"
STDERR_DIRECT_SINK = "stderr_direct"
DEFAULT_VERSION = "15"  # a container's PostgreSQL unless a version sweep says otherwise

# Post 000's baseline (its pg_settings listing): the collector on, stderr to a file,
# no statement logging; timestamps in UTC rather than 'Poland' so runs compare anywhere.
BASE = {
    "logging_collector": True,
    "log_destination": "stderr",
    "log_filename": "postgresql.log",
    "log_rotation_age": 0,
    "log_rotation_size": 0,
    "log_truncate_on_rotation": False,
    "log_file_mode": "0600",
    "log_line_prefix": "%m %u@%d %p %r ",
    "log_checkpoints": False,
    "log_connections": False,
    "log_disconnections": False,
    "log_duration": False,
    "log_lock_waits": True,
    "log_temp_files": 0,
    "log_autovacuum_min_duration": 0,
    "log_min_messages": "warning",
    "log_min_error_statement": "error",
    "log_statement": "none",
    "log_min_duration_statement": -1,
    "log_timezone": "UTC",
    "syslog_ident": "postgres",
}

_ALL = {"log_min_duration_statement": 0}
# Post 000 changed the prefix for syslog: the daemon already stamps pid and time.
_SYSLOG = {**_ALL, "log_line_prefix": "%u@%d %r "}

# Every statement to one destination: name -> (settings over BASE, sinks that receive the statement records).
DESTINATIONS: dict[str, tuple[dict, tuple[str, ...]]] = {
    "none": ({}, ()),
    "stderr": ({**_ALL, "log_destination": "stderr"}, ("stderr",)),
    "csvlog": ({**_ALL, "log_destination": "csvlog"}, ("csvlog",)),
    "jsonlog": ({**_ALL, "log_destination": "jsonlog"}, ("jsonlog",)),
    "syslog": ({**_SYSLOG, "log_destination": "syslog", "syslog_facility": FACILITY_FILE}, ("syslog",)),
    "remote_syslog_udp": ({**_SYSLOG, "log_destination": "syslog", "syslog_facility": FACILITY_UDP}, ("remote_syslog",)),
    "remote_syslog_tcp": ({**_SYSLOG, "log_destination": "syslog", "syslog_facility": FACILITY_TCP}, ("remote_syslog",)),
    "syslog,csvlog": ({**_SYSLOG, "log_destination": "syslog,csvlog", "syslog_facility": FACILITY_FILE}, ("syslog", "csvlog")),
}

_MARK = RECORD_MARKER.encode()
_STATEMENT_TEXT = (_MARK, b"statement: ", b"parse ", b"bind ", b"execute ")


# Post 000's PostgreSQL 9.2.4 wrote the same records per prepared statement as 15 does, so counting two per
# transaction is the post's shape too: in 9.2 (and 9.3) src/backend/tcop/postgres.c, exec_bind_message and
# exec_execute_message each call check_log_duration, which returns 2 ("log the statement") whenever
# log_min_duration_statement = 0 and log_statement did not log it already, and each then logs
# "duration: %s ms  bind|execute <name>: <text>" with errdetail_params; pgbench -M prepared calls PQprepare once
# per connection and PQsendQueryPrepared (Bind, Describe, Execute, Sync) per statement. Post 000's "number of
# queries logged" comes to about one per transaction if its cached runs were 3 x 300 s like its IO-bound ones
# (it does not say); then it counted statements, not the records its server wrote.
def statement_records(settings: Settings, query_mode: str) -> tuple[RecordShape, ...]:
    """The records pgbench -S's statements leave under ``settings`` (the effective ones: base and
    configuration merged), as PostgreSQL 15 writes them (tests/fixtures/pg15_*.log are captured runs).

    - ``log_min_duration_statement = 0``: one "duration: … statement/parse/bind/execute: <text>" line per
      protocol message: per transaction 1 (simple) or 2 (bind, execute), per connection 1 parse (prepared);
    - ``log_statement = all``: one "statement: <text>" (simple) or "execute P_0: <text>" (prepared) line
      per transaction; the set-up statements have other text;
    - ``log_duration = on`` (without the above): a bare "duration: … ms" line per protocol message, the
      set-up statements' included (they cannot be told apart);
    - both of the last two: both kinds. A threshold above 0 logs an unpredictable subset: none is due;
    - ``log_min_duration_sample = 0`` (without the first): the first kind's lines for a random share of the
      protocol messages (``log_statement_sample_rate``): counted, none due (a random subset).
    """
    statement_all = settings.get("log_statement") == "all"
    min_duration = settings.get("log_min_duration_statement", "-1")
    durations = settings.get("log_duration") == "on"
    if statement_all and min_duration == "0":
        raise SettingError("log_statement = 'all' with log_min_duration_statement = 0: which records this writes "
                           "per statement is not captured yet (tests/fixtures/pg15_*.log); use one of them")
    per_tx, per_conn = RECORDS_PER_TRANSACTION[query_mode], RECORDS_PER_CONNECTION[query_mode]
    if min_duration == "0":
        return (RecordShape("duration+statement", (b"duration:", _MARK), per_transaction=per_tx,
                            per_connection=per_conn),)
    shapes = []
    if settings.get("log_min_duration_sample", "-1") == "0":
        shapes.append(RecordShape("duration+statement (sampled)", (b"duration:", _MARK)))
    if statement_all:
        shapes.append(RecordShape("statement", (_MARK,), absent=(b"duration:",), per_transaction=1))
    if durations:
        shapes.append(RecordShape("duration", (b"duration: ",), absent=_STATEMENT_TEXT, per_transaction=per_tx,
                                  per_connection=per_conn, per_run=SETUP_STATEMENTS))
    return tuple(shapes)


def configurations(names: tuple[str, ...], table: dict[str, tuple], pg_bindir: str, base: Settings,
                   query_mode: str, sessions: dict[str, HeldSessions] | None = None) -> tuple[Configuration, ...]:
    """``names`` from ``table`` (name -> (settings over the base, sinks, ...)), each checked against the
    catalog, each with the records its sinks must receive under pgbench -S in ``query_mode``, and the sessions
    ``sessions`` declares it holds open while it runs (name -> HeldSessions; a name not there: none)."""
    out = []
    for n in names:
        settings = Settings.of("postgresql", table[n][0])
        validate_postgres(settings, Path(pg_bindir) / "postgres")
        records = statement_records(base.merged(settings), query_mode) if table[n][1] else ()
        out.append(Configuration(n, settings, tuple(table[n][1]), records, (sessions or {}).get(n)))
    return tuple(out)
