"""Empirical lower bounds on the privacy loss of a release, from many runs on neighbours.

For datasets D and D' = D + {x}, and an event E on the released tables, pure epsilon-DP
requires P[E | D'] <= e^epsilon P[E | D] and the reverse. Running the release n times on
each gives binomial counts of E; Clopper-Pearson intervals turn them into a one-sided
confidence bound, so

    epsilon_lower = ln( lower(P[E | D']) / upper(P[E | D]) )

is, with probability at least 1 - alpha, below the true privacy loss of E, and so below the
stated epsilon of a correct release. A release whose bound exceeds its stated epsilon is not
epsilon-DP (up to the alpha chance of a false alarm). Several events are tried at once; alpha
is split among them (Bonferroni), so the maximum over events keeps the same guarantee.

Events here: "statistic >= k" (and its complement, for the reverse direction) for a range of
thresholds k, where the statistic is the smallest of the released coordinates that x moves,
each measured from where x moves it. For the vote tables that is the min over the tables of
the noisy vote for x's class in x's bucket; for the class statistics, the min of x's sum
coordinate and its class count beyond their values under D'. In the upper tail every one of
those independent Laplace coordinates sits beyond its shifted centre, so the event's loss is
exactly epsilon for a correct release: the audit is tight.

An (epsilon, delta) release (the head's Gaussian step) is audited the same way at a point of its
privacy profile: P[E | D'] <= e^epsilon P[E | D] + delta for every event, so

    epsilon_lower = ln( (lower(P[E | D']) - delta) / upper(P[E | D]) )

(``delta`` of `epsilon_lower_bound`), with (epsilon, delta) a point of the exact profile of the
Gaussian mechanism the accountant models (`gaussian_delta`, Balle and Wang 2018): tighter than
the accountant's Renyi bound, so an audit of a few thousand runs can see a step noisier or
less clipped than stated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from scipy import stats


def clopper_pearson(hits: int, n: int, alpha: float) -> tuple[float, float]:
    """Exact two-sided (1 - alpha) interval for a binomial proportion."""
    lo = 0.0 if hits == 0 else float(stats.beta.ppf(alpha / 2, hits, n - hits + 1))
    hi = 1.0 if hits == n else float(stats.beta.ppf(1 - alpha / 2, hits + 1, n - hits))
    return lo, hi


@dataclass(frozen=True)
class AuditResult:
    epsilon_lower: float  # the largest lower bound over all events tried
    event: str            # which event gave it
    runs: int


def epsilon_lower_bound(stat_d: np.ndarray, stat_dp: np.ndarray, thresholds: Sequence[float],
                        alpha: float, delta: float = 0.0) -> AuditResult:
    """Largest Clopper-Pearson lower bound on the privacy loss over the threshold events.

    ``stat_d`` / ``stat_dp``: the statistic from each run on D / D' (same number of runs);
    ``delta``: the release's delta at the epsilon audited (0: pure DP).
    """
    n = len(stat_d)
    assert len(stat_dp) == n
    events = 2 * len(thresholds)
    a = alpha / events  # Bonferroni over events; each interval is two-sided at level a
    best, where = -math.inf, ""
    for k in thresholds:
        for name, in_d, in_dp in ((f"statistic >= {k}", stat_d >= k, stat_dp >= k),
                                  (f"statistic < {k}", stat_dp < k, stat_d < k)):
            # ratio of the event under the 'more likely' dataset to the 'less likely' one
            lo, _ = clopper_pearson(int(in_dp.sum()), n, a)
            _, hi = clopper_pearson(int(in_d.sum()), n, a)
            if lo - delta > 0:
                bound = math.log((lo - delta) / hi)
                if bound > best:
                    best, where = bound, name
    return AuditResult(best, where, n)


def run_statistic(release: Callable[[np.ndarray], np.ndarray], counts: np.ndarray, cells: np.ndarray,
                  label: int, runs: int) -> np.ndarray:
    """min over tables t of release(counts)[t, cells[t], label], for ``runs`` separate releases.

    Each run is its own call to the release: a bug that repeats noise across releases (a
    constant seed) is only visible that way.
    """
    tables = np.arange(len(cells))
    return run_releases(lambda: release(counts), lambda out: out[tables, cells, label].min(), runs)


def run_releases(release: Callable[[], object], statistic: Callable[[object], float], runs: int) -> np.ndarray:
    """statistic(release()) for ``runs`` separate calls of the release."""
    return np.array([float(statistic(release())) for _ in range(runs)])


def gaussian_delta(epsilon: float, mu: float) -> float:
    """The exact delta at ``epsilon`` of the Gaussian mechanism whose sensitivity is ``mu``
    standard deviations (Balle and Wang 2018, Theorem 8).

    Example:
        >>> round(gaussian_delta(1.0, 1.0), 4)
        0.1269
    """
    return float(stats.norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * stats.norm.cdf(-epsilon / mu - mu / 2))
