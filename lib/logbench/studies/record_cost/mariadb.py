"""record_cost's MariaDB half: what one slow-log or general-log record costs mariadbd, counted, not timed.

One private mariadbd (10.11, Debian's binary) starts from a copy of one pristine data directory (:func:`prepare`:
sysbench's table, made once, the server under no tool), under a counting tool, with one configuration's variables
on its command line; sysbench ``oltp_point_select`` (one thread, ``--events=N --time=0``, fixed seed, statements as
plain text) is the load; the records are counted in the log itself (slow log file, ``mysql.slow_log``, general log),
only those written during the load.

mariadbd is one process with threads, so counting is per thread:

- callgrind (``--separate-threads=yes``): ``callgrind_control -z`` just before a load and ``-d`` just after it
  (once its connection's thread has exited) put exactly that load in one file per thread. The thread(s) that ran
  ``do_command`` are role "connection" (the thread that served sysbench's connection: connect, statements,
  their log records, disconnect); role "process" is every thread of the interval (the connection's, InnoDB's and
  the server's background threads, the main thread's accept and thread creation). :func:`count_pair` runs two
  loads (small, large) in one start, so the instructions per statement are a difference of two loads of the same
  start: start-up and connection set-up cancel, and there is one start per repeat, not two. Nothing is
  instrumented until the first load (``--instr-atstart=no``): start-up and warm-up run about twice as fast.
  Two cachegrind starts per repeat (whole process, differenced) took longer and repeated several times worse (range
  of 3 repeats 0.4-1.0 % against 0.1-0.3 %: InnoDB's start-up does not repeat to the instruction).
- cachegrind: the whole process at exit (role "process" only; cachegrind cannot tell threads apart).
- strace (``-f -ff``: one file per thread, threads are tasks): the threads born during the load are the
  connection's (role "connection"), every file is role "process" (the whole start: start-up, load, shutdown).
  :func:`count_pair` with strace is two starts (a small and a large load), differenced by the study.

What does not repeat to the instruction: whether sysbench's next statement is already in the socket when the
connection's thread comes back to read it. When it is not, the read fails (EAGAIN) and the thread waits in poll():
~250 instructions and two system calls more, 0 to 1 times a statement, by timing. It is the spread between starts
(about 0.1-0.25 % of the instructions per statement; poll and recvfrom under strace), not a cost of the log.

Set at every start (:data:`BASE`): ``innodb_use_native_aio=0`` (io_uring hangs under valgrind),
``innodb_buffer_pool_size_max`` (otherwise InnoDB reserves terabytes of address space), ``thread_cache_size=0``
(every connection on a fresh thread), no buffer-pool dump/load (it would run in the background at a time of its
own). Before the counted loads a quiet scan reads the whole table into the buffer pool and one logged statement
opens the log, so neither load pays a first-time cost the other does not.

A version of docker/servers.tsv (:func:`prepare_container`, ``Prepared.container``) runs the same way in its
container (:class:`~logbench.servers.counted_mariadb.CountedContainerMariaDB`): the image's mariadb-install-db makes
the pristine directory (sysbench prepares it from this host, through the shared socket), the image's valgrind,
callgrind_control (``docker exec`` as the server's user, vgdb's FIFOs in a directory bind-mounted at its host path)
and strace count it, their files named by the container's pids; the threads born during a load are polled in this
host's /proc of the server's host pid and named by their container tids (what strace names its files by). The
start-up options are :func:`base`'s for that version (:data:`VERSION_BASE` says what differs and why). 10.5 also
writes a slow-log entry for the connection's Quit (``# administrator command: Quit``, log_slow_admin_statements):
one more record per connection, which cancels in the difference of two loads as the connection's set-up does.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ... import counting
from ...counting import Count, StartCounts, strace as st, valgrind as vg
from ...base.errors import ParameterError, ToolError
from ...servers import containers, process
from ...servers import mariadb as mdb
from ...servers.counted_mariadb import CountedContainerMariaDB
from ...base.settings import Settings
from ...workloads.sysbench import Sysbench, parse_output

SLOW_FILE = {"slow_query_log": "ON", "long_query_time": "0", "log_output": "FILE"}
CONFIGURATIONS: dict[str, dict[str, str]] = {
    "none": {"slow_query_log": "OFF", "general_log": "OFF"},
    "slow_file": dict(SLOW_FILE),
    "slow_table": {**SLOW_FILE, "log_output": "TABLE"},
    "general_file": {"general_log": "ON", "log_output": "FILE"},
    # MariaDB's extensions of the slow entry: 'query_plan' adds its line (Full_scan, Tmp_table, Filesort, ...) only
    # when one of them is Yes, never for a point select; 'innodb' adds two lines to every entry (Pages_accessed,
    # Pages_read, ..., Engine_time): 396 bytes a record instead of 257 (oltp_point_select)
    "slow_file_verbose": {**SLOW_FILE, "log_slow_verbosity": "innodb,query_plan"},
}
RECORD_KIND: dict[str, str] = {"none": "", "slow_file": "slow", "slow_table": "slow", "general_file": "general",
                               "slow_file_verbose": "slow"}
COUNTERS = ("callgrind", "cachegrind", "strace")

# Every start, prepare's included (the same files, the same server): see the module notes.
BASE: dict[str, str] = {
    "innodb_use_native_aio": "OFF",
    "innodb_buffer_pool_size": "32M",
    "innodb_buffer_pool_size_max": "32M",
    "innodb_log_file_size": "16M",
    "innodb_buffer_pool_dump_at_shutdown": "OFF",
    "innodb_buffer_pool_load_at_startup": "OFF",
    "thread_cache_size": "0",
}
# A version's start-up options where they differ from BASE (docker/servers.tsv's MariaDB versions, each run in its
# container; BASE is this machine's 10.11's): None leaves an option out. Read from each image's `mariadbd --verbose
# --help`: 10.5 lacks innodb_buffer_pool_size_max (its server refuses to start with it, an unknown variable); its
# buffer pool reserves no address space for a maximum, and it starts under valgrind without the cap. Every other
# option of BASE each version has, and needs no other under valgrind: 10.5, 10.11 and 11.8 start, are counted and
# stop under callgrind and strace with these (innodb_use_native_aio=OFF for all three).
VERSION_BASE: dict[str, dict[str, str | None]] = {
    "10.5": {"innodb_buffer_pool_size_max": None},
}


def base(version: str = "") -> dict[str, str]:
    """The start-up options of every start of MariaDB ``version`` (a version of docker/servers.tsv; '' for this
    machine's mariadbd): :data:`BASE` as that version's server takes it."""
    changed = VERSION_BASE.get(version, {})
    return {k: v for k, v in {**BASE, **changed}.items() if v is not None}


TEST = "oltp_point_select"
SEED = 1
DB = "sbtest"
# The function only a connection's thread runs: a client's command read and dispatched.
CONNECTION_FUNCTION = b"do_command("


@dataclass(frozen=True)
class Prepared:
    """A pristine data directory (sysbench's table in it) and what made it: this machine's mariadbd
    (``container`` '') or the MariaDB of docker/servers.tsv's line ``container`` in its image."""

    datadir: Path
    mariadbd: Path
    version: str
    table_size: int
    sysbench: str
    container: str = ""  # a version of docker/servers.tsv: the server runs in its container
    server: str = ""  # what ran, for the tables' ``server`` column: "10.5 (bullseye container)" ('' for local)


def prepare(work: Path, *, mariadbd: str | None = None, table_size: int = 10000) -> Prepared:
    """A pristine data directory with sysbench's table (server not under any tool), and what it is."""
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    with mdb.LocalMariaDB(Settings.of("mariadb", BASE), log_dir=work / "mariadb-prepare-logs",
                          binary=mariadbd) as srv:
        version, sb_version, pristine = _initialise(srv, table_size, work / "mariadb-pristine")
    shutil.rmtree(work / "mariadb-prepare-logs", ignore_errors=True)
    return Prepared(pristine, srv.binary, version, table_size, sb_version)


def prepare_container(work: Path, *, version: str, table_size: int = 10000) -> Prepared:
    """The same in the container of docker/servers.tsv's MariaDB ``version`` (its mariadb-install-db, this host's
    sysbench prepare through the shared socket): the data directory every counted start of that version copies."""
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    logs = work / f"mariadb-prepare-logs-{version}"
    with CountedContainerMariaDB(Settings.of("mariadb", base(version)), log_dir=logs, version=version) as srv:
        full, sb_version, pristine = _initialise(srv, table_size, work / f"mariadb-pristine-{version}")
        label = srv.label
    shutil.rmtree(logs, ignore_errors=True)
    return Prepared(pristine, Path("mariadbd"), full, table_size, sb_version, container=version, server=label)


def _initialise(srv: mdb.MariaDBServer, table_size: int, pristine: Path) -> tuple[str, str, Path]:
    """sysbench's table in a running server, the server stopped cleanly (the copy starts without crash recovery)
    and its data directory copied to ``pristine``: (the server's version, sysbench's, ``pristine``)."""
    if pristine.exists():
        shutil.rmtree(pristine)
    version = srv.version()
    srv.query(f"CREATE DATABASE {DB}")
    sb = Sysbench(srv.conninfo, db=DB, tables=1, table_size=table_size)
    sb.prepare(TEST, threads=1)
    sb_version = sb.version()
    srv.stop()
    shutil.copytree(srv.datadir, pristine, symlinks=True)
    return version, sb_version, pristine


# -- one start --------------------------------------------------------------------------------------------------
def _tasks(pid: int) -> set[int]:
    try:
        return {int(t) for t in os.listdir(f"/proc/{pid}/task")}
    except OSError:
        return set()


class _Log:
    """The records one configuration's log received between :meth:`mark` and :meth:`count`."""

    def __init__(self, srv: mdb.MariaDBServer, configuration: str):
        kind = RECORD_KIND[configuration]
        table = CONFIGURATIONS[configuration].get("log_output") == "TABLE"
        self.table = mdb.TableSink(srv) if kind == "slow" and table else None
        self.path = {"slow": srv.slow_log, "general": srv.general_log}.get(kind)
        self.marker = mdb.SLOW_RECORD_MARKER if kind == "slow" else mdb.GENERAL_RECORD_MARKER
        self._mark: tuple[int, int] = (0, 0)

    def _size(self) -> int:
        try:
            return self.path.stat().st_size
        except (OSError, AttributeError):
            return 0

    def mark(self) -> None:
        if self.table is not None:
            self._mark = self.table.mark()
        else:
            self._mark = (0, self._size())

    def count(self) -> tuple[int, int]:
        """(records, bytes) since the mark."""
        if self.table is not None:
            c = self.table.count_since(self._mark)
            return c.records, c.bytes
        if self.path is None:
            return 0, 0
        with open(self.path, "rb") as f:
            f.seek(self._mark[1])
            data = f.read()
        return data.count(self.marker), len(data)


def _sysbench_argv(srv: mdb.MariaDBServer, events: int, table_size: int) -> list[str]:
    argv = Sysbench(srv.conninfo, db=DB, tables=1, table_size=table_size).command(TEST, "run", threads=1,
                                                                                   seconds=0, seed=SEED)
    argv = [a for a in argv if not a.startswith(("--events=", "--histogram="))]
    return argv[:-1] + [f"--events={events}", "--histogram=off", "run"]


class _Born:
    """The threads born in the server while the block runs (this host's /proc task list of its host ``pid``,
    polled every few milliseconds in a thread of ours), each also by its id in the server's pid space (``pids``: a
    container's names them as its strace does); on leaving, waits until they are gone: a connection's thread
    writes its last record after the client has its result, and exits after the client is gone."""

    def __init__(self, pid: int, pids=process.HOST_PIDS, timeout: float = 60.0):
        self.pid, self.pids, self.timeout = pid, pids, timeout
        self.tids: set[int] = set()
        self.named: dict[int, int] = {}  # this host's tid -> the thread's id in the server's pid space
        self._stop = threading.Event()

    def _seen(self, tids: set[int]) -> None:
        for t in tids - self.tids:
            try:
                self.named[t] = self.pids.thread(t)
            except ProcessLookupError:  # gone before it was read: not a connection's (that lives for the load)
                pass
        self.tids |= tids

    def _poll(self) -> None:
        while not self._stop.is_set():
            self._seen(_tasks(self.pid) - self._before)
            time.sleep(0.002)

    def __enter__(self) -> "_Born":
        self._before = _tasks(self.pid)
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        if exc[0] is not None:
            return
        self._seen(_tasks(self.pid) - self._before)
        deadline = time.monotonic() + self.timeout
        while self.tids & _tasks(self.pid):
            if time.monotonic() > deadline:
                raise ToolError(f"threads {sorted(self.tids & _tasks(self.pid))} born in mariadbd ({self.pid}) "
                                   f"during a load still run {self.timeout:.0f} s after it")
            time.sleep(0.005)


def _load(srv: mdb.MariaDBServer, pid: int, events: int, table_size: int) -> tuple[int, int, set[int]]:
    """One sysbench load of the server (``pid``: this host's); returns once the threads born during it have gone:
    (transactions, statements, their ids in the server's pid space)."""
    argv = _sysbench_argv(srv, events, table_size)
    with _Born(pid, srv.pids) as born:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise ToolError(f"`{' '.join(argv)}` exited {r.returncode}:\n{r.stderr[-2000:]}\n{r.stdout[-1000:]}")
    out = parse_output(r.stdout, test=TEST, command=tuple(argv))
    if out.transactions != events:
        raise ToolError(f"sysbench ran {out.transactions} events, asked for {events}")
    # oltp_point_select with --db-ps-mode=disable: one statement per event and nothing else on the connection
    # (its slow and general logs hold the events' SELECTs only, besides the general log's Connect and Quit lines)
    return out.transactions, out.queries, set(born.named.values())


def _warm(srv: mdb.MariaDBServer, pid: int) -> None:
    """Table pages in the buffer pool (a quiet scan of the clustered index) and the log opened (one logged
    statement of a fresh, not quiet, connection): what a first load would otherwise pay alone."""
    srv.query(f"SELECT SUM(LENGTH(c)) FROM {DB}.sbtest1")
    with _Born(pid, srv.pids):
        c = srv.connect(quiet=False)
        try:
            with c.cursor() as cur:
                cur.execute(f"SELECT c FROM {DB}.sbtest1 WHERE id = 1")
                cur.fetchall()
        finally:
            mdb.close_quietly(c)


def _start(prepared: Prepared, configuration: str, counter: str, out: Path, log_dir: Path,
           vgdb: Path) -> mdb.MariaDBServer:
    """The server of one counted start: this machine's, or the container's of ``prepared.container`` (the image's
    own tool around it, the tool's directories shared with the container at their host paths)."""
    if configuration not in CONFIGURATIONS:
        raise ParameterError("configuration", configuration, f"one of {', '.join(CONFIGURATIONS)}")
    inside = bool(prepared.container)
    if counter == "callgrind":
        # not instrumented until the first load (callgrind_control --instr=on): start-up and warm-up run faster
        prefix = vg.callgrind_prefix(out, vgdb, "--instr-atstart=no", program="valgrind" if inside else None)
    elif counter == "cachegrind":
        prefix = vg.cachegrind_prefix(out, program="valgrind" if inside else None)
    elif counter == "strace":
        prefix = st.prefix(out, program="strace" if inside else None)
    else:
        raise ParameterError("counter", counter, f"one of {', '.join(COUNTERS)}")
    settings = Settings.of("mariadb", {**base(prepared.container), **CONFIGURATIONS[configuration]})
    if inside:
        return CountedContainerMariaDB(settings, log_dir=log_dir, version=prepared.container,
                                       launch_prefix=tuple(prefix), datadir_from=prepared.datadir,
                                       shared=(out, vgdb.parent), start_timeout=300)
    return mdb.LocalMariaDB(settings, log_dir=log_dir, binary=prepared.mariadbd, launch_prefix=tuple(prefix),
                            datadir_from=prepared.datadir, start_timeout=300)


def _user(prepared: Prepared) -> process.RunUser:
    """Who the server runs as: this machine's server user, or the image's (uid 999) in a version's container."""
    if prepared.container:
        return process.RunUser(CountedContainerMariaDB.user_name, containers.CONTAINER_UID,
                               containers.CONTAINER_UID)
    return process.server_user()


def _dirs(work: Path, user: process.RunUser) -> tuple[Path, Path, Path]:
    """A directory of this start under ``work`` (the tool's output, the server's logs, vgdb's FIFOs), the server's."""
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    top = Path(tempfile.mkdtemp(prefix="mariadb-count-", dir=os.path.realpath(work)))
    out, logs, vgdb = top / "out", top / "logs", top / "vgdb"
    for d in (out, logs, vgdb):
        d.mkdir()
    process.hand_over(top, user)
    os.chmod(top, 0o755)
    return out, logs, vgdb / "pipe"  # vgdb's FIFOs: <prefix>-from-vgdb-to-<pid>-..., in our directory, not /tmp


def _stop(srv: mdb.MariaDBServer, pid: int | None, *, keep_exit_counts: bool) -> None:
    """Stop the server (``pid``: in its pid space); the server itself gets the signal when it is not our child:
    under strace (strace would detach and leave it), and in a container (``proc`` is the docker exec)."""
    srv._drop_admin()
    if srv.proc is None:
        return
    try:
        ours = pid is None or srv.pids.host(pid) == srv.proc.pid
    except ProcessLookupError:
        ours = True  # gone already: there is only the tool (or docker exec) to wait for
    if not ours:
        try:
            srv.pids.kill(pid, signal.SIGTERM if keep_exit_counts else signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            srv.proc.wait(timeout=srv.stop_timeout)
        except subprocess.TimeoutExpired:
            pass
    elif not keep_exit_counts:
        srv.proc.kill()
        srv.proc.wait(timeout=60)
    srv._stop_proc()


def _callgrind_counts(out: Path, pid: int, dump: int) -> tuple[Count, ...]:
    """Instructions of the threads that ran a client's command ("connection") and of every thread ("process")."""
    files = vg.callgrind_threads(out, pid, dump)
    if not files:
        raise ToolError(f"callgrind dump {dump} of {pid} wrote no file in {out}: {sorted(os.listdir(out))[:20]}")
    per_thread = {tid: vg.instructions(f) for tid, f in files.items()}
    connection = [tid for tid, f in files.items() if vg.ran(f, CONNECTION_FUNCTION)]
    if not connection:
        raise ToolError(f"no thread of callgrind dump {dump} ran {CONNECTION_FUNCTION.decode()}")
    return (Count("connection", "instructions", float(sum(per_thread[t] for t in connection))),
            Count("process", "instructions", float(sum(per_thread.values()))))


def _strace_counts(out: Path, connection_tids: set[int]) -> tuple[tuple[Count, ...], int]:
    """System calls by name (one Count per call: their sum is the total) and bytes written of the load's connection thread(s) (born during the
    load, reading a socket) and of every thread of the start."""
    per = st.per_process(out)
    connection = [t for t in per if t in connection_tids and per[t][0].get("recvfrom", 0) + per[t][0].get("read", 0)]
    if not connection:
        raise ToolError(f"no trace of the load's connection thread among {sorted(connection_tids)} in {out}")
    counts: list[Count] = []
    for role, tids in (("connection", connection), ("process", list(per))):
        by_name: dict[str, int] = {}
        written = 0
        for t in tids:
            for name, n in per[t][0].items():
                by_name[name] = by_name.get(name, 0) + n
            written += per[t][1]
        counts += [Count(role, "syscalls", float(n), name) for name, n in sorted(by_name.items())]
        counts.append(Count(role, "bytes_written", float(written)))
    return tuple(counts), len(connection)


def _run(prepared: Prepared, configuration: str, loads: list[int], counter: str, work: Path) -> list[StartCounts]:
    """One start under ``counter``, the ``loads`` one after the other, stop: one StartCounts per load."""
    t0 = time.perf_counter()
    user = _user(prepared)
    out, logs, vgdb = _dirs(work, user)
    results: list[tuple[int, int, int, int, tuple[Count, ...]]] = []
    try:
        srv = _start(prepared, configuration, counter, out, logs, vgdb)
        pid = None
        try:
            srv.start()
            # the tool names its files, and callgrind_control takes, the pid of the server's pid space; its threads
            # are polled in this host's /proc
            pid = srv.server_pid()
            host = srv.pids.host(pid)
            _warm(srv, host)
            log = _Log(srv, configuration)
            if len(loads) > 1 and counter != "callgrind":
                raise ParameterError("counter", counter, "callgrind (the only counter with more than one load a start)")
            born_all: list[set[int]] = []

            def control(action: str) -> None:  # where valgrind runs: this host, or the container (its own tool)
                vg.callgrind_control(pid, action, vgdb, user=user,
                                     inside=srv.exec_argv([]) if prepared.container else None)

            if counter == "callgrind":
                control("--instr=on")
            for i, events in enumerate(loads, start=1):
                log.mark()
                if counter == "callgrind":
                    control("-z")
                transactions, statements, born = _load(srv, host, events, prepared.table_size)
                if counter == "callgrind":
                    control("-d")
                records, nbytes = log.count()
                counts = _callgrind_counts(out, pid, i) if counter == "callgrind" else ()
                results.append((transactions, statements, records, nbytes, counts))
                born_all.append(born)
            _stop(srv, pid, keep_exit_counts=counter != "callgrind")
        finally:
            srv.close()
        if counter == "cachegrind":
            found = vg.counts(out)
            if pid not in found:
                raise ToolError(f"cachegrind wrote no complete count of mariadbd ({pid}) in {out}")
            results[0] = (*results[0][:4], (Count("process", "instructions", float(found[pid])),))
        elif counter == "strace":
            counts, _ = _strace_counts(out, born_all[0])
            results[0] = (*results[0][:4], counts)
    finally:
        shutil.rmtree(out.parent, ignore_errors=True)  # the counts are read: the tool's files go
    seconds = time.perf_counter() - t0
    return [StartCounts(t, s, r, b, c, seconds) for t, s, r, b, c in results]


def count_start(prepared: Prepared, configuration: str, transactions: int, counter: str,
                work: Path) -> counting.StartCounts:
    """One start of mariadbd under ``counter`` ("callgrind", "cachegrind" or "strace") with that configuration, one
    load of ``transactions`` sysbench events, stop: the counts by role, the records the log received during the
    load and their bytes, the statements sent. callgrind counts only the load (zeroed before, dumped after);
    cachegrind and strace the whole start."""
    return _run(prepared, configuration, [transactions], counter, work)[0]


def count_pair(prepared: Prepared, configuration: str, small: int, large: int, counter: str,
               work: Path) -> tuple[counting.StartCounts, counting.StartCounts]:
    """The two loads whose difference prices a statement: with callgrind one start, the small load then the large
    (each counted alone); with cachegrind or strace two starts. Both StartCounts carry the wall time of the start(s)."""
    if counter == "callgrind":
        a, b = _run(prepared, configuration, [small, large], counter, work)
        return a, b
    return count_start(prepared, configuration, small, counter, work), count_start(prepared, configuration, large,
                                                                                   counter, work)
