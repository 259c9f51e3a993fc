"""The PostgreSQL study type: what every PostgreSQL study shares (:class:`PgStudy`), its fields checked, its design
(blocks or switchback), a version sweep's variants, and the tables a notebook shows of it."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from ....base import params
from ... import runner
from ...design import Study
from ....servers import postgres as pgserver
from ....servers.process import is_root
from ....servers.syslog import rsyslogd_binary
from ....base.settings import Configuration, Settings, validate_postgres
from ....workloads.pgbench import QUERY_MODES
from ....workloads.workload import Import
from ..backend import check_backend, check_image, resolve_backend
from .destinations import BASE, STDERR_DIRECT_SINK
from .load import DEFAULT, Load

LOG_DIR_ON = ("disk", "tmpfs")
DEFAULT_VERSION = "15"  # a container's PostgreSQL unless a version sweep says otherwise


@dataclass(frozen=True, kw_only=True)
class PgStudy(Study):
    """What every PostgreSQL study shares; a study subclasses it with its own parameters."""

    base: Settings
    scale: int
    query_mode: str
    syslog_rate_limit: bool
    log_dir_on: str
    sampling_rate: float
    pg_bindir: str
    image: str | None
    # (label, backend, image, version) per server when one schedule spans several; configurations are then
    # "label/name". ``version``: the PostgreSQL version of a version sweep's container (its default image),
    # None for the default one. Backend and image stay as asked until the run resolves them (resolved()).
    variants: tuple[tuple[str, str, str | None, str | None], ...] = ()
    # A memory cgroup limit (MB) on the server's processes, page cache included, with the data evicted from the
    # page cache before the runs: the IO-bound regime on a dataset smaller than RAM (servers.memlimit). None: none.
    memory_limit_mb: int | None = None
    # Under that limit, a cap on the reads per second the server's processes issue to the data's disk (a slow
    # disk's pace on a fast virtual one; servers.memlimit). None: the disk's own pace.
    read_iops: int | None = None
    # Contention evidence per measured run (logbench.measure.contention): backends' wchan sampled at this rate (0: off),
    # their and the collector's context switches, the block reads and hits of the run (pg_stat_database);
    # perf_profile: a perf cpu-clock profile during the warm-up of each cell's first measured run.
    wchan_hz: float = 0.0
    perf_profile: bool = False
    # The switchback design (logbench.measure.switchback): every arm switched inside one continuous load per clients
    # level; None: the block design (a separate run per configuration).
    switchback: object = None
    # The load each server's runs measure (.load.Load), by variant label ("" without variants): what a study declares
    # instead of writing a bench (07: an import and a counted TPC-B load). A label not named: pgbench -S.
    loads: tuple[tuple[str, Load], ...] = ()
    # pgbench -i -F of the study's dataset; None: pgbench's own (100).
    fillfactor: int | None = None

    def load_of(self, label: str = "") -> Load:
        """The declared load of the server ``label`` (a variant's; "" without variants)."""
        return dict(self.loads).get(label, DEFAULT)

    @property
    def needs_syslog(self) -> bool:
        return any(s in ("syslog", "remote_syslog") for c in self.configurations for s in c.destinations)

    @property
    def needs_remote(self) -> bool:
        return any("remote_syslog" in c.destinations for c in self.configurations)

    @property
    def needs_direct_stderr(self) -> bool:
        """A configuration runs with logging_collector = off: the server's stderr must go to a file of the
        study's log directory (``STDERR_DIRECT``), where the backends write their lines themselves."""
        return any(STDERR_DIRECT_SINK in c.destinations for c in self.configurations)

    def resolved(self) -> "PgStudy":
        """The study as it runs: backend 'auto' decided, each container's image found (ServerStartError
        naming the images tried when none is there), the syslog destinations checked against the backend
        they will use. Asks the Docker engine, so the run calls it, before anything starts."""
        from ....servers.containers import resolve_image

        if self.switchback is not None:  # (with_loads checks it too: a study given its design after its loads)
            for _, load in self.loads:
                check_switchback_load(load, self.query_mode)

        def server(backend: str, image: str | None, version: str | None) -> tuple[str, str | None]:
            backend = resolve_backend(backend)
            if version is not None and backend != "container":
                raise params.ParameterError("versions", version, "a version sweep runs in containers: "
                                            "backend 'container', or 'auto' once a Docker engine answers "
                                            "(`bash scripts/setup.sh --docker` installs and starts one)")
            return backend, (resolve_image("postgres", version or DEFAULT_VERSION, image)
                             if backend == "container" else None)

        if not self.variants:
            backend, image = server(self.backend, self.image, None)
            study = dataclasses.replace(self, backend=backend, image=image)
        else:
            variants = tuple((label, *server(b, i, v), v) for label, b, i, v in self.variants)
            study = dataclasses.replace(self, variants=variants,
                                        backend="+".join(dict.fromkeys(b for _, b, _, _ in variants)))
        check_syslog(study)
        return study


def pg_fields(*, backend: str, image: object, scale: object, query_mode: str, syslog_rate_limit: object,
              log_dir_on: str, sampling_rate: object, shared_buffers: str, extra_settings: object,
              pg_bindir: object, base: dict = BASE) -> dict[str, object]:
    """The :class:`PgStudy` fields, checked; ``backend`` 'auto' and the image stay as asked until the run
    (:meth:`PgStudy.resolved`)."""
    params.choice("query_mode", query_mode, QUERY_MODES)
    params.choice("log_dir_on", log_dir_on, LOG_DIR_ON)
    check_backend(backend)
    rate_limit = params.boolean("syslog_rate_limit", syslog_rate_limit)
    bindir = pgserver.find_bindir(pg_bindir)
    extra = params.mapping("extra_settings", extra_settings)
    settings = Settings.of("postgresql", {**base, "shared_buffers": shared_buffers, **extra})
    validate_postgres(settings, bindir / "postgres")
    return dict(backend=backend, base=settings, scale=params.positive_int("scale", scale), query_mode=query_mode,
                syslog_rate_limit=rate_limit, log_dir_on=log_dir_on,
                # None: no transaction log kept (a load whose latencies the study does not read)
                sampling_rate=0.0 if sampling_rate is None else params.fraction("sampling_rate", sampling_rate),
                pg_bindir=str(bindir),
                image=check_image(image))


def switchback_design(profile: dict, configurations: tuple[Configuration, ...], pg_bindir: str, *, design: object,
                      lead_in_s: float, versions: object = None, memory_limit_mb: object = None, **given: object):
    """The study's switchback design from its parameters (None: the profile's), or None for the block design.
    Refused (ParameterError naming the parameter) before anything starts: an arm that needs a restart, a version
    sweep (its servers interleave as separate runs), a window not longer than its guard."""
    from ... import switchback
    from ....base.settings import postgres_catalog

    sb = switchback.from_profile(profile, design=design, lead_in_s=lead_in_s, **given)
    if sb is None:
        return None
    if versions is not None:
        raise params.ParameterError("design", "switchback", "'blocks' with a version sweep (versions): its servers "
                                    "interleave as separate runs")
    catalog = postgres_catalog(str(Path(pg_bindir) / "postgres"))
    switchback.check_reloadable(configurations, {k: v.context for k, v in catalog.items()})
    return sb


def execute(study: PgStudy, bench, env: dict, progress: bool = True) -> tuple:
    """A PostgreSQL study's schedule (``common.run_study``'s ``execute``): its switchback loads when define() gave it
    the switchback design (logbench.measure.switchback), else every planned run (the block design)."""
    if study.switchback is not None:
        from ... import switchback

        return switchback.execute(study, bench, env, progress)
    return runner.execute_all(study, bench, env, progress)


def swept_versions(versions: object) -> tuple[str, ...] | None:
    """A version sweep's PostgreSQL majors (docker/servers.tsv), checked once, before anything starts (a study
    needs them early for its default choice, :func:`checked` at the end); None without a sweep."""
    if versions is None:
        return None
    from ....servers.containers import PG_IMAGES

    return params.name_list("versions", versions, PG_IMAGES, coerce=str)


def checked(study: PgStudy, swept: tuple[str, ...] | None = None) -> PgStudy:
    """The checks that need the whole study: a version sweep (``swept``: its majors, :func:`swept_versions`),
    whole seconds, the switchback layout against the arms, syslog's needs."""
    if swept is not None:
        from ...versions import check_pg_destinations

        for v in swept:  # a destination the major does not have (jsonlog before 15) fails here, not at start
            check_pg_destinations(v, [s for c in study.configurations for s in c.destinations])
        if study.backend == "local":
            raise params.ParameterError("versions", list(swept), "a version sweep runs in containers: set backend "
                                        "to 'container' or 'auto' with a Docker engine")
        # Each version's image is found when the study runs (resolved()), before any server starts.
        study = with_variants(study, [(f"pg{v}", study.backend, None, v) for v in swept])
    if study.duration != int(study.duration):
        raise params.ParameterError("duration", study.duration, "whole seconds (pgbench -T takes seconds)")
    if study.switchback is not None:
        # here, not in switchback_design: the arms it lays out include the A/A control, known once the study is
        study.switchback.check_arms(len(study.planned_configurations))
    check_syslog(study)
    if study.needs_syslog:
        rsyslogd_binary()
    return study


def check_syslog(study: PgStudy) -> None:
    """Syslog destinations on the local backend need root (a private /dev/log, a network namespace);
    under 'auto' this is known once the run has decided the backend."""
    if study.needs_syslog and "local" in study.backend.split("+") and not is_root():
        raise params.ParameterError(
            "destinations", [c.name for c in study.configurations if c.destinations and "syslog" in c.destinations[0]],
            "without root, only 'none', 'stderr', 'csvlog', 'jsonlog' (syslog destinations give the server a "
            "private /dev/log and a network namespace, which need root)")


def with_variants(study: PgStudy, variants: list[tuple[str, str, str | None, str | None]]) -> PgStudy:
    """The same study on several servers in one interleaved schedule (see runner.SplitBench)."""
    configs = tuple(dataclasses.replace(c, name=f"{label}{runner.SplitBench.SEP}{c.name}")
                    for c in study.configurations for label, *_ in variants)
    return dataclasses.replace(study, configurations=configs, variants=tuple(variants),
                               backend="+".join(dict.fromkeys(b for _, b, _, _ in variants)))


def with_loads(study: PgStudy, loads: dict[str, Load]) -> PgStudy:
    """The study with its declared loads (variant label -> Load; "" without variants), checked before anything
    starts: each label a server of the study, a pgbench load's protocol the study's query mode, an import (a fresh
    server per run) on the local backend beside a server of the study's that is started once (its environment);
    under the switchback design, a timed load only (:func:`check_switchback_load`)."""
    backends = {label: backend for label, backend, *_ in study.variants} or {"": study.backend}
    unknown = sorted(set(loads) - set(backends))
    if unknown:
        raise params.ParameterError("loads", unknown, sorted(backends))
    for label, load in loads.items():
        if study.switchback is not None:
            check_switchback_load(load, study.query_mode)
        w = load.workload_for(study.query_mode)
        if w.protocol != study.query_mode:
            raise params.ParameterError("query_mode", study.query_mode, f"{w.protocol!r}, the protocol of the load "
                                        f"{w.label!r}")
        if load.fresh and backends[label] != "local":
            raise params.ParameterError("backend", backends[label], "'local': an import starts a fresh local server "
                                        "for each run")
    hosts = [label for label, b in backends.items() if b == "local" and not loads.get(label, DEFAULT).fresh]
    if any(load.fresh for load in loads.values()) and not hosts:
        raise params.ParameterError("loads", sorted(loads), "besides the imports, a load on a local server started "
                                    "once (whose environment record and version the imports' runs share)")
    return dataclasses.replace(study, loads=tuple(loads.items()))


def check_switchback_load(load: Load, query_mode: str) -> None:
    """The switchback design runs the declared load as one continuous pgbench -T per load (switchback.load), its
    windows cut from that load's seconds: a load that is not timed, or whose evidence is per run, is refused
    (ParameterError naming ``design``) before anything starts."""
    w = load.workload_for(query_mode)
    if isinstance(w, Import):
        why = f"an import ({w.label}: a fresh server per run)"
    elif w.counted:
        why = f"a counted load ({w.label}: pgbench -t ends with its transactions, not with the last window)"
    elif load.wal or load.checkpoint_first:
        why = f"WAL counted or a checkpoint before each run ({w.label}: a window is no run of its own)"
    else:
        return
    raise params.ParameterError("design", "switchback", f"'blocks' with {why}; the switchback design runs a timed "
                                "load (pgbench -T: a built-in or a script, by time)")


def configuration_table(study: PgStudy):
    """Each configuration: the settings it changes from the base, where its records are counted, and how many
    records of each kind a transaction must leave there."""
    import pandas as pd

    rows = []
    for c in study.configurations:
        changed = {k: v for k, v in c.settings.items() if study.base.get(k) != v}
        rows.append({"configuration": c.name, "settings (over the base)":
                     ", ".join(f"{k}={v}" for k, v in changed.items()) or "(base only)",
                     "sinks": ", ".join(c.destinations) or "–",
                     "records per transaction": "; ".join(f"{r.kind} {r.per_transaction:g}" for r in c.records) or "0"})
    return pd.DataFrame(rows).set_index("configuration")


def design_summary(study: PgStudy) -> dict[str, object]:
    """A PostgreSQL study's design as the notebooks show it (planned runs before any adaptive block)."""
    if study.switchback is not None:
        sb = study.switchback
        arms = len(study.planned_configurations)
        design = {"design": f"switchback ({sb.layout})", "loads per clients level": f"{sb.loads} (up to {sb.max_loads})",
                  "blocks per load": sb.blocks, "windows per block": sb.windows_per_block(arms),
                  "window (s)": sb.window_s, "guard after each switch (s)": sb.guard_s,
                  "lead-in per load (s)": sb.lead_in_s,
                  "load length (s)": sb.lead_in_s + sb.load_seconds(arms)}
    else:
        design = {"design": "blocks", "repeats": study.repeats, "runs planned": len(study.plan()),
                  "duration (s)": study.duration, "warm-up per run (s)": study.warmup}
    return {
        "profile": study.profile, "backend": study.backend, "clients": list(study.clients), **design,
        "scale": study.scale, "query mode": study.query_mode,
        "syslog rate limit": study.syslog_rate_limit, "log directory on": study.log_dir_on, "seed": study.seed,
        "output": str(study.output_dir),
        **({"memory limit (MB, page cache included)": study.memory_limit_mb,
            "shared_buffers": study.base.get("shared_buffers")} if study.memory_limit_mb else {}),
        **({"disk reads per second (limit)": study.read_iops} if study.read_iops else {}),
    }
