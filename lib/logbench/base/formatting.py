"""How every estimate is printed: one number format and one estimate-with-interval format, for the notebooks, the
answer, the findings and the paper alike.

:func:`number` gives ``sig`` significant digits in plain decimals (12345, not 1.23e+04; 1.00, not 1), '∞' for an
unbounded bound and '—' where a value is undefined. It keeps every integer digit, which a count or a tps with a narrow
interval needs; a large rate whose interval spans tens of percent (a daemon's one-core ceiling, 392904 [341073,
463309]) is printed by :func:`rounded` instead, at ``sig`` significant digits with its thousands grouped as the
paper's prose groups large counts (390,000 [340,000, 460,000]). :func:`ci_text` is 'mean [low, high]' over either,
with ' (n=…)' where the caller knows n; where the interval is undefined (n = 1) it prints the mean alone rather than
two dashes.
"""

from __future__ import annotations

import math

# The level of every interval: stats computes at it and takes it from here, so what is printed and what is computed
# cannot disagree, and formatting needs nothing of stats.
CONFIDENCE = 0.95
CI = f"{round(100 * CONFIDENCE)} % CI"
UNDEFINED = "—"


def undefined(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def number(x, sig: int = 3) -> str:
    """A number with ``sig`` significant digits, no exponent; ∞ and — for the unbounded and the undefined."""
    if x is None:
        return UNDEFINED
    x = float(x)  # numpy's float32 and ints too, whose NaN undefined() would not see
    if math.isnan(x):
        return UNDEFINED
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    if x == 0:
        return "0"
    decimals = max(0, sig - 1 - int(math.floor(math.log10(abs(x)))))
    s = f"{x:.{decimals}f}"
    return "0" if s in ("-0", "-0.0") else s


def rounded(x, sig: int = 3) -> str:
    """A number at ``sig`` significant digits whatever its size, thousands grouped by commas (392904 at 2: '390,000';
    1234.5 at 3: '1,230'); below 10^(sig-1), where :func:`number` already stops at ``sig`` digits, as it prints."""
    if undefined(x) or math.isinf(float(x)) or float(x) == 0:
        return number(x, sig)
    x = float(x)
    place = sig - 1 - int(math.floor(math.log10(abs(x))))
    if place > 0:
        return number(x, sig)
    return f"{int(round(x, place)):,}"


def p_value(p) -> str:
    """A p-value: two significant digits, or '< 0.001'."""
    if undefined(p):
        return UNDEFINED
    return "< 0.001" if p < 0.001 else number(p, 2)


def sig_apart(x, ref: float = 1.0, sig: int = 3, most: int = 6) -> int:
    """The fewest significant digits, at least ``sig`` and at most ``most``, at which ``x`` is not printed as ``ref``
    (unless it is ``ref``): an interval's end just past 1 (1.0007) printed '1.00' reads as one that holds 1."""
    if undefined(x) or math.isinf(float(x)) or float(x) == ref:
        return sig
    for s in range(sig, most + 1):
        if float(number(x, s)) != ref:
            return s
    return most


def ci_text(mean, low, high, sig: int = 3, factor: float = 1.0, n: int | None = None,
            apart: float | None = None, style=number) -> str:
    """'mean [low, high]' (the interval left out where undefined), each value times ``factor`` and printed by
    ``style`` (:func:`number`, or :func:`rounded` for a large rate); ' (n=…)' if given. ``apart``: a reference value
    (1 for a ratio) an end is never printed as unless it is it (:func:`sig_apart`)."""
    def scaled(v):
        return v if undefined(v) else float(v) * factor

    def end(v):
        return style(scaled(v), sig if apart is None else sig_apart(scaled(v), apart, sig))
    text = style(scaled(mean), sig)
    if not (undefined(low) or undefined(high)):
        text += f" [{end(low)}, {end(high)}]"
    return text + (f" (n={int(n)})" if n is not None else "")


def ci_words(mean, low, high, unit: str = "µs") -> str:
    """The estimate in a sentence: 'mean µs (95 % CI low to high)'."""
    return f"{number(mean)} {unit} ({CI} {number(low)} to {number(high)})"
