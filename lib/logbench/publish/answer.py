"""The answer of a study run, for the terminal: ``python -m logbench.publish.answer <executed notebook | output_dir>``.

What ``bash run.sh study`` prints last (issue 17): the study's summary (each configuration × clients
cell's throughput ratio to the baseline with its 95 % interval and n, the records lost, and the
committed reference machine's ratio beside it), the A/A resolution, and where the files are (executed
notebook, its HTML report, raw runs, processed tables). It reads only the files the run wrote — the
processed tables under ``<output_dir>/processed`` (or ``processed_dir``, or data/processed for a
``publish=True`` run) — so it works for every study. ``--html`` first exports the executed notebook
to an HTML report next to it (nbconvert): this answer first, then the notebook's narrative, tables and
figures (embedded), its code and stderr left out.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from ..base import paths, stats
from ..measure.design import VARIANT_SEP
from ..base.errors import LogbenchError
from ..base.settings import aa_name
from ..studies import common, specs, user_server_specs


@dataclass(frozen=True)
class Located:
    """Where one run's files are."""

    name: str  # the study (registry name)
    stem: str  # its processed files' stem
    output_dir: Path | None
    processed_dir: Path | None
    notebook: Path | None
    html: Path | None
    profile: str | None
    publish: bool


WIDGET = "application/vnd.jupyter.widget-view+json"


def report_notebook(nb, answer_text: str | None = None):
    """The executed notebook ``nb`` as a reader's report (a copy; ``nb`` is left as it is): the answer
    first (``answer_text``, what ``python -m logbench.publish.answer`` prints, as a preformatted block), then the
    notebook's narrative, tables and figures, without stderr streams (warnings, a progress bar an older
    run printed) or widget outputs (a static page cannot show them). The code itself is left out by
    the exporter (:func:`export_html`)."""
    import copy

    import nbformat

    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.get("outputs", [])
                            if not (o.get("output_type") == "stream" and o.get("name") == "stderr")
                            and WIDGET not in o.get("data", {})]
    # a code cell with nothing left to show (the parameters, the imports) would be an empty gap
    nb.cells = [c for c in nb.cells if c.cell_type != "code" or c.outputs]
    nb.metadata.pop("widgets", None)
    if answer_text:
        fence = "~~~~"
        while fence in answer_text:
            fence += "~"
        nb.cells.insert(0, nbformat.v4.new_markdown_cell(
            "## The answer\n\nWhat `python -m logbench.publish.answer` prints for this run: each cell's throughput "
            "ratio to the baseline with its 95 % interval, the A/A resolution, the machine, the files. "
            "The notebook follows: how the study ran, its tables and figures.\n\n"
            f"{fence}text\n{answer_text}\n{fence}\n"))
    return nb


def export_html(notebook: Path) -> Path:
    """The executed notebook as a standalone HTML report next to it: the answer first (:func:`answer`,
    when the notebook is a study's), then the notebook's text, tables and figures (embedded PNGs); the
    code cells' input and stderr left out (:func:`report_notebook`)."""
    import nbconvert
    import nbformat

    notebook = Path(notebook)
    out = notebook.with_suffix(".html")
    try:
        text = answer(notebook, html=out)
    except LookupError:  # not a study's notebook (the reference data, the findings): no answer to put first
        text = None
    except Exception as e:  # noqa: BLE001 - the report still stands without it, saying why
        text = f"(no answer for this run: {type(e).__name__}: {e})"
    nb = report_notebook(nbformat.read(notebook, as_version=4), text)
    exporter = nbconvert.HTMLExporter(exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True)
    body, _ = exporter.from_notebook_node(nb)
    out.write_text(body, encoding="utf-8")
    return out


def _spec_of_notebook(input_path: str):
    base = Path(input_path).name
    for s in (*specs(), *user_server_specs()):
        if s.notebook == base:
            return s
    return None


def _stem_in(processed: Path, name: str, profile: str | None) -> str:
    """The summary's stem: a named profile's own (``<name>_<profile>``) when written, else the study's."""
    if profile and profile not in ("smoke", "standard", "full") and (processed / f"{name}_{profile}.csv").exists():
        return f"{name}_{profile}"
    return name


def _newest_output(name: str) -> Path | None:
    runs = sorted((paths.RESULTS / name).glob("*/"), key=lambda p: p.stat().st_mtime)
    return runs[-1] if runs else None


def locate(target: Path) -> Located:
    """The run behind ``target``: an executed notebook (its papermill parameters say the study and where it
    wrote) or a study's output directory (its ``study.json``; ``processed/`` below it)."""
    target = Path(target)
    if target.suffix == ".ipynb":
        import nbformat

        nb = nbformat.read(target, as_version=4)
        pm = nb.metadata.get("papermill", {})
        spec = _spec_of_notebook(pm.get("input_path", "") or target.name.replace(".out", ""))
        if spec is None:
            raise LookupError(f"{target}: not an executed study notebook (its input {pm.get('input_path')!r} "
                              f"is none of {', '.join(s.notebook for s in specs())})")
        p = dict(pm.get("parameters", {}))
        profile = str(p.get("profile", "standard"))
        publish = str(p.get("publish", False)).lower() == "true"
        out = Path(p["output_dir"]) if p.get("output_dir") else (
            None if profile == "smoke" else _newest_output(spec.name))
        if out is not None and not out.is_absolute() and not out.exists():
            out = paths.ROOT / out
        processed = (Path(p["processed_dir"]) if p.get("processed_dir") else paths.PROCESSED if publish
                     else out / "processed" if out is not None else None)
        html = target.with_suffix(".html")
        stem = _stem_in(processed, spec.name, profile) if processed is not None else spec.name
        return Located(spec.name, stem, out, processed, target, html if html.exists() else None, profile, publish)
    study_json = next(iter(sorted(target.glob("study.json")) + sorted(target.glob("*/study.json"))), None)
    if study_json is None:
        raise LookupError(f"{target}: neither an executed notebook nor a study's output directory (no study.json)")
    described = json.loads(study_json.read_text())
    known = {s.name for s in (*specs(), *user_server_specs())}
    name = described["name"]
    while name not in known and "_" in name:  # a part's name (instrument_series) -> its study's
        name = name.rsplit("_", 1)[0]
    profile = described.get("profile")
    publish = bool(described.get("publish", False))
    processed = (Path(described["processed_dir"]) if described.get("processed_dir") and study_json.parent == target
                 else paths.PROCESSED if publish else target / "processed")
    return Located(name, _stem_in(processed, name, profile), target, processed, None, None, profile, publish)


def summary_table(summary: pd.DataFrame, baseline: str, reference: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per cell (the summary's keys before ``n``) but the baseline's: ratio [95 % CI], n, records lost
    (where the study counts them), and the reference run's ratio [95 % CI] (n) when given."""
    from ..base.formatting import ci_text

    cols = list(summary.columns)
    keys = cols[:cols.index("n")]
    rows = summary[summary["configuration"] != baseline] if "configuration" in summary else summary
    out = rows[keys].copy()
    out["ratio [95 % CI]"] = [ci_text(r.ratio, r.ratio_ci_low, r.ratio_ci_high) for r in rows.itertuples()]
    out["n"] = rows["n"].astype(int)
    if "log_loss_mean" in rows:
        out["lost"] = [("–" if pd.isna(v) else f"{100 * v:.3g} %") for v in rows["log_loss_mean"]]
    if reference is not None:
        ref_keys = [k for k in keys if k in reference.columns]
        ref = common.value_cells(reference, ref_keys)
        out["reference ratio [95 % CI] (n)"] = [
            ref.get(k, "–") for k in (tuple(r) if len(ref_keys) > 1 else r[0]
                                       for r in rows[ref_keys].itertuples(index=False))]
    return out.reset_index(drop=True)


def resolution_lines(summary: pd.DataFrame, baseline: str) -> list[str]:
    from ..base.formatting import ci_text

    res = stats.resolution(summary, baseline)
    if res.empty:
        return ["no A/A control ran: this run has no measure of its own resolution"]
    keys = list(res.columns[: list(res.columns).index("aa_ratio")])

    def verdict(r) -> str:
        if pd.isna(r.ci_low) or pd.isna(r.ci_high):
            return "no interval (too few runs): no resolution measured"
        return (f"±{100 * r.relative_half_width:.1f} % — "
                + ("contains 1" if r.contains_1 else "EXCLUDES 1: ratios here carry a bias of that size"))

    return [", ".join(f"{k} {getattr(r, k)}" for k in keys)
            + f": A/A ratio {ci_text(r.aa_ratio, r.ci_low, r.ci_high, n=r.n)}, {verdict(r)}" for r in res.itertuples()]


def _rel(p: Path | None) -> str:
    if p is None:
        return "–"
    try:
        return str(Path(p).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)


def pilot_lines(pilot: pd.DataFrame, summary: pd.DataFrame, baseline: str) -> list[str]:
    """A switchback run's pilot: the half-width its per-second noise allowed, beside what the A/A reached."""
    aa = summary[summary["configuration"] == aa_name(baseline)].set_index("clients")["ratio_halfwidth"]
    return [f"{int(r.clients)} client(s): the pilot's per-second noise allowed ± {100 * r.halfwidth:.1f} %; "
            f"the A/A reached ± {100 * aa.get(r.clients, float('nan')):.1f} %" for r in pilot.itertuples()]


def prediction_lines(name: str, processed: Path, stem: str) -> list[str]:
    """A run on a user's own server: the cost model's prediction at the rate and cores of each measured cell
    (:mod:`logbench.analyze.overhead`, what ``python -m logbench cost`` prints), beside the measured ratio."""
    from ..studies import module, on_user_server

    # the studies on a user's server declare how their arms are priced (their predictions); the suite's own
    # studies are predicted by the cost model's findings instead
    predictions = getattr(module(name), "predictions", None)
    if predictions is None:
        return []
    try:
        table, cores = predictions(processed, stem)
    except LogbenchError as e:  # the committed tables it prices by are missing: said, the answer stands
        return ["", f"No prediction beside it: {e}"]
    if table.empty:
        return []
    shown = on_user_server.prediction_table(table)
    return ["", "The cost model beside it (python -m logbench cost at each cell's rate: the baseline's statements/s, "
            "the arm's records per statement counted in this run, the committed counted cost per record; "
            f"{cores}). The prediction holds where the cores are saturated; below that the ratio depends on "
            "how long each client waits:", shown.to_string(index=False)]


def per_record_lines(name: str, processed: Path, stem: str) -> list[str]:
    """A study 11 or 02 run: what one record cost on the machine it ran on (:mod:`logbench.analyze.overhead`, what
    ``python -m logbench cost --run`` reads), per destination."""
    from ..analyze import daemons, overhead
    from ..base.formatting import ci_text

    try:
        if name == "record_cost":
            dests = overhead.counted_destinations(pd.read_csv(processed / "record_cost.csv"))
            recs = [overhead.counted(processed, e, d, carried=False) for e, ds in dests.items() for d in ds]
        elif (processed / f"{stem}_per_record.csv").exists():
            dests = overhead.timed_destinations(processed, stem)
            recs = [overhead.timed(processed, "postgresql", d, stem) for d in dests["postgresql"]]
        else:
            return []
    except (LogbenchError, FileNotFoundError, KeyError) as e:
        return ["", f"No per-record cost for this run: {e}"]
    if not recs:
        return []
    lines = ["", f"What one record cost on this machine ({recs[0].source}; {recs[0].machine}), and the records/s "
             "one core of its daemon holds:"]
    for r in recs:
        d = r.daemon_us
        ceiling = (f"; {r.daemon}: {daemons.ceiling_text(*daemons.one_core(d.value, d.low, d.high))} records/s on "
                   "one core" if d is not None and d.value > 0 else "")
        lines.append(f"  {r.engine} {r.destination}: {ci_text(r.us.value, r.us.low, r.us.high)} µs per record, "
                     f"{r.records_per_statement.value:.3g} records per statement{ceiling}")
    if overhead.source_of(processed)[0] == recs[0].source:  # where --run would read these, not study 11's
        lines.append(f"  (python -m logbench cost --statements-per-second N --cores C --destination D --run "
                     f"{_rel(processed)} predicts from these)")
    return lines


def answer(target: Path, *, html: Path | None = None) -> str:
    """The text ``python -m logbench.publish.answer`` prints for ``target`` (``html``: its report's path, when
    it is being written)."""
    loc = locate(target)
    if html is not None:
        loc = replace(loc, html=Path(html))
    spec = next(s for s in (*specs(), *user_server_specs()) if s.name == loc.name)
    baseline = spec.baseline.rpartition(VARIANT_SEP)[2]
    lines = [f"== {spec.title} ({loc.name}, {loc.profile or '?'} profile"
             + (", published to data/processed" if loc.publish else "") + ")"]
    summary_csv = loc.processed_dir / f"{loc.stem}.csv" if loc.processed_dir is not None else None
    if summary_csv is None:
        lines.append("no processed tables found: a smoke run without output_dir writes into a temporary directory "
                     "(its notebook prints where); pass -p output_dir DIR to keep them")
    elif not summary_csv.exists():
        lines.append(f"no processed tables at {_rel(summary_csv)}: the run did not finish, or wrote none")
    else:
        summary = pd.read_csv(summary_csv)
        ref_csv = paths.PROCESSED / f"{loc.stem}.csv"
        reference = pd.read_csv(ref_csv) if ref_csv.exists() and not loc.publish else None
        if "ratio" in summary:
            lines += ["", f"Throughput ratio to `{baseline}` (95 % CI), n runs per cell, records lost"
                      + (" — and the committed reference machine's ratio" if reference is not None else "") + ":",
                      summary_table(summary, baseline, reference).to_string(index=False)]
        lines += ["", "Resolution (the A/A control: the baseline against itself; its true ratio is 1):"]
        lines += ["  " + s for s in resolution_lines(summary, baseline)]
        pilot_csv = loc.processed_dir / f"{loc.stem}_pilot.csv"
        if pilot_csv.exists():
            lines += ["  " + s for s in pilot_lines(pd.read_csv(pilot_csv), summary, baseline)]
        lines += prediction_lines(loc.name, loc.processed_dir, loc.stem)
        lines += per_record_lines(loc.name, loc.processed_dir, loc.stem)
        env_json = loc.processed_dir / f"{loc.stem}_environment.json"
        if env_json.exists():
            env = json.loads(env_json.read_text())
            lines += ["", "Ran on: " + "; ".join(
                f"{label + ': ' if label else ''}{e.get('cpu_model')} × {e.get('cpu_count')}, kernel {e.get('kernel')}, "
                f"{e.get('server_version')} ({e.get('backend')})" for label, e in common._environments(env).items())]
    raw = None
    if loc.output_dir is not None:
        found = sorted(Path(loc.output_dir).glob("**/runs.jsonl"))
        raw = found if found else None
    lines += ["", "Files:",
              f"  executed notebook  {_rel(loc.notebook)}",
              f"  report (HTML)      {_rel(loc.html)}" + ("   <- open in a browser" if loc.html else ""),
              "  raw runs           " + (", ".join(_rel(p) for p in raw) if raw else _rel(loc.output_dir)),
              f"  processed tables   {_rel(loc.processed_dir)}/{loc.stem}*.csv" if loc.processed_dir else
              "  processed tables   – (none written)"]
    if not loc.publish and loc.processed_dir is not None:
        lines.append("  (your results stay there; data/processed holds the committed reference run, "
                     "written only with -p publish True)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m logbench.publish.answer", description=__doc__.split("\n\n")[0])
    ap.add_argument("target", type=Path, help="an executed study notebook (papermill's output) or a study's output_dir")
    ap.add_argument("--html", action="store_true", help="first export the executed notebook to HTML next to it")
    args = ap.parse_args(argv)
    if args.html and args.target.suffix == ".ipynb":
        try:
            export_html(args.target)
        except Exception as e:  # noqa: BLE001 - the answer still stands without its HTML copy
            print(f"logbench.publish.answer: no HTML report ({type(e).__name__}: {e})", file=sys.stderr)
    try:
        print(answer(args.target))
    except LookupError as e:
        if args.target.suffix != ".ipynb" or not args.target.exists():
            print(f"logbench.publish.answer: {e}", file=sys.stderr)
            return 2
        # a notebook that is not a study's (the reference data, the findings): where it is, no table
        html = args.target.with_suffix(".html")
        print(f"== {args.target.name}: not a study notebook, no summary table\n\nFiles:\n"
              f"  executed notebook  {_rel(args.target)}\n  report (HTML)      {_rel(html) if html.exists() else '–'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
