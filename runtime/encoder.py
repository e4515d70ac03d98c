"""Runs the bundle's sentence encoder with onnxruntime, one text per call.

The ONNX graph has mean pooling and L2 normalisation inside it and returns one unit vector
per text. Texts are never batched together: the int8 MatMulNBits kernels pick their compute
path by the number of rows they get, so the same text embedded inside a batch differs from
it embedded alone (measured: up to 0.008, even in a batch of identical copies), which would
flip SimHash bits for a few percent of texts. One text per run makes an embedding a function
of the text alone: the exporter, which embeds training records through this class, and a
device classifying the same text get the same bits, and a batch predicts exactly as single
calls do. Throughput comes from running single-text calls concurrently (``workers``) instead:
on 2 cores, 2 workers x 1 thread embed 228 texts/s, more than batches of 16 (203/s).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

import numpy as np

from runtime.bundle import Encoder
from runtime.errors import BundleError


def _session_options(threads: int | None):
    import onnxruntime as ort

    so = ort.SessionOptions()
    # 0 lets onnxruntime use every core; 1 is the Raspberry Pi / background-service case.
    so.intra_op_num_threads = 0 if threads is None else int(threads)
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    return so


class OnnxEncoder:
    """Embeds token-id lists into unit vectors, shape (n, dim), float32.

    ``threads`` is onnxruntime's intra-op thread count per call (None: all cores);
    ``workers`` > 1 runs that many single-text calls at once (the exporter uses one worker
    per core with one thread each). Neither changes the result.

    Example:
        >>> enc = OnnxEncoder(bundle.encoder, threads=1)               # doctest: +SKIP
        >>> enc.embed([[101, 7592, 102]]).shape                        # doctest: +SKIP
        (1, 384)
    """

    def __init__(self, encoder: Encoder, *, threads: int | None = None, workers: int = 1):
        import onnxruntime as ort

        if encoder.format != "onnx":
            raise BundleError(f"OnnxEncoder cannot run an encoder of format {encoder.format!r}")
        try:
            self._session = ort.InferenceSession(
                encoder.model, _session_options(threads), providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own Fail/InvalidProtobuf types
            raise BundleError(f"the bundle's ONNX encoder cannot be loaded by onnxruntime: {exc}") from None
        graph_inputs = {i.name for i in self._session.get_inputs()}
        if graph_inputs != set(encoder.inputs):
            raise BundleError(f"encoder graph inputs {sorted(graph_inputs)} differ from the bundle's {sorted(encoder.inputs)}")
        if encoder.output not in {o.name for o in self._session.get_outputs()}:
            raise BundleError(f"encoder graph has no output {encoder.output!r}")
        self._inputs = tuple(encoder.inputs)
        self._output = encoder.output
        self.dim = encoder.dim
        self._pool = ThreadPoolExecutor(workers) if workers > 1 else None

    def embed_one(self, token_ids: Sequence[int]) -> np.ndarray:
        """The embedding of one text, shape (dim,)."""
        ids = np.asarray([token_ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        emb = self._session.run([self._output], {k: feeds[k] for k in self._inputs})[0]
        if emb.shape != (1, self.dim):
            raise BundleError(f"encoder returned shape {emb.shape}, expected (1, {self.dim})")
        return emb[0]

    def embed(self, token_ids: Sequence[Sequence[int]]) -> np.ndarray:
        """One embedding per token-id list, in input order."""
        out = np.empty((len(token_ids), self.dim), dtype=np.float32)
        rows = self._pool.map(self.embed_one, token_ids) if self._pool else map(self.embed_one, token_ids)
        for i, emb in enumerate(rows):
            out[i] = emb
        return out
