"""Test-only noise sources, passed through the explicit `noise_for_tests` hook.

They let a test pin the noise (to check counting, clipping and hashing exactly) without any
product code path being able to skip OpenDP: bundles built through them say in their privacy
facts that they are not differentially private.
"""

from __future__ import annotations

import numpy as np


class ConstantNoise:
    """Adds the same integer to every cell (0: the exact counts)."""

    def __init__(self, value: int = 0):
        self.value = value

    def facts(self) -> dict:
        return {"noise_library": "tests", "noise_library_version": "0", "noise_source": f"constant {self.value}"}

    def epsilon_spent(self, scale: float, sensitivity: int) -> float:
        return sensitivity / scale

    def add_noise(self, counts: np.ndarray, scale: float) -> np.ndarray:
        return counts.astype(np.int64) + self.value


class OverspendingNoise(ConstantNoise):
    """Claims to cost more epsilon than the scale allows: release must refuse it."""

    def epsilon_spent(self, scale: float, sensitivity: int) -> float:
        return 2 * sensitivity / scale


# --------------------------------------------------------------------------- planted bugs
# Broken noise sources for the DP audit (tests/test_dp_audit.py): each is a classic
# implementation mistake that the audit must catch. They live here, never in exporter/.


class HalvedScaleNoise:
    """Real OpenDP noise at half the stated scale (T/(2 epsilon)), while claiming the full
    budget: the bug of dividing by 2 epsilon, or of forgetting that one record touches T cells."""

    def __init__(self) -> None:
        from exporter.noise import OpenDPDiscreteLaplace

        self._real = OpenDPDiscreteLaplace()

    def facts(self) -> dict:
        return self._real.facts()

    def epsilon_spent(self, scale: float, sensitivity: int) -> float:
        return sensitivity / scale  # the claim; the noise below does not honour it

    def add_noise(self, counts: np.ndarray, scale: float) -> np.ndarray:
        return self._real.add_noise(counts, scale / 2)


class NonEmptyOnlyNoise(HalvedScaleNoise):
    """Real OpenDP noise at the right scale, but only on non-empty cells: an empty bucket
    stays exactly 0, so the release shows which buckets hold records."""

    def add_noise(self, counts: np.ndarray, scale: float) -> np.ndarray:
        noisy = self._real.add_noise(counts, scale)
        return np.where(counts > 0, noisy, 0)


class ConstantSeedNoise(HalvedScaleNoise):
    """Discrete Laplace of the right scale from numpy's PCG64 seeded with a constant: every
    release draws the same noise, which anyone with the code can subtract."""

    SEED = 20240501

    def add_noise(self, counts: np.ndarray, scale: float) -> np.ndarray:
        rng = np.random.default_rng(self.SEED)
        p = 1 - np.exp(-1 / scale)  # difference of two geometrics is discrete Laplace(scale)
        noise = rng.geometric(p, counts.shape) - rng.geometric(p, counts.shape)
        return counts.astype(np.int64) + noise


class ScaleIgnoresUnitNoise(HalvedScaleNoise):
    """Per-person release whose scale forgot the K records a person may have: noise at
    T/epsilon instead of K*T/epsilon, while claiming the full budget."""

    def __init__(self, records_per_unit: int) -> None:
        super().__init__()
        self.k = records_per_unit

    def add_noise(self, counts: np.ndarray, scale: float) -> np.ndarray:
        return self._real.add_noise(counts, scale / self.k)


# --------------------------------------------------------------------------- planted bugs: class statistics
# Broken releases of the class statistics for the audit in tests/test_dp_audit.py. Each
# composes the product's own pieces (ClassSumCounter, PrivacyBudget) the way a classic
# implementation mistake would; none of them is reachable from exporter/.


def class_sums_with_the_float_bound(counter, budget):
    """The sums' sensitivity one grid step short of what a clipped record can reach: the bound
    of floor(100 * B) in floating point, under a record that truncates to the full clip."""
    from exporter.class_stats import QUANTUM, SUMS_MECHANISM

    return budget.release("class_sums", counter.sums, sensitivity=counter.steps - 1, mechanism=SUMS_MECHANISM,
                          grid=QUANTUM, clip_l1=counter.clip_l1)


def class_sums_in_embedding_units(counter, budget):
    """The sensitivity stated in embedding units (the clip, rounded up to 1) while the sums are
    on the 1/100 grid: noise 100 times too small for a clip of 1."""
    from exporter.class_stats import QUANTUM, SUMS_MECHANISM

    return budget.release("class_sums", counter.sums, sensitivity=max(1, -(-counter.steps // QUANTUM)),
                          mechanism=SUMS_MECHANISM, grid=QUANTUM, clip_l1=counter.clip_l1)


class UnclippedCounter:
    """A class-sums counter that quantizes records without clipping them: the bug of clipping
    after the noise (or never), whose release still states the clipped sensitivity."""

    def __init__(self, basis, classes, clip_l1):
        from exporter.class_stats import ClassSumCounter

        clipped = ClassSumCounter(basis, classes, clip_l1)
        self.basis, self.steps, self.clip_l1, self.sums = basis, clipped.steps, clipped.clip_l1, clipped.sums

    def add(self, embeddings, labels):
        from exporter.class_stats import QUANTUM

        np.add.at(self.sums, labels, np.trunc(self.basis.project(embeddings) * QUANTUM).astype(np.int64))


class CountsOnlyWhereRecords(HalvedScaleNoise):
    """Real OpenDP noise at the right scale on the class counts, but none on a class without
    records: its count is released as exactly 0, which says no record has that label."""

    def add_noise(self, counts: np.ndarray, scale: float) -> np.ndarray:
        return np.where(counts > 0, self._real.add_noise(counts, scale), 0)


# --------------------------------------------------------------------------- the head (--delta)
# A test-only Gaussian source (the `gaussian_for_tests` hook) and planted bugs of the head's
# step for the audit in tests/test_head.py; none of them is reachable from exporter/.


class ConstantGaussian:
    """The Gaussian hook pinned: adds the same integer to every cell (0: the exact sums); its
    map states the continuous Gaussian's rho, as OpenDP's does."""

    def __init__(self, value: int = 0):
        self.value = value

    def facts(self) -> dict:
        return {"noise_library": "tests", "noise_library_version": "0", "noise_source": f"constant {self.value}"}

    def rho(self, sigma: float, sensitivity_l2: int) -> float:
        return sensitivity_l2 ** 2 / (2 * sigma ** 2)

    def add_noise(self, values: np.ndarray, sigma: float) -> np.ndarray:
        return np.asarray(values, np.int64) + self.value


class MisstatedGaussian(ConstantGaussian):
    """A Gaussian whose privacy map states another rho than the accountant's model: the budget
    must refuse to issue steps with it."""

    def rho(self, sigma: float, sensitivity_l2: int) -> float:
        return 1.5 * super().rho(sigma, sensitivity_l2)


class HalvedGaussianNoise:
    """Real OpenDP discrete Gaussian at half the accounted standard deviation, while its map
    states the full one: the bug of noise_multiplier x clip in the wrong units, or of a stray 2."""

    def __init__(self) -> None:
        from exporter.noise import OpenDPDiscreteGaussian

        self._real = OpenDPDiscreteGaussian()

    def facts(self) -> dict:
        return self._real.facts()

    def rho(self, sigma: float, sensitivity_l2: int) -> float:
        return self._real.rho(sigma, sensitivity_l2)  # the claim; the noise below does not honour it

    def add_noise(self, values: np.ndarray, sigma: float) -> np.ndarray:
        return self._real.add_noise(values, sigma / 2)


def unclipped_integer_gradients(features, labels, weights, bias, *, clip_l2, grid):
    """The head's integer gradients without the clip (and without the integer bound): the bug
    of clipping the batch's mean instead of each record, or of clipping after the noise."""
    f = np.asarray(features, np.float64)
    logits = f @ np.asarray(weights, np.float64).T + bias
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    r = p / p.sum(axis=1, keepdims=True)
    r[np.arange(len(f)), labels] -= 1.0
    a = np.concatenate([f, np.ones((len(f), 1))], axis=1)
    return np.trunc(grid * r[:, :, None] * a[:, None, :]).astype(np.int64)
