"""Noisy per-class sums and counts of the embeddings, in the public subspace.

The second released statistic (the vote tables are the other). They give the aligned
hashing its directions and the runtime its centroid scores.

Sensitivity. Each record's projected embedding z = P (x - origin) is clipped to L1 norm at
most ``clip_l1`` (B) and put on an integer grid of QUANTUM steps per unit, rounding toward
zero so the clip still holds after rounding. Each count is kept on a grid of COUNT_STEPS per
record (w = COUNT_STEPS / Q = 1/4 of a unit). A record then changes its class's sum by at
most Q*B in L1 and its class's count by Q*w, so the whole release has L1 sensitivity
Q*(B+w) under add/remove-one-record, or K*Q*(B+w) when a person may contribute K records;
discrete Laplace noise of that scale / epsilon_1 on every coordinate (every class, also
classes with no records) is pure epsilon_1-DP. Integer noise keeps OpenDP's exact sampler
(see exporter.noise) for this release too.

Why w = 1/4: the sums carry the signal, the counts only scale it. Weighting the count as a
full unit (w = 1) spends a sixth of the sensitivity on it at B = 5; at w = 1/4 the sums'
noise drops by 12.5% and a count's noise grows to (B+w)/(w*epsilon_1) records, a few percent
of any class the sums could resolve. Measured in docs/accuracy.md (prototype, eps = 1, B = 3:
4.7 vs 5.8 points of average drop).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from exporter.noise import NoiseSource, OpenDPDiscreteLaplace
from exporter.public_basis import PublicBasis
from runtime.scoring import ClassStats
from runtime.scoring import clip_l1 as clip_to_l1

#: Grid steps per unit of the projected embedding: 0.01 resolution, far below the noise, and
#: int32 sums hold about 7 million records per class at the largest clip.
QUANTUM = 100
#: Grid steps per record in the counts (w = COUNT_STEPS / QUANTUM, see the module doc).
COUNT_STEPS = 25
DEFAULT_CLIP_L1 = 5.0
_INT32_MAX = 2**31 - 1
_EPSILON_SLACK = 1e-9

MECHANISM = ("discrete Laplace noise on every coordinate of the per-class sums of the clipped, projected "
             "embeddings (integer grid of 1/100) and on every class count (weighted 1/4: 25 grid steps per "
             "record)")


def clip_and_quantize(z: np.ndarray, clip_l1: float) -> np.ndarray:
    """Integer grid values of ``z`` with L1 norm at most QUANTUM * clip_l1 per row.

    Example:
        >>> clip_and_quantize(np.array([[3.0, -4.0]]), 1.0)      # L1 7 -> 1
        array([[ 42, -57]])
    """
    # The runtime's clip: the Gaussian centroid rule clips a query exactly like a record.
    return np.trunc(clip_to_l1(np.asarray(z, np.float64), clip_l1) * QUANTUM).astype(np.int64)


class ClassStatsCounter:
    """Accumulates exact clipped sums and counts chunk by chunk (never released as is)."""

    def __init__(self, basis: PublicBasis, classes: int, clip_l1: float = DEFAULT_CLIP_L1):
        if not clip_l1 > 0:
            raise ValueError(f"clip_l1 must be positive, got {clip_l1}")
        self.basis, self.classes, self.clip_l1 = basis, classes, float(clip_l1)
        self.sums = np.zeros((classes, basis.dim), np.int64)
        self.counts = np.zeros(classes, np.int64)

    def add(self, embeddings: np.ndarray, labels: np.ndarray) -> None:
        q = clip_and_quantize(self.basis.project(embeddings), self.clip_l1)
        np.add.at(self.sums, labels, q)
        self.counts += np.bincount(labels, minlength=self.classes)


@dataclass(frozen=True)
class ClassStatsRelease:
    """Noisy sums (classes, k) and counts (classes,), in units of the projected embedding."""

    sums: np.ndarray
    counts: np.ndarray
    facts: dict[str, Any]

    def for_bundle(self, basis: PublicBasis) -> ClassStats:
        """What the bundle (and the runtime's Scorer) holds: the release with its public basis."""
        return ClassStats(origin=basis.origin, projection=basis.projection,
                          sums=self.sums.astype(np.float32), counts=self.counts.astype(np.float32))


def release_class_stats(counter: ClassStatsCounter, epsilon: float, *, max_records_per_unit: int = 1,
                        noise_for_tests: NoiseSource | None = None) -> ClassStatsRelease:
    """Noise of scale K*Q*(B+w)/epsilon on every sum coordinate and count (see module doc).

    Example:
        >>> r = release_class_stats(counter, epsilon=0.8)          # doctest: +SKIP
        >>> r.sums.shape, r.facts["sensitivity_l1"]                 # doctest: +SKIP
        ((4, 128), 525)
    """
    if not (epsilon > 0 and np.isfinite(epsilon)):
        raise ValueError(f"epsilon must be a positive finite number, got {epsilon}")
    k = int(max_records_per_unit)
    clip_steps = int(np.floor(QUANTUM * counter.clip_l1))
    sensitivity = k * (clip_steps + COUNT_STEPS)
    scale = sensitivity / epsilon
    flat = np.concatenate([counter.sums.reshape(-1), counter.counts * COUNT_STEPS])
    if np.abs(flat).max(initial=0) > _INT32_MAX // 2:
        raise ValueError("too many records in one class for the class statistics' int32 grid "
                         f"(over {_INT32_MAX // 2 // QUANTUM:,}); lower --clip-l1")
    source = noise_for_tests if noise_for_tests is not None else OpenDPDiscreteLaplace()
    spent = source.epsilon_spent(scale, sensitivity)
    if spent > epsilon * (1 + _EPSILON_SLACK):
        raise RuntimeError(f"noise of scale {scale} costs epsilon {spent}, more than the share {epsilon}")
    noisy = source.add_noise(flat.astype(np.int32), scale).astype(np.float64)
    c, d = counter.sums.shape
    facts = {
        "statistic": "class_stats",
        "epsilon": float(epsilon),
        "mechanism": MECHANISM,
        "sensitivity_l1": sensitivity,
        "noise_scale": scale,
        "grid": QUANTUM,
        "count_grid": COUNT_STEPS,
        "clip_l1": counter.clip_l1,
        "dim": d,
        "note": f"sums are released in grid units of 1/{QUANTUM}, counts in units of 1/{COUNT_STEPS} record; "
                "the bundle stores both divided back (embedding units, records); sensitivity and scale "
                "are in grid units",
    }
    return ClassStatsRelease(sums=noisy[:c * d].reshape(c, d) / QUANTUM, counts=noisy[c * d:] / COUNT_STEPS,
                             facts=facts)
