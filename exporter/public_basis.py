"""A public basis for the class statistics, learnt from public text only.

Releasing per-class sums of 384-d embeddings costs noise in every coordinate released, so
the class statistics live in the first k coordinates of a public rotation of the embedding
space, k chosen by the release's own rule (exporter.class_stats). The rotation must not come
from the private records (it would leak them through the basis), so it comes from texts
anyone can read: the encoder's own vocabulary (the first whole words of its WordPiece list,
ordered roughly by frequency) and the label descriptions the user supplies as public text.

The task basis puts first the directions in which the label descriptions differ (their
C - 1 orthonormalised contrasts: where the classes are expected to separate), then the
principal directions of the vocabulary and descriptions in what is left. Its origin, the
mean of those public embeddings, centres every record without any statistic of the data.
Alongside it goes a public table of clip sizes: the median L1 norm of the vocabulary words
in the first k coordinates, for every k, which the class statistics use as their clip.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from runtime.rowwise import row_products

#: Whole vocabulary words embedded for the basis: enough for a stable 384-d rotation, at a
#: few seconds of encoding per build.
VOCAB_WORDS = 8000
DEFAULT_DIM = 128
_WORD = re.compile(r"[a-z]{3,}")


@dataclass(frozen=True)
class PublicBasis:
    """``origin`` (dim,) and orthonormal rows ``projection`` (k, dim): z = P (x - origin).

    ``l1_median[j]`` (when present) is the public clip size for the first j + 1 coordinates.

    Example:
        >>> b = PublicBasis(np.zeros(3, np.float32), np.eye(3, dtype=np.float32)[:2])
        >>> b.project(np.array([[1.0, 2.0, 3.0]]))
        array([[1., 2.]])
    """

    origin: np.ndarray
    projection: np.ndarray
    l1_median: np.ndarray | None = field(default=None, repr=False)

    @property
    def dim(self) -> int:
        return int(self.projection.shape[0])

    def project(self, embeddings: np.ndarray) -> np.ndarray:
        """Coordinates in the basis, each row a function of its own embedding alone
        (runtime.rowwise: a record's projection must not depend on the records beside it)."""
        return row_products(np.asarray(embeddings, np.float64) - self.origin, self.projection.T)

    def first(self, k: int) -> "PublicBasis":
        """The basis of the first ``k`` coordinates (what a bundle stores for k)."""
        if not 1 <= k <= self.dim:
            raise ValueError(f"k must be between 1 and {self.dim}, got {k}")
        l1 = None if self.l1_median is None else self.l1_median[:k]
        return PublicBasis(self.origin, np.ascontiguousarray(self.projection[:k]), l1)

    def clip_for(self, k: int) -> float:
        """The public clip of the first ``k`` coordinates: the vocabulary's median L1 norm there."""
        if self.l1_median is None:
            raise ValueError("this basis has no public clip table (fit it with task_basis)")
        return float(self.l1_median[k - 1])


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


def task_basis(vocabulary: np.ndarray, descriptions: np.ndarray | None) -> PublicBasis:
    """The full public rotation (dim rows): description contrasts first, then the principal
    directions of vocabulary and descriptions in their orthogonal complement; with its
    table of public clip sizes. Without descriptions, the vocabulary's principal directions.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> b = task_basis(rng.standard_normal((50, 4)), rng.standard_normal((2, 4)))
        >>> b.projection.shape, bool(np.allclose(b.projection @ b.projection.T, np.eye(4), atol=1e-6))
        ((4, 4), True)
    """
    vocabulary = np.asarray(vocabulary, np.float64)
    texts = vocabulary if descriptions is None else np.concatenate([vocabulary, np.asarray(descriptions, np.float64)])
    origin = texts.mean(axis=0)
    contrasts = np.zeros((texts.shape[1], 0))
    if descriptions is not None and len(descriptions) > 1:
        d = np.asarray(descriptions, np.float64)
        q, r = np.linalg.qr((d - d.mean(axis=0)).T)
        contrasts = q[:, np.abs(np.diag(r)) > 1e-9][:, :len(d) - 1]
    rest = texts - origin
    rest = rest - (rest @ contrasts) @ contrasts.T
    _, _, vt = np.linalg.svd(rest, full_matrices=False)
    rotation = np.concatenate([contrasts.T, vt[:texts.shape[1] - contrasts.shape[1]]], axis=0)
    l1 = np.median(np.cumsum(np.abs((vocabulary - origin) @ rotation.T), axis=1), axis=0)
    return PublicBasis(origin.astype(np.float32), np.ascontiguousarray(rotation, dtype=np.float32), l1)
