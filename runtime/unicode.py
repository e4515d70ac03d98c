"""The contract's Unicode (format/1/unicode.json): character sets, decomposition, lowercase and
confusables of one pinned version, instead of the platform's.

Python's `unicodedata` and `str.lower` follow the interpreter's Unicode version, the Java and
JavaScript readers their platform's; the contract pins one (docs/bundle-format.md section 3),
so every reader tokenizes a text and compares labels with these tables alone. The algorithms
are the standard ones (Unicode's canonical ordering and Hangul decomposition, UTS #39's
skeleton); only the data is pinned. Each table becomes what Python runs fastest: a compiled
character class for scanning (`re`), a `str.translate` table for mappings.

Example:
    >>> nfd("é") == "e\\u0301", nfkd("ﬁ"), lower("İ") == "i\\u0307", lower("ΑΣ")
    (True, 'fi', True, 'ασ')
"""

from __future__ import annotations

import bisect
import functools
import re
from typing import Iterable

from runtime.contract import unicode as _tables

_S_BASE, _L_BASE, _V_BASE, _T_BASE = 0xAC00, 0x1100, 0x1161, 0x11A7
_V_COUNT, _T_COUNT = 21, 28
_N_COUNT, _S_COUNT = _V_COUNT * _T_COUNT, 19 * _V_COUNT * _T_COUNT


class CharSet:
    """A set of code points given as flat inclusive ranges ``[lo, hi, lo, hi, ...]``.

    Its character class is compiled on first use, and a text of ASCII alone is scanned with the
    set's ASCII members only (`regex_for`): the same matches, since such a text holds no other
    code point, without compiling a class of thousands of ranges (milliseconds each) for the
    one short text a process may classify."""

    def __init__(self, flat: Iterable[int]):
        flat = list(flat)
        self.ranges = list(zip(flat[0::2], flat[1::2]))
        self._starts = [lo for lo, _ in self.ranges]

    @functools.cached_property
    def body(self) -> str:
        """The ranges as the inside of a character class ("" for the empty set)."""
        return "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in self.ranges)

    @functools.cached_property
    def pattern(self) -> str:
        """One character of the set (a character class: a long text is scanned in C)."""
        return f"[{self.body}]" if self.body else "(?!)"

    @functools.cached_property
    def regex(self) -> re.Pattern[str]:
        return re.compile(self.pattern)

    @functools.cached_property
    def ascii(self) -> "CharSet":
        """The set's members below U+0080."""
        return CharSet([x for lo, hi in self.ranges if lo < 0x80 for x in (lo, min(hi, 0x7F))])

    def regex_for(self, text: str) -> re.Pattern[str]:
        """A compiled class that finds in ``text`` exactly what `regex` finds."""
        return self.ascii.regex if text.isascii() else self.regex

    def __contains__(self, ch: str | int) -> bool:
        cp = ch if isinstance(ch, int) else ord(ch)
        i = bisect.bisect_right(self._starts, cp) - 1
        return i >= 0 and cp <= self.ranges[i][1]

    def first(self, text: str) -> str | None:
        """The first character of ``text`` in the set, or None."""
        found = self.regex_for(text).search(text)
        return None if found is None else found.group()

    def remove(self, text: str) -> str:
        return self.regex_for(text).sub("", text)


@functools.cache
def charset(name: str) -> CharSet:
    """A set of unicode.json's ``sets`` (control, whitespace, punctuation, nonspacing_mark,
    unassigned, default_ignorable, blank)."""
    return CharSet(_tables()["sets"][name])


def _mapping(flat: list[int], below: int = 0x110000) -> dict[int, str]:
    """A table ``[cp, n, n code points, ...]`` as a `str.translate` table, its code points below
    ``below`` only (the tables are in code point order: tests/test_fast_paths.py holds them to it)."""
    out, i = {}, 0
    while i < len(flat) and flat[i] < below:
        cp, n = flat[i], flat[i + 1]
        out[cp] = "".join(map(chr, flat[i + 2:i + 2 + n]))
        i += 2 + n
    return out


def _hangul() -> dict[int, str]:
    out = {}
    for s in range(_S_COUNT):
        lv = chr(_L_BASE + s // _N_COUNT) + chr(_V_BASE + (s % _N_COUNT) // _T_COUNT)
        out[_S_BASE + s] = lv + (chr(_T_BASE + s % _T_COUNT) if s % _T_COUNT else "")
    return out


@functools.cache
def _canonical() -> dict[int, str]:
    return {**_mapping(_tables()["decomposition"]), **_hangul()}


@functools.cache
def _compatibility() -> dict[int, str]:
    return {**_canonical(), **_mapping(_tables()["compatibility"])}


@functools.cache
def _combining() -> tuple[dict[int, int], re.Pattern[str]]:
    """Each code point's canonical combining class (non-zero ones), and a pattern of two or
    more such code points in a row (the runs canonical ordering sorts)."""
    flat = _tables()["combining_class"]
    classes: dict[int, int] = {}
    for i in range(0, len(flat), 3):
        for cp in range(flat[i], flat[i + 1] + 1):
            classes[cp] = flat[i + 2]
    body = CharSet([x for i in range(0, len(flat), 3) for x in flat[i:i + 2]]).pattern
    return classes, re.compile(f"{body}{{2,}}")


def _reorder(text: str) -> str:
    """Canonical ordering: every run of non-starters sorted by combining class, stably."""
    classes, runs = _combining()
    return runs.sub(lambda m: "".join(sorted(m.group(), key=lambda c: classes[ord(c)])), text)


def nfd(text: str) -> str:
    """Canonical decomposition (Unicode NFD) with the contract's tables."""
    if text.isascii():
        return text
    return _reorder(text.translate(_canonical()))


def nfkd(text: str) -> str:
    """Compatibility decomposition (Unicode NFKD) with the contract's tables."""
    if text.isascii():
        return text
    return _reorder(text.translate(_compatibility()))


@functools.cache
def _lowercase() -> dict[int, str]:
    return _mapping(_tables()["lowercase"])


def lower(text: str) -> str:
    """Each code point's full lowercase mapping, with no context (a final sigma stays σ)."""
    return text.lower() if text.isascii() else text.translate(_lowercase())


@functools.cache
def _confusable(below: int = 0x110000) -> dict[int, str]:
    return _mapping(_tables()["confusable"], below)


def prototypes(text: str) -> str:
    """Each code point replaced by its UTS #39 prototype (itself when it has none). A text of
    ASCII alone needs the table's ASCII entries only (the whole table takes 12 ms to build)."""
    return text.translate(_confusable(0x80) if text.isascii() else _confusable())
