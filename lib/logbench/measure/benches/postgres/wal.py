"""WAL counted around a measurement (a declared load's ``wal``, :class:`.load.Load`): the LSN difference (every
byte inserted, by any process) and the difference of ``pg_stat_wal`` (records, full-page images, bytes).

Counters are read only after every client backend of the run has exited: a backend flushes its WAL statistics on
exit, *after* it has left ``pg_stat_activity``, so only its process being gone says the flush is done.

Whether an import took the WAL-skip path is read from the data: its generation step wrote less WAL than a tenth of
the bytes it loaded. (Since PostgreSQL 13, under ``wal_level = minimal`` a relation created or truncated in the
same transaction is not WAL-logged but synced at commit — or, below ``wal_skip_threshold``, logged whole at commit.)
"""

from __future__ import annotations

from dataclasses import dataclass

from ....servers import postgres as pgserver
from ....servers import process

SKIP_FRACTION = 0.1  # generation WAL below this fraction of the loaded bytes: the skip path was taken


def lsn_bytes(lsn: str) -> int:
    """A WAL position ('16/B374D848') as a byte offset."""
    hi, lo = lsn.split("/")
    return (int(hi, 16) << 32) + int(lo, 16)


@dataclass(frozen=True)
class WalCounters:
    lsn: int
    records: int
    fpi: int
    bytes: int

    def minus(self, before: "WalCounters") -> dict[str, int]:
        return {"wal_lsn_bytes": self.lsn - before.lsn, "wal_records": self.records - before.records,
                "wal_fpi": self.fpi - before.fpi, "wal_bytes": self.bytes - before.bytes}


def counters(server: pgserver.PostgresServer) -> WalCounters:
    """The WAL position and ``pg_stat_wal`` after every other client backend has exited (see the module)."""
    process.children_settled(server.pid, lambda p: "[local]" in " ".join(p.cmdline()), timeout=30.0)
    with server.connect() as c:
        lsn, rec, fpi, nbytes = c.execute(
            "SELECT pg_current_wal_lsn()::text, wal_records, wal_fpi, wal_bytes FROM pg_stat_wal").fetchone()
    return WalCounters(lsn_bytes(lsn), int(rec), int(fpi), int(nbytes))


def per_transaction(wal: dict[str, int], transactions: int) -> dict[str, float]:
    """Each WAL difference per transaction (``wal_bytes_per_tx``, ...); none for a run without transactions."""
    return {f"{k}_per_tx": v / transactions for k, v in wal.items()} if transactions else {}


def skipped(generation_wal: int, loaded_bytes: int) -> bool:
    """Whether an import's generation step took the WAL-skip path (see the module)."""
    return bool(generation_wal < SKIP_FRACTION * loaded_bytes)
