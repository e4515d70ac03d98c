"""The privacy budget of one build: the one place epsilon is split, noise is drawn and the
bundle's privacy facts are written.

A build creates one `PrivacyBudget` from the user's epsilon, the neighbour relation (one
record, or one person with at most K records) and a plan of shares (which statistic gets
which fraction of epsilon). Each release asks it for noise on its exact integer values,
stating its mechanism and its integer L1 sensitivity per record; the budget multiplies the
sensitivity by K, takes the statistic's share, checks with the noise library's own privacy
map that the scale costs no more than the share, adds the noise and records what was spent.
Exact values beyond the noise domain are clamped into it, never refused: a refusal would be
an abort that depends on the records.
Shares add up to epsilon by sequential composition, so the bundle is epsilon-DP whatever
else the build does with the released values (post-processing). At the end the budget alone
writes the bundle's ``privacy`` map from what was actually spent.

The opt-in head (``--delta``, exporter.head) is the one (epsilon, delta) release: its share of
epsilon buys T noisy gradient sums (`PrivacyBudget.noisy_steps`), issued only once both the
accountant and the contract bound their epsilon by the share at the budget's delta, and once
OpenDP's privacy map for one step equals the accountant's model of it (exporter.accountant). A
head bundle is then (epsilon, delta)-DP by basic composition: the pure releases' epsilons and
the head's add up to epsilon, and delta is the head's.

Example:
    >>> budget = PrivacyBudget(1.0, shares={"class_sums": 0.8, "votes": 0.2})
    >>> noisy = budget.release("class_sums", np.zeros(5, np.int32), sensitivity=4, mechanism="noise on every sum")
    >>> noisy.shape, round(budget.remaining, 12), budget.share("votes")
    ((5,), 0.2, 0.19999999999999996)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from exporter import accountant
from exporter.noise import GaussianNoiseSource, NoiseSource, OpenDPDiscreteGaussian, OpenDPDiscreteLaplace
from runtime.bundle import wording
from runtime.bundle.schema import FIELDS_BY_PATH, PRIVACY_RTOL, Key, ReleaseFacts

#: Share of epsilon the class counts get; the class sums get the rest, less the vote tables'
#: share when a bundle has them (docs/accuracy.md measures the split).
COUNTS_SHARE = 0.05
#: Share of epsilon a person-level head's noisy number of persons gets: its rule reads that N
#: only through q, T, the step's normalisation and delta < 1 / N, where a few percent of error
#: changes little; at epsilon 1 the noise's scale is 50 persons, 5% of a thousand.
UNIT_COUNT_SHARE = 0.02
#: Largest share the vote tables may take (the sums keep at least a tenth of epsilon).
MAX_VOTES_SHARE = 0.85
#: Largest absolute exact value the i32 noise domain takes: leaves room for the noise. Larger
#: exact values are clamped to it (`clamp_exact`).
MAX_EXACT_VALUE = (2**31 - 1) // 2

TEST_HOOK = "NOT differentially private"
#: The largest delta a head may have (the format's bound on privacy.delta); it must also be
#: below 1 / N, N the released noisy record count (exporter.head). The smallest is the format's.
MAX_DELTA = 1e-3
MIN_DELTA = FIELDS_BY_PATH["releases.head.delta"].low


class BudgetError(ValueError):
    """A release would overspend the budget, or the budget's plan is not a valid split."""


def clamp_exact(values: np.ndarray) -> tuple[np.ndarray, int]:
    """``values`` clamped to +-MAX_EXACT_VALUE, as int32, and how many cells were clamped.

    Clamping each cell to an interval is 1-Lipschitz in every coordinate: two neighbouring
    datasets' clamped values are no farther apart in L1 than their exact values, so the
    release's stated sensitivity still holds and the noise still pays for it. Refusing
    instead would stop the build on a property of the records (a data-dependent abort).

    Example:
        >>> clamped, n = clamp_exact(np.array([3, -2**40, 2**40], np.int64))
        >>> clamped.tolist() == [3, -MAX_EXACT_VALUE, MAX_EXACT_VALUE], n
        (True, 2)
    """
    # max and min, not abs: abs(INT64_MIN) wraps to a negative number and would pass.
    over = int(np.count_nonzero((values > MAX_EXACT_VALUE) | (values < -MAX_EXACT_VALUE)))
    return np.clip(values, -MAX_EXACT_VALUE, MAX_EXACT_VALUE).astype(np.int32), over


def check_epsilon(epsilon: float) -> float:
    """Epsilon as a positive finite float, or ValueError naming the bad value.

    Example:
        >>> check_epsilon(2)
        2.0
    """
    eps = float(epsilon)
    if not (eps > 0 and math.isfinite(eps)):
        raise ValueError(f"epsilon must be a positive finite number, got {epsilon}")
    return eps


@dataclass(frozen=True)
class NeighbourRelation:
    """Who the guarantee protects: one record (K = 1), or one person with at most K records,
    persons identified by ``unit_column``. Every release's sensitivity is K times its
    per-record sensitivity.

    Example:
        >>> NeighbourRelation.person("user_id", 3).facts()["privacy_unit"]
        'one person, up to 3 records'
    """

    unit_column: str | None = None
    max_records: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.max_records, int) or self.max_records < 1:
            raise BudgetError(f"max records per unit must be an integer >= 1, got {self.max_records!r}")
        if self.unit_column is None and self.max_records != 1:
            raise BudgetError("max records per unit needs a unit column: without one, each record is its own unit")

    @classmethod
    def record(cls) -> "NeighbourRelation":
        return cls()

    @classmethod
    def person(cls, unit_column: str, max_records: int) -> "NeighbourRelation":
        return cls(unit_column, max_records)

    def facts(self) -> dict[str, Any]:
        """How the bundle names one unit of privacy: the contract's wording for K
        (runtime.bundle.wording), which every reader checks against K."""
        k = None if self.unit_column is None else self.max_records
        return {Key.MAX_RECORDS_PER_UNIT: self.max_records,
                Key.NEIGHBOUR_RELATION: wording.neighbour_relation(k, repr(self.unit_column)),
                Key.PRIVACY_UNIT: wording.privacy_unit(k)}


def check_delta(delta: float) -> float:
    """Delta as a float in (0, MAX_DELTA], or ValueError naming the bad value.

    Example:
        >>> check_delta(1e-5)
        1e-05
        >>> check_delta(0.01)
        Traceback (most recent call last):
        ...
        ValueError: delta must be above 0 and at most 0.001, got 0.01
    """
    d = float(delta)
    if not (0 < d <= MAX_DELTA):
        raise ValueError(f"delta must be above 0 and at most {MAX_DELTA:g}, got {delta}")
    if d < MIN_DELTA:
        raise ValueError(f"delta must be at least {MIN_DELTA:g} (the format's least), got {delta}")
    return d


def head_shares(person: bool = False) -> dict[str, float]:
    """The plan of a head build (``--delta``): the class counts (their share, released first:
    their noisy total gives the head's rule its public inputs), with a person as the unit the
    noisy number of persons (``unit_count``, UNIT_COUNT_SHARE: the person-level rule's N), then
    the head with the rest.

    Example:
        >>> head_shares()
        {'class_counts': 0.05, 'head': 0.95}
        >>> head_shares(person=True)
        {'class_counts': 0.05, 'unit_count': 0.02, 'head': 0.93}
    """
    if not person:
        return {Key.CLASS_COUNTS: COUNTS_SHARE, Key.HEAD: round(1.0 - COUNTS_SHARE, 12)}
    return {Key.CLASS_COUNTS: COUNTS_SHARE, Key.UNIT_COUNT: UNIT_COUNT_SHARE,
            Key.HEAD: round(1.0 - COUNTS_SHARE - UNIT_COUNT_SHARE, 12)}


@dataclass(frozen=True)
class GaussianFacts:
    """What the head's noisy steps were issued at (the bundle's releases.head facts, without
    the trained values)."""

    statistic: str
    epsilon: float
    delta: float
    sensitivity_l2: int
    noise_scale: float
    noise_multiplier: float
    sample_rate: float
    steps: int
    accountant: str
    mechanism: str


class NoisySteps:
    """The T noisy sums the budget issued for the head: each call adds the discrete Gaussian of
    the accounted scale to one step's exact integer gradient sum; a call beyond T is refused
    (it would spend more than was accounted)."""

    def __init__(self, facts: GaussianFacts, source: GaussianNoiseSource):
        self.facts, self._source, self.used = facts, source, 0

    def __call__(self, sums: np.ndarray) -> np.ndarray:
        if self.used >= self.facts.steps:
            raise BudgetError(f"{self.facts.statistic}: all {self.facts.steps} accounted noisy steps were used")
        sums = np.asarray(sums)
        if sums.dtype.kind not in "iu":
            raise BudgetError(f"{self.facts.statistic}: noise is added to integers only, got {sums.dtype}")
        self.used += 1
        try:
            return np.asarray(self._source.add_noise(sums.astype(np.int64), self.facts.noise_scale), dtype=np.int64)
        except Exception as exc:  # the library's message may quote the exact (private) values
            raise BudgetError(f"{self.facts.statistic}: the noise library failed ({type(exc).__name__}); its message "
                              "is not shown because it may quote exact private values") from None


def default_shares(hashing: str, votes_share: float = 0.0) -> dict[str, float]:
    """The plan of a build, in release order: the class counts, the class sums, and vote
    tables hashed along them when ``votes_share`` > 0; random hashing releases only the vote
    tables.

    Example:
        >>> default_shares("aligned"), default_shares("random")
        ({'class_counts': 0.05, 'class_sums': 0.95}, {'votes': 1.0})
        >>> default_shares("aligned", 0.1)
        {'class_counts': 0.05, 'class_sums': 0.85, 'votes': 0.1}
    """
    if hashing == "random":
        return {Key.VOTES: 1.0}
    if not 0 <= votes_share <= MAX_VOTES_SHARE:
        raise BudgetError(f"the vote tables' share must be between 0 and {MAX_VOTES_SHARE}, got {votes_share}")
    plan = {Key.CLASS_COUNTS: COUNTS_SHARE, Key.CLASS_SUMS: round(1.0 - COUNTS_SHARE - votes_share, 12)}
    if votes_share > 0:
        plan[Key.VOTES] = float(votes_share)
    return plan


class PrivacyBudget:
    """One epsilon, spent in planned shares by sequential composition (see the module doc).

    ``shares`` maps each statistic to its fraction of epsilon, in release order; fractions
    must be positive and add up to 1. The last planned release gets exactly what is left, so
    the shares add up to epsilon without float drift.
    ``noise_for_tests`` is the test-only hook that pins the noise: every fact the budget
    writes then says the release is not differentially private; ``gaussian_for_tests`` is the
    same hook for the head's Gaussian noise.
    ``delta`` (default 0: pure epsilon-DP) is the head's delta, for a plan with a head only.
    """

    def __init__(self, epsilon: float, relation: NeighbourRelation | None = None, *,
                 shares: Mapping[str, float] | None = None,
                 noise_for_tests: NoiseSource | None = None, delta: float = 0.0,
                 gaussian_for_tests: GaussianNoiseSource | None = None):
        self.epsilon = check_epsilon(epsilon)
        self.relation = relation or NeighbourRelation.record()
        plan = dict(shares or {Key.VOTES: 1.0})
        if not plan or any(not (f > 0 and math.isfinite(f)) for f in plan.values()):
            raise BudgetError(f"every planned share must be a positive fraction, got {plan}")
        if abs(sum(plan.values()) - 1.0) > 1e-9:
            raise BudgetError(f"the planned shares must add up to the whole epsilon (1.0), got {sum(plan.values())}")
        self.plan = plan
        if (Key.HEAD in plan) != (delta != 0):
            raise BudgetError("a delta above 0 goes with a planned head, and a head needs one (the head is the only "
                              f"(epsilon, delta) release), got delta {delta} for {', '.join(plan)}")
        self.delta = 0.0 if delta == 0 else check_delta(delta)
        if Key.HEAD in plan and (Key.UNIT_COUNT in plan) != (self.relation.max_records > 1):
            raise BudgetError("a head with K above 1 records per person goes with the noisy number of persons "
                              f"(unit_count), and only such a head: got K = {self.relation.max_records} for "
                              f"{', '.join(plan)}")
        self._source: NoiseSource = noise_for_tests if noise_for_tests is not None else OpenDPDiscreteLaplace()
        self._gaussian_source: GaussianNoiseSource = (gaussian_for_tests if gaussian_for_tests is not None
                                                      else OpenDPDiscreteGaussian())
        self._pinned = noise_for_tests is not None or gaussian_for_tests is not None
        self._releases: list[ReleaseFacts] = []
        self._head: GaussianFacts | None = None
        #: Exact values clamped into the noise domain, by statistic: for the builder's console
        #: only (a data-dependent count; never written into the bundle).
        self.clamped: dict[str, int] = {}
        self._public: list[str] = []
        self._post_processing: list[str] = []

    @property
    def spent(self) -> float:
        return float(sum(r.epsilon for r in self._releases)) + (0.0 if self._head is None else self._head.epsilon)

    @property
    def remaining(self) -> float:
        return max(0.0, self.epsilon - self.spent)

    def share(self, statistic: str) -> float:
        """The epsilon ``statistic`` gets: its fraction of epsilon, or, for the last planned
        release, all that is left."""
        if statistic not in self.plan:
            raise BudgetError(f"no share of the budget is planned for {statistic!r} (planned: {', '.join(self.plan)})")
        done = self._done()
        if statistic in done:
            raise BudgetError(f"{statistic!r} was already released: a second release would spend its share twice")
        if set(self.plan) - done == {statistic}:
            return self.epsilon - self.spent
        return self.epsilon * self.plan[statistic]

    def _done(self) -> set[str]:
        return {r.statistic for r in self._releases} | (set() if self._head is None else {self._head.statistic})

    def noise_facts(self) -> dict[str, Any]:
        """What the noise is: library, version and source (marked when a test hook pins it); a
        plan with a head names the discrete Laplace of the pure releases and the head's Gaussian."""
        facts = dict(self._source.facts())
        if Key.HEAD in self.plan:
            gauss = self._gaussian_source.facts()
            facts[Key.NOISE_SOURCE] = (f"{facts.get(Key.NOISE_SOURCE, type(self._source).__name__)} (class counts); "
                                       f"{gauss.get(Key.NOISE_SOURCE, type(self._gaussian_source).__name__)} (head)")
        if self._pinned:
            facts[Key.NOISE_SOURCE] = f"TEST HOOK ({facts.get(Key.NOISE_SOURCE, type(self._source).__name__)}): {TEST_HOOK}"
        return facts

    def release(self, statistic: str, values: np.ndarray, *, sensitivity: int, mechanism: str,
                grid: int | None = None, clip_l1: float | None = None, per_unit: bool = False) -> np.ndarray:
        """Discrete Laplace noise on every one of ``values`` (exact integers), at the scale that
        makes this release ``share(statistic)``-DP; returns the noisy values, int64.

        ``sensitivity`` is the L1 distance one record can move ``values`` (integer grid
        units); the budget multiplies it by the relation's K, unless ``per_unit`` says it is already
        one unit's (a count of units: a person moves it by 1 whatever K). ``grid`` and ``clip_l1`` state
        the class sums' grid and clip in the bundle. Exact values beyond +-MAX_EXACT_VALUE are
        clamped to it (`clamp_exact`: the sensitivity is unchanged); how many is in `clamped`.
        """
        if isinstance(sensitivity, bool) or not isinstance(sensitivity, (int, np.integer)) or sensitivity < 1:
            raise BudgetError(f"{statistic}: the sensitivity must be a positive integer, got {sensitivity!r}")
        values = np.asarray(values)
        if values.dtype.kind not in "iu":
            raise BudgetError(f"{statistic}: noise is added to integers only, got {values.dtype}")
        eps = self.share(statistic)
        if not (eps > 0 and eps <= self.remaining * (1 + PRIVACY_RTOL)):
            raise BudgetError(f"{statistic}: epsilon {eps} is more than the {self.remaining} left of {self.epsilon}")
        total = int(sensitivity) * (1 if per_unit else self.relation.max_records)
        scale = total / eps
        spent = self._source.epsilon_spent(scale, total)
        if spent > eps * (1 + PRIVACY_RTOL):
            raise BudgetError(f"{statistic}: noise of scale {scale} costs epsilon {spent}, more than its share {eps}")
        exact, clamped = clamp_exact(values)
        try:
            noisy = np.asarray(self._source.add_noise(exact, scale), dtype=np.int64)
        except Exception as exc:  # the library's message may quote the exact (private) values
            raise BudgetError(f"{statistic}: the noise library failed ({type(exc).__name__}); its message is not "
                              "shown because it may quote exact private values") from None
        self._releases.append(ReleaseFacts(statistic, eps, total, scale, mechanism, grid,
                                           None if clip_l1 is None else float(clip_l1)))
        if clamped:
            self.clamped[statistic] = clamped
        return noisy

    def noisy_steps(self, statistic: str, *, sensitivity_l2: int, noise_multiplier: float, sample_rate: float,
                    steps: int, mechanism: str) -> NoisySteps:
        """Issue the head's ``steps`` noisy gradient sums for its share of epsilon at the
        budget's delta (exporter.accountant), after three checks: the accountant's epsilon and
        the contract's (runtime.bundle.accounting.head_epsilon, which readers recompute) are at
        most the share, and the noise library's privacy map of one step (zCDP rho at L2
        sensitivity ``sensitivity_l2``) is the accountant's model of it, Delta^2 / (2 sigma^2).

        ``sample_rate`` is the Poisson sampling probability accounted for: the sampler must
        include each record with at most this probability. The noise's standard deviation is
        noise_multiplier x sensitivity_l2, in the sums' integer units.
        """
        if isinstance(sensitivity_l2, bool) or not isinstance(sensitivity_l2, (int, np.integer)) or sensitivity_l2 < 1:
            raise BudgetError(f"{statistic}: the L2 sensitivity must be a positive integer, got {sensitivity_l2!r}")
        if not (0 < sample_rate <= 1 and int(steps) >= 1 and 0 < noise_multiplier < math.inf):
            raise BudgetError(f"{statistic}: needs 0 < sample rate <= 1, steps >= 1 and a positive noise multiplier, "
                              f"got {sample_rate}, {steps}, {noise_multiplier}")
        if self.delta == 0:
            raise BudgetError(f"{statistic}: an (epsilon, delta) release needs the budget's delta")
        eps = self.share(statistic)
        if not (eps > 0 and eps <= self.remaining * (1 + PRIVACY_RTOL)):
            raise BudgetError(f"{statistic}: epsilon {eps} is more than the {self.remaining} left of {self.epsilon}")
        spent = accountant.epsilon_bound(noise_multiplier, sample_rate, int(steps), self.delta)
        if spent > eps:
            raise BudgetError(f"{statistic}: noise multiplier {noise_multiplier} over {steps} steps at sample rate "
                              f"{sample_rate} costs epsilon {spent} at delta {self.delta}, more than its share {eps}")
        sigma = float(noise_multiplier) * int(sensitivity_l2)
        try:
            accountant.check_step_map(self._gaussian_source.rho(sigma, int(sensitivity_l2)), int(sensitivity_l2), sigma)
        except accountant.AccountingError as exc:
            raise BudgetError(f"{statistic}: {exc}") from None
        self._head = GaussianFacts(statistic, eps, self.delta, int(sensitivity_l2), sigma, float(noise_multiplier),
                                   float(sample_rate), int(steps), accountant.accountant_name(), mechanism)
        return NoisySteps(self._head, self._gaussian_source)

    @property
    def head(self) -> GaussianFacts | None:
        """The head's facts once its steps were issued (None without a head)."""
        return self._head

    def declare_public(self, description: str) -> None:
        """Name an input the release used that costs no budget (public, or post-processing of
        a release)."""
        self._public.append(description)

    def declare_post_processing(self, description: str) -> None:
        """Name what was done to released values before they were written (free)."""
        self._post_processing.append(description)

    @property
    def releases(self) -> dict[str, ReleaseFacts]:
        """What was released with pure epsilon-DP, by statistic, in release order (the head's
        facts are `head`); refuses while a planned release is missing (the bundle would state an
        epsilon that was not spent as planned)."""
        done = {r.statistic: r for r in self._releases}
        missing = [s for s in self.plan if s not in self._done()]
        if missing:
            raise BudgetError(f"planned releases not made: {', '.join(missing)}")
        return done

    def privacy_facts(self) -> dict[str, Any]:
        """The bundle's ``privacy`` map (each release's own facts are in `releases`)."""
        composition = wording.composition(self.releases, self._head is not None)  # relation "composition"
        return {
            Key.EPSILON: self.epsilon,
            Key.DELTA: 0.0 if self._head is None else self._head.delta,
            **self.relation.facts(),
            **self.noise_facts(),
            Key.COMPOSITION: composition,
            Key.POST_PROCESSING: "; ".join(self._post_processing) or "none",
            Key.PUBLIC_INPUTS: list(self._public),
        }
