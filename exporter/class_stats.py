"""The class statistics: noisy per-class counts, then noisy per-class sums in a public subspace.

What a default bundle releases, in two releases from one budget (exporter.privacy):

1. ``class_counts``: the number of records of each class. One record changes one count by 1:
   L1 sensitivity 1 (K when a person may contribute K records: the budget multiplies).
2. ``class_sums``: per-class sums of the records' embeddings in the first k coordinates of
   the public task basis (exporter.public_basis), each record put on an integer grid of
   QUANTUM steps per unit and clipped there to L1 norm at most S = round(QUANTUM * B) steps:
   the row is scaled down to grid L1 <= S and each coordinate truncated toward zero, which
   only shrinks it, so the integer row's L1 is at most S exactly, for every B. One record
   enters one class's sum: L1 sensitivity S.

Discrete Laplace noise of scale sensitivity / share on every coordinate, every class included,
makes each release pure DP for its share. k and B are chosen between the two releases from
the released noisy record count N (`choose_subspace`): post-processing of release 1 and
public inputs, so they cost nothing more, and the second release is fixed before it sees a
record. The rule: the sums carry r = epsilon_sums * N / (C * K) records' worth of signal per
class and noise unit, and k grows with r (about r / RECORDS_PER_DIM coordinates, on a grid of
K_STEP, between K_STEP and the embedding size); B is the public clip of those k coordinates
(the vocabulary's median L1 norm there), which clips nearly every sentence, so it acts as a
normalisation. docs/accuracy.md has the measurements behind the rule and its constants.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from exporter.privacy import PrivacyBudget
from exporter.public_basis import PublicBasis
from runtime.rowwise import row_l1
from runtime.bundle.schema import Key

#: Grid steps per unit of the projected embedding: 0.01 resolution, far below the noise.
QUANTUM = 100
#: The subspace rule: about one coordinate per RECORDS_PER_DIM records' worth of signal per
#: class, on a grid of K_STEP coordinates.
RECORDS_PER_DIM = 10.0
K_STEP = 16

COUNTS_MECHANISM = "discrete Laplace noise on every class's record count"
SUMS_MECHANISM = ("discrete Laplace noise on every coordinate of the per-class sums of the clipped embeddings "
                  f"projected on the public task basis (integer grid of 1/{QUANTUM})")


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


def clip_to_l1(z: np.ndarray, bound: float) -> np.ndarray:
    """Rows scaled down to L1 norm at most ``bound``.

    Example:
        >>> clip_to_l1(np.array([[3.0, -4.0], [0.1, 0.2]]), 1.0).round(3).tolist()
        [[0.429, -0.571], [0.1, 0.2]]
    """
    return z * np.minimum(1.0, bound / np.maximum(row_l1(z), 1e-300))


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
    z = np.asarray(z, np.float64)
    if not np.isfinite(z).all():  # NaN would become INT64_MIN, whose absolute value wraps
        raise ValueError("a record's projected embedding is not finite; nothing was released")
    q = np.trunc(clip_to_l1(z * QUANTUM, steps)).astype(np.int64)
    # An invariant (the proof above), checked in float64 so that no sum can wrap.
    if len(q) and float(row_l1(q).max()) > steps:
        raise RuntimeError("a clipped record exceeds the class sums' sensitivity; nothing was released")
    return q


def release_class_counts(counts: np.ndarray, budget: PrivacyBudget) -> np.ndarray:
    """Noisy record counts per class (int32), through the budget.

    Example:
        >>> release_class_counts(np.array([40, 60]), budget)          # doctest: +SKIP
        array([41, 58], dtype=int32)
    """
    noisy = budget.release(Key.CLASS_COUNTS, np.asarray(counts, np.int64), sensitivity=1, mechanism=COUNTS_MECHANISM)
    return _int32(noisy)


UNIT_COUNT_MECHANISM = "discrete Laplace noise on the number of persons with at least one record"


def release_unit_count(persons: int, budget: PrivacyBudget) -> int:
    """The noisy number of persons (a person-level head's N), through the budget: one person
    moves it by 1, whatever K."""
    noisy = budget.release(Key.UNIT_COUNT, np.array([persons], np.int64), sensitivity=1,
                           mechanism=UNIT_COUNT_MECHANISM, per_unit=True)
    return int(_int32(noisy)[0])


def _int32(noisy: np.ndarray) -> np.ndarray:
    """The noisy values as the bundle stores them (noise is drawn in int32: nothing is clipped)."""
    return np.clip(noisy, -(2**31), 2**31 - 1).astype(np.int32)


def noisy_record_count(counts: np.ndarray) -> float:
    """N: the sum of the released noisy class counts, at least 1 (post-processing)."""
    return max(float(np.sum(counts)), 1.0)


def choose_subspace(epsilon_sums: float, counts: np.ndarray, max_records_per_unit: int,
                    basis: PublicBasis) -> tuple[int, float]:
    """(k, B) for the class sums, from their share of epsilon, the released noisy counts and
    public inputs only (see the module doc).

    Example:
        >>> from exporter.public_basis import task_basis
        >>> b = task_basis(np.random.default_rng(0).standard_normal((500, 384)), None)
        >>> [choose_subspace(eps, np.array([1000.0, 1000.0]), 1, b)[0] for eps in (0.01, 0.95, 9.5)]
        [16, 96, 384]
    """
    r = epsilon_sums * noisy_record_count(counts) / (len(counts) * max_records_per_unit)
    k = int(np.clip(K_STEP * np.round(r / RECORDS_PER_DIM / K_STEP), K_STEP, basis.dim))
    return k, basis.clip_for(k)


class ClassSumCounter:
    """Exact clipped, quantized per-class sums in a k-d public basis, accumulated chunk by
    chunk (never released as they are).

    Example:
        >>> from exporter.public_basis import PublicBasis
        >>> c = ClassSumCounter(PublicBasis(np.zeros(2, np.float32), np.eye(2, dtype=np.float32)), classes=2,
        ...                     clip_l1=1.0)
        >>> c.add(np.array([[3.0, -4.0]]), np.array([1]))
        >>> c.sums.tolist()
        [[0, 0], [42, -57]]
    """

    def __init__(self, basis: PublicBasis, classes: int, clip_l1: float):
        self.basis, self.classes = basis, classes
        self.steps = clip_steps(clip_l1)
        self.sums = np.zeros((classes, basis.dim), np.int64)

    @property
    def clip_l1(self) -> float:
        """The clip in embedding units, exactly as the records were clipped."""
        return self.steps / QUANTUM

    def add(self, embeddings: np.ndarray, labels: np.ndarray) -> None:
        np.add.at(self.sums, labels, clip_and_quantize(self.basis.project(embeddings), self.steps))

    def merge(self, other: "ClassSumCounter") -> None:
        """Add another counter's exact totals (a partition's, on the Ray engine)."""
        self.sums += other.sums


def release_class_sums(counter: ClassSumCounter, budget: PrivacyBudget) -> np.ndarray:
    """Noisy per-class sums (classes, k) in grid units (int32), through the budget.

    Example:
        >>> release_class_sums(counter, budget).shape                 # doctest: +SKIP
        (4, 96)
    """
    c, k = counter.sums.shape
    noisy = budget.release(Key.CLASS_SUMS, counter.sums, sensitivity=counter.steps, mechanism=SUMS_MECHANISM,
                           grid=QUANTUM, clip_l1=counter.clip_l1)
    return _int32(noisy).reshape(c, k)


@dataclass(frozen=True)
class ClassStatsRelease:
    """The two releases together: noisy sums (classes, k) in grid units and noisy counts
    (classes,), with the k-d public basis the sums live in."""

    sums_grid: np.ndarray
    counts: np.ndarray
    basis: PublicBasis

    @property
    def sums(self) -> np.ndarray:
        """The noisy sums in embedding units (post-processing)."""
        return self.sums_grid.astype(np.float64) / QUANTUM
