"""A public subspace for the class statistics, learnt from public text only.

Releasing per-class sums of 384-d embeddings costs noise in every coordinate; releasing them
in a k-d subspace costs noise in k coordinates, and the subspace's bound on a projected unit
vector (L2 <= 1) keeps the sensitivity small. The subspace must not come from the private
records (that would leak them through the basis), so it is the principal components of
texts anyone can read: the encoder's own vocabulary (the first whole words of its WordPiece
list, which is ordered roughly by frequency) plus the label descriptions the user supplies
as public text. The result depends only on the encoder and the label descriptions.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

#: Whole vocabulary words embedded for the basis: enough for 128 stable components, at a
#: few seconds of encoding per build.
VOCAB_WORDS = 8000
DEFAULT_DIM = 128
_WORD = re.compile(r"[a-z]{3,}")


@dataclass(frozen=True)
class PublicBasis:
    """``origin`` (dim,) and orthonormal rows ``projection`` (k, dim): z = P (x - origin).

    Example:
        >>> b = PublicBasis(np.zeros(3, np.float32), np.eye(3, dtype=np.float32)[:2])
        >>> b.project(np.array([[1.0, 2.0, 3.0]]))
        array([[1., 2.]])
    """

    origin: np.ndarray
    projection: np.ndarray

    @property
    def dim(self) -> int:
        return int(self.projection.shape[0])

    def project(self, embeddings: np.ndarray) -> np.ndarray:
        return (np.asarray(embeddings, np.float64) - self.origin) @ self.projection.T.astype(np.float64)


def public_texts(tokenizer_json: str, label_descriptions: Sequence[str] | None, words: int = VOCAB_WORDS) -> list[str]:
    """The public texts behind the basis: vocabulary words, then the label descriptions."""
    vocab = json.loads(tokenizer_json)["model"]["vocab"]
    ordered = [w for w, _ in sorted(vocab.items(), key=lambda kv: kv[1]) if _WORD.fullmatch(w)]
    return ordered[:words] + list(label_descriptions or ())


def fit_public_basis(embed: Callable[[list[str]], np.ndarray], texts: Sequence[str], k: int = DEFAULT_DIM) -> PublicBasis:
    """Top-k principal components of the public texts' embeddings (centred at their mean)."""
    if not 1 <= k <= len(texts):
        raise ValueError(f"a {k}-d public basis needs at least {k} public texts, got {len(texts)}")
    e = np.asarray(embed(list(texts)), dtype=np.float64)
    origin = e.mean(axis=0)
    _, _, vt = np.linalg.svd(e - origin, full_matrices=False)
    if k > vt.shape[0]:
        raise ValueError(f"a {k}-d public basis needs {k}-d embeddings, got {vt.shape[0]}")
    return PublicBasis(origin.astype(np.float32), np.ascontiguousarray(vt[:k], dtype=np.float32))
