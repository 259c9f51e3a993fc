"""MariaDB (or MySQL): the base study type, a private server with the sysbench tables, one measurement.

:class:`MariaDBStudy` carries what every MariaDB study shares (base settings, sysbench data size,
server binary, backend, image); :func:`start` brings up the server with its data and returns it with
the environment record; :class:`SysbenchBench` is the runner's bench a study specialises.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...base import cleanup, environment, params, paths
from ..bench import Bench
from ..design import PlannedRun, Study
from ...base.errors import ParameterError, ServerStartError
from ..runner import Measurement
from ...servers import mariadb as mdb
from ...servers.process import server_user, tree_cpu_seconds
from ...base.settings import Configuration, RecordShape, Settings, mariadb_flavor
from ...workloads.sysbench import Sysbench, SysbenchResult, sysbench_binary
from ...workloads.workload import Workload
from .backend import BACKENDS, check_backend, check_image, filesystem_of, resolve_backend

__all__ = ["BACKENDS", "MariaDBStudy", "SysbenchBench", "filesystem_of", "mariadb_fields", "measurement_extra",
           "prepared_server", "resolve_server", "run_seed", "server_tools", "start", "statements_sent",
           "SysbenchNumbers", "check_versions", "connections", "with_variants"]

# Post 001's [mysqld] section (max_connections lowered: 3000 threads are pointless on 2 cores;
# table_cache is today's table_open_cache). Logging off; FILE output unless a configuration says TABLE.
BASE = {
    "max_connections": 500,
    "innodb_log_file_size": "128M",
    "innodb_flush_log_at_trx_commit": 1,
    "innodb_file_per_table": True,
    "table_open_cache": 2000,
    "slow_query_log": False,
    "general_log": False,
    "log_output": "FILE",
    "long_query_time": 10,
    "log_queries_not_using_indexes": False,
}


@dataclass(frozen=True, kw_only=True)
class MariaDBStudy(Study):
    """What every MariaDB study shares; a study subclasses it with its own parameters."""

    tables: int
    table_size: int
    base: Settings
    mariadbd: str  # the host's server binary: runs the local backend, validates the settings for both
    flavor: str
    image: str | None = None  # the container backend's image: as asked until the run resolves it, then what ran
    # (label, backend, image, version) per server when one schedule spans several (a version sweep, with_variants);
    # configurations are then "label/name". Backend and image stay as asked until the run resolves them.
    variants: tuple[tuple[str, str, str | None, str | None], ...] = ()

    def resolved(self) -> "MariaDBStudy":
        """The study as it runs: backend 'auto' decided, the container's image found (or refused); a version
        sweep's image of each version (built on first use, or ServerStartError naming the version). Asks the
        Docker engine, so the run calls it, before anything starts."""
        if self.variants:
            variants = tuple((label, *_version_server(b, v), v) for label, b, _, v in self.variants)
            return dataclasses.replace(self, variants=variants, backend="container")
        backend, image = resolve_server(self.backend, self.image)
        return dataclasses.replace(self, backend=backend, image=image)

    def variant(self, label: str) -> "MariaDBStudy":
        """The study as one server of a version sweep starts it: that variant's backend and image."""
        _, backend, image, _ = next(v for v in self.variants if v[0] == label)
        return dataclasses.replace(self, backend=backend, image=image, variants=())


def mariadb_fields(*, backend: str, image: object, mariadbd: object, tables: object, table_size: object,
                   base: dict = BASE) -> dict[str, object]:
    """The :class:`MariaDBStudy` fields, checked; 'auto' and the image's presence are left to the run
    (:meth:`MariaDBStudy.resolved`)."""
    check_backend(backend)
    image = check_image(image)
    if backend == "local":
        _local_server(image)
    binary = mdb.find_mariadbd(mariadbd)
    flavor, _ = mariadb_flavor(binary)
    sysbench_binary()
    return dict(backend=backend, image=image, mariadbd=str(binary), flavor=flavor, base=Settings.of("mariadb", base),
                tables=params.positive_int("tables", tables), table_size=params.positive_int("table_size", table_size))


def _local_server(image: str | None) -> None:
    if image:
        raise ParameterError("image", image, "None with the local backend (an image runs only with backend "
                             "'container', or 'auto' when a Docker engine answers)")
    server_user()  # as root, the unprivileged account must exist before anything starts


def resolve_server(backend: str, image: str | None) -> tuple[str, str | None]:
    """(backend, image) as a run uses them: 'auto' decided, the container's image found (or refused)."""
    from ...servers.containers import resolve_image

    backend = resolve_backend(backend)
    if backend == "local":
        _local_server(image)
        return backend, None
    if not image:
        return backend, resolve_image("mariadb", "10.11")
    try:
        return backend, resolve_image("mariadb", "10.11", str(image))
    except ServerStartError as e:
        raise ParameterError("image", image, f"an image present here or pullable ({e})") from e


def _version_server(backend: str, version: str) -> tuple[str, str]:
    """(backend, image) of one version of a sweep: always a container (ParameterError otherwise)."""
    from ...servers.containers import resolve_image

    backend = resolve_backend(backend)
    if backend != "container":
        raise ParameterError("versions", version, "a version sweep runs in containers: backend 'container', or "
                             "'auto' once a Docker engine answers (`bash scripts/setup.sh --docker` installs one)")
    return backend, resolve_image("mariadb", version)


def check_versions(versions: object, backend: str, image: object) -> tuple[str, ...]:
    """A version sweep's MariaDB series (docker/servers.tsv), checked before any server starts: each one set-up
    can build, the container backend (or 'auto'), no single image."""
    from ...servers.containers import MARIADB_IMAGES

    chosen = params.name_list("versions", versions, MARIADB_IMAGES, coerce=str)
    if backend == "local":
        raise ParameterError("versions", list(chosen), "a version sweep runs in containers: set backend to "
                             "'container' or 'auto' with a Docker engine")
    if image:
        raise ParameterError("image", image, "None with versions (each version runs its own image, "
                             "docker/servers.tsv)")
    return chosen


def with_variants(study: MariaDBStudy, variants: list[tuple[str, str, str | None, str | None]]) -> MariaDBStudy:
    """The same study on several servers in one interleaved schedule (runner.SplitBench), each configuration
    named "label/name" and due the records its variant's server writes (statement_records by version: MariaDB
    10.5's slow log has an entry more per connection)."""
    from ..runner import SplitBench

    configs = tuple(dataclasses.replace(c, name=f"{label}{SplitBench.SEP}{c.name}",
                                        records=statement_records(c.settings, version or "") if c.records else ())
                    for c in study.configurations for label, _, _, version in variants)
    return dataclasses.replace(study, configurations=configs, variants=tuple(variants),
                               backend="+".join(dict.fromkeys(b for _, b, _, _ in variants)))


@contextlib.contextmanager
def prepared_server(base: Settings, *, mariadbd: str, tables: int, table_size: int, log_root: Path | None = None,
                    backend: str = "local", image: str | None = None):
    """A private MariaDB (local binaries or a container) with the sysbench tables loaded;
    yields (server, sysbench, seconds the load took)."""
    with contextlib.ExitStack() as stack:
        log_dir = cleanup.private_dir("logbench-log-", log_root or paths.scratch_root())
        stack.callback(shutil.rmtree, log_dir, True)
        if backend == "container":
            from ...servers.container_mariadb import ContainerMariaDB

            server = stack.enter_context(ContainerMariaDB(base, log_dir=log_dir, image=image, binary=mariadbd))
        else:
            server = stack.enter_context(mdb.LocalMariaDB(base, log_dir=log_dir, binary=mariadbd))
        server.query("CREATE DATABASE IF NOT EXISTS sbtest")
        sb = Sysbench(server.conninfo, tables=tables, table_size=table_size)
        prepare_s = sb.prepare(threads=2)
        yield server, sb, prepare_s


def server_tools(mariadbd: str, server: mdb.MariaDBServer, sb: Sysbench) -> dict[str, str]:
    """The environment's tool versions. In a container the image is one of them, so container runs
    never share an environment id with local runs of the same server version (they are not pooled)."""
    tools = {"sysbench": sb.version(), "mariadbd": environment.tool_version([mariadbd, "--version"])}
    if server.backend == "container":
        from ...servers.containers import image_id, image_server_version

        tools["image"] = f"{server.image} {image_id(server.image)}"
        tools["image_server_version"] = image_server_version(server.image)
    return tools


def start(study: MariaDBStudy, stack: contextlib.ExitStack, base: Settings | None = None,
          extra=None) -> tuple[mdb.MariaDBServer, Sysbench, dict]:
    """A server on ``base`` (default: the study's) with the data loaded, entered into ``stack``; with the
    environment record (``extra(server)`` adds study-specific entries). ``study`` is resolved (run_study)."""
    server, sb, prepare_s = stack.enter_context(prepared_server(
        base or study.base, mariadbd=study.mariadbd, tables=study.tables, table_size=study.table_size,
        backend=study.backend, image=study.image))
    env = environment.collect(
        server_version=server.version(), tools=server_tools(study.mariadbd, server, sb),
        extra={"sysbench_prepare_s": prepare_s, "backend": server.backend, "image": getattr(server, "image", None),
               "flavor": server.flavor, "log_dir_fs": filesystem_of(server.log_dir),
               **(extra(server) if extra else {})},
    )
    return server, sb, env


def statement_records(settings: Settings, server_version: str = "") -> tuple[RecordShape, ...]:
    """The records each statement leaves under ``settings`` (a configuration's, over a base that logs nothing)
    on the server ``server_version`` ('' or a series, e.g. '10.5': mdb.slow_entry).

    Every statement reaches the general log (one " Query\t" line) and, at long_query_time = 0, the slow
    log (one entry, one "# Query_time:" line; on 10.5 one more per connection, its Quit); the sampled slow log
    keeps the statements whose query id is a multiple of the rate, ~1/rate of them (of 10.5's Quit entries too,
    taken as the same share: an approximation, as the sampled count is); at long_query_time > 0, sysbench's
    statements are too fast.
    """
    if settings.get("general_log") == "on":
        return (mdb.GENERAL_QUERY,)
    if settings.get("slow_query_log") == "on" and float(settings.get("long_query_time", "10")) == 0:
        rate = int(settings.get("log_slow_rate_limit", "1"))
        entry = mdb.slow_entry(server_version)
        return (dataclasses.replace(entry, per_statement=1 / rate, per_connection=entry.per_connection / rate),)
    return ()


def connections(run: PlannedRun, reconnects: int = 0) -> int:
    """The connections a sysbench run opened: one per thread, and one more per reconnect it reported (on MariaDB
    10.5 each one's end is a slow-log entry of its own: mdb.slow_entry)."""
    return int(run.clients) + int(reconnects or 0)


def run_seed(study: Study, run: PlannedRun, warm: bool = False) -> int:
    """sysbench --rand-seed of one run: reproducible, different for every run and for its warm-up."""
    # sysbench reads the seed as a signed 32-bit integer.
    return int(np.random.SeedSequence([study.seed, run.position, int(warm)]).generate_state(1)[0]) & 0x7FFFFFFF


def statements_sent(queries: int, ignored_errors: int) -> int:
    """Statements the server executed: sysbench's count leaves out each statement that failed
    (a deadlock it retries), but the server logs that one too (its ROLLBACK sysbench does count)."""
    return int(queries) + int(ignored_errors)


@dataclass(frozen=True, kw_only=True)
class SysbenchNumbers:
    """What sysbench reported beyond the runner's fields, kept in each run record (``extra``); a study
    adds its own measurements by subclassing (``common.measured_columns`` makes them columns)."""

    command: str
    queries: int
    qps: float
    reads: int
    writes: int
    other: int
    reconnects: int
    events: int
    latency_max_ms: float
    sysbench_p95_ms: float
    tps_per_s: list
    total_time_s: float

    @staticmethod
    def of(r: SysbenchResult) -> dict:
        """The fields as sysbench gave them (for ``Numbers(**SysbenchNumbers.of(r), ...)``)."""
        return {"command": " ".join(r.command[1:]), "queries": r.queries, "qps": r.qps, "reads": r.reads,
                "writes": r.writes, "other": r.other, "reconnects": r.reconnects, "events": r.events,
                "latency_max_ms": r.latency_max_ms, "sysbench_p95_ms": r.latency_pct_ms,
                "tps_per_s": [i.tps for i in r.intervals], "total_time_s": r.total_time_s}


def measurement_extra(r: SysbenchResult) -> dict:
    """What sysbench reported beyond the runner's fields (kept in each run record)."""
    return dataclasses.asdict(SysbenchNumbers(**SysbenchNumbers.of(r)))


def measurement(r: SysbenchResult, run: PlannedRun, extra: dict) -> Measurement:
    """The runner's measurement of one sysbench run (``extra``: sysbench's other numbers and the study's own)."""
    return Measurement(
        transactions=r.transactions, failed=r.ignored_errors, tps=r.tps, latency_mean_ms=r.latency_avg_ms,
        latency_stddev_ms=r.latency_stddev_ms, latency_p50_ms=r.latency_p50_ms, latency_p95_ms=r.latency_p95_ms,
        latency_p99_ms=r.latency_p99_ms, latency_samples=r.latency_samples, wall_s=r.total_time_s,
        threads=r.threads or run.clients, extra=extra,
    )


def file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


class SysbenchBench(Bench):
    """The MariaDB half of the runner's loop (see :class:`logbench.measure.runner.Bench`): sysbench ``test`` on
    ``server``; a study overrides :meth:`measure` / :meth:`expected_records` / :meth:`sinks` as it needs."""

    engine = "mariadb"
    query_mode = "text"  # --db-ps-mode=disable

    def __init__(self, study: MariaDBStudy, server: mdb.MariaDBServer, sysbench: Sysbench, test: str | Workload,
                 base: Settings | None = None):
        self.study, self.server, self.sysbench = study, server, sysbench
        # the declared load (a bundled test by name: that test over --db-ps-mode=disable), the one every run and
        # warm-up of this bench dispatches; ``test`` its test or script, ``workload`` the record's name of it
        self.load = sysbench.workload(test)
        self.test = self.load.script
        self.base = base or study.base
        self.backend = server.backend
        self.workload = self.load.label
        self.server_version = server.version()
        self.scale = study.tables * study.table_size
        self.switches: list[tuple[str, float]] = []

    def apply(self, configuration: Configuration):
        sw = self.server.apply(configuration.settings)
        if sw.kind != "none":
            self.switches.append((sw.kind, sw.seconds))
        return sw

    def warm(self, run: PlannedRun, seconds: float) -> None:
        self.sysbench.run(self.load, run.clients, max(1, int(seconds)), seed=run_seed(self.study, run, warm=True))

    def measure(self, run: PlannedRun, seconds: float) -> Measurement:
        r = self.sysbench.run(self.load, run.clients, int(seconds), report_interval=1, seed=run_seed(self.study, run))
        return measurement(r, run, measurement_extra(r))

    def sinks(self, configuration: Configuration) -> list:
        return []

    def expected_records(self, configuration: Configuration, run: PlannedRun, m: Measurement) -> int:
        return 0

    def server_cpu(self) -> float:
        return tree_cpu_seconds(self.server.pid)

    def server_pid(self) -> int:
        return self.server.pid

    def logger_cpu(self) -> float:
        return 0.0  # the server writes its own logs: no logger process

    def effective_settings(self, configuration: Configuration) -> dict:
        return self.base.merged(configuration.settings).as_dict()

    def log_dir_fs(self) -> str:
        return filesystem_of(self.server.log_dir)
