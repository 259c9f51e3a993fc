"""The workflow's study runs, from the registry: what the ``Snakefile`` runs, with which papermill parameters.

A *run* is one execution of one study notebook: its main run, or one of its ``extra_committed`` runs
(a named profile of its own, e.g. study 02's ``post004``). Its ``stem`` (``common.stem``) names its
processed files and is the workflow's ``{stem}`` wildcard, so every run of the suite has one name.

- :func:`committed_runs` — the committed results (``snakemake committed``): each study's
  ``SPEC.committed`` and ``SPEC.extra_committed`` exactly as the registry gives them (``publish`` included
  where the registry has it); then those of the studies on a user's server (``studies.ON_USER_SERVERS``) that
  declare one, each handed a throwaway server of its engine (``StudyRun.handed``: the workflow runs its
  papermill under ``python -m logbench.servers.handed``);
- :func:`profile_runs` — a user's run of a profile (``snakemake --config profile=...``), writing only under
  ``results/``: ``smoke`` is each study's first ``SPEC.smoke`` parameter set (the cheapest faithful run, as
  nbval runs it); ``standard`` the committed parameters; ``full`` the committed parameters with
  ``profile: full``. ``publish`` is never passed: a user's run does not replace the committed data.
  The named extra runs belong to ``standard`` (they are committed-size runs of their own profile). A study on a
  user's server has no profile run: the user's server is the user's to name;
- :func:`source_hash` — what of a notebook is its code (its code cells' sources and tags, not their outputs,
  not the markdown), so executing a committed notebook in place or editing its prose does not make its study out
  of date, and editing a code cell does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .base import environment, paths
from . import studies
from .base.errors import ParameterError
from .studies import common

PROFILES = ("smoke", "standard", "full")


@dataclass(frozen=True)
class StudyRun:
    study: str  # registry name
    stem: str  # common.stem(study, profile): its processed files' stem and the workflow's {stem}
    notebook: str  # file name in notebooks/
    parameters: Mapping[str, object] = field(default_factory=dict)  # papermill parameters
    extra: bool = False  # an extra committed run (a named profile of the study's own)
    # the engine of the throwaway server the run is handed (logbench.servers.handed), for a study on a user's
    # server; "" for a study that starts its own
    handed: str = ""

    @property
    def profile(self) -> str:
        return str(self.parameters.get("profile", "standard"))

    @property
    def sources(self) -> tuple[Path, ...]:
        """The study's code, inputs of its run (editing one makes the run out of date): its module, or every
        source file of its package (``studies.sources``)."""
        return studies.sources(self.study)

    @property
    def renders(self) -> bool:
        """Whether its notebook offers ``recorded`` (logbench.studies.recorded): it can be rendered from the
        committed run instead of measured (the workflow's ``rendered`` target)."""
        import re

        nb = json.loads((paths.NOTEBOOKS / self.notebook).read_text())
        cell = next((c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])), None)
        # the cell's own declaration, as papermill reads it: a line "recorded: ... = ..." or "recorded = ..."
        return cell is not None and re.search(r"^recorded\s*[:=]", "".join(cell["source"]), re.M) is not None

    @property
    def measured(self) -> bool:
        """Whether the committed run has been made (its runs table is in data/processed): a committed run declared
        but not yet measured (a new extra profile) has nothing to render from."""
        return (paths.PROCESSED / f"{self.stem}_runs.csv").exists()

    @property
    def summary(self) -> Path:
        """The processed summary its run writes (the workflow checks that the run wrote it): in the run's
        ``processed_dir`` where its parameters name one, else in data/processed."""
        where = self.parameters.get("processed_dir")
        return (Path(str(where)) if where else paths.PROCESSED) / f"{self.stem}.csv"

    def launcher(self, python: str) -> str:
        """What runs before its papermill command line: for a handed run, the throwaway server's command (with
        ``python``), which starts the server, hands it to papermill and removes it after; else nothing."""
        return f"{python} -m logbench.servers.handed {self.handed} --" if self.handed else ""

    @property
    def committed_notebook(self) -> Path:
        """Where the executed notebook of a committed run is kept: the notebook itself for the main run,
        ``notebooks/runs/<notebook stem>.<profile>.ipynb`` for an extra one (a record, not under nbval)."""
        if not self.extra:
            return paths.NOTEBOOKS / self.notebook
        return paths.NOTEBOOKS / "runs" / f"{Path(self.notebook).stem}.{self.profile}.ipynb"


def _run(spec: common.StudySpec, parameters: Mapping[str, object], extra: bool, handed: str = "") -> StudyRun:
    params = dict(parameters)
    return StudyRun(spec.name, common.stem(spec.name, str(params.get("profile", "standard"))), spec.notebook,
                    params, extra, handed)


def _selected(names: Iterable[str]) -> list[common.StudySpec]:
    """The registry's studies, then those on a user's server; ``names`` selects among them."""
    names = list(names or ())
    every = (*studies.specs(), *studies.user_server_specs())
    known = [s.name for s in every]
    for n in names:
        if n not in known:
            raise ParameterError("studies", n, "names of the registry: " + ", ".join(known))
    return [s for s in every if not names or s.name in names]


def _on_user_server(spec: common.StudySpec) -> bool:
    return spec.name in studies.ON_USER_SERVERS


def committed_runs(names: Iterable[str] = ()) -> list[StudyRun]:
    """Every committed run (main, then extras), in the paper's order, then the handed runs of the studies on a
    user's server that declare a committed run; ``names`` selects studies."""
    out = []
    for s in _selected(names):
        if _on_user_server(s):
            if s.committed:
                out.append(_run(s, s.committed, False, handed=s.engine))
            continue
        out.append(_run(s, s.committed, False))
        out.extend(_run(s, p, True) for p in s.extra_committed)
    return out


def profile_runs(profile: str, names: Iterable[str] = (),
                 overrides: Mapping[str, Mapping[str, object]] | None = None) -> list[StudyRun]:
    """A user's runs of ``profile`` (see the module's docstring); ``overrides``: {study: {parameter: value}}
    over the registry's parameters (a named extra run keeps its own profile)."""
    if profile not in PROFILES:
        raise ParameterError("profile", profile, ", ".join(PROFILES))
    overrides = dict(overrides or {})
    known = {s.name for s in studies.specs()}  # a study on a user's server has no profile run to override
    for n in overrides:
        if n not in known:
            raise ParameterError("parameters", n, "a study name of the registry: " + ", ".join(sorted(known)))
    out = []
    for s in _selected(names):
        if _on_user_server(s):
            continue
        if profile == "smoke":
            mains, extras = [dict(s.smoke[0])], []
        else:
            mains = [{**s.committed, "profile": profile}]
            extras = [dict(p) for p in s.extra_committed] if profile == "standard" else []
        for params, extra in [(p, False) for p in mains] + [(p, True) for p in extras]:
            params.pop("publish", None)
            params.update({k: v for k, v in overrides.get(s.name, {}).items() if not (extra and k == "profile")})
            out.append(_run(s, params, extra))
    return out


def source_hash(notebook: Path | str) -> str:
    """A hash of a notebook's code cells (environment.notebook_code): what of the notebook makes a run stale.

    Its markdown is left out: the prose narrates what the code measured, and a prose edit re-running a benchmark
    of up to an hour is what kept the old module names alive for committed notebooks (issue 39). A committed
    notebook's prose is edited in place, beside the outputs of its run; an executed copy under results/ keeps the
    prose it ran with."""
    return environment.notebook_code(Path(notebook).read_text(), kinds=("code",))


def papermill_yaml(parameters: Mapping[str, object]) -> str:
    """The parameters as one ``papermill -y`` document (JSON is YAML: lists and dicts keep their types)."""
    return json.dumps(dict(parameters), sort_keys=True)
