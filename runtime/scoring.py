"""Scores from the released statistics: table votes, class centroids and the public prior.

Everything here reads only what the bundle released (noisy vote tables, noisy class
statistics) and public inputs (the label descriptions' embeddings), so it is post-processing
and costs no privacy budget however often it runs.

A format-1 bundle (or one with only vote tables) is scored by the paper's Algorithm 2: the
class with the largest summed noisy votes. A format-2 bundle blends three probability-like
vectors per query:

    score = w_v * votes / sum(votes)  +  w_c * softmax(centroid logits / tau_c)
            + w_p * boost * softmax(cos(x, descriptions) / tau_p)

where votes are the per-class sums of the query's buckets with negative noisy cells read as
0, and the prior's boost (`prior_boost`: max(1, 1/epsilon, R * classes / (epsilon * N)), N
the released noisy record count) grows where the released statistics are mostly noise
(small epsilon, or few records per class) and the public descriptions are the better
evidence. The centroid logits follow the bundle's ``centroid_rule``:

- "gaussian" (format 2.1, the default since): the query is projected and clipped exactly
  as the exporter clipped the records (L1 norm at most ``centroid_clip_l1``), the released
  overall mean m is subtracted, and logit_c = <z, m_c> - |m_c|^2 / 2 with m_c the centred
  class means: nearest class mean in Euclidean distance, the linear discriminant of Gaussian
  classes with a shared isotropic covariance. Unlike cosine it keeps how far each
  noisy mean sits from the centre, and clipping the query puts it on the means' scale.
- "cosine" (format 2.0 bundles, which carry no rule): logit_c = cos(z, m_c), z the unclipped
  query relative to m.

The weights, temperatures and rule were chosen by measurement (docs/accuracy.md) and ship
in the bundle's ``scoring`` map.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping

import numpy as np

from runtime.bundle.schema import CENTROID_RULES, SCORING_MAX, ClassStats, Scoring
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
    #: The defaults above and "cosine" are what a format-2.0 bundle (no rule in its map) means.
    centroid_rule: str = "cosine"
    centroid_clip_l1: float = 0.0
    #: The prior's boost is max(1, 1/epsilon, this * classes / (epsilon * noisy record count)):
    #: a release with few records per class per unit of epsilon leans on the prior (0: off,
    #: what a format-2.0 bundle means).
    prior_records_per_class: float = 0.0

    @classmethod
    def measured(cls, clip_l1: float) -> "Weights":
        """What the exporter ships (format 2.1): the Gaussian centroid rule on the records' clip.

        Example:
            >>> Weights.measured(5.0).centroid_rule, Weights.measured(5.0).centroid_temperature
            ('gaussian', 0.003)
        """
        return cls(centroid_rule="gaussian", centroid_clip_l1=float(clip_l1), centroid_temperature=0.003,
                   prior_records_per_class=1000.0)

    @classmethod
    def from_map(cls, m: Mapping[str, Any] | None) -> "Weights":
        """The defaults overridden by a bundle's ``scoring`` map (unknown names are ignored).

        Example:
            >>> Weights.from_map({"votes": 2, "rule": "text"}).votes
            2.0
            >>> Weights.from_map({"centroid_rule": "median"})
            Traceback (most recent call last):
            ...
            ValueError: unknown centroid_rule 'median' (one of cosine, gaussian)
        """
        known = {f.name for f in fields(cls)}
        kw: dict[str, Any] = {}
        for k, v in (m or {}).items():
            if k == Scoring.CENTROID_RULE:
                if v not in CENTROID_RULES:
                    raise ValueError(f"unknown centroid_rule {v!r} (one of {', '.join(CENTROID_RULES)})")
                kw[k] = v
            elif k in known:
                kw[k] = float(v)
        w = cls(**kw)
        if w.centroid_rule == "gaussian" and not (w.centroid_clip_l1 > 0 and np.isfinite(w.centroid_clip_l1)):
            raise ValueError(f"the gaussian centroid rule needs a positive centroid_clip_l1, got {w.centroid_clip_l1}")
        return w

    def as_map(self) -> dict[str, Any]:
        """The bundle's ``scoring`` map for these weights (plus a human-readable rule); the
        field names are the schema's `Scoring` keys."""
        return {**{f.name: getattr(self, f.name) for f in fields(self)},
                Scoring.RULE: "see runtime/scoring.py: normalized positive votes + centroid softmax "
                        "+ prior_boost * prior softmax"}


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


def probed_vote_sums(buckets: np.ndarray, votes: np.ndarray, bits: int, weight: float) -> np.ndarray:
    """vote_sums plus ``weight`` times the votes of every bucket at Hamming distance 1 (the
    buckets whose code differs in one bit): a query near a hyperplane also reads the bucket
    across it. Post-processing of the released tables, like every reading of them.

    Example:
        >>> votes = np.array([[[1, 0], [0, 3]]], dtype=np.int16)      # 1 table, 1 bit
        >>> probed_vote_sums(np.array([[0]]), votes, 1, 0.5).tolist()
        [[1.0, 1.5]]
    """
    out = vote_sums(buckets, votes).astype(np.float64)
    if weight:
        for h in range(bits):
            out += weight * vote_sums(buckets ^ (1 << h), votes)
    return out


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _rowwise(x: np.ndarray, m: np.ndarray) -> np.ndarray:
    """x @ m one row at a time: BLAS may round a many-row product differently from a one-row
    product, and a text's scores must not depend on the batch it arrives in."""
    return np.stack([row @ m for row in x]) if len(x) else np.zeros((0, m.shape[1]))


def prior_boost(epsilon: float | None, records_per_class: float, counts: np.ndarray | None) -> float:
    """How much the prior's weight grows: max(1, 1/epsilon, R * classes / (epsilon * N)), at
    most SCORING_MAX, where N is the released noisy record count (the sum of the class counts,
    at least 1) and R the bundle's ``prior_records_per_class``.

    Why: the released statistics carry about epsilon * N / classes records' worth of signal
    per class; below about R of it they are mostly noise, and a blend that trusts them is
    worse than the public prior alone (measured on 500-record subsets at epsilon 1: 28.8
    points of average drop to kNN without the count term, 9.1 with it, the prior alone 9.5;
    docs/accuracy.md).

    Example:
        >>> prior_boost(0.5, 0.0, None), prior_boost(1.0, 1000.0, np.array([250.0, 250.0]))
        (2.0, 4.0)
    """
    if epsilon is None:
        return 1.0
    eps = float(epsilon)
    boost = max(1.0, 1.0 / eps)
    if records_per_class and counts is not None:
        n = max(float(np.sum(np.asarray(counts, np.float64))), 1.0)
        boost = max(boost, records_per_class * len(counts) / (eps * n))
    return min(boost, SCORING_MAX)


def clip_l1(z: np.ndarray, bound: float) -> np.ndarray:
    """Rows scaled down to L1 norm at most ``bound`` (the exporter clips records the same way
    before quantizing them: exporter.class_stats.clip_and_quantize).

    Example:
        >>> clip_l1(np.array([[3.0, -4.0], [0.1, 0.2]]), 1.0).round(3).tolist()
        [[0.429, -0.571], [0.1, 0.2]]
    """
    l1 = np.abs(z).sum(axis=1, keepdims=True)
    return z * np.minimum(1.0, bound / np.maximum(l1, 1e-300))


def _unit_rows(a: np.ndarray) -> np.ndarray:
    return a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)


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
                 weights: Weights | None = None, epsilon: float | None = None, mode: str = "blend",
                 probe_weight: float = 0.0):
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
        if not (np.isfinite(probe_weight) and probe_weight >= 0):
            raise ValueError(f"the probe weight must be a finite number >= 0, got {probe_weight}")
        self.votes, self.mode, self.probe_weight = votes, mode, float(probe_weight)
        # The blend reads negative noisy cells as 0; clipping the table once keeps that off
        # the per-query path (post-processing of the release, like the rest).
        self._positive_votes = None if self.plain_votes_only(class_stats, prior, mode) else np.maximum(votes, 0)
        self.weights = weights or Weights()
        self.prior_boost = prior_boost(epsilon, self.weights.prior_records_per_class,
                                       None if class_stats is None else class_stats.counts)
        self._prior = None if prior is None else _unit_rows(np.asarray(prior, np.float64))
        self._stats = None
        if class_stats is not None:
            centred, mu = centred_means(class_stats.sums, class_stats.counts)
            proj = np.asarray(class_stats.projection, np.float64)
            # P (x - origin) = P x - P origin: one matmul per query.
            p_origin = proj @ np.asarray(class_stats.origin, np.float64)
            if self.weights.centroid_rule == "gaussian":
                self._stats = (proj.T.copy(), p_origin, mu, centred.T.copy(), 0.5 * (centred**2).sum(axis=1))
            else:
                self._stats = (proj.T.copy(), p_origin + mu, None, _unit_rows(centred).T.copy(), None)

    @classmethod
    def from_bundle(cls, b: Any, mode: str = "blend", probe_weight: float = 0.0) -> "Scorer":
        return cls(b.hyperplanes, b.votes, offsets=b.offsets, class_stats=b.class_stats, prior=b.prior,
                   weights=Weights.from_map(b.scoring), epsilon=float(b.privacy["epsilon"]), mode=mode,
                   probe_weight=probe_weight)

    @staticmethod
    def plain_votes_only(class_stats: Any, prior: Any, mode: str) -> bool:
        return mode == "votes" or (mode == "blend" and class_stats is None and prior is None)

    @property
    def plain_votes(self) -> bool:
        """True when the scores are Algorithm 2's summed votes (no centroids or prior to blend)."""
        return self.plain_votes_only(self._stats, self._prior, self.mode)

    def centroid_probs(self, x: np.ndarray) -> np.ndarray:
        proj_t, shift, mu, means_t, half_norms = self._stats
        z = _rowwise(x, proj_t) - shift
        if mu is None:  # cosine
            logits = _rowwise(_unit_rows(z), means_t)
        else:           # gaussian: clip as the exporter clipped the records, then centre
            z = clip_l1(z, self.weights.centroid_clip_l1) - mu
            logits = _rowwise(z, means_t) - half_norms
        return _softmax(logits / self.weights.centroid_temperature)

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
            if self.probe_weight:
                return probed_vote_sums(buckets, self.votes, self.hasher.bits, self.probe_weight)
            return vote_sums(buckets, self.votes).astype(np.float64)
        w = self.weights
        positive = probed_vote_sums(buckets, self._positive_votes, self.hasher.bits, self.probe_weight)
        out = w.votes * positive / np.maximum(positive.sum(axis=1, keepdims=True), 1e-12)
        if self._stats is not None:
            out += w.centroids * self.centroid_probs(x)
        if self._prior is not None:
            out += w.prior * self.prior_boost * self.prior_probs(x)
        return out
