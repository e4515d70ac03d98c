"""SimHash bucket ids: the one hashing function both exporter and runtime use.

Bit order (the contract with the phone ports, see docs/bundle-format.md): for table t and
hyperplane h = 0..H-1 (the paper's h = 1..H), bit b_h = 1 iff <x, r_{t,h}> > 0, and the
bucket id is sum_h b_h * 2**h. Hyperplane 0 is the least significant bit. A dot product of
exactly 0 gives bit 0 (the paper's Algorithm 1 uses a strict '>').

A bundle may add an offset per hyperplane (aligned hashing puts the hyperplanes through the
data's centre): bit b_h = 1 iff <x, r_{t,h}> > o_{t,h}; without offsets o = 0.

Dot products are taken in float64 from the stored float32 values, summed over the dimensions
in ascending order (runtime.rowwise): an embedding's buckets depend on it alone, never on the
other rows of its block, and the Java and TypeScript runtimes, summing in the same order,
compute the same bits.
"""

from __future__ import annotations

import numpy as np

from runtime.rowwise import row_products


class SimHasher:
    """Maps embeddings to one bucket id per table.

    Example:
        >>> planes = np.eye(3, dtype=np.float32)[None, :2, :]     # 1 table, 2 bits, 3-d
        >>> SimHasher(planes).buckets(np.array([[0.5, -1.0, 0.0]], dtype=np.float32))
        array([[1]])
    """

    def __init__(self, hyperplanes: np.ndarray, offsets: np.ndarray | None = None):
        if hyperplanes.ndim != 3:
            raise ValueError(f"hyperplanes must be (tables, bits, dim), got shape {hyperplanes.shape}")
        self.tables, self.bits, self.dim = hyperplanes.shape
        if offsets is not None and offsets.shape != (self.tables, self.bits):
            raise ValueError(f"offsets must be {(self.tables, self.bits)}, got shape {offsets.shape}")
        self._offsets = (np.zeros(self.tables * self.bits) if offsets is None
                         else offsets.astype(np.float64).reshape(-1))
        # (dim, tables*bits), float64, prepared once so the per-query cost is one matmul.
        self._planes = np.ascontiguousarray(
            hyperplanes.astype(np.float64).reshape(self.tables * self.bits, self.dim).T
        )
        self._weights = (np.int64(1) << np.arange(self.bits, dtype=np.int64))

    def buckets(self, embeddings: np.ndarray) -> np.ndarray:
        """Bucket ids, shape (n, tables), int64 in [0, 2**bits)."""
        x = np.asarray(embeddings, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"embeddings must be (n, {self.dim}), got shape {x.shape}")
        bits = (row_products(x, self._planes) > self._offsets).reshape(len(x), self.tables, self.bits)
        return bits.astype(np.int64) @ self._weights
