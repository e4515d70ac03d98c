"""Every fast path of the reader answers as the exact path it stands in for.

A process's first answer skips work where it can prove the answer (runtime/bundle/
tokenizer_family.py's parse and schema walk, runtime/unicode.py's ASCII classes, the remembered
ONNX check). Each one is compared here with the exact path on inputs aimed at its edges: the
same document, or the same refusal (code, path and message).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import bundle_strategies
from runtime import tokenizer as tokenizer_module
from runtime import unicode as uc
from runtime.bundle import load
from runtime.bundle import model_family
from runtime.bundle import tokenizer_family as tf
from runtime.contract import schema
from runtime.contract import unicode as unicode_tables
from runtime.errors import BundleError
from runtime.tokenizer import TextTokenizer

ROOT = Path(__file__).resolve().parents[1]
CORPUS_BUNDLE = ROOT / "format" / "1" / "corpus" / "accept" / "default.dpedge"
MAX_INTEGER = schema()["tokenizer"]["max_integer"]
MAX_DEPTH = schema()["tokenizer"]["max_depth"]
SETTINGS = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _outcome(fn, *args):
    """What a call gives: ("ok", its value) or ("refused", code, path, message)."""
    try:
        return ("ok", fn(*args))
    except BundleError as exc:
        return ("refused", exc.code, exc.path, str(exc))


@pytest.fixture(scope="module")
def tokenizer_text() -> str:
    return load(CORPUS_BUNDLE).encoder.tokenizer_json


# --------------------------------------------------------------------------- strict JSON

#: Pieces of JSON text at the parser's edges: -0 in every place it can stand, integers at and
#: past 2^53 - 1, surrogate escapes alone and paired, constants, numbers that only look like -0.
_ATOMS = ["-0", "0", "-0.0", "-0e1", "1", "-1", str(MAX_INTEGER), str(-MAX_INTEGER), str(MAX_INTEGER + 1),
          str(-MAX_INTEGER - 1), "1e400", "NaN", "Infinity", "-Infinity", "true", "null", '"-0"', '"a-0"',
          '"\\ud800"', '"\\udfff"', '"\\ud83d\\ude00"', '"\\uD83D"', '"\\\\ud800"', '"\\u00e9"', '"é"', '""',
          '":"', '"a::b"', '"\\u003a"', '"\\":"']


def _json_texts() -> st.SearchStrategy[str]:
    leaf = st.sampled_from(_ATOMS)
    keys = st.sampled_from(['"a"', '"b"', '"-0"', '"\\ud800"', '":"', '"a:"', '"\\u003a"', '"\\":"'])
    tree = st.recursive(leaf, lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda xs: "[" + ",".join(xs) + "]"),
        st.lists(st.tuples(keys, inner), max_size=3).map(lambda kv: "{" + ",".join(f"{k}:{v}" for k, v in kv) + "}")),
        max_leaves=12)
    return tree


def _nested(depth: int) -> str:
    return "[" * (depth - 1) + "{}" + "]" * (depth - 1)


@SETTINGS
@given(text=_json_texts())
@example(text=_nested(MAX_DEPTH))
@example(text=_nested(MAX_DEPTH + 1))
@example(text='{"a": 1, "a": 2}')
@example(text='{"a": [-0, {"a": 1, "a": 1}]}')
@example(text='{"a": {"a": 1, "a": 1}, "b": -0}')
@example(text='{"v": {"x": 9007199254740992}}')
@example(text='{"v": {"x": 1, "y": -9007199254740992}}')
@example(text='{":": 1, ":": 2}')
@example(text='{"a": ":", "a": 1}')
@example(text='{"a:b": 1, "c": {"a:b": ":", "d": "x:y"}}')
@example(text="[")
@example(text="5")
def test_fast_parse_is_the_strict_parse(text):
    assert _outcome(tf.parse, text) == _outcome(tf._parse_strict, text)


def test_fast_parse_takes_the_real_tokenizer(tokenizer_text):
    """The bundle's tokenizer.json goes the fast way (else the fast path would be dead code)."""
    assert tf._parse_fast(tokenizer_text) is not tf._DOUBT
    assert tf._parse_fast(tokenizer_text) == tf._parse_strict(tokenizer_text)


# --------------------------------------------------------------------------- the schema walk

#: Values at the edges of the vocabulary's and the special tokens' leaf nodes.
_VALUES = [0, 1, -1, 249_999, 250_000, 10**9, True, False, None, 1.0, "1", "", "x" * 100, "x" * 101, [], {}]


def _mutations() -> st.SearchStrategy[list[tuple[str, object, object]]]:
    edits = st.tuples(st.sampled_from(["vocab_value", "vocab_key", "vocab_id_twice", "vocab_id_past_end",
                                       "special_ids", "special_tokens", "added_id"]),
                      st.sampled_from(_VALUES), st.integers(0, 10**6))
    return st.lists(edits, min_size=1, max_size=3)


def _apply(doc: dict, edits) -> None:
    vocab = doc["model"]["vocab"]
    tokens = list(vocab)
    for what, value, pick in edits:
        token = tokens[pick % len(tokens)]
        if what == "vocab_value":
            vocab[token] = value
        elif what == "vocab_key":
            vocab[value if isinstance(value, str) else str(value)] = len(vocab)
        elif what == "vocab_id_twice":
            vocab[token] = vocab[tokens[(pick + 1) % len(tokens)]]
        elif what == "vocab_id_past_end":
            vocab[token] = len(vocab) + pick % 3
        elif what == "special_ids":
            doc["post_processor"]["special_tokens"]["[CLS]"]["ids"] = [value]
        elif what == "special_tokens":
            doc["post_processor"]["special_tokens"]["[CLS]"]["tokens"] = [value]
        else:
            doc["added_tokens"][pick % len(doc["added_tokens"])]["id"] = value


@SETTINGS
@given(edits=_mutations())
def test_schema_walk_in_c_refuses_as_one_by_one(tokenizer_text, edits, monkeypatch):
    doc = json.loads(tokenizer_text)
    _apply(doc, edits)
    fast = _outcome(tf.check, json.loads(json.dumps(doc)))
    with monkeypatch.context() as m:
        m.setattr(tf, "_all_pass", lambda values, s: False)
        slow = _outcome(tf.check, json.loads(json.dumps(doc)))
    assert fast == slow


def test_key_lengths_at_their_bounds(tokenizer_text, monkeypatch):
    model = dict(dict(schema()["tokenizer"]["document"]["keys"])["model"]["keys"])
    low, high = model["vocab"]["key_length"]
    for length in (low - 1, low, high, high + 1):
        doc = json.loads(tokenizer_text)
        doc["model"]["vocab"]["x" * length] = len(doc["model"]["vocab"])
        fast = _outcome(tf.check, json.loads(json.dumps(doc)))
        with monkeypatch.context() as m:
            m.setattr(tf, "_all_pass", lambda values, s: False)
            slow = _outcome(tf.check, json.loads(json.dumps(doc)))
        assert fast == slow, length


# --------------------------------------------------------------------------- Unicode classes


@pytest.mark.parametrize("name", sorted(unicode_tables()["sets"]))
def test_ascii_class_finds_what_the_whole_class_finds(name):
    whole = uc.charset(name)
    ascii_text = "".join(map(chr, range(0x80)))
    assert whole.ascii.regex.findall(ascii_text) == whole.regex.findall(ascii_text)
    assert whole.regex_for(ascii_text) is whole.ascii.regex and whole.regex_for("é") is whole.regex


@pytest.mark.parametrize("table", ["decomposition", "compatibility", "lowercase", "confusable"])
def test_mapping_tables_are_in_code_point_order(table):
    """`_mapping` stops at the first code point past its bound, so the pinned tables must stay sorted."""
    flat, i, points = unicode_tables()[table], 0, []
    while i < len(flat):
        points.append(flat[i])
        i += 2 + flat[i + 1]
    assert points == sorted(points) and len(set(points)) == len(points)


def test_ascii_prototypes_are_the_whole_tables():
    ascii_text = "".join(map(chr, range(0x80)))
    assert uc.prototypes(ascii_text) == ascii_text.translate(uc._confusable())


@SETTINGS
@given(text=st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=80))
@example(text="Hello,\tworld!\x07 [CLS] ([MASK]) \x00\x1f\x7f")
def test_ascii_pipeline_tokenizes_as_the_whole_one(tokenizer_text, text, monkeypatch):
    tok = TextTokenizer(tokenizer_text, 64)
    fast = tok.encode_one(text), tok.has_token(text)
    whole = tokenizer_module._Pipeline(False)
    with monkeypatch.context() as m:
        m.setattr(tokenizer_module, "_pipeline", lambda piece: whole)
        assert (tok.encode_one(text), tok.has_token(text)) == fast


# --------------------------------------------------------------------------- the ONNX check


def test_remembered_onnx_check_answers_as_the_walk():
    enc = load(CORPUS_BUNDLE).encoder
    length = enc.weights_file.length if enc.weights_file else len(enc.weights)
    model = bytes(enc.model)
    assert model_family.check_onnx(model, length, enc.family) == model_family._check_onnx(model, length, enc.family)
    cut = model[:-7]
    for _ in range(2):  # a refusal is not remembered: the second call refuses again, alike
        assert _outcome(model_family.check_onnx, cut, length, enc.family) == \
            _outcome(model_family._check_onnx, cut, length, enc.family)
        assert _outcome(model_family.check_onnx, cut, length, enc.family)[0] == "refused"


# ------------------------------------------------------------------ the ONNX node in one pass


def _node_by_passes(buf: bytes, start: int, end: int, ops) -> None:
    """The node check as three passes over its fields (op_type, domain, attributes), the
    definition the one-pass `model_family._onnx_node` must answer exactly as."""
    mf = model_family
    op, domain = mf._string(buf, start, end, mf._NODE_OP_TYPE), mf._string(buf, start, end, mf._NODE_DOMAIN)
    if (domain, op) not in ops and ("" if domain == "ai.onnx" else domain, op) not in ops:
        shown = f"{domain}.{op}" if domain else op
        raise mf._Refused(f"operator {shown[:80]!r} is not one the encoder family uses")
    for a, b in mf._messages(buf, start, end, mf._NODE_ATTRIBUTE):
        for f, _, x, y in mf._fields(buf, a, b):
            if f in (mf._ATTR_G, mf._ATTR_GRAPHS):
                raise mf._Refused(f"operator {op!r} has a subgraph attribute (control flow is not in the family)")
            if f in (mf._ATTR_SPARSE, mf._ATTR_SPARSES):
                raise mf._Refused(f"operator {op!r} has a sparse tensor attribute")
            if f in (mf._ATTR_T, mf._ATTR_TENSORS):
                mf._onnx_tensor(buf, x, y, f"an attribute tensor of operator {op!r}", None)


def _pb(field: int, wire: int, value: bytes | int) -> bytes:
    """One protobuf field (a length-delimited value is its bytes; a varint its number)."""
    varint = bundle_strategies._varint_bytes
    key = varint(field << 3 | wire)
    if wire == 0:
        return key + varint(value if isinstance(value, int) else len(value))
    if wire == 5:
        return key + b"\0\0\0\0"
    return key + varint(len(value)) + value


def _node_fields() -> st.SearchStrategy[bytes]:
    """A node's fields, aimed at what the check looks at: op_type and domain (good, unknown, not
    UTF-8, not a string, repeated), attributes (a subgraph, a sparse tensor, a tensor with
    external data, harmless, not a message), and names it ignores."""
    names = st.sampled_from([b"MatMul", b"Gather", b"Loop", b"MatMulNBits", b"\xff\xfe", b""])
    domains = st.sampled_from([b"", b"ai.onnx", b"com.microsoft", b"org.example", b"\xc3"])
    wires = st.sampled_from([2, 2, 2, 0, 5])
    tensor = st.sampled_from([_pb(1, 0, 7), _pb(14, 0, 1), _pb(13, 2, _pb(1, 2, b"location") + _pb(2, 2, b"x"))])
    attr_inner = st.one_of(st.just(_pb(1, 2, b"axis")), st.just(_pb(6, 2, b"")), st.just(_pb(22, 2, b"")),
                           tensor.map(lambda t: _pb(5, 2, t)), tensor.map(lambda t: _pb(10, 2, t)))
    field = st.one_of(
        st.tuples(wires, names).map(lambda w: _pb(4, w[0], w[1])),
        st.tuples(wires, domains).map(lambda w: _pb(7, w[0], w[1])),
        st.tuples(wires, st.lists(attr_inner, max_size=3)).map(lambda w: _pb(5, w[0], b"".join(w[1]))),
        st.just(_pb(1, 2, b"input")), st.just(_pb(3, 2, b"node")))
    return st.tuples(st.lists(field, max_size=7), st.integers(0, 3)).map(
        lambda fc: b"".join(fc[0])[:max(0, len(b"".join(fc[0])) - fc[1])])


def _raised(fn, *args):
    try:
        fn(*args)
        return ("ok",)
    except (model_family._Bad, model_family._Refused) as exc:
        return (type(exc).__name__, str(exc))


@SETTINGS
@given(_node_fields())
@example(_pb(7, 0, 1) + _pb(4, 0, 1))  # a domain not a string before an op_type not a string
@example(_pb(5, 0, 1) + _pb(4, 2, b"Loop"))  # an attribute not a message, then an op outside the family
@example(_pb(4, 2, b"MatMul") + _pb(5, 2, _pb(6, 2, b"")) + _pb(5, 0, 1))
def test_node_in_one_pass_is_the_three_passes(node):
    ops = model_family.FAMILY_ONNX_OPS[model_family.DEFAULT_FAMILY]
    assert _raised(model_family._onnx_node, node, 0, len(node), ops) == \
        _raised(_node_by_passes, node, 0, len(node), ops)
