"""Text from a bundle or an engine, made safe in one place.

A bundle's labels and descriptions are printed by the CLI and written into JSON lines, and an
engine's error message may quote names from the bundle's model: any of them could carry
terminal escape sequences, reorder a line (bidirectional controls), hide text (tag
characters) or make two labels look alike (zero-width characters, compatibility twins). So:

- `escape` is the one function every such text passes before it reaches a terminal or a JSON
  line: each code point of `UNPRINTABLE` becomes a visible escape (``\\x1b``, ``\\u202e``);
- labels and descriptions may hold none of `UNPRINTABLE` (`unprintable`), and labels must stay
  distinct under `fold` (NFKC, then the `INVISIBLE` code points removed).

The two tables are data, copied exactly by the Java core (android_demo/golden.py hands them to
its tests, which compare). Ranges of code points, inclusive.

Example:
    >>> escape("ok\\x1b[2J\\u202e")
    'ok\\\\x1b[2J\\\\u202e'
    >>> fold("Ｂｉｌｌｉｎｇ\\u200b") == fold("Billing")
    True
"""

from __future__ import annotations

import re
import unicodedata
from typing import Iterable

#: What no label or description may hold and `escape` shows as an escape: the controls (C0,
#: DEL, C1), the bidirectional marks and controls, the line and paragraph separators,
#: surrogates, the interlinear annotation characters, the private-use areas, the tag characters
#: (invisible copies of ASCII) and the noncharacters.
UNPRINTABLE: tuple[tuple[int, int], ...] = (
    (0x0000, 0x001F), (0x007F, 0x009F), (0x061C, 0x061C), (0x200E, 0x200F), (0x2028, 0x202E),
    (0x2066, 0x2069), (0xD800, 0xF8FF), (0xFDD0, 0xFDEF), (0xFFF9, 0xFFFB), (0xFFFE, 0xFFFF),
    (0x1FFFE, 0x1FFFF), (0xE0000, 0xE007F), (0xF0000, 0x10FFFF),
)
#: Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt, 15.1): code points that
#: render as nothing. Allowed in text (Persian needs U+200C), removed before labels are compared.
INVISIBLE: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)


def _class(table: Iterable[tuple[int, int]]) -> re.Pattern[str]:
    """The table as one regular-expression character class: a text of a million characters is
    scanned in C, not character by character in Python."""
    return re.compile("[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in table) + "]")


_UNPRINTABLE, _INVISIBLE = _class(UNPRINTABLE), _class(INVISIBLE)


def unprintable(text: str) -> str | None:
    """The first character of `UNPRINTABLE` in ``text``, or None.

    Example:
        >>> unprintable("fine"), unprintable("bell\\x07")
        (None, '\\x07')
    """
    found = _UNPRINTABLE.search(text)
    return None if found is None else found.group()


def escape(text: str) -> str:
    """``text`` with every `UNPRINTABLE` character shown as its Python escape (\\x.., \\u....,
    \\U........), so it cannot act on a terminal or a reader of the line.

    Example:
        >>> escape("a\\tb\\u2066c\\U000e0041")
        'a\\\\tb\\\\u2066c\\\\U000e0041'
    """
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def fold(text: str) -> str:
    """What a label looks like, for comparing labels: NFKC, invisible code points removed
    (then NFKC again: removing them can bring a base and its mark together).

    Example:
        >>> fold("ﬁle\\u200d") == fold("file")
        True
    """
    return unicodedata.normalize("NFKC", _INVISIBLE.sub("", unicodedata.normalize("NFKC", text)))


def u_plus(c: str) -> str:
    """A character as U+XXXX, the way error messages name it."""
    return f"U+{ord(c):04X}"
