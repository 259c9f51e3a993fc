"""A study's parameters, declared once: the typed signature of its ``define()`` (its own parameters: names, types,
defaults) and, where define() passes ``**shared`` on, the typed signature of :func:`.parameters.study_fields`
(the parameters every study shares). ``@common.declare(PROFILES)`` on define() reads them into a
:class:`Declaration` (``define.declaration``) and checks the profiles against it when the module is imported: a
PROFILES key that is no parameter, or a profile value of another type than its parameter's, fails the import.

What derives from it: the names define() accepts (Python refuses an unknown own name, ``study_fields`` an unknown
shared one: both read the same signatures), the usage text (``python -m logbench.studies --usage``), and the test
that every notebook's parameters cell offers exactly these parameters with these defaults and types
(tests/test_parameters.py). The notebook's parameters cell is not generated: the committed notebooks carry the
outputs of real runs, and its comments (unit, allowed values) are the help text ``papermill --help-notebook``
shows; the test keeps it in step instead.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .parameters import LIBRARY_ONLY, NOTEBOOK_OPTIONAL, SHARED, shared_parameters
from .spec import StudySpec

@dataclass(frozen=True)
class Parameter:
    name: str
    type: object  # a typing form: int | None, list[str] | None, ...
    default: object  # define()'s default; None mostly means "the profile's" (for seed: see default_of)
    shared: bool = False  # a parameter every study has (parameters.study_fields), not the study's own


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
    # offered parameters a notebook may leave out (parameters.NOTEBOOK_OPTIONAL): define()'s default then holds
    optional: frozenset[str] = frozenset()

    def offered(self) -> dict[str, Parameter]:
        """The parameters the study's notebook is to declare in its parameters cell."""
        return {**{n: p for n, p in self.parameters.items() if n not in self.hidden}, **self.notebook_only}

    def own(self) -> list[str]:
        """The offered parameters that are the study's own: not named as one every study shares (SHARED)."""
        return [n for n in self.offered() if n not in SHARED]


def declare(profiles: Mapping[str, Mapping[str, object]], *, hidden: tuple[str, ...] = (),
            notebook_only: Mapping[str, tuple[object, object]] | None = None, settings: tuple[str, ...] = (),
            without: tuple[str, ...] = ()) -> Callable:
    """The decorator of a study's define(): attaches its :class:`Declaration` and checks ``profiles`` by it.

    ``hidden``: parameters define() takes that its notebook does not offer (beside ``parameters.LIBRARY_ONLY``);
    ``notebook_only``: name -> (type, default) of the notebook's parameters define() does not take;
    ``settings``: PROFILES keys that are no parameter; ``without``: shared parameters define() refuses itself.
    The function is returned as it is: define() accepts and refuses what its signature says."""
    def attach(define: Callable) -> Callable:
        found = _parameters(define, without)
        library_only = {n for n in LIBRARY_ONLY if n in found and found[n].shared}
        decl = Declaration(
            study=define.__module__, parameters=found, hidden=frozenset(hidden) | library_only,
            settings=frozenset(settings), optional=frozenset(n for n in NOTEBOOK_OPTIONAL if n in found),
            notebook_only={n: Parameter(n, t, d) for n, (t, d) in (notebook_only or {}).items()})
        check(decl, profiles)
        define.declaration = decl
        return define
    return attach


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
