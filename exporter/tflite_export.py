"""Convert a sentence-transformers BERT model to an int8 TFLite encoder with dynamic length.

Route (docs/encoder.md compares the alternatives): transformers' TFBertModel
built from the model's config, weights loaded from model.safetensors (no PyTorch involved),
the folder's pooling (mean, or the CLS token) and L2 normalisation inside one `tf.function` whose input is int32
``input_ids`` of shape [1, None], saved as a SavedModel, then `tf.lite.TFLiteConverter` with
dynamic-range quantization (int8 weights, per-channel). Only builtin ops come out, and the
sequence length stays dynamic, so the interpreter is resized to each text's length (a
fixed-length model pays for 128 tokens on every short text). The batch dimension is fixed
at 1: a dynamic batch needs TensorFlow's Flex ops, which LiteRT does not ship.

Attention mask and token types are built inside the graph (all ones, all zeros): a single
unpadded text never needs anything else, and a one-input model is the simplest for phones.

Needs the ``[tflite]`` extra (tensorflow, tf-keras, ai-edge-litert).
"""

from __future__ import annotations

import os
from pathlib import Path

SIGNATURE_INPUT = "input_ids"
SIGNATURE_OUTPUT = "sentence_embedding"
RECIPE = "tf-savedmodel/tflite-converter-dynamic-range-int8/len-dynamic-batch-1/v1"
QUANTIZATION = "int8 weights, dynamic-range (TFLiteConverter Optimize.DEFAULT, per-channel)"
INSTALL = "pip install 'dpedge[export,tflite]'"


def _import_tensorflow():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's start-up chatter is not for our users
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")   # the conversion runs on the CPU; skip the GPU probe
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")   # transformers' TF models need Keras 2 (tf-keras)
    try:
        import tensorflow as tf
        import tf_keras  # noqa: F401  (transformers refuses Keras 3 without it)
    except ImportError as exc:
        from exporter.encoder_export import EncoderExportError

        raise EncoderExportError(f"the TFLite encoder needs TensorFlow ({exc.name} is missing): {INSTALL}") from None
    return tf


def convert(source: Path, out: Path, *, quantize: bool = True, pooling: str = "mean") -> Path:
    """Write ``out`` (a .tflite file) from the sentence-transformers folder ``source``, pooled
    as its folder says ("mean" over the tokens, or "cls": the first token's hidden state).

    Example:
        >>> convert(default_source(), Path("/tmp/model.tflite"))    # doctest: +SKIP
        PosixPath('/tmp/model.tflite')
    """
    tf = _import_tensorflow()
    from safetensors.numpy import load_file
    from transformers import BertConfig, TFBertModel
    from transformers.modeling_tf_pytorch_utils import load_pytorch_state_dict_in_tf2_model
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    bert = TFBertModel(BertConfig.from_pretrained(str(source), local_files_only=True), add_pooling_layer=False)
    bert(tf.constant([[101, 102]], dtype=tf.int32))  # build the variables before loading weights
    load_pytorch_state_dict_in_tf2_model(bert, load_file(str(source / "model.safetensors")))

    class SentenceEncoder(tf.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        @tf.function(input_signature=[tf.TensorSpec([1, None], tf.int32, name=SIGNATURE_INPUT)])
        def __call__(self, input_ids):
            hidden = self.model(input_ids=input_ids, attention_mask=tf.ones_like(input_ids),
                                token_type_ids=tf.zeros_like(input_ids), training=False).last_hidden_state
            pooled = hidden[:, 0] if pooling == "cls" else tf.reduce_mean(hidden, axis=1)
            return {SIGNATURE_OUTPUT: tf.math.l2_normalize(pooled, axis=1)}

    module = SentenceEncoder(bert)
    saved = out.with_suffix(".savedmodel")
    tf.saved_model.save(module, str(saved), signatures=module.__call__.get_concrete_function())
    converter = tf.lite.TFLiteConverter.from_saved_model(str(saved))
    if quantize:
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    out.write_bytes(converter.convert())
    return out
