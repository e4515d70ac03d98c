"""SimHash hyperplanes: random (data-independent) or aligned (post-processing of a release).

Random hyperplanes never see the records, so they cost no privacy budget; that is also why
numpy's seeded generator is fine here and nowhere near the noise: nothing secret depends on
it, and the seed is written into the bundle so the hashing can be reproduced. Aligned
hyperplanes are drawn (from the same kind of seed) inside the span of the released noisy
class directions, and their number of bits follows the released noisy record count: both
are functions of a release, so they cost nothing more either.
"""

from __future__ import annotations

import secrets

import numpy as np

DISTRIBUTIONS = ("gaussian",)


#: The range `bits_for` chooses from (the table-size check before a build assumes the top).
AUTO_BITS = (4, 8)


def bits_for(records: float) -> int:
    """H from the released (noisy) record count: about 100 records per bucket, 4..8 bits.

    Example:
        >>> [bits_for(n) for n in (500, 1775, 8000, 10**6)]
        [4, 4, 6, 8]
    """
    low, high = AUTO_BITS
    return int(min(high, max(low, np.floor(np.log2(max(records, 1.0) / 100)))))


def new_seed() -> int:
    """A fresh 63-bit seed for users who do not pick one."""
    return secrets.randbits(63)


def draw_hyperplanes(seed: int, tables: int, bits: int, dim: int, distribution: str = "gaussian") -> np.ndarray:
    """Unit-length hyperplane normals, shape (tables, bits, dim), float32 (Algorithm 1, lines 5-8).

    Example:
        >>> p = draw_hyperplanes(7, tables=2, bits=3, dim=4)
        >>> p.shape, bool(np.allclose(np.linalg.norm(p, axis=-1), 1))
        ((2, 3, 4), True)
    """
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"unknown hyperplane distribution {distribution!r}")
    rng = np.random.Generator(np.random.PCG64(seed))
    planes = rng.standard_normal((tables, bits, dim))
    planes /= np.linalg.norm(planes, axis=-1, keepdims=True)
    return planes.astype(np.float32)


def aligned_hyperplanes(seed: int, tables: int, bits: int, basis: "PublicBasis", sums: np.ndarray,
                        counts: np.ndarray, public_directions: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Hyperplanes in the span of the noisy centred class directions, through the data's centre.

    Random hyperplanes spend most of their bits on directions unrelated to the labels; these
    are Gaussian within the subspace spanned by the centred class means (from the released
    class statistics: post-processing) plus the first ``public_directions`` components of
    the public basis, mapped back to the embedding space. A record's bit is 1 iff
    <x, r> > offset, where the offset puts the hyperplane through the released overall mean.
    Returns (hyperplanes (tables, bits, dim) float32 unit rows, offsets (tables, bits) float32).

    Example:
        >>> from exporter.public_basis import PublicBasis
        >>> b = PublicBasis(np.zeros(3, np.float32), np.eye(3, dtype=np.float32)[:2])
        >>> p, off = aligned_hyperplanes(1, 2, 3, b, np.array([[2.0, 0.0], [0.0, 0.0]]), np.array([1.0, 1.0]))
        >>> p.shape, off.shape, bool(np.allclose(np.abs(p[..., 0]), 1))
        ((2, 3, 3), (2, 3), True)
    """
    centred, mu = centred_means(sums, counts)
    k = basis.dim
    span = np.concatenate([centred, np.eye(k)[:max(0, min(public_directions, k))]], axis=0)
    q, r = np.linalg.qr(span.T)                          # (k, m) orthonormal columns
    keep = np.abs(np.diag(r)) > 1e-9 * max(1.0, float(np.abs(r).max(initial=0)))
    q = q[:, keep] if keep.any() else np.eye(k)[:, :1]
    rng = np.random.Generator(np.random.PCG64(seed))
    coef = rng.standard_normal((tables * bits, q.shape[1]))
    planes = (coef @ q.T) @ basis.projection.astype(np.float64)    # (tables*bits, dim)
    planes /= np.linalg.norm(planes, axis=1, keepdims=True)
    centre = basis.origin.astype(np.float64) + mu @ basis.projection.astype(np.float64)
    offsets = planes @ centre
    dim = planes.shape[1]
    return planes.reshape(tables, bits, dim).astype(np.float32), offsets.reshape(tables, bits).astype(np.float32)


#: A noisy count below this is treated as this: keeps a class whose noise drove its count
#: to zero or below from dividing by ~0 (its centroid is then small, not huge).
MIN_COUNT = 1.0


def centred_means(sums: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(class means minus the overall mean, overall mean) in the public subspace.

    Example:
        >>> c, mu = centred_means(np.array([[4.0, 0.0], [0.0, 2.0]]), np.array([2.0, 2.0]))
        >>> c.tolist(), mu.tolist()
        ([[1.0, -0.5], [-1.0, 0.5]], [1.0, 0.5])
    """
    sums = np.asarray(sums, np.float64)
    counts = np.maximum(np.asarray(counts, np.float64), MIN_COUNT)
    mu = sums.sum(axis=0) / max(float(counts.sum()), MIN_COUNT)
    return sums / counts[:, None] - mu, mu

