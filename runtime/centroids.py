"""Class centroids from the released noisy class statistics (post-processing, free).

The exporter derives its aligned hyperplanes from the same function, so both sides agree on
what "centred class direction" means.
"""

from __future__ import annotations

import numpy as np

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
