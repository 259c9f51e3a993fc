"""The one estimate format: notebooks, answer, findings and paper print an estimate the same way."""

import math

from logbench.base.formatting import ci_text, number, rounded, sig_apart
from logbench.base.stats import Estimate


def test_fixed_significant_digits_in_plain_decimals():
    assert [number(v) for v in (0.5, 1.0, 0.000123456, 12345.6, -0.0004, 0.0)] == \
        ["0.500", "1.00", "0.000123", "12346", "-0.000400", "0"]
    assert number(float("nan")) == number(None) == "—" and number(math.inf) == "∞"


def test_an_undefined_interval_prints_the_mean_alone_and_an_estimate_prints_alike():
    assert ci_text(0.6, 0.55, 0.65, n=3) == "0.600 [0.550, 0.650] (n=3)"
    assert ci_text(0.6, float("nan"), float("nan"), n=1) == "0.600 (n=1)"
    assert str(Estimate(0.6, 0.55, 0.65, 3)) == ci_text(0.6, 0.55, 0.65, n=3)


def test_an_end_just_past_1_is_not_printed_as_1():
    """Study 04's resolution run: a model A/A of 1.069 [1.0007, 1.142] excludes 1, which '1.00' would hide; an end
    only as far from 1 as its digits need is printed with more of them, every other end as before."""
    assert ci_text(1.06913, 1.0007, 1.14223, apart=1.0) == "1.07 [1.001, 1.14]"
    assert ci_text(0.980094, 0.960872, 0.999701, n=32, apart=1.0) == "0.980 [0.961, 0.9997] (n=32)"
    assert ci_text(0.95, 0.9, 1.0, apart=1.0) == "0.950 [0.900, 1.00]"  # 1 itself stays 1.00
    assert ci_text(1.06913, 1.0007, 1.14223) == "1.07 [1.00, 1.14]"  # without a reference, as before
    assert [sig_apart(x) for x in (1.0007, 0.99999, 1.2, 1.0, float("nan"))] == [4, 5, 3, 3, 3]
    assert sig_apart(1.0000001) == 6  # the most it gives


def test_a_large_rate_prints_its_significant_digits_grouped():
    # a daemon's one-core ceiling, ±20 %: number() keeps every integer digit, rounded() stops at sig
    assert number(392904, 2) == "392904"
    assert [rounded(392904, s) for s in (1, 2, 3, 6)] == ["400,000", "390,000", "393,000", "392,904"]
    assert [rounded(v, 2) for v in (60177.9, 46065.7, 86755.4, 1_234_567.0, -392904.0)] == \
        ["60,000", "46,000", "87,000", "1,200,000", "-390,000"]
    # a carry into a new digit, and the thousands at exactly sig digits
    assert rounded(999.7, 3) == "1,000" and rounded(1234.5, 3) == "1,230" and rounded(123.4, 3) == "123"
    # below 10^(sig-1) number() already stops at sig digits: the same text
    assert [rounded(v, 3) for v in (12.345, 0.5, 0.0)] == [number(v, 3) for v in (12.345, 0.5, 0.0)]
    assert rounded(float("nan")) == rounded(None) == "—" and rounded(math.inf) == "∞"
    assert ci_text(392904, 341073, 463309, sig=2, n=3, style=rounded) == "390,000 [340,000, 460,000] (n=3)"
