"""A study's parameters, declared once (issue 39): the typed signature of its ``define()`` (its own parameters:
names, types, defaults) and, where define() passes ``**shared`` on, the typed signature of
:func:`.parameters.study_fields` (the parameters every study shares); their help (unit, allowed values) in the
study's ``HELP`` mapping, passed to the decorator, and for a shared parameter :data:`.parameters.HELP` unless the
study says it otherwise (its unit: pgbench -c or sysbench --threads; its default output directory).
``@common.declare(PROFILES, help=HELP)`` on define() reads them into a :class:`Declaration` (``define.declaration``)
and checks, when the module is imported, the profiles against it (a PROFILES key that is no parameter, or a profile
value of another type than its parameter's, fails the import) and the help (a parameter the notebook offers
without help, or help for a name that is none, fails it too).

What derives from it: the names define() accepts (Python refuses an unknown own name, ``study_fields`` an unknown
shared one: both read the same signatures); ``python -m logbench run STUDY --help`` and the usage text
(``python -m logbench.studies --usage``); the notebook's parameters cell, generated (:func:`parameters_cell`,
written by ``python -m logbench.studies --write-cells``; tests/test_parameters.py holds every notebook to it), so
``papermill --help-notebook`` shows the same help; and what the notebook passes to define(), every parameter it
offers, picked from its namespace after papermill's injected cell ran (:meth:`Declaration.given`).
"""

from __future__ import annotations

import inspect
import json
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from .parameters import HELP as SHARED_HELP
from .parameters import LIBRARY_ONLY, SHARED, shared_parameters
from .spec import StudySpec

@dataclass(frozen=True)
class Parameter:
    name: str
    type: object  # a typing form: int | None, list[str] | None, ...
    default: object  # define()'s default; None mostly means "the profile's" (for seed: see default_of)
    shared: bool = False  # a parameter every study has (parameters.study_fields), not the study's own
    help: str = ""  # unit and allowed values, one line: the notebook cell's comment, `run STUDY --help`'s text


@dataclass(frozen=True)
class Declaration:
    """What a study's define() takes, and what its notebook is to offer."""

    study: str  # define()'s module
    parameters: Mapping[str, Parameter]  # every parameter define() takes, in its signature's order
    # define() takes them, the notebook does not offer them: hooks for tests and callers in code
    hidden: frozenset[str] = frozenset()
    # parameters of the notebook that define() does not take (the notebook's own code uses them)
    notebook_only: Mapping[str, Parameter] = field(default_factory=dict)
    # PROFILES keys that are no parameter: a profile's fixed values (no one sets them)
    settings: frozenset[str] = frozenset()

    def offered(self) -> dict[str, Parameter]:
        """The parameters the study's notebook is to declare in its parameters cell."""
        return {**{n: p for n, p in self.parameters.items() if n not in self.hidden}, **self.notebook_only}

    def given(self, namespace: Mapping[str, object]) -> dict[str, object]:
        """define()'s keyword arguments from a notebook's namespace (``globals()`` after its parameters cell and
        papermill's injected one ran, so an injected value wins): every parameter the notebook offers and define()
        takes. A name the namespace lacks is a cell out of step with the declaration: TypeError naming it."""
        names = [n for n in self.offered() if n not in self.notebook_only]
        missing = [n for n in names if n not in namespace]
        if missing:
            raise TypeError(f"study {self.study!r}: the notebook does not define {', '.join(missing)}; regenerate "
                            "its parameters cell (python -m logbench.studies --write-cells)")
        return {n: namespace[n] for n in names}

    def own(self) -> list[str]:
        """The offered parameters that are the study's own: not named as one every study shares (SHARED)."""
        return [n for n in self.offered() if n not in SHARED]


def declare(profiles: Mapping[str, Mapping[str, object]], *, help: Mapping[str, str] | None = None,  # noqa: A002
            hidden: tuple[str, ...] = (), notebook_only: Mapping[str, tuple[object, object]] | None = None,
            settings: tuple[str, ...] = (), without: tuple[str, ...] = ()) -> Callable:
    """The decorator of a study's define(): attaches its :class:`Declaration` and checks ``profiles`` by it.

    ``help``: name -> one line (unit, allowed values) for every parameter the notebook offers, but a shared one
    whose :data:`.parameters.HELP` holds for this study;
    ``hidden``: parameters define() takes that its notebook does not offer (beside ``parameters.LIBRARY_ONLY``);
    ``notebook_only``: name -> (type, default) of the notebook's parameters define() does not take;
    ``settings``: PROFILES keys that are no parameter; ``without``: shared parameters define() refuses itself.
    The function is returned as it is: define() accepts and refuses what its signature says."""
    def attach(define: Callable) -> Callable:
        helps = dict(help or {})
        found = {n: replace(p, help=_help(n, helps)) for n, p in _parameters(define, without).items()}
        library_only = {n for n in LIBRARY_ONLY if n in found and found[n].shared}
        decl = Declaration(
            study=define.__module__, parameters=found, hidden=frozenset(hidden) | library_only,
            settings=frozenset(settings),
            notebook_only={n: Parameter(n, t, d, help=_help(n, helps)) for n, (t, d) in (notebook_only or {}).items()})
        check(decl, profiles)
        check_help(decl, helps)
        define.declaration = decl
        return define
    return attach


def _help(name: str, helps: Mapping[str, str]) -> str:
    return helps.get(name) or (SHARED_HELP.get(name, "") if name in SHARED else "")


def check_help(decl: Declaration, helps: Mapping[str, str]) -> None:
    """TypeError unless every offered parameter has its help and every help names an offered parameter."""
    offered = decl.offered()
    stray = sorted(set(helps) - set(offered))
    bare = [n for n, p in offered.items() if not p.help.strip()]
    if stray or bare:
        raise TypeError(f"study {decl.study!r}: help for names the notebook does not offer: {stray}; offered "
                        f"parameters without help (unit, allowed values): {bare}")
    lines = [n for n, p in offered.items() if "\n" in p.help or "#" in p.help]
    if lines:
        # a cell's comment is one line, and papermill reads its help from the first "#" on
        raise TypeError(f"study {decl.study!r}: help of {lines} must be one line without '#'")


def _parameters(define: Callable, without: tuple[str, ...]) -> dict[str, Parameter]:
    out, rest = {}, False
    for name, p in inspect.signature(define).parameters.items():
        if p.kind is p.VAR_KEYWORD:
            rest = True
        else:
            out[name] = Parameter(name, _type(define, p.annotation), p.default)
    if rest:
        for name, (tp, default) in shared_parameters().items():
            if name not in out and name not in without:
                out[name] = Parameter(name, tp, default, shared=True)
    return out


def _type(define: Callable, hint: object) -> object:
    # Only the parameters' annotations: the return type may be a class defined further down the module.
    if hint is inspect.Parameter.empty:
        return object
    return eval(hint, define.__globals__) if isinstance(hint, str) else hint  # noqa: S307 - its own source


def default_of(p: Parameter, spec: StudySpec) -> object:
    """What define() takes when ``p`` is not given, where its None stands for a fixed value: the seed's None is the
    spec's seed (which a notebook's cell may state instead). None for the rest stays None (the profile's)."""
    return spec.seed if p.name == "seed" and p.default is None else p.default


# What any study's profile may declare that no user passes (studies.parameters reads them from every profile and
# checks them when the study is defined: design.block_layout, controls.settle_condition).
STUDY_DECLARATIONS = ("block_layout", "settle")


def check(decl: Declaration, profiles: Mapping[str, Mapping[str, object]]) -> None:
    """TypeError unless every profile key is a parameter (or a declared setting) and every value its type."""
    unknown = sorted(decl.hidden - set(decl.parameters)) + sorted(decl.settings & set(decl.parameters))
    if unknown:
        raise TypeError(f"study {decl.study!r}: hidden names that are no parameter of define(), or settings that "
                        f"are: {unknown}")
    if "profile" not in decl.parameters:
        raise TypeError(f"study {decl.study!r}: define() has no 'profile' parameter")
    for profile, values in profiles.items():
        for name, value in values.items():
            if name in decl.settings or name in STUDY_DECLARATIONS:
                continue
            p = decl.parameters.get(name)
            if p is None:
                raise TypeError(f"study {decl.study!r}: PROFILES[{profile!r}] sets {name!r}, which is no parameter "
                                f"of define() (declare it in define()'s signature, or as a setting)")
            if not conforms(value, p.type):
                raise TypeError(f"study {decl.study!r}: PROFILES[{profile!r}][{name!r}] = {value!r} is not "
                                f"{type_text(p.type)}")


def members(tp: object) -> tuple[object, ...]:
    """The alternatives of a union (``int | None`` -> (int, NoneType)); a single type is its own."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return typing.get_args(tp)
    return (tp,)


def conforms(value: object, tp: object) -> bool:
    """Whether ``value`` is of type ``tp`` as a profile or a notebook writes it (a list may be a tuple; an int
    is a float; a bool is no number)."""
    for t in members(tp):
        origin, args = typing.get_origin(t), typing.get_args(t)
        if t is object or (t is type(None) and value is None):
            return True
        if origin in (list, tuple) or t in (list, tuple):
            if isinstance(value, (list, tuple)) and all(conforms(v, args[0]) for v in value if args):
                return True
        elif origin is dict or t is dict:
            if isinstance(value, dict):
                return True
        elif t is bool:
            if isinstance(value, bool):
                return True
        elif t in (int, float):
            if isinstance(value, int if t is int else (int, float)) and not isinstance(value, bool):
                return True
        elif isinstance(t, type) and isinstance(value, t):
            return True
    return False


def accepts(declared: object, annotation: object) -> bool:
    """Whether every value of a notebook's ``annotation`` is one the ``declared`` type takes (int where float)."""
    def one(decl: object, t: object) -> bool:
        if decl is object or decl == t or (decl is float and t is int):
            return True
        d_origin, t_origin = typing.get_origin(decl), typing.get_origin(t)
        if d_origin is not None and (d_origin is t_origin or d_origin is t):
            return t_origin is None or all(any(one(a, b) for a in typing.get_args(decl)) for b in typing.get_args(t))
        return False
    return all(any(one(d, t) for d in members(declared)) for t in members(annotation))


def type_text(tp: object) -> str:
    """``list[int] | None`` as a reader writes it."""
    if tp is type(None):
        return "None"
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return " | ".join(type_text(t) for t in members(tp))
    return getattr(tp, "__name__", None) if typing.get_origin(tp) is None else str(tp).replace("typing.", "")


# What a notebook's annotation may name (papermill's inferred_type_name is its source text).
ANNOTATION_NAMES = {"Optional": typing.Optional, "Union": typing.Union, "List": list, "Dict": dict, "Any": object,
                    "Path": Path, **{t.__name__: t for t in (int, float, str, bool, list, dict, tuple, object)}}


def annotation(text: str) -> object:
    """A notebook parameter's annotation text (``Optional[list[int]]``) as a type; ``object`` where it has none."""
    if not text or text == "None":
        return object
    return eval(text, {"__builtins__": {}}, dict(ANNOTATION_NAMES))  # noqa: S307 - the repository's own notebooks


# -- the notebook's parameters cell, generated ---------------------------------------------------------------------

CELL_HEADER = ("# Parameters (papermill). None: take the value from the profile.\n"
               "# Generated from the study's declaration (its define() and HELP): edit those, then\n"
               "# python -m logbench.studies --write-cells\n")


def cell_annotation(tp: object) -> str:
    """``tp`` as the cell writes it: ``typing`` names (papermill's parser reads ``Optional[list[int]]``, not
    ``list[int] | None``), a ``Path`` member left out beside ``str`` (papermill's ``-p`` gives text)."""
    alts = [t for t in members(tp) if not (t is Path and str in members(tp))]
    optional = type(None) in alts and len(alts) > 1
    alts = [t for t in alts if not (optional and t is type(None))]

    def one(t: object) -> str:
        if t is object:
            return "Any"
        args = typing.get_args(t)
        if typing.get_origin(t) is not None and args:
            return f"{typing.get_origin(t).__name__}[{', '.join(one(a) for a in args)}]"
        return t.__name__
    inner = one(alts[0]) if len(alts) == 1 else f"Union[{', '.join(one(t) for t in alts)}]"
    return f"Optional[{inner}]" if optional else inner


def cell_literal(value: object) -> str:
    """A default as the cell writes it: strings in double quotes, as the committed cells had them."""
    if isinstance(value, str) and '"' not in value and "\\" not in value:
        return f'"{value}"'
    return repr(value)


def parameters_cell(define: Callable, spec: StudySpec) -> str:
    """The parameters cell of ``spec``'s notebook: one line per offered parameter, in define()'s order,
    ``name: Annotation = default  # help``; a seed left None states the spec's (:func:`default_of`)."""
    decl = define.declaration
    lines = [f"{n}: {cell_annotation(p.type)} = {cell_literal(default_of(p, spec))}  # {p.help}"
             for n, p in decl.offered().items()]
    names = [w for w in ("Any", "Optional", "Union") if any(f"{w}[" in ln.split("=")[0] or f": {w} " in ln
                                                              for ln in lines)]
    imports = f"from typing import {', '.join(names)}\n" if names else ""
    return CELL_HEADER + imports + "\n" + "".join(ln + "\n" for ln in lines)


def _cell(nb: dict) -> dict:
    # the cell tagged "parameters", which papermill injects its values after
    return next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))


def cell_source(notebook: Path) -> str:
    """The source of ``notebook``'s parameters cell, as it is committed."""
    return "".join(_cell(json.loads(Path(notebook).read_text(encoding="utf-8")))["source"])


def write_cell(notebook: Path, text: str) -> bool:
    """Replace ``notebook``'s parameters cell's source by ``text``, the rest of its JSON as nbformat wrote it
    (indent 1, non-ASCII kept, its final newline or none); returns whether the file changed."""
    path = Path(notebook)
    raw = path.read_text(encoding="utf-8")
    nb = json.loads(raw)
    _cell(nb)["source"] = text.splitlines(keepends=True)
    out = json.dumps(nb, indent=1, ensure_ascii=False) + ("\n" if raw.endswith("\n") else "")
    if out == raw:
        return False
    path.write_text(out, encoding="utf-8")
    return True
