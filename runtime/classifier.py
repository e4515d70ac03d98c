"""The runtime's facade: load a bundle once, then classify texts offline.

Everything it does reads only the released bundle, so it is post-processing: any number of
queries costs no further privacy budget. The CLI (`python -m runtime.classify`) and the
Python API share this one code path.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from runtime import bundle as bundle_format
from runtime.bundle import Bundle
from runtime.describe import bundle_info
from runtime.embedder import Embedder
from runtime.encoder import TextEncoder, choose_backend
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


def return_freed_memory() -> None:
    """Hand memory freed while loading back to the system (glibc's malloc_trim; elsewhere a no-op).

    Loading frees tens of MiB: the file's bytes once parsed, and the model bytes once
    onnxruntime has its own copy. glibc keeps freed blocks that are not at the top of its heap
    for later use, so without this the process would stay as large as at its peak.
    """
    global _malloc_trim
    if _malloc_trim is None:
        try:
            import ctypes

            _malloc_trim = ctypes.CDLL(None).malloc_trim
        except (OSError, AttributeError, TypeError):  # not glibc (musl, macOS, Windows)
            _malloc_trim = False
    if _malloc_trim:
        _malloc_trim(0)


_malloc_trim: Any = None


@dataclass(frozen=True)
class Prediction:
    """A label and the score of every label (summed noisy votes, higher is better)."""

    label: str
    scores: dict[str, float]

    def top(self, k: int) -> list[tuple[str, float]]:
        """The k best labels with their scores, best first (ties keep label order)."""
        return sorted(self.scores.items(), key=lambda kv: -kv[1])[:max(1, k)]


class Classifier:
    """A loaded bundle, ready to classify.

    ``bundle`` is the bundle as read, except that with onnxruntime ``bundle.encoder.model`` is
    b"" once the engine has its own copy of the model (22 MiB less memory); `info` still
    reports the sizes as in the file.

    Example:
        >>> clf = Classifier.load("models/quickstart.dpedge")          # doctest: +SKIP
        >>> clf.predict(["wake me up at six"])[0].label                 # doctest: +SKIP
        'alarm_timer'
    """

    def __init__(self, b: Bundle, *, backend: str = "auto", threads: int | None = None, workers: int = 1,
                 path: Path | None = None, score: str = "blend", probe_weight: float = 0.0):
        self._setup(b, path, backend=backend, threads=threads, workers=workers, score=score,
                    probe_weight=probe_weight)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, backend: str = "auto", threads: int | None = None,
             workers: int = 1, score: str = "blend", probe_weight: float = 0.0) -> "Classifier":
        """Read, validate and prepare a bundle (raises BundleError if it is unusable).

        ``backend``: "auto" (the first installed engine for the bundle's encoder format) or
        a name from runtime.encoder.BACKENDS; ``threads``: the engine's threads per text
        (None: all cores); ``workers``: texts embedded at once in `predict` (results are
        identical either way); ``score``: "blend" (the bundle's default) or one component
        alone, "votes", "centroids" or "prior" (runtime.scoring.MODES); ``probe_weight``: also
        read each table's buckets at Hamming distance 1 with this weight (0, the measured
        default, reads only the query's own bucket; docs/accuracy.md).
        """
        clf = cls.__new__(cls)
        # _setup reads the file itself instead of being handed bundle_format.load(path): a
        # call's arguments stay referenced by the caller until the call returns, which would
        # keep the model bytes alive through the whole load (see _setup).
        clf._setup(None, Path(path), backend=backend, threads=threads, workers=workers, score=score,
                   probe_weight=probe_weight)
        return clf

    def _setup(self, b: Bundle | None, path: Path | None, *, backend: str, threads: int | None, workers: int,
               score: str, probe_weight: float) -> None:
        """Load in the order that keeps peak memory lowest (docs/runtime-perf.md).

        An engine that copies the model (onnxruntime) is made first, while the process is
        smallest; the bundle's own copy is then released (``bundle.encoder.model`` becomes b"":
        22 MiB) and the freed heap handed back, before the tokenizer is built. TFLite
        interpreters read the bytes in place, so they stay, and the tokenizer comes first.
        ``b`` None means: read the bundle from ``path`` here, so that this frame holds the only
        reference to it.
        """
        if b is None:
            b = bundle_format.load(path)
        self.path = path
        self.labels = b.labels
        #: What `info` reports; taken before the model bytes may be released.
        self._info = bundle_info(b, path)
        # An engine that keeps reading the model bytes (TFLite) releases nothing, and with the
        # tokenizer built first glibc's heap ends about 1 MiB smaller; one that copies them
        # (onnxruntime) comes first, so that the tokenizer is built after the bytes are gone.
        tokenizer_first = not choose_backend(b.encoder.format, backend).copies_model
        tokenizer = TextTokenizer(b.encoder.tokenizer_json, b.encoder.max_length) if tokenizer_first else None
        encoder = TextEncoder(b.encoder, backend=backend, threads=threads, workers=workers)
        if not encoder.needs_model_bytes:
            b = dataclasses.replace(b, encoder=dataclasses.replace(b.encoder, model=b""))
            # Only here: nothing else loading frees enough to pay for ctypes' own 0.5 MiB.
            return_freed_memory()
        self.bundle = b
        if tokenizer is None:
            tokenizer = TextTokenizer(b.encoder.tokenizer_json, b.encoder.max_length)
        # The runtime's Embedder, assembled from parts made in the order above.
        self.embedder = Embedder.of(tokenizer, encoder)
        #: Cosine between this engine's and the exporter's embedding of the check text (None:
        #: the bundle predates format 1.1 and has none); loading refuses a mismatch.
        self.check_cosine: float | None = self.embedder.verify()
        try:
            self.scorer = Scorer.from_bundle(b, mode=score, probe_weight=probe_weight)
        except ValueError as exc:  # e.g. --score centroids on a bundle without class statistics
            raise InputError(str(exc)) from None

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
