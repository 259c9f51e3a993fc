"""Study 03: do containers change the answer? The PG destinations study under both backends at once.

Both stacks (the local server and the container, each with its own syslog
daemons) run side by side, and one schedule interleaves their runs, so drift
of this machine lands on both equally. Each backend's overhead ratios are
against its own ``none``; whether a ratio differs between backends is the
interaction term of an OLS fit of log(tps) on destination × backend per
concurrency (statsmodels, HC3 errors): exp(coefficient) is the container's
ratio divided by the local one.

Both sides' server versions are recorded to the patch level (every run's ``server_version``), and the summary,
the interaction table and the finding carry them: set-up installs the local server at the image's pinned
version (docker/servers.tsv, scripts/setup_packages.sh), but a machine that had another patch level keeps it,
and then the backend effect is also a version effect, which the finding says, naming both.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf

from ..base import params, paths, records, stats
from ..measure.benches import postgres as pg
from . import common
from .common import server_versions  # {backend: its runs' server versions}

NAME = "backend_comparison"
BACKENDS = ("local", "container")
BASELINE = "none"
POST = "000_d12f15a856ad9e5d.txt"

# Run sizes as study 02's (notebook 02), on fewer destinations and concurrencies: each runs twice.
_RUN = {"smoke": {"duration": 1, "warmup": 0, "scale": 1, "sampling_rate": 0.1},
        "standard": {"duration": 4, "warmup": 1, "scale": 10, "sampling_rate": 0.05},
        "full": {"duration": 30, "warmup": 5, "scale": 200, "sampling_rate": 0.01}}
PROFILES = {
    "smoke": {"destinations": ["none", "csvlog", "syslog"], "clients": [1], "repeats": 2, **_RUN["smoke"]},
    # 5 destinations + the A/A control, x 2 levels x 2 backends x 5 blocks of ~5.8 s runs = ~12 min,
    # then up to 3 min of adaptive blocks
    "standard": {"destinations": ["none", "stderr", "csvlog", "syslog", "remote_syslog_udp"], "clients": [1, 4],
                 "repeats": 5, **_RUN["standard"], "target_halfwidth": 0.03, "time_budget_s": 180, "max_repeats": 10},
    "full": {"destinations": list(pg.DESTINATIONS), "clients": [1, 4, 8], "repeats": 5, **_RUN["full"]},
}


# What each parameter means (unit, allowed values), one line each: notebook 03's generated
# parameters cell and `run STUDY --help` show it; a shared parameter not named here has parameters.HELP's.
HELP = {
    "profile": '"smoke" (seconds; tests), "standard" (committed), "full" (all destinations, 1/4/8 clients)',
    "destinations": "as in notebook 02; None: the profile's (standard: none, stderr, csvlog, syslog, "
                    "remote_syslog_udp)",
    "clients": "pgbench -c values, each > 0; None: the profile's (standard: [1, 4])",
    "repeats": "interleaved blocks, > 0; None: the profile's (5)",
    "duration": "seconds measured per run, > 0; None: as notebook 02's profile",
    "warmup": "seconds of unrecorded pgbench before each run, ≥ 0",
    "scale": "pgbench scale factor; None: as notebook 02's profile",
    "query_mode": 'pgbench -M: "simple" or "prepared"',
    "image": "container image; None: official postgres:15 where available, else logbench/postgres:15",
    "output_dir": "raw run records; None: results/backend_comparison/<UTC time> (smoke: a temp dir)",
    "syslog_rate_limit": "rsyslog input rate limiting: False (current rsyslog default) or True (5 s / 200 "
                         "messages, as older distributions shipped)",
    "log_dir_on": "where PostgreSQL's own log files go: \"disk\" (/var/tmp) or \"tmpfs\" (/dev/shm)",
    "sampling_rate": "fraction of transactions pgbench logs for latency percentiles, (0, 1]; None: none logged",
    "shared_buffers": "PostgreSQL shared_buffers",
    "extra_settings": 'more PostgreSQL settings for every configuration, e.g. {"track_io_timing": "on"}; '
                      "names checked against the server's catalog",
    "pg_bindir": "PostgreSQL's bin directory (local backend); None: the newest installed",
}


@common.declare(PROFILES, help=HELP)
def define(profile: str = "standard", destinations: list[str] | None = None, scale: int | None = None,
           query_mode: str = "prepared", syslog_rate_limit: bool = False, log_dir_on: str = "disk",
           sampling_rate: float | None = None, shared_buffers: str = "128MB", extra_settings: dict | None = None,
           image: str | None = None, pg_bindir: str | None = None, **shared: object) -> pg.PgStudy:
    """The PG destinations study on both backends in one schedule (a Docker engine must answer)."""
    d = common.profile_lookup(profile, PROFILES)
    chosen = params.name_list("destinations", d("destinations", destinations), pg.DESTINATIONS)
    engine = pg.pg_fields(backend="container", image=image, scale=d("scale", scale), query_mode=query_mode,
                          syslog_rate_limit=syslog_rate_limit, log_dir_on=log_dir_on,
                          sampling_rate=d("sampling_rate", sampling_rate), shared_buffers=shared_buffers,
                          extra_settings=extra_settings, pg_bindir=pg_bindir)
    study = pg.checked(pg.PgStudy(
        **common.study_fields(SPEC, profile, PROFILES, **shared), **engine,
        configurations=pg.configurations(common.with_baseline(BASELINE, chosen), pg.DESTINATIONS, engine["pg_bindir"],
                                     engine["base"], engine["query_mode"])))
    return pg.with_variants(study, [(b, b, engine["image"], None) for b in BACKENDS])


@dataclasses.dataclass(frozen=True)
class ComparisonResult:
    study: pg.PgStudy
    runs: pd.DataFrame
    environments: dict


def run(study: pg.PgStudy, *, progress: bool = True) -> ComparisonResult:
    r = common.run_study(study, processed_tables, progress=progress)
    return ComparisonResult(study, r.runs, r.environment["variants"])


def processed_tables(result: common.StudyResult) -> dict[str, pd.DataFrame]:
    return {"summary": summary(result.runs), "interaction": interaction(result.runs),
            "runs": records.flatten(result.runs)}


def summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Per backend: tps and the ratio to that backend's own 'none', with CIs, and the server version it ran."""
    out = common.summary_per_variant(
        runs, BASELINE, ("latency_p95_ms", "log_loss", "log_lines_per_s", "log_bytes_per_s", "server_cpu_s",
                         "logger_cpu_s"), list(pg.DESTINATIONS)).rename(columns={"variant": "backend"})
    return out.assign(server_version=out["backend"].map(server_versions(runs)))


def patch_level(version: str) -> str:
    """The server's own version from a recorded one: '15.18 (Debian 15.18-0+deb12u1)' -> '15.18'."""
    return version.split(" ")[0]


def version_note(local: str, container: str) -> str:
    """Whether the two backends ran the same server, naming both: the backend effect is the backend's alone only
    where they did."""
    if local == container:
        return f"Both backends ran the same server, {local}: a difference between them is the backend's."
    if patch_level(local) == patch_level(container):
        return (f"Both backends ran PostgreSQL {patch_level(local)}, in different builds (local {local}, container "
                f"{container}): a difference between them is the backend's and the build's.")
    return (f"The backends ran different server versions, local {local} and container {container}: each difference "
            "between them is the backend's effect and the version difference's together, not the backend's alone.")


def interaction(runs: pd.DataFrame, confidence: float = stats.CONFIDENCE) -> pd.DataFrame:
    """Container ratio / local ratio per destination and concurrency, from log(tps) ~ destination * backend; each
    row names both sides' server versions (``local_server``, ``container_server``)."""
    r = common.split_variant(runs)
    versions = server_versions(runs)
    rows = []
    for clients, g in r.groupby("clients"):
        g = g.assign(log_tps=np.log(g["tps"]))
        fit = smf.ols(f"log_tps ~ C(configuration, Treatment('{BASELINE}')) * C(variant, Treatment('local'))",
                      data=g).fit(cov_type="HC3")
        ci = fit.conf_int(alpha=1 - confidence)
        for term in fit.params.index:
            if ":" not in term:
                continue
            dest = term.split("[T.")[1].split("]")[0]
            est, (lo, hi) = fit.params[term], ci.loc[term]
            rows.append({"destination": dest, "clients": clients, "n": int(fit.nobs),
                         "ratio_of_ratios": math.exp(est), "ci_low": math.exp(lo), "ci_high": math.exp(hi),
                         "p_value": float(fit.pvalues[term]), "local_server": versions.get("local"),
                         "container_server": versions.get("container")})
    return pd.DataFrame(rows)


def finding(inter: pd.DataFrame) -> str:
    differs = inter[(inter["ci_high"] < 1) | (inter["ci_low"] > 1)]
    lines = [f"- `{r.destination}`, {r.clients} client(s): container ratio / local ratio = {r.ratio_of_ratios:.3g} "
             f"[{r.ci_low:.3g}, {r.ci_high:.3g}]" for r in inter.itertuples()]
    verdict = ("No destination's overhead differs between the backends at 95 % confidence."
               if differs.empty else
               f"{len(differs)} of {len(inter)} destination × concurrency cells differ at 95 % confidence: "
               + ", ".join(f"`{r.destination}` ({r.clients})" for r in differs.itertuples()) + ".")
    if {"local_server", "container_server"} <= set(inter.columns) and len(inter):
        verdict += " " + version_note(str(inter["local_server"].iloc[0]), str(inter["container_server"].iloc[0]))
    return "\n".join(lines) + "\n\n" + verdict


def load_processed(processed_dir: Path = paths.PROCESSED) -> tuple[pd.DataFrame, pd.DataFrame]:
    return common.load_processed(NAME, "summary", "interaction", processed_dir=processed_dir)


design_summary = pg.design_summary


# No published= : the figure shows post 000's ratios of the registry's experiment as they are.
SPEC = common.StudySpec(
    name=NAME, engine="postgresql", title="PostgreSQL log destinations, local vs container", post=POST,
    baseline=BASELINE, notebook="03_local_vs_container.ipynb", seed=20130905,
    experiment="000/cached_prepared_select", committed={"profile": "standard", "publish": True}, paper_order=4)
