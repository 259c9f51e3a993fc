"""Bringing a PostgreSQL study up: its log directory, syslog daemons, server(s) and pgbench dataset inside the
study's exit stack, and the environment record of what started; each server's bench runs the load the study
declares for it (``PgStudy.loads``), an import on a fresh server per run (:class:`.imports.ImportBench`)."""

from __future__ import annotations

import contextlib
import shutil

from ....base import cleanup, environment, paths
from ... import runner
from ....servers import memlimit
from ....servers import postgres as pgserver
from ....servers.syslog import NamespaceLogHost, SyslogPair, rsyslogd_binary
from ....workloads.pgbench import Pgbench
from .bench import PgBench
from .destinations import STDERR_DIRECT
from .imports import ImportBench
from .load import DEFAULT, Load
from .study import PgStudy

def start_stack(study: PgStudy, backend: str, stack: contextlib.ExitStack,
                image: str | None = None, load: Load = DEFAULT) -> tuple[PgBench, dict]:
    """Start one (resolved) backend's log directory, syslog daemons, server and dataset inside ``stack``; its bench
    runs ``load``."""
    root = paths.tmpfs_root() if study.log_dir_on == "tmpfs" else paths.scratch_root()
    log_dir = cleanup.private_dir("logbench-log-", root)
    stack.callback(shutil.rmtree, log_dir, True)
    syslog = None
    if backend == "container":
        from ....servers.container_postgres import ContainerPostgres
        from ....servers.container_syslog import ContainerLogHost

        host_kind, server_kind = ContainerLogHost, ContainerPostgres
        server_kw = {"image": image or study.image}
    else:
        host_kind, server_kind = NamespaceLogHost, pgserver.LocalPostgres
        server_kw = {"bindir": study.pg_bindir}
    if study.needs_syslog:
        syslog = stack.enter_context(SyslogPair(remote=study.needs_remote, rate_limit=study.syslog_rate_limit,
                                                log_dir=log_dir, remote_host=host_kind))
    if study.needs_direct_stderr and backend == "local":
        server_kw["stderr_file"] = log_dir / STDERR_DIRECT
    pg = stack.enter_context(server_kind(study.base, log_dir=log_dir, syslog_socket=syslog.socket if syslog else None,
                                         **server_kw))
    pgb = Pgbench(pg.binary("pgbench"), pg.conninfo)
    init_s = pgb.initialise(study.scale, fillfactor=study.fillfactor)
    limit, limited = None, {}
    if study.memory_limit_mb:
        limit = stack.enter_context(memlimit.MemoryLimit(study.memory_limit_mb * 2**20, read_iops=study.read_iops,
                                                          read_limit_on=pg.datadir))
        limit.add_tree(pg.pid)
        with pg.connect() as conn:
            conn.execute("CHECKPOINT")  # dirty pages stay in the page cache: write them before evicting
        limited = {"memory_limit_bytes": limit.limit_bytes, "memory_cgroup": str(limit.path),
                   "evicted_bytes": memlimit.evict(pg.datadir),
                   **({"read_iops_limit": limit.read_iops, "read_limit_device": limit.device} if limit.read_iops
                      else {})}
    from ....servers.containers import image_server_version

    tools = {"pgbench": pgb.version(), "postgres": environment.tool_version([str(pg.binary("postgres")), "--version"])}
    if syslog is not None:
        tools["rsyslogd"] = environment.tool_version([rsyslogd_binary(), "-v"])
    env = environment.collect(
        server_version=pg.version(), tools=tools,
        extra={**environment.pg_test_timing(pg.binary("pg_test_timing")), "pgbench_init_s": init_s,
               "log_dir_on": study.log_dir_on, "backend": pg.backend, "image": getattr(pg, "image", None),
               # the package the image pinned (docker/servers.tsv), beside the server's own SHOW server_version
               **({"image_server_version": image_server_version(pg.image)} if pg.backend == "container" else {}),
               # the syslog daemons' input rate limit decides what a syslog destination keeps: the claims read it
               **({"syslog_rate_limit": study.syslog_rate_limit} if syslog is not None else {}), **limited,
               **({"fillfactor": study.fillfactor} if study.fillfactor is not None else {})},
    )
    return PgBench(study, pg, pgb, syslog, log_dir, limit, load), env


def start(study: PgStudy, stack: contextlib.ExitStack) -> tuple[object, dict]:
    """The (resolved) study's bench and environment record: one server, or one per variant behind a
    SplitBench (the record is then ``{"variants": {label: record}}``). A variant whose declared load is an import
    starts no server here (each of its runs starts its own) and shares the record of the study's server on its
    backend; when every variant shares one record (study 07's two phases), it is the study's record."""
    if not study.variants:
        return start_stack(study, study.backend, stack, load=study.load_of())
    benches, envs = {}, {}
    for label, backend, image, _ in study.variants:
        if not study.load_of(label).fresh:
            benches[label], envs[label] = start_stack(study, backend, stack, image, study.load_of(label))
    for label, backend, image, _ in study.variants:
        if study.load_of(label).fresh:
            host = next(h for h, b, *_ in study.variants if b == backend and not study.load_of(h).fresh)
            benches[label] = ImportBench(study, study.load_of(label), benches[host].server_version)
            envs[label] = envs[host]
    order = [label for label, *_ in study.variants]
    benches, envs = {k: benches[k] for k in order}, {k: envs[k] for k in order}
    one = next(iter(envs.values()))
    env = one if len(envs) > 1 and all(e is one for e in envs.values()) else {"variants": envs}
    return runner.SplitBench(benches, envs), env

