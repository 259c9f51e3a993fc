"""The rotation methods: how each one rotates the server's slow log, step by step, with the time of each step."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from ...base.errors import ParameterError
from ...servers import mariadb as mdb
from .spec import METHODS

def _copytruncate(path: Path, rotated: Path) -> dict[str, float]:
    """As logrotate does it: copy through a buffer, then truncate the original in place."""
    t = {}
    with open(path, "r+b") as src, open(rotated, "wb") as dst:
        t["copy_start"] = time.monotonic()
        shutil.copyfileobj(src, dst, 1 << 20)
        t["copy_end"] = time.monotonic()
        os.ftruncate(src.fileno(), 0)
        t["truncate_end"] = time.monotonic()
    return t


def rotate(method: str, server: mdb.MariaDBServer, pause: float) -> dict[str, float]:
    """Rotate the server's slow log by ``method``; returns the monotonic time of each step."""
    path, rotated = server.slow_log, rotated_path(server.slow_log)
    t: dict[str, float] = {"start": time.monotonic()}
    if method == "copytruncate":
        t.update(_copytruncate(path, rotated))
    elif method == "rename_flush":
        path.rename(rotated)
        t["renamed"] = time.monotonic()
        server.query("FLUSH SLOW LOGS")
        t["flushed"] = time.monotonic()
    elif method == "rename_flush_disabled":
        path.rename(rotated)
        t["renamed"] = time.monotonic()
        t.update(_flush_while_off(server, "SET GLOBAL slow_query_log = OFF", "SET GLOBAL slow_query_log = ON", pause))
    elif method == "ebook_long_query_time":
        path.rename(rotated)
        t["renamed"] = time.monotonic()
        saved = server.query("SELECT @@global.long_query_time")[0][0]
        t.update(_flush_while_off(server, "SET GLOBAL long_query_time = 2000",
                                  f"SET GLOBAL long_query_time = {float(saved)}", pause))
    elif method != "none":
        raise ParameterError("method", method, METHODS)
    t["end"] = time.monotonic()
    return t


def _flush_while_off(server: mdb.MariaDBServer, off: str, on: str, pause: float) -> dict[str, float]:
    """``off``, a pause, FLUSH SLOW LOGS, a pause, ``on``: the ebook's 'disable during rotation' by either
    statement; the monotonic time of each step."""
    t = {}
    server.query(off)
    t["disabled"] = time.monotonic()
    time.sleep(pause)
    server.query("FLUSH SLOW LOGS")
    t["flushed"] = time.monotonic()
    time.sleep(pause)
    server.query(on)
    t["enabled"] = time.monotonic()
    return t


def rotated_path(path: Path) -> Path:
    return path.with_name(path.name + ".1")
