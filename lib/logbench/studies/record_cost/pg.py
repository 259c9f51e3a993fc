"""The PostgreSQL half of the record-cost study: one start of a private server under a counting tool, one
pgbench load of a fixed number of transactions, an immediate shutdown, and what the tool counted, by process role.

Every start begins from the same pristine data directory (initdb and ``pgbench -i``, made once, not under the
tool), with the configuration's settings in postgresql.conf: nothing is switched while the server runs, so what
is counted is the configuration alone. Roles are read from the server before the load (``pg_stat_activity``'s
``backend_type``; the logging collector is the postmaster's one child it does not list); the processes forked
during the load and gone by its end are pgbench's backends (its set-up connection and its client's).
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ...counting import Count, StartCounts, strace, valgrind
from ...base.errors import ToolError
from ...base.logsinks import FileSink, wait_quiet
from ...servers import process
from ...servers.counted_postgres import CountedContainerPostgres
from ...servers.postgres import LocalPostgres, find_bindir
from ...servers.syslog import SyslogPair
from ...base.settings import RecordShape, Settings
from ...workloads.pgbench import Pgbench

PGBENCH_SEED = 20131117  # pgbench --random-seed: every start draws the same accounts


@dataclass(frozen=True)
class Prepared:
    """A pristine data directory with pgbench's tables, and the server that made it: this machine's binaries
    (``container`` '') or the PostgreSQL of docker/servers.tsv's line ``container`` in its image."""

    datadir: Path
    bindir: Path
    version: str
    scale: int
    container: str = ""  # a version of docker/servers.tsv: the server runs in its container
    server: str = ""  # what ran, for the tables' ``server`` column: "15 (local)", "13 (bullseye container)"


def prepare(work: Path, *, bindir: str | Path | None, scale: int, base: Settings) -> Prepared:
    """initdb and ``pgbench -i -s scale`` on a server not under any tool, then stopped: the data directory
    every counted start copies."""
    bindir = find_bindir(bindir)
    with LocalPostgres(base, log_dir=work / "prepare-log", bindir=bindir) as server:
        version, pristine = _initialise(server, scale, work / "pristine")
    return Prepared(pristine, bindir, version, scale, server=f"{version.split()[0]} (local)")


def prepare_container(work: Path, *, version: str, scale: int, base: Settings) -> Prepared:
    """The same in the container of docker/servers.tsv's PostgreSQL ``version`` (initdb there, this host's
    pgbench -i through the shared socket): the data directory every counted start of that version copies."""
    with CountedContainerPostgres(base, log_dir=work / f"prepare-log-{version}", version=version) as server:
        full, pristine = _initialise(server, scale, work / f"pristine-{version}")
        label = server.label
    return Prepared(pristine, server.bindir, full, scale, container=version, server=label)


def _initialise(server, scale: int, pristine: Path) -> tuple[str, Path]:
    """pgbench's tables in a running server, a checkpoint, the server stopped and its data directory copied to
    ``pristine`` (without the files of that one run); the server's version."""
    Pgbench(server.binary("pgbench"), server.conninfo).initialise(scale)
    with server.connect() as c:
        c.execute("CHECKPOINT")
    version = server.version()
    server.stop()
    shutil.copytree(server.datadir, pristine, symlinks=True)
    for stale in ("postmaster.pid", "postmaster.opts", "postgresql.auto.conf"):
        (pristine / stale).unlink(missing_ok=True)
    return version, pristine


def _prefix(counter: str, out: Path, inside: bool = False) -> list[str]:
    """The tool's argv; ``inside`` a container, the image's own tool (found on its PATH), not this host's."""
    if counter == "cachegrind":
        return valgrind.cachegrind_prefix(out, program="valgrind" if inside else None)
    return strace.prefix(out, program="strace" if inside else None)


def _roles(server: LocalPostgres, postmaster: int) -> dict[int, str]:
    """pid -> role of every process the server runs before the load (our query's own backend left out)."""
    with server.connect() as c:
        own = c.execute("SELECT pg_backend_pid()").fetchone()[0]
        listed = dict(c.execute("SELECT pid, backend_type FROM pg_stat_activity").fetchall())
    listed.pop(own, None)
    roles = {postmaster: "postmaster"}
    for child in server.pids.children(postmaster):
        if child != own:
            roles[child] = listed.get(child, "logger").replace(" ", "_")
    return roles


def _settle(pids, postmaster: int, keep: set[int], timeout: float = 60.0) -> None:
    """Wait until the postmaster's children are ``keep`` again: the connections that ended have exited and
    their counts are written."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pids.children(postmaster) <= keep:
            return
        time.sleep(0.05)
    raise ToolError(f"backends of the postmaster ({postmaster}) still running {timeout:.0f} s after the load")


def _pgbench(server: LocalPostgres, transactions: int, protocol: str) -> None:
    # a fixed number of transactions, not Pgbench.command's fixed time: the counts are per transaction
    bench = Pgbench(server.binary("pgbench"), server.conninfo)
    argv = [str(bench.binary), "-n", "-S", "-M", protocol, "-c", "1", "-t", str(transactions),
            f"--random-seed={PGBENCH_SEED}"]
    r = subprocess.run(argv, env=bench.env, capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        raise ToolError(f"pgbench failed ({r.returncode}): {r.stderr[-2000:]}")


def _records(files: list[Path], shapes: tuple[RecordShape, ...]) -> tuple[int, int]:
    """Records of ``shapes`` and bytes in the sink files (each start's are new, so all of each counts)."""
    counted = [FileSink(f.name, f, shapes).count_since(0) for f in files]
    return sum(c.records for c in counted), sum(c.bytes for c in counted)


def _pids(counter: str, out: Path) -> set[int]:
    return set(valgrind.counts(out) if counter == "cachegrind" else strace.per_process(out))


def _stop(proc: subprocess.Popen, pid: int, sig: int, outlive: set[int] = frozenset(), timeout: float = 120.0,
          pids=process.HOST_PIDS) -> None:
    """Signal the traced program itself (under strace, ``proc`` is strace, which would only detach), then wait
    until the tool has exited and so have the processes in ``outlive``: the logging collector leaves after the
    postmaster (it reads its pipe to the end), and valgrind writes a process's counts as it exits. ``pids``: the
    pid space ``pid`` and ``outlive`` are in (a container's)."""
    pids.kill(pid, sig)
    proc.wait(timeout=timeout)
    if not process.wait_until(lambda: not any(pids.exists(p) for p in outlive), timeout=timeout):
        raise ToolError(f"server processes {sorted(p for p in outlive if pids.exists(p))} still running "
                        f"{timeout:.0f} s after the postmaster stopped")


def _complete(counter: str, out: Path, pids: set[int], timeout: float = 30.0) -> None:
    """Every process's counts written in full (valgrind writes the summary line last)."""
    if not process.wait_until(lambda: pids <= _pids(counter, out), timeout=timeout):
        raise ToolError(f"no complete counts from processes {sorted(pids - _pids(counter, out))} in {out}")


def _by_role(found: dict[int, object], roles: dict[int, str], load: set[int]) -> dict[int, str]:
    """Every counted pid's role: the load's backends, the known processes, 'other' (our probes and queries,
    before the load; left out of every figure)."""
    return {pid: ("backend" if pid in load else roles.get(pid, "other")) for pid in found}


def _counts(counter: str, out: Path, roles: dict[int, str], load: set[int], daemon_out: Path | None) -> list[Count]:
    rows: list[Count] = []
    if counter == "cachegrind":
        per_role: Counter = Counter()
        found = valgrind.counts(out)
        for pid, role in _by_role(found, roles, load).items():
            per_role[role] += found[pid]
        if daemon_out is not None:
            per_role["rsyslogd"] += sum(valgrind.counts(daemon_out).values())
        rows += [Count(role, "instructions", v) for role, v in per_role.items() if role != "other"]
        return rows
    calls: dict[str, Counter] = {}
    written: Counter = Counter()
    found = strace.per_process(out)
    pid_roles = _by_role(found, roles, load)
    if daemon_out is not None:
        for pid, v in strace.per_process(daemon_out).items():
            found[pid] = v
            pid_roles[pid] = "rsyslogd"
    for pid, (by_name, nbytes) in found.items():
        role = pid_roles[pid]
        calls.setdefault(role, Counter()).update(by_name)
        written[role] += nbytes
    for role, by_name in calls.items():
        if role == "other":
            continue
        rows += [Count(role, "syscalls", n, call) for call, n in sorted(by_name.items())]
        rows.append(Count(role, "bytes_written", written[role]))
    return rows


def _server(prepared: Prepared, settings: Settings, *, log_dir: Path, out: Path, counter: str,
            syslog_socket: Path | None):
    """The server of one counted start: this machine's, or the container's of ``prepared.container``."""
    if prepared.container:
        if syslog_socket is not None:
            raise ToolError("no syslog destination in a counted container (its /dev/log is not wired to the "
                            "private rsyslogd)")
        return CountedContainerPostgres(settings, log_dir=log_dir, version=prepared.container,
                                        launch_prefix=tuple(_prefix(counter, out, inside=True)),
                                        datadir_from=prepared.datadir, shared=(out,), start_timeout=120.0)
    return LocalPostgres(settings, log_dir=log_dir, bindir=prepared.bindir, syslog_socket=syslog_socket,
                         launch_prefix=tuple(_prefix(counter, out)), datadir_from=prepared.datadir,
                         start_timeout=120.0)


def count_start(prepared: Prepared, settings: Settings, shapes: tuple[RecordShape, ...], *, protocol: str,
                transactions: int, counter: str, syslog: bool, remote: bool, work: Path) -> StartCounts:
    """One start under ``counter`` ("cachegrind" or "strace") with ``settings`` (the base and the
    configuration's, merged), one pgbench load, an immediate shutdown; what was counted, by role. The server is the
    one ``prepared`` was made by: this machine's binaries, or a version's container (the tool inside it too,
    pids read in its namespace; pgbench is this host's either way)."""
    t0 = time.perf_counter()
    run_dir = Path(tempfile.mkdtemp(prefix="start-", dir=work))
    out, daemon_out, log_dir = run_dir / "counts", run_dir / "daemon-counts", run_dir / "log"
    for d in (out, daemon_out, log_dir):
        d.mkdir()
    run_dir.chmod(0o755)
    user = process.server_user()
    for d in (out, daemon_out):
        process.hand_over(d, user)
        d.chmod(0o777)  # rsyslogd runs as root, the server as its user: both write their counts here
    sinks = [log_dir / n for n in ("postgresql.log", "postgresql.csv", "postgresql.json")]
    pair = None
    try:
        if syslog:
            pair = SyslogPair(remote=remote, rate_limit=False, log_dir=log_dir,
                              local_prefix=tuple(_prefix(counter, daemon_out)))
            pair.start()
            # the log host's file too: a forwarding daemon writes nothing locally (its receiver is not counted)
            sinks += [f for f in (pair.files.local, pair.files.remote) if f is not None]
        server = _server(prepared, settings, log_dir=log_dir, out=out, counter=counter,
                         syslog_socket=pair.socket if pair else None)
        with server:
            postmaster = server.postmaster()
            roles = _roles(server, postmaster)
            _settle(server.pids, postmaster, set(roles))
            before = _pids(counter, out)
            _pgbench(server, transactions, protocol)
            _settle(server.pids, postmaster, set(roles))
            load = _pids(counter, out) - before - set(roles)
            # an immediate shutdown: each process still writes its counts as it exits, and the logging collector
            # reads its pipe to the end; the shutdown checkpoint a fast one writes (0.2-0.6 s a start under
            # valgrind) is of no use to a data directory that is thrown away
            _stop(server.proc, postmaster, signal.SIGQUIT, set(roles), pids=server.pids)
        if pair is not None:
            _stop(pair.local.proc, int((pair.workdir / "rsyslog-local.pid").read_text()), signal.SIGTERM)
            if pair.files.remote is not None:  # what was forwarded is written by the log host when it arrives
                wait_quiet([FileSink("remote_syslog", pair.files.remote)], quiet=0.5)
        _complete(counter, out, set(roles) | load)
        records, size = _records(sinks, shapes)
        rows = _counts(counter, out, roles, load, daemon_out if syslog else None)
    finally:
        if pair is not None:
            pair.close()
        shutil.rmtree(run_dir, ignore_errors=True)
    # pgbench -S: one statement per transaction
    return StartCounts(transactions, transactions, records, size, tuple(rows), time.perf_counter() - t0)
