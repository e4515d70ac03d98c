"""Release noise: the exact discrete Laplace and discrete Gaussian mechanisms from OpenDP.

OpenDP's integer `make_laplace` samples the discrete Laplace (two-sided geometric)
distribution exactly, P(k) proportional to exp(-|k| / scale), from OpenSSL's CSPRNG, and its
privacy map states the epsilon a given sensitivity costs, which `release` checks against the
budget before any noise is drawn. numpy generators are never used for noise: they are not
cryptographically secure, and with most buckets empty the released values could reveal the
generator state.

The head (opt-in, ``--delta``) gets its noise from OpenDP's integer `make_gaussian`: the exact
discrete Gaussian, P(k) proportional to exp(-k^2 / (2 sigma^2)), from the same CSPRNG, whose
privacy map states zero-concentrated DP (rho) at a given integer L2 sensitivity.
"""

from __future__ import annotations

import functools
from importlib.metadata import version
from typing import Any, Protocol

import numpy as np

#: Cells per call into OpenDP: bounds the temporary Python lists for very large tables.
CHUNK_CELLS = 1 << 20


class NoiseSource(Protocol):
    """Adds noise of a given scale to integer counts (flat int32 array) and says what it is."""

    def facts(self) -> dict[str, Any]: ...

    def epsilon_spent(self, scale: float, sensitivity: int) -> float: ...

    def add_noise(self, counts: np.ndarray, scale: float) -> np.ndarray: ...


@functools.lru_cache(maxsize=1)
def _opendp_version() -> str:
    return version("opendp")


@functools.lru_cache(maxsize=64)
def _laplace(scale: float):
    """OpenDP's integer Laplace measurement at ``scale``. It holds no randomness (each call
    draws fresh noise from OpenSSL), so one measurement per scale serves every release."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T="i32")), dp.l1_distance(T="i32")
    return dp.m.make_laplace(*space, scale=scale)


class OpenDPDiscreteLaplace:
    """The production noise source."""

    def __init__(self) -> None:
        self._facts = {
            "noise_library": "opendp",
            "noise_library_version": _opendp_version(),
            "noise_source": "OpenDP make_laplace on integers: exact discrete Laplace sampler driven by "
                            "OpenSSL's cryptographically secure RNG",
        }

    def _mechanism(self, scale: float):
        return _laplace(float(scale))

    def facts(self) -> dict[str, Any]:
        return dict(self._facts)

    def epsilon_spent(self, scale: float, sensitivity: int) -> float:
        """OpenDP's own privacy map: the epsilon this scale costs at this L1 sensitivity."""
        return float(self._mechanism(scale).map(sensitivity))

    def add_noise(self, counts: np.ndarray, scale: float) -> np.ndarray:
        # Noise is i.i.d. per cell, so drawing it chunk by chunk is the same distribution as
        # one call on the whole vector; chunking only bounds the temporary lists.
        m = self._mechanism(scale)
        flat = np.ascontiguousarray(counts, dtype=np.int32).reshape(-1)
        out = np.empty(flat.shape, dtype=np.int64)
        for start in range(0, len(flat), CHUNK_CELLS):
            out[start:start + CHUNK_CELLS] = m(flat[start:start + CHUNK_CELLS])
        return out.reshape(counts.shape)


class GaussianNoiseSource(Protocol):
    """Adds Gaussian noise of standard deviation ``sigma`` to integer vectors (int64) and says
    what it is; ``rho`` is its library's privacy map (zCDP) at an integer L2 sensitivity."""

    def facts(self) -> dict[str, Any]: ...

    def rho(self, sigma: float, sensitivity_l2: int) -> float: ...

    def add_noise(self, values: np.ndarray, sigma: float) -> np.ndarray: ...


@functools.lru_cache(maxsize=64)
def _gaussian(sigma: float):
    """OpenDP's integer Gaussian measurement at ``sigma`` (no randomness held, as `_laplace`)."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T="i64")), dp.l2_distance(T="i64")
    return dp.m.make_gaussian(*space, scale=sigma)


#: The noise source's words for the head's noise (with the class counts' in a head bundle).
GAUSSIAN_SOURCE = ("OpenDP make_gaussian on integers: exact discrete Gaussian sampler driven by OpenSSL's "
                   "cryptographically secure RNG")


class OpenDPDiscreteGaussian:
    """The production noise of the head's gradient sums.

    Example:
        >>> g = OpenDPDiscreteGaussian()
        >>> round(g.rho(4.0, 2), 12), g.add_noise(np.zeros(3, np.int64), 4.0).shape
        (0.125, (3,))
    """

    def facts(self) -> dict[str, Any]:
        return {"noise_library": "opendp", "noise_library_version": _opendp_version(), "noise_source": GAUSSIAN_SOURCE}

    def rho(self, sigma: float, sensitivity_l2: int) -> float:
        """OpenDP's own privacy map: the zCDP rho one noisy sum costs at this L2 sensitivity."""
        return float(_gaussian(float(sigma)).map(int(sensitivity_l2)))

    def add_noise(self, values: np.ndarray, sigma: float) -> np.ndarray:
        m = _gaussian(float(sigma))
        flat = np.ascontiguousarray(values, dtype=np.int64).reshape(-1)
        out = np.empty(flat.shape, dtype=np.int64)
        for start in range(0, len(flat), CHUNK_CELLS):
            out[start:start + CHUNK_CELLS] = m(flat[start:start + CHUNK_CELLS])
        return out.reshape(np.shape(values))
