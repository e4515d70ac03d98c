"""The contract's exp and log (docs/bundle-format.md section 7.1): the same bits in every reader.

A platform's exp and log (Python's libm, Java's and V8's fdlibm ports) differ in the last bits,
and the accountant's bound and the softmax are decisions: a head accepted by one reader and
refused by another, or an exact tie labelled two ways. These functions are built only from
correctly rounded IEEE double +, -, x, / (and exact scaling by powers of two) in an order the
contract writes down, so Python, Java and TypeScript compute the same bits on every machine.
They are hand-written because no library promises that: correctly rounded libraries (CORE-MATH,
crlibm) are not available in all three languages. Accuracy is a few units in the last place
(tests/test_exactmath.py measures it against math.exp and math.log).

`exp_array` is exp on a numpy array (numpy's float64 ufuncs are single correctly rounded
operations), for the softmax and the accountant's sums; `exp` is it on one value.

Example:
    >>> exp(0.0), log(1.0), abs(exp(1.0) - 2.718281828459045) < 1e-15
    (1.0, 0.0, True)
"""

from __future__ import annotations

import math

import numpy as np

from runtime.contract import schema as _contract

_A = _contract()["arithmetic"]
EXP_MIN: float = _A["exp_min"]
EXP_MAX: float = _A["exp_max"]
EXP_TERMS: int = _A["exp_terms"]
EXPM1_BELOW: float = _A["expm1_below"]
EXPM1_TERMS: int = _A["expm1_terms"]
LOG_TERMS: int = _A["log_terms"]
INV_LN2: float = _A["inv_ln2"]
LN2_HI: float = _A["ln2_hi"]
LN2_LO: float = _A["ln2_lo"]
SQRT2: float = _A["sqrt2"]
_TWO54 = 18014398509481984.0  # 2^54
_SMALLEST_NORMAL = 2.2250738585072014e-308  # 2^-1022


def exp(x: float) -> float:
    """e^x by section 7.1 (`exp_array`'s operations on one value: one implementation of it)."""
    return float(exp_array(np.float64(x)))


def log(x: float) -> float:
    """The natural log by section 7.1: x = m 2^e with m in (sqrt(2)/2, sqrt(2)], then
    log m = 2 atanh(s), s = (m - 1) / (m + 1), by a Horner sum in s^2."""
    if x != x or x < 0.0:
        return math.nan
    if x == 0.0:
        return -math.inf
    if x == math.inf:
        return math.inf
    e0 = 0
    if x < _SMALLEST_NORMAL:
        x, e0 = x * _TWO54, -54
    m, e = math.frexp(x)  # x = m 2^e, 1/2 <= m < 1: exact
    m, e = m * 2.0, e - 1  # 1 <= m < 2
    if m > SQRT2:
        m, e = m / 2.0, e + 1
    s = (m - 1.0) / (m + 1.0)
    w = s * s
    t = 0.0
    for i in range(LOG_TERMS, 0, -1):
        t = w * (1.0 / (2 * i + 1) + t)
    big_e = float(e + e0)
    return big_e * LN2_HI + (big_e * LN2_LO + (s + s * t) * 2.0)


def log1p(y: float) -> float:
    """log(1 + y), accurate for small y: with u = 1 + y rounded, log(u) y / (u - 1)."""
    if y != y or y < -1.0:
        return math.nan
    if y == -1.0:
        return -math.inf
    u = 1.0 + y
    if u == 1.0:
        return y
    return log(u) * (y / (u - 1.0))


def expm1(x: float) -> float:
    """e^x - 1, accurate for small x: a Horner sum of the series below `EXPM1_BELOW`."""
    if x != x:
        return x
    if abs(x) < EXPM1_BELOW:
        p = 1.0
        for i in range(EXPM1_TERMS, 1, -1):
            p = 1.0 + (x * p) / i
        return x * p
    return exp(x) - 1.0


def exp_array(x: np.ndarray) -> np.ndarray:
    """e^x of every element of a float64 array by section 7.1: k = floor(x / ln 2 + 1/2), r = x -
    k ln 2 (in two parts), a Horner sum of r's Taylor series, times 2^k (exact: 2^k and the
    result are normal numbers); +inf above EXP_MAX, 0 below EXP_MIN. One numpy ufunc per
    operation, each a correctly rounded IEEE operation on every element.

    Example:
        >>> [float(a) for a in exp_array(np.array([-800.0, 0.0, 710.0]))]
        [0.0, 1.0, inf]
    """
    x = np.asarray(x, np.float64)
    inside = np.clip(np.where(np.isnan(x), 0.0, x), EXP_MIN, EXP_MAX)  # NaN and outside: set below
    k = np.floor(inside * INV_LN2 + 0.5)
    r = (inside - k * LN2_HI) - k * LN2_LO
    p = np.ones_like(r)
    for i in range(EXP_TERMS, 0, -1):
        p = 1.0 + (r * p) / float(i)
    out = np.ldexp(p, k.astype(np.int64))
    out = np.where(x > EXP_MAX, math.inf, out)
    out = np.where(x < EXP_MIN, 0.0, out)
    return np.where(np.isnan(x), x, out)
