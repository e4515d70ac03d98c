"""Hostile bundle contents against the real command line: refused, never crash, hang, read files or lie.

    python benchmarks/hostile_bundles.py [--onnx-bundle B] [--tflite-bundle B] [--random-bundle B]
                                         [--only NAME ...] [--fast] [--json OUT] [--keep DIR]

tests/test_bundle_properties.py and tests/fuzz/atheris_reader.py attack the reader with small
documents; this script attacks what the runtime hands to real engines and to a terminal:
crafted tokenizer.json documents, ONNX graphs, TFLite flatbuffers, check texts, privacy facts,
labels and printable metadata, huge declared shapes and memory bombs, each family a real
format-1.0 bundle with one hostile part, sealed with a correct SHA-256 (so the contents are
what is tested). Each bundle runs through ``python -m runtime.classify`` in a subprocess with a
fresh HOME, TMPDIR and working folder (which holds a decoy README.md for external-data
attacks), a 2 GiB memory limit and a 60 s time limit, and is judged:

    refused      exit 2, one "error: ..." line on stderr, nothing on stdout
    classified   exit 0, every line answered (JSON lines parse, numbers finite)
    skipped      exit 1, the bad lines skipped with a reason, every other line answered
    crash        killed by a signal, or another exit status
    hang         still running after the time limit
    over memory  resident memory above the limit
    traceback    a Python traceback, or stderr lines that are none of the above
    controls printed   a raw terminal control character in what the CLI printed

and against its expectation; any file written in HOME, TMPDIR or the working folder is a
finding too ("wrote"). Peak RSS is the child's VmHWM, sampled; its ratio is to the legitimate
bundle of the same encoder format run the same way; "load" is the time to the first line the
CLI prints. The goal: 0 crashes, hangs and tracebacks, every outcome as expected, no files
written, peak RSS at most 2x the legitimate bundle's, load at most 5 s; the exit status is 1
if it is missed. --fast runs the subset tests/test_hostile_bundles.py uses. Crafted ONNX models
need the ``onnx`` package and TFLite ones TensorFlow or LiteRT's schema (the export extras);
families whose package is missing are listed as skipped.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import msgpack

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from runtime.bundle import schema  # noqa: E402
from runtime.bundle import wording  # noqa: E402
from runtime.bundle.schema import DIGEST_TAIL, MAX_CHECK_TEXT_CHARS, Key  # noqa: E402

MEMORY_LIMIT = 2 * 2**30
TIME_LIMIT = 60.0
GOAL_RSS_RATIO = 2.0
GOAL_LOAD_SECONDS = 5.0
TEXTS = ["wake me up at seven", "will it rain in Lisbon tomorrow", "play some jazz"]
DIM = 384
#: What every crafted encoder outputs (a constant unit vector), and so its check embedding: the
#: load-time check passes and what is tested is the engine on the crafted graph.
UNIT = [1 / math.sqrt(DIM)] * DIM


# --------------------------------------------------------------------------- bundles


class Pairs(list):
    """A map written as (key, value) pairs: it may say a key twice."""


class Raw(bytes):
    """msgpack bytes written as they are."""


def _encode(v: Any, packer: msgpack.Packer) -> bytes:
    if isinstance(v, Raw):
        return bytes(v)
    if isinstance(v, (dict, Pairs)):
        items = list(v.items()) if isinstance(v, dict) else v
        return packer.pack_map_header(len(items)) + b"".join(_encode(k, packer) + _encode(x, packer) for k, x in items)
    if isinstance(v, list):
        return packer.pack_array_header(len(v)) + b"".join(_encode(x, packer) for x in v)
    return packer.pack(v)


def seal(doc: dict[str, Any] | Pairs) -> bytes:
    """The file of a document as runtime.bundle.writer.pack writes it: the map (one more entry
    for the digest), then the key ``sha256`` and the SHA-256 of every byte before it."""
    packer = msgpack.Packer(use_bin_type=True)
    items = list(doc.items()) if isinstance(doc, dict) else list(doc)
    head = packer.pack_map_header(len(items) + 1) + b"".join(_encode(k, packer) + _encode(v, packer) for k, v in items)
    return head + DIGEST_TAIL + hashlib.sha256(head).digest()


@dataclass
class Base:
    """A legitimate bundle's document (without its digest entry), for families to change."""

    path: Path
    doc: dict[str, Any]

    @classmethod
    def read(cls, path: Path) -> "Base":
        doc = msgpack.unpackb(path.read_bytes(), raw=False)
        doc.pop(Key.SHA256)
        return cls(path, doc)

    def copy(self) -> dict[str, Any]:
        return copy.deepcopy(self.doc)  # bytes are shared, not copied


def edited(change: Callable[[dict[str, Any]], Any]) -> Callable[[Base], bytes]:
    """A family that changes the document (a change may return a replacement: pairs, a new order)."""
    def make(base: Base) -> bytes:
        doc = base.copy()
        out = change(doc)
        return seal(doc if out is None else out)
    return make


def set_path(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """Set a dotted path (a callable value gets the old one)."""
    def change(doc: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        for k in parents:
            doc = doc[k]
        doc[last] = value(doc.get(last)) if callable(value) else value
    return change


def tokenizer(change: Callable[[dict[str, Any]], Any]) -> Callable[[Base], bytes]:
    """A family that rewrites the tokenizer.json document (or returns replacement text)."""
    def edit(doc: dict[str, Any]) -> None:
        enc = doc[Key.ENCODER]
        tok = json.loads(enc[Key.TOKENIZER_JSON])
        out = change(tok)
        enc[Key.TOKENIZER_JSON] = out if isinstance(out, str) else json.dumps(tok)
    return edited(edit)


def with_model(model: bytes | Callable[[], bytes] | Callable[[bytes], bytes], *, crafted: bool = True,
               inputs: list[str] | None = None) -> Callable[[Base], bytes]:
    """The bundle with another encoder model: ``model`` bytes, made by a function, or (with
    ``crafted=False``) made from the bundle's own model. A crafted model has no external data
    (encoder.weights empty) and outputs `UNIT`, which becomes its check embedding."""
    def edit(doc: dict[str, Any]) -> None:
        enc = doc[Key.ENCODER]
        if crafted:
            enc[Key.MODEL] = model() if callable(model) else model
            enc[Key.CHECK_EMBEDDING] = {Key.DTYPE: "<f4", Key.SHAPE: [DIM], Key.DATA: struct.pack(f"<{DIM}f", *UNIT)}
            if Key.WEIGHTS in enc:
                enc[Key.WEIGHTS] = b""
        else:
            enc[Key.MODEL] = model(enc[Key.MODEL])
        if inputs is not None:
            enc[Key.INPUTS] = inputs
    return edited(edit)


def before_encoder(doc: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """The document with a top-level field added right before encoder (where a newer minor
    version's field may go)."""
    out = {k: v for k, v in doc.items() if k != Key.ENCODER}
    out[key] = value
    out[Key.ENCODER] = doc[Key.ENCODER]
    return out


# --------------------------------------------------------------------------- crafted ONNX models


def _onnx() -> Any:
    import onnx
    from onnx import TensorProto, helper
    return onnx, helper, TensorProto


def onnx_graph(nodes: list[Any], inits: list[Any] | None = None, *, out_shape: Any = (1, DIM),
               input_type: int | None = None, opset: int = 18, domains: tuple[str, ...] = (),
               functions: list[Any] | None = None) -> bytes:
    """A model with the bundle's inputs (input_ids, attention_mask) and one float output,
    ``sentence_embedding``; graph checks are off (the crafted graphs break rules on purpose)."""
    onnx, helper, T = _onnx()
    itype = T.INT64 if input_type is None else input_type
    graph = helper.make_graph(nodes, "hostile", [helper.make_tensor_value_info("input_ids", itype, [1, None]),
                                                 helper.make_tensor_value_info("attention_mask", itype, [1, None])],
                              [helper.make_tensor_value_info("sentence_embedding", T.FLOAT, list(out_shape))],
                              initializer=inits or [])
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]
    model = helper.make_model(graph, opset_imports=opsets, functions=functions or [])
    model.ir_version = 8
    return model.SerializeToString()


def _unit_output(extra: str | None) -> tuple[list[Any], list[Any]]:
    """Nodes that output a constant unit vector, plus 0 x (the sum of tensor ``extra``) so that
    the crafted part is computed and not pruned (Mul, Add, ReduceSum, Reshape, Cast)."""
    _, helper, T = _onnx()
    inits = [helper.make_tensor("unit", T.FLOAT, [1, DIM], [1 / math.sqrt(DIM)] * DIM),
             helper.make_tensor("zero", T.FLOAT, [], [0.0]), helper.make_tensor("one_shape", T.INT64, [2], [1, 1])]
    if extra is None:
        return [helper.make_node("Add", ["unit", "zero"], ["sentence_embedding"])], inits
    nodes = [helper.make_node("Cast", [extra], ["extra_f"], to=T.FLOAT),
             helper.make_node("ReduceSum", ["extra_f"], ["extra_sum"], keepdims=0),
             helper.make_node("Mul", ["extra_sum", "zero"], ["extra_zero"]),
             helper.make_node("Reshape", ["extra_zero", "one_shape"], ["extra_11"]),
             helper.make_node("Add", ["unit", "extra_11"], ["sentence_embedding"])]
    return nodes, inits


def onnx_unit(body: list[Any] | None = None, inits: list[Any] | None = None, extra: str | None = None,
              **kw: Any) -> bytes:
    out_nodes, out_inits = _unit_output(extra)
    return onnx_graph((body or []) + out_nodes, (inits or []) + out_inits, **kw)


def onnx_loop() -> bytes:
    """A Loop of 1e12 iterations whose body adds one (control flow: refused by the family)."""
    onnx, helper, T = _onnx()
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Add", ["x_in", "one"], ["x_out"])],
        "body", [helper.make_tensor_value_info("i", T.INT64, []), helper.make_tensor_value_info("cond_in", T.BOOL, []),
                 helper.make_tensor_value_info("x_in", T.FLOAT, [])],
        [helper.make_tensor_value_info("cond_out", T.BOOL, []), helper.make_tensor_value_info("x_out", T.FLOAT, [])],
        initializer=[helper.make_tensor("one", T.FLOAT, [], [1.0])])
    _, helper, T = _onnx()
    nodes = [helper.make_node("Loop", ["trip", "cond", "x0"], ["x"], body=body)]
    inits = [helper.make_tensor("trip", T.INT64, [], [10**12]), helper.make_tensor("cond", T.BOOL, [], [True]),
             helper.make_tensor("x0", T.FLOAT, [], [0.0])]
    return onnx_unit(nodes, inits, extra="x")


def onnx_if() -> bytes:
    onnx, helper, T = _onnx()
    branch = helper.make_graph([helper.make_node("Constant", [], ["v"], value=helper.make_tensor("c", T.FLOAT, [], [1.0]))],
                               "b", [], [helper.make_tensor_value_info("v", T.FLOAT, [])])
    nodes = [helper.make_node("If", ["cond"], ["x"], then_branch=branch, else_branch=branch)]
    return onnx_unit(nodes, [helper.make_tensor("cond", T.BOOL, [], [True])], extra="x")


def onnx_expand_constant(elements: int = 384 * 2**20) -> bytes:
    """Expand a scalar to ``elements`` floats (1.5 GiB): in the family, bounded by the arena."""
    _, helper, T = _onnx()
    nodes = [helper.make_node("Expand", ["one", "shape"], ["big"])]
    inits = [helper.make_tensor("one", T.FLOAT, [1], [1.0]),
             helper.make_tensor("shape", T.INT64, [2], [elements // 1024, 1024])]
    return onnx_unit(nodes, inits, extra="big")


def onnx_expand_on_token(token_id: int, rows_per_hit: int = 2**20) -> bytes:
    """Expand to 4 GiB per occurrence of one token id in the text: harmless at load (the probe
    text lacks it), a bomb in a query that has it."""
    _, helper, T = _onnx()
    nodes = [helper.make_node("Equal", ["input_ids", "trigger"], ["hit"]),
             helper.make_node("Cast", ["hit"], ["hit_i"], to=T.INT64),
             helper.make_node("ReduceSum", ["hit_i"], ["hits"], keepdims=1),
             helper.make_node("Mul", ["hits", "rows"], ["n"]),
             helper.make_node("Reshape", ["n", "one_dim"], ["n1"]),
             helper.make_node("Concat", ["n1", "width"], ["shape"], axis=0),
             helper.make_node("Expand", ["one", "shape"], ["big"])]
    inits = [helper.make_tensor("trigger", T.INT64, [], [token_id]), helper.make_tensor("rows", T.INT64, [], [rows_per_hit]),
             helper.make_tensor("one_dim", T.INT64, [1], [1]), helper.make_tensor("width", T.INT64, [1], [1024]),
             helper.make_tensor("one", T.FLOAT, [1], [1.0])]
    return onnx_unit(nodes, inits, extra="big")


def onnx_nan_on_token(token_id: int) -> bytes:
    """NaN in the embedding of any text holding one token id (the square root of minus its
    count), the constant unit vector otherwise."""
    _, helper, T = _onnx()
    nodes = [helper.make_node("Equal", ["input_ids", "trigger"], ["hit"]),
             helper.make_node("Cast", ["hit"], ["hit_f"], to=T.FLOAT),
             helper.make_node("ReduceSum", ["hit_f"], ["hits"], keepdims=0),
             helper.make_node("Sub", ["zero", "hits"], ["minus_hits"]),
             helper.make_node("Sqrt", ["minus_hits"], ["bad"]),
             helper.make_node("Add", ["unit", "bad"], ["sentence_embedding"])]
    _, inits = _unit_output(None)
    return onnx_graph(nodes, [helper.make_tensor("trigger", T.INT64, [], [token_id]), *inits])


def onnx_matmul_square(n: int = 100_000) -> bytes:
    """[n, 1] x [1, n]: 40 GB from two 400 KB vectors (MatMul and Expand: in the family)."""
    _, helper, T = _onnx()
    nodes = [helper.make_node("Expand", ["one", "col_shape"], ["col"]),
             helper.make_node("Expand", ["one", "row_shape"], ["row"]),
             helper.make_node("MatMul", ["col", "row"], ["square"])]
    inits = [helper.make_tensor("one", T.FLOAT, [1], [1.0]), helper.make_tensor("col_shape", T.INT64, [2], [n, 1]),
             helper.make_tensor("row_shape", T.INT64, [2], [1, n])]
    return onnx_unit(nodes, inits, extra="square")


def onnx_slow(n: int = 2896, steps: int = 12) -> bytes:
    """A chain of n x n matrix products (32 MiB each, inside the arena): seconds of work per run."""
    _, helper, T = _onnx()
    nodes = [helper.make_node("Expand", ["one", "shape"], ["m0"])]
    for i in range(steps):
        nodes.append(helper.make_node("MatMul", [f"m{i}", "m0"], [f"m{i + 1}"]))
    inits = [helper.make_tensor("one", T.FLOAT, [1], [1e-3]), helper.make_tensor("shape", T.INT64, [2], [n, n])]
    return onnx_unit(nodes, inits, extra=f"m{steps}")


def onnx_external_data(location: str) -> bytes:
    """An initializer whose bytes live in a file beside the working folder."""
    onnx, helper, T = _onnx()
    w = helper.make_tensor("w", T.FLOAT, [4], [0.0] * 4)
    w.ClearField("float_data")
    w.data_location = onnx.TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", "0"), ("length", "16")):
        entry = w.external_data.add()
        entry.key, entry.value = k, v
    return onnx_unit([helper.make_node("Add", ["w", "w"], ["w2"])], [w], extra="w2")


def onnx_gather_table(rows: int) -> bytes:
    """Embeddings from a table of ``rows`` rows: any token id past it fails in Gather."""
    _, helper, T = _onnx()
    nodes = [helper.make_node("Gather", ["table", "input_ids"], ["emb"], axis=0)]
    return onnx_unit(nodes, [helper.make_tensor("table", T.FLOAT, [rows, 4], [0.5] * rows * 4)], extra="emb")


def onnx_output(values: list[float], shape: tuple[int, ...] = (1, DIM)) -> bytes:
    _, helper, T = _onnx()
    return onnx_graph([helper.make_node("Add", ["v", "zero"], ["sentence_embedding"])],
                      [helper.make_tensor("v", T.FLOAT, list(shape), values), helper.make_tensor("zero", T.FLOAT, [], [0.0])],
                      out_shape=shape)


def onnx_custom_op() -> bytes:
    _, helper, _ = _onnx()
    return onnx_unit([helper.make_node("Evil", ["input_ids"], ["x"], domain="com.example.evil")], extra="x",
                     domains=("com.example.evil",))


def onnx_function() -> bytes:
    _, helper, T = _onnx()
    fn = helper.make_function("local", "Double", ["a"], ["b"], [helper.make_node("Add", ["a", "a"], ["b"])],
                              [helper.make_opsetid("", 18)])
    return onnx_unit([helper.make_node("Double", ["input_ids"], ["x"], domain="local")], extra="x", domains=("local",),
                     functions=[fn])


def onnx_sparse_initializer() -> bytes:
    onnx, helper, T = _onnx()
    values = helper.make_tensor("sv", T.FLOAT, [1], [1.0])
    indices = helper.make_tensor("si", T.INT64, [1], [0])
    model = onnx.load_from_string(onnx_unit())
    model.graph.sparse_initializer.append(helper.make_sparse_tensor(values, indices, [10**6]))
    return model.SerializeToString()


def onnx_training_info() -> bytes:
    onnx, helper, T = _onnx()
    model = onnx.load_from_string(onnx_unit())
    info = model.training_info.add()
    info.algorithm.CopyFrom(helper.make_graph([], "train", [], []))
    return model.SerializeToString()


def onnx_constant_of_shape(elements: int = 10**10) -> bytes:
    _, helper, T = _onnx()
    nodes = [helper.make_node("ConstantOfShape", ["shape"], ["big"],
                              value=helper.make_tensor("v", T.FLOAT, [1], [1.0]))]
    return onnx_unit(nodes, [helper.make_tensor("shape", T.INT64, [1], [elements])], extra="big")


def onnx_escaped_names() -> bytes:
    """In-family operators whose node and tensor names carry terminal escape sequences, one
    input defined nowhere: onnxruntime refuses the graph in a message that quotes the names."""
    _, helper, T = _onnx()
    esc = "\x1b]0;pwned\x07\x1b[2J\x9b31m"
    nodes = [helper.make_node("Add", [f"{esc}missing", "zero"], [f"{esc}sum"], name=f"{esc}node"),
             helper.make_node("Add", [f"{esc}sum", "unit"], ["sentence_embedding"], name=f"add{esc}")]
    _, inits = _unit_output(None)
    return onnx_graph(nodes, inits)


# --------------------------------------------------------------------------- crafted TFLite models


def _litert_schema() -> Any:
    from ai_edge_litert import schema_py_generated as schema
    return schema


def tflite_rewrite(model: bytes, change: Callable[[Any, Any], None]) -> bytes:
    """The TFLite model unpacked with LiteRT's object API, changed, and packed again."""
    import flatbuffers
    schema = _litert_schema()
    m = schema.ModelT.InitFromObj(schema.Model.GetRootAs(model, 0))
    change(m, schema)
    b = flatbuffers.Builder(len(model) + 4096)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def _tflite_op_code(code: int) -> Callable[[Any, Any], None]:
    def change(m: Any, schema: Any) -> None:
        m.operatorCodes[0].builtinCode = code
        m.operatorCodes[0].deprecatedBuiltinCode = min(code, 127)
    return change


def _tflite_custom(m: Any, schema: Any) -> None:
    m.operatorCodes[0].builtinCode = schema.BuiltinOperator.CUSTOM
    m.operatorCodes[0].deprecatedBuiltinCode = schema.BuiltinOperator.CUSTOM
    m.operatorCodes[0].customCode = b"EvilOp"


def _tflite_two_subgraphs(m: Any, schema: Any) -> None:
    m.subgraphs.append(copy.deepcopy(m.subgraphs[0]))


def _tflite_buffer_offset(m: Any, schema: Any) -> None:
    buf = next(b for b in m.buffers if b.data is not None and len(b.data))
    buf.data, buf.offset, buf.size = None, 1, 16


def _tflite_bad_name(m: Any, schema: Any) -> None:
    m.subgraphs[0].tensors[0].name = b"\xff\xfename"


def onnx_layernorm_bias_left_out(model: bytes) -> bytes:
    """The bundle's own graph with its first LayerNormalization's bias left out (an empty input
    name, which the ONNX operator allows): onnxruntime crashed on it (SIGSEGV)."""
    import onnx
    m = onnx.load_from_string(model)  # external data stays where it is: the bundle's weights
    next(n for n in m.graph.node if n.op_type == "LayerNormalization").input[2] = ""
    return m.SerializeToString()


def _tflite_input_left_out(m: Any, schema: Any) -> None:
    """The first MUL's second input left out (-1): LiteRT runs the kernel on no tensor (a segfault once)."""
    codes = [max(c.builtinCode, c.deprecatedBuiltinCode) for c in m.operatorCodes]
    op = next(o for o in m.subgraphs[0].operators if codes[o.opcodeIndex] == schema.BuiltinOperator.MUL)
    op.inputs = [op.inputs[0], -1, *op.inputs[2:]]


def _tflite_variable_tensors(m: Any, schema: Any) -> None:
    """Every tensor that is not a constant marked variable (LiteRT keeps it across runs: a segfault once)."""
    for t in m.subgraphs[0].tensors:
        t.isVariable = not (m.buffers[t.buffer].data is not None and len(m.buffers[t.buffer].data))


def tflite_vector_length(model: bytes) -> bytes:
    """The operators vector's length field rewritten to 2^31 (its elements stay as they are)."""
    schema = _litert_schema()
    sg = schema.Model.GetRootAs(model, 0).Subgraphs(0)
    o = sg._tab.Offset(10)  # SubGraph.operators (field 3: 4 + 2*3)
    vec = sg._tab.Vector(o) - 4
    return model[:vec] + struct.pack("<I", 2**31) + model[vec + 4:]


def tflite_shared_name(tensors: int = 2 * schema.MAX_TFLITE_OPERATORS, name_bytes: int = 4 * 2**20) -> bytes:
    """A flatbuffer whose one subgraph lists ``tensors`` tensors that are all one table, whose
    name is one ``name_bytes`` string (flatbuffers may share tables and strings): a model of
    name_bytes that a check reading each tensor's name reads ``tensors`` times."""
    head = (struct.pack("<I", 16) + struct.pack("<HHHHH", 10, 8, 0, 0, 4) + b"\0\0" + struct.pack("<iI", 12, 4)
            + struct.pack("<II", 1, 12) + struct.pack("<HHH", 6, 8, 4) + b"\0\0" + struct.pack("<iI", 8, 4))
    vtable = 52 + 4 * tensors
    offsets = b"".join(struct.pack("<I", vtable + 12 - (52 + 4 * i)) for i in range(tensors))
    return (head + struct.pack("<I", tensors) + offsets + struct.pack("<HHHHHH", 12, 8, 0, 0, 0, 4)
            + struct.pack("<iI", 12, 4) + struct.pack("<I", name_bytes) + b"n" * name_bytes)


def tf_models() -> dict[str, bytes]:
    """TFLite encoders converted by TensorFlow from small functions of the input ids."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    spec = [tf.TensorSpec([1, None], tf.int32, name="input_ids")]

    def convert(fn: Callable[[Any], Any]) -> bytes:
        module = tf.Module()
        module.f = tf.function(fn, input_signature=spec)
        with tempfile.TemporaryDirectory() as d:
            tf.saved_model.save(module, d, signatures={"serving_default": module.f})
            return tf.lite.TFLiteConverter.from_saved_model(d).convert()

    def unit(x: Any) -> dict[str, Any]:
        # A unit vector whatever the (positive) value of x, which keeps x in the graph.
        v = tf.ones([1, DIM]) * tf.reshape(tf.cast(x, tf.float32), [1, 1])
        return {"sentence_embedding": tf.math.l2_normalize(v, axis=1)}

    def first_id(ids: Any) -> Any:
        return tf.gather(ids[0], 1)

    def mean_id(ids: Any) -> Any:
        return tf.reduce_mean(tf.cast(ids, tf.float32))

    return {
        "while": convert(lambda ids: unit(tf.while_loop(lambda i: i < 10**12, lambda i: i + 1,
                                                        [tf.cast(first_id(ids), tf.int64)])[0])),
        "fill": convert(lambda ids: unit(tf.reduce_mean(tf.fill(tf.stack([first_id(ids) * 128, 1024]), 1.0)))),
        "broadcast": convert(lambda ids: unit(tf.reduce_mean(
            tf.broadcast_to(tf.constant(1.0), tf.stack([first_id(ids) * 1024, 1024]))))),
        "square": convert(lambda ids: unit(tf.reduce_mean(tf.matmul(
            tf.reshape(tf.cast(tf.range(first_id(ids) * 64), tf.float32), [-1, 1]),
            tf.reshape(tf.cast(tf.range(first_id(ids) * 64), tf.float32), [1, -1]))))),
        "wrong-shape": convert(lambda ids: {"sentence_embedding": tf.ones([1, 10]) * tf.reshape(mean_id(ids), [1, 1])}),
        "nan": convert(lambda ids: {"sentence_embedding": tf.ones([1, DIM]) * tf.reshape(mean_id(ids) * float("nan"),
                                                                                           [1, 1])}),
    }


# --------------------------------------------------------------------------- families


@dataclass
class Family:
    name: str
    base: str                       # "onnx", "tflite" or "random" (the --hashing random bundle)
    make: Callable[[Base], bytes]
    expect: str = "refused"         # refused, classified or skipped
    texts: list[str] = field(default_factory=lambda: list(TEXTS))
    args: tuple[str, ...] = ()
    needs: str = ""                 # "onnx", "tf" or "litert": a package the crafting needs
    fast: bool = False              # in the test suite's subset
    about: str = ""
    #: a file bigger than memory is written sparsely instead of through bytes
    sparse: Callable[[Base, Path], None] | None = None


def _replace_chain(doc: dict[str, Any]) -> None:
    doc["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "Replace", "pattern": {"String": "a"}, "content": "a " * 50} for _ in range(6)]}


def _split_regex(doc: dict[str, Any]) -> None:
    doc["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": "^(a+)+$"}, "behavior": "Isolated", "invert": False}


def _bpe(doc: dict[str, Any]) -> None:
    doc["model"] = {"type": "BPE", "dropout": None, "unk_token": "[UNK]", "continuing_subword_prefix": None,
                    "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                    "vocab": doc["model"]["vocab"], "merges": []}


def _vocab(n: int) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        vocab = doc["model"]["vocab"]
        for i in range(len(vocab), n):
            vocab[f"tok{i}"] = i
    return change


def _model_field(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda doc: doc["model"].__setitem__(key, value)


def _added_token(doc: dict[str, Any]) -> None:
    doc["added_tokens"].append({"id": 5, "content": "y" * 10_000, "single_word": False, "lstrip": False,
                                "rstrip": False, "normalized": True, "special": False})


def _template(n: int) -> Callable[[dict[str, Any]], None]:
    return lambda doc: doc["post_processor"].__setitem__("single", [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}] * n)


def _padding(doc: dict[str, Any]) -> None:
    doc["padding"] = {"strategy": {"Fixed": 10**12}, "direction": "Right", "pad_to_multiple_of": None, "pad_id": 0,
                      "pad_type_id": 0, "pad_token": "[PAD]"}


def _labels(i: int, text: str | Callable[[list[str]], str], key: str = Key.LABELS) -> Callable[[dict[str, Any]], None]:
    """Label (or description) i replaced by ``text``, or by text made from the list."""
    def change(doc: dict[str, Any]) -> None:
        doc[key][i] = text(doc[key]) if callable(text) else text
    return change


def _descriptions(i: int, text: str) -> Callable[[dict[str, Any]], None]:
    return _labels(i, text, Key.LABEL_DESCRIPTIONS)


# The privacy facts (runtime/bundle/schema.py, relations "shares", "noise scale", "sensitivity").


def _consistent(doc: dict[str, Any]) -> None:
    """Each release's scale set to its sensitivity / epsilon and privacy.epsilon to their sum."""
    releases = doc[Key.RELEASES]
    for r in releases.values():
        r[Key.NOISE_SCALE] = r[Key.SENSITIVITY_L1] / r[Key.EPSILON]
    doc[Key.PRIVACY][Key.EPSILON] = math.fsum(r[Key.EPSILON] for r in releases.values())


def _epsilon_claim(eps: float) -> Callable[[dict[str, Any]], None]:
    """The bundle claims ``eps`` (privacy.epsilon and every share rescaled), its scales unchanged."""
    def change(doc: dict[str, Any]) -> None:
        factor = eps / doc[Key.PRIVACY][Key.EPSILON]
        doc[Key.PRIVACY][Key.EPSILON] = eps
        for r in doc[Key.RELEASES].values():
            r[Key.EPSILON] *= factor
    return change


def _overspent(doc: dict[str, Any]) -> None:
    """The class_sums share doubled with its scale to match: each release is consistent, the
    shares spend more than privacy.epsilon."""
    r = doc[Key.RELEASES][Key.CLASS_SUMS]
    r[Key.EPSILON] *= 2
    r[Key.NOISE_SCALE] = r[Key.SENSITIVITY_L1] / r[Key.EPSILON]


def _sums_sensitivity(per_unit: int, grid: int, clip: float, stated: int) -> Callable[[dict[str, Any]], None]:
    """K, the class sums' grid and clip, and the sensitivity the bundle states (with its scale)."""
    def change(doc: dict[str, Any]) -> None:
        doc[Key.PRIVACY][Key.MAX_RECORDS_PER_UNIT] = per_unit
        releases = doc[Key.RELEASES]
        releases[Key.CLASS_COUNTS][Key.SENSITIVITY_L1] = per_unit
        releases[Key.CLASS_SUMS].update({Key.GRID: grid, Key.CLIP_L1: clip, Key.SENSITIVITY_L1: stated})
        _consistent(doc)
    return change


#: K x round(grid x clip_l1) = 3 x 1,431,655,766 = 2^32 + 2, which 32-bit arithmetic wraps to 2.
_WRAP = dict(per_unit=3, grid=1_431_655_766, clip=1.0)


def _every_fact_at_its_bound(doc: dict[str, Any]) -> None:
    """A consistent bundle with every privacy and scoring number at its bound: K = 1e6, each
    share 1e-6, the largest sensitivities and scales, temperatures 1e-3, R 1e6, the pull 1e3.
    Relation "finite": it must classify with finite scores."""
    per_unit = schema.MAX_RECORDS_PER_UNIT
    doc[Key.PRIVACY].update({Key.MAX_RECORDS_PER_UNIT: per_unit, Key.PRIVACY_UNIT: wording.privacy_unit(per_unit),
                             Key.NEIGHBOUR_RELATION: wording.neighbour_relation(per_unit, "'user_id'")})
    releases = doc[Key.RELEASES]
    for name, r in releases.items():
        r[Key.EPSILON] = schema.EPSILON_MIN
        if name == Key.CLASS_SUMS:
            r.update({Key.GRID: 1, Key.CLIP_L1: float(schema.MAX_SENSITIVITY // per_unit)})
            steps = round(r[Key.GRID] * r[Key.CLIP_L1])
        else:  # a record moves one count, or one cell in each of T tables
            steps = r[Key.VALUES][Key.SHAPE][0] if name == Key.VOTES else 1
        r[Key.SENSITIVITY_L1] = per_unit * steps
    _consistent(doc)
    if Key.SCORING in doc:
        doc[Key.SCORING].update(centroid_temperature=schema.TEMPERATURE_MIN, prior_temperature=schema.TEMPERATURE_MIN,
                                prior_records_per_class=1e6, description_pull=1e3)


def _unknown_release(doc: dict[str, Any]) -> None:
    """A release of a kind no reader knows, its epsilon part of a consistent total."""
    doc[Key.RELEASES]["histogram"] = {Key.EPSILON: 1.0, Key.SENSITIVITY_L1: 1, Key.NOISE_SCALE: 1.0,
                                      Key.MECHANISM: "a statistic of a kind no reader knows"}
    doc[Key.PRIVACY][Key.EPSILON] += 1.0


def _counts_without_sums(doc: dict[str, Any]) -> None:
    del doc[Key.RELEASES][Key.CLASS_SUMS]
    _consistent(doc)


def _pre_release(base: Base) -> bytes:
    """A file in the pre-release container (formats 0.x to 4.0): refused, with "rebuild it"."""
    payload = msgpack.packb({"labels": base.doc[Key.LABELS]}, use_bin_type=True)
    return msgpack.packb({"format": schema.PRE_RELEASE_NAME, "version": [4, 0],
                          "checksum": {"algorithm": "sha256", "digest": hashlib.sha256(payload).digest()},
                          "payload": payload}, use_bin_type=True)


def _repeated(path: str, key: str, first: Any) -> Callable[[dict[str, Any]], Any]:
    """The map at ``path`` ("" for the top) says ``key`` twice: ``first``, then its real value
    (msgpack keeps the last one, another parser may keep the first)."""
    def change(doc: dict[str, Any]) -> Any:
        node = doc
        for k in path.split(".") if path else ():
            node = node[k]
        items = list(node.items())
        i = next(j for j, (k, _) in enumerate(items) if k == key)
        pairs = Pairs(items[:i] + [(key, first)] + items[i:])
        if not path:
            return pairs
        parent = doc
        for k in path.split(".")[:-1]:
            parent = parent[k]
        parent[path.split(".")[-1]] = pairs
    return change


def _nfkc_twin(labels: list[str]) -> str:
    return labels[0].translate({i: i + 0xFEE0 for i in range(0x21, 0x7F)})  # fullwidth forms


def _tiled(n: int) -> Callable[[dict[str, Any]], None]:
    """n classes (the class statistics tiled), every text field at its bound: n labels of 200
    characters, n descriptions of 2000, the privacy texts and 256 public inputs of 10,000. A
    valid bundle, about 52 MB at n = 4096."""
    def tile(rec: dict[str, Any], dtype: str) -> dict[str, Any]:
        import numpy as np
        a = np.frombuffer(rec[Key.DATA], dtype).reshape(rec[Key.SHAPE])
        a = np.concatenate([a] * -(-n // a.shape[0]))[:n]
        return {Key.DTYPE: dtype, Key.SHAPE: list(a.shape), Key.DATA: a.tobytes()}

    def change(doc: dict[str, Any]) -> None:
        for name in (Key.CLASS_COUNTS, Key.CLASS_SUMS):
            doc[Key.RELEASES][name][Key.VALUES] = tile(doc[Key.RELEASES][name][Key.VALUES], "<i4")
        doc[Key.PRIOR] = tile(doc[Key.PRIOR], "<f4")
        doc[Key.LABELS] = [f"{i:04d}" + "\u00e9" * (schema.MAX_LABEL_CHARS - 4) for i in range(n)]
        doc[Key.LABEL_DESCRIPTIONS] = [f"{i:04d}" + "\u00e9" * (schema.MAX_DESCRIPTION_CHARS - 4) for i in range(n)]
        privacy = doc[Key.PRIVACY]
        for f in schema.FIELDS:
            if f.parent == Key.PRIVACY and f.kind == "str":
                privacy[f.key] = "\u00e9" * schema.MAX_TEXT_CHARS
        privacy[Key.PUBLIC_INPUTS] = ["\u00e9" * schema.MAX_TEXT_CHARS] * 256
    return change


def _sparse_2gib(base: Base, path: Path, *, valid_checksum: bool) -> None:
    """A 2 GiB file written sparsely: the bundle as a newer minor version (1.1) with an unknown
    field of 1.9 GiB of zeros right before encoder (``valid_checksum``: sealed with its true
    SHA-256, computed in chunks; else a wrong one)."""
    size = 2 * 2**30 - 100 * 2**20
    doc = before_encoder(base.copy(), "padding", Raw(b"\xc6" + struct.pack(">I", size)))
    doc[Key.VERSION] = [1, 1]
    blob = seal(doc)
    at = blob.index(b"\xa7padding\xc6") + 8 + 5  # the key, then the bin32 header (type and length)
    head, tail = blob[:at], blob[at:-schema.TAIL_BYTES]  # the zeros go between them
    digest = hashlib.sha256(head)
    if valid_checksum:
        zeros = bytes(2**24)
        for _ in range(size // len(zeros)):
            digest.update(zeros)
        digest.update(bytes(size % len(zeros)))
        digest.update(tail)
    with open(path, "wb") as f:
        f.write(head)
        f.seek(size, os.SEEK_CUR)
        f.write(tail + DIGEST_TAIL + digest.digest())


def families(models: dict[str, bytes], token_ids: dict[str, int]) -> list[Family]:
    """Every family; ``models`` holds the TFLite models TensorFlow converted (may be empty)."""
    trigger = token_ids["jazz"]
    tf_model = lambda name: (lambda: models[name])  # noqa: E731
    own_tflite = lambda change: with_model(lambda m: tflite_rewrite(m, change), crafted=False)  # noqa: E731
    F = Family
    return [
        # tokenizer.json (runtime/bundle/tokenizer_family.py)
        F("tokenizer-replace-chain", "onnx", tokenizer(_replace_chain), fast=True,
          about="normalizer: 6 chained Replace a -> 'a ' x 50 (7.2 GiB once)"),
        F("tokenizer-split-catastrophic-regex", "onnx", tokenizer(_split_regex), texts=["a" * 40, *TEXTS], fast=True,
          about="pre-tokenizer Split on ^(a+)+$ (a Rust panic ended the stream once)"),
        F("tokenizer-missing-unk", "onnx", tokenizer(_model_field("unk_token", "[NOPE]")), fast=True,
          about="an unknown token not in the vocabulary"),
        F("tokenizer-bpe-model", "onnx", tokenizer(_bpe), about="a BPE model instead of WordPiece"),
        F("tokenizer-vocab-300k", "onnx", tokenizer(_vocab(300_000)), about="300,000 vocabulary entries"),
        F("tokenizer-token-10k-chars", "onnx", tokenizer(lambda d: d["model"]["vocab"].__setitem__("x" * 10_000, len(
            d["model"]["vocab"]))), about="a 10,000-character token"),
        F("tokenizer-max-chars-per-word-1e9", "onnx", tokenizer(_model_field("max_input_chars_per_word", 10**9)),
          about="WordPiece's quadratic match unbounded"),
        F("tokenizer-not-json", "onnx", tokenizer(lambda d: "{\"model\": "), about="cut JSON"),
        F("tokenizer-nested-100k", "onnx", tokenizer(lambda d: "[" * 100_000 + "]" * 100_000),
          about="100,000 nested arrays"),
        F("tokenizer-duplicate-keys", "onnx", tokenizer(lambda d: json.dumps(d)[:-1] + ', "model": {"type": "BPE"}}'),
          about="a second 'model' key (serde and Python disagree on which wins)"),
        F("tokenizer-special-token-id-list", "onnx", tokenizer(lambda d: d["post_processor"]["single"].__setitem__(
            0, {"SpecialToken": {"id": ["[CLS]"], "type_id": 0}})),
          about="a SpecialToken id that is a list (TypeError in the family check)"),
        F("tokenizer-5m-chars", "onnx", tokenizer(lambda d: json.dumps({**d, "x": "y" * 5_000_000})),
          about="a 5,000,000-character document"),
        F("tokenizer-added-token-10k", "onnx", tokenizer(_added_token), about="a 10,000-character added token"),
        F("tokenizer-precompiled-normalizer", "onnx", tokenizer(lambda d: d.__setitem__("normalizer", {
            "type": "Precompiled", "precompiled_charsmap": "A" * 1_000_000})), about="a 1 MB precompiled charsmap"),
        F("tokenizer-template-10k", "onnx", tokenizer(_template(10_000)), about="10,000 special tokens a text"),
        F("tokenizer-id-1e9", "onnx", tokenizer(lambda d: d["model"]["vocab"].__setitem__("wake", 10**9)),
          about="a token id past any embedding table"),
        F("tokenizer-padding-1e12", "onnx", tokenizer(_padding), about="padding to 10^12 tokens"),
        # the check text
        F("check-text-40mb", "onnx", edited(set_path("encoder.check_text", "check " * 7_000_000)), fast=True,
          about="a 40 MB check text (5.3 GiB once)"),
        F("check-text-over-bound", "onnx", edited(set_path("encoder.check_text", "x" * (MAX_CHECK_TEXT_CHARS + 1))),
          about=f"{MAX_CHECK_TEXT_CHARS + 1} characters"),
        # ONNX graphs (runtime/bundle/model_family.py, then onnxruntime under its arena and watchdog)
        F("onnx-loop-1e12", "onnx", with_model(onnx_loop), needs="onnx", fast=True,
          about="Loop of 1e12 iterations (hung at load once)"),
        F("onnx-if-subgraph", "onnx", with_model(onnx_if), needs="onnx", about="If with graph attributes"),
        F("onnx-expand-1.5gib", "onnx", with_model(onnx_expand_constant), needs="onnx", fast=True,
          about="Expand to 1.5 GiB (in the family; the arena refuses it)"),
        F("onnx-expand-on-token", "onnx", with_model(lambda: onnx_expand_on_token(trigger)), needs="onnx",
          expect="skipped", fast=True, about="4 GiB Expand only when the text holds 'jazz': that line skipped"),
        F("onnx-matmul-square", "onnx", with_model(onnx_matmul_square), needs="onnx", about="[1e5, 1] x [1, 1e5]: 40 GB"),
        F("onnx-constant-of-shape-1e10", "onnx", with_model(onnx_constant_of_shape), needs="onnx",
          about="ConstantOfShape of 1e10 floats"),
        F("onnx-slow-matmul-chain", "onnx", with_model(onnx_slow), needs="onnx",
          about="12 products of 2896 x 2896 matrices: seconds per run"),
        F("onnx-external-data-readme", "onnx", with_model(lambda: onnx_external_data("README.md")), needs="onnx",
          fast=True, about="initializer bytes from ./README.md"),
        F("onnx-external-data-absolute", "onnx", with_model(lambda: onnx_external_data("/etc/passwd")), needs="onnx",
          about="initializer bytes from /etc/passwd"),
        F("onnx-external-data-past-the-weights", "onnx", with_model(lambda m: _offset_past_weights(m), crafted=False),
          about="the bundle's form, an offset past encoder.weights"),
        F("onnx-custom-domain-op", "onnx", with_model(onnx_custom_op), needs="onnx",
          about="an operator of domain com.example.evil"),
        F("onnx-local-function", "onnx", with_model(onnx_function), needs="onnx", about="a model-local function"),
        F("onnx-sparse-initializer", "onnx", with_model(onnx_sparse_initializer), needs="onnx",
          about="a sparse initializer of 1e6 elements"),
        F("onnx-training-info", "onnx", with_model(onnx_training_info), needs="onnx", about="training graphs"),
        F("onnx-gather-out-of-range", "onnx", with_model(lambda: onnx_gather_table(10)), needs="onnx", fast=True,
          about="Gather from a 10-row table"),
        F("onnx-int32-input", "onnx", with_model(lambda: onnx_unit(extra="input_ids", input_type=6)), needs="onnx",
          about="input_ids declared int32"),
        F("onnx-wrong-output-shape", "onnx", with_model(lambda: onnx_output([0.1] * 10, (1, 10))), needs="onnx",
          about="a (1, 10) output"),
        F("onnx-nan-output", "onnx", with_model(lambda: onnx_output([math.nan] * DIM)), needs="onnx", fast=True,
          about="NaN embeddings: the load-time check refuses them"),
        F("onnx-nan-on-token-json", "onnx", with_model(lambda: onnx_nan_on_token(trigger)), needs="onnx",
          expect="skipped", args=("--json",), fast=True, about="NaN only for texts with 'jazz', --json"),
        F("onnx-node-names-escape-sequences", "onnx", with_model(onnx_escaped_names), needs="onnx", fast=True,
          about="onnxruntime's error quotes node names holding ESC ] and CSI"),
        F("onnx-garbage-bytes", "onnx", with_model(bytes(range(256)) * 64), about="not a protobuf"),
        F("onnx-truncated", "onnx", with_model(lambda m: m[:len(m) // 2], crafted=False), about="the real model cut"),
        F("onnx-harmless-graph", "onnx", with_model(lambda: onnx_unit(extra="attention_mask")), needs="onnx",
          expect="classified", about="an in-family graph: classified, never crashes"),
        # TFLite flatbuffers (model_family, then LiteRT)
        F("tflite-while-1e12", "tflite", with_model(tf_model("while")), needs="tf", about="WHILE of 1e12 iterations"),
        F("tflite-fill-input-dependent", "tflite", with_model(tf_model("fill")), needs="tf",
          about="FILL sized by a token id"),
        F("tflite-broadcast-input-dependent", "tflite", with_model(tf_model("broadcast")), needs="tf",
          about="BROADCAST_TO sized by a token id (in the family; the process guard ends it)"),
        F("tflite-matmul-square", "tflite", with_model(tf_model("square")), needs="tf",
          about="RANGE x RANGE^T sized by a token id"),
        F("tflite-wrong-output-shape", "tflite", with_model(tf_model("wrong-shape")), needs="tf", about="a (1, 10) output"),
        F("tflite-nan-output", "tflite", with_model(tf_model("nan")), needs="tf", about="NaN embeddings"),
        F("tflite-custom-op", "tflite", own_tflite(_tflite_custom), needs="litert", fast=True, about="a custom operator"),
        F("tflite-while-op-code", "tflite", own_tflite(_tflite_op_code(119)), needs="litert",
          about="an operator code rewritten to WHILE"),
        F("tflite-two-subgraphs", "tflite", own_tflite(_tflite_two_subgraphs), needs="litert", about="a second subgraph"),
        F("tflite-buffer-offset", "tflite", own_tflite(_tflite_buffer_offset), needs="litert",
          about="a buffer stored outside the flatbuffer"),
        F("tflite-non-utf8-tensor-name", "tflite", own_tflite(_tflite_bad_name), needs="litert", fast=True,
          about="a tensor name of bytes ff fe"),
        F("onnx-layernorm-bias-left-out", "onnx", with_model(onnx_layernorm_bias_left_out, crafted=False), needs="onnx",
          fast=True, about="a LayerNormalization's bias input named ''"),
        F("tflite-required-input-left-out", "tflite", own_tflite(_tflite_input_left_out), needs="litert", fast=True,
          about="a MUL's input -1 (left out)"),
        F("tflite-variable-tensors", "tflite", own_tflite(_tflite_variable_tensors), needs="litert", fast=True,
          about="the activations marked variable"),
        F("tflite-vector-length-2^31", "tflite", with_model(tflite_vector_length, crafted=False), needs="litert",
          about="2^31 operators declared"),
        F("tflite-shared-tensor-name", "tflite", with_model(tflite_shared_name), about="40,000 tensors, one table with "
          "a 4 MiB name: the family check reads it 40,000 times"),
        F("tflite-garbage-bytes", "tflite", with_model(b"\x10\x00\x00\x00TFL3" + bytes(range(256)) * 64),
          about="a flatbuffer header and noise"),
        # labels and text that reach a terminal (runtime/text.py)
        F("labels-osc-title", "onnx", edited(_labels(0, "alarm\x1b]0;pwned\x07")), fast=True, about="OSC: retitles"),
        F("labels-ansi-clear", "onnx", edited(_labels(1, "\x1b[2J\x1b[Hweather")), about="ANSI clear screen"),
        F("labels-bidi-override", "onnx", edited(_labels(2, "music\u202eevil")), about="right-to-left override"),
        F("labels-zero-width-twin", "onnx", edited(_labels(1, lambda ls: ls[0] + "\u200b")), fast=True,
          about="label 1 is label 0 and a zero-width space"),
        F("labels-nfkc-twin", "onnx", edited(_labels(1, _nfkc_twin)), about="label 1 is label 0 in fullwidth forms"),
        F("labels-tag-characters", "onnx", edited(_labels(2, "music\U000e0069\U000e0067\U000e006e")),
          about="invisible tag characters spell a hidden word"),
        F("descriptions-carriage-return", "onnx", edited(_descriptions(0, "fine\r  music      spoofed line")),
          args=("--info",), about="\\r overwrites a line of --info"),
        F("exporter-name-osc", "onnx", edited(set_path("exporter.name", "dpedge\x1b]0;pwned\x07")), args=("--info",),
          expect="classified", fast=True, about="free metadata: --info escapes it"),
        F("facts-escapes-json", "onnx", edited(set_path("encoder.facts.name", "mini\x1b]0;x\x07\x85")),
          args=("--info", "--json"), expect="classified", about="--info --json escapes C1 too"),
        F("privacy-text-escapes", "onnx", edited(set_path("privacy.privacy_unit", "one record\x1b[2J\r\x9b31m")),
          about="printable text only"),
        F("output-name-escape", "onnx", edited(set_path("encoder.output", "sentence\x1b[2J")), about="an ESC output name"),
        # privacy facts that contradict each other, overflow, or sit at their bounds
        F("epsilon-1-with-scales-of-8", "onnx", edited(_epsilon_claim(1.0)), fast=True, about="claims 1, noised for 8"),
        F("noise-scale-zero", "onnx", edited(set_path("releases.class_sums.noise_scale", 0.0)), about="scale 0"),
        F("noise-scale-negative", "onnx", edited(set_path("releases.class_sums.noise_scale", -5.0)), about="scale -5"),
        F("releases-overspent", "onnx", edited(_overspent), about="shares add up to more than epsilon"),
        F("random-hashing-scale-mismatch", "random", edited(set_path("releases.votes.noise_scale", 0.5)),
          about="votes-only: scale not sensitivity / epsilon"),
        F("privacy-sensitivity-wraps-int32", "onnx", edited(_sums_sensitivity(**_WRAP, stated=2)), fast=True,
          about="K x round(grid x clip) = 2^32 + 2, stated as its 32-bit wrap, 2"),
        F("privacy-sensitivity-past-int32", "onnx", edited(_sums_sensitivity(**_WRAP, stated=2**32 + 2)),
          about="the same, stated exactly: past 2^31 - 1"),
        F("privacy-epsilon-below-bound", "onnx", edited(_epsilon_claim(1e-7)), about="epsilon 1e-7 (bound 1e-6)"),
        F("privacy-every-fact-at-its-bound", "onnx", edited(_every_fact_at_its_bound), args=("--json",),
          expect="classified", fast=True, about="consistent, every number at its bound: finite scores"),
        # optional fields: present means checked in full (a malformed one never switches a check off)
        F("optional-descriptions-empty", "onnx", edited(set_path("label_descriptions", [])), fast=True,
          about="label_descriptions []"),
        F("optional-offsets-nil", "random", edited(set_path("hashing.offsets", None)), about="hashing.offsets nil"),
        F("optional-seed-negative", "random", edited(set_path("hashing.seed", -1)), about="hashing.seed -1"),
        F("optional-facts-not-a-map", "onnx", edited(set_path("encoder.facts", "int8")), about="encoder.facts a string"),
        F("optional-scoring-dropped", "onnx", edited(lambda d: d.__delitem__(Key.SCORING)), about="the blend without constants"),
        F("optional-noise-library-number", "onnx", edited(set_path("privacy.noise_library", 5)), about="a number"),
        # release kinds
        F("release-unknown-kind", "onnx", edited(_unknown_release), fast=True, about="releases.histogram, consistent"),
        F("release-counts-without-sums", "onnx", edited(_counts_without_sums), about="class_counts alone"),
        F("pre-release-4.0-file", "onnx", _pre_release, about="the old container: rebuild"),
        # keys a map says twice
        F("repeated-key-privacy-epsilon", "onnx", edited(_repeated("privacy", Key.EPSILON, 1.0)), fast=True,
          about="epsilon 1.0, then 8.0"),
        F("repeated-key-labels", "onnx", edited(_repeated("", Key.LABELS, ["a", "b", "c", "d", "e", "f", "g"])),
          about="two label lists"),
        F("repeated-key-weights", "onnx", edited(_repeated("encoder", Key.WEIGHTS, b"\x00" * 64)),
          about="encoder.weights twice"),
        # huge declared shapes and memory bombs
        F("array-2^24-buckets-declared", "random", edited(set_path("releases.votes.values.shape", [32, 2**24, 7])),
          fast=True, about="votes declared [32, 2^24, 7] over the real bytes"),
        F("array-projection-4096-squared-declared", "onnx", edited(set_path("subspace.projection.shape", [4096, 4096])),
          about="a 64 MiB projection declared over 98 KiB"),
        F("msgpack-declared-arrays-nested", "onnx", edited(lambda d: before_encoder(
            d, "x", Raw(b"\xdd\x00\x01\x86\xa0" * 1000))), fast=True,
          about="1,000 nested arrays declaring 100,000 entries each (5 KB)"),
        F("labels-4096-every-text-at-its-bound", "onnx", edited(_tiled(schema.MAX_CLASSES)), expect="classified",
          about="valid: 4096 labels of 200 chars, descriptions of 2000 (52 MB)"),
        # files
        F("file-2gib-corrupt", "onnx", lambda b: b"", sparse=lambda b, p: _sparse_2gib(b, p, valid_checksum=False),
          about="2 GiB, checksum wrong"),
        F("file-2gib-valid-checksum", "onnx", lambda b: b"",
          sparse=lambda b, p: _sparse_2gib(b, p, valid_checksum=True), expect="classified",
          about="2 GiB: a 1.1 bundle with a 1.9 GiB unknown field"),
        F("max-length-8192-long-text", "onnx", edited(set_path("encoder.max_length", 8192)),
          texts=[TEXTS[0], " ".join(["word"] * 3000), TEXTS[2]], expect="skipped",
          about="positions past the model's 512: that line skipped"),
    ]


def _offset_past_weights(model: bytes) -> bytes:
    """The bundle's own model with its last initializer's 20-digit offset set to 1e12."""
    from runtime.bundle.model_family import check_onnx
    last = max(check_onnx(model, 2**62), key=lambda r: r.offset)
    return model[:last.offset_at] + b"%020d" % 10**12 + model[last.offset_at + schema.NUMBER_DIGITS:]


# --------------------------------------------------------------------------- running


@dataclass
class Result:
    family: str
    expect: str
    outcome: str
    exit: int | None
    peak_mib: float
    ratio: float
    load_s: float
    wall_s: float
    detail: str
    wrote: list[str]
    ok: bool = False


def _memory(pid: int) -> tuple[int, int]:
    """(resident, peak resident) bytes of a running process, from /proc (VmRSS, VmHWM). The
    child's own high-water mark: wait4's ru_maxrss is not usable here, as Linux carries the
    parent's maximum over into a forked child."""
    rss = hwm = 0
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmRSS:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith(b"VmHWM:"):
                    hwm = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return rss, hwm


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def run_cli(bundle: Path, texts: list[str], args: tuple[str, ...], sandbox: Path) -> dict[str, Any]:
    """The CLI on one bundle in a sandbox: exit status, outputs, peak RSS, times, new files."""
    home, tmp, cwd = sandbox / "home", sandbox / "tmp", sandbox / "cwd"
    for d in (home, tmp, cwd):
        d.mkdir(parents=True, exist_ok=True)
    (cwd / "README.md").write_text("decoy: an engine that reads this file was told to by the bundle\n")
    before = {d: _files(d) for d in (home, tmp, cwd)}
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "TMPDIR": str(tmp),
           "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, "-m", "runtime.classify", "--bundle", str(bundle), *args]
    if "--info" in args:
        stdin = b""
    else:
        stdin = ("\n".join(texts) + "\n").encode()
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                         env=env)
    first: list[float] = []
    out_chunks: list[bytes] = []
    err_chunks: list[bytes] = []

    def pump(stream: Any, sink: list[bytes]) -> None:
        for line in iter(stream.readline, b""):
            if not first:
                first.append(time.monotonic() - t0)
            sink.append(line)

    threads = [threading.Thread(target=pump, args=(p.stdout, out_chunks), daemon=True),
               threading.Thread(target=pump, args=(p.stderr, err_chunks), daemon=True)]
    for t in threads:
        t.start()
    try:
        p.stdin.write(stdin)
        p.stdin.close()
    except BrokenPipeError:
        pass
    killed = ""
    peak = 0
    while True:
        rss, hwm = _memory(p.pid)  # sampled every 10 ms until the child exits
        peak = max(peak, hwm)
        pid, status = os.waitpid(p.pid, os.WNOHANG)
        if pid:
            break
        if rss > MEMORY_LIMIT:
            killed = "over memory"
        elif time.monotonic() - t0 > TIME_LIMIT:
            killed = "hang"
        if killed:
            p.kill()
        time.sleep(0.01)
    wall = time.monotonic() - t0
    for t in threads:
        t.join(timeout=5)
    p.returncode = os.waitstatus_to_exitcode(status)
    wrote = sorted(f"{d.name}/{f}" for d in (home, tmp, cwd) for f in _files(d) - before[d])
    return {"exit": p.returncode, "stdout": b"".join(out_chunks).decode("utf-8", "replace"),
            "stderr": b"".join(err_chunks).decode("utf-8", "replace"), "peak": peak,
            "load": first[0] if first else wall, "wall": wall, "killed": killed, "wrote": wrote}


LITERT_NOTICES = {"INFO: Created TensorFlow Lite XNNPACK delegate for CPU."}
_TERMINAL_CONTROLS = {chr(c) for c in range(0x20) if chr(c) not in "\n\t"} | {chr(0x7F)} | {chr(c) for c in
                                                                                             range(0x80, 0xA0)}


def judge(fam: Family, r: dict[str, Any]) -> tuple[str, str]:
    """(outcome, detail) of one run."""
    # LiteRT announces its CPU delegate on stderr whenever it builds an interpreter (a legitimate
    # TFLite bundle prints it too): that line is LiteRT's, not an error, and is set aside.
    err_lines = [line for line in r["stderr"].splitlines() if line.strip() and line not in LITERT_NOTICES]
    errors = [line for line in err_lines if line.startswith("error: ")]
    skipped = [line for line in err_lines if line.startswith("skipped ")]
    other = [line for line in err_lines if not line.startswith(("error: ", "skipped ", "# "))]
    detail = (errors or skipped or other or [""])[0][:160]
    controls = sorted({f"U+{ord(c):04X}" for c in r["stdout"] + r["stderr"] if c in _TERMINAL_CONTROLS})
    if r["killed"]:
        return r["killed"], detail
    if r["exit"] < 0:
        return "crash", f"signal {-r['exit']}: {detail}"
    if "Traceback" in r["stderr"] or other:
        return "traceback", detail
    if controls:
        return "controls printed", ", ".join(controls)
    if r["exit"] == 2:
        return ("refused", detail) if len(errors) == 1 and not r["stdout"] else ("traceback", detail)
    answers = [line for line in r["stdout"].splitlines() if line.strip()]
    if "--json" in fam.args and "--info" not in fam.args:
        try:
            for line in answers:
                record = json.loads(line, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
                assert all(math.isfinite(v) for v in record["scores"].values())
        except (ValueError, AssertionError, KeyError):
            return "invalid output", answers[0][:160] if answers else ""
    if "--info" in fam.args:
        return ("classified", detail) if r["exit"] == 0 and answers else ("crash", detail)
    expected_answers = len(fam.texts) - len(skipped)
    if r["exit"] == 0 and not skipped and len(answers) == len(fam.texts):
        return "classified", detail
    if r["exit"] == 1 and skipped and len(answers) == expected_answers:
        return "skipped", detail
    return "crash", f"exit {r['exit']}, {len(answers)} answers for {len(fam.texts)} texts: {detail}"


def run_family(fam: Family, base: Base, work: Path, baseline: dict[str, float]) -> Result:
    folder = work / fam.name
    folder.mkdir(parents=True, exist_ok=True)
    bundle = folder / "cwd" / "hostile.dpedge"
    bundle.parent.mkdir(parents=True, exist_ok=True)
    if fam.sparse is not None:
        fam.sparse(base, bundle)
    else:
        bundle.write_bytes(fam.make(base))
    r = run_cli(bundle, fam.texts, fam.args, folder)
    outcome, detail = judge(fam, r)
    detail = detail.replace(str(bundle), "B")  # the sandbox's path says nothing
    wrote = [w for w in r["wrote"] if not w.endswith("hostile.dpedge")]
    legit = baseline.get("tflite" if fam.base == "tflite" else "onnx") or r["peak"]
    res = Result(fam.name, fam.expect, outcome, r["exit"], r["peak"] / 2**20, r["peak"] / legit, r["load"],
                 r["wall"], detail, wrote)
    res.ok = (outcome == fam.expect and not wrote and res.ratio <= GOAL_RSS_RATIO and res.load_s <= GOAL_LOAD_SECONDS)
    if fam.sparse is not None:
        bundle.unlink()
    return res


def available(needs: str) -> bool:
    import importlib.util
    module = {"onnx": "onnx", "tf": "tensorflow", "litert": "ai_edge_litert", "": "json"}[needs]
    return importlib.util.find_spec(module) is not None and (needs != "litert"
                                                              or importlib.util.find_spec("flatbuffers") is not None)


def build_default_bundles(folder: Path) -> dict[str, Path]:
    from exporter.build import BuildOptions, build

    data = ROOT / "data" / "assistant"
    out = {}
    for name, fmt, hashing in (("onnx", "onnx", "aligned"), ("tflite", "tflite", "aligned"),
                               ("random", "onnx", "random")):
        path = folder / f"assistant-{name}.dpedge"
        if not path.is_file():
            build(BuildOptions(train=data / "train.jsonl", labels=data / "labels.txt", epsilon=8.0, out=path, seed=1234,
                               encoder_format=fmt, hashing=hashing, models_dir=ROOT / "models", progress=False))
        out[name] = path
    return out


def run(bases: dict[str, Path], names: list[str] | None = None, fast: bool = False, work: Path | None = None,
        log: Callable[[str], None] = print) -> list[Result]:
    """Run the families (all, ``names``, or the fast subset) and return their results."""
    loaded = {k: Base.read(v) for k, v in bases.items()}
    from runtime.tokenizer import TextTokenizer

    tok = TextTokenizer(loaded["onnx"].doc[Key.ENCODER][Key.TOKENIZER_JSON], 256)
    ids = {"jazz": tok.encode(["jazz"])[0][1]}
    chosen = [f for f in families({}, ids) if (names is None or f.name in names) and (not fast or f.fast)]
    models: dict[str, bytes] = {}
    if any(f.needs == "tf" for f in chosen) and available("tf"):
        models = tf_models()
    fams = [f for f in families(models, ids) if f.name in {c.name for c in chosen}]
    own = work is None
    work = Path(tempfile.mkdtemp(prefix="dpedge-hostile-")) if own else work
    baseline = {}
    for fmt_name in ("onnx", "tflite"):
        if fmt_name in bases:
            r = run_cli(bases[fmt_name], TEXTS, (), work / f"legit-{fmt_name}")
            assert r["exit"] == 0, r["stderr"]
            baseline[fmt_name] = r["peak"]
            log(f"# legitimate {fmt_name} bundle: peak RSS {r['peak'] / 2**20:.1f} MiB, load {r['load']:.2f} s, "
                f"wrote {r['wrote'] or 'nothing'}")
    results = []
    for fam in fams:
        if fam.base not in loaded or not available(fam.needs):
            log(f"# {fam.name}: skipped ({fam.needs or fam.base} not available)")
            continue
        res = run_family(fam, loaded[fam.base], work, baseline)
        results.append(res)
        log(f"{'ok ' if res.ok else 'NO '} {res.family:<38} {res.outcome:<11} exit {res.exit!s:>3}  "
            f"{res.peak_mib:7.1f} MiB {res.ratio:5.2f}x  load {res.load_s:5.2f} s  {res.detail[:110]}")
    return results


def table(results: list[Result]) -> str:
    rows = ["| family | expected | outcome | exit | peak RSS (MiB) | x legit | load (s) | wall (s) | what the CLI said |",
            "|---|---|---|---:|---:|---:|---:|---:|---|"]
    for r in results:
        said = r.detail.replace("|", "\\|")
        said = said[:120] + ("..." if len(said) > 120 else "")
        rows.append(f"| {r.family} | {r.expect} | {r.outcome}{'' if r.ok else ' **(goal missed)**'} | {r.exit} | "
                    f"{r.peak_mib:.0f} | {r.ratio:.2f} | {r.load_s:.2f} | {r.wall_s:.2f} | {said} |")
    return "\n".join(rows)


def summary(results: list[Result]) -> str:
    from collections import Counter

    outcomes = Counter(r.outcome for r in results)
    worst_ratio = max(results, key=lambda r: r.ratio)
    worst_load = max(results, key=lambda r: r.load_s)
    missed = [r.family for r in results if not r.ok]
    return (f"{len(results)} families: " + ", ".join(f"{n} {k}" for k, n in outcomes.most_common())
            + f"; worst RSS {worst_ratio.ratio:.2f}x legit ({worst_ratio.family}); worst load {worst_load.load_s:.2f} s "
            f"({worst_load.family}); files written {sum(len(r.wrote) for r in results)}; goal "
            + ("met" if not missed else f"missed by {', '.join(missed)}"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--onnx-bundle", type=Path, help="a legitimate default (ONNX) bundle (default: build one)")
    ap.add_argument("--tflite-bundle", type=Path, help="a legitimate TFLite bundle (default: build one)")
    ap.add_argument("--random-bundle", type=Path, help="a legitimate --hashing random bundle (default: build one)")
    ap.add_argument("--only", nargs="*", help="family names to run")
    ap.add_argument("--fast", action="store_true", help="only the subset the test suite runs")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--keep", type=Path, help="keep the crafted bundles and sandboxes in this folder")
    args = ap.parse_args(argv)
    cache = ROOT / ".cache" / "hostile"
    cache.mkdir(parents=True, exist_ok=True)
    bases = build_default_bundles(cache) if not (args.onnx_bundle and args.tflite_bundle and args.random_bundle) else {}
    for name in ("onnx", "tflite", "random"):
        given = getattr(args, f"{name}_bundle")
        if given:
            bases[name] = given
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    results = run(bases, args.only, args.fast, args.keep)
    print()
    print(table(results))
    print()
    print(summary(results))
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in results], indent=2))
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
