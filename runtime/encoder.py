"""One facade over the inference engines that can run a bundle's sentence encoder.

A bundle holds its encoder in one format (``onnx`` or ``tflite``); each format has one or
more backends, tried in the order listed in BACKENDS when the choice is ``"auto"``, and only
if their Python package is installed. Whatever the backend, texts are embedded one per call
(see runtime.onnx_backend for why batching is avoided), and throughput comes from running
single-text calls concurrently (``workers``), which beats batching on small CPUs
(docs/runtime-perf.md).

After loading, `TextEncoder.verify` embeds the bundle's check text and compares it with the
exporter's embedding of it: an engine that loads the model but computes something else
(tflite-runtime 2.14 on int8 models, a broken build) is refused instead of silently
answering with garbage.

Example:
    >>> enc = TextEncoder(bundle.encoder, threads=1)              # doctest: +SKIP
    >>> enc.backend, enc.embed([[101, 7592, 102]]).shape            # doctest: +SKIP
    ('onnxruntime', (1, 384))
"""

from __future__ import annotations

import functools
import importlib.util
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from runtime import onnx_backend, tflite_backend
from runtime.bundle.schema import CHECK_MIN_COSINE, EncoderSpec
from runtime.limits import LOAD_RUN_SECONDS, QUERY_RUN_SECONDS
from runtime.errors import BundleError, InputError
from runtime.onnx_backend import EngineTimeout


@dataclass(frozen=True)
class Backend:
    """An inference engine for one encoder format; ``module`` is imported only when used."""

    name: str
    format: str
    module: str
    install: str
    make: Callable[[EncoderSpec, int | None], Any]


#: Every backend, in "auto" preference order within a format.
BACKENDS: dict[str, Backend] = {
    b.name: b
    for b in (
        Backend("onnxruntime", "onnx", "onnxruntime", onnx_backend.INSTALL, onnx_backend.OnnxRuntimeBackend),
        Backend("litert", "tflite", "ai_edge_litert", tflite_backend.LITERT_INSTALL,
                functools.partial(tflite_backend.TfliteBackend, module="ai_edge_litert", name="LiteRT")),
        Backend("tflite-runtime", "tflite", "tflite_runtime", "pip install tflite-runtime (numpy<2 only)",
                functools.partial(tflite_backend.TfliteBackend, module="tflite_runtime", name="tflite-runtime")),
    )
}
BACKEND_CHOICES = ("auto", *BACKENDS)


def installed(backend: str) -> bool:
    """Whether the backend's package can be imported (without importing it)."""
    return importlib.util.find_spec(BACKENDS[backend].module) is not None


def choose_backend(encoder_format: str, requested: str = "auto") -> Backend:
    """The backend for a bundle's encoder format: the requested one, or the first installed.

    Raises BundleError naming what to install when nothing fits.
    """
    fitting = [b for b in BACKENDS.values() if b.format == encoder_format]
    if requested != "auto":
        if requested not in BACKENDS:
            raise BundleError("engine.unavailable", "encoder.format", f"unknown backend {requested!r} (choose from {', '.join(BACKEND_CHOICES)})")
        b = BACKENDS[requested]
        if b.format != encoder_format:
            others = ", ".join(x.name for x in fitting)
            raise BundleError("engine.unavailable", "encoder.format", f"backend {b.name} runs {b.format} encoders, but this bundle's encoder is "
                              f"{encoder_format} (use {others})")
        if not installed(b.name):
            raise BundleError("engine.unavailable", "encoder.format", f"backend {b.name} is not installed: {b.install}")
        return b
    for b in fitting:
        if installed(b.name):
            return b
    raise BundleError("engine.unavailable", "encoder.format", f"no installed backend runs {encoder_format} encoders: {fitting[0].install}")


class TextEncoder:
    """Embeds token-id lists into unit vectors, shape (n, dim), float32.

    ``backend``: "auto" or a name in BACKENDS; ``threads``: the engine's threads per text
    (None: all cores); ``workers`` > 1 embeds that many texts at once (the exporter uses one
    worker per core with one thread each). Neither changes the result.
    """

    def __init__(self, encoder: EncoderSpec, *, backend: str = "auto", threads: int | None = None, workers: int = 1):
        chosen = choose_backend(encoder.format, backend)
        self.backend = chosen.name
        self.dim = encoder.dim
        self._spec = encoder
        self._make: Callable[[], Any] = lambda: chosen.make(encoder, threads)
        first = self._make()
        self._shared = first if first.thread_safe else None
        self._local = threading.local()
        self._local.engine = first
        self._pool = ThreadPoolExecutor(workers) if workers > 1 else None

    @property
    def check_text(self) -> str:
        """The bundle's public check text, for `verify`."""
        return self._spec.check_text

    def _engine(self) -> Any:
        if self._shared is not None:
            return self._shared
        engine = getattr(self._local, "engine", None)
        if engine is None:
            engine = self._local.engine = self._make()
        return engine

    def embed_one(self, token_ids: Sequence[int], seconds: float = QUERY_RUN_SECONDS) -> np.ndarray:
        """The embedding of one text, shape (dim,).

        Raises InputError (one line) when the engine fails on this text, takes longer than
        ``seconds``, or returns anything but a finite (1, dim) float32 array: the caller skips
        the text (the CLI goes on with the next line), and `verify` turns it into BundleError.
        """
        try:
            emb = self._engine().embed_one(token_ids, seconds)
        except EngineTimeout as exc:
            raise InputError("query.budget", "", f"the encoder failed on this text: {exc}") from None
        except RuntimeError as exc:  # the backends' one-line failures
            raise InputError("query.engine", "", f"the encoder failed on this text: {exc}") from None
        return self._checked(emb)

    def _checked(self, emb: Any) -> np.ndarray:
        """A backend's answer as a finite (dim,) float32 vector, else InputError."""
        if not isinstance(emb, np.ndarray) or emb.shape != (1, self.dim) or emb.dtype != np.float32:
            shape, dtype = getattr(emb, "shape", None), getattr(emb, "dtype", type(emb).__name__)
            raise InputError("query.embedding", "", f"the encoder returned shape {shape} of {dtype}, expected (1, {self.dim}) float32")
        if not np.isfinite(emb).all():
            raise InputError("query.embedding", "", "the encoder returned a non-finite embedding (NaN or infinity)")
        return emb[0]

    def embed(self, token_ids: Sequence[Sequence[int]]) -> np.ndarray:
        """One embedding per token-id list, in input order."""
        out = np.empty((len(token_ids), self.dim), dtype=np.float32)
        rows = self._pool.map(self.embed_one, token_ids) if self._pool else map(self.embed_one, token_ids)
        for i, emb in enumerate(rows):
            out[i] = emb
        return out

    def verify(self, check_ids: Sequence[int]) -> float:
        """Compare this engine's embedding of the bundle's check text (``check_ids``, tokenized)
        with the exporter's: returns the cosine; raises BundleError below CHECK_MIN_COSINE, or
        if the run fails or takes longer than LOAD_RUN_SECONDS."""
        try:
            emb = self.embed_one(check_ids, LOAD_RUN_SECONDS)
        except InputError as exc:
            code = {"query.budget": "engine.budget", "query.engine": "engine.load"}.get(exc.code, "engine.check")
            raise BundleError(code, "encoder.check_embedding" if code == "engine.check" else "encoder.model",
                              f"the bundle's encoder fails at load on the {self.backend} backend: "
                              f"{exc.message.removeprefix('the encoder failed on this text: ')}") from None
        ref = self._spec.check_embedding
        cos = float(np.dot(emb, ref) / (np.linalg.norm(emb) * np.linalg.norm(ref) + 1e-12))
        if not cos >= CHECK_MIN_COSINE:
            hint = f" For TFLite bundles, {tflite_backend.USE_LITERT}." if self.backend == "tflite-runtime" else ""
            raise BundleError(
                "engine.check", "encoder.check_embedding",
                f"the {self.backend} backend computes a different embedding than the exporter did for the "
                f"bundle's check text (cosine {cos:.3f} < {CHECK_MIN_COSINE}): this engine cannot run the "
                f"encoder correctly, so its answers would be wrong.{hint}"
            )
        return cos
