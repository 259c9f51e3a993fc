"""Checking notebook parameters before anything starts.

papermill passes ``-p clients "[1, 4]"`` as the *string* ``"[1, 4]"``; list
parameters therefore accept a list or its literal text. Every check raises a
:class:`~logbench.base.errors.ParameterError` naming the parameter and what is allowed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence

from .errors import ParameterError

PROFILES = ("smoke", "standard", "full")


def choice(name: str, value: object, allowed: Sequence[object]) -> object:
    if value not in allowed:
        raise ParameterError(name, value, allowed)
    return value


def _literal(name: str, value: object, allowed: str) -> object:
    if isinstance(value, str):
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise ParameterError(name, value, allowed) from None
    return value


def positive_int(name: str, value: object) -> int:
    value = _literal(name, value, "a whole number > 0")
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ParameterError(name, value, "a whole number > 0")
    return value


def positive_int_or_off(name: str, value: object) -> int | None:
    """None (also 0, "None", "none": off) or a whole number > 0."""
    return None if value in (None, 0, "None", "none") else positive_int(name, value)


def non_negative_int(name: str, value: object) -> int:
    value = _literal(name, value, "a whole number >= 0")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ParameterError(name, value, "a whole number >= 0")
    return value


def positive_number(name: str, value: object) -> float:
    value = _literal(name, value, "a number > 0")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ParameterError(name, value, "a number > 0")
    return float(value)


def non_negative_number(name: str, value: object) -> float:
    value = _literal(name, value, "a number >= 0")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ParameterError(name, value, "a number >= 0")
    return float(value)


def fraction(name: str, value: object) -> float:
    value = _literal(name, value, "a number in (0, 1]")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise ParameterError(name, value, "a number in (0, 1]")
    return float(value)


def boolean(name: str, value: object) -> bool:
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if not isinstance(value, bool):
        raise ParameterError(name, value, "True or False")
    return value


def int_list(name: str, value: object) -> tuple[int, ...]:
    allowed = "a non-empty list of whole numbers > 0, e.g. [1, 4, 8]"
    value = _literal(name, value, allowed)
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, (list, tuple)) or not value:
        raise ParameterError(name, value, allowed)
    if any(isinstance(v, bool) or not isinstance(v, int) or v <= 0 for v in value):
        raise ParameterError(name, value, allowed)
    if len(set(value)) != len(value):
        raise ParameterError(name, value, allowed + " without repeats")
    return tuple(value)


def name_list(name: str, value: object, allowed: Iterable[str], coerce=None) -> tuple[str, ...]:
    """A non-empty list of names from ``allowed`` (or its literal text); ``coerce`` maps items first (e.g. str)."""
    allowed = tuple(allowed)
    text = "a non-empty list of: " + ", ".join(repr(a) for a in allowed)
    if isinstance(value, str) and not value.lstrip().startswith(("[", "(")):
        value = [value]
    value = _literal(name, value, text)
    if not isinstance(value, (list, tuple)) or not value:
        raise ParameterError(name, value, text)
    if coerce is not None:
        value = [coerce(v) for v in value]
    bad = [v for v in value if v not in allowed]
    if bad:
        raise ParameterError(name, bad[0] if len(bad) == 1 else bad, text)
    if len(set(value)) != len(value):
        raise ParameterError(name, value, text + " (each once)")
    return tuple(value)


def from_profile(name: str, value: object, profile: str, defaults: dict[str, dict[str, object]]) -> object:
    """The user's value, or the profile's default when the user left it as None."""
    return defaults[profile][name] if value is None else value


def mapping(name: str, value: object) -> dict[str, object]:
    """A {name: value} dict (or its literal text); None is empty."""
    allowed = "a dict of setting names to values, e.g. {'track_io_timing': 'on'}, or None"
    if value is None:
        return {}
    value = _literal(name, value, allowed)
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ParameterError(name, value, allowed)
    return value
