"""Writes the generated tables of docs/bundle-format.md from runtime/bundle/schema.py.

    python docs/format_tables.py          # rewrite the tables in place
    python docs/format_tables.py --check  # exit 1 if they differ (the test suite runs this)

The specification's field table, shape symbols, conditions and relations are the schema's
data printed as Markdown between the markers ``<!-- generated: NAME -->`` and
``<!-- end: NAME -->``; everything else in the document is written by hand.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runtime.bundle import schema  # noqa: E402
from runtime.text import INVISIBLE, UNPRINTABLE  # noqa: E402

SPEC = ROOT / "docs" / "bundle-format.md"
_KINDS = {"map": "map", "str": "string", "int": "integer", "float": "float", "bool": "boolean", "bin": "bin",
          "version": "array [int, int]", "strings": "array of strings", "ndarray": "array record"}


def _num(x: float) -> str:
    """A bound exactly, as people read it (2^31 - 1, 1 000 000, 1e-06)."""
    for value, name in ((2**64 - 1, "2^64 - 1"), (2**31 - 1, "2^31 - 1"), (2**31, "2^31"),
                        ((2**31 - 1) / 1e-6, "(2^31 - 1) / 1e-6")):
        if x == value:
            return name
    if float(x).is_integer() and abs(x) < 1e15:
        n = int(x)
        return f"{n:,}".replace(",", " ") if n >= 100_000 else str(n)
    return f"{x:g}"


def _bounds(f: schema.Field) -> str:
    parts = []
    if f.kind == "ndarray":
        parts.append(f"`{f.dtype}` [{', '.join(f.shape)}]")
    if f.choices:
        parts.append(" or ".join(f"`{c}`" for c in f.choices))
    if f.low is not None or f.high is not None:
        what = {"bin": "bytes ", "strings": "items "}.get(f.kind, "")
        lo, hi = f.low, f.high
        if lo is not None and lo == hi:
            parts.append(f"{what}= {_num(lo)}")
        else:
            parts.append(f"{what}{_num(lo) if lo is not None else ''}..{_num(hi) if hi is not None else ''}")
    if f.text:
        parts.append(f.text)
    if f.open:
        parts.append("free keys; no bin, finite floats")
    return "; ".join(parts)


def tables() -> dict[str, str]:
    """The generated sections, by marker name."""
    rows = ["| field | type | present | shape, bounds, text | meaning |", "|---|---|---|---|---|"]
    for f in schema.FIELDS:
        need = f.need.replace("iff ", "iff *") + ("*" if f.need.startswith("iff ") else "")
        rows.append(f"| `{f.path}` | {_KINDS[f.kind]} | {need} | {_bounds(f)} | {f.doc} |")
    dims = ["| symbol | defined by | bounds |", "|---|---|---|"]
    dims += [f"| {s} | {where} | {lo}..{_num(hi)} |" for s, (where, lo, hi) in schema.DIMS.items()]
    conditions = [f"- *{name}*: {text}" for name, text in schema.CONDITIONS.items()]
    relations = [f"{i}. **{name}**: {text}" for i, (name, text) in enumerate(schema.RELATIONS, 1)]

    def ranges(table: tuple[tuple[int, int], ...]) -> str:
        return ", ".join(f"{lo:04X}" if lo == hi else f"{lo:04X}-{hi:04X}" for lo, hi in table)

    text = [f"- unprintable (refused in printable text, escaped on output): {ranges(UNPRINTABLE)}",
            f"- invisible (removed before labels are compared): {ranges(INVISIBLE)}"]
    return {"fields": "\n".join(rows), "dims": "\n".join(dims), "conditions": "\n".join(conditions),
            "relations": "\n".join(relations), "text": "\n".join(text)}


def render(doc: str) -> str:
    """``doc`` with every generated section replaced by its current text."""
    for name, body in tables().items():
        pattern = re.compile(rf"(<!-- generated: {name} -->\n)(?:.*?\n)?(<!-- end: {name} -->)", re.S)
        if not pattern.search(doc):
            raise SystemExit(f"{SPEC}: no section '<!-- generated: {name} -->'")
        doc = pattern.sub(lambda m: m.group(1) + body + "\n" + m.group(2), doc)
    return doc


def main(argv: list[str]) -> int:
    doc = SPEC.read_text(encoding="utf-8")
    new = render(doc)
    if "--check" in argv:
        if new != doc:
            print(f"{SPEC} differs from runtime/bundle/schema.py: run python docs/format_tables.py", file=sys.stderr)
            return 1
        return 0
    SPEC.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
