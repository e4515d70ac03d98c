"""The vote tables: exact counts per table, bucket and class, and their noisy release.

Algorithm 1 of the reference paper, with integer noise. A record adds 1 to one cell in each of
the T tables, so the L1 sensitivity of the whole (T, 2**H, C) table set under add/remove-one-
record is T (K*T for a person with up to K records: the budget multiplies), and discrete
Laplace noise of scale T over the tables' epsilon on every cell, empty buckets included, so
which buckets are occupied is hidden too, makes the release pure DP. Clipping the noisy
values to int16 afterwards is post-processing and costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from exporter.privacy import PrivacyBudget
from runtime.bundle.schema import Key

INT16_MIN, INT16_MAX = -(2**15), 2**15 - 1

MECHANISM = ("discrete Laplace (two-sided geometric) noise added independently to every cell of the "
             "T x 2^H x C vote tables, empty buckets included")
POST_PROCESSING = f"noisy votes clipped to int16 [{INT16_MIN}, {INT16_MAX}]"


class VoteCounter:
    """Exact dense counts, shape (tables, 2**bits, classes), int32 (never released as they are).

    One record adds exactly 1 to one class of one bucket in every table, which is what bounds
    the L1 sensitivity of the whole table set by the number of tables.

    Example:
        >>> c = VoteCounter(tables=2, bits=1, classes=3)
        >>> c.add(np.array([[0, 1]]), np.array([2]))
        >>> c.counts[:, :, 2].tolist()
        [[1, 0], [0, 1]]
    """

    def __init__(self, tables: int, bits: int, classes: int):
        self.tables, self.buckets, self.classes = tables, 2**bits, classes
        self.counts = np.zeros((tables, self.buckets, classes), dtype=np.int32)

    def add(self, buckets: np.ndarray, labels: np.ndarray) -> None:
        """Count records: ``buckets`` (n, tables) bucket ids, ``labels`` (n,) class indices."""
        buckets = np.asarray(buckets, dtype=np.int64)
        labels = np.asarray(labels, dtype=np.int64)
        if buckets.shape != (len(labels), self.tables):
            raise ValueError(f"buckets must be (n, {self.tables}), got {buckets.shape}")
        if len(labels) and (labels.min() < 0 or labels.max() >= self.classes
                            or buckets.min() < 0 or buckets.max() >= self.buckets):
            raise ValueError("bucket id or class index out of range")
        table = np.arange(self.tables, dtype=np.int64)[None, :]
        flat = (table * self.buckets + buckets) * self.classes + labels[:, None]
        np.add.at(self.counts.reshape(-1), flat.ravel(), 1)


@dataclass(frozen=True)
class VoteRelease:
    """Noisy int16 vote tables. ``clipped_cells`` counts noisy values outside int16: computed
    from the noisy values (post-processing), for the exporter's console, not the bundle."""

    votes: np.ndarray
    clipped_cells: int


def release_votes(counts: np.ndarray, budget: PrivacyBudget) -> VoteRelease:
    """Noise of scale K*T over the tables' share of epsilon on every cell, then int16 clipping.

    Example:
        >>> budget = PrivacyBudget(1.0)                                  # doctest: +SKIP
        >>> release_votes(np.zeros((4, 8, 2), np.int32), budget).votes.dtype   # doctest: +SKIP
        dtype('int16')
    """
    if counts.ndim != 3:
        raise ValueError(f"counts must be (tables, buckets, classes), got shape {counts.shape}")
    if counts.min(initial=0) < 0:
        raise ValueError("counts must be non-negative")
    noisy = budget.release(Key.VOTES, counts, sensitivity=int(counts.shape[0]), mechanism=MECHANISM)
    clipped = int(np.count_nonzero((noisy < INT16_MIN) | (noisy > INT16_MAX)))
    budget.declare_post_processing(POST_PROCESSING)
    return VoteRelease(votes=np.clip(noisy, INT16_MIN, INT16_MAX).astype(np.int16), clipped_cells=clipped)
