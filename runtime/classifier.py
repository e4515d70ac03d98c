"""The runtime's facade: load a bundle once, then classify texts offline.

Everything it does reads only the released bundle, so it is post-processing: any number of
queries costs no further privacy budget. The CLI (`python -m runtime.classify`) and the
Python API share this one code path.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from runtime import bundle as bundle_format
from runtime.bundle import Bundle
from runtime.describe import bundle_info
from runtime.embedder import Embedder
from runtime.encoder import TextEncoder
from runtime.errors import InputError
from runtime.scoring import Scorer
from runtime.tokenizer import TextTokenizer

#: Texts longer than this (in characters) are refused rather than tokenized: the encoder
#: reads at most max_length tokens anyway, and a multi-megabyte "text" is almost always a
#: mistake (a whole file piped as one line).
MAX_TEXT_CHARS = 1_000_000

#: Where `python -m runtime.classify` looks when no --bundle is given (the quick start writes it).
DEFAULT_BUNDLE = Path("models") / "quickstart.dpedge"
BUNDLE_ENV = "DPEDGE_BUNDLE"


def default_bundle_path() -> Path:
    """$DPEDGE_BUNDLE if set, else models/quickstart.dpedge under the current folder."""
    return Path(os.environ.get(BUNDLE_ENV) or DEFAULT_BUNDLE)


def check_text(text: object) -> str:
    """Return the text if it can be classified, else raise InputError saying why."""
    if not isinstance(text, str):
        raise InputError(f"text must be a string, got {type(text).__name__}")
    if not text.strip():
        raise InputError("empty text: there is nothing to classify")
    if len(text) > MAX_TEXT_CHARS:
        raise InputError(f"text has {len(text)} characters, over the limit of {MAX_TEXT_CHARS}")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate: the tokenizer would raise a TypeError
            raise InputError(f"not valid UTF-8 (lone surrogate U+{ord(text[exc.start]):04X} at character {exc.start}; "
                             f"invalid bytes in a command-line argument arrive as these)") from None
    return text


@dataclass(frozen=True)
class Prediction:
    """A label and the score of every label (higher is better; docs/bundle-format.md section 7)."""

    label: str
    scores: dict[str, float]

    def top(self, k: int) -> list[tuple[str, float]]:
        """The k best labels with their scores, best first (ties keep label order)."""
        return sorted(self.scores.items(), key=lambda kv: -kv[1])[:max(1, k)]


class Classifier:
    """A loaded bundle, ready to classify.

    Example:
        >>> clf = Classifier.load("models/quickstart.dpedge")          # doctest: +SKIP
        >>> clf.predict(["wake me up at six"])[0].label                 # doctest: +SKIP
        'alarm_timer'
    """

    def __init__(self, b: Bundle, *, backend: str = "auto", threads: int | None = None, workers: int = 1,
                 path: Path | None = None, score: str = "blend"):
        self.path = path
        self.bundle = b
        self.labels = b.labels
        #: What `info` reports.
        self._info = bundle_info(b, path)
        self.embedder = Embedder(b.encoder, backend=backend, threads=threads, workers=workers)
        #: Cosine between this engine's and the exporter's embedding of the check text (loading
        #: refuses a mismatch).
        self.check_cosine: float = self.embedder.verify()
        try:
            self.scorer = Scorer(b, mode=score)
        except ValueError as exc:  # e.g. --score centroids on a bundle without class statistics
            raise InputError(str(exc)) from None

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, backend: str = "auto", threads: int | None = None,
             workers: int = 1, score: str = "blend") -> "Classifier":
        """Read, validate and prepare a bundle (raises BundleError if it is unusable).

        ``backend``: "auto" (the first installed engine for the bundle's encoder format) or
        a name from runtime.encoder.BACKENDS; ``threads``: the engine's threads per text
        (None: all cores); ``workers``: texts embedded at once in `predict` (results are
        identical either way); ``score``: "blend" (the bundle's scoring) or one component
        alone, "votes", "centroids" or "prior" (runtime.scoring.MODES).
        """
        return cls(bundle_format.load(path), backend=backend, threads=threads, workers=workers, path=Path(path),
                   score=score)

    @property
    def tokenizer(self) -> TextTokenizer:
        return self.embedder.tokenizer

    @property
    def encoder(self) -> TextEncoder:
        return self.embedder.encoder

    @property
    def privacy(self) -> dict[str, Any]:
        return self.bundle.privacy

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-vector embeddings, (n, dim) float32; raises InputError naming a bad text."""
        for i, t in enumerate(texts):
            try:
                check_text(t)
            except InputError as exc:
                raise InputError(f"text {i}: {exc}") from None
        return self.embedder.embed(texts)

    def predict(self, texts: Sequence[str]) -> list[Prediction]:
        """Label and per-label scores for each text (argmax; ties go to the earlier label)."""
        scores = self.scorer.scores(self.embed(texts))
        return [
            Prediction(self.labels[int(np.argmax(row))], dict(zip(self.labels, map(float, row))))
            for row in scores
        ]

    def info(self) -> dict[str, Any]:
        """What the bundle is: labels, privacy facts, hashing, encoder and sizes in bytes."""
        return {**copy.deepcopy(self._info), "backend": self.embedder.backend, "check_cosine": self.check_cosine}
