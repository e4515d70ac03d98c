"""Test-only noise sources, passed through the explicit `noise_for_tests` hook.

They let a test pin the noise (to check counting, clipping and hashing exactly) without any
product code path being able to skip OpenDP: bundles built through them say in their privacy
facts that they are not differentially private.
"""

from __future__ import annotations

import numpy as np


class ConstantNoise:
    """Adds the same integer to every cell (0: the exact counts)."""

    def __init__(self, value: int = 0):
        self.value = value

    def facts(self) -> dict:
        return {"noise_library": "tests", "noise_library_version": "0", "noise_source": f"constant {self.value}"}

    def epsilon_spent(self, scale: float, sensitivity: int) -> float:
        return sensitivity / scale

    def add_noise(self, counts: np.ndarray, scale: float) -> np.ndarray:
        return counts.astype(np.int64) + self.value


class OverspendingNoise(ConstantNoise):
    """Claims to cost more epsilon than the scale allows: release must refuse it."""

    def epsilon_spent(self, scale: float, sensitivity: int) -> float:
        return 2 * sensitivity / scale
