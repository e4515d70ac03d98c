"""TFLite engines: LiteRT (`ai-edge-litert`) and the legacy `tflite-runtime`.

The bundle's TFLite encoder has one signature, ``serving_default``, with an int32
``input_ids`` of shape [1, n] (n dynamic) and a unit-vector ``sentence_embedding`` output;
the signature runner resizes the input to each text's length, so a short text does not pay
for 128 tokens. Batch size stays 1 (a dynamic batch dimension needs TensorFlow's Flex ops),
which also keeps every embedding a function of its text alone, as on onnxruntime.

`tflite-runtime` 2.14 (its last release, numpy<2 only) cannot allocate current int8 models
(FULLY_CONNECTED v12) and has run int8 models to garbage without an error; the runtime
offers it only as a fallback and the bundle's check text (runtime.encoder) catches a wrong
result.

LiteRT has no way to cancel a running interpreter or to cap its memory, so what bounds a
TFLite encoder's cost is the model family (runtime.bundle.model_family: one subgraph, so no
WHILE, and no FILL, TILE or custom operators) and the resource checks of runtime.encoder.
"""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np

from runtime.bundle.schema import EncoderSpec
from runtime.limits import QUERY_RUN_SECONDS
from runtime.errors import BundleError, one_line

SIGNATURE = "serving_default"
LITERT_INSTALL = "pip install ai-edge-litert"
#: Said wherever tflite-runtime fails: the engine that does run these models.
USE_LITERT = f"use LiteRT instead: {LITERT_INSTALL} (or --engine litert)"


def _interpreter_class(module: str):
    if module == "ai_edge_litert":
        from ai_edge_litert.interpreter import Interpreter
    else:
        from tflite_runtime.interpreter import Interpreter
    return Interpreter


class TfliteEngine:
    """One interpreter; interpreters are not thread-safe, so each worker thread gets its own.

    The interpreter reads the model's flatbuffer in place, from the bundle's bytes, and every
    worker thread builds its own interpreter from them.
    """

    thread_safe = False

    def __init__(self, encoder: EncoderSpec, threads: int | None, *, module: str, name: str):
        Interpreter = _interpreter_class(module)
        fix = "" if module == "ai_edge_litert" else f"; {USE_LITERT}"
        try:
            interp = Interpreter(model_content=encoder.model, num_threads=int(threads or os.cpu_count() or 1))
            self._runner = interp.get_signature_runner(SIGNATURE)
            # Allocating for a two-token input fails here, not on the first query, if the
            # interpreter lacks a kernel version the model needs.
            self._runner(input_ids=np.zeros((1, 2), dtype=np.int32))
            ins = set(self._runner.get_input_details())
            outs = set(self._runner.get_output_details())
        except Exception as exc:  # ValueError/RuntimeError with kernel details; UnicodeDecodeError on names
            raise BundleError("engine.load", "encoder.model", f"the {name} interpreter cannot run this bundle's TFLite "
                              f"encoder: {one_line(exc)}{fix}") from None
        self._interp = interp  # the runner borrows the interpreter; keep it alive
        if ins != set(encoder.inputs):
            raise BundleError("engine.io", "encoder.inputs", f"TFLite encoder inputs {sorted(ins)} differ from the bundle's "
                              f"{sorted(encoder.inputs)}")
        if encoder.output not in outs:
            raise BundleError("engine.io", "encoder.output", f"TFLite encoder has no output {encoder.output!r}")
        self._output = encoder.output

    def embed_one(self, token_ids: Sequence[int], seconds: float = QUERY_RUN_SECONDS) -> np.ndarray:
        """One run (``seconds`` is not enforced: LiteRT cannot stop a run, see the module doc)."""
        ids = np.asarray([token_ids], dtype=np.int32)
        try:
            return self._runner(input_ids=ids)[self._output]
        except Exception as exc:  # noqa: BLE001 - the interpreter's RuntimeError/ValueError
            raise RuntimeError(one_line(exc)) from None
