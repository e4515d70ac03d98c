"""Algorithm 2 of the paper: sum the noisy vote vectors of the query's bucket in each table.

Everything here reads only the released tables, so it is post-processing and costs no
privacy budget however often it runs.
"""

from __future__ import annotations

import numpy as np

from runtime.simhash import SimHasher


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


class Scorer:
    """Scores embeddings against released tables: SimHash, then `vote_sums`.

    The classifier and the benchmarks both score through this class, so a benchmark
    measures exactly what a device computes.

    Example:
        >>> scorer = Scorer(bundle.hyperplanes, bundle.votes)          # doctest: +SKIP
        >>> scorer.scores(embeddings).shape                             # doctest: +SKIP
        (10, 7)
    """

    def __init__(self, hyperplanes: np.ndarray, votes: np.ndarray):
        self.hasher = SimHasher(hyperplanes)
        if votes.shape[:2] != (self.hasher.tables, 2**self.hasher.bits):
            raise ValueError(f"votes shape {votes.shape} does not match {self.hasher.tables} tables of "
                             f"{2**self.hasher.bits} buckets")
        self.votes = votes

    def scores(self, embeddings: np.ndarray) -> np.ndarray:
        """Per-class scores, shape (n, classes), float64."""
        return vote_sums(self.hasher.buckets(embeddings), self.votes).astype(np.float64)
