"""Study 02: what does each PostgreSQL log destination cost? (post 000, depesz 2013, redone)

Every statement is logged (``log_min_duration_statement = 0``, as in the post)
to one destination at a time; pgbench's select-only test measures throughput
and latency; each destination's sink is counted to see whether every record
arrived (the post's syslog kept ~0.5 % of them and nobody saw it in the tps).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import params, paths, records, stats
from ..benches import postgres as pg
from . import common

NAME = "pg_destinations"
BASELINE = "none"
POST = "000_d12f15a856ad9e5d.txt"  # the post this study redoes (shared/seeds)
BASE = pg.BASE
DESTINATIONS = pg.DESTINATIONS

PROFILES: dict[str, dict[str, object]] = {
    # seconds: what tests and nbval run
    "smoke": {"clients": [1], "repeats": 2, "duration": 1, "warmup": 0, "scale": 1, "sampling_rate": 0.1},
    # the committed run: ~15 minutes on two cores (9 configurations with the A/A control x 3 levels x 4
    # blocks of ~5.9 s runs = ~11 min, then up to 4 min of adaptive blocks where a ratio is still wide)
    "standard": {"clients": [1, 4, 8], "repeats": 4, "duration": 4, "warmup": 1, "scale": 10, "sampling_rate": 0.05,
                 "target_halfwidth": 0.03, "time_budget_s": 240, "max_repeats": 12},
    # paper-grade: longer runs, the post's cached scale
    "full": {"clients": [1, 4, 8], "repeats": 5, "duration": 30, "warmup": 5, "scale": 200, "sampling_rate": 0.01,
             "target_halfwidth": 0.03, "time_budget_s": 3600, "max_repeats": 20},
}


@dataclass(frozen=True, kw_only=True)
class PgDestinationsStudy(pg.PgStudy):
    pass


def define(profile: str = "standard", destinations: object = None, scale: object = None,
           query_mode: str = "prepared", syslog_rate_limit: object = False, log_dir_on: str = "disk",
           sampling_rate: object = None, shared_buffers: str = "128MB", extra_settings: object = None,
           backend: str = "auto", image: object = None, versions: object = None, pg_bindir: object = None,
           **shared: object) -> PgDestinationsStudy:
    """Check every parameter and freeze the study; raises ParameterError/SettingError before anything starts.
    ``shared``: the parameters every study has (common.SHARED: clients, repeats, duration, warmup, seed, ...)."""
    d = common.profile_lookup(profile, PROFILES)
    chosen = params.name_list("destinations", list(DESTINATIONS) if destinations is None else destinations, DESTINATIONS)
    engine = pg.pg_fields(backend=backend, image=image, scale=d("scale", scale), query_mode=query_mode,
                          syslog_rate_limit=syslog_rate_limit, log_dir_on=log_dir_on,
                          sampling_rate=d("sampling_rate", sampling_rate), shared_buffers=shared_buffers,
                          extra_settings=extra_settings, pg_bindir=pg_bindir)
    study = PgDestinationsStudy(
        **common.study_fields(SPEC, profile, PROFILES, **shared), **engine,
        configurations=pg.configurations(common.with_baseline(BASELINE, chosen), DESTINATIONS, engine["pg_bindir"],
                                     engine["base"], engine["query_mode"]))
    return pg.checked(study, versions)


def run(study: pg.PgStudy, *, progress: bool = True) -> common.StudyResult:
    """Start everything the study needs, run its schedule, stop and remove everything again."""
    return common.run_study(study, pg.start, processed_tables, progress=progress)


def summary(runs: pd.DataFrame, baseline: str = BASELINE) -> pd.DataFrame:
    """tps mean ± CI, ratio to the baseline ± Fieller CI, loss and log rates, per configuration × clients
    (and per variant, each against its own baseline, when the study spans several servers)."""
    return common.summary_per_variant(
        runs, baseline, ("latency_p95_ms", "log_loss", "log_lines_per_s", "log_bytes_per_s", "server_cpu_s",
                         "logger_cpu_s"), list(DESTINATIONS))


def processed_tables(result: common.StudyResult) -> dict[str, pd.DataFrame]:
    return {"summary": summary(result.runs), "runs": records.flatten(result.runs)}


def load_processed(processed_dir: Path = paths.PROCESSED) -> tuple[pd.DataFrame, pd.DataFrame]:
    return common.load_processed(NAME, "summary", "runs", processed_dir=processed_dir)


# -- findings: sentences whose every number is read from the summary ---------------------------------

def finding_overhead(summary: pd.DataFrame, baseline: str = BASELINE) -> str:
    """Per concurrency: the cheapest and dearest destination, and which ones are distinguishable from the baseline."""
    lines = []
    for clients, g in stats.logging_rows(summary, baseline).groupby("clients", sort=True):
        g = g.sort_values("ratio", ascending=False)
        best, worst = g.iloc[0], g.iloc[-1]
        slower = g[g["ratio_ci_high"] < 1]["configuration"].tolist()
        lines.append(
            f"- **{clients} client(s):** cheapest `{best['configuration']}` at {common.ci(best, 'ratio')} of the baseline's "
            f"throughput, dearest `{worst['configuration']}` at {common.ci(worst, 'ratio')}; "
            + (f"{len(slower)} of {len(g)} destinations are slower than `{baseline}` with 95 % confidence "
               f"({', '.join(f'`{c}`' for c in slower)})." if slower else
               f"no destination is slower than `{baseline}` with 95 % confidence.")
        )
    return "\n".join(lines)


def finding_loss(summary: pd.DataFrame, baseline: str = BASELINE) -> str:
    """Which destinations lost statement records, and how many."""
    g = stats.logging_rows(summary, baseline)
    lost = g[g["log_loss_ci_low"] > 0]
    worst = g.loc[g["log_loss_mean"].idxmax()] if g["log_loss_mean"].notna().any() else None
    head = (
        f"Largest mean loss: `{worst['configuration']}` at {worst['clients']} client(s), "
        f"{100 * worst['log_loss_mean']:.3g} % of the expected records "
        f"(95 % CI {100 * worst['log_loss_ci_low']:.3g} to {100 * worst['log_loss_ci_high']:.3g} %, n={int(worst['n'])})."
        if worst is not None else "No destination expected records."
    )
    tail = (
        " Loss distinguishable from zero: " + ", ".join(f"`{r.configuration}` ({r.clients} clients)" for r in lost.itertuples()) + "."
        if len(lost) else " No destination's loss is distinguishable from zero at 95 % confidence."
    )
    return head + tail


def finding_rates(summary: pd.DataFrame, baseline: str = BASELINE) -> str:
    g = stats.logging_rows(summary, baseline)
    top = g.loc[g["log_bytes_per_s_mean"].idxmax()]
    return (
        f"The logging rate ranged from {g['log_lines_per_s_mean'].min():,.0f} to {g['log_lines_per_s_mean'].max():,.0f} "
        f"lines/s; the most bytes went to `{top['configuration']}` at {top['clients']} client(s): "
        f"{top['log_bytes_per_s_mean'] / 1e6:.3g} MB/s."
    )


# -- tables for the notebook ----------------------------------------------------------------------

def configuration_table(study: pg.PgStudy) -> pd.DataFrame:
    """Each configuration: the settings it changes from the base, and where its records are counted."""
    rows = []
    for c in study.configurations:
        changed = {k: v for k, v in c.settings.items() if study.base.get(k) != v}
        rows.append({"configuration": c.name,
                     "settings (over the base)": ", ".join(f"{k}={v!r}" for k, v in changed.items()) or "(base only)",
                     "sinks": ", ".join(c.destinations) or "–"})
    return pd.DataFrame(rows).set_index("configuration")


design_summary = pg.design_summary


def environment_table(result: common.StudyResult) -> pd.DataFrame:
    return common.environment_table(result, {"timer loop (ns, pg_test_timing)": result.environment.get("timer_loop_ns")})


# Which of the post's experiments a run of ours is comparable to, by query mode: its update ran
# -M prepared on a cached scale (200), its first run the simple protocol on an IO-bound scale (2000).
POST_EXPERIMENT = {"prepared": "cached_prepared_select", "simple": "io_bound_select"}


def published_ratios(query_mode: str = "prepared") -> pd.DataFrame:
    """Post 000's throughput ratios to its own baseline, keyed like our configurations."""
    from .. import reference

    d = reference.published_ratios(POST, POST_EXPERIMENT[query_mode])
    return d[d["metric"] == "throughput"].reset_index(drop=True)


def beside_post(summary: pd.DataFrame, published: pd.DataFrame) -> pd.DataFrame:
    """Our ratio with its CI next to the post's ratio for the same destination and concurrency."""
    from ..plots import fmt_ci

    pub = published.set_index(["configuration_key", "clients"])["ratio"]
    rows = []
    for r in stats.logging_rows(summary, BASELINE).itertuples():
        post = pub.get((r.configuration, r.clients))
        inside = None if post is None or pd.isna(r.ratio_ci_low) else bool(r.ratio_ci_low <= post <= r.ratio_ci_high)
        rows.append({"configuration": r.configuration, "clients": r.clients,
                     "ours: ratio [95 % CI] (n)": fmt_ci(r.ratio, r.ratio_ci_low, r.ratio_ci_high, r.n),
                     "post 000": "–" if post is None else f"{post:.3g}",
                     "post inside our CI": "–" if inside is None else ("yes" if inside else "no")})
    return pd.DataFrame(rows).set_index(["configuration", "clients"])


def _published(runs: pd.DataFrame | None) -> pd.DataFrame:
    mode = str(runs["query_mode"].iloc[0]) if runs is not None and "query_mode" in runs and len(runs) else "prepared"
    return published_ratios(mode)


SPEC = common.StudySpec(
    name=NAME, engine="postgresql", title="PostgreSQL log destinations", post=POST, baseline=BASELINE,
    notebook="02_pg_destinations.ipynb", seed=20130905, published=_published, experiment="000/cached_prepared_select",
    committed={"profile": "standard", "backend": "local"},
    smoke=({"profile": "smoke", "backend": "local"}, {"profile": "smoke", "backend": "container"}), paper_order=1)
