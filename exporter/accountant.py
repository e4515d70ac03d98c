"""The head's accounting: the (epsilon, delta) of DP-SGD's noisy steps, and the noise multiplier
calibrated to a share of epsilon.

What is modelled. Each of the head's T steps is the Poisson-sampled Gaussian mechanism: every
record joins the step's batch independently with probability q, the batch's clipped integer
gradients are summed and Gaussian noise of standard deviation sigma is added to every
coordinate of the sum. The accountant, Google's dp-accounting (RdpAccountant at the contract's
integer orders, runtime.bundle.accounting.ORDERS, neighbours by adding or removing one
record), models each step as ``PoissonSampledDpEvent(q, GaussianDpEvent(z))``: the *continuous*
Gaussian of noise multiplier z = sigma / Delta at L2 sensitivity Delta, composed T times.

What is drawn. The noise is OpenDP's exact *discrete* Gaussian of the same sigma on the integer
gradient sums, whose L2 sensitivity is the integer Delta (exporter.head makes every record's
integer gradient at most Delta in L2, exactly). Its privacy map states rho-zCDP with
rho = Delta^2 / (2 sigma^2), the continuous Gaussian's (Canonne, Kamath and Steinke 2020);
`check_step_map` checks OpenDP's map against it before any noise is drawn. The subsampled
bound needs more than a step's Renyi divergence, and the argument has two halves:
- adding a record (the mixture first): the bound is the binomial expansion of the mixture's
  moment, true for any mechanism, in the moments E_P[(Q/P)^j]; for the discrete Gaussian at
  integer orders and integer shifts these equal the continuous Gaussian's exactly (the shifted
  sum over the integers has the same normaliser), in any dimension. Proven.
- removing a record (the mixture second): Mironov, Talwar and Zhang (2019) prove that it is no
  larger for the continuous Gaussian only. For the discrete Gaussian it is checked, not proven:
  tests/test_discrete_gaussian_rdp.py sums the exact one-coordinate divergence over the
  integers (sigma / Delta 0.5 to 2, q 0.01 to 0.9, orders 2 to 24) and finds it never above
  the bound. A proof, or a bound proven for any mechanism (Zhu and Wang 2019, Theorem 6, at
  the cost of more noise), would replace this check.

The contract (runtime.bundle.accounting.head_epsilon) recomputes the bound a reader accepts; the
calibration here makes both the accountant's epsilon and the contract's at most the share.

Example:
    >>> z = calibrate_noise_multiplier(2.0, sample_rate=0.25, steps=400, delta=1e-5)
    >>> accountant_epsilon(z, 0.25, 400, 1e-5) <= 2.0 and contract_epsilon(z, 0.25, 400, 1e-5) <= 2.0
    True
    >>> accountant_epsilon(0.99 * z, 0.25, 400, 1e-5) > 2.0
    True
"""

from __future__ import annotations

import functools
import math
from importlib.metadata import version

from runtime.bundle.accounting import ORDERS, head_epsilon

#: The largest and smallest noise multipliers the calibration searches (the format's bounds on
#: releases.head.noise_multiplier are 0.01 and 1e6).
MIN_MULTIPLIER, MAX_MULTIPLIER = 0.01, 1e6
#: How close the calibration brackets z (relative): the returned z is the bracket's safe end.
RELATIVE_TOLERANCE = 1e-6
#: Relative tolerance of OpenDP's map against the model Delta^2 / (2 sigma^2).
MAP_TOLERANCE = 1e-9


class AccountingError(ValueError):
    """No noise multiplier in range meets the share, or the noise library's map disagrees
    with the accountant's model of a step."""


@functools.lru_cache(maxsize=1)
def accountant_name() -> str:
    """The accountant in words, as the bundle states it (releases.head.accountant).

    Example:
        >>> accountant_name()
        'dp-accounting 0.6.0 RdpAccountant (add or remove one record), Poisson-sampled Gaussian composed over the steps, orders 2..256'
    """
    return (f"dp-accounting {version('dp-accounting')} RdpAccountant (add or remove one record), Poisson-sampled "
            f"Gaussian composed over the steps, orders {ORDERS[0]}..{ORDERS[-1]}")


def accountant_epsilon(noise_multiplier: float, sample_rate: float, steps: int, delta: float) -> float:
    """dp-accounting's epsilon for ``steps`` Poisson-sampled Gaussian steps at ``delta``."""
    import dp_accounting
    from dp_accounting import rdp

    acc = rdp.RdpAccountant(orders=list(ORDERS))
    gaussian = dp_accounting.GaussianDpEvent(float(noise_multiplier))
    step = dp_accounting.PoissonSampledDpEvent(float(sample_rate), gaussian)
    acc.compose(dp_accounting.SelfComposedDpEvent(step, int(steps)))
    return float(acc.get_epsilon(float(delta)))


def contract_epsilon(noise_multiplier: float, sample_rate: float, steps: int, delta: float) -> float:
    """The contract's bound (runtime.bundle.accounting.head_epsilon), which readers recompute."""
    return head_epsilon(float(noise_multiplier), float(sample_rate), int(steps), float(delta))


def epsilon_bound(noise_multiplier: float, sample_rate: float, steps: int, delta: float) -> float:
    """The larger of the accountant's and the contract's epsilon: what a share must cover."""
    return max(accountant_epsilon(noise_multiplier, sample_rate, steps, delta),
               contract_epsilon(noise_multiplier, sample_rate, steps, delta))


def calibrate_noise_multiplier(epsilon: float, *, sample_rate: float, steps: int, delta: float) -> float:
    """The least noise multiplier z (within RELATIVE_TOLERANCE, rounded toward more noise) whose
    `epsilon_bound` is at most ``epsilon``: bisection on log z (epsilon falls as z grows).

    Every input is public (the share of epsilon, delta, and q and T from the released noisy
    count), so z is too.
    """
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise AccountingError(f"the head's epsilon must be positive and finite, got {epsilon}")
    fits = lambda z: epsilon_bound(z, sample_rate, steps, delta) <= epsilon  # noqa: E731
    if not fits(MAX_MULTIPLIER):
        raise AccountingError(f"no noise multiplier up to {MAX_MULTIPLIER:g} gives epsilon {epsilon:g} at delta "
                              f"{delta:g} over {steps} steps of sample rate {sample_rate:g}")
    if fits(MIN_MULTIPLIER):
        return MIN_MULTIPLIER
    lo, hi = MIN_MULTIPLIER, MAX_MULTIPLIER  # fits(hi), not fits(lo)
    while hi / lo > 1 + RELATIVE_TOLERANCE:
        mid = math.sqrt(lo * hi)
        if fits(mid):
            hi = mid
        else:
            lo = mid
    return hi


def zcdp_rho(sensitivity_l2: int, noise_scale: float) -> float:
    """The accountant's model of one step without sampling: rho = Delta^2 / (2 sigma^2)."""
    return float(sensitivity_l2) ** 2 / (2.0 * float(noise_scale) ** 2)


def check_step_map(rho_from_library: float, sensitivity_l2: int, noise_scale: float) -> None:
    """Refuse noise whose library map states another rho than the accountant's model.

    Example:
        >>> check_step_map(0.5, 2, 2.0)
        >>> check_step_map(0.6, 2, 2.0)
        Traceback (most recent call last):
        ...
        exporter.accountant.AccountingError: the noise library states rho 0.6 for one step, the accountant models 0.5
    """
    model = zcdp_rho(sensitivity_l2, noise_scale)
    if not abs(float(rho_from_library) - model) <= MAP_TOLERANCE * model:
        raise AccountingError(f"the noise library states rho {rho_from_library:g} for one step, the accountant "
                              f"models {model:g}")
