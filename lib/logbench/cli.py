"""``python -m logbench run STUDY [-p NAME VALUE ...] [--output-dir DIR]``: measure one study, without its notebook.

It calls what the study's notebook calls, ``define(**given)`` then ``run(study)``: the same checks (a bad parameter
is a ParameterError before anything starts), the same run, the same run directory (raw records, environment,
processed tables). The notebook then only narrates, so its prose is no input of a measurement (the workflow hashes
a notebook's code cells alone: :func:`logbench.jobs.source_hash`).

    python -m logbench --help                     # the studies
    python -m logbench run pg_wal_level --help    # its parameters: type, default, help (from its declaration)
    python -m logbench run pg_wal_level -p profile smoke --output-dir /tmp/wal

A value is read as YAML (``-p clients "[1, 8]"``, ``-p publish true``); ``None`` is None, as papermill's ``-p``
reads it. Where the declared type says so, a single value is a one-element list (``-p clients 4``) and numbers
are strings (``-p versions "[13, 15]"``). Exit status 2: an unknown study or a bad parameter, nothing started.

    python -m logbench workload-from-log LOG [--top N] [--out DIR]   # pgbench scripts from a captured log

derives a user's workload for study 12 from a statement log :mod:`logbench.servers.capture_pg` captured
(:mod:`logbench.workloads.from_log`).

    python -m logbench cost --statements-per-second N --cores C --destination D [--engine E]
                            [--records-per-statement R] [--run DIR]

predicts what logging costs at that rate from the committed tables or a run's (:mod:`logbench.analyze.overhead`).

    python -m logbench plan [PROCESSED_DIR] [--help]

prints the schedule planner's per-level noise, its picks at the standard and the resolution budget, and its
check against each committed table (:mod:`logbench.analyze.planning`; ~1 min).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import yaml

from .analyze import overhead
from .base import progress
from . import studies
from .servers.capturing import Refused
from .base.errors import ParameterError
from .studies.declaration import Parameter, conforms, default_of, type_text
from .workloads import from_log

PROG = "python -m logbench"


def _specs() -> tuple:
    # the registry's, then those run on a user's own server (outside the registry: no committed run)
    return (*studies.specs(), *studies.user_server_specs())


def study_names() -> list[str]:
    return [s.name for s in _specs()]


def studies_text() -> str:
    """One line per study: name, notebook, title (the registry's order, then the studies on a user's server)."""
    width = max(map(len, study_names()))
    return "\n".join(f"  {s.name:<{width}}  {s.notebook:<28} {s.title}" for s in _specs())


def parameters(name: str) -> dict[str, Parameter]:
    """What ``run`` takes for study ``name``: what its notebook offers and define() takes (a notebook-only
    parameter is the notebook's narrative's, no input of the measurement)."""
    decl = studies.module(name).define.declaration
    return {n: p for n, p in decl.offered().items() if n not in decl.notebook_only}


def study_help(name: str) -> str:
    """``run STUDY --help``: every parameter with its type, default and help, from the study's declaration (which
    the notebook's parameters cell is generated from: papermill --help-notebook shows the same text)."""
    spec = studies.spec(name)
    lines = [f"usage: {PROG} run {name} [-p NAME VALUE ...] [--output-dir DIR]", "",
             f"{spec.title} (notebook {spec.notebook}). Parameters (None: the profile's value):", ""]
    for n, p in parameters(name).items():
        lines.append(f"  {n} ({type_text(p.type)}, default {default_of(p, spec)!r})")
        if p.help:
            lines.append(f"      {p.help}")
    lines += ["", "--output-dir DIR is -p output_dir DIR: the run's raw records; its processed tables go to "
              "DIR/processed unless processed_dir says otherwise."]
    return "\n".join(lines)


def value_of(name: str, text: str, tp: object) -> object:
    """``text`` as a value of type ``tp`` (see the module's docstring); ParameterError naming the type otherwise."""
    if text == "None":
        return None
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        value = text
    candidates = [value, text]
    if isinstance(value, list):
        candidates.append([str(v) for v in value])
    else:
        candidates += [[value], [text]]
    for c in candidates:
        if conforms(c, tp):
            return c
    raise ParameterError(name, text, f"a value of type {type_text(tp)}")


def given(name: str, pairs: Sequence[Sequence[str]], output_dir: str | None) -> dict[str, object]:
    """The keyword arguments of study ``name``'s define() from ``-p`` pairs and ``--output-dir``."""
    offered = parameters(name)
    out: dict[str, object] = {}
    for key, text in pairs:
        if key not in offered:
            raise ParameterError(key, text, f"a parameter of study {name!r}: " + ", ".join(offered))
        out[key] = value_of(key, text, offered[key].type)
    if output_dir is not None:
        if out.get("output_dir") not in (None, output_dir):
            raise ParameterError("output_dir", out["output_dir"], f"{output_dir!r}, as --output-dir says, or "
                                 "either one alone")
        out["output_dir"] = output_dir
    return out


def run_directory(study: object) -> Path | None:
    """Where ``study``'s raw records go: its output_dir, or, for a study of several schedules each keeping its
    records in a directory of its own (00's series and anomaly parts), the directory they share."""
    if getattr(study, "output_dir", None):
        return Path(study.output_dir)
    parts = [Path(v.output_dir) for v in vars(study).values() if getattr(v, "output_dir", None)]
    return Path(os.path.commonpath(parts)) if parts else None


def _listing(directory: object) -> str:
    d = Path(directory) if directory else None
    if d is None:
        return "– (none written)"
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in d.iterdir()) if d.is_dir() else []
    return f"{d}" + (f"  ({', '.join(names)})" if names else "")


def run(name: str, pairs: Sequence[Sequence[str]] = (), output_dir: str | None = None) -> object:
    """Check, measure, write: study ``name``'s define() with the given parameters, then its run(); prints where
    the run directory is. Returns what run() returns (what the notebook's cell gets)."""
    try:
        module = studies.module(name)
    except KeyError:
        raise ParameterError("study", name, ", ".join(study_names())) from None
    study = module.define(**given(name, pairs, output_dir))
    t0 = time.monotonic()
    result = module.run(study)
    recorded = getattr(study, "recorded", None)
    # a render measured nothing: its records are the finished run's, as run_study loaded them
    raw = getattr(result, "study", study) if recorded is not None else study
    print(f"{name} ({study.profile} profile) {'rendered from ' + recorded if recorded else 'measured'} in "
          f"{progress.duration(time.monotonic() - t0)}\n"
          f"  raw records       {_listing(run_directory(raw))}\n"
          f"  processed tables  {_listing(study.processed_dir)}")
    return result


def _main_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog=PROG, description="Measure one study and write its run directory (raw records, environment, "
        "processed tables); its notebook narrates the same run.", formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="studies:\n" + studies_text() + f"\n\nparameters of one: {PROG} run STUDY --help")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    r = sub.add_parser("run", help="measure one study", add_help=False)
    r.add_argument("study", nargs="?")
    r.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"))
    r.add_argument("--output-dir")
    # a study that puts load on a user's server asks for it (its parameter confirm)
    r.add_argument("--yes", action="store_true")
    r.add_argument("-h", "--help", action="store_true")
    # its own options and help: main() hands it its arguments before this parser sees them
    sub.add_parser("workload-from-log", help="pgbench scripts of the top statements of a captured statement log "
                   f"(`{PROG} workload-from-log --help`)", add_help=False)
    sub.add_parser("cost", help="the overhead logging adds at a statement rate, from the committed tables or a "
                   f"run's (`{PROG} cost --help`)", add_help=False)
    sub.add_parser("plan", help="the schedule planner's noise per level, its picks and its check, from the committed "
                   "runs (or PROCESSED_DIR's)", add_help=False)
    return ap


def plan_main(argv: Sequence[str]) -> int:
    """``plan [PROCESSED_DIR]``: :func:`logbench.analyze.planning.print_plans` for each planned study whose runs
    tables the directory holds, with its seed; exit 2 naming PROCESSED_DIR where it holds none of them."""
    from .analyze import planning
    from .base import paths

    ap = argparse.ArgumentParser(
        prog=f"{PROG} plan", description="The schedule planner (logbench.analyze.planning): per clients level of "
        "each planned study's runs the noise (sigma, drift share), the cheapest schedule that reaches issue 40's "
        "goals at the standard (15 min) and the resolution (60 min) budget, and the predictor checked on the same "
        "tables. Bad input: exit 2, the argument and what it allows named.")
    ap.add_argument("processed_dir", nargs="?", type=Path, default=paths.PROCESSED, metavar="PROCESSED_DIR",
                    help="a directory of processed tables holding <stem>_runs.csv of a planned study "
                    f"({', '.join(planning.runs_tables())}) (default: data/processed, the committed runs)")
    args = ap.parse_args(argv)
    try:
        present = planning.planned_in(args.processed_dir)
    except ParameterError as e:
        print(f"{PROG} plan: {e}", file=sys.stderr)
        return 2
    planning.print_plans(args.processed_dir, {name: int(studies.spec(name).seed) for name in present})
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["workload-from-log"]:
        return from_log.main(argv[1:])
    if argv[:1] == ["cost"]:
        return overhead.cost_main(argv[1:])
    if argv[:1] == ["plan"]:
        return plan_main(argv[1:])
    args = _main_parser().parse_args(argv)
    if args.help or args.study is None:
        if args.study is None:
            print(f"usage: {PROG} run STUDY [-p NAME VALUE ...] [--output-dir DIR]\n\nstudies:\n" + studies_text())
            return 0 if args.help else 2
        if args.study not in study_names():
            print(f"{PROG} run: {ParameterError('study', args.study, ', '.join(study_names()))}", file=sys.stderr)
            return 2
        print(study_help(args.study))
        return 0
    # Inside papermill the progress lines go to a file run.sh tails; here the terminal is the place.
    os.environ.setdefault(progress.ENV, "/dev/stderr")
    try:
        run(args.study, [*args.parameter, *([("confirm", "True")] if args.yes else [])], args.output_dir)
    except ParameterError as e:
        print(f"{PROG} run: {e}", file=sys.stderr)
        return 2
    except Refused as e:  # a user's server it must not touch: nothing was changed
        print(f"{PROG} run: refusing, nothing was changed:\n" + "\n".join(f"  - {r}" for r in e.reasons),
              file=sys.stderr)
        return 2
    return 0
