"""The one estimate format: notebooks, answer, findings and paper print an estimate the same way."""

import math

from logbench.base.formatting import ci_text, number
from logbench.base.stats import Estimate


def test_fixed_significant_digits_in_plain_decimals():
    assert [number(v) for v in (0.5, 1.0, 0.000123456, 12345.6, -0.0004, 0.0)] == \
        ["0.500", "1.00", "0.000123", "12346", "-0.000400", "0"]
    assert number(float("nan")) == number(None) == "—" and number(math.inf) == "∞"


def test_an_undefined_interval_prints_the_mean_alone_and_an_estimate_prints_alike():
    assert ci_text(0.6, 0.55, 0.65, n=3) == "0.600 [0.550, 0.650] (n=3)"
    assert ci_text(0.6, float("nan"), float("nan"), n=1) == "0.600 (n=1)"
    assert str(Estimate(0.6, 0.55, 0.65, 3)) == ci_text(0.6, 0.55, 0.65, n=3)
