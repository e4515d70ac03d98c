"""Format-1.0 bundle documents for property tests and fuzzing, derived from runtime.bundle.schema.

- `tiny_document`: a real bundle shrunk to a few KiB (its real labels, privacy facts and
  tokenizer.json; its ONNX model cut to a few nodes and initializers, two of them still in
  ``encoder.weights``; arrays cut to a small D, k, T and H) and still valid. The seeds of the
  atheris target and the bases of the mutations.
- `documents`: a Hypothesis strategy of valid documents built from `FIELDS` and `DIMS`: random
  C, D, k, T, H within every bound (array bytes capped by ``budget``; `build_document` makes
  the corners the cap leaves out), every float anywhere in its bounded range (extremes and
  subnormals included), every optional field present or absent as `CONDITIONS` allow, and
  the relations of `RELATIONS` holding.
- `mutate`: one hostile input made from a document: fields dropped, retyped, out of bounds or
  NaN, keys repeated at the msgpack level, deep nesting, extension types, lying msgpack
  headers, look-alike labels, drifting privacy facts, JSON-level edits of the tokenizer, model
  bytes flipped; then sealed, or truncated or bit-flipped with and without resealing the
  digest. It takes its choices from a `Chooser`, so Hypothesis (`Draws`, shrinkable) and the
  atheris target (`Dice`, seeded by libFuzzer) share every mutation.
- `seal` and `encode`: the writer's encoding (runtime.bundle.writer.pack), extended with
  `Pairs` (a map that may repeat a key), `Raw` (msgpack bytes spliced in) and `F32` (a float32).

A document is a plain dict in writer order without its ``sha256`` entry; `seal` adds it.

Example:
    >>> doc = {"format": "dpedge", "version": [1, 0]}
    >>> blob = seal(doc)
    >>> blob[:1], blob[-41:-32] == schema.DIGEST_TAIL, len(blob)
    (b'\\x83', True, 67)
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import random
import struct
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import msgpack
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from runtime.bundle import schema
from runtime.bundle import model_family
from runtime.bundle.reader import has_path
from runtime.bundle.schema import DIGEST_TAIL, FIELDS, FIELDS_BY_PATH, TAIL_BYTES, Key
from runtime.bundle import wording
from runtime.bundle.accounting import head_epsilon
from runtime.text import label_key, shows_something, unassigned, unprintable

# --------------------------------------------------------------------------- known findings

#: Findings in runtime/ that tests exploring at random may meet while they stay unfixed:
#: (exception type, the runtime file and function that raises it). Each has an
#: xfail(strict=True) case in tests/test_bundle_properties.py; remove the entry with the fix.
KNOWN_FINDINGS: set[tuple[str, str, str]] = set()


def is_known_finding(exc: BaseException) -> bool:
    """Whether ``exc`` is one of `KNOWN_FINDINGS` (judged by where it was raised)."""
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    return (type(exc).__name__, frame.filename.rsplit("/", 1)[-1], frame.name) in KNOWN_FINDINGS


# --------------------------------------------------------------------------- encoding


class Raw(bytes):
    """msgpack bytes written as they are (a lying header, a deep nest, a reserved byte)."""


class Pairs(list):
    """A map as a list of (key, value) pairs, so that it can repeat a key."""


@dataclass(frozen=True)
class F32:
    """A float written as msgpack float 32 (Python's msgpack writes float 64)."""

    value: float


_PACKER = msgpack.Packer(use_bin_type=True)


def encode(v: Any) -> bytes:
    """msgpack bytes of ``v`` as the writer encodes it, plus `Raw`, `Pairs` and `F32`."""
    if isinstance(v, Raw):
        return bytes(v)
    if isinstance(v, F32):
        return b"\xca" + struct.pack(">f", v.value)
    if isinstance(v, (dict, Pairs)):
        items = list(v.items()) if isinstance(v, dict) else v
        return _PACKER.pack_map_header(len(items)) + b"".join(encode(k) + encode(x) for k, x in items)
    if isinstance(v, list):
        return _PACKER.pack_array_header(len(v)) + b"".join(encode(x) for x in v)
    if type(v) is int and not -2**63 <= v < 2**64:  # a mutation overshot: the nearest msgpack integer
        v = 2**64 - 1 if v > 0 else -2**63
    return _PACKER.pack(v)


def reseal(head: bytes) -> bytes:
    """``head`` (a map header and its entries but the last) sealed by the digest entry."""
    return head + DIGEST_TAIL + hashlib.sha256(head).digest()


def seal(doc: dict[str, Any] | Pairs) -> bytes:
    """The file of a document: its map (one more entry for the digest), then ``sha256``."""
    items = list(doc.items()) if isinstance(doc, dict) else list(doc)
    return reseal(_PACKER.pack_map_header(len(items) + 1) + b"".join(encode(k) + encode(v) for k, v in items))


def decode(blob: bytes) -> dict[str, Any]:
    """A sealed file's document (the digest entry dropped), read without the reader's checks."""
    doc = msgpack.unpackb(blob, raw=False, strict_map_key=False)
    doc.pop(Key.SHA256, None)
    return doc


def record(a: np.ndarray, dtype: str) -> dict[str, Any]:
    """An array record as the writer stores it."""
    a = np.ascontiguousarray(a, dtype=np.dtype(dtype))
    return {Key.DTYPE: dtype, Key.SHAPE: list(a.shape), Key.DATA: a.tobytes()}


def array(rec: dict[str, Any]) -> np.ndarray:
    return np.frombuffer(rec[Key.DATA], rec[Key.DTYPE]).reshape(rec[Key.SHAPE])


def entries(v: Any) -> int:
    """Map and array entries of a value as the reader counts them (a container: its length + 1)."""
    if isinstance(v, dict):
        return len(v) + 1 + sum(entries(x) for x in v.values())
    if isinstance(v, list):
        return len(v) + 1 + sum(entries(x) for x in v)
    return 0


# --------------------------------------------------------------------------- a real bundle, shrunk

#: The smallest TFLite flatbuffer of the encoder family: a model table (version 3) whose one
#: subgraph has no tensors or operators. Offsets: root -> model table at 20 (vtable at 8: field
#: 0 version at +4, field 2 subgraphs at +8); subgraphs vector at 32 (one entry -> table at 44,
#: vtable at 40 with no fields).
TINY_TFLITE = struct.pack("<I4sHHHHHHiIIIIHHi", 20, b"TFL3", 10, 12, 4, 0, 8, 0, 12, 3, 4, 1, 8, 4, 4, 4)


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    return model_family._varint(memoryview(buf), pos, len(buf))  # the reader's own varint


def _varint_bytes(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append(n & 0x7F | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _pb_fields(buf: bytes):
    """(field, wire type, start, end, payload or varint) of each field of a protobuf message."""
    pos = 0
    while pos < len(buf):
        start = pos
        key, pos = _varint(buf, pos)
        field_no, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            yield field_no, wire, start, pos, value
        elif wire == 2:
            n, pos = _varint(buf, pos)
            yield field_no, wire, start, pos + n, buf[pos:pos + n]
            pos += n
        else:
            pos += 8 if wire == 1 else 4
            yield field_no, wire, start, pos, None


def _external_range(tensor: bytes) -> tuple[int, int] | None:
    """(offset, length) of an initializer whose data is external (TensorProto fields 13, 14)."""
    kv, external = {}, False
    for f, wire, _, _, payload in _pb_fields(tensor):
        if f == 14 and wire == 0 and payload == 1:
            external = True
        elif f == 13:
            entry = {g: p for g, _, _, _, p in _pb_fields(payload)}
            kv[entry[1].decode()] = entry[2].decode()
    return (int(kv["offset"]), int(kv["length"])) if external else None


def shrink_onnx(model: bytes, weights: bytes, nodes: int = 4) -> tuple[bytes, bytes]:
    """The exporter's ONNX model with its graph cut to ``nodes`` nodes, two inline and two
    external initializers (those in the first 64 KiB of the weights), its name, inputs and
    outputs; and the weights cut to what those two use. Every other model field is kept byte
    for byte. The reader's family check parses it; no engine could run it."""
    out, ends = bytearray(), [0]
    for f, _, start, end, payload in _pb_fields(model):
        if f != 7:  # ModelProto.graph
            out += model[start:end]
            continue
        graph, kept = bytearray(), {"node": 0, "inline": 0, "external": 0}
        for g, _, gs, ge, gp in _pb_fields(payload):
            what = None
            if g == 1:  # node
                what = "node" if kept["node"] < nodes else None
            elif g == 5:  # initializer
                ext = _external_range(gp)
                if ext is None:
                    what = "inline" if kept["inline"] < 2 else None
                elif kept["external"] < 2 and sum(ext) <= 1 << 16:
                    what = "external"
                    ends.append(sum(ext))
            elif g in (2, 11, 12):  # name, input, output
                graph += payload[gs:ge]
            if what:
                kept[what] += 1
                graph += payload[gs:ge]
        out += _varint_bytes(7 << 3 | 2) + _varint_bytes(len(graph)) + graph
    return bytes(out), weights[:max(ends)]


def shrink_tokenizer(text: str, size: int = 110) -> str:
    """The exporter's tokenizer.json with its vocabulary cut to the first ``size`` ids (BERT's
    [PAD], [UNK], [CLS], [SEP] and [MASK] are ids 0 and 100 to 103) and the added tokens to
    those left; everything else as it was."""
    doc = json.loads(text)
    vocab = doc["model"]["vocab"]
    doc["model"]["vocab"] = {t: i for t, i in vocab.items() if i < size}
    doc["added_tokens"] = [a for a in doc["added_tokens"] if a["id"] < size]
    return json.dumps(doc, ensure_ascii=False)


def tiny_document(data: bytes, dim: int = 8, basis: int = 4, tables: int = 2, bits: int = 3) -> dict[str, Any]:
    """A real bundle (bytes) shrunk to a few KiB and still valid: the first ``dim`` coordinates
    of every D-sized array (the check embedding renormalised), the first ``basis`` directions of
    the subspace, ``tables`` tables of ``bits`` bits (the votes release's sensitivity and scale
    follow), the shrunk ONNX model, weights and tokenizer (a TFLite model becomes TINY_TFLITE)."""
    doc = decode(data)
    enc, releases = doc[Key.ENCODER], doc[Key.RELEASES]
    d = min(dim, enc[Key.DIM])
    if Key.SUBSPACE in doc:
        sub = doc[Key.SUBSPACE]
        k = min(basis, sub[Key.PROJECTION][Key.SHAPE][0], d)
        sub[Key.ORIGIN] = record(array(sub[Key.ORIGIN])[:d], "<f4")
        sub[Key.PROJECTION] = record(array(sub[Key.PROJECTION])[:k, :d], "<f4")
        sums = releases[Key.CLASS_SUMS]
        sums[Key.VALUES] = record(array(sums[Key.VALUES])[:, :k], "<i4")
    if Key.PRIOR in doc:
        doc[Key.PRIOR] = record(array(doc[Key.PRIOR])[:, :d], "<f4")
    if Key.HASHING in doc:
        h = doc[Key.HASHING]
        planes = array(h[Key.HYPERPLANES])
        t, b = min(tables, planes.shape[0]), min(bits, planes.shape[1])
        h[Key.HYPERPLANES] = record(planes[:t, :b, :d], "<f4")
        if Key.OFFSETS in h:
            h[Key.OFFSETS] = record(array(h[Key.OFFSETS])[:t, :b], "<f4")
        votes = releases[Key.VOTES]
        votes[Key.VALUES] = record(array(votes[Key.VALUES])[:t, :2**b], "<i2")
        votes[Key.SENSITIVITY_L1] = doc[Key.PRIVACY][Key.MAX_RECORDS_PER_UNIT] * t
        votes[Key.NOISE_SCALE] = votes[Key.SENSITIVITY_L1] / votes[Key.EPSILON]
    check = array(enc[Key.CHECK_EMBEDDING])[:d].astype(np.float64)
    enc[Key.CHECK_EMBEDDING] = record(check / np.linalg.norm(check), "<f4")
    enc[Key.DIM] = d
    enc[Key.TOKENIZER_JSON] = shrink_tokenizer(enc[Key.TOKENIZER_JSON])
    if enc[Key.FORMAT] == "onnx":
        enc[Key.MODEL], enc[Key.WEIGHTS] = shrink_onnx(enc[Key.MODEL], enc[Key.WEIGHTS])
    else:
        enc[Key.MODEL] = TINY_TFLITE
    return doc


@dataclass(frozen=True, repr=False)
class EncoderBytes:
    """The parts of an encoder the reader's family checks parse (everything else is drawn)."""

    format: str
    model: bytes
    weights: bytes | None
    tokenizer_json: str
    family: str = schema.DEFAULT_FAMILY  # encoder.family (1.2), written when not BERT's

    def __repr__(self) -> str:  # Hypothesis shows strategies' arguments: keep it short
        return f"EncoderBytes({self.format}, {self.family}, {len(self.model)} model bytes)"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # Hypothesis' pretty printer
        printer.text(repr(self))


def encoders_of(tiny: dict[str, Any], mpnet: dict[str, Any] | None = None) -> list[EncoderBytes]:
    """The tiny document's ONNX encoder, and a TFLite one with the same tokenizer; with
    ``mpnet`` (a tiny document of an MPNet bundle, format 1.2), its encoder too."""
    e = tiny[Key.ENCODER]
    assert e[Key.FORMAT] == "onnx", "the base of the drawn documents is an ONNX bundle"
    out = [EncoderBytes("onnx", e[Key.MODEL], e[Key.WEIGHTS], e[Key.TOKENIZER_JSON]),
           EncoderBytes("tflite", TINY_TFLITE, None, e[Key.TOKENIZER_JSON])]
    if mpnet is not None:
        m = mpnet[Key.ENCODER]
        out.append(EncoderBytes("onnx", m[Key.MODEL], m[Key.WEIGHTS], m[Key.TOKENIZER_JSON], m["family"]))
    return out


# --------------------------------------------------------------------------- valid documents


@dataclass
class Params:
    """Every value of one document (arrays as numpy); `build_document` lays them out."""

    encoder: EncoderBytes
    labels: list[str]
    descriptions: list[str] | None
    privacy: dict[str, Any]          # the scalar fields of privacy, epsilon included
    releases: dict[str, dict[str, Any]]  # statistic -> facts (values as numpy)
    check_embedding: np.ndarray
    encoder_fields: dict[str, Any]   # max_length, text_prefix, inputs, output, check_text
    origin: np.ndarray | None = None
    projection: np.ndarray | None = None
    hyperplanes: np.ndarray | None = None
    offsets: np.ndarray | None = None
    seed: int | None = None
    prior: np.ndarray | None = None
    scoring: dict[str, float] | None = None
    exporter: dict[str, Any] | None = None
    facts: dict[str, Any] | None = None
    requires: list[str] | None = None


def privacy_facts(per_unit: int, shares: dict[str, float], sums_steps: tuple[int, float] | None,
                  tables: int) -> dict[str, dict[str, Any]]:
    """Each release's epsilon, sensitivity and scale, consistent (relations 2 to 4): counts K,
    sums K x round(grid x clip_l1), votes K x T; scale = sensitivity / epsilon."""
    out = {}
    for name, eps in shares.items():
        facts: dict[str, Any] = {Key.EPSILON: eps}
        if name == Key.CLASS_COUNTS:
            sens = per_unit
        elif name == Key.CLASS_SUMS:
            grid, clip = sums_steps
            sens = per_unit * round(grid * clip)
            facts.update({Key.GRID: grid, Key.CLIP_L1: clip})
        else:
            sens = per_unit * tables
        facts.update({Key.SENSITIVITY_L1: sens, Key.NOISE_SCALE: sens / eps})
        out[name] = facts
    return out


def build_document(p: Params) -> dict[str, Any]:
    """The document of ``p``: every present field placed where `FIELDS` puts it, each map
    present when any of its fields is, array records in their stated dtypes. If the file would
    hold more map and array entries than its size allows (schema.BYTES_PER_VALUE), an
    ``exporter.padding`` string makes room (informational, so the document stays valid)."""
    flat: dict[str, Any] = {
        # The writer writes the newest minor of the fields present: 1.0 for these documents.
        "format": schema.FORMAT_NAME, "version": [1, 0], "requires": p.requires,
        "labels": p.labels, "label_descriptions": p.descriptions,
        **{f"privacy.{k}": v for k, v in p.privacy.items()},
        "subspace.origin": p.origin, "subspace.projection": p.projection, "hashing.hyperplanes": p.hyperplanes,
        "hashing.offsets": p.offsets, "hashing.seed": p.seed, "prior": p.prior,
        **{f"scoring.{k}": v for k, v in (p.scoring or {}).items()},
        "exporter": p.exporter,
        "encoder.format": p.encoder.format, "encoder.model": p.encoder.model,
        "encoder.family": None if p.encoder.family == schema.DEFAULT_FAMILY else p.encoder.family,
        "encoder.tokenizer_json": p.encoder.tokenizer_json, "encoder.dim": int(p.check_embedding.shape[0]),
        **{f"encoder.{k}": v for k, v in p.encoder_fields.items()},
        "encoder.check_embedding": p.check_embedding, "encoder.facts": p.facts, "encoder.weights": p.encoder.weights,
    }
    for name, facts in p.releases.items():
        flat.update({f"releases.{name}.{k}": v for k, v in facts.items()})
    flat = {k: v for k, v in flat.items() if v is not None}
    sections = {f.path for f in FIELDS if f.kind == "map" and not f.open and any(
        path.startswith(f.path + ".") for path in flat)}
    doc: dict[str, Any] = {}
    for f in FIELDS:
        if f.path in sections:
            value: Any = {}
        elif f.path in flat:
            value = flat[f.path]
            if f.kind == "ndarray":
                value = record(value, f.dtype)
        else:
            continue
        node = doc
        for key in f.parent.split(".") if f.parent else ():
            node = node[key]
        node[f.key] = value
    return _within_value_budget(_versioned(doc))


def _versioned(doc: dict[str, Any]) -> dict[str, Any]:
    """The version and ``requires`` the writer gives a document (runtime.bundle.writer): the
    newest minor of its fields, and every present listed field in requires."""
    present = [f for f in FIELDS if has_path(doc, f.path)]
    doc[Key.VERSION] = [1, max([0, *(f.since[1] for f in present if f.since is not None)])]
    missing = [f.path for f in present if f.listed and f.path not in doc.get(Key.REQUIRES, [])]
    if not missing:
        return doc
    drawn = doc.get(Key.REQUIRES, [])[:int(FIELDS_BY_PATH[Key.REQUIRES].high) - len(missing)]
    items = [(k, v) for k, v in doc.items() if k != Key.REQUIRES]
    return dict(items[:2] + [(Key.REQUIRES, [*drawn, *missing])] + items[2:])


def _within_value_budget(doc: dict[str, Any]) -> dict[str, Any]:
    n = entries(doc) + 1  # the digest entry
    size = len(seal(doc))
    room = size // schema.BYTES_PER_VALUE + schema.VALUE_ALLOWANCE
    if n <= room:
        return doc
    pad = (n - room + 4) * schema.BYTES_PER_VALUE
    exporter = {**doc.get(Key.EXPORTER, {}), "padding": " " * pad}
    # exporter comes right before encoder (FIELDS order): rebuild the top map in that order.
    out = {k: v for k, v in doc.items() if k not in (Key.EXPORTER, Key.ENCODER)}
    out[Key.EXPORTER] = exporter
    out[Key.ENCODER] = doc[Key.ENCODER]
    return out


#: Chosen symbols never exceed these together: one array of at most `BUDGET` bytes.
BUDGET = 256 * 1024


def bounded_ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.one_of(st.sampled_from(sorted({lo, hi})), st.integers(lo, hi))


def bounded_floats(lo: float, hi: float) -> st.SearchStrategy[float]:
    """Anywhere in [lo, hi], with both ends, their neighbours and -0.0 (when 0 is in range)."""
    edges = {lo, hi, math.nextafter(lo, math.inf), math.nextafter(hi, -math.inf)}
    if lo <= 0.0 <= hi:
        edges |= {0.0, -0.0, 5e-324}
    return st.one_of(st.sampled_from(sorted(e for e in edges if lo <= e <= hi)), st.floats(lo, hi))


#: Every finite float32 (subnormals and +-3.4028235e38 included), favouring the extremes.
_F4_MAX, _F4_TINY = float(np.finfo(np.float32).max), float(np.finfo(np.float32).smallest_subnormal)
F4 = st.one_of(st.floats(-_F4_MAX, _F4_MAX, width=32),
               st.sampled_from([_F4_MAX, -_F4_MAX, _F4_TINY, -_F4_TINY, 0.0, -0.0]))
#: Any character printable text may hold. The categories left out are unprintable but for a
#: few (noncharacters are unassigned, some format characters are): the filter has the last word.
PRINTABLE = st.characters(codec="utf-8", exclude_categories=("Cc", "Cs", "Co", "Zl", "Zp")).filter(
    lambda c: unprintable(c) is None)


def texts(lo: int, hi: int) -> st.SearchStrategy[str]:
    """Printable text of lo to hi characters: mostly short, sometimes exactly ``hi`` characters
    (rarely: the reader's text rules cost microseconds a character)."""
    short = st.text(PRINTABLE, min_size=lo, max_size=min(hi, 24))
    if hi <= 24:
        return short
    return st.integers(0, 15).flatmap(lambda i: st.builds(lambda c: c * hi, PRINTABLE) if i == 0 else short)


def visible(lo: int, hi: int) -> st.SearchStrategy[str]:
    """Text a label or description may be: printable, every code point assigned, showing something."""
    return texts(lo, hi).filter(lambda s: shows_something(s) and unassigned(s) is None)


def field_values(path: str) -> st.SearchStrategy[Any]:
    """Any value the table allows for a field that no relation constrains."""
    f = FIELDS_BY_PATH[path]
    if f.kind == "int":
        return bounded_ints(int(f.low), 2**64 - 1 if f.high is None else int(f.high))
    if f.kind == "float":
        return bounded_floats(float(f.low), float(f.high))
    if f.kind == "str":
        return st.sampled_from(f.choices) if f.choices else texts(int(f.low or 0), int(f.high))
    if f.kind == "strings":
        if f.choices:
            return st.permutations(f.choices).flatmap(lambda c: st.integers(max(1, int(f.low or 1)), int(f.high)).map(
                lambda n: list(c[:n])))
        lo, hi = int(f.low or 0), int(f.high)
        # a few items of any length, or exactly ``hi`` short ones
        return st.one_of(st.lists(texts(0, schema.MAX_TEXT_CHARS), min_size=lo, max_size=min(hi, 3)),
                         st.builds(lambda s: [s] * hi, texts(0, 8)))
    raise AssertionError(f"no generic values for {path} ({f.kind})")


#: Free informational values (exporter, encoder.facts): nil, booleans, integers, finite floats,
#: strings, arrays and maps (no binary data, no NaN or infinity: the format refuses them there too).
FREE_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**64 - 1),
                         st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))
FREE_VALUES = st.recursive(FREE_SCALARS, lambda kids: st.one_of(st.lists(kids, max_size=3),
                                                                st.dictionaries(st.text(max_size=6), kids, max_size=3)),
                           max_leaves=8)


def free_maps(canonical: bool) -> st.SearchStrategy[dict[str, Any] | None]:
    """An optional open map; a canonical document leaves out the empty one (the writer writes
    no empty map: test_bundle_properties has that case on its own)."""
    maps = st.dictionaries(st.text(max_size=8), FREE_VALUES, min_size=1 if canonical else 0, max_size=4)
    return st.one_of(st.none(), maps)


def unit_vector(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, np.float64)
    n = np.linalg.norm(v)
    if not np.isfinite(n) or n == 0.0:
        v, n = np.eye(len(v))[0], 1.0
    return v / n


@st.composite
def documents(draw, encoders: Sequence[EncoderBytes], budget: int = BUDGET, canonical: bool = False) -> dict:
    """A valid format-1.0 document (see the module doc). ``canonical``: exactly what the writer
    would write for its bundle (no ``requires``, no empty open maps, float64 floats), for the
    round trip."""
    enc = draw(st.sampled_from(list(encoders)))
    # Class statistics, vote tables or both (1.0); or class counts and a head (1.1).
    has_stats, has_votes, has_head = draw(st.sampled_from([(True, False, False), (False, True, False),
                                                           (True, True, False), (False, False, True)]))
    # The symbols of DIMS, each within its bounds, the arrays' bytes within the budget.
    _, c_lo, c_hi = schema.DIMS["C"]
    # Mostly a few classes, now and then up to the bound (4096 labels cost the reader a second).
    c = draw(st.integers(0, 15).flatmap(lambda i: bounded_ints(c_lo, min(c_hi, budget // 8)) if i == 0
                                        else st.integers(c_lo, 12)))
    d = draw(bounded_ints(1, min(schema.DIMS["D"][2], budget // (4 * c))))
    k = draw(bounded_ints(1, min(d, budget // (4 * d), budget // (4 * c)))) if has_stats else None
    t = h = None
    if has_votes:
        t = draw(bounded_ints(1, max(1, min(schema.DIMS["T"][2], budget // (4 * c), budget // (4 * d)))))
        h_cap = min(schema.DIMS["H"][2], int(math.log2(max(2, budget // (2 * t * c)))), max(1, budget // (4 * t * d)))
        h = draw(bounded_ints(1, max(1, h_cap)))
    # A head protects one record (relation "head").
    per_unit = 1 if has_head else draw(bounded_ints(1, schema.MAX_RECORDS_PER_UNIT))
    head = draw(head_facts()) if has_head else None
    # Epsilon: each release's share in bounds, the shares adding up to privacy.epsilon.
    names = [n for n, on in ((Key.CLASS_COUNTS, has_stats or has_head), (Key.CLASS_SUMS, has_stats),
                             (Key.VOTES, has_votes)) if on]
    total = draw(bounded_floats(schema.EPSILON_MIN * len(names), schema.EPSILON_MAX - (head or {}).get("epsilon", 0.0)))
    weights = [draw(st.floats(0.0, 1.0)) for _ in names]
    spare = total - schema.EPSILON_MIN * len(names)
    shares = {n: schema.EPSILON_MIN + spare * (w / sum(weights) if sum(weights) > 0 else 1 / len(names))
              for n, w in zip(names, weights)}
    steps = None
    if has_stats:  # K x round(grid x clip_l1) within the sensitivity bound, at least one step
        step_count = draw(bounded_ints(1, schema.MAX_SENSITIVITY // per_unit))
        grid = draw(bounded_ints(1, 2**31))
        clip = step_count / grid
        while round(grid * clip) != step_count:  # one ulp either way
            clip = math.nextafter(clip, math.inf if round(grid * clip) < step_count else -math.inf)
        steps = (grid, clip)
    releases = privacy_facts(per_unit, shares, steps, t or 0)
    for name, facts in releases.items():
        facts[Key.MECHANISM] = draw(field_values(f"releases.{name}.mechanism"))
    # Labels: distinct once folded. A few drawn freely, the rest numbered.
    free = draw(st.lists(visible(1, schema.MAX_LABEL_CHARS), min_size=min(c, 6), max_size=min(c, 6),
                         unique_by=label_key))
    labels = free + [f"class {i}" for i in range(len(free), c)]
    if len({label_key(x) for x in labels}) != c:  # a free label alike to a numbered one
        labels = [f"class {i}" for i in range(c)]
    descriptions = None
    if draw(st.booleans()):
        described = draw(st.lists(visible(1, schema.MAX_DESCRIPTION_CHARS), min_size=min(c, 3), max_size=min(c, 3)))
        descriptions = described + [f"the class numbered {i}" for i in range(len(described), c)]
    # fsum of the shares (one ulp past the bound is rounding: the relation's tolerance covers it)
    spent = math.fsum([*shares.values(), *([head["epsilon"]] if head else [])])
    delta = head["delta"] if head else draw(st.sampled_from([0.0, -0.0]))
    privacy: dict[str, Any] = {Key.EPSILON: min(spent, schema.EPSILON_MAX), Key.DELTA: delta,
                               Key.MAX_RECORDS_PER_UNIT: per_unit}
    # The unit's words follow from K (relation "wording"): record words only with K = 1.
    person = per_unit > 1 or draw(st.booleans())
    privacy[Key.PRIVACY_UNIT] = wording.privacy_unit(per_unit if person else None)
    privacy[Key.NEIGHBOUR_RELATION] = wording.neighbour_relation(per_unit if person else None,
                                                                 draw(texts(1, 40)) if person else "")
    for f in FIELDS:
        if f.parent == Key.PRIVACY and f.key not in privacy and (f.need == "required" or draw(st.booleans())):
            privacy[f.key] = draw(field_values(f.path))
    if Key.COMPOSITION in privacy:  # derived too (relation "composition")
        privacy[Key.COMPOSITION] = wording.composition(names, has_head, privacy.get(Key.BATCHES, 1))
    # Arrays: any finite float32, any integer of the dtype; the check embedding a unit vector.
    # A fill value and a few drawn elements each (hnp.arrays with ``fill``): large arrays stay
    # cheap to draw and to shrink.
    def f4(*shape: int) -> np.ndarray:
        return draw(hnp.arrays(np.float32, shape, elements=F4, fill=F4))

    def ints(dtype: Any, *shape: int) -> np.ndarray:
        info = np.iinfo(dtype)
        values = bounded_ints(int(info.min), int(info.max))
        return draw(hnp.arrays(dtype, shape, elements=values, fill=values))

    p = Params(encoder=enc, labels=labels, descriptions=descriptions, privacy=privacy, releases=releases,
               check_embedding=np.zeros(d), encoder_fields={})
    if has_stats:
        releases[Key.CLASS_COUNTS][Key.VALUES] = ints(np.int32, c)
        releases[Key.CLASS_SUMS][Key.VALUES] = ints(np.int32, c, k)
        p.origin, p.projection = f4(d), f4(k, d)
        p.scoring = {f.key: draw(field_values(f.path)) for f in FIELDS if f.parent == Key.SCORING}
        if descriptions is not None:
            p.prior = f4(c, d)
    if has_head:
        releases[Key.CLASS_COUNTS][Key.VALUES] = ints(np.int32, c)
        head[Key.MECHANISM] = draw(field_values("releases.head.mechanism"))
        head["accountant"] = draw(field_values("releases.head.accountant"))
        head.update(origin=f4(d), weights=f4(c, d), bias=f4(c))
        releases["head"] = head
    if has_votes:
        releases[Key.VOTES][Key.VALUES] = ints(np.int16, t, 2**h, c)
        p.hyperplanes = f4(t, h, d)
        p.offsets = f4(t, h) if draw(st.booleans()) else None
        p.seed = draw(st.one_of(st.none(), field_values("hashing.seed")))
    direction = unit_vector(draw(hnp.arrays(np.float64, d, elements=st.floats(-1, 1), fill=st.floats(-1, 1))))
    p.check_embedding = (direction * draw(st.floats(0.95, 1.05))).astype(np.float32)
    p.encoder_fields = {k2: draw(field_values(f"encoder.{k2}"))
                        for k2 in (Key.MAX_LENGTH, Key.TEXT_PREFIX, Key.INPUTS, Key.OUTPUT, Key.CHECK_TEXT)}
    p.exporter, p.facts = draw(free_maps(canonical)), draw(free_maps(canonical))
    if not canonical:
        p.requires = draw(st.one_of(st.none(), st.lists(st.sampled_from([f.path for f in FIELDS]), max_size=64)))
    return build_document(p)


@st.composite
def head_facts(draw) -> dict[str, Any]:
    """A head's privacy facts that hold together (1.1): sensitivity round(grid x clip_l2), noise
    scale multiplier x sensitivity, and an epsilon at or above the contract's bound for them."""
    steps_count = draw(bounded_ints(1, schema.MAX_SENSITIVITY))
    grid = draw(bounded_ints(1, 2**31))
    clip = steps_count / grid
    while round(grid * clip) != steps_count:  # one ulp either way
        clip = math.nextafter(clip, math.inf if round(grid * clip) < steps_count else -math.inf)
    z = draw(st.one_of(st.sampled_from([0.01, 1e6]), st.floats(0.3, 100.0)))
    q = draw(st.one_of(st.sampled_from([1e-9, 1.0]), st.floats(1e-4, 1.0)))
    steps = draw(st.one_of(st.sampled_from([1, 1_000_000]), st.integers(1, 3000)))
    delta = draw(st.one_of(st.sampled_from([1e-12, 1e-3]), st.floats(1e-12, 1e-3)))
    bound = head_epsilon(z, q, steps, delta)
    if bound * 10 >= schema.EPSILON_MAX / 2:  # more than any epsilon in bounds pays for: more noise
        z = 1e6
        bound = head_epsilon(z, q, steps, delta)
    eps = max(schema.EPSILON_MIN, bound * draw(st.floats(1.0, 10.0)))
    return {Key.EPSILON: eps, Key.DELTA: delta, "sensitivity_l2": steps_count, Key.NOISE_SCALE: z * steps_count,
            "noise_multiplier": z, "sample_rate": q, "steps": steps, Key.GRID: grid, "clip_l2": clip}


# --------------------------------------------------------------------------- mutations


class Nothing(Exception):
    """A mutation found nothing to change (the document lacks what it edits): it is skipped."""


class Chooser:
    """Where a mutation takes its choices from."""

    def integer(self, lo: int, hi: int) -> int:
        raise NotImplementedError

    def choice(self, seq: Sequence[Any]) -> Any:
        if not seq:
            raise Nothing
        return seq[self.integer(0, len(seq) - 1)]


class Draws(Chooser):
    """Choices drawn by Hypothesis (so a failing input shrinks)."""

    def __init__(self, draw: Callable[[st.SearchStrategy[Any]], Any]):
        self.draw = draw

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def choice(self, seq: Sequence[Any]) -> Any:
        if not seq:
            raise Nothing
        return self.draw(st.sampled_from(list(seq)))


class Dice(Chooser):
    """Choices from a seeded random.Random (the atheris target's custom mutator)."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)


Path = tuple[Any, ...]


def paths(v: Any, prefix: Path = ()) -> list[Path]:
    """Every position in a document: map keys and array indices, depth first."""
    out: list[Path] = []
    if isinstance(v, Pairs):  # already hostile: a leaf for later mutations
        return out
    items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
    for k, x in items:
        out.append(prefix + (k,))
        if isinstance(x, (dict, list)) and not isinstance(x, Pairs) and len(out) < 4000:
            out.extend(paths(x, prefix + (k,)))
    return out


def _at(doc: Any, path: Path) -> Any:
    for k in path:
        doc = doc[k]
    return doc


def _set(doc: Any, path: Path, value: Any) -> None:
    _at(doc, path[:-1])[path[-1]] = value


def _schema_path(path: Path) -> str:
    """The dotted field path of a document position ("labels" for labels[3])."""
    return ".".join(str(k) for k in path if isinstance(k, str))


#: Values of every msgpack kind, for retyping.
OTHER_VALUES = [None, True, False, 0, -1, 1, 2**31, 2**64 - 1, -2**63, 0.5, -0.0, F32(1.5), "", "x", "dpedge",
                b"", b"\x00" * 4, [], [1, 2], ["input_ids"], {}, {"a": 1},
                {Key.DTYPE: "<f4", Key.SHAPE: [1], Key.DATA: b"\0\0\x80\x3f"}]
#: Container and string headers that declare more than follows, reserved and odd bytes.
LYING_HEADERS = [b"\xdd\xff\xff\xff\xff", b"\xdd\x00\x01\x86\xa0", b"\xdd\x00\x01\x86\xa1", b"\xdf\x7f\xff\xff\xff",
                 b"\xde\xff\xff", b"\xdb\xff\xff\xff\xff", b"\xc6\x7f\xff\xff\xf6", b"\xc5\xff\xff", b"\xc1",
                 b"\xd9\x02\xff\xfe", b"\xc7\x00\x05", b"\xd6\xff\x00\x00\x00\x01", b"\xd7\x00" + bytes(8),
                 b"\x92\xc0", b"\x81\xc0\xc0", b"\x81\x01\xc0", b"\x81\xc4\x01k\xc0"]
#: Twins of a label: invisible, compatibility and combining characters, and unprintable ones.
TWINS: list[Callable[[str], str]] = [
    lambda s: s + "\u200b", lambda s: "\u00ad" + s, lambda s: s.upper().translate({i: i + 0xFEE0 for i in range(0x21, 0x7F)}),
    lambda s: s + "\U000e0041", lambda s: "\u202e" + s, lambda s: s + "\u0301", lambda s: s + "\x1b[2J",
    lambda s: "\ufeff" + s, lambda s: s.replace("a", "\u0430"), lambda s: "\u200b\u200c", lambda s: " ",
]


def _replace(doc: dict, p: Path, new: Any) -> Any:
    """Put ``new`` at ``p``; returns the new root when ``p`` is the root."""
    if not p:
        return new
    _set(doc, p, new)
    return None


def _maps(doc: Any) -> list[Path]:
    return [()] + [p for p in paths(doc) if isinstance(_at(doc, p), dict)]


def _drop(doc: dict, ch: Chooser) -> None:
    p = ch.choice(paths(doc))
    parent = _at(doc, p[:-1])
    del parent[p[-1]]


def _retype(doc: dict, ch: Chooser) -> None:
    _set(doc, ch.choice(paths(doc)), copy.deepcopy(ch.choice(OTHER_VALUES)))


def _out_of_bounds(doc: dict, ch: Chooser) -> None:
    """A field of the table just past one of its bounds, or an array record made inconsistent."""
    candidates = [p for p in paths(doc) if _schema_path(p) in FIELDS_BY_PATH and isinstance(p[-1], str)]
    p = ch.choice(candidates)
    f, v = FIELDS_BY_PATH[_schema_path(p)], _at(doc, p)
    if f.kind == "ndarray" and isinstance(v, dict) and isinstance(v.get(Key.SHAPE), list) \
            and isinstance(v.get(Key.DATA), bytes):  # (bytes(n) of an integer n would allocate n bytes)
        shape = list(v[Key.SHAPE])
        how = ch.integer(0, 5)
        if how == 0 and shape:
            shape[ch.integer(0, len(shape) - 1)] = ch.choice([0, 1, 2, 3, 5, 4097, 2**24, 2**31, 2**63, 2**64 - 1])
            v[Key.SHAPE] = shape
        elif how == 1:
            v[Key.DATA] = bytes(v[Key.DATA])[:-1] if ch.integer(0, 1) else bytes(v[Key.DATA]) + b"\0"
        elif how == 2:
            v[Key.DTYPE] = ch.choice([">f4", "<f8", "f4", "<i4", "<i2", "<u2", "|b1", "<f2", "<c8", "O", ""])
        elif how == 3:
            v[Key.SHAPE] = ch.choice([shape + [1], shape[:-1], [float(n) for n in shape], [-1] + shape[1:], []])
        elif how == 4:
            v["extra"] = 1
        else:
            v[Key.DATA] = bytes(v[Key.DATA])[::-1]
        return
    if f.kind == "int":
        value: Any = ch.choice([int(f.low) - 1, min(int(f.high) + 1, 2**64 - 1), -2**63, 2**64 - 1])
    elif f.kind == "float":
        value = ch.choice([math.nextafter(f.low, -math.inf), math.nextafter(f.high, math.inf), -1e308, 1e308, 5e-324
                           if f.high == 0 else -5e-324])
    elif f.kind in ("str", "strings") and (f.high is not None or f.choices or f.text):
        over = int(f.high) + 1 if f.high is not None else (schema.MAX_LABEL_CHARS + 1 if f.text == "label" else 10_001)
        item = "x" * (over if f.kind == "str" else min(over, schema.MAX_TEXT_CHARS + 1))
        value = ch.choice([item, "not-a-choice", ""]) if f.kind == "str" else ch.choice(
            [[item], ["y"] * (over if f.high else 1), [], ["input_ids", "input_ids"], ["pixel_values"]])
    elif f.kind == "bin":
        value = ch.choice([b"", bytes(31), bytes(33)])
    else:
        value = ch.choice(OTHER_VALUES)
    _set(doc, p, value)


def _non_finite(doc: dict, ch: Chooser) -> None:
    """NaN or an infinity in a float field or inside a float32 array."""
    # (an array record only if its data is still bytes: bytearray(n) of an integer n would
    # allocate n bytes)
    spots = [p for p in paths(doc) if isinstance(_at(doc, p), float)
             or (isinstance(_at(doc, p), dict) and _at(doc, p).get(Key.DTYPE) == "<f4"
                 and isinstance(_at(doc, p).get(Key.DATA), bytes))]
    if not spots:
        return
    p = ch.choice(spots)
    bad = ch.choice([math.nan, math.inf, -math.inf])
    v = _at(doc, p)
    if isinstance(v, dict):
        a = bytearray(v[Key.DATA])
        if len(a) >= 4:
            i = 4 * ch.integer(0, len(a) // 4 - 1)
            a[i:i + 4] = struct.pack("<f", bad)
            v[Key.DATA] = bytes(a)
    else:
        _set(doc, p, ch.choice([bad, F32(bad)]))


def _repeat_key(doc: dict, ch: Chooser) -> None:
    """A map that says one of its keys twice (with the same or another value)."""
    p = ch.choice([m for m in _maps(doc) if _at(doc, m)])
    items = list(_at(doc, p).items())
    k, v = ch.choice(items)
    items.insert(ch.integer(0, len(items)), (k, v if ch.integer(0, 1) else copy.deepcopy(ch.choice(OTHER_VALUES))))
    return _replace(doc, p, Pairs(items))


def _nest(doc: dict, ch: Chooser) -> None:
    """A value nested around the container depth limit (32), msgpack's (1024) or far past."""
    depth = ch.choice([schema.MAX_DEPTH - 2, schema.MAX_DEPTH - 1, schema.MAX_DEPTH, schema.MAX_DEPTH + 1, 100, 1023,
                       1024, 1025, 100_000])
    unit = ch.choice([b"\x91", b"\x81\xa1k", b"\xdc\x00\x01"])
    _set(doc, ch.choice(paths(doc)), Raw(unit * depth + b"\xc0"))


def _splice(doc: dict, ch: Chooser) -> None:
    """Raw msgpack where a value was: a lying header, an extension type, a non-string key."""
    _set(doc, ch.choice(paths(doc)), Raw(ch.choice(LYING_HEADERS)))


def _odd_key(doc: dict, ch: Chooser) -> None:
    """A key the map should not have: unknown (anywhere in it), non-string, or a known one moved."""
    p = ch.choice(_maps(doc))
    items = list(_at(doc, p).items())
    how = ch.integer(0, 2)
    if how == 0:
        items.insert(ch.integer(0, len(items)), (ch.choice(["future", "histogram", "weights", "sha256", "", "a.b"]),
                                                 copy.deepcopy(ch.choice(OTHER_VALUES))))
    elif how == 1:
        items.insert(ch.integer(0, len(items)), (ch.choice([0, b"k", None, 1.5, True]), 1))
    elif items:
        moved = items.pop(ch.integer(0, len(items) - 1))
        items.insert(ch.integer(0, len(items)), moved)
    return _replace(doc, p, Pairs(items) if how == 1 else dict(items))


def _version(doc: dict, ch: Chooser) -> None:
    doc[Key.VERSION] = copy.deepcopy(ch.choice([[1, 1], [1, 2**31 - 1], [1, 2**31], [2, 0], [0, 9], [4, 0], [1], [1, 0, 0],
                                                "1.0", [1, -1], [True, 0], [1.0, 0], None]))


def _lookalike(doc: dict, ch: Chooser) -> None:
    """A label or description replaced by a twin of another (or by something unprintable)."""
    for key in (Key.LABELS, Key.LABEL_DESCRIPTIONS):
        texts_ = doc.get(key)
        if isinstance(texts_, list) and len(texts_) >= 2 and all(isinstance(x, str) for x in texts_):
            i, j = ch.integer(0, len(texts_) - 1), ch.integer(0, len(texts_) - 1)
            texts_[i] = ch.choice(TWINS)(texts_[j])
            return


def _drift(doc: dict, ch: Chooser) -> None:
    """One privacy fact nudged: the statements no longer (or only just) agree."""
    spots = [p for p in paths(doc) if p[:1] in ((Key.PRIVACY,), (Key.RELEASES,)) and isinstance(_at(doc, p), (int, float))
             and not isinstance(_at(doc, p), bool)]
    if spots:
        p = ch.choice(spots)
        v = _at(doc, p)
        factor = ch.choice([1 + 1e-10, 1 - 1e-8, 2.0, 0.5, 1e6, -1.0])
        _set(doc, p, int(v * factor) + ch.choice([0, 1]) if isinstance(v, int) else v * factor)


def _json(doc: dict, ch: Chooser) -> None:
    """A JSON-level edit of the tokenizer.json: a node retyped, wrapped, dropped or added."""
    enc = doc.get(Key.ENCODER)
    if not (isinstance(enc, dict) and isinstance(enc.get(Key.TOKENIZER_JSON), str)):
        return
    try:
        tok = json.loads(enc[Key.TOKENIZER_JSON])
    except ValueError:
        return
    spots = [p for p in paths(tok) if p[:2] != ("model", "vocab") or len(p) == 2] or [()]
    p = ch.choice(spots)
    how = ch.integer(0, 3)
    if how == 0 and p:
        _set(tok, p, copy.deepcopy(ch.choice([None, True, 0, -1, 10**30, 1.5, "", "[UNK]", [], {}, [1], {"type": "x"}])))
    elif how == 1 and p:
        _set(tok, p, [_at(tok, p)] if ch.integer(0, 1) else {"type": _at(tok, p)})
    elif how == 2 and p:
        del _at(tok, p[:-1])[p[-1]]
    else:
        parent = _at(tok, p[:-1]) if p else tok
        if isinstance(parent, dict):
            parent[ch.choice(["type", "x", "pattern", "vocab", "normalizers"])] = ch.choice([None, {}, [], "Split"])
    text = json.dumps(tok)
    enc[Key.TOKENIZER_JSON] = ch.choice([text, text.replace('"type"', '"type": 1, "type"', 1), text[:-1], text + "NaN"])


def _model_bytes(doc: dict, ch: Chooser) -> None:
    """The encoder's model bytes flipped, cut, grown or an aligned int32 set to an edge (a
    protobuf or flatbuffer made odd)."""
    enc = doc.get(Key.ENCODER)
    if not (isinstance(enc, dict) and isinstance(enc.get(Key.MODEL), bytes) and enc[Key.MODEL]):
        return
    m = bytearray(enc[Key.MODEL])
    for _ in range(ch.integer(1, 4)):
        at = ch.integer(0, len(m) - 1)
        how = ch.integer(0, 4)
        if how == 0:
            m[at] ^= 1 << ch.integer(0, 7)
        elif how == 1:
            del m[at:at + ch.integer(1, 16)]
        elif how == 2:
            m[at:at] = ch.choice([b"\xff", b"\x80" * 10, b"\x00", b"\x7f\xff\xff\xff", b"\x3a\x05Loop0"])
        elif how == 3:
            m[at] = ch.choice([0x00, 0xff, 0x7f, 0x80])
        else:  # an aligned int32 (a flatbuffer's tensor index, offset or length) at an edge: -1 is "left out"
            at -= at % 4
            m[at:at + 4] = struct.pack("<i", ch.choice([-1, -2, 2**31 - 1, 1]))[:len(m) - at]
        if not m:
            break
    enc[Key.MODEL] = bytes(m)


DOCUMENT_MUTATIONS: dict[str, Callable[[dict, Chooser], None]] = {
    "drop": _drop, "retype": _retype, "out of bounds": _out_of_bounds, "non-finite": _non_finite,
    "repeated key": _repeat_key, "nesting": _nest, "raw msgpack": _splice, "odd key": _odd_key, "version": _version,
    "look-alike": _lookalike, "privacy drift": _drift, "tokenizer json": _json, "model bytes": _model_bytes,
}
#: How the mutated document becomes bytes: sealed as the writer does, or damaged after.
ENDINGS = ("seal", "seal", "seal", "seal", "seal", "seal", "truncate", "truncate and reseal", "flip", "flip and reseal", "trailing bytes")


def mutate(doc: dict[str, Any], ch: Chooser, count: int | None = None,
           ending: str | None = None) -> tuple[str, bytes]:
    """One hostile input from a (valid) document: one to three document mutations (``count``
    of them when given), then an ending (``ending`` when given: "seal" keeps the file whole, so
    that two faults meet in one sealed file). Returns (a short description, the bytes). ``doc``
    is not changed."""
    doc: Any = copy.deepcopy(doc)
    done = []
    want = ch.integer(1, 3) if count is None else count
    for _ in range(want if count is None else 4 * count):  # with a count, tries until that many took
        if not isinstance(doc, dict) or len(done) == want:  # the root became pairs: it is sealed as it is
            break
        name = ch.choice(list(DOCUMENT_MUTATIONS))
        try:
            new = DOCUMENT_MUTATIONS[name](doc, ch)
        except (Nothing, LookupError, TypeError, AttributeError):
            continue  # nothing of what it edits is left (an earlier mutation, or a fuzzer's document)
        doc = doc if new is None else new
        done.append(name)
    blob = seal(doc)
    ending = ch.choice(ENDINGS) if ending is None else ending
    head = blob[:-TAIL_BYTES]
    if ending == "truncate":
        blob = blob[:ch.integer(0, len(blob) - 1)]
    elif ending == "truncate and reseal":
        blob = reseal(head[:ch.integer(0, len(head) - 1)])
    elif ending in ("flip", "flip and reseal"):
        data = bytearray(head if ending == "flip and reseal" else blob)
        for _ in range(ch.integer(1, 8)):
            data[ch.integer(0, len(data) - 1)] ^= 1 << ch.integer(0, 7)
        blob = reseal(bytes(data)) if ending == "flip and reseal" else bytes(data)
    elif ending == "trailing bytes":
        blob = blob + ch.choice([b"\x00", b"\xc0", blob[-TAIL_BYTES:]])
    return f"{' + '.join(done)}; {ending}", blob
