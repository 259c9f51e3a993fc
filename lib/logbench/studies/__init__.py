"""The studies, one module or package each, and their registry.

A study module (or package: its ``__init__`` re-exports what callers use) declares ``SPEC`` (a
:class:`~logbench.studies.common.StudySpec`); the registry finds every module and package of this package
that does, so the report, the claims, the tests' notebook list and the workflow (``Snakefile``, through
:mod:`logbench.jobs`; ``python -m logbench.studies --committed`` prints the same committed runs) read one list.

A new study is one module or package here plus a thin notebook; it touches no other study (a package keeps
its bench and analysis beside it: every study but 03, ``backend_comparison``, is one, e.g. ``pg_wal_level/``,
``pg_destinations/``; issue 24). Its parts:

- ``SPEC = common.StudySpec(name=..., engine=..., title=..., post=..., baseline=..., notebook=..., seed=...,
  published=..., committed=..., extra_committed=..., smoke=..., paper_order=...)`` (a version sweep, the profile
  ``versions`` in ``extra_committed``, names its part of the paper's section on versions: ``versions_title``);
- its configurations (name -> settings over the engine's base, sinks) and ``PROFILES`` (smoke / standard /
  full: the shared parameters' defaults and its own);
- ``define(profile, <its own parameters>, <engine parameters>, **shared)``: a study type subclassing
  ``benches.postgres.PgStudy`` or ``benches.mariadb.MariaDBStudy``, built from
  ``common.study_fields(SPEC, profile, PROFILES, **shared)`` and ``pg.pg_fields(...)`` /
  ``mb.mariadb_fields(...)``; PostgreSQL configurations from ``pg.configurations(...)`` carry the log
  records they must produce (``settings.RecordShape``);
- ``run(study)``: ``common.run_study(study, processed_tables)``, ``processed_tables(result)`` its summary and
  runs. A PostgreSQL study declares its load (``PgStudy.loads``: ``pg.Load``, a ``workloads.workload.Workload``
  or ``Import``; ``Configuration.sessions``: sessions held open while a configuration runs) and the shared
  bench runs it, so it passes no ``start``; a MariaDB study passes ``start=`` (``mb.start`` and a bench).
  ``define()`` only checks and plans: the run decides backend 'auto' and finds images;
- its summary, findings and tables for the notebook.

Outside its package and notebook, a study is named only where it takes part in something shared: a claim it
judges (``data/raw/claims.csv`` and its rule in ``claim_rules``) and its row in the README's table of studies.
Runs that say nothing about a log line's cost are its spec's to declare (``not_line_cost``: configurations varying
something else than what is logged, with why; a version sweep is left out for being one): ``findings.NOT_LINE_COST``
derives from the specs.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from pathlib import Path
from types import ModuleType

from .common import StudySpec

__all__ = ["ON_USER_SERVERS", "StudySpec", "module", "sources", "spec", "specs", "user_server_specs"]

# The skeleton every study shares (common re-exports its modules), not studies.
_NOT_STUDIES = {"common", "__main__", "beside", "on_user_server", "output", "parameters", "recorded", "running",
                "sections", "spec", "summaries", "texts", "variants"}
# Studies run on a user's own server: no post, no smoke run without that server, nothing the paper or the findings
# read, so the registry's readers (the paper, the findings, nbval, a profile's run) leave them out; the answer finds
# them here, and the workflow's committed runs (logbench.jobs) hand each a throwaway server of its engine.
ON_USER_SERVERS = ("own_server", "own_mariadb")


@lru_cache(maxsize=1)
def _modules() -> dict[str, ModuleType]:
    found = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name in _NOT_STUDIES or info.name in ON_USER_SERVERS:
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        if isinstance(getattr(mod, "SPEC", None), StudySpec):
            found[mod.SPEC.name] = mod
    # In the paper's order (then by notebook): the order of the findings and of the committed run.
    return dict(sorted(found.items(), key=lambda kv: (kv[1].SPEC.paper_order, kv[1].SPEC.notebook)))


def specs() -> tuple[StudySpec, ...]:
    """Every study's spec, in the paper's order."""
    return tuple(m.SPEC for m in _modules().values())


def user_server_specs() -> tuple[StudySpec, ...]:
    """The specs of the studies that run on a user's own server (:data:`ON_USER_SERVERS`)."""
    return tuple(importlib.import_module(f"{__name__}.{n}").SPEC for n in ON_USER_SERVERS)


def spec(name: str) -> StudySpec:
    """The spec of study ``name``; KeyError naming the known ones otherwise."""
    return module(name).SPEC


def module(name: str) -> ModuleType:
    """The module (or package) of study ``name`` (its define/run/summary/findings), a study on a user's server
    included."""
    if name in ON_USER_SERVERS:
        return importlib.import_module(f"{__name__}.{name}")
    try:
        return _modules()[name]
    except KeyError:
        raise KeyError(f"no study {name!r}; known: {', '.join((*_modules(), *ON_USER_SERVERS))}") from None


# What a study package ships (pyproject's package-data beside its modules): an editor's swap or backup file
# beside them is no input (it would make the study out of date, then be missing).
_SOURCE_PATTERNS = ("*.py", "*.sh", "*.conf.in")


def sources(name: str) -> tuple[Path, ...]:
    """The files of study ``name``'s code, the workflow's input for its runs (editing one makes them out of
    date): its module, or every source file of its package (its bench and analysis are its code too)."""
    mod = module(name)
    if not hasattr(mod, "__path__"):
        return (Path(mod.__file__),)
    root = Path(mod.__file__).parent
    return tuple(sorted({p for pattern in _SOURCE_PATTERNS for p in root.rglob(pattern)
                         if "__pycache__" not in p.relative_to(root).parts}))


def committed_profiles(names: tuple[str, ...]) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Study -> (its baseline, the profiles of its committed runs: the committed one, then its extra ones), for
    the findings' models (:func:`logbench.analyze.models.model_findings`), which take the registry from here."""
    out = {}
    for name in names:
        s = spec(name)
        out[name] = (s.baseline, tuple(str(r.get("profile", "standard")) for r in (s.committed, *s.extra_committed)))
    return out
