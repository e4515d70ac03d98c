"""Products and norms whose every row depends on that row alone, bit for bit.

A matrix product through BLAS sums in an order chosen for the whole block: numpy sends a
one-row product to gemv and a larger one to gemm, which add the same terms in different
orders, and the blocking depends on the other rows' count. In the exporter a record's
projection, clip, grid value and bucket then depend, by about 1e-16, on which other records
share its block; at a grid or hyperplane boundary that moves the record's integer, and two
neighbouring datasets could differ by more than the stated sensitivity.

Here every output element is the sum over d = 0..D-1, in that order, of x[d] * m[d] in float64,
each step one correctly rounded IEEE multiplication and addition (numpy ufuncs, no fused
multiply-add). That is a function of the row alone, whatever the block, the engine or the
machine, and it is the order the Java and TypeScript runtimes sum in, so all three compute the
same bits. It costs D ufunc calls per block (tens of milliseconds for 256 records, far below
embedding them) and under a millisecond for one query.
"""

from __future__ import annotations

import numpy as np


#: Up to this many terms, all are formed at once and summed by cumsum (the same order and bits
#: as the loop, about 5x faster for one query); beyond it the loop over d keeps memory small.
_SMALL = 2**18


def row_products(x: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``x @ m`` in float64, summed over d in ascending order for every element.

    Example:
        >>> x = np.random.default_rng(0).standard_normal((5, 384))
        >>> m = np.random.default_rng(1).standard_normal((384, 7))
        >>> together = row_products(x, m)
        >>> bool(all((row_products(x[i:i + 1], m) == together[i]).all() for i in range(5)))
        True
        >>> big = np.random.default_rng(2).standard_normal((800, 384))        # the loop's path
        >>> bool((row_products(big, m)[:5] == row_products(big[:5], m)).all())
        True
    """
    x = np.asarray(x, np.float64)
    m = np.asarray(m, np.float64)
    if x.ndim != 2 or m.ndim != 2 or x.shape[1] != m.shape[0]:
        raise ValueError(f"cannot multiply shapes {x.shape} and {m.shape}")
    if x.shape[0] * x.shape[1] * m.shape[1] <= _SMALL:
        # One query: every term at once, then a running sum along d (cumsum adds in order).
        terms = x[:, :, None] * m[None, :, :]
        np.cumsum(terms, axis=1, out=terms)
        return terms[:, -1, :].copy() if x.shape[1] else np.zeros((x.shape[0], m.shape[1]))
    out = np.zeros((x.shape[0], m.shape[1]), np.float64)
    term = np.empty_like(out)
    for d in range(x.shape[1]):
        np.multiply(x[:, d:d + 1], m[d], out=term)
        out += term
    return out

def row_sums(a: np.ndarray) -> np.ndarray:
    """Each row's sum along the last axis in ascending index order (cumsum adds in order; sum()
    adds pairwise), keeping that axis as 1.

    Example:
        >>> row_sums(np.array([[1e16, 1.0, -1e16]])).tolist()
        [[0.0]]
    """
    a = np.asarray(a, np.float64)
    if a.shape[-1] == 0:
        return np.zeros((*a.shape[:-1], 1))
    return np.cumsum(a, axis=-1)[..., -1:]


def row_norms(a: np.ndarray) -> np.ndarray:
    """Each row's L2 norm: sqrt of its dot product with itself, summed in index order (n, 1)."""
    a = np.asarray(a, np.float64)
    return np.sqrt(row_sums(a * a))


def row_l1(z: np.ndarray) -> np.ndarray:
    """Each row's L1 norm, summed over columns in ascending order (shape (n, 1)).

    Example:
        >>> row_l1(np.array([[3.0, -4.0], [0.1, 0.2]])).tolist()
        [[7.0], [0.30000000000000004]]
    """
    z = np.asarray(z, np.float64)
    out = np.zeros((z.shape[0], 1), np.float64)
    for j in range(z.shape[1]):
        out[:, 0] += np.abs(z[:, j])
    return out
