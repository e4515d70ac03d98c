"""Text from a bundle or an engine, made safe in one place; and the label rules.

A bundle's labels and descriptions are printed by the CLI and written into JSON lines, and an
engine's error message may quote names from the bundle's model: any of them could carry
terminal escape sequences, reorder a line (bidirectional controls), hide text (tag characters)
or make two labels look alike (zero-width characters, compatibility twins, letters of another
script). So, with the contract's tables (format/1/schema.json "text", format/1/unicode.json):

- `escape` is the one function text passes where it leaves the runtime (a terminal, a JSON
  line, an exception's message): each *unprintable* code point becomes a visible escape
  (``\\x1b``, ``\\u202e``); escaping twice changes nothing;
- printable text holds no unprintable code point; labels and descriptions hold no code point
  unassigned in the contract's Unicode version and must show something (`shows_something`);
- no two labels may have the same `label_key`: the code points shown alike (compatibility
  decomposition, default-ignorable code points removed, UTS #39 confusables) compare equal.

Example:
    >>> escape("ok\\x1b[2J\\u202e")
    'ok\\\\x1b[2J\\\\u202e'
    >>> label_key("Ｂｉｌｌｉｎｇ\\u200b") == label_key("Billing"), label_key("wеather") == label_key("weather")
    (True, True)
"""

from __future__ import annotations

import functools
from typing import TextIO

from runtime.contract import schema
from runtime.unicode import CharSet, charset, nfkd, prototypes


@functools.cache
def _unprintable() -> CharSet:
    return CharSet(schema()["text"]["unprintable"])


def unprintable(text: str) -> str | None:
    """The first unprintable character of ``text``, or None.

    Example:
        >>> unprintable("fine"), unprintable("bell\\x07")
        (None, '\\x07')
    """
    return _unprintable().first(text)


def _escape_one(c: str) -> str:
    cp = ord(c)
    if c in "\t\n\r":
        return {"\t": "\\t", "\n": "\\n", "\r": "\\r"}[c]
    return f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}"


def escape(text: str) -> str:
    """``text`` with every unprintable character shown as an escape (\\t, \\n, \\r, \\xNN, \\uNNNN,
    \\UNNNNNNNN), so it cannot act on a terminal or a reader of the line.

    Example:
        >>> escape("a\\tb\\u2066c\\U000e0041")
        'a\\\\tb\\\\u2066c\\\\U000e0041'
    """
    return _unprintable().regex_for(text).sub(lambda m: _escape_one(m.group()), text)


def _json_one(c: str) -> str:
    cp = ord(c)
    if cp < 0x10000:
        return f"\\u{cp:04x}"
    cp -= 0x10000
    return f"\\u{0xD800 + (cp >> 10):04x}\\u{0xDC00 + (cp & 0x3FF):04x}"


def escape_json(line: str) -> str:
    """A JSON text (a JSON encoder's output) with every unprintable character from U+007F on
    written as a JSON escape (\\uNNNN, a surrogate pair beyond the first plane): the same JSON
    value, safe on a terminal. Below U+007F the encoder has escaped them inside strings already,
    and outside strings they are its own white space (a line break of an indented document).

    Example:
        >>> escape_json('{"label": "a\u202eb\x85"}')
        '{"label": "a\\\\u202eb\\\\u0085"}'
    """
    return _unprintable().regex_for(line).sub(lambda m: m.group() if m.group() < "\x7f" else _json_one(m.group()), line)


def say(stream: TextIO, *fields: str, json: bool = False) -> None:
    """Write one line to ``stream`` (a terminal, a pipe, a JSON-lines file): its fields, each
    through `escape` (or `escape_json`), between tabs. The one place a command line prints text
    that may come from a bundle, an engine or a query; it flushes, so a person typing sees each
    answer at once."""
    stream.write("\t".join(escape_json(f) if json else escape(f) for f in fields) + "\n")
    stream.flush()


def unassigned(text: str) -> str | None:
    """The first code point of ``text`` that the contract's Unicode version does not assign."""
    return charset("unassigned").first(text)


def shows_something(text: str) -> bool:
    """Whether ``text`` holds a code point outside the blank set (white space, default-ignorable
    and format characters, separators, controls, combining marks, blank symbols such as the
    braille blank): text of blanks alone prints as nothing.

    Example:
        >>> shows_something("\\u2800\\u3164 \\u200b"), shows_something("a")
        (False, True)
    """
    return bool(charset("blank").remove(text))


def fold(text: str) -> str:
    """What a text reads as: NFKD, default-ignorable code points removed, NFKD again (removing
    them can bring marks together that canonical ordering then sorts).

    Example:
        >>> fold("ﬁle\\u200d") == fold("file")
        True
    """
    ignorable = charset("default_ignorable")
    return nfkd(ignorable.remove(nfkd(text)))


def label_key(text: str) -> str:
    """What a label looks like, for comparing labels: its `fold` with every code point replaced
    by its UTS #39 prototype, then folded again. Two labels with one key are refused."""
    return fold(prototypes(fold(text)))


def u_plus(c: str) -> str:
    """A character as U+XXXX, the way error messages name it."""
    return f"U+{ord(c):04X}"
