"""Bundles a reader must refuse, and some it must accept, generated from the format's table.

The malformed cases are derived from runtime.bundle.schema (FIELDS, DIMS, CONDITIONS) rather
than written one by one, so a field added to the table gets its cases without anyone listing
them. For each field, its row implies:

- missing when required; absent while its iff-condition holds, present while it does not;
- the wrong msgpack type (and nil for an optional field); an integer where the row says float
  and a float where it says integer; NaN and infinities for a float;
- a number, a length or a count just outside its bounds; a value outside its choices;
- for an array record: another dtype, a shape of the wrong rank, an axis that disagrees with
  its symbol or a symbol out of its bounds (DIMS), data one item short or not bin, a value
  that is not finite, a key too many;
- for text: an unprintable code point, an item over its length, a label that shows nothing;
- for a closed map: a key it does not have.

Then the container's rules (digest, truncation, repeated keys, extension types, depth, the
value budget, the pre-release and major-2 files, the map's first and last keys) and the
relations (schema.RELATIONS). Each case is a sealed bundle and the phrases its one-line error
must contain; the Python reader is held to them by tests/test_schema_cases.py and the Java
core by the golden data android_demo/golden.py writes, so both refuse the same files with the
same words. A fuzzer can start from the same cases.

The cases are made from a real bundle with every field (class statistics, vote tables with
offsets, the prior: ``--votes-share 0.1``) whose encoder is replaced by the smallest encoder in
the family (`small_base`: a one-node ONNX graph and a 13-token WordPiece vocabulary), so that
about 490 cases take about 150 MB instead of 11 GB; the statistics, their shapes and the privacy
facts stay the real ones. The two cases about the real encoder's external data
(`real_encoder_cases`) are made from the whole real bundle.

Example:
    >>> base = small_base(Path("assistant-tables.dpedge").read_bytes())    # doctest: +SKIP
    >>> [c.name for c in malformed(base)][:3]                             # doctest: +SKIP
    ['requires-wrong-type', 'requires-nil', 'requires-item-wrong-type']
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

from runtime.bundle.reader import has_path
from runtime.bundle.schema import (CONDITIONS, DIGEST_TAIL, DIMS, FIELDS, MAX_CONTAINER, MAX_DEPTH,
                                   MAX_DESCRIPTION_CHARS, MAX_LABEL_CHARS, MAX_TEXT_CHARS, NUMBER_DIGITS,
                                   PRE_RELEASE_NAME, STATISTICS, WEIGHTS_LOCATION, Field)

#: Fields whose cases are the container's (the first two entries and the digest).
CONTAINER_FIELDS = ("format", "version", "sha256")
#: A string longer than this is not written to make a case (encoder.tokenizer_json's bound
#: would cost 16 MB per case); the bound is still checked, on shorter values.
LONGEST_CASE_STRING = 100_000
#: Unprintable code points the text cases cycle through, one per field, so that the cases
#: together touch every kind of schema.UNPRINTABLE range (C0, bidi, tag, C1, noncharacter,
#: line separator, private use).
UNPRINTABLE_SAMPLES = ("\x1b", "\u202e", "\U000e0041", "\x85", "\ufffe", "\u2028", "\ue000", "\u061c")


@dataclass(frozen=True)
class Case:
    """One bundle and the phrases its reader's error must each contain."""

    name: str
    data: bytes
    phrases: tuple[str, ...]


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
              graphs: int = 1) -> bytes:
    """The smallest ONNX model in the encoder family: IR 8, opset 18, one graph of one node
    (input_ids to sentence_embedding), optionally initializers and a tensor attribute on the
    node (``graphs``: how often the graph field is repeated, which the family refuses)."""
    node = _pb(1, "input_ids") + _pb(2, "sentence_embedding") + _pb(4, op)
    if attribute_tensor is not None:
        node += _pb(5, _pb(1, "value") + _pb(5, attribute_tensor))  # AttributeProto name, t
    graph = _pb(1, node) + b"".join(_pb(5, t) for t in initializers)
    return _pb(1, 8) + _pb(8, _pb(2, 18)) + _pb(7, graph) * graphs


def _special(i: int, token: str) -> dict[str, Any]:
    return {"id": i, "content": token, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
            "special": True}


_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "wake", "me", "up", "play", "##ing", "music", "!", "the", "weather"]
_TEMPLATE = [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
             {"SpecialToken": {"id": "[SEP]", "type_id": 0}}]
#: The smallest tokenizer.json in the family: BERT's pipeline over 13 tokens.
TINY_TOKENIZER_JSON = json.dumps({
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
}, separators=(",", ":"))


def small_base(data: bytes) -> dict[str, Any]:
    """A real ONNX bundle's document with the smallest encoder in the family (`tiny_onnx`,
    `TINY_TOKENIZER_JSON`, no weights): still valid, and about 300 KB instead of 23 MB."""
    doc = document(data)
    enc = doc["encoder"]
    if enc["format"] != "onnx" or list(enc)[-1] != "weights":
        raise ValueError("small_base needs an ONNX bundle")
    enc.update(model=tiny_onnx(), tokenizer_json=TINY_TOKENIZER_JSON, weights=b"")
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


_CONDITION: dict[str, Callable[[dict[str, Any]], bool]] = {
    "class statistics": lambda d: has(d, "releases.class_sums") or has(d, "releases.class_counts"),
    "votes": lambda d: has(d, "releases.votes"),
    "prior": lambda d: has(d, "label_descriptions") and has(d, "releases.class_sums"),
    "blend": lambda d: has(d, "releases.class_sums"),
    "onnx": lambda d: get(d, "encoder.format") == "onnx",
}
assert set(_CONDITION) == set(CONDITIONS)


def falsify(doc: dict[str, Any], condition: str, keep: str) -> None:
    """Make ``condition`` false, then drop every other iff-field that is now present without
    its condition (so that the first field the reader refuses is ``keep``)."""
    if condition in ("class statistics", "blend"):
        drop(doc, "releases.class_counts", "releases.class_sums")
    elif condition == "votes":
        drop(doc, "releases.votes")
    elif condition == "prior":
        drop(doc, "label_descriptions")
    else:
        put(doc, "encoder.format", "tflite")
    for f in FIELDS:
        if f.need.startswith("iff ") and f.path != keep and has(doc, f.path) and not _CONDITION[f.need[4:]](doc):
            drop(doc, f.path)


# --------------------------------------------------------------------------- how the reader words things


def num(x: float | None) -> str:
    """A bound as the reader prints it (runtime.bundle.reader._num)."""
    if x is None:
        return "any"
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


def u_plus(c: str) -> str:
    return f"U+{ord(c):04X}"


_KIND_NAME = {"map": "map", "str": "string", "int": "integer", "float": "float", "bin": "bin", "version": "array",
              "strings": "an array of strings", "ndarray": "an array record"}
#: A value of another msgpack type than each kind, and that type's name.
_OTHER = {"map": (["x"], "array"), "str": (7, "integer"), "int": ("7", "string"), "float": ("8.0", "string"),
          "bin": ("x", "string"), "strings": ("x", "string"), "ndarray": ("x", "string")}


def _dims(doc: dict[str, Any]) -> dict[str, list[str]]:
    """For each array record present, the shape symbols defined before it (C by the labels)."""
    defined, out = {"C"}, {}
    for f in FIELDS:
        if f.kind == "ndarray" and has(doc, f.path):
            out[f.path] = sorted(defined)
            defined |= {s.removeprefix("2^") for s in f.shape}
    return out


# --------------------------------------------------------------------------- field cases


def _numbers(f: Field, value: Any) -> Iterator[tuple[str, Any, tuple[str, ...]]]:
    p = f.path
    if f.kind == "float":
        yield "integer", int(value), (f"field '{p}' is integer, expected float",)
        for bad in (math.nan, math.inf, -math.inf):
            yield f"{bad}", bad, (f"field '{p}' is {bad}, not a finite number",)
        below = float(f.low) - (abs(f.low) / 2 if f.low else 1.0)
        above = float(f.high) + (abs(f.high) if f.high else 1.0)
    else:
        yield "float", float(value), (f"field '{p}' is float, expected integer",)
        yield "boolean", True, (f"field '{p}' is boolean, expected integer",)
        below, above = int(f.low) - 1, int(f.high) + 1
    expected = f"expected {num(f.low)} to {num(f.high)}"
    yield "below-low", below, (f"field '{p}' is {below!r}, {expected}",)
    if above < 2**64:  # hashing.seed's bound is the largest msgpack integer
        yield "above-high", above, (f"field '{p}' is {above!r}, {expected}",)


def _lengths(f: Field, value: Any) -> Iterator[tuple[str, Any, tuple[str, ...]]]:
    unit = {"str": "x", "bin": b"x", "strings": ["x"]}[f.kind]
    for name, n in (("too-short", (f.low or 0) - 1), ("too-long", None if f.high is None else int(f.high) + 1)):
        if n is not None and 0 <= n <= LONGEST_CASE_STRING:
            yield name, unit * n, (f"field '{f.path}' has length {n}, expected {num(f.low)} to {num(f.high)}",)


def _text(f: Field, value: Any, index: int) -> Iterator[tuple[str, Any, tuple[str, ...]]]:
    bad = UNPRINTABLE_SAMPLES[index % len(UNPRINTABLE_SAMPLES)]
    if f.kind == "str" and f.text is not None:
        yield "unprintable", value + bad, (f"field '{f.path}' holds {u_plus(bad)}, which is not printable",)
    if f.kind != "strings":
        return
    items = list(value) or ["x"]
    yield "item-unprintable", [items[0] + bad] + items[1:], (
        f"field '{f.path}[0]' holds {u_plus(bad)}, which is not printable",)
    most = {"label": MAX_LABEL_CHARS, "description": MAX_DESCRIPTION_CHARS}.get(f.text or "", MAX_TEXT_CHARS)
    yield "item-too-long", ["y" * (most + 1)] + items[1:], (
        f"field '{f.path}[0]' has {most + 1} characters, more than {most}",)
    if f.text in ("label", "description"):
        yield "item-shows-nothing", ["\u200b\u2060 "] + items[1:], (f"field '{f.path}[0]' shows nothing",)


def _array(f: Field, record: dict[str, Any], defined: list[str]) -> Iterator[tuple[str, Any, tuple[str, ...]]]:
    p, shape = f.path, record["shape"]
    item = np.dtype(f.dtype).itemsize

    def edited(**changes: Any) -> dict[str, Any]:
        return {**record, **changes}

    yield "extra-key", edited(order="C"), (f"field '{p}' must have exactly the keys dtype, shape and data",)
    yield "without-data", {k: v for k, v in record.items() if k != "data"}, (
        f"field '{p}' must have exactly the keys dtype, shape and data",)
    wider = {"<f4": "<f8", "<i4": "<i8", "<i2": "<i4"}[f.dtype]
    for name, dtype in (("wider", wider), ("big-endian", ">" + f.dtype[1:])):
        yield f"dtype-{name}", edited(dtype=dtype), (f"field '{p}.dtype' is '{dtype}', expected '{f.dtype}'",)
    wrong_rank = (f"field '{p}.shape' is ", f"expected {len(f.shape)} integers")
    yield "shape-rank", edited(shape=shape + [1]), wrong_rank
    yield "shape-float", edited(shape=[float(shape[0])] + shape[1:]), wrong_rank
    for axis, symbol in enumerate(f.shape):
        name = symbol.removeprefix("2^")
        if name in defined:  # the symbol has its value: any other disagrees
            wrong = shape[:axis] + [shape[axis] + 1] + shape[axis + 1:]
            yield f"shape-{name}-disagrees", edited(shape=wrong), (f"field '{p}.shape' is {wrong}, expected [",)
        else:  # the array defines the symbol: outside its bounds (for 2^H, not a power of two first)
            _, _, high = DIMS[name]
            if symbol.startswith("2^"):
                outside = ((0, f"its {symbol} axis is not a power of two"), (3, f"its {symbol} axis is not a power of two"),
                           (2**(high + 1), f"{name} must be"))
            else:
                outside = ((0, f"{name} must be"), (high + 1, f"{name} must be"))
            for value, says in outside:
                wrong = shape[:axis] + [value] + shape[axis + 1:]
                yield f"shape-{name}-{value}", edited(shape=wrong), (f"field '{p}.shape' is {wrong}: {says}",)
    yield "data-short", edited(data=record["data"][:-item]), (
        f"field '{p}.data' has {len(record['data']) - item} bytes, but {f.dtype} {shape} needs {len(record['data'])}",)
    yield "data-not-bin", edited(data="x"), (f"field '{p}.data' is string, expected bin",)
    if f.dtype == "<f4":
        for bad in (math.nan, math.inf):
            values = np.frombuffer(record["data"], "<f4").copy()
            values[len(values) // 2] = bad
            yield f"data-{bad}", edited(data=values.tobytes()), (f"field '{p}' holds a value that is not finite",)


def _field_mutations(f: Field, value: Any, index: int, defined: list[str]) -> Iterator[tuple[str, Any, tuple[str, ...]]]:
    """What the row of ``f`` says a reader must refuse, as (name, value, phrases)."""
    p = f.path
    if f.kind in _OTHER:
        other, name = _OTHER[f.kind]
        yield "wrong-type", other, (f"field '{p}' is {name}, expected {_KIND_NAME[f.kind]}",)
    if f.need == "optional":
        yield "nil", None, (f"field '{p}' is nil, expected {_KIND_NAME[f.kind]}",)
    if f.kind == "strings":
        items = list(value) if len(value) > 1 else ["x", "y"]
        yield "item-wrong-type", items[:1] + [7] + items[2:], (f"field '{p}[1]' is integer, expected string",)
    if f.kind in ("int", "float"):
        yield from _numbers(f, value)
    if f.kind in ("str", "bin", "strings"):
        yield from _lengths(f, value)
    if f.kind == "str" and f.choices:
        yield "not-a-choice", "coreml", (f"field '{p}' is 'coreml', expected one of "
                                         f"{', '.join(map(repr, f.choices))}",)
    if f.kind == "strings" and f.choices:
        yield "unknown-choice", [f.choices[0], "pixel_values"], (f"field '{p}' must hold distinct names of",)
        yield "repeated-choice", [f.choices[0], f.choices[0]], (f"field '{p}' must hold distinct names of",)
    if f.kind in ("str", "strings"):
        yield from _text(f, value, index)
    if f.open:  # informational: no binary data, no NaN or infinity, at any depth
        yield "holds-bin", {**value, "x": [{"y": b"\x00"}]}, (f"field '{p}' holds binary data",)
        yield "holds-nan", {**value, "x": {"y": float("nan")}}, (f"field '{p}' holds nan, not a finite number",)
    if f.kind == "map" and not f.open:
        phrase = (f"field '{p}.future' is a release this reader cannot account for" if p == "releases"
                  else f"unknown field '{p}.future' in a version 1.0 bundle")
        yield "unknown-key", {**value, "future": 1}, (phrase,)
    if f.kind == "ndarray":
        yield from _array(f, value, defined)


_PLACEHOLDER = {"str": "x", "int": 0, "float": 0.0, "strings": ["labels"], "map": {}, "bin": b"x"}


def field_cases(base: dict[str, Any]) -> Iterator[Case]:
    """The cases of every row of the table (see the module doc)."""
    dims = _dims(base)
    for index, f in enumerate(FIELDS):
        if f.path in CONTAINER_FIELDS:
            continue
        if f.need == "required":
            doc = copy.deepcopy(base)
            drop(doc, f.path)
            yield Case(f"{f.path}-missing", seal(doc), (f"missing field '{f.path}'",))
        elif f.need.startswith("iff "):
            condition = f.need[4:]
            phrase = (f"field '{f.path}' must be present exactly when {CONDITIONS[condition]}",)
            doc = copy.deepcopy(base)
            drop(doc, f.path)
            yield Case(f"{f.path}-absent-while-{condition.replace(' ', '-')}", seal(doc), phrase)
            doc = copy.deepcopy(base)
            falsify(doc, condition, keep=f.path)
            if has(doc, f.path):  # not when the field is itself what makes its condition hold
                yield Case(f"{f.path}-present-without-{condition.replace(' ', '-')}", seal(doc), phrase)
        value = get(base, f.path) if has(base, f.path) else _PLACEHOLDER[f.kind]
        for name, bad, phrases in _field_mutations(f, value, index, dims.get(f.path, [])):
            doc = copy.deepcopy(base)
            put(doc, f.path, bad)
            yield Case(f"{f.path}-{name}", seal(doc), phrases)
    doc = copy.deepcopy(base)
    put(doc, "future", 1, before="encoder")
    yield Case("unknown-top-level-key", seal(doc), ("unknown field 'future' in a version 1.0 bundle",))


# --------------------------------------------------------------------------- relations


def _edit(base: dict[str, Any], *changes: tuple[str, Any]) -> bytes:
    doc = copy.deepcopy(base)
    for path, value in changes:
        if value is _DROP:
            drop(doc, path)
        else:
            put(doc, path, value(get(doc, path)) if callable(value) else value)
    return seal(doc)


_DROP = object()


def _f4(values: np.ndarray) -> dict[str, Any]:
    a = np.ascontiguousarray(values, "<f4")
    return {"dtype": "<f4", "shape": list(a.shape), "data": a.tobytes()}


def _scaled(factor: float) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda r: {**r, "data": (np.frombuffer(r["data"], "<f4") * np.float32(factor)).astype("<f4").tobytes()}


def _fullwidth(s: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in s)


def relation_cases(base: dict[str, Any]) -> Iterator[Case]:
    """One case per relation of schema.RELATIONS (several where a relation has several parts),
    then the ordering of the encoder's entries, requires, and the engine families."""
    labels = base["labels"]
    eps = base["privacy"]["epsilon"]
    votes = base["releases"]["votes"]
    sums = base["releases"]["class_sums"]
    dim = base["encoder"]["dim"]
    yield Case("nothing-to-classify-with", _edit(base, *((p, _DROP) for p in (
        "releases.class_counts", "releases.class_sums", "releases.votes", "subspace", "hashing", "prior",
        "scoring"))), ("field 'releases' holds neither class_sums nor votes: nothing to classify with",))
    yield Case("shares-do-not-add-up", _edit(base, ("privacy.epsilon", eps + 1.0)),
               ("the releases spend epsilon", "field 'privacy.epsilon' is", "their shares must add up to it"))
    for name in STATISTICS:
        yield Case(f"{name}-noise-scale-contradicts", _edit(base, (f"releases.{name}.noise_scale", lambda s: s * 1.5)),
                   (f"field 'releases.{name}.noise_scale' is", "the privacy facts contradict each other"))
    yield Case("records-per-unit-contradicts-sensitivity", _edit(base, ("privacy.max_records_per_unit", 2)),
               ("field 'releases.class_counts.sensitivity_l1' is 1, but a class_counts release with at most 2 "
                "record(s) per unit has 2 x 1: the privacy facts contradict each other",))
    sens = votes["sensitivity_l1"] + 1
    yield Case("votes-sensitivity-contradicts-tables", _edit(
        base, ("releases.votes.sensitivity_l1", sens), ("releases.votes.noise_scale", sens / votes["epsilon"])),
        (f"field 'releases.votes.sensitivity_l1' is {sens}, but a votes release", "contradict each other"))
    yield Case("class-sums-sensitivity-contradicts-clip", _edit(base, ("releases.class_sums.clip_l1", lambda c: 2 * c)),
               ("field 'releases.class_sums.sensitivity_l1' is", "contradict each other"))
    # round() is Python's, half to even: grid 2 x clip 1.25 is 2.5, one step per record is 2.
    yield Case("class-sums-sensitivity-rounds-half-to-even", _edit(
        base, ("releases.class_sums.grid", 2), ("releases.class_sums.clip_l1", 1.25),
        ("releases.class_sums.sensitivity_l1", 3), ("releases.class_sums.noise_scale", 3 / sums["epsilon"])),
        ("field 'releases.class_sums.sensitivity_l1' is 3, but a class_sums release with at most 1 record(s) per "
         "unit has 1 x 2",))
    grid = sums["grid"]
    yield Case("grid-times-clip-below-one", _edit(base, ("releases.class_sums.clip_l1", 0.4 / grid)),
               (f"field 'releases.class_sums.clip_l1' is {0.4 / grid!r}: less than one grid step of 1/{grid}",))
    yield Case("descriptions-count", _edit(base, ("label_descriptions", lambda d: d[:-1])),
               (f"field 'label_descriptions' has {len(labels) - 1} entries for {len(labels)} labels",))
    for name, pair in (("fullwidth", [labels[0], _fullwidth(labels[0])]),
                       ("zero-width", [labels[0], labels[0][:2] + "\u200b" + labels[0][2:]]),
                       ("ligature", ["file", "\ufb01le"]), ("soft-hyphen", [labels[0], labels[0] + "\u00ad"])):
        yield Case(f"labels-look-the-same-{name}", _edit(base, ("labels", pair + labels[2:])),
                   ("labels 0 and 1 (", "look the same once normalised"))
    yield Case("encoder-dim-disagrees", _edit(base, ("encoder.dim", dim + 1)),
               (f"field 'encoder.dim' is {dim + 1}, but the arrays before it are {dim}-d",))
    rows = np.zeros((dim + 1, dim), "<f4")  # k = D + 1 rows
    yield Case("projection-more-rows-than-dim", _edit(
        base, ("releases.class_sums.values", {**sums["values"], "shape": [len(labels), dim + 1],
                                              "data": bytes(4 * len(labels) * (dim + 1))}),
        ("subspace.projection", _f4(rows))),
        (f"field 'subspace.projection' has {dim + 1} rows, more than the embedding size {dim}",))
    yield Case("check-embedding-not-unit", _edit(base, ("encoder.check_embedding", _scaled(2.0))),
               ("field 'encoder.check_embedding' has norm 2, expected a unit vector",))
    yield Case("check-embedding-zero", _edit(base, ("encoder.check_embedding", _scaled(0.0))),
               ("field 'encoder.check_embedding' has norm 0, expected a unit vector",))
    weights_first = copy.deepcopy(base)
    encoder = weights_first["encoder"]
    weights_first["encoder"] = {"weights": encoder.pop("weights"), **encoder}
    last = "must be the last entry of 'encoder', the last map before 'sha256'"
    yield Case("weights-not-last-in-encoder", seal(weights_first), (f"field 'encoder.weights' {last}",))
    exporter_last = copy.deepcopy(base)
    exporter_last["exporter"] = exporter_last.pop("exporter")
    yield Case("encoder-not-the-last-map", seal(exporter_last), (f"field 'encoder.weights' {last}",))
    yield Case("requires-an-unknown-field", _edit(base, ("requires", ["labels", "scoring.future_weight"])),
               ("this bundle requires 'scoring.future_weight', which this dpedge does not know: upgrade dpedge",))
    yield from _family_cases(base)


def _family_cases(base: dict[str, Any]) -> Iterator[Case]:
    """The tokenizer and model families (runtime/bundle/tokenizer_family.py, model_family.py)."""
    tok = "field 'encoder.tokenizer_json' is outside the tokenizer family"
    yield Case("tokenizer-not-json", _edit(base, ("encoder.tokenizer_json", "{not json")),
               ("field 'encoder.tokenizer_json' is not valid JSON",))
    yield Case("tokenizer-empty-object", _edit(base, ("encoder.tokenizer_json", "{}")), (tok,))
    yield Case("tokenizer-key-twice", _edit(base, ("encoder.tokenizer_json", lambda t: t[:-1] + ',"decoder":null}')),
               (tok, "appears twice in one object"))
    yield Case("tokenizer-bpe", _edit(base, ("encoder.tokenizer_json", lambda t: t.replace('"WordPiece"', '"BPE"'))),
               (tok,))
    onnx = "field 'encoder.model' is outside the ONNX encoder family"
    weights = ("encoder.weights", bytes(64))

    def model(**kw: Any) -> tuple[str, bytes]:
        return "encoder.model", tiny_onnx(**kw)

    yield Case("onnx-not-protobuf", _edit(base, ("encoder.model", b"\x08")),
               ("field 'encoder.model' is not a valid ONNX model",))
    yield Case("onnx-control-flow", _edit(base, model(op="Loop")), (onnx, "operator 'Loop'"))
    yield Case("onnx-two-graphs", _edit(base, model(graphs=2)),
               ("field 'encoder.model' is not a valid ONNX model: it has 2 graphs, not one",))
    refused = {
        "location-elsewhere": external_tensor("w", 0, 8, location="/etc/passwd" + "." * 245),
        "offset-19-digits": external_tensor("w", 0, 8, digits=19),
        "entries-reordered": external_tensor("w", 0, 8, keys=("offset", "location", "length")),
        "entry-missing": external_tensor("w", 0, 8, keys=("location", "offset")),
        "not-marked-external": external_tensor("w", 0, 8, external=False),
        "with-raw-data": external_tensor("w", 0, 8, raw=True),
    }
    for name, tensor in refused.items():
        yield Case(f"onnx-external-data-{name}", _edit(base, model(initializers=(tensor,)), weights), (onnx,))
    yield Case("onnx-external-data-past-the-weights", _edit(
        base, model(initializers=(external_tensor("w", 60, 8),)), weights),
        (onnx, "an initializer's external data ends at byte 68, past the 64 bytes of encoder.weights"))
    yield Case("onnx-external-data-beyond-64-bits", _edit(
        base, model(initializers=(external_tensor("w", 10**20 - 1, 10**20 - 1),)), weights),
        (onnx, f"ends at byte {2 * (10**20 - 1)}, past the 64 bytes of encoder.weights"))
    yield Case("onnx-external-data-in-an-attribute", _edit(
        base, model(op="Constant", attribute_tensor=external_tensor("w", 0, 8)), weights),
        (onnx, "keeps its data outside the graph, which only initializers may"))
    yield Case("tflite-not-a-flatbuffer", _edit(base, ("encoder.format", "tflite"), ("encoder.weights", _DROP),
                                                ("encoder.model", bytes(16))),
               ("field 'encoder.model' is not a valid TFLite model",))


# --------------------------------------------------------------------------- the container


def _nested(depth: int) -> Any:
    """A value that is ``depth`` containers deep."""
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


def container_cases(base: dict[str, Any]) -> Iterator[Case]:
    """The container's rules (docs/bundle-format.md sections 1 and 2)."""
    data = seal(base)
    middle = bytearray(data)
    middle[len(data) // 2] ^= 1
    yield Case("digest-mismatch", bytes(middle), ("checksum mismatch: the bundle is corrupted",))
    yield Case("digest-wrong", data[:-1] + bytes([data[-1] ^ 1]), ("checksum mismatch",))
    unsealed = "the bundle is truncated or corrupted: it does not end with its 'sha256' entry"
    yield Case("truncated", data[:-7], (unsealed,))
    yield Case("truncated-to-half", data[:len(data) // 2], (unsealed,))
    yield Case("bytes-after-the-digest", data + b"\x00", (unsealed,))
    yield Case("empty-file", b"", ("not a dpedge bundle (it does not start with a msgpack map)",))
    yield Case("not-msgpack", b"GIF89a" + bytes(64), ("not a dpedge bundle",))
    yield Case("first-entry-not-format", seal(Pairs([("labels", ["a", "b"]), *base.items()]))[:-1],
               ("not a dpedge bundle (its first entry is not format: dpedge)",))
    # an array of 1, 2 and the digest entry's two values
    yield Case("top-level-array", seal_prefix(b"\x94" + pack(1) + pack(2)),
               ("not a dpedge bundle (its top level is array, expected a map)",))
    items = list(base.items())
    yield Case("version-before-format", seal(Pairs([items[1], items[0], *items[2:]])),
               ("a bundle's map starts with 'format' and 'version' and ends with 'sha256'",))
    encoder = base["encoder"]
    prefix = msgpack.Packer().pack_map_header(len(base))
    prefix += b"".join(pack(k) + pack(v) for k, v in items if k != "encoder") + pack("encoder")
    prefix += msgpack.Packer().pack_map_header(len(encoder) + 1) + b"".join(pack(k) + pack(v) for k, v in encoder.items())
    yield Case("digest-inside-the-encoder", seal_prefix(prefix),
               ("a bundle's map starts with 'format' and 'version' and ends with 'sha256'",))
    yield Case("format-other", _edit(base, ("format", "dpedge2")),
               ("not a dpedge bundle: field 'format' is 'dpedge2', expected 'dpedge'",))
    for name, version in (("one-number", [1]), ("float-minor", [1, 0.0]), ("negative-minor", [1, -1]),
                          ("string", "1.0"), ("three-numbers", [1, 0, 0])):
        yield Case(f"version-{name}", _edit(base, ("version", version)), ("field 'version' must be [major, minor], got",))
    yield Case("major-2", _edit(base, ("version", [2, 0])),
               ("bundle format version 2.0 is not 1.x, the only format dpedge reads",))
    yield Case("major-0", _edit(base, ("version", [0, 9])), ("bundle format version 0.9 is not 1.x",))
    for version in ([4, 0], [1, 2]):
        outer = {"format": PRE_RELEASE_NAME, "version": version,
                 "checksum": {"algorithm": "sha256", "digest": bytes(32)}, "payload": pack({"labels": ["a", "b"]})}
        yield Case(f"pre-release-{version[0]}.{version[1]}", pack(outer),
                   (f"this bundle uses the pre-release format {version[0]}.{version[1]}, which dpedge 1.x does not "
                    f"read: rebuild it",))
    repeated = "a map repeats the key"
    yield Case("repeated-top-level-key", seal(Pairs([*items[:3], ("labels", base["labels"]), *items[3:]])),
               (f"{repeated} 'labels'",))
    privacy = Pairs([*base["privacy"].items(), ("epsilon", base["privacy"]["epsilon"])])
    yield Case("repeated-nested-key", _edit(base, ("privacy", privacy)), (f"{repeated} 'epsilon'",))
    yield Case("repeated-key-in-an-open-map", _edit(base, ("exporter", Pairs([("name", "a"), ("name", "b")]))),
               (f"{repeated} 'name'",))
    yield Case("key-not-a-string", _edit(base, ("exporter", Pairs([(b"name", "a")]))),
               ("a map has a key that is not a string",))
    yield Case("key-an-integer", _edit(base, ("exporter", Pairs([(1, "a")]))), ("not valid msgpack",))
    ext = {"fixext": Raw(b"\xd4\x05\x00"), "timestamp": Raw(b"\xd6\xff" + bytes(4)), "ext8": Raw(b"\xc7\x03\x05abc"),
           "empty": Raw(b"\xc7\x00\x05"), "bad-timestamp": Raw(b"\xd4\xff\x00")}
    for name, value in ext.items():
        yield Case(f"extension-{name}", _edit(base, ("exporter", {"x": value})),
                   ("not a dpedge bundle: it holds a msgpack extension type, which no field may",))
    yield Case("float32-where-an-integer-is-meant", _edit(base, ("encoder.max_length", _float32(256.0))),
               ("field 'encoder.max_length' is float, expected integer",))
    yield Case("nested-too-deep", _edit(base, ("exporter", {"x": _nested(MAX_DEPTH - 1)})),
               (f"not a dpedge bundle: containers nest deeper than {MAX_DEPTH}",))
    budget = (len(data) + 2 * 20_000) // 64 + 4096
    yield Case("more-values-than-bytes-allow", _edit(base, ("exporter", {"x": [0] * budget})),
               ("not a dpedge bundle: it holds more msgpack values than",))
    yield Case("array-too-long", _edit(base, ("exporter", {"x": [0] * (MAX_CONTAINER + 1)})),
               (f"not valid msgpack (ValueError: {MAX_CONTAINER + 1} exceeds max_array_len({MAX_CONTAINER}))",))
    yield Case("string-not-utf8", _edit(base, ("exporter", {"x": Raw(b"\xa2\xed\xa0")})), ("not valid msgpack",))
    yield Case("reserved-byte", _edit(base, ("exporter", {"x": Raw(b"\xc1")})), ("not valid msgpack",))


# --------------------------------------------------------------------------- all of it


def malformed(base: dict[str, Any]) -> list[Case]:
    """Every malformed case made from ``base`` (`small_base` of a bundle with every field)."""
    missing = [p for p in ("releases.class_counts", "releases.class_sums", "releases.votes", "hashing.offsets",
                           "prior", "scoring", "label_descriptions", "encoder.weights") if not has(base, p)]
    if missing:
        raise ValueError(f"the base bundle lacks {missing}: build it with --votes-share")
    cases = [*field_cases(base), *relation_cases(base), *container_cases(base)]
    names = [c.name for c in cases]
    if len(set(names)) != len(names):
        raise AssertionError(f"case names repeat: {sorted({n for n in names if names.count(n) > 1})}")
    return cases


def real_encoder_cases(data: bytes) -> list[Case]:
    """The real encoder's external data, edited in place: a location that is not the
    placeholder, and encoder.weights one byte short of the last initializer's range."""
    doc = document(data)
    model = bytearray(doc["encoder"]["model"])
    at = model.find(WEIGHTS_LOCATION.encode())
    model[at] = ord("D")
    moved = copy.deepcopy(doc)
    moved["encoder"]["model"] = bytes(model)
    short = doc
    short["encoder"]["weights"] = short["encoder"]["weights"][:-1]
    onnx = "field 'encoder.model' is outside the ONNX encoder family"
    return [Case("real-onnx-location-edited", seal(moved), (onnx, "names external data 'Dpedge-weights")),
            Case("real-onnx-weights-one-byte-short", seal(short), (onnx, "past the"))]


def valid(base: dict[str, Any]) -> list[tuple[str, bytes]]:
    """Bundles in other shapes the format allows, which every reader must load."""
    privacy, releases = base["privacy"], base["releases"]
    per_unit = {"privacy.max_records_per_unit": 3}
    for name, r in releases.items():
        per_unit[f"releases.{name}.sensitivity_l1"] = 3 * r["sensitivity_l1"]
        per_unit[f"releases.{name}.noise_scale"] = 3 * r["sensitivity_l1"] / r["epsilon"]
    newer = copy.deepcopy(base)
    put(newer, "version", [1, 7])
    put(newer, "future", {"x": [1, 2.5, None]}, before="encoder")
    put(newer, "privacy.future_fact", "y")
    put(newer, "encoder.future_input", [1], before="weights")
    sums = releases["class_sums"]
    out = [
        ("newer-minor-with-unknown-fields", seal(newer)),
        ("requires-known-fields", _edit(base, ("requires", ["labels", "releases.votes", "hashing.offsets"]))),
        ("hashing-without-offsets", _edit(base, ("hashing.offsets", _DROP))),
        ("without-optional-fields", _edit(base, *((p, _DROP) for p in (
            "label_descriptions", "prior", "exporter", "encoder.facts", "hashing.seed", "hashing.offsets",
            "privacy.noise_library", "privacy.noise_library_version", "privacy.composition",
            "privacy.post_processing")))),
        ("three-records-per-unit", _edit(base, *per_unit.items())),
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
        ("external-data-in-bundle-form", _edit(base, ("encoder.model", tiny_onnx(initializers=(
            external_tensor("a", 0, 8), external_tensor("b", 8, 56)))), ("encoder.weights", bytes(64)))),
        ("strings-with-escapable-but-printable-text", _edit(base, ("privacy.composition", "tab-free, emoji 👍🏽, "
                                                                   "RTL مرحبا, CJK 𠮷"))),
    ]
    return out


def _float32(x: float) -> Raw:
    """A msgpack float32 (a float, however few bits it has)."""
    return Raw(b"\xca" + struct.pack(">f", x))


# A kind added to the table needs its mutations here before any case is generated.
assert {f.kind for f in FIELDS} <= set(_KIND_NAME), {f.kind for f in FIELDS} - set(_KIND_NAME)
