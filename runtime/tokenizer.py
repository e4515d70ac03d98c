"""BERT WordPiece tokenization as the contract defines it (docs/bundle-format.md section 6).

Written here rather than run by the `tokenizers` library because the three readers must give
one text the same token ids: the library's Unicode tables are those of the Rust crates it was
built with, the JavaScript port's its engine's and the Java core's its JDK's, so a lower-cased
or accent-stripped letter could differ between them. Every reader runs these steps on the
contract's tables (runtime.unicode), from the checked tokenizer.json
(runtime.bundle.tokenizer_family):

1. the text prefix, then the text, split around the added tokens that are not ``normalized``
   (leftmost, longest first; each is its id);
2. each piece between them normalised as BertNormalizer says: clean_text removes U+0000,
   U+FFFD and the controls (Cc, Cf, Co, Cs but tab, line feed, carriage return) and makes
   White_Space a space; handle_chinese_chars puts spaces around CJK ideographs;
   strip_accents (null: as lowercase) is NFD then no Mn; lowercase is each code point's full
   lowercase mapping; then split around the ``normalized`` added tokens (MPNet's ``<unk>``),
   as in step 1 (``lstrip`` and ``rstrip`` change no id: the white space they take is dropped in
   step 3 anyway);
3. split on White_Space (removed) and around each punctuation code point (ASCII punctuation or
   P*);
4. WordPiece: a word of more than max_input_chars_per_word code points is the unknown token;
   else the longest vocabulary prefix, then the longest continuation (prefixed ``##``), and so
   on; a word with a remainder no token matches is the unknown token;
5. the first max_length - 2 ids, between the post-processor's two special tokens: the single
   template's ([CLS] and [SEP]) or RobertaProcessing's cls and sep (<s> and </s>). No padding;
   the JSON's own truncation and padding are ignored.

Example:
    >>> tok = TextTokenizer(bundle.encoder.tokenizer_json, 256)                          # doctest: +SKIP
    >>> tok.encode(["Wake me at 7"])                                                 # doctest: +SKIP
    [[101, 5256, 2033, 2012, 1021, 102]]
"""

from __future__ import annotations

import re
from typing import Any, Iterator, Sequence

from runtime.bundle.tokenizer_family import check_tokenizer_json
from runtime.contract import schema
from runtime.unicode import CharSet, charset, lower, nfd

#: Words whose WordPiece ids a tokenizer keeps (most texts repeat common words).
_CACHE_WORDS = 1 << 16


class _Pipeline:
    """The compiled character classes of the normaliser and pre-tokenizer (shared by every
    tokenizer: they depend on the contract only). ``ascii``: each class cut to its members below
    U+0080, for texts of ASCII alone, on which it matches exactly what the whole class matches
    (runtime.unicode.CharSet.ascii); the whole classes are compiled only for the first text that
    needs them."""

    def __init__(self, ascii: bool) -> None:
        rules = schema()["tokenize"]
        cut = (lambda c: c.ascii) if ascii else (lambda c: c)  # noqa: E731
        keep = set(rules["clean_text_keeps"])
        removed = [r for lo, hi in charset("control").ranges for r in _minus(lo, hi, keep)]
        removed += [x for cp in rules["clean_text_removes"] for x in (cp, cp)]
        self.removed = cut(CharSet(sorted_flat(removed))).regex
        self.space = cut(charset("whitespace")).regex
        self.chinese = cut(CharSet(schema()["chinese"])).regex
        self.mark = cut(charset("nonspacing_mark")).regex
        # ASCII punctuation, which BertPreTokenizer isolates besides the punctuation categories.
        punct = cut(charset("punctuation")).body + "".join(map(re.escape, rules["ascii_punctuation"]))
        ws = cut(charset("whitespace")).body
        self.words = re.compile(f"[{punct}]|[^{punct}{ws}]+")


def _minus(lo: int, hi: int, drop: set[int]) -> list[int]:
    """[lo, hi] without the code points of ``drop``, as flat ranges."""
    out: list[int] = []
    start = lo
    for cp in sorted(x for x in drop if lo <= x <= hi):
        if cp > start:
            out += [start, cp - 1]
        start = cp + 1
    if start <= hi:
        out += [start, hi]
    return out


def sorted_flat(flat: list[int]) -> list[int]:
    pairs = sorted(zip(flat[0::2], flat[1::2]))
    return [x for pair in pairs for x in pair]


def _alternation(tokens: dict[str, int]) -> re.Pattern[str] | None:
    """A pattern matching the tokens leftmost, the longest first (None: no token)."""
    longest_first = sorted(tokens, key=len, reverse=True)
    return re.compile("|".join(map(re.escape, longest_first))) if longest_first else None


def _split(text: str, pattern: re.Pattern[str] | None, ids: dict[str, int]) -> Iterator[tuple[str, int | None]]:
    """``text`` as (piece, the id of the added token after it, or None for the last piece), lazily
    (a caller stops at its limit)."""
    pos = 0
    for m in pattern.finditer(text) if pattern is not None else ():
        yield text[pos:m.start()], ids[m.group()]
        pos = m.end()
    yield text[pos:], None


_PIPELINES: dict[bool, _Pipeline] = {}


def _pipeline(text: str) -> _Pipeline:
    """The pipeline for ``text``: the ASCII one for a text of ASCII alone."""
    ascii = text.isascii()
    found = _PIPELINES.get(ascii)
    if found is None:
        found = _PIPELINES[ascii] = _Pipeline(ascii)
    return found


class TextTokenizer:
    """Turns texts into token-id lists, truncated to the encoder's ``max_length``.

    ``tokenizer`` is the tokenizer.json: its text (checked here: BundleError outside the family)
    or the document `runtime.bundle.tokenizer_family.check_tokenizer_json` returned.
    """

    def __init__(self, tokenizer: str | dict[str, Any], max_length: int, text_prefix: str = ""):
        doc = check_tokenizer_json(tokenizer) if isinstance(tokenizer, str) else tokenizer
        n = doc["normalizer"]
        self.clean, self.chinese, self.lowercase = n["clean_text"], n["handle_chinese_chars"], n["lowercase"]
        self.strip = self.lowercase if n["strip_accents"] is None else n["strip_accents"]
        model = doc["model"]
        self.vocab: dict[str, int] = model["vocab"]
        self.unk = self.vocab[model["unk_token"]]
        self.continuing = model["continuing_subword_prefix"]
        self.max_word = model["max_input_chars_per_word"]
        #: Added tokens matched in the text as given (step 1) and in the normalized text (step 2).
        self.added = {t["content"]: t["id"] for t in doc["added_tokens"] if not t["normalized"]}
        self.added_normalized = {t["content"]: t["id"] for t in doc["added_tokens"] if t["normalized"]}
        self._added, self._added_normalized = _alternation(self.added), _alternation(self.added_normalized)
        post = doc["post_processor"]
        if post["type"] == "RobertaProcessing":
            self.first, self.last = post["cls"][1], post["sep"][1]
        else:
            special = lambda piece: post["special_tokens"][piece["SpecialToken"]["id"]]["ids"][0]  # noqa: E731
            self.first, self.last = special(post["single"][0]), special(post["single"][2])
        self.max_length = max_length
        #: Prepended to every text (the bundle's encoder.text_prefix: e5's "query: ", often "").
        self.text_prefix = text_prefix
        self._cache: dict[str, list[int]] = {}

    def normalize(self, piece: str) -> str:
        """BertNormalizer's steps, as configured (step 2 of the module doc)."""
        p = _pipeline(piece)
        if self.clean:
            piece = p.space.sub(" ", p.removed.sub("", piece))
        if self.chinese and not piece.isascii():
            piece = p.chinese.sub(lambda m: f" {m.group()} ", piece)
        if self.strip and not piece.isascii():
            piece = p.mark.sub("", nfd(piece))
        return lower(piece) if self.lowercase else piece

    def _word(self, word: str) -> list[int]:
        ids = self._cache.get(word)
        if ids is not None:
            return ids
        if len(word) > self.max_word:
            ids = [self.unk]
        else:
            ids, start = [], 0
            while start < len(word):
                end = len(word)
                while end > start:
                    sub = word[start:end] if start == 0 else self.continuing + word[start:end]
                    if sub in self.vocab:
                        ids.append(self.vocab[sub])
                        break
                    end -= 1
                if end == start:
                    ids = [self.unk]
                    break
                start = end
        if len(self._cache) < _CACHE_WORDS:
            self._cache[word] = ids
        return ids

    def _pieces(self, text: str, limit: int) -> list[int]:
        """The ids of ``text`` without special tokens, at most ``limit`` of them."""
        ids: list[int] = []
        for piece, added in _split(text, self._added, self.added):
            if piece and self._words(self.normalize(piece), ids, limit):
                return ids[:limit]
            if added is not None:
                ids.append(added)
                if len(ids) >= limit:
                    break
        return ids[:limit]

    def _words(self, normalized: str, ids: list[int], limit: int) -> bool:
        """Append the ids of a normalized piece (split around the normalized added tokens, then
        into words); True once ``limit`` ids are reached."""
        for piece, added in _split(normalized, self._added_normalized, self.added_normalized):
            for m_word in _pipeline(piece).words.finditer(piece) if piece else ():  # stops at the limit
                ids += self._word(m_word.group())
                if len(ids) >= limit:
                    return True
            if added is not None:
                ids.append(added)
                if len(ids) >= limit:
                    return True
        return False

    def has_token(self, text: str) -> bool:
        """Whether ``text`` alone (no prefix) gives at least one token: a query of only white
        space, controls or invisible code points gives none (``query.empty``)."""
        return bool(self._pieces(text, 1))

    def encode_one(self, text: str) -> list[int]:
        """Token ids of one text: the prefix and the text, [CLS] ... [SEP], truncated, no padding."""
        return [self.first, *self._pieces(self.text_prefix + text, self.max_length - 2), self.last]

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """`encode_one` of each text."""
        return [self.encode_one(t) for t in texts]
