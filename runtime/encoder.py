"""One facade over the inference engines that can run a bundle's sentence encoder.

A bundle holds its encoder in one format (``onnx`` or ``tflite``); each format has one or
more engines, tried in the order listed in ENGINES when the choice is ``"auto"``, and only
if their Python package is installed. Whatever the engine, texts are embedded one per call
(see runtime.onnx_engine for why batching is avoided), and throughput comes from running
single-text calls concurrently (``workers``), which beats batching on small CPUs
(docs/runtime-perf.md).

After loading, `TextEncoder.verify` embeds the bundle's check text and compares it with the
exporter's embedding of it: an engine that loads the model but computes something else
(tflite-runtime 2.14 on int8 models, a broken build) is refused instead of silently
answering with garbage.

Example:
    >>> enc = TextEncoder(bundle.encoder, threads=1)              # doctest: +SKIP
    >>> enc.engine, enc.embed([[101, 7592, 102]]).shape            # doctest: +SKIP
    ('onnxruntime', (1, 384))
"""

from __future__ import annotations

import functools
import math
import importlib.util
import threading
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from runtime import onnx_engine, tflite_engine
from runtime.bundle.schema import CHECK_MIN_COSINE, EncoderSpec
from runtime.limits import LOAD_RUN_SECONDS, QUERY_RUN_SECONDS
from runtime.errors import BundleError, InputError
from runtime.onnx_engine import EngineOverBudget


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """The cosine of two float32 vectors in float64, every sum over the index in ascending order
    (the spec's arithmetic: every reader gets the same number at the 0.98 boundary)."""
    ab = aa = bb = 0.0
    for x, y in zip(map(float, a), map(float, b)):
        ab += x * y
        aa += x * x
        bb += y * y
    return ab / (math.sqrt(aa) * math.sqrt(bb) + 1e-12)


@dataclass(frozen=True)
class Engine:
    """An inference engine for one encoder format; ``module`` is imported only when used.

    ``make(encoder, threads)`` loads it; an engine with a shared memory arena (``arena``) also
    takes ``shared_arena`` (see `TextEncoder`).
    """

    name: str
    format: str
    module: str
    install: str
    make: Callable[..., Any]
    arena: bool = False


#: Every engine, in "auto" preference order within a format.
ENGINES: dict[str, Engine] = {
    b.name: b
    for b in (
        Engine("onnxruntime", "onnx", "onnxruntime", onnx_engine.INSTALL, onnx_engine.OnnxRuntimeEngine, arena=True),
        Engine("litert", "tflite", "ai_edge_litert", tflite_engine.LITERT_INSTALL,
                functools.partial(tflite_engine.TfliteEngine, module="ai_edge_litert", name="LiteRT")),
        Engine("tflite-runtime", "tflite", "tflite_runtime", "pip install tflite-runtime (numpy<2 only)",
                functools.partial(tflite_engine.TfliteEngine, module="tflite_runtime", name="tflite-runtime")),
    )
}
ENGINE_CHOICES = ("auto", *ENGINES)


def installed(engine: str) -> bool:
    """Whether the engine's package can be imported (without importing it)."""
    return importlib.util.find_spec(ENGINES[engine].module) is not None


def choose_engine(encoder_format: str, requested: str = "auto") -> Engine:
    """The engine for a bundle's encoder format: the requested one, or the first installed.

    Raises BundleError naming what to install when nothing fits.
    """
    fitting = [b for b in ENGINES.values() if b.format == encoder_format]
    if requested != "auto":
        if requested not in ENGINES:
            raise BundleError("engine.unavailable", "encoder.format",
                              f"unknown engine {requested!r} (choose from {', '.join(ENGINE_CHOICES)})")
        b = ENGINES[requested]
        if b.format != encoder_format:
            others = ", ".join(x.name for x in fitting)
            raise BundleError("engine.unavailable", "encoder.format",
                              f"engine {b.name} runs {b.format} encoders, but this bundle's encoder is "
                              f"{encoder_format} (use {others})")
        if not installed(b.name):
            raise BundleError("engine.unavailable", "encoder.format",
                              f"engine {b.name} is not installed: {b.install}")
        return b
    for b in fitting:
        if installed(b.name):
            return b
    raise BundleError("engine.unavailable", "encoder.format",
                      f"no installed engine runs {encoder_format} encoders: {fitting[0].install}")


class TextEncoder:
    """Embeds token-id lists into unit vectors, shape (n, dim), float32.

    ``engine``: "auto" or a name in ENGINES; ``threads``: the engine's threads per text
    (None: all cores); ``workers`` > 1 embeds that many texts at once (the exporter uses one
    worker per core with one thread each). Neither changes the result.

    ``shared_arena`` (default True, the runtime's behaviour): the engine's sessions allocate
    from the one memory arena per process capped at ENGINE_ARENA_BYTES, which bounds what a
    hostile bundle's graph can take. False gives them their own, uncapped arenas: for an
    encoder the caller trusts (the exporter's own), where a cap shared by many texts at once
    would make the outcome depend on how long the texts are and how many meet. Engines without
    such an arena (TFLite) have nothing to change. The result is the same either way.
    """

    def __init__(self, encoder: EncoderSpec, *, engine: str = "auto", threads: int | None = None, workers: int = 1,
                 shared_arena: bool = True):
        chosen = choose_engine(encoder.format, engine)
        self.engine = chosen.name
        self.dim = encoder.dim
        self._spec = encoder
        options = {"shared_arena": shared_arena} if chosen.arena else {}
        self._make: Callable[[], Any] = lambda: chosen.make(encoder, threads, **options)
        first = self._make()
        self._shared = first if first.thread_safe else None
        self._local = threading.local()
        self._local.runner = first
        self._pool = None
        if workers > 1:
            from concurrent.futures import ThreadPoolExecutor  # here: a one-worker process never pays its import
            self._pool = ThreadPoolExecutor(workers)

    @property
    def shared_arena(self) -> bool:
        """Whether this encoder's sessions allocate from the shared capped arena."""
        return bool(getattr(self._runner(), "shared_arena", False))

    @property
    def check_text(self) -> str:
        """The bundle's public check text, for `verify`."""
        return self._spec.check_text

    def _runner(self) -> Any:
        if self._shared is not None:
            return self._shared
        runner = getattr(self._local, "runner", None)
        if runner is None:
            runner = self._local.runner = self._make()
        return runner

    def embed_one(self, token_ids: Sequence[int], seconds: float = QUERY_RUN_SECONDS) -> np.ndarray:
        """The embedding of one text, shape (dim,).

        Raises InputError (one line) when the engine fails on this text, takes longer than
        ``seconds``, or returns anything but a finite (1, dim) float32 array: the caller skips
        the text (the CLI goes on with the next line), and `verify` turns it into BundleError.
        """
        try:
            emb = self._runner().embed_one(token_ids, seconds)
        except RuntimeError as exc:  # the engines' one-line failures (EngineOverBudget: past its time or memory budget)
            error = InputError("query.engine", "", f"the encoder failed on this text: {exc}")
            error.over_budget = isinstance(exc, EngineOverBudget)
            raise error from None
        return self._checked(emb)

    def _checked(self, emb: Any) -> np.ndarray:
        """An engine's answer as a finite (dim,) float32 vector, else InputError."""
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
            code = ("engine.budget" if getattr(exc, "over_budget", False) else "engine.load") \
                if exc.code == "query.engine" else "engine.check"
            raise BundleError(code, "encoder.check_embedding" if code == "engine.check" else "encoder.model",
                              f"the bundle's encoder fails at load on the {self.engine} engine: "
                              f"{exc.message.removeprefix('the encoder failed on this text: ')}") from None
        cos = cosine(emb, self._spec.check_embedding)
        if not cos >= CHECK_MIN_COSINE:
            hint = f" For TFLite bundles, {tflite_engine.USE_LITERT}." if self.engine == "tflite-runtime" else ""
            raise BundleError(
                "engine.check", "encoder.check_embedding",
                f"the {self.engine} engine computes a different embedding than the exporter did for the "
                f"bundle's check text (cosine {cos:.3f} < {CHECK_MIN_COSINE}): this engine cannot run the "
                f"encoder correctly, so its answers would be wrong.{hint}"
            )
        return cos
