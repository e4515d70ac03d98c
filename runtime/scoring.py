"""Scores from the released statistics: noisy class sums, vote tables and the public prior.

Everything here reads only what a bundle released and its public inputs, so it is
post-processing and costs no privacy budget however often it runs. docs/bundle-format.md
("Scoring") is the normative statement; in short, for a query's unit embedding x:

- a bundle with vote tables and no class statistics is scored by the paper's Algorithm 2: the
  sum over tables of the noisy votes in the query's bucket (`vote_sums`), negative sums read
  as 0, over their total (uniform when every sum is at most 0);
- otherwise the score is the blend

      [softmax(cos(z, S_c) / tau_c) + boost * softmax(cos(x, e_c) / tau_p) + pos / sum(pos)] / W

  with z = P (x - origin) the query in the public subspace; S_c the noisy class sum (grid
  units over the grid) pulled toward its description, S_c / m + (a nu / m) unit(P (e_c -
  origin)) with m = max(1, a nu), where nu = sqrt(2 k) noise_scale / grid is the root mean
  square norm of the noise on one sum row (a prior on the class mean whose weight is the
  noise); e_c the description embeddings (the prior term and the pull only with them); boost
  = min(R C K / (epsilon N), 1e6), N the released record count (at least 1); pos the query's
  per-class vote sums with negative cells read as 0 (the term only with vote tables; uniform
  when every cell is 0); W = 1 + boost + [1 with vote tables], so that the scores are a
  distribution over the labels. The label is the argmax, ties to the lower class index;
- a bundle with a head (1.1) is scored by it alone: softmax(W (x - origin) + b), each logit
  summed over d in index order.

Example:
    >>> scorer = Scorer(bundle)                                     # doctest: +SKIP
    >>> scorer.scores(embeddings).shape                              # doctest: +SKIP
    (10, 7)
"""

from __future__ import annotations

import math

import numpy as np

from runtime.bundle.schema import BOOST_MAX, Bundle, Key
from runtime.rowwise import row_products
from runtime.simhash import SimHasher

#: What `Scorer` can return: the blend, or one component alone (`python -m runtime.classify --score`).
MODES = ("blend", "votes", "centroids", "prior", "head")


def vote_sums(buckets: np.ndarray, votes: np.ndarray) -> np.ndarray:
    """Per-class sums of the noisy votes of each query's buckets, shape (n, classes), int64.

    Example:
        >>> votes = np.array([[[1, 0], [0, 3]], [[2, 2], [5, -1]]], dtype=np.int16)
        >>> vote_sums(np.array([[1, 0]]), votes)
        array([[2, 5]])
    """
    tables = np.arange(votes.shape[0])
    return votes[tables[None, :], buckets].sum(axis=1, dtype=np.int64)


def prior_boost(b: Bundle) -> float:
    """R C K / (epsilon N), at most BOOST_MAX: the prior weighs more where the release carries
    little signal (about epsilon N / (C K) records' worth per class).

    Example:
        >>> prior_boost(bundle)                                        # doctest: +SKIP
        0.4
    """
    n = max(float(np.sum(b.class_counts, dtype=np.float64)), 1.0)
    rc = b.scoring.prior_records_per_class * len(b.labels) * b.records_per_unit
    return min(rc / (b.epsilon * n), BOOST_MAX)


def sums_noise_norm(b: Bundle) -> float:
    """nu: the root-mean-square norm of the noise on one row of the class sums, in embedding
    units (a discrete Laplace coordinate of scale t has variance about 2 t^2; a sum of B
    batches' releases carries B such noises)."""
    r = b.releases[Key.CLASS_SUMS]
    return math.sqrt(2.0 * b.class_sums.shape[1] * b.batches) * r.noise_scale / r.grid


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def _unit_rows(a: np.ndarray) -> np.ndarray:
    return a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)


#: A query whose |z| (or |x|) is at most this has no direction worth the name: its cosines
#: would be rounding noise that two readers compute differently, so they are 0 (a uniform softmax).
NEAR_ZERO = 1e-6


def _cosines(a: np.ndarray, dots: np.ndarray) -> np.ndarray:
    """dots / |a| row by row (each row's norm on its own, like `row_products`), 0 where |a| <= NEAR_ZERO."""
    norms = np.array([math.sqrt(float(row @ row)) for row in a]).reshape(len(a), 1)
    return np.where(norms > NEAR_ZERO, dots / np.maximum(norms, NEAR_ZERO), 0.0)


class Scorer:
    """Scores embeddings against one bundle (see the module doc).

    Everything that depends only on the bundle is prepared once: the projection P, the class
    directions (temperature folded in) and the prior's unit description embeddings sit side by
    side in one (D, k + 2C) matrix, so a query costs one product, two norms and one fused
    softmax, plus the hashing with vote tables.
    """

    def __init__(self, b: Bundle, mode: str = "blend"):
        if mode not in MODES:
            raise ValueError(f"unknown scoring mode {mode!r} (one of {', '.join(MODES)})")
        has = {"votes": b.votes is not None, "centroids": b.class_sums is not None, "prior": b.prior is not None,
               "head": b.head is not None}
        if mode != "blend" and not has[mode]:
            what = dict(votes="vote tables", centroids="class statistics", prior="label descriptions", head="head")
            raise ValueError(f"this bundle has no {what[mode]} to score with {mode} alone")
        self.mode, self.classes = mode, len(b.labels)
        #: A head (1.1) scores alone: (W^T, origin, bias) in float64.
        self._head = None if b.head is None else (np.ascontiguousarray(np.asarray(b.head.weights, np.float64).T),
                                                  np.asarray(b.head.origin, np.float64),
                                                  np.asarray(b.head.bias, np.float64))
        self._has_centroids, self._has_prior = has["centroids"], has["prior"]
        self.hasher = None if b.hyperplanes is None else SimHasher(b.hyperplanes, b.offsets)
        self.votes = b.votes
        #: Algorithm 2 (summed raw votes) when there are no class statistics to blend with.
        self.plain_votes = b.votes is not None and (mode == "votes" or not has["centroids"])
        self._positive = None if self.plain_votes or b.votes is None else np.maximum(b.votes, 0)
        self._matrix = None
        if not has["centroids"]:
            return
        self.boost = prior_boost(b) if has["prior"] else 0.0
        proj = np.asarray(b.projection, np.float64)
        self._k = len(proj)
        self._shift = proj @ np.asarray(b.origin, np.float64)
        sums = b.sums
        strength = b.scoring.description_pull * sums_noise_norm(b)
        if has["prior"] and strength > 0:
            m = max(1.0, strength)
            sums = sums / m + (strength / m) * _unit_rows(np.asarray(b.prior, np.float64) @ proj.T - self._shift)
        dirs = _unit_rows(sums).T / b.scoring.centroid_temperature
        self._shift_dirs = self._shift @ dirs
        cols = [proj.T, proj.T @ dirs]
        if has["prior"]:
            cols.append(_unit_rows(np.asarray(b.prior, np.float64)).T / b.scoring.prior_temperature)
        self._matrix = np.ascontiguousarray(np.concatenate(cols, axis=1))

    def _components(self, x: np.ndarray) -> np.ndarray:
        """Centroid and prior probabilities, shape (n, 2, C) (without a prior its row is 0)."""
        h = row_products(x, self._matrix)  # a text's scores must not depend on its batch
        k, c = self._k, self.classes
        logits = np.zeros((len(x), 2, c))
        logits[:, 0] = _cosines(h[:, :k] - self._shift, h[:, k:k + c] - self._shift_dirs)
        if self._has_prior:
            logits[:, 1] = _cosines(x, h[:, -c:])
        probs = _softmax(logits)
        if not self._has_prior:
            probs[:, 1] = 0.0
        return probs

    def scores(self, embeddings: np.ndarray) -> np.ndarray:
        """Per-class scores, shape (n, classes), float64: each row a distribution over the
        labels (non-negative, summing to 1); the label is the argmax."""
        x = np.asarray(embeddings, np.float64)
        if self._head is not None:
            weights_t, origin, bias = self._head
            return _softmax(row_products(x - origin, weights_t) + bias)
        if self.plain_votes:
            return _shares(np.maximum(vote_sums(self.hasher.buckets(x), self.votes), 0))
        parts = self._components(x)
        if self.mode in ("centroids", "prior"):
            return parts[:, 0 if self.mode == "centroids" else 1]
        out = parts[:, 0] + self.boost * parts[:, 1]
        weight = 1.0 + self.boost
        if self._positive is not None:
            out += _shares(vote_sums(self.hasher.buckets(x), self._positive))
            weight += 1.0
        return out / weight


def _shares(pos: np.ndarray) -> np.ndarray:
    """Each row of non-negative vote sums over its total; a row of zeros is uniform (no votes
    say nothing)."""
    pos = pos.astype(np.float64)
    total = pos.sum(axis=1, keepdims=True)
    return np.where(total > 0, pos / np.where(total > 0, total, 1.0), 1.0 / pos.shape[1])
