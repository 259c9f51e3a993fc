"""Study 08: do max_connections and open idle sessions cost throughput? (post 004, Cybertec, max_connections part)

- **test 1** (`max{M}`): max_connections swept, the working pgbench clients and nothing else;
- **tests 2/3** (`max{M}_sleep`, `max{M}_idle`): the remaining slots filled with sessions held open by the
  study — running ``pg_sleep`` ("active but idle", as the post did) or connected without a query — with
  the working clients fixed (the post's 8 and 32 on 8 cores: 2 and 8 here, by clients per core).

Each session is a real connection opened before the run and closed after it, counted in ``pg_stat_activity``
(benches.pg_sessions). The server's memory with the sessions open is recorded. The post ran 9.3; PostgreSQL 14
made snapshots independent of the number of connections (GetSnapshotData no longer walks every PGPROC),
which predicts a flat curve for idle sessions where 9.3 declined.

``versions=["13", "15", "17"]`` runs the same study on each PostgreSQL version in its container (never local
beside container: the backend moves the numbers), one interleaved schedule, each version with its own
baseline, A/A control and slopes, side by side, never pooled (issue 23: 14 changed GetSnapshotData).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import statsmodels.formula.api as smf

from .. import params, paths, records, runner, stats
from ..benches import pg_sessions
from ..benches import postgres as pg
from ..errors import ParameterError
from ..settings import AA_SUFFIX, is_aa
from . import common

NAME = "pg_idle_connections"
POST = "004_5cd3e575f4305811.txt"
KINDS = ("none", "sleep", "idle")

PROFILES: dict[str, dict[str, object]] = {
    "smoke": {"clients": [1], "repeats": 2, "duration": 1, "warmup": 0, "scale": 1, "sampling_rate": 0.1,
              "max_connections": [10, 30]},
    # ~9.5 min on two cores (estimate): 3 levels x 3 kinds + the A/A control = 10 configurations x 2 client
    # levels x 3 blocks = 60 runs of ~9.5 s on average (3 s measured, 1 s warm-up, ~1.5 s of records and
    # drain, a ~2 s restart in two runs of three, up to ~600 sessions opened at ~110/s (8 at a time) and
    # closed in ~1.5 s)
    "standard": {"clients": [2, 8], "repeats": 3, "duration": 3, "warmup": 1, "scale": 10, "sampling_rate": 0.05,
                 "max_connections": [100, 300, 600]},
    # the post's range: 20-minute runs there, 30 s here
    "full": {"clients": [2, 8], "repeats": 5, "duration": 30, "warmup": 5, "scale": 100, "sampling_rate": 0.01,
             "max_connections": [100, 250, 500, 1000, 2000]},
}
# Issue 23's sweep (its own stem, common.stem): the standard profile's runs on PostgreSQL 13, 15 and 17
# (docker/servers.tsv), each in its container, one interleaved schedule, each version its own baseline, A/A and
# slopes (14 changed GetSnapshotData: post 004's idle-connection claim judged per version). ~17 min on two cores
# (estimate): 10 configurations x 2 client levels x 3 blocks x 3 versions = 180 runs of ~5.2 s (4 s of load, ~1.2 s
# besides: a container restart in two runs of three, 0.44 s median, and the sessions; a two-version container run
# of 100 / 600 at 8 clients, 2026-11-26, took ~1 s besides its load per run), after ~1 min starting the three
# containers and loading scale 10 into each. The standard sizes, unshrunk: the slopes need the three levels and the
# three blocks (each block its own intercept), and the post's two working-client levels stay.
PROFILES["versions"] = {**PROFILES["standard"], "versions": ["13", "15", "17"]}


def name_of(m: int, kind: str) -> str:
    return f"max{m}" if kind == "none" else f"max{m}_{kind}"


def plain(name: str) -> str:
    """The configuration without a version sweep's "pg13/" (runner.SplitBench)."""
    head, sep, rest = name.partition(runner.SplitBench.SEP)
    return rest if sep else head


def parse(name: str) -> tuple[int, str]:
    """'max500_sleep' -> (500, 'sleep'); the A/A control is its baseline's."""
    head, _, kind = name.removesuffix(AA_SUFFIX).removeprefix("max").partition("_")
    return int(head), kind or "none"


@dataclass(frozen=True, kw_only=True)
class IdleConnectionsStudy(pg.PgStudy):
    max_connections: tuple[int, ...] = ()
    kinds: tuple[str, ...] = KINDS
    sessions: int | None = None  # None: fill every slot the working clients leave (minus pg_sessions.MARGIN)

    def sessions_of(self, configuration: str, clients: int) -> tuple[str, int]:
        # a version sweep names its configurations "pg13/max100": the sessions are the configuration's
        m, kind = parse(plain(configuration))
        if kind == "none":
            return kind, 0
        room = m - clients - pg_sessions.MARGIN
        return kind, room if self.sessions is None else self.sessions


@dataclass(frozen=True)
class SessionNumbers:
    session_kind: str
    sessions: float
    sessions_open_before: float
    sessions_open_after_run: float
    sessions_left_after_close: float
    server_pss_mb: float
    server_uss_mb: float


@common.declare(PROFILES)
def define(profile: str = "standard", max_connections: list[int] | None = None, kinds: list[str] | None = None,
           sessions: int | None = None, scale: int | None = None, query_mode: str = "prepared",
           sampling_rate: float | None = None, shared_buffers: str = "128MB", pg_bindir: str | None = None,
           versions: list[str] | None = None, backend: str | None = None, **shared: object) -> IdleConnectionsStudy:
    """Check every parameter and freeze the study (ParameterError before any server starts). ``versions``: a
    list of PostgreSQL majors (docker/servers.tsv) run side by side in containers (None: the profile's, if it
    has them); ``backend``: None is 'local' without versions and 'container' with them."""
    d = common.profile_lookup(profile, PROFILES)
    versions = PROFILES[profile].get("versions") if versions is None else versions
    levels = tuple(sorted(params.int_list("max_connections", d("max_connections", max_connections))))
    chosen = params.name_list("kinds", list(KINDS) if kinds is None else kinds, KINDS)
    fields = common.study_fields(SPEC, profile, PROFILES, whole_seconds=True, **shared)
    most = max(fields["clients"])
    low = [m for m in levels if m < most + pg_sessions.MARGIN + 1]
    if low:
        raise ParameterError("max_connections", low, f"each ≥ {most + pg_sessions.MARGIN + 1}: the largest clients "
                             f"level ({most}) plus {pg_sessions.MARGIN} spare slots plus at least one session")
    n = None if sessions is None else params.positive_int("sessions", sessions)
    if n is not None and n > levels[0] - most - pg_sessions.MARGIN:
        raise ParameterError("sessions", n, f"at most {levels[0] - most - pg_sessions.MARGIN}: max_connections "
                             f"{levels[0]} minus {most} working clients minus {pg_sessions.MARGIN} spare slots "
                             "(None: fill every free slot)")
    if backend is None:
        backend = "local" if versions is None else "container"
    engine = pg.pg_fields(backend=backend, image=None, scale=d("scale", scale), query_mode=query_mode,
                          syslog_rate_limit=False, log_dir_on="disk", sampling_rate=d("sampling_rate", sampling_rate),
                          shared_buffers=shared_buffers, extra_settings=None, pg_bindir=pg_bindir)
    # The baseline (the smallest max_connections, no sessions) is always measured: every ratio needs it.
    names = [name_of(levels[0], "none")] + [name_of(m, k) for m in levels for k in chosen
                                             if (m, k) != (levels[0], "none")]
    table = {nm: ({"max_connections": parse(nm)[0]}, ()) for nm in names}
    study = IdleConnectionsStudy(
        **fields, **engine, max_connections=levels, kinds=chosen, sessions=n,
        configurations=pg.configurations(tuple(names), table, engine["pg_bindir"], engine["base"], query_mode))
    return pg.checked(study, versions)


def run(study: IdleConnectionsStudy, *, progress: bool = True) -> common.StudyResult:
    def start(study, stack):
        bench, env = pg.start(study, stack)
        return pg_sessions.SessionsBench(bench, study.sessions_of), env

    return common.run_study(study, start, processed_tables, progress=progress)


def measured(runs: pd.DataFrame) -> pd.DataFrame:
    m = common.measured_columns(common.split_variant(runs), SessionNumbers)
    parsed = m["configuration"].map(parse)  # split_variant left the plain names
    return m.assign(max_connections=parsed.map(lambda p: p[0]), kind=parsed.map(lambda p: p[1]))


def summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Per configuration and clients: tps and its ratio to the smallest max_connections without sessions
    (CI within blocks: stats.cell_ratio), sessions open, server memory."""
    names = runs["configuration"].map(plain)
    order = [name_of(m, k) for m in sorted({parse(c)[0] for c in names}) for k in KINDS]
    baseline = baseline_of(runs)
    out = common.summary_per_variant(common.measured_columns(runs, SessionNumbers), baseline,
                                     ("sessions", "server_pss_mb", "server_uss_mb", "latency_p95_ms"), order)
    return common.with_server_version(out, runs)


def baseline_of(runs: pd.DataFrame) -> str:
    """The smallest max_connections without sessions that ran (a profile's levels are its own)."""
    names = runs["configuration"].map(plain)
    return min((c for c in names.unique() if parse(c)[1] == "none" and not is_aa(c)),
               key=lambda c: parse(c)[0], default=names.iloc[0] if len(runs) else "")


def slopes(runs: pd.DataFrame) -> pd.DataFrame:
    """Per session kind and clients: OLS of tps on open sessions (kind 'none': on max_connections), HC3 errors;
    the slope per 100 with its CI, also relative to the fitted tps at none; and the memory per session (PSS, MB).

    The A/A runs are runs of the smallest max_connections like the baseline's, and count as such: leaving them
    out let the baseline's own luck (its first three runs) set the slope. Each interleaved block gets its own
    intercept, so a slowdown shared by a whole block is not read as a trend across configurations."""
    m = measured(runs)
    rows = []
    # per version of a version sweep ('' for one server): each its own fit, never pooled
    for (variant, kind, clients), g in m.groupby(["variant", "kind", "clients"], sort=True):
        x = "max_connections" if kind == "none" else "sessions"
        g = g.assign(x=g[x].astype(float), tps=g["tps"].astype(float), mem=g["server_pss_mb"].astype(float))
        if g["x"].nunique() < 2:
            continue
        blocks = " + C(repeat)" if g["repeat"].nunique() > 1 and len(g) > g["repeat"].nunique() + 2 else ""
        fit = smf.ols("tps ~ x" + blocks, data=g).fit(cov_type="HC3")
        lo, hi = fit.conf_int(alpha=1 - stats.CONFIDENCE).loc["x"]
        b0 = float(fit.predict(g.assign(x=0.0)).mean())
        mem = smf.ols("mem ~ x" + blocks, data=g).fit(cov_type="HC3")
        mlo, mhi = mem.conf_int(alpha=1 - stats.CONFIDENCE).loc["x"]
        rows.append({**({"variant": variant} if variant else {}), "kind": kind, "clients": int(clients),
                     "per_100": f"{x} (per 100)", "n": int(fit.nobs),
                     "slope_tps": 100 * fit.params["x"], "ci_low": 100 * lo, "ci_high": 100 * hi,
                     "slope_pct": 100 * 100 * fit.params["x"] / b0, "pct_ci_low": 100 * 100 * lo / b0,
                     "pct_ci_high": 100 * 100 * hi / b0, "intercept_tps": b0, "p_value": float(fit.pvalues["x"]),
                     "mb_per_session": float(mem.params["x"]) if kind != "none" else math.nan,
                     "mb_ci_low": float(mlo) if kind != "none" else math.nan,
                     "mb_ci_high": float(mhi) if kind != "none" else math.nan})
    return common.with_server_version(pd.DataFrame(rows), runs)


def findings(runs: pd.DataFrame) -> pd.DataFrame:
    """Each slope as a sentence (item, statement), its numbers printed from the data."""
    out = []
    for r in slopes(runs).itertuples():
        what = {"none": "max_connections alone", "sleep": "sessions in pg_sleep", "idle": "idle sessions"}[r.kind]
        flat = r.ci_low <= 0 <= r.ci_high
        mem = "" if r.mb_per_session != r.mb_per_session else (
            f"; server memory {r.mb_per_session:.3g} MB per session [{r.mb_ci_low:.3g}, {r.mb_ci_high:.3g}]")
        variant = getattr(r, "variant", "")
        out.append({"item": f"slope.{variant + '.' if variant else ''}{r.kind}.{r.clients}", "statement":
                    f"{'PostgreSQL ' + variant.removeprefix('pg') + ', ' if variant else ''}"
                    f"{what}, {r.clients} working clients: {r.slope_tps:+.3g} tps per 100 "
                    f"[{r.ci_low:+.3g}, {r.ci_high:+.3g}] ({r.slope_pct:+.2g} % of {r.intercept_tps:.3g} tps; "
                    f"n={r.n}) — " + ("no trend distinguishable from flat" if flat else
                                      ("declining" if r.ci_high < 0 else "rising")) + mem + "."})
    return pd.DataFrame(out, columns=["item", "statement"])


def processed_tables(result: common.StudyResult) -> dict[str, pd.DataFrame]:
    runs = result.runs
    table = summary(runs)
    # a version sweep's: each later version's ratio to its own baseline over the oldest's (issue 23)
    between = common.variant_differences(runs, baseline_of(runs), list(dict.fromkeys(table["configuration"])))
    return {"summary": table, "slopes": slopes(runs), "findings": findings(runs),
            "runs": records.flatten(common.with_variant(common.measured_columns(runs, SessionNumbers))),
            **({"between_versions": between} if len(between) else {})}


def load_processed(processed_dir: Path = paths.PROCESSED) -> tuple[pd.DataFrame, ...]:
    return common.load_processed(NAME, "summary", "slopes", processed_dir=processed_dir)


def design_summary(study: IdleConnectionsStudy) -> dict[str, object]:
    return {**pg.design_summary(study), "max_connections": list(study.max_connections), "kinds": list(study.kinds),
            "sessions": "fill" if study.sessions is None else study.sessions}


def session_table(study: IdleConnectionsStudy) -> pd.DataFrame:
    """Sessions each configuration holds open at each clients level."""
    return pd.DataFrame([{"configuration": c.name, "clients": k, "kind": study.sessions_of(c.name, k)[0],
                          "sessions": study.sessions_of(c.name, k)[1]}
                         for c in study.configurations for k in study.clients]).set_index(["configuration", "clients"])


# -- a version sweep's tables side by side: each version's own cells, never pooled ----------------------------

def variants_of(frame: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """plots.variants' servers, each with its rows without the variant column; [('', frame)] for one server."""
    from .. import plots

    return [(v, g.drop(columns="variant", errors="ignore")) for v, g in plots.variants(frame)]


def side_by_side(summary: pd.DataFrame, value: str) -> pd.DataFrame:
    """plots.ci_table of ``value`` per version, the versions' columns side by side (one server: the table)."""
    from .. import plots

    parts = variants_of(summary)
    if len(parts) == 1:
        return plots.ci_table(parts[0][1], value)
    return pd.concat({v: plots.ci_table(g, value) for v, g in parts}, axis=1)


SESSION_COLUMNS = ["sessions", "sessions_open_before", "sessions_open_after_run", "sessions_left_after_close",
                   "server_pss_mb", "server_uss_mb"]


def sessions_check(runs: pd.DataFrame) -> pd.DataFrame:
    """The sessions wanted and counted per run, and the server's memory: count, mean, min, max over the measured
    runs (per version, side by side)."""
    m = measured(runs)
    parts = variants_of(m)
    stats_of = lambda g: g[SESSION_COLUMNS].describe().T[["count", "mean", "min", "max"]]  # noqa: E731
    if len(parts) == 1:
        return stats_of(parts[0][1])
    return pd.concat({v: stats_of(g) for v, g in parts}, axis=1)


def sessions_figure(runs: pd.DataFrame):
    """tps of each measured run against its open sessions (kind none: its max_connections), a column per
    working-clients level and, for a version sweep, a row per version."""
    import seaborn as sns

    m = measured(runs)
    m = m.assign(x=m["sessions"].where(m["kind"] != "none", m["max_connections"]))
    several = m["variant"].nunique() > 1
    g = sns.relplot(data=m[~m["configuration"].map(is_aa)], x="x", y="tps", hue="kind", col="clients",
                    row="variant" if several else None, kind="line", marker="o", errorbar=("ci", 95),
                    facet_kws={"sharey": False}, height=3.2)
    g.set_axis_labels("open sessions (none: max_connections)", "tps")
    return g


def environment_table(result: common.StudyResult) -> pd.DataFrame:
    """The environment (a version sweep's: one column per server, side by side)."""
    return common.environment_table(result)


SPEC = common.StudySpec(
    name=NAME, engine="postgresql", title="PostgreSQL max_connections and idle sessions", post=POST,
    baseline="max100", notebook="08_pg_idle_connections.ipynb", seed=20140401,
    committed={"profile": "standard", "publish": True},
    extra_committed=({"profile": "versions", "backend": "container", "publish": True},),
    smoke=({"profile": "smoke"},), paper_order=8)
