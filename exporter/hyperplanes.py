"""Random SimHash hyperplanes: data-independent, reproducible from a recorded seed.

The hyperplanes are public (they ship in the bundle) and never see the records, so they cost
no privacy budget. That is also why numpy's seeded generator is fine here and nowhere near
the noise: nothing secret depends on it, and the seed is written into the bundle so the
hashing can be reproduced.
"""

from __future__ import annotations

import secrets

import numpy as np

DISTRIBUTIONS = ("gaussian",)


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
