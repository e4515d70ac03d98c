"""Scores from the released statistics: class centroids, table votes and the public prior.

Everything here reads only what the bundle released (noisy class statistics, noisy vote
tables) and public inputs (the label descriptions' embeddings), so it is post-processing
and costs no privacy budget however often it runs.

A bundle with vote tables only (format 1) is scored by the paper's Algorithm 2: the class
with the largest summed noisy votes. Otherwise the scores blend up to three probability-like
vectors per query x (a unit embedding):

    score = w_c * softmax(centroid logits / tau_c)
            + w_v * votes / sum(votes)                       (when the bundle has vote tables)
            + w_p * boost * softmax(cos(x, d_c) / tau_p)     (when it has label descriptions)

where votes are the per-class sums of the query's buckets with negative noisy cells read as 0
(0 / 0 reads as 0), d_c the description embeddings, and the label is the argmax (ties go to
the lower class index). The centroid logits follow the bundle's ``centroid_rule``, with z the
query in the public basis, z = P (x - origin):

- "cosine_public" (format 3.0; the default, with 4.0's pull): logit_c = cos(z, S_c), S_c the
  noisy class sum (the direction of the class mean in the public-centred frame; counts and
  clip do not enter, so neither does the query's scale). From format 4.0 the bundle's
  ``description_pull`` a moves each sum toward its label description before the cosine:
  S_c + a * nu * unit(P (d_c - origin)), nu the root-mean-square norm of the noise on one
  sum row (stated by the release). A prior on each class mean whose weight is the noise: a
  small class's sum, mostly noise, leans on its description; a large one's barely moves.
- "gaussian" (format 2.1): the query clipped like the records (L1 at most
  ``centroid_clip_l1``), minus the released overall mean m; logit_c = <z, m_c> - |m_c|^2 / 2
  with m_c the centred class means.
- "cosine" (format 2.0): logit_c = cos(z - m, m_c).

The prior's boost follows ``prior_boost_rule``: "linear" (format 3.0) is R * C * K /
(epsilon * N), fading as the release carries more signal; "max" (format 2) is max(1, 1 /
epsilon, R * C / (epsilon * N)); N is the released noisy record count (the sum of the class
counts, at least 1), R the bundle's ``prior_records_per_class``, K its records per person.
The rules and their constants ship in the bundle's ``scoring`` map (docs/bundle-format.md);
docs/accuracy.md has the measurements behind them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping

import math

import numpy as np

from runtime.bundle.schema import (CENTROID_RULES, PRIOR_BOOST_RULES, SCORING_MAX, Bundle, ClassStats, Privacy, Release,
                                   Scoring, Statistic, stated_grid)
from runtime.centroids import centred_means
from runtime.simhash import SimHasher

#: What `Scorer` can return: the blend, or one component alone (for benchmarks and
#: `python -m runtime.classify --score`).
MODES = ("blend", "votes", "centroids", "prior")


@dataclass(frozen=True)
class Weights:
    """The blend's weights, temperatures and rules (the bundle's ``scoring`` map overrides
    these). The defaults are what a format-2.0 bundle, whose map names no rule, means."""

    votes: float = 1.0
    centroids: float = 1.0
    prior: float = 1.0
    centroid_temperature: float = 0.05
    prior_temperature: float = 0.05
    centroid_rule: str = "cosine"
    centroid_clip_l1: float = 0.0
    #: R in the prior's boost (0: no count term).
    prior_records_per_class: float = 0.0
    prior_boost_rule: str = "max"
    #: a in the "cosine_public" rule's pull toward the descriptions (0: none).
    description_pull: float = 0.0

    @classmethod
    def measured(cls) -> "Weights":
        """What the exporter ships (format 4.0): the public-frame cosine at temperature 0.04, the
        class sums pulled toward the descriptions by half the noise's norm, and the linear prior
        weight with R = 100 (docs/accuracy.md).

        Example:
            >>> w = Weights.measured(); w.centroid_rule, w.centroid_temperature, w.prior_boost_rule
            ('cosine_public', 0.04, 'linear')
            >>> w.description_pull
            0.5
        """
        return cls(centroid_rule="cosine_public", centroid_temperature=0.04, prior_records_per_class=100.0,
                   prior_boost_rule="linear", description_pull=0.5)

    @classmethod
    def from_map(cls, m: Mapping[str, Any] | None) -> "Weights":
        """The defaults overridden by a bundle's ``scoring`` map (unknown names are ignored).

        Example:
            >>> Weights.from_map({"votes": 2, "rule": "text"}).votes
            2.0
            >>> Weights.from_map({"centroid_rule": "median"})
            Traceback (most recent call last):
            ...
            ValueError: unknown centroid_rule 'median' (one of cosine, gaussian, cosine_public)
        """
        known = {f.name for f in fields(cls)}
        rules = {Scoring.CENTROID_RULE: CENTROID_RULES, Scoring.PRIOR_BOOST_RULE: PRIOR_BOOST_RULES}
        kw: dict[str, Any] = {}
        for k, v in (m or {}).items():
            if k in rules:
                if v not in rules[k]:
                    raise ValueError(f"unknown {k} {v!r} (one of {', '.join(rules[k])})")
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
                Scoring.RULE: "docs/bundle-format.md, section 9: centroid softmax + normalized positive votes "
                              "+ prior boost x prior softmax"}


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
    """Softmax over the last axis (any leading shape: several softmaxes in one pass)."""
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def _rowwise(x: np.ndarray, m: np.ndarray) -> np.ndarray:
    """x @ m one row at a time: BLAS may round a many-row product differently from a one-row
    product, and a text's scores must not depend on the batch it arrives in."""
    if len(x) == 1:
        return (x[0] @ m)[None, :]
    return np.stack([row @ m for row in x]) if len(x) else np.zeros((0, m.shape[1]))


def _norms(a: np.ndarray) -> np.ndarray:
    """Row norms, shape (n, 1), at least 1e-12 (a zero row divides to zeros, not NaN), each
    row computed on its own like `_rowwise` (and cheaply: a query at a time, numpy's per-call
    cost is most of the work)."""
    return np.array([[max(math.sqrt(float(row @ row)), 1e-12)] for row in a]).reshape(len(a), 1)


def prior_boost(epsilon: float | None, records_per_class: float, counts: np.ndarray | None, rule: str = "max",
                max_records_per_unit: int = 1) -> float:
    """How much the prior's weight grows with how little signal the release carries, at most
    SCORING_MAX (see the module doc for the two rules).

    The released statistics carry about epsilon * N / (C * K) records' worth of signal per
    class: where that is small, the public descriptions are the better evidence.

    Example:
        >>> prior_boost(0.5, 0.0, None), prior_boost(1.0, 1000.0, np.array([250.0, 250.0]))
        (2.0, 4.0)
        >>> prior_boost(1.0, 100.0, np.array([250.0, 250.0]), "linear")
        0.4
    """
    if epsilon is None:
        return 1.0
    eps = float(epsilon)
    if rule == "linear":
        if counts is None:
            raise ValueError("the linear prior boost needs the released class counts")
        n = max(float(np.sum(np.asarray(counts, np.float64))), 1.0)
        return min(records_per_class * len(counts) * max_records_per_unit / (eps * n), SCORING_MAX)
    boost = max(1.0, 1.0 / eps)
    if records_per_class and counts is not None:
        n = max(float(np.sum(np.asarray(counts, np.float64))), 1.0)
        boost = max(boost, records_per_class * len(counts) / (eps * n))
    return min(boost, SCORING_MAX)


def sums_noise_norm(privacy: Mapping[str, Any], k: int) -> float:
    """nu, the root-mean-square norm of the noise on one row of k noisy class sums, in the
    stored (embedding) units: sqrt(2 k) x noise_scale / grid of the ``class_sums`` release (a
    Laplace coordinate of scale t has variance 2 t^2; a grid the reader would not compute with,
    `stated_grid`, reads as 1). 0 when the bundle has no ``class_sums`` release (formats 1 and 2).

    Example:
        >>> facts = {"releases": [{"statistic": "class_sums", "noise_scale": 200.0, "grid": 100}]}
        >>> sums_noise_norm(facts, 8)
        8.0
    """
    for r in privacy.get(Privacy.RELEASES) or ():
        if isinstance(r, Mapping) and r.get(Release.STATISTIC) == Statistic.CLASS_SUMS:
            return math.sqrt(2.0 * k) * float(r[Release.NOISE_SCALE]) / (stated_grid(r.get(Release.GRID)) or 1)
    return 0.0


def pulled_sums(sums: np.ndarray, toward: np.ndarray, strength: float) -> np.ndarray:
    """sums + strength x unit(toward), row by row, scaled by 1 / max(1, strength) first so
    that no strength a bundle can state overflows (the cosine rule reads only directions).

    Example:
        >>> pulled_sums(np.array([[3.0, 0.0]]), np.array([[0.0, 2.0]]), 4.0).tolist()
        [[0.75, 1.0]]
    """
    scale = max(1.0, strength)
    return sums / scale + (strength / scale) * _unit_rows(toward)


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

    The classifier and the benchmarks both score through this class, so a benchmark measures
    exactly what a device computes. Everything that depends only on the bundle is computed
    here once (post-processing). The public projection P, the class directions D of the
    centroid rule and the prior's unit description embeddings sit side by side in one (dim,
    k + 2C) matrix, so a query costs one product with it, a norm, one fused softmax of the
    two components and, with vote tables, the hashing: z @ D = x @ (P^T D) - (P origin) @ D.

    Example:
        >>> scorer = Scorer.from_bundle(bundle)                        # doctest: +SKIP
        >>> scorer.scores(embeddings).shape                             # doctest: +SKIP
        (10, 7)
    """

    def __init__(self, hyperplanes: np.ndarray | None, votes: np.ndarray | None, *,
                 offsets: np.ndarray | None = None, class_stats: ClassStats | None = None,
                 prior: np.ndarray | None = None, weights: Weights | None = None, epsilon: float | None = None,
                 mode: str = "blend", probe_weight: float = 0.0, max_records_per_unit: int = 1,
                 sums_noise: float = 0.0):
        if mode not in MODES:
            raise ValueError(f"unknown scoring mode {mode!r} (one of {', '.join(MODES)})")
        if (hyperplanes is None) != (votes is None):
            raise ValueError("vote tables need their hyperplanes, and hyperplanes their tables")
        if votes is None and class_stats is None and prior is None:
            raise ValueError("nothing to score with: no vote tables, class statistics or prior")
        if mode == "votes" and votes is None:
            raise ValueError("this bundle has no vote tables to score with votes")
        if mode == "centroids" and class_stats is None:
            raise ValueError("this bundle has no class statistics to score with centroids")
        if mode == "prior" and prior is None:
            raise ValueError("this bundle has no label descriptions to score with a prior")
        if not (np.isfinite(probe_weight) and probe_weight >= 0):
            raise ValueError(f"the probe weight must be a finite number >= 0, got {probe_weight}")
        self.mode, self.probe_weight = mode, float(probe_weight)
        self.weights = weights or Weights()
        self.hasher = self.votes = self._positive_votes = None
        if votes is not None:
            self.hasher = SimHasher(hyperplanes, offsets)
            if votes.shape[:2] != (self.hasher.tables, 2**self.hasher.bits):
                raise ValueError(f"votes shape {votes.shape} does not match {self.hasher.tables} tables of "
                                 f"{2**self.hasher.bits} buckets")
            self.votes = votes
            # The blend reads negative noisy cells as 0; clipping the table once keeps that off
            # the per-query path (post-processing of the release, like the rest).
            if not self.plain_votes_only(class_stats, prior, mode):
                self._positive_votes = np.maximum(votes, 0)
        counts = None if class_stats is None else class_stats.counts
        self.prior_boost = prior_boost(epsilon, self.weights.prior_records_per_class, counts,
                                       self.weights.prior_boost_rule, max_records_per_unit)
        self._has_centroids, self._has_prior = class_stats is not None, prior is not None
        self._k = self._classes = 0
        cols = []
        if class_stats is not None:
            proj = np.asarray(class_stats.projection, np.float64)
            self._k, self._classes = proj.shape[0], len(class_stats.counts)
            shift, dirs, offset, self._gauss = self._centroid_rule(class_stats, proj @ np.asarray(
                class_stats.origin, np.float64), prior, sums_noise)
            # The temperature divides the logits: folded into the directions and the offset.
            dirs = dirs / self.weights.centroid_temperature
            self._offset = None if offset is None else offset / self.weights.centroid_temperature
            self._shift, self._shift_dirs = shift, shift @ dirs
            cols += [proj.T, proj.T @ dirs]
        if prior is not None:
            self._classes = len(prior)
            cols.append(_unit_rows(np.asarray(prior, np.float64)).T / self.weights.prior_temperature)
        self._matrix = np.ascontiguousarray(np.concatenate(cols, axis=1)) if cols else None

    def _centroid_rule(self, cs: ClassStats, p_origin: np.ndarray, prior: np.ndarray | None,
                       sums_noise: float) -> tuple[Any, ...]:
        """What the bundle's centroid rule needs per query, prepared once: (shift, class
        directions D (k, C), logit offset, gaussian clip or None). Logits are, with z = P x - shift:
        cosine rules (z @ D) / |z|; gaussian min(1, clip / |z|_1) (z @ D) + offset."""
        rule = self.weights.centroid_rule
        if rule == "cosine_public":
            sums = np.asarray(cs.sums, np.float64)
            strength = self.weights.description_pull * sums_noise
            if prior is not None and strength > 0:
                toward = np.asarray(prior, np.float64) @ np.asarray(cs.projection, np.float64).T - p_origin
                sums = pulled_sums(sums, toward, strength)
            return p_origin, _unit_rows(sums).T, None, None
        centred, mu = centred_means(cs.sums, cs.counts)
        if rule == "gaussian":  # <clip(z) - mu, m_c> - |m_c|^2 / 2
            return p_origin, centred.T, -(mu @ centred.T) - 0.5 * (centred**2).sum(axis=1), \
                self.weights.centroid_clip_l1
        return p_origin + mu, _unit_rows(centred).T, None, None

    @classmethod
    def from_bundle(cls, b: Bundle, mode: str = "blend", probe_weight: float = 0.0) -> "Scorer":
        k = 0 if b.class_stats is None else len(b.class_stats.projection)
        return cls(b.hyperplanes, b.votes, offsets=b.offsets, class_stats=b.class_stats, prior=b.prior,
                   weights=Weights.from_map(b.scoring), epsilon=float(b.privacy[Privacy.EPSILON]), mode=mode,
                   probe_weight=probe_weight, max_records_per_unit=b.records_per_unit,
                   sums_noise=sums_noise_norm(b.privacy, k))

    @staticmethod
    def plain_votes_only(class_stats: Any, prior: Any, mode: str) -> bool:
        return mode == "votes" or (mode == "blend" and class_stats is None and prior is None)

    @property
    def plain_votes(self) -> bool:
        """True when the scores are Algorithm 2's summed votes (no centroids or prior to blend)."""
        return self.votes is not None and self.plain_votes_only(self._has_centroids or None,
                                                                self._has_prior or None, self.mode)

    def _components(self, x: np.ndarray) -> np.ndarray:
        """Centroid and prior probabilities, shape (n, 2, C) (a missing component's row is 0)."""
        h = _rowwise(x, self._matrix)
        k, c = self._k, self._classes
        logits = np.zeros((len(x), 2, c))
        if self._has_centroids:
            z = h[:, :k] - self._shift
            zd = h[:, k:k + c] - self._shift_dirs             # z @ D
            if self._gauss is None:
                logits[:, 0] = zd / _norms(z)
            else:  # clip as the exporter clipped the records
                l1 = np.abs(z).sum(axis=1, keepdims=True)
                logits[:, 0] = zd * np.minimum(1.0, self._gauss / np.maximum(l1, 1e-300)) + self._offset
        if self._has_prior:
            logits[:, 1] = h[:, -c:] / _norms(x)
        probs = _softmax(logits)
        if not (self._has_centroids and self._has_prior):
            probs[:, 0] *= self._has_centroids
            probs[:, 1] *= self._has_prior
        return probs

    def centroid_probs(self, x: np.ndarray) -> np.ndarray:
        """The centroid component alone, shape (n, classes)."""
        return self._components(np.asarray(x, np.float64))[:, 0]

    def prior_probs(self, x: np.ndarray) -> np.ndarray:
        """The prior component alone (before its weight and boost), shape (n, classes)."""
        return self._components(np.asarray(x, np.float64))[:, 1]

    def scores(self, embeddings: np.ndarray) -> np.ndarray:
        """Per-class scores, shape (n, classes), float64; the label is the argmax."""
        x = np.asarray(embeddings, np.float64)
        if self.plain_votes:
            buckets = self.hasher.buckets(x)
            if self.probe_weight:
                return probed_vote_sums(buckets, self.votes, self.hasher.bits, self.probe_weight)
            return vote_sums(buckets, self.votes).astype(np.float64)
        if self._matrix is None:  # vote tables and nothing else, read in blend mode
            out = np.zeros((len(x), self.votes.shape[2]))
        else:
            parts = self._components(x)
            if self.mode == "centroids":
                return parts[:, 0]
            if self.mode == "prior":
                return parts[:, 1]
            w = self.weights
            out = w.centroids * parts[:, 0] + (w.prior * self.prior_boost) * parts[:, 1]
        if self.votes is not None:
            positive = probed_vote_sums(self.hasher.buckets(x), self._positive_votes, self.hasher.bits,
                                        self.probe_weight)
            out += self.weights.votes * positive / np.maximum(positive.sum(axis=1, keepdims=True), 1e-12)
        return out
