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
from runtime.bundle import Bundle, EncoderPack
from runtime.bundle.schema import MAX_QUERY_CHARS
from runtime.describe import bundle_info
from runtime.embedder import Embedder
from runtime.encoder import TextEncoder
from runtime.errors import InputError
from runtime.scoring import Scorer
from runtime.tokenizer import TextTokenizer

#: Texts longer than this (in code points) are refused rather than tokenized: the encoder
#: reads at most max_length tokens anyway, and a multi-megabyte "text" is almost always a
#: mistake (a whole file piped as one line).
MAX_TEXT_CHARS = MAX_QUERY_CHARS

#: Where `python -m runtime.classify` looks when no --bundle is given (the quick start writes it).
DEFAULT_BUNDLE = Path("models") / "quickstart.dpedge"
BUNDLE_ENV = "DPEDGE_BUNDLE"
#: The encoder pack `python -m runtime.classify` reads a statistics bundle with, when --encoder-pack is not given.
PACK_ENV = "DPEDGE_ENCODER_PACK"


def default_bundle_path() -> Path:
    """$DPEDGE_BUNDLE if set, else models/quickstart.dpedge under the current folder."""
    return Path(os.environ.get(BUNDLE_ENV) or DEFAULT_BUNDLE)


def check_text(text: object) -> str:
    """Return the text if it can be tokenized, else raise InputError saying why (the contract's
    query rules, in order: a string, at most MAX_TEXT_CHARS code points, valid Unicode; the
    last rule, at least one token, is `Classifier`'s: it needs the bundle's tokenizer)."""
    if not isinstance(text, str):
        raise InputError("query.type", "", f"text must be a string, got {type(text).__name__}")
    if len(text) > MAX_TEXT_CHARS:
        raise InputError("query.too_long", "", f"text has {len(text)} characters, over the limit of {MAX_TEXT_CHARS}")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate: invalid bytes of a command-line argument arrive so
            raise InputError("query.unicode", "", f"not valid UTF-8 (lone surrogate U+{ord(text[exc.start]):04X} at "
                                                  f"character {exc.start}; invalid bytes in a command-line argument "
                                                  f"arrive as these)") from None
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
        >>> clf.classify(["wake me up at six"])[0].label                 # doctest: +SKIP
        'alarm_timer'
    """

    def __init__(self, b: Bundle, *, engine: str = "auto", threads: int | None = None, workers: int = 1,
                 path: Path | None = None, score: str = "blend"):
        self.path = path
        self.bundle = b
        self.labels = b.labels
        #: What `info` reports.
        self._info = bundle_info(b, path)
        self.embedder = Embedder(b.encoder, engine=engine, threads=threads, workers=workers)
        #: Cosine between this engine's and the exporter's embedding of the check text (loading
        #: refuses a mismatch).
        self.check_cosine: float = self.embedder.verify()
        try:
            self.scorer = Scorer(b, mode=score)
        except ValueError as exc:  # e.g. --score centroids on a bundle without class statistics
            raise InputError("query.type", "", str(exc)) from None

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, encoder: str | os.PathLike[str] | EncoderPack | None = None,
             engine: str = "auto", threads: int | None = None, workers: int = 1, score: str = "blend") -> "Classifier":
        """Read, validate and prepare a bundle (raises BundleError if it is unusable).

        ``encoder``: the encoder pack a statistics bundle names (a file, or an `EncoderPack`
        from `runtime.bundle.load_pack`, which can pin the digests an application accepts);
        None for a bundle that carries its encoder. ``engine``: "auto" (the first installed
        engine for the bundle's encoder format) or a name from runtime.encoder.ENGINES; ``threads``: the engine's threads per text
        (None: all cores); ``workers``: texts embedded at once in `classify` (results are
        identical either way); ``score``: "blend" (the bundle's scoring) or one component
        alone, "votes", "centroids" or "prior" (runtime.scoring.MODES).
        """
        pack = encoder if encoder is None or isinstance(encoder, EncoderPack) else bundle_format.load_pack(encoder)
        return cls(bundle_format.load(path, pack=pack), engine=engine, threads=threads, workers=workers,
                   path=Path(path), score=score)

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
                if not self.tokenizer.has_token(t):
                    raise InputError("query.empty", "", "there is nothing to classify: the text is empty, or only "
                                                        "white space, controls or invisible characters")
            except InputError as exc:
                raise exc.within(f"text {i}") if len(texts) > 1 else exc from None
        return self.embedder.embed(texts)

    def classify(self, texts: Sequence[str]) -> list[Prediction]:
        """Label and per-label scores for each text (argmax; ties go to the earlier label)."""
        scores = self.scorer.scores(self.embed(texts))
        return [
            Prediction(self.labels[int(np.argmax(row))], dict(zip(self.labels, map(float, row))))
            for row in scores
        ]

    def predict(self, texts: Sequence[str]) -> list[Prediction]:
        """`classify` under its former name (deprecated: it will be removed)."""
        import warnings

        warnings.warn("Classifier.predict is now Classifier.classify", DeprecationWarning, stacklevel=2)
        return self.classify(texts)

    def info(self) -> dict[str, Any]:
        """What the bundle is: labels, privacy facts, hashing, encoder and sizes in bytes."""
        return {**copy.deepcopy(self._info), "engine": self.embedder.engine, "check_cosine": self.check_cosine}
