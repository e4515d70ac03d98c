"""Scores from the released statistics: table votes, class centroids and the public prior.

Everything here reads only what the bundle released (noisy vote tables, noisy class
statistics) and public inputs (the label descriptions' embeddings), so it is post-processing
and costs no privacy budget however often it runs.

A format-1 bundle (or one with only vote tables) is scored by the paper's Algorithm 2: the
class with the largest summed noisy votes. A format-2 bundle blends three probability-like
vectors per query:

    score = w_v * votes / sum(votes)  +  w_c * softmax(cos(z, centroids) / tau_c)
            + w_p * max(1, 1/epsilon) * softmax(cos(x, descriptions) / tau_p)

where votes are the per-class sums of the query's buckets with negative noisy cells read as
0, z is the query in the public subspace relative to the released overall mean, and the
prior's weight grows at small epsilon, where the released statistics are mostly noise and
the public descriptions are the better evidence. The weights were chosen by measurement
(docs/accuracy.md) and ship in the bundle's ``scoring`` map.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping

import numpy as np

from runtime.centroids import centred_means
from runtime.simhash import SimHasher

#: What `Scorer` can return: the blend, or one component alone (for benchmarks and
#: `python -m runtime.classify --score`).
MODES = ("blend", "votes", "centroids", "prior")


@dataclass(frozen=True)
class Weights:
    """The blend's weights and temperatures (the bundle's ``scoring`` map overrides these)."""

    votes: float = 1.0
    centroids: float = 1.0
    prior: float = 1.0
    centroid_temperature: float = 0.05
    prior_temperature: float = 0.05

    @classmethod
    def from_map(cls, m: Mapping[str, Any] | None) -> "Weights":
        known = {f.name for f in fields(cls)}
        return cls(**{k: float(v) for k, v in (m or {}).items() if k in known})


def vote_sums(buckets: np.ndarray, votes: np.ndarray) -> np.ndarray:
    """Per-class sums of the noisy votes, shape (n, classes), int64.

    ``buckets`` is (n, tables) from SimHasher.buckets; ``votes`` is (tables, 2**bits, classes).

    Example:
        >>> votes = np.array([[[1, 0], [0, 3]], [[2, 2], [5, -1]]], dtype=np.int16)
        >>> vote_sums(np.array([[1, 0]]), votes)
        array([[2, 5]])
    """
    tables = np.arange(votes.shape[0])
    return votes[tables[None, :], buckets].sum(axis=1, dtype=np.int64)


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _rowwise(x: np.ndarray, m: np.ndarray) -> np.ndarray:
    """x @ m one row at a time: BLAS may round a many-row product differently from a one-row
    product, and a text's scores must not depend on the batch it arrives in."""
    return np.stack([row @ m for row in x]) if len(x) else np.zeros((0, m.shape[1]))


def _unit_rows(a: np.ndarray) -> np.ndarray:
    return a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)


@dataclass(frozen=True)
class ClassStats:
    """The released class statistics and the public subspace they live in."""

    origin: np.ndarray       # (dim,)
    projection: np.ndarray   # (k, dim), orthonormal rows
    sums: np.ndarray         # (classes, k), noisy
    counts: np.ndarray       # (classes,), noisy


class Scorer:
    """Scores embeddings against a bundle's released statistics (see the module doc).

    The classifier and the benchmarks both score through this class, so a benchmark
    measures exactly what a device computes.

    Example:
        >>> scorer = Scorer.from_bundle(bundle)                        # doctest: +SKIP
        >>> scorer.scores(embeddings).shape                             # doctest: +SKIP
        (10, 7)
    """

    def __init__(self, hyperplanes: np.ndarray, votes: np.ndarray, *, offsets: np.ndarray | None = None,
                 class_stats: ClassStats | None = None, prior: np.ndarray | None = None,
                 weights: Weights | None = None, epsilon: float | None = None, mode: str = "blend"):
        self.hasher = SimHasher(hyperplanes, offsets)
        if votes.shape[:2] != (self.hasher.tables, 2**self.hasher.bits):
            raise ValueError(f"votes shape {votes.shape} does not match {self.hasher.tables} tables of "
                             f"{2**self.hasher.bits} buckets")
        if mode not in MODES:
            raise ValueError(f"unknown scoring mode {mode!r} (one of {', '.join(MODES)})")
        if mode == "centroids" and class_stats is None:
            raise ValueError("this bundle has no class statistics to score with centroids")
        if mode == "prior" and prior is None:
            raise ValueError("this bundle has no label descriptions to score with a prior")
        self.votes, self.mode = votes, mode
        # The blend reads negative noisy cells as 0; clipping the table once keeps that off
        # the per-query path (post-processing of the release, like the rest).
        self._positive_votes = None if self.plain_votes_only(class_stats, prior, mode) else np.maximum(votes, 0)
        self.weights = weights or Weights()
        self.prior_boost = 1.0 if epsilon is None else max(1.0, 1.0 / float(epsilon))
        self._prior = None if prior is None else _unit_rows(np.asarray(prior, np.float64))
        self._stats = None
        if class_stats is not None:
            centred, mu = centred_means(class_stats.sums, class_stats.counts)
            proj = np.asarray(class_stats.projection, np.float64)
            # z = P (x - origin) - mu = P x - (P origin + mu): one matmul per query.
            self._stats = (proj.T.copy(), proj @ np.asarray(class_stats.origin, np.float64) + mu,
                           _unit_rows(centred).T.copy())

    @classmethod
    def from_bundle(cls, b: Any, mode: str = "blend") -> "Scorer":
        return cls(b.hyperplanes, b.votes, offsets=b.offsets, class_stats=b.class_stats, prior=b.prior,
                   weights=Weights.from_map(b.scoring), epsilon=float(b.privacy["epsilon"]), mode=mode)

    @staticmethod
    def plain_votes_only(class_stats: Any, prior: Any, mode: str) -> bool:
        return mode == "votes" or (mode == "blend" and class_stats is None and prior is None)

    @property
    def plain_votes(self) -> bool:
        """True when the scores are Algorithm 2's summed votes (no centroids or prior to blend)."""
        return self.plain_votes_only(self._stats, self._prior, self.mode)

    def centroid_probs(self, x: np.ndarray) -> np.ndarray:
        proj_t, shift, dirs = self._stats
        z = _unit_rows(_rowwise(x, proj_t) - shift)
        return _softmax(_rowwise(z, dirs) / self.weights.centroid_temperature)

    def prior_probs(self, x: np.ndarray) -> np.ndarray:
        return _softmax(_rowwise(_unit_rows(x), self._prior.T) / self.weights.prior_temperature)

    def scores(self, embeddings: np.ndarray) -> np.ndarray:
        """Per-class scores, shape (n, classes), float64; the label is the argmax."""
        x = np.asarray(embeddings, np.float64)
        if self.mode == "centroids":
            return self.centroid_probs(x)
        if self.mode == "prior":
            return self.prior_probs(x)
        buckets = self.hasher.buckets(x)
        if self.plain_votes:
            return vote_sums(buckets, self.votes).astype(np.float64)
        w = self.weights
        positive = vote_sums(buckets, self._positive_votes).astype(np.float64)
        out = w.votes * positive / np.maximum(positive.sum(axis=1, keepdims=True), 1e-12)
        if self._stats is not None:
            out += w.centroids * self.centroid_probs(x)
        if self._prior is not None:
            out += w.prior * self.prior_boost * self.prior_probs(x)
        return out
