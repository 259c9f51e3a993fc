"""A user's own pgbench scripts: ``file@weight`` arguments, the statements a transaction of each sends, and
pgbench's own verdict on each file before any load runs."""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import ParameterError


@dataclass(frozen=True)
class Script:
    path: str
    weight: int
    statements: int  # SQL commands one transaction of it sends (its meta-commands are pgbench's own)


def _sql_commands(text: str) -> int:
    """pgbench ends an SQL command at an unquoted semicolon (a multi-line command is one); a final command
    without one ends at the file's end. Meta-commands (backslash lines) send nothing."""
    count, pending, quote = 0, False, None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("--") or (line.startswith("\\") and quote is None and not pending):
            continue
        i = 0
        while i < len(line):
            ch = line[i]
            if quote is not None:
                if ch == quote:
                    quote = None
            elif ch in ("'", '"'):
                quote = ch
            elif line.startswith("--", i):
                break
            elif ch == ";" and not (i and line[i - 1] == "\\"):  # "\;" joins commands into one
                count += 1
                pending = False
                i += 1
                continue
            elif not ch.isspace():
                pending = True
            i += 1
    return count + (1 if pending else 0)


def parse(argument: object, base: Path | None = None) -> Script:
    """``file`` or ``file@weight`` (pgbench's -f syntax), the file read to count its statements."""
    if not isinstance(argument, str) or not argument:
        raise ParameterError("scripts", argument, "pgbench script files as 'file' or 'file@weight' (a whole number "
                             ">= 1)")
    path, sep, weight = argument.rpartition("@") if "@" in argument else (argument, "", "1")
    if not weight.isdigit() or int(weight) < 1:
        raise ParameterError("scripts", argument, "'file@weight' with a whole-number weight >= 1")
    p = Path(path)
    if base is not None and not p.is_absolute():
        p = base / p
    try:
        text = p.read_text()
    except OSError as e:
        raise ParameterError("scripts", argument, f"a readable pgbench script file ({e.strerror})") from None
    n = _sql_commands(text)
    if n == 0:
        raise ParameterError("scripts", argument, "a script with at least one SQL command")
    return Script(str(p.resolve()), int(weight), n)


def check(pgbench: Path, scripts: tuple[Script, ...]) -> None:
    """pgbench's own parse of each file, before anything starts: it reads every -f file before it connects, so a
    run pointed at an empty socket directory fails on the first bad script (ParameterError with pgbench's
    message, the file named) or at connecting (all scripts parsed)."""
    with tempfile.TemporaryDirectory(prefix="logbench-nosocket-") as nowhere:
        for s in scripts:
            r = subprocess.run([str(pgbench), "-n", "-f", f"{s.path}@{s.weight}", "-t", "1", "-h", nowhere],
                               capture_output=True, text=True, timeout=30, env={"PATH": "/usr/bin:/bin"})
            message = (r.stdout + r.stderr).strip()
            if r.returncode != 0 and not re.search(r"connection to server|could not create connection", message):
                raise ParameterError("scripts", s.path, f"a script pgbench accepts; it said:\n{message}")
