"""The analysis half of the paper's pipeline: the studies as the analysis sees them and the findings.

The notebook ``90_findings`` calls these steps (and :func:`compute_findings` calls them in the same order for tests
and the CLI):

1. :func:`load_studies` — every known study's processed files (missing ones
   listed, not silently skipped; unknown ``*_runs.csv`` files are picked up too);
2. :func:`regression_findings`, :func:`floor_findings`, :func:`claim_findings`,
   :func:`study_figures`, :func:`model_findings` — tables and figures; :func:`write_findings` saves them as
   ``findings_*.csv`` and ``figures/*.png``; :func:`run_findings_notebook` executes the notebook in place.

Nothing here is timed: the findings are a function of the processed files alone (issue 39). The write() floor the
costs are set against is timed by study 11's committed run and read from its calibration table.

The paper built from them is :mod:`logbench.publish.paper`; :mod:`logbench.publish.report` is the command line over both.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..analyze import anomalies as anomalies_mod
from ..analyze import claim_rules
from ..analyze import claims as claims_mod
from ..analyze import costmodel, costterms, daemons, headline, plots, regression
from ..base import paths, records
from ..analyze import models as models_mod
from .. import studies as studies_registry
from ..analyze.claims import StudyData


@dataclass(frozen=True)
class StudyInfo:
    name: str
    engine: str
    title: str
    post: str  # the seed post it redoes
    experiment: str  # the post's experiment in data/raw/reference whose ratios the figure shows


# The studies the suite knows, from the registry (their processed files may not exist yet); other
# *_runs.csv files are picked up too.
KNOWN_STUDIES: tuple[StudyInfo, ...] = tuple(
    StudyInfo(s.name, s.engine, s.title, s.post_id, s.experiment) for s in studies_registry.specs()
    if s.measures_logging)


def _profile_studies() -> tuple[StudyInfo, ...]:
    """A study's further committed runs (named profiles, ``StudySpec.extra_committed``) are studies of their own
    in the processed files (``common.stem``); a profile that redoes another post names it in its module's
    ``PROFILE_POSTS`` (profile -> (seed file, experiment))."""
    from ..studies.common import stem

    out = []
    for s in studies_registry.specs():
        if not s.measures_logging:  # as KNOWN_STUDIES: its profiles are no ratio studies either (study 11's versions)
            continue
        posts = getattr(studies_registry.module(s.name), "PROFILE_POSTS", {})
        for extra in s.extra_committed:
            profile = str(extra.get("profile", ""))
            post, experiment = posts.get(profile, (s.post, s.experiment))
            out.append(StudyInfo(stem(s.name, profile), s.engine, f"{s.title} (profile {profile})", post[:3],
                                 experiment))
    return tuple(out)


KNOWN_STUDIES += _profile_studies()
# Each study's own statements (``<study>_findings.csv``: item, statement; numbers printed by its code from its data),
# printed in its section of the paper.
STUDY_FINDINGS = "{name}_findings.csv"


def _spec(name: str):
    """The registry's spec of a study's own name (None for a named profile's stem or an unknown study)."""
    return next((s for s in studies_registry.specs() if s.name == name), None)


FINDINGS = ("studies", "regression", "regression_fit", "influential", "write_floor", "claims", "claims_detail",
            "anomalies", "claims_by_version", "cost_model", "cost_model_summary", "cost_model_factors",
            "cost_model_rule", "cost_model_daemons", "cost_model_ceilings", "cost_model_misses", "cost_model_terms",
            "cost_model_switch_prices", "models", "models_coverage",
            "record_regression")


# --- step 1: the studies ------------------------------------------------------------------------------------


def study_info(name: str) -> StudyInfo:
    for s in KNOWN_STUDIES:
        if s.name == name:
            return s
    return StudyInfo(name, "", name.replace("_", " "), "", "")


def _baseline(name: str, summary: pd.DataFrame | None, runs: pd.DataFrame) -> str:
    if _spec(name) is not None:
        return _spec(name).baseline
    if summary is not None and "ratio" in summary.columns:
        ones = summary[(summary["ratio"] == 1) & summary["ratio_ci_low"].isna()]
        if len(ones):
            return str(ones["configuration"].iloc[0])
    return "none"


def study_names(processed_dir: Path) -> list[str]:
    """Known studies first (in their order), then any other ``<study>_runs.csv`` found."""
    names = [s.name for s in KNOWN_STUDIES]
    found = sorted(p.name[: -len("_runs.csv")] for p in Path(processed_dir).glob("*_runs.csv")
                   if not p.name.startswith("findings_"))
    return names + [n for n in found if n not in names]


def load_studies(processed_dir: Path | str = paths.PROCESSED) -> tuple[dict[str, StudyData], pd.DataFrame]:
    """(studies with data, one status row per known or found study: present or why not)."""
    processed_dir = Path(processed_dir)
    studies, status = {}, []
    for name in study_names(processed_dir):
        info = study_info(name)
        runs_file = processed_dir / f"{name}_runs.csv"
        row = {"study": name, "title": info.title, "post": info.post, "engine": info.engine, "present": False,
               "runs": 0, "configurations": "", "clients": "", "note": ""}
        runs = records.read_measured(processed_dir, name)
        if runs is None:
            row["note"] = f"{runs_file.name} not found: the study has not been run (non-smoke) yet"
            status.append(row)
            continue
        summary_file = processed_dir / f"{name}.csv"
        summary = pd.read_csv(summary_file) if summary_file.exists() else None
        env_file = processed_dir / f"{name}_environment.json"
        env = json.loads(env_file.read_text()) if env_file.exists() else {}
        engine = str(runs["engine"].iloc[0]) if "engine" in runs.columns and len(runs) else info.engine
        sd = StudyData(name=name, engine=engine, baseline=_baseline(name, summary, runs), runs=runs,
                       summary=summary, environment=env)
        studies[name] = sd
        row.update(present=True, engine=engine, runs=len(runs), configurations=", ".join(sd.configurations),
                   clients=", ".join(str(c) for c in sd.clients),
                   note="" if summary is not None else f"{summary_file.name} missing")
        status.append(row)
    return studies, pd.DataFrame(status)


def pooled_runs(studies: dict[str, StudyData]) -> pd.DataFrame:
    frames = [s.runs for s in studies.values() if len(s.runs)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def machine_cores(studies: dict[str, StudyData]) -> int:
    """Cores of the machine the data came from (its environment record), else of this machine."""
    for s in studies.values():
        if s.environment.get("cpu_count"):
            return int(s.environment["cpu_count"])
    return os.cpu_count() or 1


def reference_values() -> pd.DataFrame | None:
    """The posts' published values (data/raw/reference), or None where the reference data is not available."""
    try:
        from ..analyze import reference
        return reference.load_values()
    except (ImportError, OSError, ValueError):
        return None


def published_ratios(info: StudyInfo) -> pd.DataFrame | None:
    if not info.experiment:
        return None
    try:
        from ..analyze import reference
        return reference.published_ratios(info.post, info.experiment)
    except (ImportError, OSError, ValueError, KeyError):
        return None


# --- step 2: findings ---------------------------------------------------------------------------------------


def summary_keys(summary: pd.DataFrame) -> list[str]:
    """A summary's key columns: those before ``n`` (e.g. [regime, test,] configuration, clients)."""
    cols = list(summary.columns)
    return cols[: cols.index("n")] if "n" in cols else ["configuration", "clients"]


# Columns that split a study into cells wherever they stand (a backend or server-version variant).
VARIANT_COLUMNS = ("backend", "variant")
# The machine a row was measured on (logbench.publish.gather: the workflow's host label, the environment record's id):
# a cell of its own once a study holds more than one, so each environment's ratios stand side by side.
ENVIRONMENT_COLUMNS = ("host", "env_id")


def cell_columns(summary: pd.DataFrame) -> list[str]:
    """Key columns that split a study into cells (everything but configuration and clients)."""
    keys = [c for c in summary_keys(summary) if c not in ("configuration", "clients")]
    keys += [c for c in VARIANT_COLUMNS if c in summary.columns and c not in keys]
    # an environment column only where it splits the cells further (study 03's backends already are theirs)
    split = [c for c in ENVIRONMENT_COLUMNS if c in summary.columns and c not in keys and
             (summary.groupby(keys, dropna=False)[c].nunique().max() if keys else summary[c].nunique()) > 1]
    return keys + split


def cells(summary: pd.DataFrame) -> list[dict[str, str]]:
    """The study's cells in summary order: [{}] for a study without cells."""
    cols = cell_columns(summary)
    if not cols:
        return [{}]
    seen = summary[cols].astype(str).drop_duplicates()
    return [dict(zip(cols, row)) for row in seen.itertuples(index=False, name=None)]


def in_cell(df: pd.DataFrame, cell: dict[str, str]) -> pd.DataFrame:
    for col, want in cell.items():
        if col in df.columns:
            df = df[df[col].astype(str) == want]
    return df


def cell_label(cell: dict[str, str]) -> str:
    return ", ".join(f"{v}" for v in cell.values())


def cell_slug(cell: dict[str, str]) -> str:
    return "".join("_" + "".join(ch if ch.isalnum() else "-" for ch in v) for v in cell.values())


def study_published(name: str, runs: pd.DataFrame | None = None) -> pd.DataFrame | None:
    """The post's ratios for a study's figure: the study's own (its spec's ``published``, keyed by our
    configuration names), else the reference data of the registry's experiment."""
    if _spec(name) is not None and _spec(name).published is not None:
        try:
            return studies_registry.spec(name).published(runs)
        except (OSError, ValueError, KeyError, TypeError):
            pass
    return published_ratios(study_info(name))


def _version_sweeps() -> dict[str, studies_registry.StudySpec]:
    from ..studies.common import stem

    # throughput sweeps only: a study that measures no ratio against a baseline (study 11's counted versions) reads
    # its versions in its own section
    return {stem(s.name, "versions"): s for s in studies_registry.specs()
            if s.measures_logging and any(p.get("profile") == "versions" for p in s.extra_committed)}


# A study's version sweep (its profile "versions"): its versions side by side in the paper's section on versions
# (paper.versions), not a figure per study and version here. Its processed stem -> its study's spec, in the paper's
# order.
VERSION_SWEEPS = _version_sweeps()
# The studies the line-cost fit leaves out, with why (the paper lists them, in this order): those whose
# configurations vary something else than what is logged (their specs' ``not_line_cost``, in the paper's order), and
# the version sweeps (one fit per environment would otherwise add one per version and cell; the cost of a line stays
# the committed servers').
NOT_LINE_COST = {**{s.name: s.not_line_cost for s in studies_registry.specs() if s.not_line_cost},
                 **dict.fromkeys(VERSION_SWEEPS, "a version sweep: its servers are other versions in containers, read "
                                                 "side by side in the section on versions")}


def study_figures(studies: dict[str, StudyData]) -> dict[str, object]:
    """One overhead-ratio figure per study and cell (published ratios as open markers)."""
    import matplotlib.pyplot as plt

    figs = {}
    # every figure is held open until the report saves it: more than matplotlib's 20 by now, which is intended,
    # and its warning would print this checkout's path into the executed notebook (nbval compares it)
    with plt.rc_context({"figure.max_open_warning": 0}):
        for name, s in studies.items():
            figs.update(_study_figures(name, s, studies))
    return figs


def _study_figures(name: str, s: StudyData, studies: dict[str, StudyData]) -> dict[str, object]:
    if s.summary is None or "ratio" not in s.summary.columns or name in VERSION_SWEEPS:
        return {}
    info = study_info(name)
    published = study_published(name, s.runs)
    post_cores = claim_rules.post_cores(info.post) if info.post else None
    if published is not None and len(published) and post_cores and "clients" in published.columns:
        # the post's points at its clients per core on this machine, as the claims judge them (issue 22)
        cores = int(s.environment.get("cpu_count") or machine_cores(studies))
        published = published.assign(clients=[claims_mod.clients_here(int(k), post_cores, cores)
                                              for k in published["clients"]])
    figs = {}
    for cell in cells(s.summary):
        ref = in_cell(published, cell) if published is not None and len(published) else published
        title = info.title + (f" ({cell_label(cell)})" if cell else "")
        figs[f"study_{name}{cell_slug(cell)}"] = plots.ratio_figure(
            in_cell(s.summary, cell), baseline=s.baseline, reference=ref, title=title)
    return figs


@dataclass
class RegressionFindings:
    prepared: pd.DataFrame
    fits: dict
    coefficients: pd.DataFrame
    diagnostics: pd.DataFrame
    influential: pd.DataFrame
    figures: dict


def regression_findings(studies: dict[str, StudyData]) -> RegressionFindings:
    runs = pooled_runs(studies)
    prepared = (regression.prepare(runs, tuple(NOT_LINE_COST)) if len(runs)
                else pd.DataFrame(columns=list(regression.PREPARED_COLUMNS)))
    fits = regression.fit_all(prepared) if len(prepared) else {}
    coefs = regression.coefficients(fits)
    figs = {}
    for key, f in fits.items():
        if not f.main.ok:
            continue
        pts = regression.residuals(f).assign(cooks_threshold=f.cooks_threshold)
        figs[f"regression_{fit_slug(key)}"] = plots.regression_figure(
            pts, title=f"{fit_title(f)} ({', '.join(f.studies)}): main model, WLS")
    return RegressionFindings(prepared, fits, coefs, regression.diagnostics(fits), regression.influential_runs(fits),
                              figs)


def record_regression_findings(studies: dict[str, StudyData], counted: pd.DataFrame | None = None) -> pd.DataFrame:
    """Throughput against the log rate in records, the slope a record's machine µs with its CI, per engine,
    environment and workload, beside study 11's counted figure (``counted``: the cost model's per-record rule, the
    ``cost_model_rule`` table); :mod:`logbench.analyze.regression.per_record` says what enters and why."""
    cores = {name: int(s.environment["cpu_count"]) for name, s in studies.items() if s.environment.get("cpu_count")}
    return regression.record_costs(pooled_runs(studies), cores, tuple(NOT_LINE_COST), counted)


# Study 11's calibration (what its committed run timed beside what it counted): the write() floor's rows are its
# part "write_floor", one per target and record size
CALIBRATION_FILE = "record_cost_calibration.csv"
FLOOR_COLUMNS = ["target", "nbytes", "batches", "batch", "median_us", "ci_low", "ci_high", "env_id"]


def floor_findings(prepared: pd.DataFrame, processed_dir: Path | str = paths.PROCESSED) -> pd.DataFrame:
    """The write() floor to a file and into a pipe, each at the size study 11 timed nearest the typical logged line
    of the regression's runs (its median bytes per record), read from the calibration in ``processed_dir``; empty
    (no floor drawn or printed) where that study's committed run has none."""
    path = Path(processed_dir) / CALIBRATION_FILE
    timed = pd.read_csv(path) if path.exists() else pd.DataFrame(columns=["part", "target"])
    timed = timed[timed["part"] == "write_floor"]
    nbytes = regression.typical_record_bytes(prepared) if len(prepared) else 200
    rows = []
    for target in ("file", "pipe"):  # the targets FLOOR_FOR sets a cost against
        g = timed[timed["target"] == target]
        if len(g):
            r = g.iloc[int((g["nbytes"] - nbytes).abs().to_numpy().argmin())]
            rows.append({"target": target, "nbytes": int(r["nbytes"]), "batches": int(r["n"]), "batch": int(r["batch"]),
                         "median_us": r["value"], "ci_low": r["ci_low"], "ci_high": r["ci_high"],
                         "env_id": r.get("env_id", "")})
    return pd.DataFrame(rows, columns=FLOOR_COLUMNS)


def cost_terms(c: pd.DataFrame, fam: str) -> tuple[str, pd.DataFrame]:
    """(the main model's term, the per-level rows) that say what a line to ``fam`` costs in one fit's coefficients:
    the typical line's where the fit has them (a line of its family's size), else the line term's."""
    per = c[(c["model"] == "per_clients") & (c["family"] == fam)]
    typical = per["term"].astype(str).str.startswith(regression.TYPICAL)
    if typical.any():
        return regression.typical_term(fam), per[typical].sort_values("clients")
    return regression.family_term(fam), per[~typical].sort_values("clients")


def fit_title(f) -> str:
    """A fit's figure title: engine, environment, and its regime and workload where not the cached default."""
    return f"{f.engine} ({f.env_id}" + ("" if f.regime == regression.CACHED else f", {f.regime}") + (
        f", {f.workload}" if f.workload else "") + ")"


def fit_slug(key: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in key)


def fit_label(row: pd.Series, studies: dict[str, StudyData]) -> str:
    """A fit in words: the machine (from its studies' environment record), then the regime and workload."""
    env = next((s.environment for s in studies.values() if s.environment.get("env_id") == str(row["env_id"])), {})
    label = headline.machine_label(str(row["engine"]), env) if env else f"{row['engine']}, environment {row['env_id']}"
    regime, workload = ("" if pd.isna(row.get(c)) else str(row[c]) for c in ("regime", "workload"))
    return label + f"; {'IO-bound' if regime == regression.IO_BOUND else 'cached'} data" + (
        f", {workload}" if workload else "")


# Which write() floor a line of a family is set against, per engine: the write the server process itself makes.
# A PostgreSQL backend hands a file-destination line to the logging collector through a pipe (the collector
# writes the file); MariaDB's server writes its log file itself. Syslog lines go to a datagram socket, for
# which no floor is measured.
FLOOR_FOR = {("postgresql", "file"): "pipe", ("mariadb", "file"): "file"}
FLOOR_WORDS = {"pipe": "one write() into a pipe drained by another process (the backend → logging collector hop)",
               "file": "one write() to a file opened with O_APPEND"}


def cost_figures(reg: RegressionFindings, floors: pd.DataFrame | None) -> dict[str, object]:
    """Per fit and destination family: the cost of a line per concurrency level beside the main model's cost and
    the write() floor it is set against (:data:`FLOOR_FOR`)."""
    figs = {}
    c = reg.coefficients
    for key, f in reg.fits.items():
        for fam in f.families:
            term, per = cost_terms(c[c["fit"] == key], fam)
            if not len(per):
                continue
            pooled = c[(c["fit"] == key) & (c["model"] == "main") & (c["term"] == term)]
            target = FLOOR_FOR.get((f.engine, fam))
            fl = floors[floors["target"] == target] if floors is not None and target else None
            typical = term.startswith(regression.TYPICAL)
            size = f" of {pooled.iloc[0]['bytes']:.0f} bytes" if typical and len(pooled) else ""
            figs[f"line_cost_{fit_slug(key)}_{fam}"] = plots.cost_figure(
                per, pooled=pooled.iloc[0] if len(pooled) else None, floors=fl,
                title=f"{fit_title(f)}: one {'typical ' if typical else ''}line{size} to "
                      f"{regression.FAMILY_LABELS[fam]}")
    return figs


def physical_orders(studies: dict[str, StudyData]) -> dict[str, tuple[tuple[str, str], ...]]:
    """Each study's PHYSICAL_ORDER (pairs whose first does strictly less work), for the screen and the claims."""
    return {name: tuple(getattr(studies_registry.module(name), "PHYSICAL_ORDER", ()))
            for name in studies if _spec(name) is not None}


def anomaly_findings(studies: dict[str, StudyData]) -> pd.DataFrame:
    """The anomaly screen over every study (logbench.analyze.anomalies)."""
    return anomalies_mod.screen(studies, cell_columns, physical_orders(studies))


def claim_findings(studies: dict[str, StudyData], regression_table: pd.DataFrame | None,
                   claims_file: Path | str = claims_mod.CLAIMS_FILE) -> tuple[pd.DataFrame, pd.DataFrame]:
    table = claims_mod.with_published(claims_mod.load(claims_file), reference_values())
    return claims_mod.evaluate(table, studies, cores=machine_cores(studies), regression=regression_table,
                               orders=physical_orders(studies))


def version_claims(studies: dict[str, StudyData],
                   claims_file: Path | str = claims_mod.CLAIMS_FILE) -> pd.DataFrame:
    """Every claim about a study judged again on each server version of that study's version sweep (its
    ``versions`` run, issue 23): the same rule on that version's runs alone (its own baseline and A/A, never
    pooled). One row per claim and version; empty without a sweep."""
    import dataclasses

    from ..measure.runner import SplitBench
    from ..studies.common import version_key

    table = claims_mod.with_published(claims_mod.load(claims_file), reference_values())
    cores, rows = machine_cores(studies), []
    for name, sweep in studies.items():
        base = name.removesuffix("_versions")
        head, sep, plain = (sweep.runs["configuration"].astype(str).str.partition(SplitBench.SEP)[i]
                            for i in range(3))
        if base == name or not (sep == SplitBench.SEP).any():
            continue
        for version in sorted(set(head[sep == SplitBench.SEP]), key=version_key):
            keep = (head == version).to_numpy()
            summary = sweep.summary
            if summary is not None and "variant" in summary:
                summary = summary[summary["variant"] == version].drop(columns="variant").reset_index(drop=True)
            one = dataclasses.replace(
                sweep, name=base, runs=sweep.runs[keep].assign(configuration=plain[keep]).reset_index(drop=True),
                summary=summary, environment=sweep.environment.get("variants", {}).get(version, sweep.environment))
            judged, _ = claims_mod.evaluate(table, {base: one}, cores=cores, orders=physical_orders({base: one}))
            judged = judged[judged["study"] == base]
            rows.append(judged.assign(sweep=name, version=version)[
                ["claim_id", "sweep", "version", "claimed", "measured_at", "ours", "value", "ci_low", "ci_high",
                 "verdict", "why"]])
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(
        columns=["claim_id", "sweep", "version", "claimed", "measured_at", "ours", "value", "ci_low", "ci_high",
                 "verdict", "why"])


def cost_model_findings(processed_dir: Path | str = paths.PROCESSED) -> dict[str, pd.DataFrame]:
    """The cost model's tables (:mod:`logbench.analyze.costmodel`) and its misses and named missing terms
    (:mod:`logbench.analyze.costterms`), named as findings_*.csv, and the syslog daemons' timed CPU with the remote
    receiver apart (:func:`logbench.analyze.daemons.daemon_cpu`) and each single-threaded daemon's timed one-core
    ceiling (:func:`logbench.analyze.daemons.ceilings`), both read from study 02's runs alone. Where an input
    table is missing (a study not run yet) the model's tables are empty and the summary's one row says which."""
    try:
        m = costmodel.cost_model(processed_dir)
    except costmodel.MissingInput as e:
        return {"cost_model": pd.DataFrame(columns=costmodel.COLUMNS),
                "cost_model_summary": pd.DataFrame([{"model": "not computed", "fitted_on": str(e)}],
                                                   columns=costmodel.SUMMARY_COLUMNS),
                "cost_model_factors": pd.DataFrame(columns=costmodel.FACTOR_COLUMNS),
                "cost_model_rule": pd.DataFrame(columns=costmodel.RULE_COLUMNS),
                "cost_model_daemons": daemons.daemon_cpu(processed_dir),
                "cost_model_ceilings": daemons.ceilings(processed_dir),
                "cost_model_misses": pd.DataFrame(columns=costterms.MISS_COLUMNS),
                "cost_model_terms": pd.DataFrame(columns=costterms.TERM_COLUMNS),
                "cost_model_switch_prices": pd.DataFrame(columns=costterms.SWITCH_COLUMNS)}
    t = costterms.cost_terms(m, processed_dir)
    return {"cost_model": m.cells, "cost_model_summary": m.summary, "cost_model_factors": m.factors,
            "cost_model_rule": m.rule, "cost_model_daemons": daemons.daemon_cpu(processed_dir),
            "cost_model_ceilings": daemons.ceilings(processed_dir),
            "cost_model_misses": t.misses, "cost_model_terms": t.terms, "cost_model_switch_prices": t.switch_prices}


# The headline figure's cells: each engine's main cached study, at levels where the clients keep the cores busy (so
# cores x 10^6 / tps is the cores' time per transaction), each logging configuration that logged something.
HEADLINE_CELLS = ({"engine": "PostgreSQL", "stem": "pg_destinations", "test": None},
                  {"engine": "MariaDB", "stem": "mysql_slowlog", "test": "oltp_point_select", "regime": "cpu"})


def headline_points(cells: pd.DataFrame) -> pd.DataFrame:
    """From the cost model's cells (``findings_cost_model.csv``: measured ratio and its CI, the baseline's tps, the
    records per transaction counted, the cores): per destination and level the records per second the log took
    (ratio x baseline tps x records per transaction) and the cores' µs logging added to a transaction,
    cores x 10^6 / tps0 x (1 / ratio - 1), its interval from the ratio's."""
    cols = ["engine", "destination", "clients", "records_per_s", "extra_us", "extra_low", "extra_high"]
    rows = []
    if cells is None or cells.empty:
        return pd.DataFrame(columns=cols)
    one = cells[cells["model"] == "counted"] if "model" in cells else cells
    for spec in HEADLINE_CELLS:
        d = one[one["stem"] == spec["stem"]]
        for col in ("test", "regime"):
            if spec.get(col) is not None and col in d:
                d = d[d[col].astype(str) == spec[col]]
        if "variant" in d:
            d = d[d["variant"].isna() | (d["variant"].astype(str) == "")]
        d = d[(d["clients"] >= d["cores"]) & (d["records_per_tx"] > 0) & d["ratio"].notna()]
        for _, r in d.iterrows():
            per_tx = r["cores"] * 1e6 / r["baseline_tps"]
            rows.append({"engine": spec["engine"], "destination": str(r["configuration"]), "clients": int(r["clients"]),
                         "records_per_s": r["ratio"] * r["baseline_tps"] * r["records_per_tx"],
                         "extra_us": per_tx * (1 / r["ratio"] - 1),
                         "extra_low": per_tx * (1 / r["ratio_ci_high"] - 1),
                         "extra_high": per_tx * (1 / r["ratio_ci_low"] - 1)})
    return pd.DataFrame(rows, columns=cols)


def headline_figures(cells: pd.DataFrame) -> dict[str, object]:
    """``headline``: :func:`logbench.analyze.plots.headline_figure` of :func:`headline_points`; none without cells."""
    points = headline_points(cells)
    if points.empty:
        return {}
    return {"headline": plots.headline_figure(
        points, title="What logging adds to a transaction, by how many records per second it logs")}


def model_findings(processed_dir: Path | str = paths.PROCESSED) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One model per study and level (logbench.publish.models, issue 40) beside the per-cell intervals, and its coverage
    over every committed A/A control: reported, not yet what the claims or the summaries read."""
    return models_mod.model_findings(processed_dir, studies_registry.committed_profiles(models_mod.MODEL_STUDIES))


def write_findings(tables: dict[str, pd.DataFrame], figures: dict[str, object], *,
                   output_dir: Path | str | None = None, figures_dir: Path | str | None = None) -> dict[str, Path]:
    """``findings_<name>.csv`` into output_dir (default data/processed), figures as PNG into figures_dir
    (default paper/figures). Returns what was written."""
    out = Path(output_dir) if output_dir is not None else paths.PROCESSED
    figdir = Path(figures_dir) if figures_dir is not None else paths.FIGURES
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, df in tables.items():
        if name not in FINDINGS:
            raise ValueError(f"findings table {name!r}; allowed: {FINDINGS}")
        p = out / f"findings_{name}.csv"
        df.to_csv(p, index=False, float_format="%.6g", lineterminator="\n")
        written[name] = p
    for name, fig in figures.items():
        p = figdir / f"{name}.png"
        plots.save(fig, p)
        written[name] = p
    return written


def compute_findings(processed_dir: Path | str = paths.PROCESSED, *, claims_file: Path | str = claims_mod.CLAIMS_FILE
                     ) -> tuple[dict[str, pd.DataFrame], dict[str, object]]:
    """What the notebook 90_findings computes, in the same order (for tests and the CLI)."""
    studies, status = load_studies(processed_dir)
    reg = regression_findings(studies)
    floors = floor_findings(reg.prepared, processed_dir)
    summary, detail = claim_findings(studies, reg.coefficients, claims_file)
    tables = {"studies": status, "regression": reg.coefficients, "regression_fit": reg.diagnostics,
              "influential": reg.influential, "write_floor": floors, "claims": summary, "claims_detail": detail,
              "anomalies": anomaly_findings(studies), "claims_by_version": version_claims(studies, claims_file),
              **cost_model_findings(processed_dir)}
    tables["models"], tables["models_coverage"] = model_findings(processed_dir)
    tables["record_regression"] = record_regression_findings(studies, tables["cost_model_rule"])
    figures = {**study_figures(studies), **reg.figures, **cost_figures(reg, floors),
               **headline_figures(tables["cost_model"])}
    return tables, figures


FINDINGS_NOTEBOOK = paths.NOTEBOOKS / "90_findings.ipynb"


def run_findings_notebook(notebook: Path | str = FINDINGS_NOTEBOOK, timeout: int = 600) -> Path:
    """Execute 90_findings in place with its default parameters (writes data/processed/findings_*.csv and
    paper/figures/); no timing metadata is recorded, so an unchanged result leaves the notebook unchanged."""
    import nbformat
    from nbclient import NotebookClient

    notebook = Path(notebook)
    nb = nbformat.read(notebook, as_version=4)
    NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(notebook.parent)}}).execute()
    nbformat.write(nb, notebook)
    return notebook
