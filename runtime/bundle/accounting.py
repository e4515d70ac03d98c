"""The contract's bound on a linear head's (epsilon, delta): Renyi DP of the Poisson-sampled
Gaussian mechanism at integer orders, converted to (epsilon, delta).

A bundle's head states its noise multiplier, sample rate, steps and delta (format 1.1); every
reader recomputes the epsilon they allow here and refuses a head that claims less
(relation "accountant"), so no bundle can state a guarantee its own numbers contradict. The
exporter calibrates with a maintained accountant (Google's dp-accounting, RdpAccountant at
these same orders) and checks that this function agrees with it: this is the accountant's
arithmetic written where a phone can run it, not a second analysis.

For an integer order a (Mironov, Talwar and Zhang 2019, add or remove one record), the
log of the a-th moment is

    log A_a = log sum_{j=0..a} C(a, j) (1 - q)^(a - j) q^j exp((j^2 - j) / (2 sigma^2))

and a step's Renyi divergence is log A_a / (a - 1); T steps compose to T times it. The
conversion to (epsilon, delta) is dp-accounting's (Balle et al. 2020, Proposition 12):
epsilon_a = R + log(1 - 1/a) - log(delta a) / (a - 1), 0 when delta^2 + expm1(-R) > 0, and
epsilon is the least over the orders (at least 0). The sums are evaluated in log space, in
index order, the binomial coefficients' logs by the running recurrence, with the contract's own
exp and log (`runtime.bundle.exactmath`, section 7.1), never a platform's: the decision to
accept or refuse a head is then the same in the Java and TypeScript readers, bit for bit, on
every machine, whichever side of the bound a crafted epsilon sits.

Example:
    >>> round(head_epsilon(1.1, 0.1, 1000, 1e-5), 3)
    22.897
"""

from __future__ import annotations

import math

import numpy as np

from runtime.bundle.exactmath import exp_array, expm1, log, log1p
from runtime.contract import schema as _contract
from runtime.rowwise import row_sums

_A = _contract()["accountant"]
#: The integer Renyi orders the contract evaluates (dp-accounting's RdpAccountant is given the same).
ORDERS: tuple[int, ...] = tuple(range(_A["orders"][0], _A["orders"][1] + 1))
#: A head may claim an epsilon this much (relative) below the bound before it is refused: the
#: exporter calibrates with dp-accounting, whose arithmetic differs from this in the last bits.
ACCOUNTANT_RTOL: float = _A["rtol"]


#: log(i) for i = 1..the highest order + 1, by the contract's log (the binomials' recurrence).
_LOG_INT = np.array([0.0] + [log(float(i)) for i in range(1, ORDERS[-1] + 2)])


def log_moment(noise_multiplier: float, sample_rate: float, order: int) -> float:
    """log A_a of the Poisson-sampled Gaussian at integer order ``order`` (see the module doc).

    Each term is the same operations as a loop over j would do, one numpy ufunc per operation
    over all j at once (elementwise IEEE operations; cumsum adds in index order), so the bits are
    the loop's and the Java and TypeScript readers'; about 10x faster than the loop.
    """
    q, a = sample_rate, order
    inv = 1.0 / (2.0 * noise_multiplier * noise_multiplier)
    if q >= 1.0:
        return float(a * a - a) * inv
    log_q, log_1q = log(q), log1p(-q)
    j = np.arange(a + 1, dtype=np.float64)
    steps = np.zeros(a + 1)
    steps[1:] = _LOG_INT[a:0:-1] - _LOG_INT[1:a + 1]  # log(a - j + 1) - log(j), j = 1..a
    log_binom = np.cumsum(steps)  # lb_j = lb_{j-1} + (...), in index order
    terms = ((log_binom + j * log_q) + (a - j) * log_1q) + (j * j - j) * inv
    top = float(terms.max())
    total = float(row_sums(exp_array(terms - top))[0])  # in index order: every reader adds alike
    return top + log(total)


def head_epsilon(noise_multiplier: float, sample_rate: float, steps: int, delta: float) -> float:
    """The least epsilon over `ORDERS` for ``steps`` Poisson-sampled Gaussian steps at ``delta``."""
    best = math.inf
    for a in ORDERS:
        rdp = steps * (log_moment(noise_multiplier, sample_rate, a) / (a - 1))
        if delta * delta + expm1(-rdp) > 0:
            eps = 0.0
        else:
            eps = rdp + log1p(-1.0 / a) - log(delta * a) / (a - 1)
        best = min(best, eps)
    return max(0.0, best)
