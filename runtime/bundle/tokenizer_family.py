"""The tokenizer family: a bundle's tokenizer.json is strict JSON of one closed shape.

The shape is data (format/1/schema.json "tokenizer": a document schema and named relations);
this module interprets it, as the Java and TypeScript readers do, so no reader's JSON parser
or tokenizer library decides what a bundle means:

- strict JSON (`parse`): no key twice in an object, no NaN or infinity, no integer written
  ``-0`` or beyond 2^53 - 1, no ``\\u`` escape that leaves a lone surrogate, at most 16 levels
  of nesting; otherwise ``tokenizer.json``;
- the document schema (`check`): every object's keys exactly those listed (each required
  unless optional), every value of its type, constant, choice and bounds; then the relations
  (vocabulary ids, the unknown, added and special tokens, the templates); otherwise
  ``tokenizer.family`` with the JSON pointer of the value, after ``encoder.tokenizer_json``.

Example:
    >>> check_tokenizer_json('{"model": {"type": "BPE"}}')
    Traceback (most recent call last):
    ...
    runtime.errors.BundleError: field 'encoder.tokenizer_json' is outside the tokenizer family: missing '/version'
"""

from __future__ import annotations

import json
from typing import Any

from runtime.contract import schema
from runtime.errors import BundleError

FIELD = "encoder.tokenizer_json"


class _Refused(Exception):
    """Internal: where and why the document is outside the family (becomes one BundleError)."""

    def __init__(self, at: str, why: str):
        super().__init__(why)
        self.at = at


def pointer(at: str, key: str | int) -> str:
    """A JSON pointer one level down (RFC 6901: ~ and / escaped)."""
    return f"{at}/{str(key).replace('~', '~0').replace('/', '~1')}"


def _show(v: Any) -> str:
    text = json.dumps(v, ensure_ascii=True)
    return text if len(text) <= 60 else text[:57] + "..."


# --------------------------------------------------------------------------- strict JSON


class _NotStrict(ValueError):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise _NotStrict(f"key {_show(dup)} appears twice in one object (parsers disagree on which one counts)")
    return d


def _integer(literal: str) -> int:
    if literal == "-0":
        raise _NotStrict("the number -0 (an integer to some parsers, a float to others)")
    value = int(literal)
    if abs(value) > schema()["tokenizer"]["max_integer"]:
        raise _NotStrict(f"the integer {literal[:30]} is beyond 2^53 - 1")
    return value


def _constant(name: str) -> Any:
    raise _NotStrict(f"{name} is not JSON")


def _depth_and_surrogates(doc: Any) -> int:
    """The document's nesting depth; refuses a string or key holding a lone surrogate."""
    deepest, stack = 0, [(doc, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, str):
            strings = (v,)
        elif isinstance(v, dict):
            deepest = max(deepest, depth)
            strings = tuple(v)
            stack.extend((x, depth + 1) for x in v.values())
        elif isinstance(v, list):
            deepest = max(deepest, depth)
            strings = ()
            stack.extend((x, depth + 1) for x in v)
        else:
            continue
        for s in strings:
            if not s.isascii() and any(0xD800 <= ord(c) <= 0xDFFF for c in s):
                raise _NotStrict(f"a string holds a lone surrogate ({_show(s)})")
    return deepest


def parse(text: str) -> Any:
    """``text`` as strict JSON (see the module doc); BundleError ``tokenizer.json`` otherwise."""
    doc = _parse_fast(text)
    return doc if doc is not _DOUBT else _parse_strict(text)


#: `_parse_fast`'s answer when it cannot vouch for a document (then `_parse_strict` decides).
_DOUBT = object()


def _parse_fast(text: str) -> Any:
    """The document, when it certainly passes `_parse_strict`; else _DOUBT.

    The json module's C parser alone, without the strict parse's Python hooks (one call per
    integer and a list of pairs per object: a vocabulary's 30,000 of each), then the rules those
    hooks checked, for the whole document at once:

    - no ``-0`` anywhere in the text, and no integer beyond 2^53 - 1;
    - no ``\\u`` escape anywhere in the text (one could leave a lone surrogate, or write a colon
      inside a string) and no surrogate character (which UTF-8 cannot encode);
    - no key twice in an object: outside strings, JSON writes a colon once per member, so the
      members the text holds are its colons less those inside its strings (each a colon of a
      decoded string, when nothing is escaped as ``\\u``); the parsed objects keep one member
      per distinct key, and hold them all exactly when the two counts are equal;
    - nesting within the bound.

    Any doubt, and any error, goes to the strict parse, so that the refusal (and which one comes
    first) is always the strict parse's."""
    if "-0" in text or "\\u" in text:
        return _DOUBT
    try:
        text.encode("utf-8")  # in C, a pass over the text: fails on a surrogate character
        doc = json.loads(text, parse_constant=_constant)
    except (ValueError, RecursionError):
        return _DOUBT
    if type(doc) is not dict and type(doc) is not list:
        return _DOUBT  # not a tokenizer.json at all: let the strict parse and the schema say so
    tok = schema()["tokenizer"]
    most, big = tok["max_depth"], tok["max_integer"]
    members = string_colons = 0
    stack = [(doc, 1)]
    while stack:
        v, depth = stack.pop()
        if depth > most:
            return _DOUBT
        if type(v) is dict:
            members += len(v)
            string_colons += "".join(v).count(":")
            items = v.values()
        else:
            items = v
        kinds = set(map(type, items))
        if kinds <= {int}:  # a vocabulary: its bounds in C
            if items and (max(items) > big or min(items) < -big):
                return _DOUBT
            continue
        for x in items:
            kind = type(x)
            if kind is dict or kind is list:
                stack.append((x, depth + 1))
            elif kind is str:
                string_colons += x.count(":")
            elif kind is int and abs(x) > big:
                return _DOUBT
    return doc if text.count(":") - string_colons == members else _DOUBT


def _parse_strict(text: str) -> Any:
    try:
        doc = json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant, parse_int=_integer)
        most = schema()["tokenizer"]["max_depth"]
        if _depth_and_surrogates(doc) > most:
            raise _NotStrict(f"it nests deeper than {most} levels")
    except RecursionError:
        raise BundleError("tokenizer.json", FIELD, f"field '{FIELD}' is not strict JSON: it nests too deeply") from None
    except ValueError as exc:  # json.JSONDecodeError and _NotStrict
        raise BundleError("tokenizer.json", FIELD, f"field '{FIELD}' is not strict JSON: {exc}") from None
    return doc


# --------------------------------------------------------------------------- the document schema


def _same(v: Any, const: Any) -> bool:
    return type(v) is type(const) and v == const


def _walk(v: Any, s: dict[str, Any], at: str) -> None:
    """Check ``v`` against one schema node (format/1/schema.json "tokenizer"; the order of the
    checks is normative: docs/bundle-format.md section 6)."""
    if "ref" in s:
        s = {**schema()["tokenizer"]["definitions"][s["ref"]], **{k: x for k, x in s.items() if k != "ref"}}
    if v is None:
        if s.get("nullable"):
            return
        raise _Refused(at, "is null")
    if "one_of" in s:
        for alternative in s["one_of"]:
            try:
                _walk(v, alternative, at)
                return
            except _Refused:
                continue
        raise _Refused(at, f"is {_show(v)}, none of the forms the family allows")
    if "tagged" in s:  # an object whose key ``tagged`` names its form (a post-processor's "type")
        if not isinstance(v, dict):
            raise _Refused(at, f"is {_show(v)}, expected an object")
        tag, forms = s["tagged"], s["forms"]
        if tag not in v:
            raise _Refused(pointer(at, tag), "is missing")
        if not (isinstance(v[tag], str) and v[tag] in forms):
            raise _Refused(pointer(at, tag), f"is {_show(v[tag])}, expected one of {', '.join(map(_show, forms))}")
        _walk(v, forms[v[tag]], at)
        return
    if "const" in s:
        if not _same(v, s["const"]):
            raise _Refused(at, f"is {_show(v)}, expected {_show(s['const'])}")
        return
    if "enum" in s:
        if not (isinstance(v, str) and v in s["enum"]):
            raise _Refused(at, f"is {_show(v)}, expected one of {', '.join(map(_show, s['enum']))}")
        return
    kind = s["type"]
    if kind in ("object", "map"):
        if not isinstance(v, dict):
            raise _Refused(at, f"is {_show(v)}, expected an object")
        if kind == "object":
            keys = dict(s["keys"])
            for k, sub in s["keys"]:
                if k not in v and not sub.get("optional"):
                    raise _Refused(pointer(at, k), "is missing")
            for k in v:
                if k not in keys:
                    raise _Refused(pointer(at, k), "is not part of the family")
            for k, sub in s["keys"]:
                if k in v:
                    _walk(v[k], sub, pointer(at, k))
            return
        _count(len(v), s, at)
        low, high = s["key_length"]
        if v and low <= min(map(len, v)) and max(map(len, v)) <= high and _all_pass(v.values(), s["values"]):
            return  # a vocabulary: every key and value passes, seen in C; else the first to fail, below
        for k, x in v.items():
            if not low <= len(k) <= high:
                raise _Refused(pointer(at, k), f"is a key of {len(k)} characters, expected {low} to {high}")
            _walk(x, s["values"], pointer(at, k))
    elif kind == "array":
        if not isinstance(v, list):
            raise _Refused(at, f"is {_show(v)}, expected an array")
        _count(len(v), s, at)
        if _all_pass(v, s["items"]):
            return
        for i, x in enumerate(v):
            _walk(x, s["items"], pointer(at, i))
    elif kind == "tuple":  # an array of exactly one value per schema node, in order
        if not isinstance(v, list):
            raise _Refused(at, f"is {_show(v)}, expected an array")
        if len(v) != len(s["items"]):
            raise _Refused(at, f"has {len(v)} entries, expected {len(s['items'])}")
        for i, (x, sub) in enumerate(zip(v, s["items"])):
            _walk(x, sub, pointer(at, i))
    elif kind == "string":
        if not isinstance(v, str):
            raise _Refused(at, f"is {_show(v)}, expected a string")
        if not s.get("min_length", 0) <= len(v) <= s.get("max_length", len(v)):
            raise _Refused(at, f"has {len(v)} characters, expected {s.get('min_length', 0)} to {s['max_length']}")
    elif kind == "integer":
        if type(v) is not int or not s["min"] <= v <= s["max"]:
            raise _Refused(at, f"is {_show(v)}, expected an integer from {s['min']} to {s['max']}")
    elif kind == "boolean":
        if type(v) is not bool:
            raise _Refused(at, f"is {_show(v)}, expected true or false")
    else:  # pragma: no cover - the schema file names only the kinds above
        raise AssertionError(f"unknown schema type {kind!r}")


#: The schema nodes `_all_pass` judges whole: a plain integer or string, nothing else said of it.
_LEAF_KEYS = {"integer": {"type", "min", "max"}, "string": {"type", "min_length", "max_length"}}


def _all_pass(values: Any, s: dict[str, Any]) -> bool:
    """Whether every one of ``values`` certainly passes the leaf node ``s``, judged for all at
    once in C (a vocabulary's 30,000 ids one call each cost a fifth of a second). False is no
    refusal: `_walk` then checks them one by one and refuses the first, as it always did."""
    kind = s.get("type")
    if kind not in _LEAF_KEYS or not s.keys() <= _LEAF_KEYS[kind]:
        return False
    if not values:
        return True
    if kind == "integer":
        return set(map(type, values)) == {int} and s["min"] <= min(values) and max(values) <= s["max"]
    return (set(map(type, values)) == {str} and s.get("min_length", 0) <= min(map(len, values))
            and ("max_length" not in s or max(map(len, values)) <= s["max_length"]))


def _count(n: int, s: dict[str, Any], at: str) -> None:
    low, high = s.get("min_items", 0), s.get("max_items", n)
    if not low <= n <= high:
        raise _Refused(at, f"has {n} entries, expected {low} to {high}")


# --------------------------------------------------------------------------- the relations


def _relations(doc: dict[str, Any]) -> None:
    """The family's relations, in format/1/schema.json's order (a post-processor's own relations
    for its form only)."""
    model, post = doc["model"], doc["post_processor"]
    vocab: dict[str, int] = model["vocab"]
    ids = set(vocab.values())
    if len(ids) < len(vocab) or (ids and max(ids) >= len(vocab)):  # seen in C; then the first token at fault
        seen: set[int] = set()
        for token, i in vocab.items():
            if i >= len(vocab) or i in seen:
                raise _Refused(pointer("/model/vocab", token), f"has id {i}: the ids must be 0 to {len(vocab) - 1}, each once")
            seen.add(i)
    if model["unk_token"] not in vocab:
        raise _Refused("/model/unk_token", f"{_show(model['unk_token'])} is not a token of model.vocab")
    for i, t in enumerate(doc["added_tokens"]):
        if vocab.get(t["content"]) != t["id"]:
            raise _Refused(f"/added_tokens/{i}", f"{_show(t['content'])} with id {t['id']} is not a token of model.vocab "
                                                 f"with that id")
    for i, t in enumerate(doc["added_tokens"]):
        if t["normalized"] and not all("!" <= c <= "~" and not "A" <= c <= "Z" for c in t["content"]):
            raise _Refused(f"/added_tokens/{i}/content", f"{_show(t['content'])} is matched in the normalized text, so "
                                                         f"it must be printable ASCII without a capital letter")
    if post["type"] == "RobertaProcessing":
        for which in ("cls", "sep"):
            name, i = post[which]
            if vocab.get(name) != i:
                raise _Refused(f"/post_processor/{which}", f"{_show(post[which])} is not a token of model.vocab with "
                                                           f"its id")
        return
    specials = post["special_tokens"]
    for name, st in specials.items():
        if not (st["id"] == name and st["tokens"] == [name] and name in vocab and st["ids"] == [vocab[name]]):
            raise _Refused(pointer("/post_processor/special_tokens", name),
                           f"must be {{\"id\": {_show(name)}, \"ids\": [its vocabulary id], \"tokens\": [{_show(name)}]}}")
    for which in ("single", "pair"):
        for i, piece in enumerate(post[which]):
            if "SpecialToken" in piece and piece["SpecialToken"]["id"] not in specials:
                raise _Refused(f"/post_processor/{which}/{i}/SpecialToken/id",
                               f"{_show(piece['SpecialToken']['id'])} is not a key of special_tokens")
    single = post["single"]
    kinds = [next(iter(p)) if "SpecialToken" in p else p["Sequence"]["id"] for p in single]
    if kinds != ["SpecialToken", "A", "SpecialToken"] or any(next(iter(p.values()))["type_id"] for p in single):
        raise _Refused("/post_processor/single", "must be [SpecialToken, Sequence A, SpecialToken] with type_id 0 "
                                                 "(BERT's [CLS] A [SEP])")


def check(doc: Any) -> None:
    """Refuse a parsed tokenizer.json outside the family: BundleError ``tokenizer.family`` whose
    path is ``encoder.tokenizer_json`` and the JSON pointer of the first value refused."""
    try:
        _walk(doc, schema()["tokenizer"]["document"], "")
        _relations(doc)
    except _Refused as exc:
        where = f"'{exc.at}' {exc}" if exc.args[0] != "is missing" else f"missing '{exc.at}'"
        raise BundleError("tokenizer.family", FIELD + exc.at,
                          f"field '{FIELD}' is outside the tokenizer family: {where}") from None


def check_tokenizer_json(text: str) -> dict[str, Any]:
    """`parse` then `check`; returns the document (the tokenizer is built from it)."""
    doc = parse(text)
    check(doc)
    return doc
