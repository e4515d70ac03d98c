"""Bundles every reader must refuse, and some it must accept, generated from the format's table.

The refusals are derived from format/1/schema.json (its fields, dims, conditions, relations and
families) rather than written one by one, so a field added to the table gets its cases without
anyone listing them. Each case is a sealed bundle and the refusal it must get: the error code
and the path (docs/bundle-format.md section 8), never English words. For each field, its row
implies:

- missing when required; absent while its condition holds, present while it does not;
- the wrong msgpack type (and nil for an optional field); an integer where the row says float
  and a float where it says integer; NaN and infinities for a float;
- a number, a length or a count just outside its bounds; a value outside its choices;
- for an array record: another dtype, a shape of the wrong rank, an axis that disagrees with
  its symbol or a symbol out of its bounds, data one item short or not bin, a value that is
  not finite, a key too many;
- for text: an unprintable code point, an item over its length; for labels and descriptions
  an unassigned code point and an item that shows nothing;
- for a closed map: a key it does not have.

Then the container's rules, the relations, the tokenizer family (strict JSON and its closed
shape) and the model family. The cases are made from a small base (`small_base`: a real tiny
bundle with every field, cut to 3 labels, 4 dimensions, 2 tables of 2 bits, and the smallest
encoder of the family: a one-node ONNX graph and a 13-token vocabulary), so that about 500 cases
take about 1.5 MB; the privacy facts and relations stay those of a real build.
format/tools/make_corpus.py writes them into the corpus after checking that the Python reader
refuses each with its code and path.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import struct
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import msgpack
import numpy as np

from runtime.bundle import wording
from runtime.bundle.accounting import ACCOUNTANT_RTOL, head_epsilon
from runtime.bundle.reader import CONDITION_HOLDS, has_path
from runtime.contract import schema as _contract
from runtime.bundle.schema import (CONDITIONS, DIGEST_TAIL, DIMS, FIELDS, MAX_CONTAINER, MAX_DEPTH, NUMBER_DIGITS,
                                   PRE_RELEASE_NAME, STATISTICS, TEXT_KINDS, TFLITE_OPS, WEIGHTS_LOCATION, Field,
                                   FIELDS_BY_PATH)

#: Fields whose cases are the container's (the first two entries and the digest).
CONTAINER_FIELDS = ("format", "version", "sha256")
#: A string longer than this is not written to make a case (encoder.tokenizer_json's bound
#: would cost 16 MB per case); the bound is still checked, on shorter values.
LONGEST_CASE_STRING = 100_000
#: Unprintable code points the text cases cycle through, one per field, so that the cases
#: together touch every kind of unprintable range (C0, bidi, tag, C1, noncharacter, line
#: separator, private use).
UNPRINTABLE_SAMPLES = ("\x1b", "\u202e", "\U000e0041", "\x85", "\ufffe", "\u2028", "\ue000", "\u061c")
#: Code points Unicode 18.0 does not assign (a Greek gap, a plane-2 gap, a plane-3 gap).
UNASSIGNED_SAMPLES = ("\u0378", "\U0002fffd", "\U0003fffd")
TOKENIZER = "encoder.tokenizer_json"


@dataclass(frozen=True)
class Case:
    """One bundle and the refusal it must get."""

    name: str
    data: bytes
    code: str
    path: str


# --------------------------------------------------------------------------- msgpack and sealing


class Raw(bytes):
    """msgpack bytes written as they are (an extension, float32, an invalid string...)."""


class Pairs(list):
    """A map given as (key, value) pairs: its keys may repeat or not be strings."""


def pack(v: Any) -> bytes:
    """msgpack of ``v`` with `Raw` and `Pairs` honoured; strings as str, bytes as bin."""
    p = msgpack.Packer(use_bin_type=True)
    if isinstance(v, Raw):
        return bytes(v)
    if isinstance(v, (dict, Pairs)):
        items = v.items() if isinstance(v, dict) else v
        return p.pack_map_header(len(items)) + b"".join(pack(k) + pack(x) for k, x in items)
    if isinstance(v, (list, tuple)):
        return p.pack_array_header(len(v)) + b"".join(pack(x) for x in v)
    return p.pack(v)


def seal_prefix(prefix: bytes) -> bytes:
    """A file from the bytes before its digest entry: the prefix, then ``sha256`` and its digest."""
    return prefix + DIGEST_TAIL + hashlib.sha256(prefix).digest()


def seal(doc: dict[str, Any] | Pairs) -> bytes:
    """A bundle file of a document (its entries, then the digest entry as the last one)."""
    items = list(doc.items() if isinstance(doc, dict) else doc)
    head = msgpack.Packer().pack_map_header(len(items) + 1) + b"".join(pack(k) + pack(v) for k, v in items)
    return seal_prefix(head)


def document(data: bytes) -> dict[str, Any]:
    """A bundle's document in file order, without its digest entry."""
    doc = msgpack.unpackb(data, raw=False)
    doc.pop("sha256")
    return doc


# --------------------------------------------------------------------------- the smallest encoder


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _pb(number: int, value: int | bytes | str) -> bytes:
    """One protobuf field: a varint, or a length-delimited string or message."""
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    raw = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(raw)) + raw


def external_tensor(name: str, offset: int, length: int, *, location: str = WEIGHTS_LOCATION,
                    digits: int = NUMBER_DIGITS, keys: tuple[str, ...] = ("location", "offset", "length"),
                    external: bool = True, raw: bool = False) -> bytes:
    """A uint8 TensorProto of ``length`` values whose data is ``length`` bytes at ``offset`` of
    encoder.weights, in the bundle's form unless told otherwise (docs/bundle-format.md section 6)."""
    values = {"location": location, "offset": f"{offset:0{digits}d}", "length": f"{length:0{digits}d}"}
    tensor = _pb(1, length) + _pb(2, 2) + _pb(8, name)  # dims, data_type UINT8, name
    tensor += b"".join(_pb(13, _pb(1, k) + _pb(2, values[k])) for k in keys)  # external_data entries
    tensor += _pb(14, 1) if external else b""  # data_location EXTERNAL
    return tensor + (_pb(9, bytes(length)) if raw else b"")  # raw_data


def tiny_onnx(*, op: str = "Cast", initializers: tuple[bytes, ...] = (), attribute_tensor: bytes | None = None,
              graphs: int = 1, inputs: tuple[str, ...] = ("input_ids",)) -> bytes:
    """The smallest ONNX model in the encoder family: IR 8, opset 18, one graph of one node
    (``inputs``, input_ids, to sentence_embedding; an empty name leaves an input out),
    optionally initializers and a tensor attribute on the node (``graphs``: how often the graph
    field is repeated, which the family refuses)."""
    node = b"".join(_pb(1, name) for name in inputs) + _pb(2, "sentence_embedding") + _pb(4, op)
    if attribute_tensor is not None:
        node += _pb(5, _pb(1, "value") + _pb(5, attribute_tensor))  # AttributeProto name, t
    graph = _pb(1, node) + b"".join(_pb(5, t) for t in initializers)
    return _pb(1, 8) + _pb(8, _pb(2, 18)) + _pb(7, graph) * graphs


def tiny_tflite(*, op: str = "MUL", inputs: tuple[int, ...] = (0, 1), outputs: tuple[int, ...] = (2,),
                graph_inputs: tuple[int, ...] = (0,), graph_outputs: tuple[int, ...] = (2,), tensors: int = 3,
                tensor_field: str | None = None, operator_field: str | None = None) -> bytes:
    """The smallest TFLite model in the encoder family's shape: one subgraph of ``tensors`` float
    tensors [1, 4] and one operator ``op`` from ``inputs`` to ``outputs``, one empty buffer
    (tensorflow/lite/schema/schema.fbs field order; the flatbuffers package's builder, imported
    here because only the corpus's generator needs it). ``tensor_field`` (on tensor 0) and
    ``operator_field``: a field of schema.json's tflite "absent_fields", written with a value of
    its type."""
    import flatbuffers

    b = flatbuffers.Builder(512)
    absent = _contract()["tflite"]["absent_fields"]

    def ints(values: tuple[int, ...] | list[int]) -> int:
        b.StartVector(4, len(values), 4)
        for v in reversed(values):
            b.PrependInt32(v)
        return b.EndVector()

    def tables(offsets: list[int]) -> int:
        b.StartVector(4, len(offsets), 4)
        for o in reversed(offsets):
            b.PrependUOffsetTRelative(o)
        return b.EndVector()

    def field_writer(name: str) -> Callable[[int], None]:
        """Writes the field ``name`` at its slot (its value's offsets made before the table starts)."""
        if name == "is_variable":
            return lambda slot: b.PrependBoolSlot(slot, True, False)
        if name in ("large_custom_options_offset", "large_custom_options_size"):
            return lambda slot: b.PrependUint64Slot(slot, 16, 0)
        if name == "sparsity":
            b.StartObject(0)
            value = b.EndObject()
        elif name in ("custom_options", "mutating_variable_inputs"):
            value = b.CreateByteVector(b"\x01")
        elif name == "intermediates":
            value = ints([0])
        else:  # variant_tensors: a vector of tables, empty
            value = tables([])
        return lambda slot: b.PrependUOffsetTRelativeSlot(slot, value, 0)

    names, shapes = [b.CreateString(f"t{i}") for i in range(tensors)], [ints([1, 4]) for _ in range(tensors)]
    extra = None if tensor_field is None else (absent["Tensor"][tensor_field], field_writer(tensor_field))
    tensor_tables = []
    for i, (name, shape) in enumerate(zip(names, shapes)):
        b.StartObject(10)  # Tensor: shape, type (FLOAT32 = 0), buffer 0, name
        b.PrependUOffsetTRelativeSlot(0, shape, 0)
        b.PrependUOffsetTRelativeSlot(3, name, 0)
        if extra is not None and i == 0:
            extra[1](extra[0])
        tensor_tables.append(b.EndObject())
    op_inputs, op_outputs = ints(inputs), ints(outputs)
    extra = None if operator_field is None else (absent["Operator"][operator_field], field_writer(operator_field))
    b.StartObject(11)  # Operator: opcode_index 0, inputs, outputs
    b.PrependUOffsetTRelativeSlot(1, op_inputs, 0)
    b.PrependUOffsetTRelativeSlot(2, op_outputs, 0)
    if extra is not None:
        extra[1](extra[0])
    operator = b.EndObject()
    tensor_vec, in_vec, out_vec, op_vec = tables(tensor_tables), ints(graph_inputs), ints(graph_outputs), tables([operator])
    b.StartObject(4)  # SubGraph: tensors, inputs, outputs, operators
    for slot, value in enumerate((tensor_vec, in_vec, out_vec, op_vec)):
        b.PrependUOffsetTRelativeSlot(slot, value, 0)
    subgraph = b.EndObject()
    code = TFLITE_OPS[op]
    b.StartObject(4)  # OperatorCode: deprecated_builtin_code, version 1, builtin_code
    b.PrependInt8Slot(0, min(code, 127), 0)
    b.PrependInt32Slot(2, 1, 1)
    b.PrependInt32Slot(3, code, 0)
    opcode = b.EndObject()
    b.StartObject(0)  # Buffer 0: empty
    buffer = b.EndObject()
    code_vec, sg_vec, buf_vec = tables([opcode]), tables([subgraph]), tables([buffer])
    b.StartObject(5)  # Model: version 3, operator_codes, subgraphs, description, buffers
    b.PrependUint32Slot(0, 3, 0)
    b.PrependUOffsetTRelativeSlot(1, code_vec, 0)
    b.PrependUOffsetTRelativeSlot(2, sg_vec, 0)
    b.PrependUOffsetTRelativeSlot(4, buf_vec, 0)
    b.Finish(b.EndObject(), file_identifier=b"TFL3")
    return bytes(b.Output())


def _special(i: int, token: str) -> dict[str, Any]:
    return {"id": i, "content": token, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
            "special": True}


_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "wake", "me", "up", "play", "##ing", "music", "!", "the", "weather"]
#: The tiny vocabulary's [CLS] and [SEP] in MPNet's post-processor form.
ROBERTA = {"type": "RobertaProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2], "trim_offsets": True,
           "add_prefix_space": False}
#: Each encoder family's own ONNX operators (format/1/schema.json "families").
FAMILY_OPERATORS = {name: [tuple(op) for op in f["onnx_ops"]] for name, f in _contract()["families"].items()
                    if f["onnx_ops"]}
_TEMPLATE = [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
             {"SpecialToken": {"id": "[SEP]", "type_id": 0}}]
#: The smallest tokenizer.json in the family: BERT's pipeline over 13 tokens.
TINY_TOKENIZER: dict[str, Any] = {
    "version": "1.0", "truncation": None, "padding": None,
    "added_tokens": [_special(i, t) for i, t in enumerate(_TOKENS[:4])],
    "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": None,
                   "lowercase": True},
    "pre_tokenizer": {"type": "BertPreTokenizer"},
    "post_processor": {"type": "TemplateProcessing", "single": _TEMPLATE,
                       "pair": _TEMPLATE + [{"Sequence": {"id": "B", "type_id": 1}},
                                            {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
                       "special_tokens": {t: {"id": t, "ids": [i], "tokens": [t]} for i, t in ((2, "[CLS]"), (3, "[SEP]"))}},
    "decoder": None,
    "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
              "max_input_chars_per_word": 100, "vocab": {t: i for i, t in enumerate(_TOKENS)}},
}
TINY_TOKENIZER_JSON = json.dumps(TINY_TOKENIZER, separators=(",", ":"))


def _record(a: np.ndarray, dtype: str) -> dict[str, Any]:
    a = np.ascontiguousarray(a, dtype)
    return {"dtype": dtype, "shape": list(a.shape), "data": a.tobytes()}


def _values(record: dict[str, Any]) -> np.ndarray:
    return np.frombuffer(record["data"], record["dtype"]).reshape(record["shape"])


def small_base(data: bytes, classes: int = 3, dim: int = 4, k: int = 2, tables: int = 2, bits: int = 2) -> dict[str, Any]:
    """A real ONNX bundle with vote tables cut to the smallest shapes (``classes`` labels, ``dim``
    dimensions, ``k`` subspace rows, ``tables`` x ``bits`` hashing) and the smallest encoder in the
    family (`tiny_onnx`, `TINY_TOKENIZER_JSON`, no weights): still valid, a few kilobytes. The
    privacy facts stay consistent: the vote tables' sensitivity follows T."""
    doc = document(data)
    enc = doc["encoder"]
    if enc["format"] != "onnx" or list(enc)[-1] != "weights" or "votes" not in doc["releases"]:
        raise ValueError("small_base needs an ONNX bundle with vote tables")
    doc["labels"] = doc["labels"][:classes]
    doc["label_descriptions"] = doc["label_descriptions"][:classes]
    r = doc["releases"]
    r["class_counts"]["values"] = _record(_values(r["class_counts"]["values"])[:classes], "<i4")
    r["class_sums"]["values"] = _record(_values(r["class_sums"]["values"])[:classes, :k], "<i4")
    r["votes"]["values"] = _record(_values(r["votes"]["values"])[:tables, :2**bits, :classes], "<i2")
    k_per_unit = doc["privacy"]["max_records_per_unit"]
    r["votes"]["sensitivity_l1"] = k_per_unit * tables
    r["votes"]["noise_scale"] = r["votes"]["sensitivity_l1"] / r["votes"]["epsilon"]
    doc["subspace"]["origin"] = _record(_values(doc["subspace"]["origin"])[:dim], "<f4")
    doc["subspace"]["projection"] = _record(_values(doc["subspace"]["projection"])[:k, :dim], "<f4")
    doc["hashing"]["hyperplanes"] = _record(_values(doc["hashing"]["hyperplanes"])[:tables, :bits, :dim], "<f4")
    doc["hashing"]["offsets"] = _record(_values(doc["hashing"]["offsets"])[:tables, :bits], "<f4")
    doc["prior"] = _record(_values(doc["prior"])[:classes, :dim], "<f4")
    check = _values(enc["check_embedding"])[:dim].astype(np.float64)
    enc.update(model=tiny_onnx(), tokenizer_json=TINY_TOKENIZER_JSON, dim=dim,
               check_embedding=_record(check / np.linalg.norm(check), "<f4"), weights=b"")
    # Informational text cut short: every case carries it.
    doc["privacy"]["public_inputs"] = doc["privacy"]["public_inputs"][:2]
    enc["facts"] = {"name": enc["facts"]["name"]}
    return doc


# --------------------------------------------------------------------------- paths in a document


def _rank(path: str) -> int:
    return next((i for i, f in enumerate(FIELDS) if f.path == path), len(FIELDS))


def has(doc: dict[str, Any], path: str) -> bool:
    return has_path(doc, path)  # the reader's own rule


def get(doc: dict[str, Any], path: str) -> Any:
    node: Any = doc
    for key in path.split("."):
        node = node[key]
    return node


def put(doc: dict[str, Any], path: str, value: Any, before: str | None = None) -> None:
    """Set a field, a new key going where the table puts it among its siblings (an unknown key
    before ``before``, or last): the reader requires encoder last and encoder.weights last in it."""
    parent_path, _, key = path.rpartition(".")
    parent = get(doc, parent_path) if parent_path else doc
    if key in parent:
        parent[key] = value
        return
    items = list(parent.items())
    if before is not None:
        at = [k for k, _ in items].index(before)
    else:
        rank = _rank(path)
        at = next((i for i, (k, _) in enumerate(items)
                   if _rank(f"{parent_path}.{k}" if parent_path else k) > rank), len(items))
    items.insert(at, (key, value))
    parent.clear()
    parent.update(items)


def drop(doc: dict[str, Any], *paths: str) -> None:
    for path in paths:
        parent_path, _, key = path.rpartition(".")
        (get(doc, parent_path) if parent_path else doc).pop(key, None)


def falsify(doc: dict[str, Any], condition: str, keep: str) -> None:
    """Make ``condition`` false, then drop every other conditional field that is now present
    without its condition (so that the first field the reader refuses is ``keep``)."""
    if condition in ("class statistics", "blend"):
        drop(doc, "releases.class_counts", "releases.class_sums")
    elif condition == "counted":
        drop(doc, "releases.class_sums", HEAD)
    elif condition == "votes":
        drop(doc, "releases.votes")
    elif condition == "prior":
        drop(doc, "label_descriptions")
    elif condition == "onnx":
        put(doc, "encoder.format", "tflite")
    else:  # "own encoder": only with the pack it names (format/tools/make_corpus.py's pack cases)
        raise LookupError(condition)
    for f in FIELDS:
        if f.need.startswith("iff ") and f.path != keep and has(doc, f.path) and not CONDITION_HOLDS[f.need[4:]](doc):
            drop(doc, f.path)


#: A value of another msgpack type than each kind.
_OTHER = {"map": ["x"], "str": 7, "int": "7", "float": "8.0", "bin": "x", "strings": "x", "ndarray": "x"}


def _dims(doc: dict[str, Any]) -> dict[str, list[str]]:
    """For each array record present, the shape symbols defined before it (C by the labels)."""
    defined, out = {"C"}, {}
    for f in FIELDS:
        if f.kind == "ndarray" and has(doc, f.path):
            out[f.path] = sorted(defined)
            defined |= {s.removeprefix("2^") for s in f.shape}
    return out


# --------------------------------------------------------------------------- field cases

Mutation = tuple[str, Any, str, str]  # name, value, code, path


def _numbers(f: Field, value: Any) -> Iterator[Mutation]:
    p = f.path
    if f.kind == "float":
        yield "integer", int(value), "field.type", p
        for bad in (math.nan, math.inf, -math.inf):
            yield f"{bad}", bad, "field.not_finite", p
        below = float(f.low) - (abs(f.low) / 2 if f.low else 1.0)
        above = float(f.high) + (abs(f.high) if f.high else 1.0)
    else:
        yield "float", float(value), "field.type", p
        yield "boolean", True, "field.type", p
        below = int(f.low) - 1
        above = None if f.high is None else int(f.high) + 1
    yield "below-low", below, "field.range", p
    if above is not None and above < 2**64:
        yield "above-high", above, "field.range", p


def _lengths(f: Field) -> Iterator[Mutation]:
    unit = {"str": "x", "bin": b"x", "strings": ["x"]}[f.kind]
    for name, n in (("too-short", (f.low or 0) - 1), ("too-long", None if f.high is None else int(f.high) + 1)):
        if n is not None and 0 <= n <= LONGEST_CASE_STRING:
            yield name, unit * n, "field.length", f.path


def _text(f: Field, value: Any, index: int) -> Iterator[Mutation]:
    bad = UNPRINTABLE_SAMPLES[index % len(UNPRINTABLE_SAMPLES)]
    rules = TEXT_KINDS[f.text][1] if f.text else ()
    if f.kind == "str" and f.text is not None:
        yield "unprintable", value + bad, "text.unprintable", f.path
    if f.kind != "strings":
        return
    items = list(value) or ["x"]
    item = f"{f.path}[0]"
    yield "item-unprintable", [items[0] + bad] + items[1:], "text.unprintable", item
    most = TEXT_KINDS[f.text][0]
    yield "item-too-long", ["y" * (most + 1)] + items[1:], "field.length", item
    if "unassigned" in rules:
        yield "item-unassigned", [items[0] + UNASSIGNED_SAMPLES[index % len(UNASSIGNED_SAMPLES)]] + items[1:], \
            "text.unassigned", item
    if "blank" in rules:
        yield "item-shows-nothing", ["\u200b\u2060 "] + items[1:], "text.blank", item
        yield "item-braille-blank", ["\u2800\u3164"] + items[1:], "text.blank", item


def _array(f: Field, record: dict[str, Any], defined: list[str]) -> Iterator[Mutation]:
    p, shape = f.path, record["shape"]
    item = np.dtype(f.dtype).itemsize

    def edited(**changes: Any) -> dict[str, Any]:
        return {**record, **changes}

    yield "extra-key", edited(order="C"), "array.record", p
    yield "without-data", {k: v for k, v in record.items() if k != "data"}, "array.record", p
    wider = {"<f4": "<f8", "<i4": "<i8", "<i2": "<i4"}[f.dtype]
    for name, dtype in (("wider", wider), ("big-endian", ">" + f.dtype[1:])):
        yield f"dtype-{name}", edited(dtype=dtype), "array.dtype", f"{p}.dtype"
    yield "shape-rank", edited(shape=shape + [1]), "array.shape", f"{p}.shape"
    yield "shape-float", edited(shape=[float(shape[0])] + shape[1:]), "array.shape", f"{p}.shape"
    for axis, symbol in enumerate(f.shape):
        name = symbol.removeprefix("2^")
        if name in defined:  # the symbol has its value: any other disagrees
            wrong = shape[:axis] + [shape[axis] + 1] + shape[axis + 1:]
            yield f"shape-{name}-disagrees", edited(shape=wrong), "array.shape", f"{p}.shape"
        else:  # the array defines the symbol: outside its bounds (for 2^H, not a power of two first)
            _, _, high = DIMS[name]
            values = (0, 3, 2**(high + 1)) if symbol.startswith("2^") else (0, high + 1)
            for value in values:
                wrong = shape[:axis] + [value] + shape[axis + 1:]
                yield f"shape-{name}-{value}", edited(shape=wrong), "array.shape", f"{p}.shape"
    yield "data-short", edited(data=record["data"][:-item]), "array.data", f"{p}.data"
    yield "data-not-bin", edited(data="x"), "array.data", f"{p}.data"
    if f.dtype == "<f4":
        for bad in (math.nan, math.inf):
            values = np.frombuffer(record["data"], "<f4").copy()
            values[len(values) // 2] = bad
            yield f"data-{bad}", edited(data=values.tobytes()), "field.not_finite", p


def _field_mutations(f: Field, value: Any, index: int, defined: list[str]) -> Iterator[Mutation]:
    """What the row of ``f`` says a reader must refuse."""
    p = f.path
    wrong_type = "array.record" if f.kind == "ndarray" else "field.type"
    if f.kind in _OTHER:
        yield "wrong-type", _OTHER[f.kind], wrong_type, p
    if f.need == "optional":
        yield "nil", None, wrong_type, p
    if f.kind == "strings":
        items = list(value) if len(value) > 1 else ["x", "y"]
        yield "item-wrong-type", items[:1] + [7] + items[2:], "field.type", f"{p}[1]"
    if f.kind in ("int", "float"):
        yield from _numbers(f, value)
    if f.kind in ("str", "bin", "strings"):
        yield from _lengths(f)
    if f.kind == "str" and f.choices:
        yield "not-a-choice", "coreml", "field.choice", p
    if f.kind == "strings" and f.choices:
        yield "unknown-choice", [f.choices[0], "pixel_values"], "field.choice", p
        yield "repeated-choice", [f.choices[0], f.choices[0]], "field.choice", p
    if f.kind in ("str", "strings"):
        yield from _text(f, value, index)
    if f.open:  # informational: no binary data, no NaN or infinity, at any depth
        yield "holds-bin", {**value, "x": [{"y": b"\x00"}]}, "field.type", p
        yield "holds-nan", {**value, "x": {"y": float("nan")}}, "field.not_finite", p
    if f.kind == "map" and not f.open:
        if p == "releases":
            yield "unknown-key", {**value, "future": 1}, "field.release", "releases.future"
        else:
            yield "unknown-key", {**value, "future": 1}, "field.unknown", f"{p}.future"
    if f.kind == "ndarray":
        yield from _array(f, value, defined)


_PLACEHOLDER = {"str": "x", "int": 0, "float": 0.0, "strings": ["labels"], "map": {}, "bin": b"x"}


def _in_head(path: str) -> bool:
    return path == HEAD or path.startswith(HEAD + ".")


def _in_unit_count(path: str) -> bool:
    return path == UNIT_COUNT or path.startswith(UNIT_COUNT + ".")


def _section(path: str) -> str:
    """Which base a row's cases are made on: "head" (1.1), "unit_count" (1.3) or the plain base."""
    return "head" if _in_head(path) else "unit_count" if _in_unit_count(path) else ""


def _added(f: Field) -> tuple[int, int]:
    """The minor that added row ``f``: its own ``since``, else its nearest section's, else 1.0."""
    path = f.path
    while True:
        row = FIELDS_BY_PATH.get(path)
        if row is not None and row.since is not None:
            return row.since
        if "." not in path:
            return (1, 0)
        path = path.rsplit(".", 1)[0]


def field_cases(base: dict[str, Any]) -> Iterator[Case]:
    """The cases of every row of the table (see the module doc): the head's rows (1.1) on a
    base with a head (`head_base`), unit_count's (1.3) on a person-level head
    (`person_head_base`), the others on a base without either."""
    dims = _dims(base)
    section = "unit_count" if has(base, UNIT_COUNT) else "head" if has(base, HEAD) else ""
    with_head = has(base, HEAD)
    # Each row's samples are chosen by its index among the 1.0 rows (rows a later minor added come
    # after them), so that adding a row leaves every earlier case as it was.
    # From 1.3 on, a row under a section a minor added counts as that minor's too.
    old = [f for f in FIELDS if _added(f) < (1, 3)]
    rows = ([f for f in old if f.since is None] + [f for f in old if f.since is not None]
            + [f for f in FIELDS if _added(f) >= (1, 3)])
    for index, f in enumerate(rows):
        if f.path in CONTAINER_FIELDS or _section(f.path) != section:
            continue
        if f.need == "required":
            doc = copy.deepcopy(base)
            drop(doc, f.path)
            yield Case(f"{f.path}-missing", seal(doc), "field.missing", f.path)
        elif f.need.startswith("iff "):
            condition = f.need[4:]
            doc = copy.deepcopy(base)
            drop(doc, f.path)
            if CONDITION_HOLDS[condition](doc):  # not when the field is itself what makes its condition hold
                yield Case(f"{f.path}-absent-while-{condition.replace(' ', '-')}", seal(doc), "field.missing", f.path)
            doc = copy.deepcopy(base)
            try:
                falsify(doc, condition, keep=f.path)
            except LookupError:
                doc = {}
            if has(doc, f.path):  # not when the field is itself what makes its condition hold
                yield Case(f"{f.path}-present-without-{condition.replace(' ', '-')}", seal(doc), "field.not_allowed",
                           f.path)
        value = get(base, f.path) if has(base, f.path) else _PLACEHOLDER[f.kind]
        for name, bad, code, path in _field_mutations(f, value, index, dims.get(f.path, [])):
            doc = copy.deepcopy(base)
            put(doc, f.path, bad)
            yield Case(f"{f.path}-{name}", seal(doc), code, path)
    if with_head:
        return
    doc = copy.deepcopy(base)
    put(doc, "future", 1, before="encoder")
    yield Case("unknown-top-level-key", seal(doc), "field.unknown", "future")


# --------------------------------------------------------------------------- relations


_DROP = object()


def _edit(base: dict[str, Any], *changes: tuple[str, Any]) -> bytes:
    doc = copy.deepcopy(base)
    for path, value in changes:
        if value is _DROP:
            drop(doc, path)
        else:
            put(doc, path, value(get(doc, path)) if callable(value) else value)
    return seal(doc)


def _f4(values: np.ndarray) -> dict[str, Any]:
    return _record(values, "<f4")


def _scaled(factor: float) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda r: {**r, "data": (np.frombuffer(r["data"], "<f4") * np.float32(factor)).astype("<f4").tobytes()}


def _fullwidth(s: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in s)


def per_unit(k: int, doc: dict[str, Any], column: str = "'user_id'") -> tuple[tuple[str, Any], ...]:
    """The edits that make ``doc`` a release of K = ``k`` records per person (sensitivities,
    noise scales and the wording of runtime.bundle.wording)."""
    from runtime.bundle import wording

    edits: list[tuple[str, Any]] = [("privacy.max_records_per_unit", k),
                                    ("privacy.privacy_unit", wording.privacy_unit(k)),
                                    ("privacy.neighbour_relation", wording.neighbour_relation(k, column))]
    for name, r in doc["releases"].items():
        if name in ("head", "unit_count"):  # a unit's clipped gradient, a count of units: whatever K
            continue
        sens = k * r["sensitivity_l1"] // doc["privacy"]["max_records_per_unit"]
        edits += [(f"releases.{name}.sensitivity_l1", sens), (f"releases.{name}.noise_scale", sens / r["epsilon"])]
    return tuple(edits)


def relation_cases(base: dict[str, Any]) -> Iterator[Case]:
    """One case per relation of format/1/schema.json (several where a relation has several
    parts), then requires and the engine families."""
    labels = base["labels"]
    eps = base["privacy"]["epsilon"]
    votes = base["releases"]["votes"]
    sums = base["releases"]["class_sums"]
    dim = base["encoder"]["dim"]
    yield Case("nothing-to-classify-with", _edit(base, *((p, _DROP) for p in (
        "releases.class_counts", "releases.class_sums", "releases.votes", "subspace", "hashing", "prior",
        "scoring"))), "relation.nothing", "releases")
    yield Case("shares-do-not-add-up", _edit(base, ("privacy.epsilon", eps + 1.0)), "relation.shares", "privacy.epsilon")
    yield Case("batches-not-in-requires", _edit(base, ("version", [1, 1]), ("privacy.batches", 2)), "relation.requires",
               "requires")
    for name in (n for n in STATISTICS if n in base["releases"]):
        yield Case(f"{name}-noise-scale-contradicts", _edit(base, (f"releases.{name}.noise_scale", lambda s: s * 1.5)),
                   "relation.noise_scale", f"releases.{name}.noise_scale")
    yield Case("records-per-unit-contradicts-sensitivity", _edit(base, ("privacy.max_records_per_unit", 2)),
               "relation.sensitivity", "releases.class_counts.sensitivity_l1")
    sens = votes["sensitivity_l1"] + 1
    yield Case("votes-sensitivity-contradicts-tables", _edit(
        base, ("releases.votes.sensitivity_l1", sens), ("releases.votes.noise_scale", sens / votes["epsilon"])),
        "relation.sensitivity", "releases.votes.sensitivity_l1")
    yield Case("class-sums-sensitivity-contradicts-clip", _edit(base, ("releases.class_sums.clip_l1", lambda c: 2 * c)),
               "relation.sensitivity", "releases.class_sums.sensitivity_l1")
    # Half to even: grid 2 x clip 1.25 is 2.5, one step per record is 2.
    yield Case("class-sums-sensitivity-rounds-half-to-even", _edit(
        base, ("releases.class_sums.grid", 2), ("releases.class_sums.clip_l1", 1.25),
        ("releases.class_sums.sensitivity_l1", 3), ("releases.class_sums.noise_scale", 3 / sums["epsilon"])),
        "relation.sensitivity", "releases.class_sums.sensitivity_l1")
    grid = sums["grid"]
    yield Case("grid-times-clip-below-one", _edit(base, ("releases.class_sums.clip_l1", 0.4 / grid)),
               "relation.clip", "releases.class_sums.clip_l1")
    # The composition: the contract's words for these releases, nothing else (a head's words on a
    # pure bundle, one batch's words on three, another order, free text).
    yield Case("composition-of-a-head-on-a-pure-bundle", _edit(base, ("privacy.composition", wording.composition(
        base["releases"], head=True))), "relation.composition", "privacy.composition")
    words = _contract()["wording"]["composition"]
    reversed_names = [n for n in STATISTICS if n in base["releases"]][::-1]
    yield Case("composition-releases-in-another-order", _edit(base, ("privacy.composition", words["pure"].replace(
        "{releases}", words["separator"].join(reversed_names)))), "relation.composition", "privacy.composition")
    three_batches = copy.deepcopy(base)
    put(three_batches, "version", [1, 1])
    put(three_batches, "requires", ["privacy.batches"])
    put(three_batches, "privacy.batches", 3)
    yield Case("composition-of-one-batch-on-three", seal(three_batches), "relation.composition",
               "privacy.composition")
    yield Case("composition-free-text", _edit(base, ("privacy.composition", "pure epsilon-DP, delta = 0")),
               "relation.composition", "privacy.composition")
    # The wording: record words with K > 1, person words that overstate or misstate K.
    three = per_unit(3, base)
    yield Case("wording-one-record-but-k-3", _edit(base, *three, ("privacy.privacy_unit", "one record"),
                                                   ("privacy.neighbour_relation", "add or remove one record")),
               "relation.wording", "privacy.privacy_unit")
    yield Case("wording-all-of-their-records", _edit(base, ("privacy.privacy_unit", "one person (all of their records)")),
               "relation.wording", "privacy.privacy_unit")
    yield Case("wording-person-with-another-k", _edit(base, *three, ("privacy.privacy_unit", "one person, up to 30 records")),
               "relation.wording", "privacy.privacy_unit")
    yield Case("wording-relation-of-another-k", _edit(base, *three, (
        "privacy.neighbour_relation", "add or remove one person (all their records, at most 2; persons identified by "
                                      "the column 'user_id')")), "relation.wording", "privacy.neighbour_relation")
    yield Case("wording-relation-without-column", _edit(base, *three, (
        "privacy.neighbour_relation", "add or remove one person (all their records, at most 3; persons identified by "
                                      "the column )")), "relation.wording", "privacy.neighbour_relation")
    yield Case("wording-record-unit-person-relation", _edit(base, (
        "privacy.neighbour_relation", "add or remove one person (all of their records)")),
        "relation.wording", "privacy.neighbour_relation")
    yield Case("descriptions-count", _edit(base, ("label_descriptions", lambda d: d[:-1])),
               "relation.descriptions", "label_descriptions")
    for name, pair in (("fullwidth", [labels[0], _fullwidth(labels[0])]),
                       ("zero-width", [labels[0], labels[0][:2] + "\u200b" + labels[0][2:]]),
                       ("ligature", ["file", "\ufb01le"]), ("soft-hyphen", [labels[0], labels[0] + "\u00ad"]),
                       ("cyrillic", ["weather", "w\u0435ather"]), ("greek-omicron", ["smart_home", "smart_h\u03bfme"]),
                       ("capital-i-and-l", ["Illness", "lllness"]), ("combining-order", ["e\u0301\u0323", "e\u0323\u0301"])):
        yield Case(f"labels-look-alike-{name}", _edit(base, ("labels", pair + labels[2:])), "relation.labels",
                   "labels[1]")
    yield Case("encoder-dim-disagrees", _edit(base, ("encoder.dim", dim + 1)), "array.shape", "encoder.dim")
    rows = np.zeros((dim + 1, dim), "<f4")  # k = D + 1 rows
    yield Case("projection-more-rows-than-dim", _edit(
        base, ("releases.class_sums.values", {**sums["values"], "shape": [len(labels), dim + 1],
                                              "data": bytes(4 * len(labels) * (dim + 1))}),
        ("subspace.projection", _f4(rows))), "relation.subspace", "subspace.projection")
    yield Case("check-embedding-not-unit", _edit(base, ("encoder.check_embedding", _scaled(2.0))),
               "relation.check", "encoder.check_embedding")
    yield Case("check-embedding-zero", _edit(base, ("encoder.check_embedding", _scaled(0.0))),
               "relation.check", "encoder.check_embedding")
    weights_first = copy.deepcopy(base)
    encoder = weights_first["encoder"]
    weights_first["encoder"] = {"weights": encoder.pop("weights"), **encoder}
    yield Case("weights-not-last-in-encoder", seal(weights_first), "relation.weights", "encoder.weights")
    exporter_last = copy.deepcopy(base)
    exporter_last["exporter"] = exporter_last.pop("exporter")
    yield Case("encoder-not-the-last-map", seal(exporter_last), "relation.weights", "encoder.weights")
    yield Case("requires-an-unknown-field", _edit(base, ("requires", ["labels", "scoring.future_weight"])),
               "version.requires", "requires[1]")
    yield from tokenizer_cases(base)
    yield from model_cases(base)


def _tokenizer(base: dict[str, Any], name: str, change: Callable[[dict[str, Any]], None] | str, code: str,
               pointer: str = "") -> Case:
    """A case whose tokenizer.json is TINY_TOKENIZER changed by ``change`` (or is the text given)."""
    if isinstance(change, str):
        text = change
    else:
        doc = copy.deepcopy(TINY_TOKENIZER)
        change(doc)
        text = json.dumps(doc, ensure_ascii=False)
    return Case(f"tokenizer-{name}", _edit(base, ("encoder.tokenizer_json", text)), code, TOKENIZER + pointer)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """Set (or, with _DROP, remove) a value of the tokenizer document at a /-separated path."""
    def change(doc: dict[str, Any]) -> None:
        *parents, last = path.split("/")
        node: Any = doc
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        if value is _DROP:
            del node[last]
        elif isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return change


def tokenizer_cases(base: dict[str, Any]) -> Iterator[Case]:
    """Strict JSON, then the family's closed shape and relations (docs/bundle-format.md section 6)."""
    j, t = "tokenizer.json", "tokenizer.family"
    tiny = TINY_TOKENIZER_JSON
    yield _tokenizer(base, "not-json", "{not json", j)
    yield _tokenizer(base, "key-twice", tiny[:-1] + ',"decoder":null}', j)
    yield _tokenizer(base, "nan", tiny.replace('"max_input_chars_per_word":100', '"max_input_chars_per_word":NaN'), j)
    yield _tokenizer(base, "minus-zero-id", tiny.replace('"[PAD]":0', '"[PAD]":-0'), j)
    yield _tokenizer(base, "huge-integer", tiny.replace('"[PAD]":0', '"[PAD]":' + "9" * 30), j)
    yield _tokenizer(base, "lone-surrogate", tiny.replace('"the":11', '"th\\ud800e":11'), j)
    yield _tokenizer(base, "lone-low-surrogate", tiny.replace('"the":11', '"th\\udc00e":11'), j)
    yield _tokenizer(base, "nested-deeper-than-16", tiny[:-1] + ',"x":' + "[" * 16 + "]" * 16 + "}", j)
    yield _tokenizer(base, "control-character-in-a-string", tiny.replace('"wake":4', '"wa\tke":4'), j)
    yield _tokenizer(base, "trailing-comma", tiny[:-1] + ",}", j)
    yield _tokenizer(base, "byte-order-mark", "\ufeff" + tiny, j)
    yield _tokenizer(base, "two-documents", tiny + "{}", j)
    yield _tokenizer(base, "top-level-array", "[]", t)
    yield _tokenizer(base, "empty-object", "{}", t, "/version")
    yield _tokenizer(base, "version-2", _set("version", "2.0"), t, "/version")
    yield _tokenizer(base, "unknown-top-level-key", _set("extra", 1), t, "/extra")
    yield _tokenizer(base, "without-decoder-key", _set("decoder", _DROP), t, "/decoder")
    yield _tokenizer(base, "truncation-without-strategy", _set(
        "truncation", {"max_length": 128, "stride": 0}), t, "/truncation/strategy")
    yield _tokenizer(base, "truncation-strategy-free-string", _set(
        "truncation", {"max_length": 128, "stride": 0, "strategy": "Everything"}), t, "/truncation/strategy")
    yield _tokenizer(base, "truncation-direction-middle", _set(
        "truncation", {"direction": "Middle", "max_length": 128, "stride": 0, "strategy": "LongestFirst"}),
        t, "/truncation/direction")
    padding = {"strategy": "BatchLongest", "direction": "Right", "pad_to_multiple_of": None, "pad_id": 0,
               "pad_type_id": 0, "pad_token": "[PAD]"}
    yield _tokenizer(base, "padding-direction-up", _set("padding", {**padding, "direction": "Up"}), t,
                     "/padding/direction")
    yield _tokenizer(base, "padding-strategy-unknown", _set("padding", {**padding, "strategy": {"Exact": 3}}), t,
                     "/padding/strategy")
    yield _tokenizer(base, "padding-without-pad-token", _set(
        "padding", {k: v for k, v in padding.items() if k != "pad_token"}), t, "/padding/pad_token")
    yield _tokenizer(base, "added-token-single-word", _set("added_tokens/0/single_word", True), t,
                     "/added_tokens/0/single_word")
    yield _tokenizer(base, "added-token-lstrip-a-string", _set("added_tokens/0/lstrip", "yes"), t,
                     "/added_tokens/0/lstrip")
    yield _tokenizer(base, "added-token-normalized-with-capitals", _set("added_tokens/1/normalized", True), t,
                     "/added_tokens/1/content")

    def normalized_token(content: str) -> Callable[[dict[str, Any]], None]:
        def change(doc: dict[str, Any]) -> None:  # a vocabulary token matched in the normalized text
            doc["model"]["vocab"][content] = len(doc["model"]["vocab"])
            doc["added_tokens"].append({**doc["added_tokens"][0], "content": content, "id": doc["model"]["vocab"][content],
                                        "normalized": True})
        return change
    for name, content in (("a-space", "a b"), ("non-ascii", "é"), ("a-tab", "a\tb"), ("a-delete", "a\x7f")):
        yield _tokenizer(base, f"added-token-normalized-with-{name}", normalized_token(content), t,
                         "/added_tokens/4/content")
    yield _tokenizer(base, "added-token-not-special", _set("added_tokens/2/special", False), t,
                     "/added_tokens/2/special")
    yield _tokenizer(base, "added-token-id-a-string", _set("added_tokens/3/id", "3"), t, "/added_tokens/3/id")
    yield _tokenizer(base, "added-token-wrong-id", _set("added_tokens/3/id", 4), t, "/added_tokens/3")
    yield _tokenizer(base, "added-token-not-in-vocab", _set("added_tokens/3/content", "[MASK]"), t, "/added_tokens/3")
    yield _tokenizer(base, "normalizer-lowercase-a-string", _set("normalizer/lowercase", "yes"), t,
                     "/normalizer/lowercase")
    yield _tokenizer(base, "normalizer-nfc", _set("normalizer", {"type": "NFC"}), t, "/normalizer/clean_text")
    yield _tokenizer(base, "pre-tokenizer-split", _set("pre_tokenizer", {
        "type": "Split", "pattern": {"Regex": "(a+)+b"}, "behavior": "Isolated", "invert": False}), t,
        "/pre_tokenizer/pattern")
    yield _tokenizer(base, "without-pair-template", _set("post_processor/pair", _DROP), t, "/post_processor/pair")
    yield _tokenizer(base, "single-template-sequence-first", _set("post_processor/single", [_TEMPLATE[1], _TEMPLATE[0], _TEMPLATE[2]]), t,
                     "/post_processor/single")
    yield _tokenizer(base, "template-unknown-special-token", _set(
        "post_processor/single/0/SpecialToken/id", "[BOS]"), t, "/post_processor/single/0/SpecialToken/id")
    yield _tokenizer(base, "template-piece-unknown", _set("post_processor/pair/3", {"Sentence": {"id": "B"}}), t,
                     "/post_processor/pair/3")
    yield _tokenizer(base, "special-token-other-id", _set("post_processor/special_tokens/[CLS]/ids", [3]), t,
                     "/post_processor/special_tokens/[CLS]")
    yield _tokenizer(base, "post-processor-without-type", _set("post_processor/type", _DROP), t, "/post_processor/type")
    yield _tokenizer(base, "post-processor-bert-processing", _set("post_processor/type", "BertProcessing"), t,
                     "/post_processor/type")
    yield _tokenizer(base, "post-processor-an-array", _set("post_processor", [ROBERTA]), t, "/post_processor")
    yield _tokenizer(base, "roberta-with-a-template", _set("post_processor", {**ROBERTA, "single": _TEMPLATE}), t,
                     "/post_processor/single")
    yield _tokenizer(base, "roberta-without-trim-offsets", _set("post_processor", {
        k: v for k, v in ROBERTA.items() if k != "trim_offsets"}), t, "/post_processor/trim_offsets")
    yield _tokenizer(base, "roberta-cls-three-entries", _set("post_processor", {**ROBERTA, "cls": ["[CLS]", 2, 0]}), t,
                     "/post_processor/cls")
    yield _tokenizer(base, "roberta-cls-an-object", _set("post_processor", {**ROBERTA, "cls": {"[CLS]": 2}}), t,
                     "/post_processor/cls")
    yield _tokenizer(base, "roberta-cls-id-a-string", _set("post_processor", {**ROBERTA, "cls": ["[CLS]", "2"]}), t,
                     "/post_processor/cls/1")
    yield _tokenizer(base, "roberta-cls-token-empty", _set("post_processor", {**ROBERTA, "cls": ["", 2]}), t,
                     "/post_processor/cls/0")
    yield _tokenizer(base, "roberta-cls-other-id", _set("post_processor", {**ROBERTA, "cls": ["[CLS]", 3]}), t,
                     "/post_processor/cls")
    yield _tokenizer(base, "roberta-sep-not-in-vocab", _set("post_processor", {**ROBERTA, "sep": ["</s>", 3]}), t,
                     "/post_processor/sep")
    yield _tokenizer(base, "decoder-bpe", _set("decoder", {"type": "BPE", "prefix": "##", "cleanup": True}), t,
                     "/decoder/type")
    yield _tokenizer(base, "model-bpe", _set("model/type", "BPE"), t, "/model/type")
    yield _tokenizer(base, "model-without-unk-token", _set("model/unk_token", _DROP), t, "/model/unk_token")
    yield _tokenizer(base, "unk-token-not-in-vocab", _set("model/unk_token", "[UNKNOWN]"), t, "/model/unk_token")
    yield _tokenizer(base, "max-input-chars-1000", _set("model/max_input_chars_per_word", 1000), t,
                     "/model/max_input_chars_per_word")
    yield _tokenizer(base, "vocab-id-a-float", _set("model/vocab/music", 9.0), t, "/model/vocab/music")
    yield _tokenizer(base, "vocab-id-past-the-size", _set("model/vocab/music", 13), t, "/model/vocab/music")
    yield _tokenizer(base, "vocab-id-twice", _set("model/vocab/music", 4), t, "/model/vocab/music")
    yield _tokenizer(base, "vocab-token-empty", _set("model/vocab/", 13), t, "/model/vocab/")

    def slash_token(doc: dict[str, Any]) -> None:
        doc["model"]["vocab"]["a/b~c"] = 7  # a second token with id 7: its pointer escapes / and ~
    yield _tokenizer(base, "vocab-pointer-escapes", slash_token, t, "/model/vocab/a~1b~0c")


def model_cases(base: dict[str, Any]) -> Iterator[Case]:
    """The model family (runtime/bundle/model_family.py): one code, whatever the reason."""
    m = ("model.family", "encoder.model")
    weights = ("encoder.weights", bytes(64))

    def model(**kw: Any) -> tuple[str, bytes]:
        return "encoder.model", tiny_onnx(**kw)

    yield Case("onnx-not-protobuf", _edit(base, ("encoder.model", b"\x08")), *m)
    yield Case("onnx-control-flow", _edit(base, model(op="Loop")), *m)
    yield Case("onnx-custom-domain", _edit(base, ("encoder.model", tiny_onnx().replace(b"Cast", b"Tile"))), *m)
    yield Case("onnx-two-graphs", _edit(base, model(graphs=2)), *m)
    refused = {
        "location-elsewhere": external_tensor("w", 0, 8, location="/etc/passwd" + "." * 245),
        "offset-19-digits": external_tensor("w", 0, 8, digits=19),
        "entries-reordered": external_tensor("w", 0, 8, keys=("offset", "location", "length")),
        "entry-missing": external_tensor("w", 0, 8, keys=("location", "offset")),
        "not-marked-external": external_tensor("w", 0, 8, external=False),
        "with-raw-data": external_tensor("w", 0, 8, raw=True),
    }
    for name, tensor in refused.items():
        yield Case(f"onnx-external-data-{name}", _edit(base, model(initializers=(tensor,)), weights), *m)
    yield Case("onnx-external-data-past-the-weights", _edit(
        base, model(initializers=(external_tensor("w", 60, 8),)), weights), *m)
    yield Case("onnx-external-data-beyond-64-bits", _edit(
        base, model(initializers=(external_tensor("w", 10**20 - 1, 10**20 - 1),)), weights), *m)
    yield Case("onnx-external-data-in-an-attribute", _edit(
        base, model(op="Constant", attribute_tensor=external_tensor("w", 0, 8)), weights), *m)
    # Inputs left out (an empty name): only Clip's min and max (accept/default.dpedge leaves
    # Clip's max out, the accepted side of this edge); onnxruntime crashed on LayerNormalization's.
    yield Case("onnx-required-input-left-out", _edit(base, model(op="LayerNormalization", inputs=("input_ids", "w", ""))), *m)
    yield Case("onnx-clip-input-0-left-out", _edit(base, model(op="Clip", inputs=("", "", ""))), *m)
    yield Case("tflite-not-a-flatbuffer", _edit(base, ("encoder.format", "tflite"), ("encoder.weights", _DROP),
                                                ("encoder.model", bytes(16))), *m)
    # The encoder families (1.2): each of a family's own operators outside it, and a family's missing format.
    for family, ops in FAMILY_OPERATORS.items():
        for domain, op in ops:
            yield Case(f"onnx-{family}-operator-{op.lower()}-without-the-family", _edit(base, model(op=op)), *m)
    # Tensor indices (an operator's or the subgraph's): one of the subgraph's tensors, and -1 (an
    # input left out) only where the operator's kernel takes it as optional (FULLY_CONNECTED's
    # bias: accept/tflite.dpedge leaves it out, the accepted side of this edge).
    tflite = (("encoder.format", "tflite"), ("encoder.weights", _DROP))
    for name, kw in {"required-input-left-out": {"inputs": (0, -1)},
                     "fully-connected-input-0-left-out": {"op": "FULLY_CONNECTED", "inputs": (-1, 1, -1)},
                     "input-past-the-tensors": {"inputs": (0, 3)},
                     "input-below-minus-one": {"inputs": (0, -2)},
                     "output-left-out": {"outputs": (-1,)},
                     "subgraph-input-past-the-tensors": {"graph_inputs": (3,)},
                     "subgraph-output-left-out": {"graph_outputs": (-1,)}}.items():
        yield Case(f"tflite-{name}", _edit(base, *tflite, ("encoder.model", tiny_tflite(**kw))), *m)
    # The Tensor and Operator fields the family's encoders never write (variable and sparse
    # tensors, custom options): each present is refused, whatever its value.
    for kind, fields in _contract()["tflite"]["absent_fields"].items():
        for field in fields:
            kw = {"tensor_field" if kind == "Tensor" else "operator_field": field}
            yield Case(f"tflite-{kind.lower()}-{field.replace('_', '-')}", _edit(
                base, *tflite, ("encoder.model", tiny_tflite(**kw))), *m)
    yield Case("mpnet-family-in-tflite", _edit(base, ("encoder.format", "tflite"), ("encoder.weights", _DROP),
                                               ("encoder.family", "mpnet"), ("encoder.model", bytes(16))), *m)
    yield Case("mpnet-family-with-a-loop", _edit(base, ("encoder.family", "mpnet"), model(op="Loop")), *m)


# --------------------------------------------------------------------------- the container


def _nested(depth: int) -> Any:
    """A value that is ``depth`` containers deep."""
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


def container_cases(base: dict[str, Any]) -> Iterator[Case]:
    """The container's rules (docs/bundle-format.md sections 1 and 2): every path is ''."""
    data = seal(base)
    middle = bytearray(data)
    middle[len(data) // 2] ^= 1
    yield Case("digest-mismatch", bytes(middle), "container.digest", "")
    yield Case("digest-wrong", data[:-1] + bytes([data[-1] ^ 1]), "container.digest", "")
    yield Case("truncated", data[:-7], "container.truncated", "")
    yield Case("truncated-to-half", data[:len(data) // 2], "container.truncated", "")
    yield Case("bytes-after-the-digest", data + b"\x00", "container.truncated", "")
    yield Case("empty-file", b"", "container.not_bundle", "")
    yield Case("not-msgpack", b"GIF89a" + bytes(64), "container.not_bundle", "")
    yield Case("first-entry-not-format", seal(Pairs([("labels", ["a", "b"]), *base.items()]))[:-1],
               "container.not_bundle", "")
    # an array of 1, 2 and the digest entry's two values
    yield Case("top-level-array", seal_prefix(b"\x94" + pack(1) + pack(2)), "container.not_bundle", "")
    items = list(base.items())
    yield Case("version-before-format", seal(Pairs([items[1], items[0], *items[2:]])), "container.layout", "")
    encoder = base["encoder"]
    prefix = msgpack.Packer().pack_map_header(len(base))
    prefix += b"".join(pack(k) + pack(v) for k, v in items if k != "encoder") + pack("encoder")
    prefix += msgpack.Packer().pack_map_header(len(encoder) + 1) + b"".join(pack(k) + pack(v) for k, v in encoder.items())
    yield Case("digest-inside-the-encoder", seal_prefix(prefix), "container.layout", "")
    yield Case("format-other", _edit(base, ("format", "dpedge2")), "version.format", "format")
    for name, version in (("one-number", [1]), ("float-minor", [1, 0.0]), ("negative-minor", [1, -1]),
                          ("string", "1.0"), ("three-numbers", [1, 0, 0])):
        yield Case(f"version-{name}", _edit(base, ("version", version)), "version.malformed", "version")
    yield Case("major-2", _edit(base, ("version", [2, 0])), "version.major", "version")
    yield Case("major-0", _edit(base, ("version", [0, 9])), "version.major", "version")
    for version in ([4, 0], [1, 2]):
        outer = {"format": PRE_RELEASE_NAME, "version": version,
                 "checksum": {"algorithm": "sha256", "digest": bytes(32)}, "payload": pack({"labels": ["a", "b"]})}
        yield Case(f"pre-release-{version[0]}.{version[1]}", pack(outer), "container.pre_release", "")
    yield Case("repeated-top-level-key", seal(Pairs([*items[:3], ("labels", base["labels"]), *items[3:]])),
               "container.repeated_key", "")
    privacy = Pairs([*base["privacy"].items(), ("epsilon", base["privacy"]["epsilon"])])
    yield Case("repeated-nested-key", _edit(base, ("privacy", privacy)), "container.repeated_key", "")
    yield Case("repeated-key-in-an-open-map", _edit(base, ("exporter", Pairs([("name", "a"), ("name", "b")]))),
               "container.repeated_key", "")
    yield Case("key-not-a-string", _edit(base, ("exporter", Pairs([(b"name", "a")]))), "container.key", "")
    yield Case("key-an-integer", _edit(base, ("exporter", Pairs([(1, "a")]))), "container.key", "")
    yield Case("key-nil", _edit(base, ("exporter", Pairs([(None, "a")]))), "container.key", "")
    ext = {"fixext": Raw(b"\xd4\x05\x00"), "timestamp": Raw(b"\xd6\xff" + bytes(4)), "ext8": Raw(b"\xc7\x03\x05abc"),
           "empty": Raw(b"\xc7\x00\x05"), "bad-timestamp": Raw(b"\xd4\xff\x00")}
    for name, value in ext.items():
        yield Case(f"extension-{name}", _edit(base, ("exporter", {"x": value})), "container.extension", "")
    yield Case("float32-where-an-integer-is-meant", _edit(base, ("encoder.max_length", _float32(256.0))),
               "field.type", "encoder.max_length")
    yield Case("nested-too-deep", _edit(base, ("exporter", {"x": _nested(MAX_DEPTH - 1)})), "container.depth", "")
    budget = (len(data) + 2 * 20_000) // 64 + 4096
    yield Case("more-values-than-bytes-allow", _edit(base, ("exporter", {"x": [0] * budget})), "container.count", "")
    yield Case("array-too-long", _edit(base, ("exporter", {"x": [0] * (MAX_CONTAINER + 1)})), "container.count", "")
    yield Case("string-not-utf8", _edit(base, ("exporter", {"x": Raw(b"\xa2\xed\xa0")})), "container.msgpack", "")
    yield Case("string-overlong-utf8", _edit(base, ("exporter", {"x": Raw(b"\xa2\xc0\xaf")})), "container.msgpack", "")
    yield Case("reserved-byte", _edit(base, ("exporter", {"x": Raw(b"\xc1")})), "container.msgpack", "")
    yield Case("value-cut-short", seal_prefix(seal(base)[:-41][:-3]), "container.msgpack", "")


# --------------------------------------------------------------------------- all of it


HEAD = "releases.head"
UNIT_COUNT = "releases.unit_count"
#: The head of `head_base`: its epsilon, delta, sampling, steps, grid and clip (the noise
#: multiplier is the least the contract's bound allows at these).
HEAD_FACTS = {"epsilon": 4.0, "delta": 1e-5, "sample_rate": 0.25, "steps": 400, "grid": 2**20, "clip_l2": 0.5}


def head_multiplier(epsilon: float, sample_rate: float, steps: int, delta: float) -> float:
    """The least noise multiplier (to 1e-6, rounded up) whose contract bound is at most ``epsilon``."""
    lo, hi = 0.01, 1000.0
    while hi - lo > 1e-7:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if head_epsilon(mid, sample_rate, steps, delta) <= epsilon else (mid, hi)
    return math.ceil(hi * 1e6) / 1e6


def head_release(classes: int, dim: int, **facts: Any) -> dict[str, Any]:
    """A head release whose facts hold (`HEAD_FACTS`, overridden by ``facts``) and whose arrays
    are a fixed public pattern: logits of either sign, every class the argmax somewhere."""
    f = {**HEAD_FACTS, **facts}
    z = head_multiplier(f["epsilon"], f["sample_rate"], f["steps"], f["delta"])
    sens = round(f["grid"] * f["clip_l2"])
    i = np.arange(classes * dim, dtype=np.float64).reshape(classes, dim)
    return {"epsilon": f["epsilon"], "delta": f["delta"], "sensitivity_l2": sens, "noise_scale": z * sens,
            "noise_multiplier": z, "sample_rate": f["sample_rate"], "steps": f["steps"], "grid": f["grid"],
            "clip_l2": f["clip_l2"],
            "accountant": "dp-accounting 0.6.0 RdpAccountant, Poisson-sampled Gaussian, orders 2..256",
            "mechanism": "DP-SGD: discrete Gaussian noise on each step's sum of clipped per-record gradients",
            "origin": _f4(0.01 * np.sin(np.arange(dim, dtype=np.float64))),
            "weights": _f4(3.0 * np.sin(1.7 * i + 0.3)), "bias": _f4(0.5 * np.cos(np.arange(classes, dtype=np.float64)))}


#: (noise multiplier, sample rate, steps, delta) of the heads whose epsilon sits at the
#: accountant's edge: subsampled and full-batch, the bound's two regimes.
EDGES = ((1.1, 0.1, 1000, 1e-5), (42.4, 1.0, 100, 1e-5), (0.93, 0.0078125, 3000, 1e-6))


def edge_epsilons(noise_multiplier: float, sample_rate: float, steps: int, delta: float) -> tuple[float, float]:
    """The least epsilon a head with these numbers may claim (the contract's bound over 1 + rtol,
    found double by double: no rounding of the refusal rule can cross it) and the double below
    it, which is refused. Every reader computes the same bound bit for bit (section 7.1), so
    every reader accepts the first and refuses the second."""
    bound = head_epsilon(noise_multiplier, sample_rate, steps, delta)
    eps = bound / (1.0 + ACCOUNTANT_RTOL)
    while bound > eps * (1.0 + ACCOUNTANT_RTOL):  # refused: one double up
        eps = math.nextafter(eps, math.inf)
    while not bound > math.nextafter(eps, 0.0) * (1.0 + ACCOUNTANT_RTOL):  # the one below still accepted
        eps = math.nextafter(eps, 0.0)
    return eps, math.nextafter(eps, 0.0)


def at_edge(doc: dict[str, Any], edge: tuple[float, float, int, float], accepted: bool) -> None:
    """``doc``'s head given ``edge``'s numbers and the edge epsilon (`edge_epsilons`) on the
    accepted or the refused side; the noise scale and privacy.epsilon and delta follow."""
    z, q, steps, delta = edge
    head = doc["releases"]["head"]
    eps = edge_epsilons(*edge)[0 if accepted else 1]
    head.update(noise_multiplier=z, noise_scale=z * head["sensitivity_l2"], sample_rate=q, steps=steps, delta=delta,
                epsilon=eps)
    doc["privacy"]["epsilon"] = sum(r["epsilon"] for r in doc["releases"].values())
    doc["privacy"]["delta"] = delta


def tie(doc: dict[str, Any], rng: np.random.Generator, pull: bool = True) -> None:
    """Classes 0 and 1 of ``doc`` (a blend) tied in real arithmetic for a query of equal
    coordinates: P reverses the coordinates (k = D), origin 0, class 1's sum and projected
    description class 0's rotated by one place, the others small (a pattern from ``rng``,
    public). Every dot product and norm of class 1 adds the same terms as class 0's in another
    order, so rounding alone picks the label: only section 7's order gives the corpus's."""
    dim, classes = doc["subspace"]["origin"]["shape"][0], len(doc["labels"])
    doc["subspace"]["projection"] = _f4(np.eye(dim)[::-1])  # a product folded ahead sums the other way
    doc["subspace"]["origin"] = _f4(np.zeros(dim))
    s0 = rng.integers(-600, 600, dim)
    e0 = np.float32(rng.uniform(-1, 1, dim))
    sums = np.concatenate([[s0, np.roll(s0, 1)], rng.integers(-60, 60, (classes - 2, dim))])
    prior = np.concatenate([[e0, np.roll(e0[::-1], 1)[::-1]], np.float32(rng.uniform(-0.1, 0.1, (classes - 2, dim)))])
    doc["releases"]["class_sums"]["values"] = _record(sums, "<i4")
    if "prior" in doc:
        doc["prior"] = _f4(prior)
    if not pull:
        doc["scoring"]["description_pull"] = 0.0


def composed(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with its composition (when it has one) the contract's words for its releases, head
    and batches (relation "composition"), after an edit that changed them."""
    if "composition" in doc.get("privacy", {}):
        releases = doc.get("releases", {})
        doc["privacy"]["composition"] = wording.composition(releases, "head" in releases,
                                                            doc["privacy"].get("batches", 1))
    return doc


def with_head(doc: dict[str, Any], head: dict[str, Any]) -> None:
    """Give ``doc`` ``head`` (1.1): version, requires, and the privacy facts' epsilon and delta."""
    put(doc, "version", [1, 1])
    put(doc, "requires", [*doc.get("requires", []), HEAD])
    put(doc, HEAD, head)
    doc["privacy"]["epsilon"] = sum(r["epsilon"] for r in doc["releases"].values())
    doc["privacy"]["delta"] = head["delta"]
    composed(doc)
    if "post_processing" in doc["privacy"] and "votes" not in doc["releases"]:
        doc["privacy"]["post_processing"] = "the head's weights and bias are the noisy gradient sums' updates"


def head_base(base: dict[str, Any]) -> dict[str, Any]:
    """``base`` (`small_base`) as a head bundle (1.1): class_counts and a head, nothing else to score with."""
    doc = copy.deepcopy(base)
    drop(doc, "releases.class_sums", "releases.votes", "subspace", "hashing", "prior", "scoring")
    with_head(doc, head_release(len(doc["labels"]), doc["encoder"]["dim"]))
    return doc


#: The unit_count release of `person_head_base` (1.3): its share of epsilon and noisy value.
UNIT_COUNT_FACTS = {"epsilon": 0.02, "value": 57}


def unit_count_release(**facts: Any) -> dict[str, Any]:
    """A unit_count release whose facts hold (`UNIT_COUNT_FACTS`, overridden by ``facts``)."""
    f = {**UNIT_COUNT_FACTS, **facts}
    return {"epsilon": f["epsilon"], "sensitivity_l1": 1, "noise_scale": 1 / f["epsilon"],
            "mechanism": "discrete Laplace noise on the number of persons with at least one record",
            "value": f["value"]}


def as_person_head(doc: dict[str, Any], k: int = 3, **facts: Any) -> None:
    """``doc`` (a head bundle) as a person-level head (1.3): K = ``k`` records per person, its
    unit_count release after class_counts, and the privacy facts and words that follow."""
    for path, value in per_unit(k, doc):
        put(doc, path, value)
    releases = doc["releases"]
    head = releases.pop("head")
    releases["unit_count"] = unit_count_release(**facts)
    releases["head"] = head
    put(doc, "version", [1, 3])
    doc["privacy"]["epsilon"] = sum(r["epsilon"] for r in releases.values())
    composed(doc)


def person_head_base(base: dict[str, Any]) -> dict[str, Any]:
    """``base`` as a person-level head bundle (1.3): class_counts, unit_count and a head, K = 3."""
    doc = head_base(base)
    as_person_head(doc)
    return doc


def person_head_cases(base: dict[str, Any]) -> Iterator[Case]:
    """unit_count's rows and relations (1.3), on `person_head_base`."""
    pb = person_head_base(base)
    yield from field_cases(pb)
    uc = pb["releases"]["unit_count"]
    yield Case("unit-count-without-a-head", _edit(base, (UNIT_COUNT, copy.deepcopy(uc)),
                                                  ("privacy.epsilon", lambda e: e + uc["epsilon"])),
               "relation.unit_count", UNIT_COUNT)
    hb = head_base(base)
    record_level = copy.deepcopy(pb)
    for path, value in per_unit(1, record_level):
        put(record_level, path, value)
    yield Case("unit-count-with-a-record-level-head", seal(composed(record_level)), "relation.unit_count",
               UNIT_COUNT)
    yield Case("unit-count-sensitivity-is-k", _edit(pb, (f"{UNIT_COUNT}.sensitivity_l1", 3),
                                                    (f"{UNIT_COUNT}.noise_scale", 3 / uc["epsilon"])),
               "relation.sensitivity", f"{UNIT_COUNT}.sensitivity_l1")
    yield Case("unit-count-epsilon-not-in-the-shares", _edit(pb, ("privacy.epsilon", lambda e: e - uc["epsilon"])),
               "relation.shares", "privacy.epsilon")
    yield Case("person-head-class-counts-for-one-record", _edit(
        pb, ("releases.class_counts.sensitivity_l1", 1),
        ("releases.class_counts.noise_scale", 1 / hb["releases"]["class_counts"]["epsilon"])),
        "relation.sensitivity", "releases.class_counts.sensitivity_l1")
    both = copy.deepcopy(base)
    with_head(both, copy.deepcopy(hb["releases"]["head"]))
    as_person_head(both)
    yield Case("person-head-with-class-sums", seal(both), "relation.head", HEAD)
    yield Case("person-head-words-for-one-record", _edit(
        pb, ("privacy.privacy_unit", wording.privacy_unit(None))), "relation.wording", "privacy.privacy_unit")
    words = _contract()["wording"]["composition"]["head"]
    yield Case("person-head-composition-without-unit-count", _edit(pb, ("privacy.composition", words.replace(
        "{releases}", "class_counts"))), "relation.composition", "privacy.composition")


def head_cases(base: dict[str, Any]) -> Iterator[Case]:
    """The head's rows and relations (1.1), on `head_base`, and a pure bundle that states a delta."""
    hb = head_base(base)
    yield from field_cases(hb)
    head = hb["releases"]["head"]
    both = copy.deepcopy(base)
    with_head(both, copy.deepcopy(head))
    yield Case("head-with-class-sums", seal(both), "relation.head", HEAD)
    yield Case("head-for-three-records-per-person", _edit(hb, *per_unit(3, hb)), "relation.unit_count", UNIT_COUNT)
    yield Case("head-shares-do-not-add-up", _edit(hb, ("privacy.epsilon", lambda e: e + 1.0)), "relation.shares",
               "privacy.epsilon")
    yield Case("head-delta-contradicts", _edit(hb, ("privacy.delta", 2e-5)), "relation.delta", "privacy.delta")
    yield Case("head-delta-zero", _edit(hb, ("privacy.delta", 0.0)), "relation.delta", "privacy.delta")
    yield Case("pure-bundle-states-a-delta", _edit(base, ("privacy.delta", 1e-5)), "relation.delta", "privacy.delta")
    yield Case("head-noise-scale-contradicts", _edit(hb, (f"{HEAD}.noise_scale", lambda v: v * 1.5)),
               "relation.noise_scale", f"{HEAD}.noise_scale")
    z = head["noise_multiplier"]
    yield Case("head-grid-times-clip-below-one", _edit(hb, (f"{HEAD}.clip_l2", 0.4 / head["grid"])),
               "relation.clip", f"{HEAD}.clip_l2")
    yield Case("head-sensitivity-contradicts-clip", _edit(hb, (f"{HEAD}.clip_l2", 1.0)), "relation.sensitivity",
               f"{HEAD}.sensitivity_l2")
    # Half to even: grid 2 x clip 1.25 is 2.5, one step per record is 2.
    yield Case("head-sensitivity-rounds-half-to-even", _edit(
        hb, (f"{HEAD}.grid", 2), (f"{HEAD}.clip_l2", 1.25), (f"{HEAD}.sensitivity_l2", 3),
        (f"{HEAD}.noise_scale", 3 * z)), "relation.sensitivity", f"{HEAD}.sensitivity_l2")
    claimed = head["epsilon"] / 2
    yield Case("head-claims-less-epsilon-than-its-noise", _edit(
        hb, (f"{HEAD}.epsilon", claimed), ("privacy.epsilon", lambda e: e - claimed)), "relation.accountant",
        f"{HEAD}.epsilon")
    yield Case("head-more-steps-than-its-epsilon", _edit(hb, (f"{HEAD}.steps", 4000)), "relation.accountant",
               f"{HEAD}.epsilon")
    yield Case("head-larger-sample-rate-than-its-epsilon", _edit(hb, (f"{HEAD}.sample_rate", 1.0)),
               "relation.accountant", f"{HEAD}.epsilon")
    yield Case("head-noise-multiplier-halved", _edit(
        hb, (f"{HEAD}.noise_multiplier", z / 2), (f"{HEAD}.noise_scale", z / 2 * head["sensitivity_l2"])),
        "relation.accountant", f"{HEAD}.epsilon")
    yield Case("head-larger-delta-does-not-pay", _edit(
        hb, (f"{HEAD}.delta", 1e-3), ("privacy.delta", 1e-3), (f"{HEAD}.steps", 40000)), "relation.accountant",
        f"{HEAD}.epsilon")
    yield Case("head-not-in-requires", _edit(hb, ("requires", _DROP)), "relation.requires", "requires")
    pure_words = wording.composition(hb["releases"], head=False)
    yield Case("head-composition-says-pure", _edit(hb, ("privacy.composition", pure_words)), "relation.composition",
               "privacy.composition")
    yield Case("head-composition-says-delta-zero", _edit(hb, ("privacy.composition", "pure, delta = 0")),
               "relation.composition", "privacy.composition")
    for i, edge in enumerate(EDGES):  # one double below the least epsilon these numbers allow
        doc = copy.deepcopy(hb)
        at_edge(doc, edge, accepted=False)
        yield Case(f"head-epsilon-one-double-below-the-bound-{i}", seal(doc), "relation.accountant", f"{HEAD}.epsilon")


def malformed(base: dict[str, Any]) -> list[Case]:
    """Every malformed case made from ``base`` (`small_base` of a bundle with every field)."""
    missing = [p for p in ("releases.class_counts", "releases.class_sums", "releases.votes", "hashing.offsets",
                           "prior", "scoring", "label_descriptions", "encoder.weights") if not has(base, p)]
    if missing:
        raise ValueError(f"the base bundle lacks {missing}: build it with --votes-share")
    cases = [*field_cases(base), *relation_cases(base), *head_cases(base), *person_head_cases(base),
             *container_cases(base)]
    names = [c.name for c in cases]
    if len(set(names)) != len(names):
        raise AssertionError(f"case names repeat: {sorted({n for n in names if names.count(n) > 1})}")
    return cases


def real_encoder_cases(data: bytes) -> list[Case]:
    """A real encoder's external data, edited in place: a location that is not the placeholder,
    and encoder.weights one byte short of the last initializer's range."""
    doc = document(data)
    model = bytearray(doc["encoder"]["model"])
    at = model.find(WEIGHTS_LOCATION.encode())
    model[at] = ord("D")
    moved = copy.deepcopy(doc)
    moved["encoder"]["model"] = bytes(model)
    short = doc
    short["encoder"]["weights"] = short["encoder"]["weights"][:-1]
    return [Case("real-onnx-location-edited", seal(moved), "model.family", "encoder.model"),
            Case("real-onnx-weights-one-byte-short", seal(short), "model.family", "encoder.model")]


def valid(base: dict[str, Any]) -> list[tuple[str, bytes]]:
    """Bundles in other shapes the format allows, which every reader must read."""
    privacy = base["privacy"]
    newer = copy.deepcopy(base)
    put(newer, "version", [1, 7])
    put(newer, "future", {"x": [1, 2.5, None]}, before="encoder")
    put(newer, "privacy.future_fact", "y")
    put(newer, "encoder.future_input", [1], before="weights")
    sums = base["releases"]["class_sums"]

    def tokenizer(change: Callable[[dict[str, Any]], None]) -> tuple[str, str]:
        doc = copy.deepcopy(TINY_TOKENIZER)
        change(doc)
        return "encoder.tokenizer_json", json.dumps(doc, ensure_ascii=False)

    return [
        ("newer-minor-with-unknown-fields", seal(newer)),
        ("requires-known-fields", _edit(base, ("requires", ["labels", "releases.votes", "hashing.offsets"]))),
        ("hashing-without-offsets", _edit(base, ("hashing.offsets", _DROP))),
        ("without-optional-fields", _edit(base, *((p, _DROP) for p in (
            "label_descriptions", "prior", "exporter", "encoder.facts", "hashing.seed", "hashing.offsets",
            "privacy.noise_library", "privacy.noise_library_version", "privacy.composition",
            "privacy.post_processing")))),
        ("three-records-per-person", _edit(base, *per_unit(3, base))),
        ("one-record-per-person", _edit(base, *per_unit(1, base, "'patient'"))),
        ("grid-times-clip-rounds-half-to-even", _edit(
            base, ("releases.class_sums.grid", 2), ("releases.class_sums.clip_l1", 1.25),
            ("releases.class_sums.sensitivity_l1", 2), ("releases.class_sums.noise_scale", 2 / sums["epsilon"]))),
        ("noise-scale-within-tolerance", _edit(base, ("releases.votes.noise_scale", lambda s: s * (1 + 5e-10)))),
        ("nested-at-the-limit", _edit(base, ("exporter", {"x": _nested(MAX_DEPTH - 2)}))),
        ("float32-numbers", _edit(base, ("privacy.epsilon", _float32(privacy["epsilon"])),
                                  ("scoring.prior_temperature", _float32(0.5)))),
        ("seed-largest-uint64", _edit(base, ("hashing.seed", 2**64 - 1))),
        ("negative-zeros", _edit(base, ("privacy.delta", -0.0), ("scoring.description_pull", -0.0))),
        ("scoring-at-its-bounds", _edit(base, ("scoring.centroid_temperature", 1e-3), ("scoring.prior_temperature", 1e3),
                                        ("scoring.description_pull", 1e3), ("scoring.prior_records_per_class", 1e6))),
        ("labels-with-invisible-joiners", _edit(base, ("labels", lambda ls: ["alarm\u200ctimer", "Ωmega\u200d"] + ls[2:]))),
        ("labels-in-other-scripts", _edit(base, ("labels", lambda ls: ["天気", "погода"] + ls[2:]))),
        ("external-data-in-bundle-form", _edit(base, ("encoder.model", tiny_onnx(initializers=(
            external_tensor("a", 0, 8), external_tensor("b", 8, 56)))), ("encoder.weights", bytes(64)))),
        ("strings-with-escapable-but-printable-text", _edit(base, ("privacy.post_processing", "tab-free, emoji 👍🏽, "
                                                                   "RTL مرحبا, CJK 𠮷"))),
        ("tokenizer-settings-null", _edit(base, tokenizer(lambda d: d.update(truncation=None, padding=None)))),
        ("tokenizer-settings-full", _edit(base, tokenizer(lambda d: d.update(
            truncation={"direction": "Left", "max_length": 7, "strategy": "OnlyFirst", "stride": 2},
            padding={"strategy": {"Fixed": 9}, "direction": "Left", "pad_to_multiple_of": 8, "pad_id": 0,
                     "pad_type_id": 0, "pad_token": "[PAD]"},
            decoder={"type": "WordPiece", "prefix": "##", "cleanup": False})))),
        ("tokenizer-cased", _edit(base, tokenizer(lambda d: d["normalizer"].update(
            lowercase=False, strip_accents=False, clean_text=False, handle_chinese_chars=False)))),
        ("tokenizer-roberta-processing", _edit(base, tokenizer(lambda d: d.update(post_processor=ROBERTA)))),
        ("tokenizer-added-tokens-normalized-and-stripped", _edit(base, tokenizer(lambda d: d["added_tokens"].extend([
            {**d["added_tokens"][0], "content": "wake", "id": 4, "normalized": True, "lstrip": True},
            {**d["added_tokens"][0], "content": "!", "id": 10, "rstrip": True},
            {**d["added_tokens"][0], "content": "[UNK]", "id": 1, "lstrip": True, "rstrip": True}])))),
        ("family-mpnet", _edit(base, ("encoder.family", "mpnet"), ("version", [1, 2]))),
        ("family-bert-named", _edit(base, ("encoder.family", "bert"), ("version", [1, 2]))),
        *((f"family-{family}-operator-{op.lower()}", _edit(base, ("encoder.family", family), ("version", [1, 2]),
                                                           ("encoder.model", tiny_onnx(op=op))))
          for family, ops in FAMILY_OPERATORS.items() for _, op in ops),
    ]


def _float32(x: float) -> Raw:
    """A msgpack float32 (a float, however few bits it has)."""
    return Raw(b"\xca" + struct.pack(">f", x))


# A kind added to the table needs its mutations here before any case is generated.
assert {f.kind for f in FIELDS} <= set(_OTHER) | {"version"}, {f.kind for f in FIELDS} - set(_OTHER)
assert set(CONDITION_HOLDS) == set(CONDITIONS)
