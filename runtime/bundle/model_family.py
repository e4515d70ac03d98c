"""The model family: what an encoder's ONNX or TFLite bytes may contain, checked before an engine loads them.

An inference engine runs whatever graph it is given: an ONNX ``Loop`` of 1e12 iterations or a
TFLite ``WHILE`` hangs the load, an initializer with external data could make onnxruntime read
any file it names, custom operators run code the bundle names. The exporter writes one family of encoders (exporter/encoder_export.py and
tflite_export.py), so a reader accepts that family only:

- ONNX: inputs left out (an empty name) only where `schema.ONNX_OPTIONAL_INPUTS` allows;
  operators of the encoder's family only (`schema.FAMILY_ONNX_OPS`: the common set, which
  the exporter's int8 all-MiniLM-L6-v2 uses exactly, and for ``encoder.family`` mpnet the eight
  its relative positions add), no subgraphs (no attribute holds a graph), no model-local functions or training
  info, no sparse initializers, and external data only in initializers and only in the
  bundle's form (a placeholder location and fixed-width ranges inside ``encoder.weights``), so
  no engine is ever pointed at a file but the bundle;
- TFLite: the BERT family only; one subgraph, builtin operators of `schema.TFLITE_OPS` only (no custom operators),
  no buffer stored outside the flatbuffer, tensor and signature names in UTF-8, every tensor
  index of an operator or of the subgraph one of the subgraph's tensors (an input left out, -1,
  only where `schema.TFLITE_OPTIONAL_INPUTS` allows it: LiteRT passes an omitted input to the
  kernel, and a kernel that needs it reads memory that is not a tensor), and none of the fields of
  `schema.TFLITE_ABSENT_FIELDS` (variable tensors, sparse tensors, custom options: a tensor
  marked variable is kept across runs by LiteRT, and kernels that never expect one crash on it).

Both parsers are this module's own (about 200 lines together) rather than the ``onnx``
package (31 MiB installed, plus protobuf) or LiteRT's generated flatbuffer schema (1 MiB of
Python, 0.23 s to import, no bounds checks): a device's bare install has neither, and a parser
that walks only the fields the check needs can bound every length against the bytes present
(docs/reliability.md section 5 has the measurements). A malformed model is refused here with
one `BundleError`; anything the parsers accept that an engine then cannot load is still
refused by the engine (runtime/onnx_engine.py, runtime/tflite_engine.py).

Example:
    >>> check_onnx(b"\\x08", 0)
    Traceback (most recent call last):
    ...
    runtime.errors.BundleError: field 'encoder.model' is not a valid ONNX model: varint cut short at byte 1
"""

from __future__ import annotations

import functools
import struct
from typing import Iterator

from dataclasses import dataclass

from runtime.bundle.schema import (DEFAULT_FAMILY, FAMILY_FORMATS, FAMILY_ONNX_OPS, MAX_ONNX_NODES,
                                   MAX_TFLITE_OPERATORS, NUMBER_DIGITS, ONNX_DOMAINS, ONNX_OPTIONAL_INPUTS, TFLITE_OPS,
                                   TFLITE_ABSENT_FIELDS, TFLITE_OPTIONAL_INPUTS, WEIGHTS_LOCATION)
from runtime.contract import schema as _contract
from runtime.errors import BundleError

FIELD = "encoder.model"


@dataclass(frozen=True)
class ExternalRef:
    """Where an initializer's data is: ``offset`` and ``length`` within encoder.weights, and
    the byte positions of its location and offset strings inside the model (an engine that maps
    the bundle file rewrites them in place, at the same length: runtime.onnx_engine)."""

    location_at: int
    offset_at: int
    offset: int
    length: int


class _Bad(Exception):
    """Internal: the bytes are not a well-formed model (becomes one BundleError)."""


class _Refused(Exception):
    """Internal: a well-formed model outside the family (becomes one BundleError)."""


# --------------------------------------------------------------------------- ONNX (protobuf)
# Field numbers of onnx.proto (tests/test_hostile_bundles.py compares them with the onnx
# package's own descriptors). Protobuf merges repeated occurrences of a message field, so every
# occurrence of a field is checked, not only the last.

_MODEL_GRAPH, _MODEL_OPSET, _MODEL_TRAINING, _MODEL_FUNCTIONS = 7, 8, 20, 25
_OPSET_DOMAIN = 1
_GRAPH_NODE, _GRAPH_INITIALIZER, _GRAPH_SPARSE = 1, 5, 15
_NODE_INPUT, _NODE_OP_TYPE, _NODE_ATTRIBUTE, _NODE_DOMAIN = 1, 4, 5, 7
_ATTR_T, _ATTR_G, _ATTR_TENSORS, _ATTR_GRAPHS, _ATTR_SPARSE, _ATTR_SPARSES = 5, 6, 10, 11, 22, 23
_TENSOR_RAW_DATA, _TENSOR_EXTERNAL_DATA, _TENSOR_DATA_LOCATION = 9, 13, 14
_EXTERNAL = 1  # TensorProto.DataLocation.EXTERNAL


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end:
            raise _Bad(f"varint cut short at byte {pos}")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift >= 70:
            raise _Bad(f"varint longer than 10 bytes at byte {pos}")


def _fields(buf: bytes, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, value start, value end or varint value) of one message. A
    varint of one byte (nearly every key and length) is read inline, `_varint` reads the rest."""
    pos = start
    while pos < end:
        key = buf[pos]
        if key < 0x80:
            pos += 1
        else:
            key, pos = _varint(buf, pos, end)
        field, wire = key >> 3, key & 7
        if field == 0:
            raise _Bad(f"field number 0 at byte {pos}")
        if wire == 0:
            if pos < end and buf[pos] < 0x80:
                value, pos = buf[pos], pos + 1
            else:
                value, pos = _varint(buf, pos, end)
            yield field, wire, value, value
        elif wire == 1 or wire == 5:
            size = 8 if wire == 1 else 4
            if pos + size > end:
                raise _Bad(f"fixed-size field cut short at byte {pos}")
            yield field, wire, pos, pos + size
            pos += size
        elif wire == 2:
            if pos < end and buf[pos] < 0x80:
                size, pos = buf[pos], pos + 1
            else:
                size, pos = _varint(buf, pos, end)
            if size > end - pos:
                raise _Bad(f"length {size} at byte {pos} runs past the end of its message")
            yield field, wire, pos, pos + size
            pos += size
        else:  # 3, 4: groups (never in ONNX), 6, 7: invalid
            raise _Bad(f"wire type {wire} at byte {pos}")


def _not_a_message(field: int, wire: int) -> _Bad:
    return _Bad(f"field {field} has wire type {wire}, expected a message")


def _messages(buf: bytes, start: int, end: int, field: int) -> Iterator[tuple[int, int]]:
    for f, wire, a, b in _fields(buf, start, end):
        if f == field:
            if wire != 2:
                raise _not_a_message(field, wire)
            yield a, b


def _string(buf: bytes, start: int, end: int, field: int) -> str:
    """The last occurrence of a string field (protobuf's rule for singular scalars), "" if absent."""
    value = b""
    for a, b in _messages(buf, start, end, field):
        value = buf[a:b]
    return _text(value, field)


def _text(value: bytes, field: int) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise _Bad(f"field {field} is not UTF-8") from None


def _entry(buf: bytes, start: int, end: int) -> tuple[str, str, int]:
    """A StringStringEntryProto: its key, its value and where the value's bytes start (each once)."""
    found: dict[int, tuple[int, int]] = {}
    for f, wire, a, b in _fields(buf, start, end):
        if f in (1, 2):
            if wire != 2 or f in found:
                raise _Bad("an external-data entry repeats its key or value, or is not a string")
            found[f] = (a, b)
    if len(found) != 2:
        raise _Bad("an external-data entry lacks its key or value")
    try:
        key, value = (buf[a:b].decode("utf-8") for a, b in (found[1], found[2]))
    except UnicodeDecodeError:
        raise _Bad("an external-data entry is not UTF-8") from None
    return key, value, found[2][0]


def _onnx_tensor(buf: bytes, start: int, end: int, what: str, refs: list[ExternalRef] | None) -> None:
    """An inline tensor; or, where ``refs`` is given (graph initializers), one whose data is in
    ``encoder.weights`` in exactly the bundle's form (docs/bundle-format.md, "The ONNX encoder"):
    data_location EXTERNAL and the entries location, offset, length, in that order."""
    entries, external, raw = [], False, False
    for f, wire, a, b in _fields(buf, start, end):
        if f == _TENSOR_EXTERNAL_DATA:
            entries.append(_entry(buf, a, b))
        elif f == _TENSOR_DATA_LOCATION and wire == 0 and a == _EXTERNAL:
            external = True
        raw = raw or f == _TENSOR_RAW_DATA
    if not entries and not external:
        return
    if refs is None:
        raise _Refused(f"{what} keeps its data outside the graph, which only initializers may")
    keys = [e[0] for e in entries]
    if not external or raw or keys != ["location", "offset", "length"]:
        raise _Refused(f"{what} has external data {keys[:4]} (data_location {'EXTERNAL' if external else 'DEFAULT'}); "
                       f"the family's are exactly location, offset, length")
    (_, location, location_at), (_, offset, offset_at), (_, length, _) = entries
    if location != WEIGHTS_LOCATION or not all(len(x) == NUMBER_DIGITS and x.isdigit() and x.isascii()
                                               for x in (offset, length)):
        raise _Refused(f"{what} names external data {location[:40]!r} at {offset[:24]!r}, {length[:24]!r}: the "
                       f"family's location is the weights placeholder and its offset and length "
                       f"{NUMBER_DIGITS}-digit numbers")
    refs.append(ExternalRef(location_at, offset_at, int(offset), int(length)))


def _onnx_graph(buf: bytes, start: int, end: int, counts: list[int], refs: list[ExternalRef],
                ops: frozenset[tuple[str, str]]) -> None:
    for f, wire, a, b in _fields(buf, start, end):
        if f in (_GRAPH_NODE, _GRAPH_INITIALIZER, _GRAPH_SPARSE):
            counts[0] += 1
            if counts[0] > MAX_ONNX_NODES:
                raise _Refused(f"the graph has more than {MAX_ONNX_NODES} nodes and initializers")
            if wire != 2:
                raise _Bad(f"graph field {f} has wire type {wire}, expected a message")
        if f == _GRAPH_SPARSE:
            raise _Refused("the graph has a sparse initializer (the encoder family has none)")
        if f == _GRAPH_INITIALIZER:
            _onnx_tensor(buf, a, b, "an initializer", refs)
        elif f == _GRAPH_NODE:
            _onnx_node(buf, a, b, ops)


def _onnx_node(buf: bytes, start: int, end: int, ops: frozenset[tuple[str, str]]) -> None:
    """One node in one pass over its fields, judged in the order of four: its op_type (the last
    occurrence, as `_string`), its domain, each attribute in turn, then its inputs left out (an
    empty name: only where `schema.ONNX_OPTIONAL_INPUTS` allows); so a node with several faults
    is refused for the same one, with the same message, as by separate passes."""
    op_at = domain_at = (0, 0)
    domain_wire: int | None = None  # the wire type of the first domain field that is not a string
    attributes: list[tuple[int, int, int]] = []
    left_out: list[int] = []  # positions of the inputs with an empty name
    inputs = 0
    for f, wire, a, b in _fields(buf, start, end):
        if f == _NODE_INPUT:
            if wire == 2 and a == b:
                left_out.append(inputs)
            inputs += 1
        elif f == _NODE_OP_TYPE:
            if wire != 2:
                raise _not_a_message(f, wire)
            op_at = (a, b)
        elif f == _NODE_DOMAIN:
            if wire != 2:
                domain_wire = wire if domain_wire is None else domain_wire
            elif domain_wire is None:
                domain_at = (a, b)
        elif f == _NODE_ATTRIBUTE:
            attributes.append((wire, a, b))
    op = _text(buf[op_at[0]:op_at[1]], _NODE_OP_TYPE)
    if domain_wire is not None:
        raise _not_a_message(_NODE_DOMAIN, domain_wire)
    domain = _text(buf[domain_at[0]:domain_at[1]], _NODE_DOMAIN)
    if (domain, op) not in ops and ("" if domain == "ai.onnx" else domain, op) not in ops:
        shown = f"{domain}.{op}" if domain else op
        raise _Refused(f"operator {shown[:80]!r} is not one the encoder family uses")
    for wire, a, b in attributes:
        if wire != 2:
            raise _not_a_message(_NODE_ATTRIBUTE, wire)
        for f, _, x, y in _fields(buf, a, b):
            if f in (_ATTR_G, _ATTR_GRAPHS):
                raise _Refused(f"operator {op!r} has a subgraph attribute (control flow is not in the family)")
            if f in (_ATTR_SPARSE, _ATTR_SPARSES):
                raise _Refused(f"operator {op!r} has a sparse tensor attribute")
            if f in (_ATTR_T, _ATTR_TENSORS):
                _onnx_tensor(buf, x, y, f"an attribute tensor of operator {op!r}", None)
    optional = ONNX_OPTIONAL_INPUTS.get(("" if domain == "ai.onnx" else domain, op), frozenset())
    for position in left_out:
        if position not in optional:
            raise _Refused(f"operator {op!r} leaves its input {position} out (an empty name), which the encoder "
                           "family allows only for " + ", ".join(f"{o}'s input " + " or ".join(map(str, sorted(p)))
                                                                 for (_, o), p in ONNX_OPTIONAL_INPUTS.items()))


def check_onnx(model: bytes, weights_bytes: int, family: str = DEFAULT_FAMILY) -> list[ExternalRef]:
    """Refuse ONNX bytes outside the encoder family ``family`` (see the module doc); returns where
    the initializers' external data is, each range inside the ``weights_bytes`` of encoder.weights."""
    if type(model) is bytes:  # immutable: the reader's check and the engine's load share one answer
        return list(_check_onnx_bytes(model, weights_bytes, family))
    return _check_onnx(model, weights_bytes, family)


@functools.lru_cache(maxsize=2)
def _check_onnx_bytes(model: bytes, weights_bytes: int, family: str) -> tuple[ExternalRef, ...]:
    """`_check_onnx` remembered for the last two models that passed (a pure function of immutable
    arguments; a refusal is raised again each time): the reader checks a model and the engine
    then asks where its weights are, and the walk over its protobuf costs 10 to 20 ms."""
    return tuple(_check_onnx(model, weights_bytes, family))


def _check_onnx(model: bytes, weights_bytes: int, family: str) -> list[ExternalRef]:
    ops = FAMILY_ONNX_OPS[family]
    buf = bytes(model)  # indexing bytes is faster than a memoryview (and a slice copies either way)
    refs: list[ExternalRef] = []
    try:
        graphs = 0
        counts = [0]
        for f, wire, a, b in _fields(buf, 0, len(buf)):
            if f == _MODEL_FUNCTIONS:
                raise _Refused("the model defines its own functions (the encoder family has none)")
            if f == _MODEL_TRAINING:
                raise _Refused("the model carries training graphs (the encoder family has none)")
            if f == _MODEL_OPSET:
                if wire != 2:
                    raise _Bad(f"opset_import has wire type {wire}")
                domain = _string(buf, a, b, _OPSET_DOMAIN)
                if domain not in ONNX_DOMAINS:
                    raise _Refused(f"operator set domain {domain[:80]!r} is not one the encoder family uses")
            if f == _MODEL_GRAPH:
                if wire != 2:
                    raise _Bad(f"graph has wire type {wire}")
                graphs += 1
                _onnx_graph(buf, a, b, counts, refs, ops)
        if graphs != 1:
            raise _Bad(f"it has {graphs} graphs, not one")
        for r in refs:
            if r.offset + r.length > weights_bytes:
                raise _Refused(f"an initializer's external data ends at byte {r.offset + r.length}, past the "
                               f"{weights_bytes} bytes of encoder.weights")
    except _Bad as exc:
        raise BundleError("model.family", FIELD, f"field '{FIELD}' is not a valid ONNX model: {exc}") from None
    except _Refused as exc:
        raise BundleError("model.family", FIELD, f"field '{FIELD}' is outside the ONNX encoder family: {exc}") from None
    return refs


# --------------------------------------------------------------------------- TFLite (flatbuffer)
# Table field indices of tensorflow/lite/schema/schema.fbs (checked against LiteRT's generated
# schema in the tests).

_M_OPCODES, _M_SUBGRAPHS, _M_BUFFERS, _M_SIGNATURES = 1, 2, 4, 7
_OC_DEPRECATED, _OC_CUSTOM, _OC_BUILTIN = 0, 1, 3
_SG_TENSORS, _SG_INPUTS, _SG_OUTPUTS, _SG_OPERATORS = 0, 1, 2, 3
_OP_OPCODE_INDEX, _OP_INPUTS, _OP_OUTPUTS = 0, 1, 2
_T_NAME = 3
_B_OFFSET, _B_SIZE = 1, 2
_SIG_INPUTS, _SIG_OUTPUTS, _SIG_KEY = 0, 1, 2
_TM_NAME = 0
#: Vectors the check iterates, bounded before it does (format/1/schema.json "tflite"; the
#: exporter's model: 25 operator codes, 1 subgraph, 1 signature with 1 input and 1 output).
_MOST_CODES, _MOST_SUBGRAPHS, _MOST_SIGNATURES, _MOST_SIGNATURE_TENSORS = (
    _contract()["tflite"][k] for k in ("max_operator_codes", "max_subgraphs", "max_signatures", "max_signature_tensors"))
_TFLITE_NAMES = {code: name for name, code in TFLITE_OPS.items()}


class _Flat:
    """Bounds-checked reads of a flatbuffer: every offset and length is checked against the bytes."""

    def __init__(self, data: bytes):
        self.b = data
        self.n = len(data)
        #: Bytes of strings and index vectors read so far: flatbuffers let many tables share one,
        #: so a small model could make the walk read gigabytes; it reads at most its own size.
        self.read = 0

    def _u(self, fmt: str, pos: int) -> int:
        size = struct.calcsize(fmt)
        if not 0 <= pos <= self.n - size:
            raise _Bad(f"offset {pos} is outside the {self.n} bytes")
        return struct.unpack_from(fmt, self.b, pos)[0]

    def root(self) -> int:
        return self._u("<I", 0)

    def field(self, table: int, index: int) -> int | None:
        """Absolute position of a table's field, None when absent."""
        vtable = table - self._u("<i", table)
        vsize = self._u("<H", vtable)
        if vsize < 4 or vsize % 2:
            raise _Bad(f"vtable at {vtable} has size {vsize}")
        if 4 + 2 * index >= vsize:
            return None
        rel = self._u("<H", vtable + 4 + 2 * index)
        return None if rel == 0 else table + rel

    def ref(self, pos: int) -> int:
        return pos + self._u("<I", pos)

    def scalar(self, table: int, index: int, fmt: str, default: int = 0) -> int:
        at = self.field(table, index)
        return default if at is None else self._u(fmt, at)

    def vector(self, table: int, index: int, elem: int = 4) -> tuple[int, int]:
        """(position of the first element, length); a length the bytes cannot hold is refused."""
        at = self.field(table, index)
        if at is None:
            return 0, 0
        vec = self.ref(at)
        length = self._u("<I", vec)
        if length > (self.n - vec - 4) // elem:
            raise _Bad(f"vector at {vec} declares {length} elements, more than its bytes hold")
        return vec + 4, length

    def tables(self, table: int, index: int, most: int, what: str) -> Iterator[int]:
        """The tables of a vector field, refused past ``most`` before any is read."""
        first, length = self.vector(table, index)
        if length > most:
            raise _Refused(f"it has {length} {what}, more than the family allows ({most})")
        for i in range(length):
            yield self.ref(first + 4 * i)

    def ints(self, table: int, index: int) -> tuple[int, ...]:
        """An int32 vector field (empty when absent); like strings, vectors may be shared, so the
        walk reads at most the model's size of them."""
        first, length = self.vector(table, index)
        self.read += 4 * length
        if self.read > self.n:
            raise _Refused("its names and index vectors add up to more bytes than the model has (shared many times)")
        return struct.unpack_from(f"<{length}i", self.b, first)

    def string(self, table: int, index: int) -> bytes | None:
        at = self.field(table, index)
        if at is None:
            return None
        s = self.ref(at)
        length = self._u("<I", s)
        self.read += length
        if self.read > self.n:
            raise _Refused("its names add up to more bytes than the model has (strings shared many times)")
        if length > self.n - s - 4:
            raise _Bad(f"string at {s} declares {length} bytes, more than there are")
        return bytes(self.b[s + 4:s + 4 + length])


def _utf8(raw: bytes | None, what: str) -> None:
    if raw is None:
        return
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _Refused(f"{what} {raw[:40]!r} is not UTF-8") from None


def _absent(fb: _Flat, table: int, kind: str) -> None:
    """None of the fields of ``kind`` (a schema.fbs table name) the family's encoders never write."""
    for name, index in TFLITE_ABSENT_FIELDS[kind].items():
        if fb.field(table, index) is not None:
            raise _Refused(f"one of its {kind} tables has the field {name}, which the encoder family does not use")


def _tensor_indices(indices: tuple[int, ...], tensors: int, what: str, optional: frozenset[int]) -> None:
    """Each index names one of the subgraph's ``tensors``, or is -1 at a position in ``optional``."""
    for position, i in enumerate(indices):
        if i == -1 and position in optional:
            continue
        if i == -1:
            raise _Refused(f"{what} {position} is left out (-1), which the encoder family allows only for "
                           + ", ".join(f"{_TFLITE_NAMES[c]}'s input " + " or ".join(map(str, sorted(p)))
                                      for c, p in TFLITE_OPTIONAL_INPUTS.items()))
        if not 0 <= i < tensors:
            raise _Bad(f"{what} {position} names tensor {i} of {tensors}")


def check_tflite(model: bytes) -> None:
    """Refuse TFLite bytes outside the encoder family (see the module doc)."""
    fb = _Flat(model)
    try:
        if fb.n < 8:
            raise _Bad(f"{fb.n} bytes cannot hold a flatbuffer")
        root = fb.root()
        codes = []
        for oc in fb.tables(root, _M_OPCODES, _MOST_CODES, "operator codes"):
            if fb.string(oc, _OC_CUSTOM) is not None:
                raise _Refused(f"it uses a custom operator {fb.string(oc, _OC_CUSTOM)[:40]!r}")
            code = max(fb.scalar(oc, _OC_DEPRECATED, "<b"), fb.scalar(oc, _OC_BUILTIN, "<i"))
            if code not in _TFLITE_NAMES:
                raise _Refused(f"builtin operator code {code} is not one the encoder family uses")
            codes.append(code)
        subgraphs = list(fb.tables(root, _M_SUBGRAPHS, _MOST_SUBGRAPHS, "subgraphs"))
        if len(subgraphs) != 1:
            raise _Refused(f"it has {len(subgraphs)} subgraphs; the encoder family has one (control flow needs more)")
        sg = subgraphs[0]
        tensors = 0
        for t in fb.tables(sg, _SG_TENSORS, 2 * MAX_TFLITE_OPERATORS, "tensors"):
            _utf8(fb.string(t, _T_NAME), "a tensor name")
            _absent(fb, t, "Tensor")
            tensors += 1
        for what, field in (("the subgraph's input", _SG_INPUTS), ("the subgraph's output", _SG_OUTPUTS)):
            _tensor_indices(fb.ints(sg, field), tensors, what, frozenset())
        for op in fb.tables(sg, _SG_OPERATORS, MAX_TFLITE_OPERATORS, "operators"):
            index = fb.scalar(op, _OP_OPCODE_INDEX, "<I")
            if index >= len(codes):
                raise _Bad(f"an operator names operator code {index} of {len(codes)}")
            name = _TFLITE_NAMES[codes[index]]
            _absent(fb, op, "Operator")
            _tensor_indices(fb.ints(op, _OP_INPUTS), tensors, f"{name}'s input",
                            TFLITE_OPTIONAL_INPUTS.get(codes[index], frozenset()))
            _tensor_indices(fb.ints(op, _OP_OUTPUTS), tensors, f"{name}'s output", frozenset())
        for buffer in fb.tables(root, _M_BUFFERS, 2 * MAX_TFLITE_OPERATORS + 1, "buffers"):
            if fb.scalar(buffer, _B_OFFSET, "<Q") or fb.scalar(buffer, _B_SIZE, "<Q"):
                raise _Refused("a buffer is stored outside the flatbuffer (the encoder family keeps all inside)")
        for sig in fb.tables(root, _M_SIGNATURES, _MOST_SIGNATURES, "signatures"):
            _utf8(fb.string(sig, _SIG_KEY), "a signature key")
            for index in (_SIG_INPUTS, _SIG_OUTPUTS):
                for tm in fb.tables(sig, index, _MOST_SIGNATURE_TENSORS, "signature tensors"):
                    _utf8(fb.string(tm, _TM_NAME), "a signature tensor name")
    except _Bad as exc:
        raise BundleError("model.family", FIELD, f"field '{FIELD}' is not a valid TFLite model: {exc}") from None
    except _Refused as exc:
        raise BundleError("model.family", FIELD, f"field '{FIELD}' is outside the TFLite encoder family: {exc}") from None


def check_model(encoder_format: str, model: bytes, weights_bytes: int = 0, family: str = DEFAULT_FAMILY) -> None:
    """The family check for a bundle's encoder format ("onnx" or "tflite") and family (1.2)."""
    if encoder_format not in FAMILY_FORMATS[family]:
        raise BundleError("model.family", FIELD, f"field '{FIELD}' is outside the encoder families: the {family} "
                                                 f"family has no {encoder_format} form")
    if encoder_format == "onnx":
        check_onnx(model, weights_bytes, family)
    else:
        check_tflite(model)
