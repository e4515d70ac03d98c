"""Noisy per-class sums and counts of the embeddings, in the public subspace.

One of the two statistics a default bundle releases (the vote tables are the other). They
give the aligned hashing its directions and the runtime its centroid scores.

Sensitivity. Each record's projected embedding z = P (x - origin) is put on an integer grid
of QUANTUM steps per unit and clipped there, to L1 norm at most S = round(QUANTUM * B) grid
steps (B the clip in embedding units): the row is scaled down to grid L1 <= S and each
coordinate truncated toward zero, which only shrinks it, so the integer row's L1 is at most S
exactly, for every B. Each count is kept on a grid of COUNT_STEPS per record (a count weighs
COUNT_STEPS / QUANTUM = 1/4 of a unit). Adding or removing one record changes its class's sum
by at most S and its class's count by COUNT_STEPS in L1, so the whole release has integer L1
sensitivity S + COUNT_STEPS (times K when a person may contribute K records: the budget
multiplies), and discrete Laplace noise of that scale over epsilon_1 on every coordinate
(every class, also classes with no records) is pure epsilon_1-DP.

The counts weigh 1/4 because the sums carry the signal and the counts only scale it
(docs/accuracy.md has the measurements).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from exporter.privacy import PrivacyBudget
from exporter.public_basis import PublicBasis
from runtime.bundle.schema import ClassStats, Release, Statistic
from runtime.scoring import clip_l1 as clip_to_l1

#: Grid steps per unit of the projected embedding: 0.01 resolution, far below the noise, and
#: int32 sums hold about 7 million records per class at the largest clip.
QUANTUM = 100
#: Grid steps per record in the counts (a count weighs COUNT_STEPS / QUANTUM of a unit).
COUNT_STEPS = 25
DEFAULT_CLIP_L1 = 5.0

MECHANISM = ("discrete Laplace noise on every coordinate of the per-class sums of the clipped, projected "
             f"embeddings (integer grid of 1/{QUANTUM}) and on every class count (weighted "
             f"{Fraction(COUNT_STEPS, QUANTUM)}: {COUNT_STEPS} grid steps per record)")


def clip_steps(clip_l1: float) -> int:
    """The L1 clip in grid steps: QUANTUM * clip_l1 rounded to the nearest step (at least 1).

    Example:
        >>> clip_steps(5.0), clip_steps(1.13)
        (500, 113)
        >>> clip_steps(0.004)
        Traceback (most recent call last):
        ...
        ValueError: the L1 clip must be at least one grid step (1/100), got 0.004
    """
    steps = round(float(clip_l1) * QUANTUM) if np.isfinite(clip_l1) else 0
    if not clip_l1 > 0 or steps < 1:
        raise ValueError(f"the L1 clip must be at least one grid step (1/{QUANTUM}), got {clip_l1}")
    return int(steps)


def clip_and_quantize(z: np.ndarray, steps: int) -> np.ndarray:
    """Integer grid rows of ``z`` (embedding units) with L1 norm at most ``steps`` each.

    Rows are scaled down to grid L1 <= steps, then truncated toward zero: truncation only
    shrinks each coordinate, so the integer L1 cannot exceed the scaled row's (which float
    rounding keeps within far less than one step of ``steps``).

    Example:
        >>> clip_and_quantize(np.array([[3.0, -4.0], [0.001, 0.0]]), 100)      # L1 7 -> 1 unit
        array([[ 42, -57],
               [  0,   0]])
    """
    q = np.trunc(clip_to_l1(np.asarray(z, np.float64) * QUANTUM, steps)).astype(np.int64)
    if len(q) and int(np.abs(q).sum(axis=1).max()) > steps:  # an invariant: the proof above
        raise RuntimeError("a clipped record exceeds the class statistics' sensitivity; nothing was released")
    return q


class ClassStatsCounter:
    """Exact clipped sums and counts, accumulated chunk by chunk (never released as they are).

    Example:
        >>> from exporter.public_basis import PublicBasis
        >>> c = ClassStatsCounter(PublicBasis(np.zeros(2, np.float32), np.eye(2, dtype=np.float32)), classes=2,
        ...                       clip_l1=1.0)
        >>> c.add(np.array([[3.0, -4.0]]), np.array([1]))
        >>> c.sums.tolist(), c.counts.tolist()
        ([[0, 0], [42, -57]], [0, 1])
    """

    def __init__(self, basis: PublicBasis, classes: int, clip_l1: float = DEFAULT_CLIP_L1):
        self.basis, self.classes = basis, classes
        self.steps = clip_steps(clip_l1)
        self.sums = np.zeros((classes, basis.dim), np.int64)
        self.counts = np.zeros(classes, np.int64)

    @property
    def clip_l1(self) -> float:
        """The clip in embedding units, exactly as the records were clipped."""
        return self.steps / QUANTUM

    def add(self, embeddings: np.ndarray, labels: np.ndarray) -> None:
        q = clip_and_quantize(self.basis.project(embeddings), self.steps)
        np.add.at(self.sums, labels, q)
        self.counts += np.bincount(labels, minlength=self.classes)

    def merge(self, other: "ClassStatsCounter") -> None:
        """Add another counter's exact totals (a partition's, on the Ray engine)."""
        self.sums += other.sums
        self.counts += other.counts


@dataclass(frozen=True)
class ClassStatsRelease:
    """Noisy sums (classes, k) and counts (classes,), in units of the projected embedding."""

    sums: np.ndarray
    counts: np.ndarray

    def for_bundle(self, basis: PublicBasis) -> ClassStats:
        """What the bundle (and the runtime's Scorer) holds: the release with its public basis."""
        return ClassStats(origin=basis.origin, projection=basis.projection,
                          sums=self.sums.astype(np.float32), counts=self.counts.astype(np.float32))


def release_class_stats(counter: ClassStatsCounter, budget: PrivacyBudget) -> ClassStatsRelease:
    """Noise on every sum coordinate and count, through the budget (see the module doc).

    Example:
        >>> r = release_class_stats(counter, budget)                 # doctest: +SKIP
        >>> r.sums.shape, budget.privacy_facts()["releases"][0]["sensitivity_l1"]   # doctest: +SKIP
        ((4, 128), 525)
    """
    flat = np.concatenate([counter.sums.reshape(-1), counter.counts * COUNT_STEPS])
    c, d = counter.sums.shape
    noisy = budget.release(Statistic.CLASS_STATS, flat, sensitivity=counter.steps + COUNT_STEPS, mechanism=MECHANISM,
                           facts={Release.GRID: QUANTUM, Release.COUNT_GRID: COUNT_STEPS,
                                  Release.CLIP_L1: counter.clip_l1, Release.DIM: d,
                                  Release.NOTE: f"sums are released in grid units of 1/{QUANTUM}, counts in units of "
                                                f"1/{COUNT_STEPS} record; the bundle stores both divided back "
                                                "(embedding units, records); sensitivity and scale are in grid units"})
    noisy = noisy.astype(np.float64)
    return ClassStatsRelease(sums=noisy[:c * d].reshape(c, d) / QUANTUM, counts=noisy[c * d:] / COUNT_STEPS)
