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

from . import claims as claims_mod
from . import paths, plots, regression
from . import studies as studies_registry
from .claims import StudyData, fmt, fmt_p
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
    StudyInfo(s.name, s.engine, s.title, s.post_id, s.experiment) for s in studies_registry.specs())

FINDINGS = ("studies", "regression", "regression_fit", "influential", "write_floor", "claims", "claims_detail")

# English glosses of titles the paper's embedded fonts cannot set (post 003 is in Chinese).
TITLE_GLOSS = {"003": "How much does turning on audit logging and statement timing cost PostgreSQL? (in Chinese)"}


# --- step 1: the studies ------------------------------------------------------------------------------------


def _info(name: str) -> StudyInfo:
    for s in KNOWN_STUDIES:
        if s.name == name:
            return s
    return StudyInfo(name, "", name.replace("_", " "), "", "")


def _baseline(name: str, summary: pd.DataFrame | None, runs: pd.DataFrame) -> str:
    if name in {s.name for s in KNOWN_STUDIES}:
        return studies_registry.spec(name).baseline
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


def cell_columns(summary: pd.DataFrame) -> list[str]:
    """Key columns that split a study into cells (everything but configuration and clients)."""
    keys = [c for c in summary_keys(summary) if c not in ("configuration", "clients")]
    return keys + [c for c in VARIANT_COLUMNS if c in summary.columns and c not in keys]


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
    if name in {s.name for s in KNOWN_STUDIES} and studies_registry.spec(name).published is not None:
        try:
            return studies_registry.spec(name).published(runs)
        except (OSError, ValueError, KeyError, TypeError):
            pass
    return published_ratios(_info(name))


def study_figures(studies: dict[str, StudyData]) -> dict[str, object]:
    """One overhead-ratio figure per study and cell (published ratios as open markers)."""
    figs = {}
    for name, s in studies.items():
        if s.summary is None or "ratio" not in s.summary.columns:
            continue
        info = _info(name)
        published = study_published(name, s.runs)
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
    fits = regression.fit_engines(prepared) if len(prepared) else {}
    coefs = regression.coefficients(fits)
    figs = {}
    for engine, f in fits.items():
        pts = regression.residuals(f).assign(cooks_threshold=f.cooks_threshold)
        figs[f"regression_{engine}"] = plots.regression_figure(pts, title=f"{engine}: {f.main.formula}")
    return RegressionFindings(prepared, fits, coefs, regression.diagnostics(fits), regression.influential_runs(fits),
                              figs)


def floor_findings(prepared: pd.DataFrame, *, batches: int = 200, batch: int = 100) -> pd.DataFrame:
    """The write() floor at the typical size of a logged line, to a file and into a pipe (measured now)."""
    nbytes = regression.typical_record_bytes(prepared) if len(prepared) else 200
    rows = [regression.write_floor(nbytes, target=t, batches=batches, batch=batch).as_dict()
            for t in regression.WRITE_TARGETS]
    return pd.DataFrame(rows)


def cost_figures(reg: RegressionFindings, floors: pd.DataFrame | None) -> dict[str, object]:
    """Per engine: the cost of a logged line per concurrency level beside the pooled cost and the write() floor."""
    figs = {}
    c = reg.coefficients
    for engine in reg.fits:
        per = c[(c["engine"] == engine) & (c["model"] == "per_clients") & c["term"].str.startswith("records_per_tx @")]
        if not len(per):
            continue
        per = per.assign(clients=per["term"].str.extract(r"@ (\d+) clients")[0].astype(int))
        pooled = c[(c["engine"] == engine) & (c["model"] == "main") & (c["term"] == "records_per_tx")]
        figs[f"line_cost_{engine}"] = plots.cost_figure(per, pooled=pooled.iloc[0] if len(pooled) else None,
                                                        floors=floors, title=f"{engine}: one logged line")
    return figs


def claim_findings(studies: dict[str, StudyData], regression_table: pd.DataFrame | None,
                   claims_file: Path | str = claims_mod.CLAIMS_FILE) -> tuple[pd.DataFrame, pd.DataFrame]:
    table = claims_mod.with_published(claims_mod.load(claims_file), reference_values())
    return claims_mod.evaluate(table, studies, cores=machine_cores(studies), regression=regression_table)


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
              "influential": reg.influential, "write_floor": floors, "claims": summary, "claims_detail": detail}
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
        self.items[key] = {"text": text, "value": value, "spec": spec}
        return text

    def get(self, key: str) -> str:
        return self.items[key]["text"]


# Constants of the method that the paper states (the test compares them with the code).
CONSTANTS = {
    "claims.MAX_CLIENTS_PER_CORE": claims_mod.MAX_CLIENTS_PER_CORE,
    "regression.BP_ALPHA": regression.BP_ALPHA,
    "regression.COOKS_FACTOR": regression.COOKS_FACTOR,
    "regression.BYTES_PER_KB": regression.BYTES_PER_KB,
    "stats.CONFIDENCE_PERCENT": round(100 * CONFIDENCE),
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
    """A study's summary as display strings: its key columns, n, then mean [CI] per quantity."""
    out = pd.DataFrame({k: summary[k].astype(str) for k in summary_keys(summary)})
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


def generate(processed_dir: Path | str = paths.PROCESSED, figures_dir: Path | str = paths.FIGURES,
             build_dir: Path | str = paths.PAPER) -> dict:
    """Write ``<build_dir>/generated/`` (numbers.json and the tables) from the processed data; returns numbers.json."""
    processed_dir, figures_dir, build_dir = Path(processed_dir), Path(figures_dir), Path(build_dir)
    gen = build_dir / GENERATED
    if gen.exists():
        shutil.rmtree(gen)
    gen.mkdir(parents=True)
    nums = Numbers(processed_dir)
    doc: dict = {"studies": [], "missing_studies": [], "engines": [], "floors": [], "figures": [], "tables": []}

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
    for key, name in (("confidence", "stats.CONFIDENCE_PERCENT"), ("max_clients_per_core", "claims.MAX_CLIENTS_PER_CORE"),
                      ("bp_alpha", "regression.BP_ALPHA"), ("cooks_factor", "regression.COOKS_FACTOR"),
                      ("bytes_per_kb", "regression.BYTES_PER_KB")):
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
                              ("query_mode", "first", "query_mode"), ("workload", "first", "workload"),
                              ("backend", "first", "backend")):
            if col in s.runs.columns:
                spec = {"kind": "agg", "source": src, "where": measured, "column": col, "agg": agg}
                if col in ("duration_s", "scale"):
                    spec["int"] = True
                if nums.add(f"{name}.{key}", spec, optional=True) is not None:
                    entry[f"has_{key}"] = True
        if s.summary is not None:
            entry["table"] = table(study_table(s.summary), f"study_{name}")
            summ = s.summary[s.summary["configuration"].astype(str) != s.baseline]
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
                        entry["cheapest"].append({"key": base, "label": label})
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
    if reg_file.exists() and fit_file.exists():
        coefs, diag = pd.read_csv(reg_file), pd.read_csv(fit_file)
        for engine in sorted(diag["engine"].unique()):
            e = {"engine": engine, "figure_fit": figure(f"regression_{engine}"),
                 "figure_cost": figure(f"line_cost_{engine}")}
            c = coefs[coefs["engine"] == engine]
            shown = c[~c["term"].str.startswith("baseline ")].assign(
                estimate=lambda d: [_ci_text(a, b, h) for a, b, h in zip(d["estimate"], d["ci_low"], d["ci_high"])],
                p=lambda d: [fmt_p(v) for v in d["p"]])[["model", "term", "unit", "estimate", "p"]]
            shown = shown.rename(columns={"estimate": f"estimate [{_CI}]"})
            e["table"] = table(shown, f"regression_{engine}")
            for model, term, key in (("main", "records_per_tx", "line"), ("main", "kb_per_tx", "kb"),
                                     ("interaction", "records_per_tx:extra_clients", "interaction"),
                                     (regression.WITHOUT_INFLUENTIAL, "records_per_tx", "line_robust")):
                hit = c[(c["model"] == model) & (c["term"] == term)]
                e[f"has_{key}"] = bool(len(hit))
                if len(hit):
                    where = {"engine": engine, "model": model, "term": term}
                    for col in ("estimate", "ci_low", "ci_high"):
                        nums.add(f"{engine}.{key}.{col}", {"kind": "cell", "source": reg_file.name, "where": where,
                                                           "column": col, "sig": 3})
                    if key == "interaction":  # the only p-value the text prints
                        nums.add(f"{engine}.{key}.p", {"kind": "cell", "source": reg_file.name, "where": where,
                                                       "column": "p", "p_value": True})
            where = {"engine": engine, "model": "main"}
            for col, sig in (("n", None), ("r2", 2), ("cov_type", None), ("bp_pvalue", 2), ("n_influential", None)):
                spec = {"kind": "cell", "source": fit_file.name, "where": where, "column": col}
                if sig:
                    spec["sig"] = sig
                else:
                    spec["int"] = col != "cov_type"
                nums.add(f"{engine}.fit.{col}", spec)
            nums.add(f"{engine}.formula", {"kind": "cell", "source": fit_file.name, "where": where, "column": "formula"})
            doc["engines"].append(e)

    floor_file = processed_dir / "findings_write_floor.csv"
    if floor_file.exists():
        fl = pd.read_csv(floor_file)
        for t in fl["target"]:
            where = {"target": t}
            for col in ("median_us", "ci_low", "ci_high"):
                nums.add(f"floor.{t}.{col}", {"kind": "cell", "source": floor_file.name, "where": where, "column": col,
                                              "sig": 3})
            for col in ("nbytes", "batches", "batch") if t == "file" else ():
                nums.add(f"floor.{t}.{col}", {"kind": "cell", "source": floor_file.name, "where": where, "column": col,
                                              "int": True})
            doc["floors"].append(str(t))
        reg = pd.read_csv(reg_file) if reg_file.exists() else pd.DataFrame()
        for e in doc["engines"]:
            line = reg[(reg.get("engine") == e["engine"]) & (reg.get("model") == "main")
                       & (reg.get("term") == "records_per_tx")] if len(reg) else reg
            # A multiple of the floor means something only for a cost distinguishable from zero.
            if e["has_line"] and "file" in doc["floors"] and len(line) and float(line["ci_low"].iloc[0]) > 0:
                nums.add(f"{e['engine']}.line_over_floor", {
                    "kind": "div", "sig": 2,
                    "a": {"kind": "cell", "source": reg_file.name, "column": "estimate",
                          "where": {"engine": e["engine"], "model": "main", "term": "records_per_tx"}},
                    "b": {"kind": "cell", "source": floor_file.name, "column": "median_us", "where": {"target": "file"}}})

    claims_file = processed_dir / "findings_claims.csv"
    doc["verdicts"] = []
    if claims_file.exists():
        cl = pd.read_csv(claims_file, dtype=str, keep_default_na=False)
        shown = cl[["claim_id", "post", "claim", "published", "claimed", "ours", "verdict", "why"]]
        doc["claims_table"] = table(shown, "claims")
        nums.add("claims.count", {"kind": "agg", "source": claims_file.name, "agg": "count"})
        for v in claims_mod.VERDICTS:
            nums.add(f"claims.{v}", {"kind": "agg", "source": claims_file.name, "where": {"verdict": v}, "agg": "count"})
            doc["verdicts"].append(v)

    doc["numbers"] = nums.items
    (gen / "numbers.json").write_text(json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False, default=str, allow_nan=False) + "\n")
    return doc


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
    """One Markdown paragraph per engine: the cost of a line and of a kB, the interaction, the fit."""
    if not len(coefficients):
        return "No regression: no engine has both a baseline and a logging configuration in the processed data."
    out = []
    for engine in sorted(coefficients["engine"].unique()):
        c = coefficients[coefficients["engine"] == engine]
        d = diagnostics[(diagnostics["engine"] == engine) & (diagnostics["model"] == "main")].iloc[0]

        def est(model: str, term: str) -> str | None:
            r = c[(c["model"] == model) & (c["term"] == term)]
            if not len(r):
                return None
            r = r.iloc[0]
            return f"{fmt(r['estimate'])} µs ({_CI} {fmt(r['ci_low'])} to {fmt(r['ci_high'])})"

        parts = [f"**{engine}** ({int(d['n'])} runs, R² = {fmt(d['r2'], 2)}, {d['cov_type']} standard errors): "
                 f"one logged line costs {est('main', 'records_per_tx')} per transaction"]
        if est("main", "kb_per_tx"):
            parts.append(f", one logged kB {est('main', 'kb_per_tx')}")
        inter = c[(c["model"] == "interaction") & (c["term"] == "records_per_tx:extra_clients")]
        if len(inter):
            r = inter.iloc[0]
            trend = ("grows" if r["ci_low"] > 0 else "shrinks" if r["ci_high"] < 0 else
                     "shows no significant trend")
            parts.append(f". Per extra client the cost of a line {trend}: {est('interaction', 'records_per_tx:extra_clients')}"
                         f" per line (p {_p_eq(r['p'])})")
        n_infl = d["n_influential"]
        parts.append(f". {int(n_infl)} runs exceed Cook's distance {regression.COOKS_FACTOR}/n")
        robust = est(regression.WITHOUT_INFLUENTIAL, "records_per_tx")
        if robust:
            parts.append(f"; without them a line costs {robust}")
        out.append("".join(parts) + ".")
    return "\n\n".join(out)


def _p_eq(p: float) -> str:
    t = fmt_p(p)
    return t if t.startswith("<") else f"= {t}"


def floor_text(floors: pd.DataFrame, coefficients: pd.DataFrame) -> str:
    lines = []
    for _, f in floors.iterrows():
        lines.append(f"One `write()` of {int(f['nbytes'])} bytes to a {f['target']}: {fmt(f['median_us'])} µs "
                     f"({_CI} {fmt(f['ci_low'])} to {fmt(f['ci_high'])}).")
    file_floor = floors[floors["target"] == "file"]
    for engine in sorted(coefficients["engine"].unique()) if len(coefficients) else ():
        r = coefficients[(coefficients["engine"] == engine) & (coefficients["model"] == "main")
                         & (coefficients["term"] == "records_per_tx")]
        if len(r) and len(file_floor):
            lines.append(f"For {engine} a logged line costs {fmt(r.iloc[0]['estimate'] / file_floor.iloc[0]['median_us'], 2)}"
                         " times one such write to a file.")
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
