"""Exact vote counts per table, bucket and class (Algorithm 1, lines 11-19).

These counts are the private statistic: they never leave the exporter except through
`exporter.release`, which adds noise to every cell.
"""

from __future__ import annotations

import numpy as np


class VoteCounter:
    """Dense counts, shape (tables, 2**bits, classes), int32.

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
