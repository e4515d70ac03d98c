"""Evidence for the accountant's argument on the noise the head draws (docs/head.md, "The
accountant's model").

The contract's bound (Mironov, Talwar and Zhang 2019) is, at integer order a,
A_a = sum_j C(a, j) (1 - q)^(a - j) q^j exp((j^2 - j) / (2 z^2)). For adding a record (the mixture
M = (1 - q) P + q Q first) it is the binomial expansion of E_P[(M / P)^a], true for any
mechanism, with E_P[(Q / P)^j] = exp((j^2 - j) ||v||^2 / (2 sigma^2)): for the discrete Gaussian
this moment is exact at integer orders and integer shifts v (the sum over the integers of a
shifted discrete Gaussian is the same normaliser), so the add direction is proven for the noise
drawn, in any dimension. For removing a record, E_M[(P / M)^a], Mironov et al. prove the bound
for the continuous Gaussian only. Here the exact remove-direction moment of the Poisson-
subsampled *discrete* Gaussian (one coordinate, integer shift Delta, summed over the integers
in log space) is computed and compared with the bound over a grid of sigma / Delta, q and
orders: it never exceeds it. This is a check, not a proof; docs/head.md says so.
"""

from __future__ import annotations

import math

import numpy as np
import pytest


def _log_pmf(x: np.ndarray, mean: int, sigma: float) -> np.ndarray:
    """log of the discrete Gaussian's mass over ``x`` (the normaliser summed over the same support)."""
    e = -((x - mean) ** 2) / (2.0 * sigma * sigma)
    return e - np.logaddexp.reduce(e)


def _log_bound(z: float, q: float, a: int) -> float:
    """log A_a of the contract's formula (the continuous Gaussian's, multiplier z)."""
    terms = [math.lgamma(a + 1) - math.lgamma(j + 1) - math.lgamma(a - j + 1) + (a - j) * math.log1p(-q)
             + j * math.log(q) + (j * j - j) / (2.0 * z * z) for j in range(a + 1)]
    return float(np.logaddexp.reduce(terms))


def _log_moments(delta: int, sigma: float, q: float, a: int) -> tuple[float, float]:
    """log E_P[(M/P)^a] (add) and log E_M[(P/M)^a] (remove), exact sums over the integers."""
    width = int(40 * sigma + 40 * delta * a) + 10
    x = np.arange(-width, width + 1, dtype=np.float64)
    lp, lq = _log_pmf(x, 0, sigma), _log_pmf(x, delta, sigma)
    lm = np.logaddexp(math.log1p(-q) + lp, math.log(q) + lq)
    add = np.logaddexp.reduce(a * lm + (1 - a) * lp)
    remove = np.logaddexp.reduce(a * lp + (1 - a) * lm)
    return float(add), float(remove)


@pytest.mark.parametrize("ratio", [0.5, 0.8, 1.0, 1.5, 2.0])
@pytest.mark.parametrize("q", [0.01, 0.1, 0.5, 0.9])
def test_the_subsampled_discrete_gaussian_stays_within_the_contracts_bound(ratio, q):
    """Delta = 3 and sigma = ratio x Delta (z = ratio), orders 2..24: the add direction equals the
    bound (to float rounding) and the remove direction does not exceed it."""
    delta = 3
    for a in range(2, 25):
        bound = _log_bound(ratio, q, a)
        add, remove = _log_moments(delta, ratio * delta, q, a)
        assert add == pytest.approx(bound, rel=1e-9, abs=1e-9), (a, add, bound)
        assert remove <= bound + 1e-9 * max(1.0, abs(bound)), (a, remove, bound)


def test_the_check_can_fail():
    """A noise too small for its stated multiplier is caught: sigma / Delta 0.5 stated as 1.0."""
    add, _ = _log_moments(3, 1.5, 0.5, 8)
    assert add > _log_bound(1.0, 0.5, 8) + 1.0
