"""The one place exact counts become releasable: discrete Laplace noise on every cell.

Algorithm 1, lines 20-25, with integer noise. A record adds 1 to one cell in each of the T
tables, so the L1 sensitivity of the whole (T, 2**H, C) table set under add/remove-one-record
is T, and noise of scale T/epsilon on every cell (empty buckets included, so which buckets
are occupied is hidden too) makes the release pure epsilon-DP. Clipping the noisy values to
int16 afterwards is post-processing and costs nothing.

With a privacy unit of one person who may have up to K records (the exporter keeps at most
K per person), adding or removing a person changes the tables by at most K*T in L1, so the
scale becomes K*T/epsilon and the guarantee covers the person, not only each record.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from exporter.noise import NoiseSource, OpenDPDiscreteLaplace

INT16_MIN, INT16_MAX = -(2**15), 2**15 - 1
_EPSILON_SLACK = 1e-9  # float rounding between T/epsilon and OpenDP's map back to epsilon

MECHANISM = ("discrete Laplace (two-sided geometric) noise added independently to every cell of the "
             "T x 2^H x C vote tables, empty buckets included")


@dataclass(frozen=True)
class Release:
    """Noisy int16 vote tables and the privacy facts that describe them.

    ``clipped_cells`` counts noisy values outside int16; it is computed from the noisy
    values (post-processing) and is reported to the exporter's user, not put in the bundle.
    """

    votes: np.ndarray
    privacy: dict[str, Any]
    clipped_cells: int


def check_epsilon(epsilon: float) -> float:
    eps = float(epsilon)
    if not (eps > 0 and math.isfinite(eps)):
        raise ValueError(f"epsilon must be a positive finite number, got {epsilon}")
    return eps


def release_votes(counts: np.ndarray, epsilon: float, *, unit: str | None = None, max_records_per_unit: int = 1,
                  noise_for_tests: NoiseSource | None = None) -> Release:
    """Add discrete Laplace noise of scale K*T/epsilon to every cell, then clip to int16.

    ``unit`` names the privacy unit's column (None: each record is its own unit, K = 1);
    ``max_records_per_unit`` is K, which the caller must have enforced on ``counts``.

    ``noise_for_tests`` is the test-only hook for pinning noise; a bundle built through it
    says in its privacy facts that it is not differentially private. The exporter's CLI and
    `exporter.build` never set it.

    Example:
        >>> r = release_votes(np.zeros((4, 8, 2), np.int32), epsilon=1.0)   # doctest: +SKIP
        >>> r.privacy["noise_scale"], r.votes.dtype                        # doctest: +SKIP
        (4.0, dtype('int16'))
    """
    eps = check_epsilon(epsilon)
    if counts.ndim != 3:
        raise ValueError(f"counts must be (tables, buckets, classes), got shape {counts.shape}")
    if counts.min(initial=0) < 0:
        raise ValueError("counts must be non-negative")
    tables = int(counts.shape[0])
    k = int(max_records_per_unit)
    if k < 1 or (unit is None and k != 1):
        raise ValueError(f"max_records_per_unit must be 1 without a unit column, and >= 1 with one; got {k}")
    sensitivity = k * tables
    scale = sensitivity / eps
    source = noise_for_tests if noise_for_tests is not None else OpenDPDiscreteLaplace()
    spent = source.epsilon_spent(scale, sensitivity)
    if spent > eps * (1 + _EPSILON_SLACK):
        raise RuntimeError(f"noise of scale {scale} costs epsilon {spent}, more than the budget {eps}")

    noisy = source.add_noise(counts, scale)
    clipped = int(np.count_nonzero((noisy < INT16_MIN) | (noisy > INT16_MAX)))
    votes = np.clip(noisy, INT16_MIN, INT16_MAX).astype(np.int16)

    facts = source.facts()
    if noise_for_tests is not None:
        facts = {**facts, "noise_source": f"TEST HOOK ({facts.get('noise_source', type(source).__name__)}): "
                                          "NOT differentially private"}
    privacy = {
        "epsilon": eps,
        "delta": 0.0,
        "mechanism": MECHANISM,
        "sensitivity_l1": sensitivity,
        "noise_scale": scale,
        **_unit_facts(unit, k),
        **facts,
        "post_processing": "noisy votes clipped to int16 [-32768, 32767]",
        "released_statistics": ["votes"],
        "public_inputs": ["label list and descriptions", "hyperplanes (seeded, data-independent)",
                          "encoder (public pretrained model)", "tables and bits (chosen without the data)"],
    }
    return Release(votes=votes, privacy=privacy, clipped_cells=clipped)


def _unit_facts(unit: str | None, k: int) -> dict[str, Any]:
    """How the bundle names what one unit of privacy is (read by people and by the runtime)."""
    if unit is None:
        return {"neighbour_relation": "add or remove one record", "privacy_unit": "one record",
                "max_records_per_unit": 1}
    return {"neighbour_relation": f"add or remove one person (all their records, at most {k}; "
                                  f"persons identified by the column {unit!r})",
            "privacy_unit": f"one person, up to {k} records", "max_records_per_unit": k}
