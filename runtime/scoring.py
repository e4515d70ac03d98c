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

from runtime.bundle.exactmath import exp_array
from runtime.bundle.schema import BOOST_MAX, NEAR_ZERO, UNIT_MIN_NORM, Bundle, Key
from runtime.rowwise import row_norms, row_products, row_sums
from runtime.simhash import SimHasher

#: What `Scorer` can return: the blend, or one component alone (`python -m runtime.classify --score`).
MODES = ("blend", "votes", "centroids", "prior", "head")


def vote_sums(buckets: np.ndarray, votes: np.ndarray, positive: bool = False) -> np.ndarray:
    """Per-class sums of the noisy votes of each query's buckets, shape (n, classes), int64
    (``positive``: negative cells read as 0, on the gathered cells, not a copy of the tables).

    Example:
        >>> votes = np.array([[[1, 0], [0, 3]], [[2, 2], [5, -1]]], dtype=np.int16)
        >>> vote_sums(np.array([[1, 0]]), votes)
        array([[2, 5]])
    """
    tables = np.arange(votes.shape[0])
    cells = votes[tables[None, :], buckets]  # (n, T, C): a new array, n x T x C values
    if positive:
        np.maximum(cells, 0, out=cells)
    return cells.sum(axis=1, dtype=np.int64)


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
    """Section 7's softmax: the largest subtracted, the contract's exp, the sum in index order."""
    e = exp_array(z - z.max(axis=-1, keepdims=True))
    return e / row_sums(e)


def _unit_rows(a: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """unit(v) / temperature of each row, value by value (section 7)."""
    out = a / np.maximum(row_norms(a), UNIT_MIN_NORM)
    return out if temperature == 1.0 else out / temperature


def _cosines(a: np.ndarray, directions_t: np.ndarray) -> np.ndarray:
    """dot(a, d_c) / |a| for each row of ``a`` and each column of ``directions_t``, 0 where
    |a| <= NEAR_ZERO: the dot products first, then one division each (section 7's order)."""
    dots = row_products(a, directions_t)
    norms = row_norms(a)
    return np.where(norms > NEAR_ZERO, dots / np.where(norms > NEAR_ZERO, norms, 1.0), 0.0)


class Scorer:
    """Scores embeddings against one bundle (see the module doc).

    Everything that depends only on the bundle is prepared once (P^T, P o, the class directions
    over their temperature, the prior's unit rows over theirs); a query then follows section 7
    of docs/bundle-format.md in its order, so that its scores, and so its label, ties included,
    are the same bits as the Java and TypeScript readers' (no product folded ahead, no BLAS,
    the contract's exp).
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
        self._positive = not self.plain_votes and b.votes is not None
        self._directions_t = None
        if not has["centroids"]:
            return
        self.boost = prior_boost(b) if has["prior"] else 0.0
        # Section 7, step by step in its order (every reader's): P^T for proj(v) = dot(v, P_j).
        self._proj_t = np.ascontiguousarray(np.asarray(b.projection, np.float64).T)
        self._k = self._proj_t.shape[1]
        self._shift = row_products(np.asarray(b.origin, np.float64)[None, :], self._proj_t)[0]
        sums = b.sums
        strength = b.scoring.description_pull * sums_noise_norm(b)
        if has["prior"] and strength > 0:
            m = max(1.0, strength)
            toward = _unit_rows(row_products(np.asarray(b.prior, np.float64), self._proj_t) - self._shift)
            sums = sums / m + (strength / m) * toward
        self._directions_t = np.ascontiguousarray(_unit_rows(sums, b.scoring.centroid_temperature).T)
        self._prior_t = None if not has["prior"] else np.ascontiguousarray(
            _unit_rows(np.asarray(b.prior, np.float64), b.scoring.prior_temperature).T)

    def _components(self, x: np.ndarray) -> np.ndarray:
        """Centroid and prior probabilities, shape (n, 2, C) (without a prior its row is 0)."""
        logits = np.zeros((len(x), 2, self.classes))
        z = row_products(x, self._proj_t) - self._shift  # a text's scores must not depend on its batch
        logits[:, 0] = _cosines(z, self._directions_t)
        if self._has_prior:
            logits[:, 1] = _cosines(x, self._prior_t)
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
        if self._positive:
            out += _shares(vote_sums(self.hasher.buckets(x), self.votes, positive=True))
            weight += 1.0
        return out / weight


def _shares(pos: np.ndarray) -> np.ndarray:
    """Each row of non-negative vote sums over its total; a row of zeros is uniform (no votes
    say nothing)."""
    pos = pos.astype(np.float64)
    total = pos.sum(axis=1, keepdims=True)
    return np.where(total > 0, pos / np.where(total > 0, total, 1.0), 1.0 / pos.shape[1])
