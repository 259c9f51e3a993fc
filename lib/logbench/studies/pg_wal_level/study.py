"""Study 07's plan and run: ``define`` checks every parameter and freezes the study with its declared loads
(ParameterError before any server starts), ``run`` executes it on the shared PostgreSQL bench; the plan's tables for
the notebook (``design_summary``, ``level_table``)."""

from __future__ import annotations

import pandas as pd

from ...base import params
from ...measure.benches import postgres as pg
from ...base.errors import ParameterError
from ...workloads.workload import GENERATE
from .. import common
from .analysis import processed_tables
from .spec import BASELINE, LEVELS, PHASES, PROFILES, SPEC, WAL_BASE, WAL_LEVELS, WalLevelStudy, level_settings, loads


# What each parameter means (unit, allowed values), one line each: notebook 07's generated
# parameters cell and `run STUDY --help` show it; a shared parameter not named here has parameters.HELP's.
HELP = {
    "profile": "run size: \"smoke\" (seconds; tests), \"standard\" (~6 min; committed), \"full\" (the post's "
               "scale 100, 160,000 transactions)",
    "levels": 'subset of: minimal, replica, logical; None: all ("minimal" is always added: it is the baseline)',
    "scale": "pgbench scale factor of the OLTP dataset, > 0; None: the profile's (standard: 20)",
    "import_scale": "pgbench scale factor of the import runs, > 0; None: the profile's (standard: 100, the post's)",
    "transactions": "TPC-B transactions per OLTP run (split evenly over the clients), > 0; None: the profile's "
                    "(standard: 15000)",
    "fillfactor": "pgbench -F, 10 to 100 (the post: 70)",
    "generate": "pgbench's data generation step: \"g\" (client-side COPY, the default) or \"G\" (server-side "
                "INSERT ... SELECT)",
    "shared_buffers": "PostgreSQL shared_buffers",
    "output_dir": "raw run records; None: results/pg_wal_level/<UTC time> (smoke: a temp dir)",
    "processed_dir": "tidy summary; None: data/processed (smoke: not written)",
    "idle_state": "CPU idle state while measuring: \"hold\" or \"free\"; None: profile's (\"hold\")",
    "placement": "CPU placement: \"none\" or \"split\"; None: profile's (\"none\")",
    "extra_settings": 'more PostgreSQL settings for every configuration, e.g. {"track_io_timing": "on"}; '
                      "names checked against the server's catalog",
    "pg_bindir": "PostgreSQL's bin directory (local backend); None: the newest installed",
}


# duration: the runner's pacing only (spec.py), not a parameter a notebook offers
@common.declare(PROFILES, help=HELP, hidden=("duration",))
def define(profile: str = "standard", levels: list[str] | None = None, scale: int | None = None,
           import_scale: int | None = None, transactions: int | None = None, fillfactor: int = 70,
           generate: str = "g", shared_buffers: str = "128MB", extra_settings: dict | None = None,
           pg_bindir: str | None = None, **shared: object) -> WalLevelStudy:
    """Check every parameter and freeze the study (ParameterError before any server starts)."""
    d = common.profile_lookup(profile, PROFILES)
    chosen = params.name_list("levels", list(LEVELS) if levels is None else levels, LEVELS)
    tx = params.positive_int("transactions", d("transactions", transactions))
    imported = params.positive_int("import_scale", d("import_scale", import_scale))
    ff = params.positive_int("fillfactor", fillfactor)
    if not 10 <= ff <= 100:
        raise ParameterError("fillfactor", ff, "a whole number from 10 to 100 (pgbench -F)")
    params.choice("generate", generate, GENERATE)
    extra = {**WAL_BASE, **params.mapping("extra_settings", extra_settings)}
    # sampling_rate None: no transaction log (its latencies are not what the study reads)
    engine = pg.pg_fields(backend="local", image=None, scale=d("scale", scale), query_mode="simple",
                          syslog_rate_limit=False, log_dir_on="disk", sampling_rate=None,
                          shared_buffers=shared_buffers, extra_settings=extra, pg_bindir=pg_bindir)
    clash = sorted(set(extra) & {k for s in WAL_LEVELS.values() for k in s})
    if clash:
        raise ParameterError("extra_settings", clash, "settings other than those each wal_level sets itself")
    fields = common.study_fields(SPEC, profile, PROFILES, whole_seconds=True, **shared)
    if fields["clients"] and tx < max(fields["clients"]):
        raise ParameterError("transactions", tx, f"at least one per client (≥ {max(fields['clients'])})")
    study = WalLevelStudy(
        **fields, **engine, transactions=tx, import_scale=imported, fillfactor=ff, generate=generate,
        configurations=pg.configurations(common.with_baseline(BASELINE, chosen), level_settings(LEVELS),
                                         engine["pg_bindir"], engine["base"], "simple"))
    # its two phases, each a variant of the one local server (runner.SplitBench: "import/…", "oltp/…") with its load
    study = pg.with_variants(study, [(p, "local", None, None) for p in PHASES])
    return pg.with_loads(study, loads(import_scale=imported, fillfactor=ff, generate=generate, transactions=tx))


def run(study: WalLevelStudy, *, progress: bool = True) -> common.StudyResult:
    return common.run_study(study, processed_tables, progress=progress)


def design_summary(study: WalLevelStudy) -> dict[str, object]:
    return {**pg.design_summary(study), "levels": [c.name for c in study.configurations],
            "import scale": study.import_scale, "transactions per OLTP run": study.transactions, "fillfactor": study.fillfactor,
            "generation step": study.generate}


def level_table() -> pd.DataFrame:
    """What each level sets (what it requires) over the base."""
    return pd.DataFrame([{"level": n, "settings": ", ".join(f"{k}={v}" for k, v in s.items())}
                         for n, s in WAL_LEVELS.items()]).set_index("level")
