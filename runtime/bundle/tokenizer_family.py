"""The tokenizer family: a bundle's tokenizer.json must be a BERT WordPiece pipeline.

`tokenizers` runs whatever a tokenizer.json describes, and some descriptions are weapons: a
normalizer of chained ``Replace`` steps grows a query exponentially (7 GiB from one line), a
``Split`` pre-tokenizer with a catastrophic regex panics the Rust side, a vocabulary without
its unknown token fails on every unknown word. The runtime only ever needs what the exporter
ships (all-MiniLM-L6-v2's tokenizer.json: BertNormalizer, BertPreTokenizer, WordPiece,
TemplateProcessing), so `check_tokenizer_json` accepts exactly that shape, with bounded sizes,
and refuses anything else with one `BundleError` naming the field and the JSON path, before
`tokenizers` parses a byte of it. docs/bundle-format.md section 6 states the same rules for
other readers (the Java core enforces them too).

Example:
    >>> check_tokenizer_json('{"model": {"type": "BPE"}}')
    Traceback (most recent call last):
    ...
    runtime.errors.BundleError: field 'encoder.tokenizer_json' is outside the tokenizer family: missing 'added_tokens'
"""

from __future__ import annotations

import json
from typing import Any

from runtime.bundle.schema import (FIELDS_BY_PATH, MAX_ADDED_TOKENS, MAX_INPUT_CHARS_PER_WORD, MAX_PREFIX_CHARS_WORDPIECE,
                                   MAX_TOKEN_CHARS, MAX_TOKENIZER_JSON_CHARS, MAX_VOCAB_SIZE, TOKENIZER_DECODER,
                                   TOKENIZER_KEYS, TOKENIZER_MODEL, TOKENIZER_NORMALIZER, TOKENIZER_POST_PROCESSOR,
                                   TOKENIZER_PRE_TOKENIZER, TOKENIZER_REQUIRED)
from runtime.errors import BundleError

FIELD = "encoder.tokenizer_json"
#: The tokenizer's own truncation and padding lengths are bounded like encoder.max_length.
_LENGTH = FIELDS_BY_PATH["encoder.max_length"]


def path(*keys: str) -> str:
    return ".".join(k for k in keys if k)


class _Refused(Exception):
    """Internal: why the document is outside the family (becomes one BundleError)."""


def _fail(why: str) -> None:
    raise _Refused(why)


def _show(v: Any) -> str:
    text = json.dumps(v, ensure_ascii=True)
    return text if len(text) <= 60 else text[:57] + "..."


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # Python's json keeps the last of two equal keys, serde (the Rust side) refuses them: a
    # document read differently by two parsers is refused here.
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))
        _fail(f"key {_show(dup)} appears twice in one object")
    return d


def _no_constant(name: str) -> Any:
    _fail(f"{name} is not JSON")


def _map(v: Any, where: str, keys: tuple[str, ...], required: tuple[str, ...] = ()) -> dict[str, Any]:
    if not isinstance(v, dict):
        _fail(f"{where} must be an object, got {_show(v)}")
    for k in required:
        if k not in v:
            _fail(f"missing '{path(where, k)}'" if where else f"missing '{k}'")
    extra = sorted(set(v) - set(keys))
    if extra:
        _fail(f"{path(where, extra[0])} is not part of the family" if where else f"'{extra[0]}' is not part of "
              f"the family")
    return v


def _typed(v: Any, where: str, expected: str) -> None:
    if not isinstance(v, dict) or v.get("type") != expected:
        got = v.get("type") if isinstance(v, dict) else v
        _fail(f"{where}.type is {_show(got)}, expected {_show(expected)}")


def _bool(v: Any, where: str, *, nullable: bool = False) -> None:
    if not (isinstance(v, bool) or (nullable and v is None)):
        _fail(f"{where} must be {'true, false or null' if nullable else 'true or false'}, got {_show(v)}")


def _int(v: Any, where: str, low: int, high: int) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or not low <= v <= high:
        _fail(f"{where} must be an integer in {low}..{high}, got {_show(v)}")
    return v


def _str(v: Any, where: str, low: int, high: int) -> str:
    if not isinstance(v, str) or not low <= len(v) <= high:
        _fail(f"{where} must be a string of {low} to {high} characters, got {_show(v)}")
    return v


def _check_normalizer(v: Any) -> None:
    _typed(v, "normalizer", TOKENIZER_NORMALIZER)
    n = _map(v, "normalizer", ("type", "clean_text", "handle_chinese_chars", "strip_accents", "lowercase"),
             ("type", "clean_text", "handle_chinese_chars", "strip_accents", "lowercase"))
    for k in ("clean_text", "handle_chinese_chars", "lowercase"):
        _bool(n[k], f"normalizer.{k}")
    _bool(n["strip_accents"], "normalizer.strip_accents", nullable=True)


def _check_vocab(model: dict[str, Any]) -> dict[str, int]:
    vocab = model["vocab"]
    if not isinstance(vocab, dict) or not 1 <= len(vocab) <= MAX_VOCAB_SIZE:
        _fail(f"model.vocab must be an object of 1 to {MAX_VOCAB_SIZE} tokens")
    ids = set()
    for token, i in vocab.items():
        if not 1 <= len(token) <= MAX_TOKEN_CHARS:
            _fail(f"model.vocab token {_show(token)} must have 1 to {MAX_TOKEN_CHARS} characters")
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(vocab):
            _fail(f"model.vocab id of {_show(token)} must be an integer in 0..{len(vocab) - 1}, got {_show(i)}")
        ids.add(i)
    if len(ids) != len(vocab):
        _fail("model.vocab must give every token its own id (ids 0 to size - 1, each once)")
    return vocab


def _check_model(v: Any) -> dict[str, int]:
    _typed(v, "model", TOKENIZER_MODEL)
    keys = ("type", "unk_token", "continuing_subword_prefix", "max_input_chars_per_word", "vocab")
    m = _map(v, "model", keys, keys)
    vocab = _check_vocab(m)
    unk = _str(m["unk_token"], "model.unk_token", 1, MAX_TOKEN_CHARS)
    if unk not in vocab:
        _fail(f"model.unk_token {_show(unk)} is not in model.vocab")
    _str(m["continuing_subword_prefix"], "model.continuing_subword_prefix", 1, MAX_PREFIX_CHARS_WORDPIECE)
    _int(m["max_input_chars_per_word"], "model.max_input_chars_per_word", 1, MAX_INPUT_CHARS_PER_WORD)
    return vocab


def _check_added_tokens(v: Any, vocab: dict[str, int]) -> None:
    if not isinstance(v, list) or len(v) > MAX_ADDED_TOKENS:
        _fail(f"added_tokens must be a list of at most {MAX_ADDED_TOKENS} tokens")
    keys = ("id", "content", "single_word", "lstrip", "rstrip", "normalized", "special")
    for i, t in enumerate(v):
        where = f"added_tokens[{i}]"
        t = _map(t, where, keys, keys)
        content = _str(t["content"], f"{where}.content", 1, MAX_TOKEN_CHARS)
        if vocab.get(content) != t["id"] or isinstance(t["id"], bool):
            _fail(f"{where} must be a token of model.vocab with its id, got {_show(content)} with id {_show(t['id'])}")
        for k in keys[2:]:
            _bool(t[k], f"{where}.{k}")


def _check_template(items: Any, where: str, specials: dict[str, Any], single: bool) -> None:
    """A template: special tokens and sequences; the single one is exactly [CLS] A [SEP]."""
    if not isinstance(items, list) or not 1 <= len(items) <= 8:
        _fail(f"{where} must be a list of 1 to 8 pieces")
    kinds = []
    for i, piece in enumerate(items):
        at = f"{where}[{i}]"
        if not isinstance(piece, dict) or len(piece) != 1:
            _fail(f"{at} must be {{\"SpecialToken\": ...}} or {{\"Sequence\": ...}}, got {_show(piece)}")
        (kind, body), = piece.items()
        if kind == "SpecialToken":
            b = _map(body, f"{at}.SpecialToken", ("id", "type_id"), ("id", "type_id"))
            if not isinstance(b["id"], str) or b["id"] not in specials:
                _fail(f"{at}.SpecialToken.id {_show(b['id'])} is not in post_processor.special_tokens")
        elif kind == "Sequence":
            b = _map(body, f"{at}.Sequence", ("id", "type_id"), ("id", "type_id"))
            if b["id"] not in ("A", "B"):
                _fail(f"{at}.Sequence.id must be \"A\" or \"B\", got {_show(b['id'])}")
        else:
            _fail(f"{at} must be {{\"SpecialToken\": ...}} or {{\"Sequence\": ...}}, got {_show(kind)}")
        _int(b["type_id"], f"{at}.{kind}.type_id", 0, 1)
        kinds.append(kind if kind == "SpecialToken" else b["id"])
    if single and (kinds != ["SpecialToken", "A", "SpecialToken"]
                   or any(p[k]["type_id"] != 0 for p in items for k in p)):
        _fail(f"{where} must be [SpecialToken, Sequence A, SpecialToken] with type_id 0 (BERT's [CLS] A [SEP])")


def _check_post_processor(v: Any, vocab: dict[str, int]) -> None:
    _typed(v, "post_processor", TOKENIZER_POST_PROCESSOR)
    pp = _map(v, "post_processor", ("type", "single", "pair", "special_tokens"), ("type", "single", "special_tokens"))
    specials = pp["special_tokens"]
    if not isinstance(specials, dict) or not 1 <= len(specials) <= 8:
        _fail("post_processor.special_tokens must be an object of 1 to 8 tokens")
    for name, st in specials.items():
        at = f"post_processor.special_tokens.{name}"
        st = _map(st, at, ("id", "ids", "tokens"), ("id", "ids", "tokens"))
        # Each special token is one vocabulary token with its id (BERT's [CLS] and [SEP]).
        if st["id"] != name or st["tokens"] != [name] or st["ids"] != [vocab.get(name)] or name not in vocab:
            _fail(f"{at} must be {{\"id\": {_show(name)}, \"ids\": [its vocabulary id], \"tokens\": "
                  f"[{_show(name)}]}} with {_show(name)} in model.vocab")
    _check_template(pp["single"], "post_processor.single", specials, single=True)
    if "pair" in pp:
        _check_template(pp["pair"], "post_processor.pair", specials, single=False)


def _check_settings(doc: dict[str, Any]) -> None:
    """Truncation and padding: the runtime overrides both, but they must be what they claim."""
    high = int(_LENGTH.high)
    t = doc.get("truncation")
    if t is not None:
        t = _map(t, "truncation", ("direction", "max_length", "strategy", "stride"), ("max_length",))
        _int(t["max_length"], "truncation.max_length", 0, high)
        if "stride" in t:
            _int(t["stride"], "truncation.stride", 0, high)
        for k in ("direction", "strategy"):
            if k in t:
                _str(t[k], f"truncation.{k}", 1, 32)
    p = doc.get("padding")
    if p is not None:
        p = _map(p, "padding", ("strategy", "direction", "pad_to_multiple_of", "pad_id", "pad_type_id", "pad_token"))
        strategy = p.get("strategy")
        if not (strategy == "BatchLongest" or (isinstance(strategy, dict) and list(strategy) == ["Fixed"]
                                               and _int(strategy["Fixed"], "padding.strategy.Fixed", 0, high) >= 0)):
            _fail(f"padding.strategy must be \"BatchLongest\" or {{\"Fixed\": n}}, got {_show(strategy)}")
        if p.get("pad_to_multiple_of") is not None:
            _int(p["pad_to_multiple_of"], "padding.pad_to_multiple_of", 1, high)
        for k in ("pad_id", "pad_type_id"):
            if k in p:
                _int(p[k], f"padding.{k}", 0, MAX_VOCAB_SIZE)
        for k in ("direction", "pad_token"):
            if k in p:
                _str(p[k], f"padding.{k}", 1, MAX_TOKEN_CHARS)


def _check(doc: Any) -> None:
    doc = _map(doc, "", TOKENIZER_KEYS, TOKENIZER_REQUIRED)
    if "version" in doc and doc["version"] != "1.0":
        _fail(f"version is {_show(doc['version'])}, expected \"1.0\"")
    _check_normalizer(doc["normalizer"])
    pre = doc["pre_tokenizer"]
    _typed(pre, "pre_tokenizer", TOKENIZER_PRE_TOKENIZER)
    _map(pre, "pre_tokenizer", ("type",))
    vocab = _check_model(doc["model"])
    _check_added_tokens(doc["added_tokens"], vocab)
    _check_post_processor(doc["post_processor"], vocab)
    if doc.get("decoder") is not None:
        _typed(doc["decoder"], "decoder", TOKENIZER_DECODER)
        d = _map(doc["decoder"], "decoder", ("type", "prefix", "cleanup"), ("type", "prefix", "cleanup"))
        _str(d["prefix"], "decoder.prefix", 1, MAX_PREFIX_CHARS_WORDPIECE)
        _bool(d["cleanup"], "decoder.cleanup")
    _check_settings(doc)


def check_tokenizer_json(text: str) -> None:
    """Refuse a tokenizer.json outside the BERT WordPiece family (see the module doc).

    Raises BundleError naming ``encoder.tokenizer_json`` and the JSON path of the first
    problem.

    Example:
        >>> check_tokenizer_json("x" * (MAX_TOKENIZER_JSON_CHARS + 1))
        Traceback (most recent call last):
        ...
        runtime.errors.BundleError: field 'encoder.tokenizer_json' has 16000001 characters, more than 16000000
    """
    if len(text) > MAX_TOKENIZER_JSON_CHARS:
        raise BundleError(f"field '{FIELD}' has {len(text)} characters, more than {MAX_TOKENIZER_JSON_CHARS}")
    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
        _check(doc)
    except _Refused as exc:
        raise BundleError(f"field '{FIELD}' is outside the tokenizer family: {exc}") from None
    except RecursionError:
        raise BundleError(f"field '{FIELD}' is not JSON a reader can parse: it nests too deeply") from None
    except ValueError as exc:  # json.JSONDecodeError
        raise BundleError(f"field '{FIELD}' is not valid JSON: {exc}") from None
