"""Sessions held open on a PostgreSQL server while a run measures (a configuration's declared
:class:`~logbench.base.settings.HeldSessions`): "active but idle" (pg_sleep) or truly idle.

Each session is a real client connection (psycopg) tagged with an ``application_name`` of the pool, so
``pg_stat_activity`` counts them and the cleanup finds them. A backend running ``pg_sleep`` does not notice
that its client went away, so closing is: terminate every tagged backend, close the clients, and wait until
no tagged backend is left. That runs on any exit of the ``with`` block, a failure or an interrupt included.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import psycopg

from ..base.errors import ToolError
from ..base.settings import HeldSessions
from ..servers import postgres as pgserver

KINDS = HeldSessions.KINDS
# Connection slots kept free beside the working clients and the sessions: the pool's own counting connection
# and one for the runner's settings check.
MARGIN = 2
OPENERS = 8  # connections opened at once
SLEEP_S = 86_400  # pg_sleep of an "active but idle" session: longer than any run; ended by the pool


def count(held: HeldSessions, clients: int, max_connections: Callable[[], int]) -> int:
    """The sessions ``held`` opens beside ``clients`` working clients: its count, or every slot of the server's
    ``max_connections()`` they and the pool's :data:`MARGIN` leave; none for kind "none"."""
    if held.kind == "none":
        return 0
    return max_connections() - clients - MARGIN if held.count is None else held.count


class SessionPool:
    """``n`` sessions of ``kind`` on ``server``, open inside the ``with`` block and gone after it."""

    def __init__(self, server: pgserver.PostgresServer, n: int, kind: str):
        if kind not in KINDS:
            raise ValueError(f"session kind {kind!r}; allowed: {', '.join(KINDS)}")
        self.server, self.n, self.kind = server, n if kind != "none" else 0, kind
        self.tag = f"logbench-session-{secrets.token_hex(4)}"
        self.conns: list[psycopg.Connection] = []
        self.open_s = 0.0

    def __enter__(self) -> "SessionPool":
        t0 = time.perf_counter()

        def one() -> psycopg.Connection:
            c = psycopg.connect(**self.server.conninfo, autocommit=True, application_name=self.tag)
            self.conns.append(c)  # list.append is atomic: every opened connection is closed by close()
            if self.kind == "sleep":
                # Sent, never awaited: the backend stays "active" in pg_sleep for the whole run.
                c.pgconn.send_query(f"SELECT pg_sleep({SLEEP_S})".encode())
            return c

        # Several at a time: a backend's start-up (fork, catalog caches) runs in parallel with the next one's.
        try:
            with ThreadPoolExecutor(OPENERS) as pool:
                for f in [pool.submit(one) for _ in range(self.n)]:
                    f.result()
        except BaseException:
            self.close()
            raise
        self.open_s = time.perf_counter() - t0
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def count(self, state: str | None = None) -> int:
        """Tagged backends in pg_stat_activity (in ``state``, e.g. 'active' or 'idle', if given)."""
        with self.server.connect() as c:
            q = "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s"
            args: list[object] = [self.tag]
            if state is not None:
                q += " AND state = %s"
                args.append(state)
            return int(c.execute(q, args).fetchone()[0])

    def settled(self, n: int, timeout: float = 30.0) -> tuple[int, int]:
        """(sessions open, sessions in their kind's state) once both reach ``n`` or ``timeout`` passes: a sent
        pg_sleep shows as 'active' only once its backend has read it."""
        state = {"sleep": "active", "idle": "idle", "none": None}[self.kind]
        deadline = time.monotonic() + timeout
        while True:
            opened, in_state = self.count(), (self.count(state) if state else 0)
            if (opened, in_state if state else n) == (n, n) or time.monotonic() > deadline:
                return opened, (in_state if state else opened)
            time.sleep(0.05)

    def close(self, timeout: float = 60.0) -> None:
        with contextlib.suppress(psycopg.Error):
            with self.server.connect() as c:
                c.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                          [self.tag])
        for c in self.conns:
            with contextlib.suppress(Exception):
                c.close()
        self.conns = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.count() == 0:
                    return
            except psycopg.Error:
                return  # the server is gone, and its backends with it
            time.sleep(0.05)
        raise ToolError(f"{self.count()} sessions tagged {self.tag} still open {timeout:.0f} s after closing them")
