"""From processed data to the paper: the studies as the analysis sees them, the findings, the typst build.

Three steps, each a function the notebook ``90_findings`` calls (and
:func:`compute_findings` calls in the same order for tests and the CLI):

1. :func:`load_studies` — every known study's processed files (missing ones
   listed, not silently skipped; unknown ``*_runs.csv`` files are picked up too);
2. :func:`regression_findings`, :func:`floor_findings`, :func:`claim_findings`,
   :func:`study_figures` — tables and figures; :func:`write_findings` saves them as
   ``findings_*.csv`` and ``figures/*.png``;
3. :func:`build` — writes ``paper/generated/`` (``numbers.json``: every in-text
   number with its provenance; CSV tables of display strings) and compiles
   ``paper/logbench.typ`` with the ``typst`` package into ``paper/logbench.pdf``.

Hooks for other studies' findings: ``data/processed/<study>_findings.csv`` (columns ``item``, ``statement``;
:data:`STUDY_FINDINGS`) is printed under that study's section; ``data/processed/instrument_findings.csv`` (columns ``item``,
``statement``; :data:`INSTRUMENT_FINDINGS`), written by the instrument study, is printed in the paper's
section "Instrument resolution and the anomaly test"; A/A rows (``<baseline>_again``) in a study's summary
are printed as that study's resolution and never as a logging configuration.

No number in the paper is typed by hand: each in-text number in ``numbers.json``
carries a ``spec`` saying which processed file, row and column it came from
(``tests/test_paper.py`` re-reads it from there and finds its text in the PDF).

Run ``python -m logbench.report`` (or ``make paper``) to rebuild the paper.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from . import anomalies as anomalies_mod
from . import claim_rules
from . import claims as claims_mod
from . import discussion, headline, paths, plots, regression
from . import studies as studies_registry
from .claims import StudyData, fmt, fmt_p
from .settings import aa_name
from .stats import CONFIDENCE

PAPER_SOURCE = "logbench.typ"
PDF_NAME = "logbench.pdf"
GENERATED = "generated"
FIGURES = "figures"


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
    from .studies.common import stem

    out = []
    for s in studies_registry.specs():
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
            "anomalies")

# English glosses of titles the paper's embedded fonts cannot set (post 003 is in Chinese).
TITLE_GLOSS = {"003": "How much does turning on audit logging and statement timing cost PostgreSQL? (in Chinese)"}


# --- step 1: the studies ------------------------------------------------------------------------------------


def _info(name: str) -> StudyInfo:
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


def _measured(runs: pd.DataFrame) -> pd.DataFrame:
    if "warmup" not in runs.columns:
        return runs
    return runs[~runs["warmup"].astype(str).str.lower().isin(("true", "1"))].reset_index(drop=True)


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
        info = _info(name)
        runs_file = processed_dir / f"{name}_runs.csv"
        row = {"study": name, "title": info.title, "post": info.post, "engine": info.engine, "present": False,
               "runs": 0, "configurations": "", "clients": "", "note": ""}
        if not runs_file.exists():
            row["note"] = f"{runs_file.name} not found: the study has not been run (non-smoke) yet"
            status.append(row)
            continue
        runs = _measured(pd.read_csv(runs_file))
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
        from . import reference
        return reference.load_values()
    except (ImportError, OSError, ValueError):
        return None


def published_ratios(info: StudyInfo) -> pd.DataFrame | None:
    if not info.experiment:
        return None
    try:
        from . import reference
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
# The machine a row was measured on (logbench.gather: the workflow's host label, the environment record's id):
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


def _in_cell(df: pd.DataFrame, cell: dict[str, str]) -> pd.DataFrame:
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
    return published_ratios(_info(name))


def environment_ratios(studies: dict[str, StudyData]) -> dict[str, pd.DataFrame]:
    """Each study measured on more than one environment, side by side: {study: table}, a row per (other cell
    columns, configuration, clients), a column per environment (``host · env_id``) holding that environment's
    ratio to its own baseline with its CI; nothing is pooled. Empty when every study ran on one environment."""
    out = {}
    for name, s in studies.items():
        summary = s.summary
        if summary is None or "ratio" not in summary.columns:
            continue
        env_cols = [c for c in ENVIRONMENT_COLUMNS if c in cell_columns(summary)]
        if not env_cols:
            continue
        keys = [c for c in cell_columns(summary) if c not in env_cols] + ["configuration", "clients"]
        df = summary[keys].astype(str).assign(
            environment=summary[env_cols].astype(str).agg(" · ".join, axis=1),
            ratio=[_ci_text(r["ratio"], r.get("ratio_ci_low"), r.get("ratio_ci_high")) for _, r in summary.iterrows()])
        wide = df.pivot_table(index=keys, columns="environment", values="ratio", aggfunc="first", sort=False)
        wide.columns.name = f"ratio to baseline [{_CI}] per environment"
        out[name] = wide.reset_index()
    return out


def environments_text(tables: dict[str, pd.DataFrame]) -> str:
    """The sentence above the side-by-side tables (or why there are none)."""
    if not tables:
        return "Every study was measured on one environment: nothing to set side by side."
    return ("Measured on more than one environment (each ratio against that environment's own baseline): "
            + ", ".join(tables) + ".")


def study_figures(studies: dict[str, StudyData]) -> dict[str, object]:
    """One overhead-ratio figure per study and cell (published ratios as open markers)."""
    figs = {}
    for name, s in studies.items():
        if s.summary is None or "ratio" not in s.summary.columns:
            continue
        info = _info(name)
        published = study_published(name, s.runs)
        post_cores = claim_rules.post_cores(info.post) if info.post else None
        if published is not None and len(published) and post_cores and "clients" in published.columns:
            # the post's points at its clients per core on this machine, as the claims judge them (issue 22)
            cores = int(s.environment.get("cpu_count") or machine_cores(studies))
            published = published.assign(clients=[claims_mod.clients_here(int(k), post_cores, cores)
                                                  for k in published["clients"]])
        for cell in cells(s.summary):
            ref = _in_cell(published, cell) if published is not None and len(published) else published
            title = info.title + (f" ({cell_label(cell)})" if cell else "")
            figs[f"study_{name}{cell_slug(cell)}"] = plots.ratio_figure(
                _in_cell(s.summary, cell), baseline=s.baseline, reference=ref, title=title)
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
    prepared = regression.prepare(runs) if len(runs) else pd.DataFrame(columns=list(regression.PREPARED_COLUMNS))
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


def floor_findings(prepared: pd.DataFrame, *, batches: int = 200, batch: int = 100) -> pd.DataFrame:
    """The write() floor at the typical size of a logged line, to a file and into a pipe (measured now)."""
    nbytes = regression.typical_record_bytes(prepared) if len(prepared) else 200
    rows = [regression.write_floor(nbytes, target=t, batches=batches, batch=batch).as_dict()
            for t in regression.WRITE_TARGETS]
    return pd.DataFrame(rows)


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
    """The anomaly screen over every study (logbench.anomalies)."""
    return anomalies_mod.screen(studies, cell_columns, physical_orders(studies))


def claim_findings(studies: dict[str, StudyData], regression_table: pd.DataFrame | None,
                   claims_file: Path | str = claims_mod.CLAIMS_FILE) -> tuple[pd.DataFrame, pd.DataFrame]:
    table = claims_mod.with_published(claims_mod.load(claims_file), reference_values())
    return claims_mod.evaluate(table, studies, cores=machine_cores(studies), regression=regression_table,
                               orders=physical_orders(studies))


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


def compute_findings(processed_dir: Path | str = paths.PROCESSED, *, claims_file: Path | str = claims_mod.CLAIMS_FILE,
                     floor_batches: int = 200) -> tuple[dict[str, pd.DataFrame], dict[str, object]]:
    """What the notebook 90_findings computes, in the same order (for tests and the CLI)."""
    studies, status = load_studies(processed_dir)
    reg = regression_findings(studies)
    floors = floor_findings(reg.prepared, batches=floor_batches)
    summary, detail = claim_findings(studies, reg.coefficients, claims_file)
    tables = {"studies": status, "regression": reg.coefficients, "regression_fit": reg.diagnostics,
              "influential": reg.influential, "write_floor": floors, "claims": summary, "claims_detail": detail,
              "anomalies": anomaly_findings(studies)}
    figures = {**study_figures(studies), **reg.figures, **cost_figures(reg, floors)}
    return tables, figures


# --- step 3: the paper --------------------------------------------------------------------------------------


def _missing(value) -> bool:
    if value is None or value is pd.NA:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, str) and not value.strip()


class Numbers:
    """Every in-text number with its provenance (``spec``), read from the processed files."""

    def __init__(self, processed_dir: Path):
        self.dir = Path(processed_dir)
        self.items: dict[str, dict] = {}
        self._cache: dict[str, object] = {}

    def _load(self, source: str):
        if source not in self._cache:
            p = self.dir / source
            self._cache[source] = json.loads(p.read_text()) if source.endswith(".json") else pd.read_csv(p)
        return self._cache[source]

    def add(self, key: str, spec: dict, *, optional: bool = False) -> str | None:
        """Register a number; a missing value (NaN, empty) is skipped when optional, else printed as '—'."""
        value = resolve(spec, self._load, constants=CONSTANTS)
        if _missing(value):
            if optional:
                return None
            value = None
        text = render(value, spec) if value is not None else "—"
        if isinstance(value, float) and math.isinf(value):
            # an unbounded interval's end (Fieller, few runs): JSON has no infinity, so its text "inf"/"-inf"
            value = str(value)
        self.items[key] = {"text": text, "value": value, "spec": spec}
        return text

    def get(self, key: str) -> str:
        return self.items[key]["text"]


# Constants of the method that the paper states (the test compares them with the code).
CONSTANTS = {
    "claims.MAX_CLIENTS_PER_CORE": claims_mod.MAX_CLIENTS_PER_CORE,
    "regression.COOKS_FACTOR": regression.COOKS_FACTOR,
    "regression.BYTES_PER_KB": regression.BYTES_PER_KB,
    "stats.CONFIDENCE_PERCENT": round(100 * CONFIDENCE),
    "claims.EQUIVALENCE_PERCENT": round(100 * claims_mod.EQUIVALENCE),
    **{f"claim_rules.POST_CORES.{p}": c for p, c in claim_rules.POST_CORES.items() if c is not None},
    "claim_rules.POST_001_MAX_PER_CORE": claim_rules.POST_001_MAX_PER_CORE,
}


def resolve(spec: dict, load, constants: dict | None = None):
    """The value a spec points at. Kinds: cell (one row's column), agg (count/nunique/max/min/first/list over
    rows), env (a key of a JSON record), constant, div (two specs), scale (a spec times a factor)."""
    kind = spec["kind"]
    if kind == "constant":
        return (constants or CONSTANTS)[spec["name"]]
    if kind == "div":
        return resolve(spec["a"], load, constants) / resolve(spec["b"], load, constants)
    if kind == "scale":
        return resolve(spec["of"], load, constants) * spec["factor"]
    data = load(spec["source"])
    if kind == "env":
        return data[spec["key"]]
    rows = data
    for col, want in spec.get("where", {}).items():
        rows = rows[rows[col].astype(str) == str(want)]
    if kind == "cell":
        if len(rows) != 1:
            raise ValueError(f"spec {spec} matches {len(rows)} rows, not 1")
        v = rows[spec["column"]].iloc[0]
        return v.item() if hasattr(v, "item") else v
    if kind == "agg":
        col = rows[spec["column"]] if spec.get("column") else rows
        how = spec["agg"]
        if how == "count":
            return int(len(rows))
        if how == "nunique":
            return int(col.nunique())
        if how == "list":
            return sorted(int(x) for x in col.unique()) if spec.get("int") else sorted(str(x) for x in col.unique())
        if how == "first":
            v = col.iloc[0]
            return v.item() if hasattr(v, "item") else v
        v = getattr(col, how)()
        return v.item() if hasattr(v, "item") else v
    raise ValueError(f"spec kind {kind!r}")


def render(value, spec: dict) -> str:
    """The text of a value: numbers with ``sig`` significant digits (fmt), lists joined, text as is."""
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if isinstance(value, bool):
        return str(value)
    if spec.get("kind") == "constant":
        return str(value)
    if spec.get("p_value"):
        return fmt_p(float(value))
    if isinstance(value, (int, float)):
        if spec.get("int") or (isinstance(value, int) and "sig" not in spec):
            return str(int(value))
        return fmt(float(value), spec.get("sig", 3))
    return str(value)


def _cell_text(v, sig: int = 3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    return fmt(float(v), sig)


def _ci_text(mean, low, high, sig: int = 3, factor: float = 1.0) -> str:
    """'mean [low, high]' (the CI omitted where undefined), each value times ``factor``."""
    def scaled(v):
        return v if v is None or (isinstance(v, float) and math.isnan(v)) else float(v) * factor
    if low is None or (isinstance(low, float) and math.isnan(low)):
        return _cell_text(scaled(mean), sig)
    return f"{_cell_text(scaled(mean), sig)} [{_cell_text(scaled(low), sig)}, {_cell_text(scaled(high), sig)}]"


_CI = f"{round(100 * CONFIDENCE)} % CI"
STUDY_TABLE_COLUMNS = (
    # (summary column stem, header, significant digits, factor)
    ("tps", f"tps [{_CI}]", 3, 1.0),
    ("ratio", f"ratio to baseline [{_CI}]", 3, 1.0),
    ("log_loss", "log records lost (%)", 2, 100.0),
    ("log_lines_per_s", "log lines/s", 3, 1.0),
    ("log_bytes_per_s", "log kB/s", 3, 1.0 / regression.BYTES_PER_KB),
)


def study_table(summary: pd.DataFrame) -> pd.DataFrame:
    """A study's summary as display strings: its key and cell columns, n, then mean [CI] per quantity."""
    keys = summary_keys(summary)
    keys = [c for c in cell_columns(summary) if c not in keys] + keys
    out = pd.DataFrame({k: summary[k].astype(str) for k in keys})
    out["n"] = summary["n"].astype(int).astype(str)
    for stem, header, sig, factor in STUDY_TABLE_COLUMNS:
        mean = f"{stem}_mean" if f"{stem}_mean" in summary.columns else stem
        if mean not in summary.columns:
            continue
        low, high = f"{stem}_ci_low", f"{stem}_ci_high"
        out[header] = [_ci_text(r[mean], r.get(low), r.get(high), sig, factor) for _, r in summary.iterrows()]
    return out


def _posts_table() -> pd.DataFrame:
    try:
        from . import reference
        p = reference.load_posts()
    except (ImportError, OSError, ValueError):
        return pd.DataFrame(columns=["post", "title", "authors", "year", "engine"])
    return pd.DataFrame({
        "post": p["post_id"].astype(str),
        "title": [TITLE_GLOSS.get(str(i), str(t)) for i, t in zip(p["post_id"], p["title"])],
        "authors": p["authors"].astype(str),
        "year": [str(int(y)) if pd.notna(y) else "n.d." for y in p["year"]],
        "engine": p["engine"].astype(str),
    })


def _write_csv(df: pd.DataFrame, path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(path, index=False, lineterminator="\n")
    return path.name


def statements(path: Path) -> pd.DataFrame:
    """A findings file of sentences (item, statement), each number printed by the code from its data."""
    t = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = {"item", "statement"} - set(t.columns)
    if missing:
        raise ValueError(f"{path}: missing columns {sorted(missing)}; expected item, statement")
    return t[["item", "statement"]]


def generate(processed_dir: Path | str = paths.PROCESSED, figures_dir: Path | str = paths.FIGURES,
             build_dir: Path | str = paths.PAPER) -> dict:
    """Write ``<build_dir>/generated/`` (numbers.json and the tables) from the processed data; returns numbers.json."""
    processed_dir, figures_dir, build_dir = Path(processed_dir), Path(figures_dir), Path(build_dir)
    gen = build_dir / GENERATED
    if gen.exists():
        shutil.rmtree(gen)
    gen.mkdir(parents=True)
    nums = Numbers(processed_dir)
    doc: dict = {"studies": [], "missing_studies": [], "engines": [], "floors": [], "figures": [], "tables": [],
                 "switchback_studies": []}

    def figure(name: str) -> str:
        if (figures_dir / f"{name}.png").exists():
            rel = f"{FIGURES}/{name}.png"
            doc["figures"].append(rel)
            return rel
        return ""

    def table(df: pd.DataFrame, name: str) -> str:
        rel = f"{GENERATED}/{_write_csv(df, gen / f'{name}.csv')}"
        doc["tables"].append(rel)
        return rel

    doc["posts_table"] = table(_posts_table(), "posts")
    for key, name in (("confidence", "stats.CONFIDENCE_PERCENT"), ("equivalence", "claims.EQUIVALENCE_PERCENT"),
                      ("max_clients_per_core", "claims.MAX_CLIENTS_PER_CORE"),
                      ("cooks_factor", "regression.COOKS_FACTOR"),
                      ("bytes_per_kb", "regression.BYTES_PER_KB"),
                      ("max_clients_per_core_001", "claim_rules.POST_001_MAX_PER_CORE")):
        nums.add(key, {"kind": "constant", "name": name})

    studies, status = load_studies(processed_dir)
    doc["has_findings"] = (processed_dir / "findings_claims.csv").exists()
    env_source = None
    for _, row in status.iterrows():
        name = row["study"]
        if not row["present"]:
            doc["missing_studies"].append({"name": name, "title": row["title"], "post": row["post"],
                                           "note": row["note"]})
            continue
        s = studies[name]
        info = _info(name)
        src = f"{name}_runs.csv"
        entry = {"name": name, "title": info.title, "post": info.post, "engine": s.engine, "baseline": s.baseline,
                 "figures": [], "table": "", "cheapest": [], "has_env": False}
        if s.summary is not None and "ratio" in s.summary.columns:
            for cell in cells(s.summary):
                rel = figure(f"study_{name}{cell_slug(cell)}")
                if rel:
                    entry["figures"].append({"path": rel, "cell": cell_label(cell)})
        measured = {"warmup": "False"} if "warmup" in pd.read_csv(processed_dir / src, nrows=1).columns else {}
        nums.add(f"{name}.runs", {"kind": "agg", "source": src, "where": measured, "agg": "count"})
        nums.add(f"{name}.configurations", {"kind": "agg", "source": src, "where": measured, "column": "configuration",
                                            "agg": "nunique"})
        nums.add(f"{name}.clients", {"kind": "agg", "source": src, "where": measured, "column": "clients",
                                     "agg": "list", "int": True})
        for col, agg, key in (("repeat", "nunique", "repeats"), ("duration_s", "max", "duration"),
                              ("scale", "max", "scale"), ("server_version", "first", "server_version"),
                              ("query_mode", "first", "query_mode"), ("workload", "list", "workload"),
                              ("backend", "list", "backend")):
            if col in s.runs.columns:
                spec = {"kind": "agg", "source": src, "where": measured, "column": col, "agg": agg}
                if col in ("duration_s", "scale"):
                    spec["int"] = True
                if nums.add(f"{name}.{key}", spec, optional=True) is not None:
                    entry[f"has_{key}"] = True
        if s.summary is not None and "design" in s.summary.columns and (s.summary["design"] == "switchback").any():
            # windows inside continuous loads, not separate runs: the paper says so wherever it counts them
            entry["switchback"] = True
            doc["switchback_studies"].append(name)
            nums.add(f"{name}.loads", {"kind": "agg", "source": f"{name}.csv", "column": "n_loads", "agg": "max",
                                       "int": True})
        if s.summary is not None:
            entry["table"] = table(study_table(s.summary), f"study_{name}")
            cfg = s.summary["configuration"].astype(str)
            summ = s.summary[(cfg != s.baseline) & ~cfg.map(regression.is_aa)]
            entry["resolution"] = []
            aa = s.summary[cfg.map(regression.is_aa)] if "ratio" in s.summary.columns else s.summary.iloc[:0]
            for _, r in aa.iterrows():
                cell = {c: str(r[c]) for c in cell_columns(s.summary)}
                where = {**cell, "configuration": str(r["configuration"]), "clients": int(r["clients"])}
                rk = f"{name}{cell_slug(cell)}.{int(r['clients'])}.aa"
                for col in ("ratio", "ratio_ci_low", "ratio_ci_high"):
                    nums.add(f"{rk}.{col}", {"kind": "cell", "source": f"{name}.csv", "where": where, "column": col,
                                             "sig": 3})
                entry["resolution"].append({"key": rk, "configuration": str(r["configuration"]),
                                            "label": (cell_label(cell) + ", " if cell else "") +
                                            f"{int(r['clients'])} clients"})
            if "ratio" in summ.columns and len(summ):
                for cell in cells(s.summary):
                    in_cell = _in_cell(summ, cell)
                    for k in sorted(in_cell["clients"].astype(int).unique()):
                        at = in_cell[in_cell["clients"].astype(int) == k].dropna(subset=["ratio"])
                        if not len(at):
                            continue
                        label = (cell_label(cell) + ", " if cell else "") + f"{int(k)} clients"
                        base = f"{name}{cell_slug(cell)}.{int(k)}"
                        for which, r in (("best", at.loc[at["ratio"].idxmax()]),
                                         ("worst", at.loc[at["ratio"].idxmin()])):
                            where = {**cell, "configuration": str(r["configuration"]), "clients": int(k)}
                            nums.add(f"{base}.{which}.configuration", {
                                "kind": "cell", "source": f"{name}.csv", "where": where, "column": "configuration"})
                            for col in ("ratio", "ratio_ci_low", "ratio_ci_high"):
                                nums.add(f"{base}.{which}.{col}", {"kind": "cell", "source": f"{name}.csv",
                                                                   "where": where, "column": col, "sig": 3})
                        best = at.loc[at["ratio"].idxmax()]
                        # Logging faster than not logging, beyond the CI: not a cost, the anomaly (see its section).
                        entry["cheapest"].append({"key": base, "label": label,
                                                  "above_one": bool(best["ratio_ci_low"] > 1)})
        # A study's own statements (its code printed each number from its data), under its section.
        own = processed_dir / STUDY_FINDINGS.format(name=name)
        entry["findings"] = ""
        if own.exists():
            entry["findings"] = table(statements(own), f"study_{name}_findings")
        env_file = f"{name}_environment.json"
        if (processed_dir / env_file).exists():
            entry["has_env"] = True
            env_source = env_source or env_file
        doc["studies"].append(entry)

    if env_source:
        e = json.loads((processed_dir / env_source).read_text())
        doc["environment"] = {}
        for key in ("cpu_count", "cpu_model", "kernel", "os", "clocksource", "timer_loop_ns"):
            if key in e:
                nums.add(f"env.{key}", {"kind": "env", "source": env_source, "key": key})
                doc["environment"][key] = True
        if "memory_bytes" in e:
            nums.add("env.memory_gb", {"kind": "scale", "factor": 1e-9, "sig": 3,
                                       "of": {"kind": "env", "source": env_source, "key": "memory_bytes"}})
            doc["environment"]["memory_gb"] = True

    # Regression, floor and claims: the findings files written by 90_findings.
    reg_file, fit_file = processed_dir / "findings_regression.csv", processed_dir / "findings_regression_fit.csv"
    floor_file = processed_dir / "findings_write_floor.csv"
    floors = pd.read_csv(floor_file) if floor_file.exists() else pd.DataFrame(columns=["target"])
    for t in floors["target"]:
        where = {"target": t}
        for col in ("median_us", "ci_low", "ci_high"):
            nums.add(f"floor.{t}.{col}", {"kind": "cell", "source": floor_file.name, "where": where, "column": col,
                                          "sig": 3})
        for col in ("nbytes", "batches", "batch") if t == "file" else ():
            nums.add(f"floor.{t}.{col}", {"kind": "cell", "source": floor_file.name, "where": where, "column": col,
                                          "int": True})
        doc["floors"].append(str(t))
    doc["excluded_studies"] = [{"name": k, "why": v} for k, v in regression.NOT_LINE_COST.items()]
    if reg_file.exists() and fit_file.exists():
        coefs, diag = pd.read_csv(reg_file), pd.read_csv(fit_file)
        main_fits = diag[diag["model"] == "main"]
        order = [regression.text_column(main_fits, c) for c in regression.FIT_COLUMNS]
        # cached before IO-bound, one environment's fits together
        for key in main_fits.assign(_order=list(zip(*order))).sort_values("_order")["fit"]:
            d = diag[(diag["fit"] == key) & (diag["model"] == "main")].iloc[0]
            slug = fit_slug(key)
            e = {"key": slug, "engine": str(d["engine"]), "env_id": str(d["env_id"]), "studies": str(d["studies"]),
                 "figure_fit": figure(f"regression_{slug}"), "families": [], "label": fit_label(d, studies)}
            c = coefs[coefs["fit"] == key]
            shown = c[~c["term"].str.startswith("baseline ")].assign(
                estimate=lambda x: [_ci_text(a, b, h) for a, b, h in zip(x["estimate"], x["ci_low"], x["ci_high"])],
                p=lambda x: [fmt_p(v) for v in x["p"]])[["model", "term", "unit", "estimate", "p"]]
            e["table"] = table(shown.rename(columns={"estimate": f"estimate [{_CI}]"}), f"regression_{slug}")
            fit_where = {"fit": key, "model": "main"}
            for col, sig in (("n", None), ("r2", 2), ("n_influential", None)):
                spec = {"kind": "cell", "source": fit_file.name, "where": fit_where, "column": col}
                spec.update({"sig": sig} if sig else {"int": True})
                nums.add(f"{slug}.fit.{col}", spec)
            nums.add(f"{slug}.formula", {"kind": "cell", "source": fit_file.name, "where": fit_where,
                                         "column": "formula"})
            kb = c[(c["model"] == "main") & (c["term"] == "kb_per_tx")]
            e["has_kb"] = bool(len(kb))
            for fam in [f for f in regression.FAMILIES if ((c["model"] == "main") & (c["family"] == f)).any()]:
                term = regression.family_term(fam)
                fk = f"{slug}.{fam}"
                fe = {"family": fam, "label": regression.FAMILY_LABELS[fam], "key": fk, "levels": [],
                      "figure": figure(f"line_cost_{slug}_{fam}"), "floor": "", "robust": False, "typical": ""}
                for col in ("estimate", "ci_low", "ci_high"):
                    nums.add(f"{fk}.{col}", {"kind": "cell", "source": reg_file.name, "column": col, "sig": 3,
                                             "where": {"fit": key, "model": "main", "term": term}})
                typical = {"fit": key, "model": "main", "term": regression.typical_term(fam)}
                if ((c["model"] == "main") & (c["term"] == typical["term"])).any():
                    fe["typical"] = f"{fk}.typical"
                    for col in ("estimate", "ci_low", "ci_high"):
                        nums.add(f"{fk}.typical.{col}", {"kind": "cell", "source": reg_file.name, "column": col,
                                                         "sig": 3, "where": typical})
                    nums.add(f"{fk}.typical.bytes", {"kind": "cell", "source": reg_file.name, "column": "bytes",
                                                     "sig": 3, "where": typical})
                robust = c[(c["model"] == regression.WITHOUT_INFLUENTIAL) & (c["term"] == term)]
                if len(robust):
                    fe["robust"] = True
                    for col in ("estimate", "ci_low", "ci_high"):
                        nums.add(f"{fk}.robust.{col}", {
                            "kind": "cell", "source": reg_file.name, "column": col, "sig": 3,
                            "where": {"fit": key, "model": regression.WITHOUT_INFLUENTIAL, "term": term}})
                # per level: the typical line where the fit has one (what the abstract and the figure show)
                level_term, per = cost_terms(c, fam)
                fe["levels_typical"] = level_term != term
                for k in per["clients"].astype(int):
                    lk = f"{fk}.at{k}"
                    for col in ("estimate", "ci_low", "ci_high"):
                        nums.add(f"{lk}.{col}", {"kind": "cell", "source": reg_file.name, "column": col, "sig": 3,
                                                 "where": {"fit": key, "model": "per_clients",
                                                           "term": f"{level_term} @ {k} clients"}})
                    fe["levels"].append({"clients": int(k), "key": lk})
                # A multiple of the floor means something only for a cost distinguishable from zero.
                target = FLOOR_FOR.get((e["engine"], fam))
                # the floor is one write() of a typical line's size: the typical line is what it is set against
                cost_term = typical["term"] if fe["typical"] else term
                main_row = c[(c["model"] == "main") & (c["term"] == cost_term)]
                if target and target in doc["floors"] and float(main_row["ci_low"].iloc[0]) > 0:
                    fe["floor"] = target
                    fe["floor_words"] = FLOOR_WORDS[target]
                    nums.add(f"{fk}.over_floor", {
                        "kind": "div", "sig": 2,
                        "a": {"kind": "cell", "source": reg_file.name, "column": "estimate",
                              "where": {"fit": key, "model": "main", "term": cost_term}},
                        "b": {"kind": "cell", "source": floor_file.name, "column": "median_us",
                              "where": {"target": target}}})
                e["families"].append(fe)
            if e["has_kb"]:
                for col in ("estimate", "ci_low", "ci_high"):
                    nums.add(f"{slug}.kb.{col}", {"kind": "cell", "source": reg_file.name, "column": col, "sig": 3,
                                                  "where": {"fit": key, "model": "main", "term": "kb_per_tx"}})
            doc["engines"].append(e)

    claims_file = processed_dir / "findings_claims.csv"
    doc["verdicts"] = []
    if claims_file.exists():
        cl = pd.read_csv(claims_file, dtype=str, keep_default_na=False)
        if "rule" not in cl.columns:
            cl["rule"] = ""
        shown = cl[["claim_id", "post", "claim", "published", "claimed", "ours", "verdict", "why", "rule"]]
        doc["claims_table"] = table(shown, "claims")
        nums.add("claims.count", {"kind": "agg", "source": claims_file.name, "agg": "count"})
        for v in claims_mod.VERDICTS:
            nums.add(f"claims.{v}", {"kind": "agg", "source": claims_file.name, "where": {"verdict": v}, "agg": "count"})
            doc["verdicts"].append(v)

    headline.add(doc, nums, studies_registry.specs(), processed_dir)
    anomaly(doc, nums, studies, processed_dir, gen)
    screen_file = processed_dir / ANOMALIES
    doc["screen_table"] = ""
    if screen_file.exists():
        screen = pd.read_csv(screen_file, dtype={"cell": str}, keep_default_na=False,
                             na_values={c: [""] for c in ("value", "ci_low", "ci_high")})
        nums.add("screen.count", {"kind": "agg", "source": ANOMALIES, "agg": "count"})
        for k in anomalies_mod.KINDS:
            nums.add(f"screen.{k}", {"kind": "agg", "source": ANOMALIES, "where": {"kind": k}, "agg": "count"})
        if len(screen):
            doc["screen_table"] = table(anomalies_mod.paper_table(screen), "anomalies")
    digest_section(doc, processed_dir, gen)
    designs_section(doc, processed_dir, gen)
    doc["instrument_figure"] = figure("instrument_cv")
    threats(doc, nums, studies, processed_dir)
    discussion.add(doc, nums, processed_dir)

    doc["numbers"] = nums.items
    (gen / "numbers.json").write_text(json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False, default=str, allow_nan=False) + "\n")
    return doc


# --- the 1-client anomaly, the instrument hook, threats to validity ------------------------------------------

# Written by the instrument study (issue 10) when it exists: one row per finding, ``item`` and ``statement`` (a
# sentence whose numbers its code printed from its data). The paper's section "Instrument resolution and the
# anomaly test" prints these statements; until the file exists it says the test is pending.
INSTRUMENT_FINDINGS = "instrument_findings.csv"
# A study's own findings (columns ``item``, ``statement``), written by its processed_tables as the table
# "findings"; printed under its section of the paper (e.g. pg_audit_timing: the pipe pair, the clock).
STUDY_FINDINGS = "{name}_findings.csv"


# Written by 90_findings: the anomaly screen over every study's data (logbench.anomalies).
ANOMALIES = "findings_anomalies.csv"


def anomaly(doc: dict, nums: "Numbers", studies: dict, processed_dir: Path, gen: Path) -> None:
    """The cells where logging was faster than not logging, as a table; the instrument study's statements."""
    rows = []
    aa_col, ratio_col = f"A/A ratio [{_CI}]", f"ratio to baseline [{_CI}]"
    for name, s in studies.items():
        fast = anomalies_mod.faster_than_baseline(s.summary, s.baseline)
        for _, r in fast.iterrows():
            cell = {c: str(r[c]) for c in cell_columns(s.summary) if c in r.index}
            k = int(r["clients"])
            # what else the cell says: the CPU idle state its runs held, and its baseline measured against itself
            runs = _in_cell(s.runs, cell)
            runs = runs[runs["clients"].astype(int) == k]
            idle = "/".join(sorted(runs["idle_state"].dropna().astype(str).unique())) if "idle_state" in runs else ""
            aa = _in_cell(s.summary, cell)
            aa = aa[(aa["configuration"].astype(str) == aa_name(s.baseline)) & (aa["clients"].astype(int) == k)]
            rows.append({"study": name, "cell": cell_label(cell), "configuration": str(r["configuration"]),
                         "clients": str(k), ratio_col: _ci_text(r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"]),
                         "idle state": idle or "–",
                         aa_col: (_ci_text(aa["ratio"].iloc[0], aa["ratio_ci_low"].iloc[0], aa["ratio_ci_high"].iloc[0])
                                  if len(aa) else "–")})
    df = pd.DataFrame(rows, columns=["study", "cell", "configuration", "clients", ratio_col, "idle state", aa_col])
    doc["anomaly_table"] = ""
    if len(df):
        p = gen / "anomaly.csv"
        df.to_csv(p, index=False, lineterminator="\n")
        doc["anomaly_table"] = f"{GENERATED}/{p.name}"
        doc["tables"].append(doc["anomaly_table"])
        doc["anomaly_clients"] = sorted({int(x) for x in df["clients"]})
        doc["anomaly_idle_free"] = bool((df["idle state"] != "hold").any())
    inst = processed_dir / INSTRUMENT_FINDINGS
    doc["instrument"] = ""
    if inst.exists():
        p = gen / "instrument.csv"
        statements(inst).to_csv(p, index=False, lineterminator="\n")
        doc["instrument"] = f"{GENERATED}/{p.name}"
        doc["tables"].append(doc["instrument"])


# Written by study 09 (notebooks/09_mysql_digest): pt-query-digest's fingerprints of a captured full slow log,
# ranked, with the ebook's rows-examined / rows-sent reading. The paper prints its top rows when it exists.
DIGEST = "mysql_digest.csv"
DIGEST_ROWS = 12


# Written by notebook 00's designs part: the switchback and the block design at equal machine time.
DESIGNS = ("instrument_designs_efficiency.csv", "instrument_designs_bias.csv")
PLACEMENT_TEXT = {"none": "with the scheduler's placement", "split": "with the server and pgbench on separate CPUs"}


def designs_section(doc: dict, processed_dir: Path, gen: Path) -> None:
    """The method section's comparison of the designs (``doc['designs_table']``: its CSV, or '' until notebook 00
    ran it), one row per clients level and arm, every value as notebook 00 wrote it."""
    doc["designs_table"], doc["designs_verdict"] = "", ""
    eff_csv, bias_csv = (processed_dir / f for f in DESIGNS)
    if not (eff_csv.exists() and bias_csv.exists()):
        return
    eff, bias = pd.read_csv(eff_csv), pd.read_csv(bias_csv)
    # notebook 00's runs before placement was a factor of the designs part ran with the scheduler's placement
    eff, bias = (t if "placement" in t else t.assign(placement="none") for t in (eff, bias))
    placed = set(eff["placement"]) != {"none"}
    rows = [{"clients": int(e["clients"]), **({"placement": PLACEMENT_TEXT.get(e["placement"], e["placement"])}
                                              if placed else {}),
             "sessions per design": f"{int(e['switchback sessions'])} / {int(e['blocks sessions'])}",
             "A/A variance × minutes, blocks / switchback": _ci_text(e["blocks / switchback"], e["ci_low"],
                                                                      e["ci_high"]),
             "arm": b["arm"],
             "its ratio, switchback / blocks": _ci_text(b["switchback / blocks"], b["diff ci_low"],
                                                        b["diff ci_high"])}
            for _, e in eff.iterrows()
            for _, b in bias[(bias["clients"] == e["clients"]) & (bias["placement"] == e["placement"])].iterrows()]

    def levels(mask) -> str:
        c = sorted({int(x) for x in mask})
        return " and ".join(f"{x} client(s)" for x in c) if c else ""

    def verdict(eff: pd.DataFrame, bias: pd.DataFrame) -> str:
        sb_wins, bl_wins = levels(eff[eff["ci_low"] > 1]["clients"]), levels(eff[eff["ci_high"] < 1]["clients"])
        moved = levels(bias[(bias["diff ci_low"] > 1) | (bias["diff ci_high"] < 1)]["clients"])
        parts = ([f"switching was more efficient with confidence at {sb_wins}"] if sb_wins else []) \
            + ([f"the block design was more efficient with confidence at {bl_wins}"] if bl_wins else []) \
            + ([] if sb_wins or bl_wins else ["neither design was more efficient with confidence at any level"]) \
            + [f"switching moved the logging arm's ratio at {moved}" if moved else
               "switching did not move the logging arm's ratio at any level"]
        return "; ".join(parts)

    if placed:
        text = "; ".join(f"{PLACEMENT_TEXT.get(p, p)}: " + verdict(eff[eff["placement"] == p],
                                                                   bias[bias["placement"] == p])
                         for p in sorted(set(eff["placement"]))) + "."
    else:
        text = verdict(eff, bias) + "."
    doc["designs_verdict"] = text[0].upper() + text[1:]
    p = gen / "designs.csv"
    _write_csv(pd.DataFrame(rows), p)
    doc["designs_table"] = f"{GENERATED}/{p.name}"
    doc["tables"].append(doc["designs_table"])


def digest_section(doc: dict, processed_dir: Path, gen: Path) -> None:
    """The digest's top fingerprints as display strings (``doc['digest']``: its CSV, or '' until study 09 ran)."""
    src = processed_dir / DIGEST
    doc["digest"] = ""
    if not src.exists():
        return
    d = pd.read_csv(src, keep_default_na=False, na_values=[""]).head(DIGEST_ROWS)
    t = pd.DataFrame({
        "rank": d["rank"].astype(int).astype(str), "ours": d["statement"].fillna("").astype(str),
        "fingerprint": d["fingerprint"].astype(str).str.slice(0, 60), "count": d["count"].astype(int).astype(str),
        "share of time": (100 * d["time_share"]).map(lambda v: f"{fmt(v)} %"),
        "p95 (ms)": (1e3 * d["time_p95_s"]).map(fmt), "sent / query (A)": d["rows_sent_per_query"].map(fmt),
        "B": d["examined_per_table"].map(fmt), "B / A": d["ratio"].astype(float).map(fmt),
        "reading": d["reading"].astype(str)})
    p = gen / "digest.csv"
    t.to_csv(p, index=False, lineterminator="\n")
    doc["digest"] = f"{GENERATED}/{p.name}"
    doc["tables"].append(doc["digest"])


def threats(doc: dict, nums: "Numbers", studies: dict, processed_dir: Path) -> None:
    """The numbers the threats-to-validity section names (each optional: only what the data has)."""
    pg = processed_dir / "pg_destinations.csv"
    if pg.exists() and "log_loss_mean" in pd.read_csv(pg, nrows=1).columns:
        if nums.add("threat.udp_loss", {"kind": "scale", "factor": 100, "sig": 2,
                                        "of": {"kind": "agg", "source": pg.name, "column": "log_loss_mean",
                                               "where": {"configuration": "remote_syslog_udp"}, "agg": "max"}},
                    optional=True) is not None:
            doc["threat_udp"] = True
    fit_file = processed_dir / "findings_regression_fit.csv"
    if fit_file.exists():
        nums.add("threat.environments", {"kind": "agg", "source": fit_file.name, "column": "env_id",
                                         "agg": "nunique"})
        doc["threat_envs"] = True
    doc["threat_cores"] = [{"post": p, "key": f"post_cores.{p}"} for p, c in claim_rules.POST_CORES.items()
                           if c is not None]
    for p, c in claim_rules.POST_CORES.items():
        if c is not None:
            nums.add(f"post_cores.{p}", {"kind": "constant", "name": f"claim_rules.POST_CORES.{p}"})


def build(processed_dir: Path | str = paths.PROCESSED, figures_dir: Path | str | None = None,
          build_dir: Path | str = paths.PAPER, pdf: Path | str | None = None) -> Path:
    """Generate the data files and compile the paper; returns the PDF's path.

    Building elsewhere than ``paper/`` copies the typst source and the figures there first, so a
    test can build from a temporary processed directory without touching tracked files.
    """
    build_dir = Path(build_dir)
    figures_dir = Path(figures_dir) if figures_dir is not None else paths.FIGURES
    build_dir.mkdir(parents=True, exist_ok=True)
    if build_dir.resolve() != paths.PAPER.resolve():
        shutil.copy2(paths.PAPER / PAPER_SOURCE, build_dir / PAPER_SOURCE)
    target_figures = build_dir / FIGURES
    if figures_dir.exists() and figures_dir.resolve() != target_figures.resolve():
        target_figures.mkdir(parents=True, exist_ok=True)
        for f in sorted(figures_dir.glob("*.png")):
            shutil.copy2(f, target_figures / f.name)
    generate(processed_dir, target_figures if target_figures.exists() else figures_dir, build_dir)
    return compile_pdf(build_dir, pdf)


def compile_pdf(build_dir: Path | str = paths.PAPER, pdf: Path | str | None = None) -> Path:
    """Compile ``logbench.typ`` with the typst package: embedded fonts only, no creation date (reproducible bytes)."""
    import typst

    build_dir = Path(build_dir)
    pdf = Path(pdf) if pdf is not None else build_dir / PDF_NAME
    data = typst.compile(str(build_dir / PAPER_SOURCE), root=str(build_dir), ignore_system_fonts=True)
    pdf.write_bytes(data)
    return pdf


FINDINGS_NOTEBOOK = paths.NOTEBOOKS / "90_findings.ipynb"


def run_findings_notebook(notebook: Path | str = FINDINGS_NOTEBOOK, timeout: int = 600) -> Path:
    """Execute 90_findings in place with its default parameters (writes data/processed/findings_*.csv and
    paper/figures/); no timing metadata is recorded, so an unchanged result leaves the notebook unchanged
    except for the measured write() floor."""
    import nbformat
    from nbclient import NotebookClient

    notebook = Path(notebook)
    nb = nbformat.read(notebook, as_version=4)
    NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(notebook.parent)}}).execute()
    nbformat.write(nb, notebook)
    return notebook


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m logbench.report", description=__doc__.splitlines()[0])
    ap.add_argument("--findings", action="store_true",
                    help="first execute notebooks/90_findings.ipynb in place (data/processed -> findings, figures)")
    ap.add_argument("--no-pdf", action="store_true", help="do not build the paper")
    ap.add_argument("--processed", default=str(paths.PROCESSED), help="processed data (default: data/processed)")
    ap.add_argument("--figures", default=str(paths.FIGURES), help="figures of 90_findings (default: paper/figures)")
    ap.add_argument("--build-dir", default=str(paths.PAPER), help="where generated/ and the PDF go (default: paper)")
    ap.add_argument("--pdf", default=None, help="PDF path (default: <build-dir>/logbench.pdf)")
    args = ap.parse_args(argv)
    if args.findings:
        print(run_findings_notebook())
    if not args.no_pdf:
        print(build(args.processed, args.figures, args.build_dir, args.pdf))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


# --- sentences for the notebook (numbers printed from data, never typed) -------------------------------------


def regression_text(coefficients: pd.DataFrame, diagnostics: pd.DataFrame) -> str:
    """One Markdown paragraph per (engine, environment): the cost of a line per destination family and per
    concurrency level, the cost of a kB, the fit."""
    if not len(coefficients):
        return "No regression: no engine has both a baseline and a logging configuration in the processed data."
    out = []
    for key in sorted(coefficients["fit"].unique()):
        c = coefficients[coefficients["fit"] == key]
        d = diagnostics[(diagnostics["fit"] == key) & (diagnostics["model"] == "main")].iloc[0]

        def est(r) -> str:
            return f"{fmt(r['estimate'])} µs ({_CI} {fmt(r['ci_low'])} to {fmt(r['ci_high'])})"

        parts = [f"**{d['engine']}, environment {d['env_id']}** ({d['studies']}; {int(d['n'])} runs, "
                 f"weighted R² = {fmt(d['r2'], 2)}, {d['cov_type']} standard errors)"]
        for fam in regression.FAMILIES:
            main = c[(c["model"] == "main") & (c["term"] == regression.family_term(fam))]
            if not len(main):
                continue
            typical = c[(c["model"] == "main") & (c["term"] == regression.typical_term(fam))]
            _, per = cost_terms(c, fam)
            levels = "; ".join(f"{int(r['clients'])} clients: {est(r)}" for _, r in per.iterrows())
            parts.append((f"a typical line to {regression.FAMILY_LABELS[fam]} ({fmt(typical.iloc[0]['bytes'])} bytes) "
                          f"costs {est(typical.iloc[0])}, its line term " if len(typical) else
                          f"a line to {regression.FAMILY_LABELS[fam]} costs ")
                         + est(main.iloc[0]) + (f" (per level — {levels})" if levels else ""))
        kb = c[(c["model"] == "main") & (c["term"] == "kb_per_tx")]
        if len(kb):
            parts.append(f"a logged kB {est(kb.iloc[0])}")
        parts.append(f"{int(d['n_influential'])} runs exceed Cook's distance {regression.COOKS_FACTOR}/n")
        out.append(parts[0] + ": " + "; ".join(parts[1:]) + ".")
    return "\n\n".join(out)


def floor_text(floors: pd.DataFrame, coefficients: pd.DataFrame) -> str:
    """The floors, and each family's cost as a multiple of the floor named for it (:data:`FLOOR_FOR`)."""
    lines = []
    for _, f in floors.iterrows():
        lines.append(f"One `write()` of {int(f['nbytes'])} bytes to a {f['target']}: {fmt(f['median_us'])} µs "
                     f"({_CI} {fmt(f['ci_low'])} to {fmt(f['ci_high'])}).")
    if len(coefficients):
        # the floor is one write() of a typical line's size: set against the typical line's cost
        main = coefficients[(coefficients["model"] == "main")
                            & coefficients["term"].astype(str).str.startswith(regression.TYPICAL)]
        for _, r in main.iterrows():
            target = FLOOR_FOR.get((r["engine"], r["family"]))
            fl = floors[floors["target"] == target] if target else floors.iloc[:0]
            if len(fl) and r["ci_low"] > 0:
                lines.append(f"For {r['fit']} a typical line to {regression.FAMILY_LABELS[r['family']]} costs "
                             f"{fmt(r['estimate'] / fl.iloc[0]['median_us'], 2)} times {FLOOR_WORDS[target]}.")
    return " ".join(lines)


def claims_text(summary: pd.DataFrame) -> str:
    counts = summary["verdict"].value_counts()
    parts = [f"{int(counts.get(v, 0))} {v}" for v in claims_mod.VERDICTS]
    return f"Of {len(summary)} claims: " + ", ".join(parts) + "."


def display_table(df: pd.DataFrame, sig: int = 3) -> pd.DataFrame:
    """Floats as fixed significant-digit strings (what the paper prints; stable across BLAS summation order)."""
    out = df.copy()
    for col in out.columns:
        if pd.api.types.is_float_dtype(out[col]):
            vals = out[col].dropna()
            whole = bool(len(vals)) and bool((vals == vals.round()).all()) and bool((vals.abs() < 1e15).all())
            out[col] = [("—" if pd.isna(v) else str(int(v))) if whole else fmt(v, sig) for v in out[col]]
    return out
