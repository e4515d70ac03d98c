"""The onnxruntime backend: runs a bundle's ONNX encoder, one text per call.

The ONNX graph has mean pooling and L2 normalisation inside it and returns one unit vector
per text. Texts are never batched together: the int8 MatMulNBits kernels pick their compute
path by the number of rows they get, so the same text embedded inside a batch differs from
it embedded alone (measured: up to 0.008, even in a batch of identical copies), which would
flip SimHash bits for a few percent of texts. One text per run makes an embedding a function
of the text alone (see runtime.encoder for how throughput comes back).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from runtime.bundle.schema import Encoder
from runtime.errors import BundleError

INSTALL = "pip install 'onnxruntime>=1.22'"


def _session_options(threads: int | None):
    import onnxruntime as ort

    so = ort.SessionOptions()
    # 0 lets onnxruntime use every core; 1 is the Raspberry Pi / background-service case.
    so.intra_op_num_threads = 0 if threads is None else int(threads)
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    return so


class OnnxRuntimeBackend:
    """One onnxruntime session; `run` is thread-safe, so every worker shares it.

    The session parses the model into memory of its own, so once it exists the caller's
    model bytes are no longer needed (``copies_model``): runtime.classifier releases them.
    """

    thread_safe = True
    copies_model = True

    def __init__(self, encoder: Encoder, threads: int | None):
        import onnxruntime as ort

        try:
            self._session = ort.InferenceSession(
                encoder.model, _session_options(threads), providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own Fail/InvalidProtobuf types
            raise BundleError(
                f"the bundle's ONNX encoder cannot be loaded by onnxruntime {ort.__version__}: {exc} "
                f"(dpedge needs onnxruntime >= 1.22: {INSTALL})"
            ) from None
        graph_inputs = {i.name for i in self._session.get_inputs()}
        if graph_inputs != set(encoder.inputs):
            raise BundleError(f"encoder graph inputs {sorted(graph_inputs)} differ from the bundle's {sorted(encoder.inputs)}")
        if encoder.output not in {o.name for o in self._session.get_outputs()}:
            raise BundleError(f"encoder graph has no output {encoder.output!r}")
        self._inputs = tuple(encoder.inputs)
        self._output = encoder.output
        # onnxruntime's Python wrapper keeps the model bytes only to build the session again
        # when its providers change (set_providers, a GPU provider failing over to CPU);
        # this CPU-only session never does that, and the bytes are the model's whole size.
        if getattr(self._session, "_model_bytes", None) is not None:
            self._session._model_bytes = None

    def embed_one(self, token_ids: Sequence[int]) -> np.ndarray:
        ids = np.asarray([token_ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        return self._session.run([self._output], {k: feeds[k] for k in self._inputs})[0]
