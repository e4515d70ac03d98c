"""Writes format/1/unicode.json: the Unicode tables every reader uses, from one Unicode version.

    pip install unicodedata2==18.0.0          # the UCD's categories, combining classes, decompositions
    npm pack @unicode/unicode-18.0.0          # White_Space, Default_Ignorable_Code_Point, lowercase
    python format/tools/gen_unicode.py --npm PACKAGE_DIR --confusables confusables.txt

Why tables and not the platform: Python, Java and JavaScript each normalise, lower-case and
classify text with the Unicode version their release was built with (Python 3.11: 14.0, JDK 17:
13.0, Node 20: 15.1 or later), so two readers could tokenize one text differently or judge two
labels alike in one and distinct in another. The contract pins one version; every reader
interprets these tables and no platform Unicode function.

The sources, all of Unicode 18.0.0: the Unicode Character Database through unicodedata2 (general
category, canonical combining class, decomposition mappings), node-unicode-data's
@unicode/unicode-18.0.0 (White_Space, Default_Ignorable_Code_Point, the simple and the
unconditional special lowercase mappings) and UTS #39's confusables.txt (version line checked).

Layout (docs/bundle-format.md section 3 says how each table is used):

- ``sets``: name -> sorted inclusive code point ranges, flat ``[lo, hi, lo, hi, ...]``;
- ``combining_class``: ``[lo, hi, class, ...]`` for every code point whose class is not 0;
- ``decomposition``: ``[cp, n, c1..cn, ...]``, each code point's full canonical decomposition
  (applied recursively already; Hangul syllables are decomposed by the algorithm, not listed);
- ``compatibility``: the same for the full compatibility decomposition, only where it differs
  from the canonical one;
- ``lowercase``: ``[cp, n, c1..cn, ...]``, the full lowercase mapping of each code point that
  changes (the unconditional special casing, else the simple mapping; no context);
- ``confusable``: ``[cp, n, c1..cn, ...]``, UTS #39's prototype of each confusable code point.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

VERSION = "18.0.0"
MAX_CP = 0x10FFFF

_DUMP_NPM = """
const base = process.argv[1];
const imp = async (p) => (await import(`${base}/${p}`)).default;
process.stdout.write(JSON.stringify({
  white_space: await imp("Binary_Property/White_Space/code-points.mjs"),
  default_ignorable: await imp("Binary_Property/Default_Ignorable_Code_Point/code-points.mjs"),
  simple_lower: [...(await imp("Simple_Case_Mapping/Lowercase/code-points.mjs")).entries()],
  special_lower: [...(await imp("Special_Casing/Lowercase/code-points.mjs")).entries()],
}));
"""

#: Graphic code points that render as nothing in common fonts (beyond White_Space, the
#: default-ignorable code points, separators, controls and combining marks): a label made of
#: them would print as empty. Braille's blank pattern and the musical null notehead.
EXTRA_BLANK = (0x2800, 0x1D159)


def ranges(cps: set[int]) -> list[int]:
    """Sorted code points as flat inclusive ranges."""
    out: list[int] = []
    for cp in sorted(cps):
        if out and out[-1] == cp - 1:
            out[-1] = cp
        else:
            out += [cp, cp]
    return out


def _full(cp: int, ud, compat: bool) -> list[int]:
    """cp's full decomposition (canonical only, or canonical and compatibility), recursively."""
    raw = ud.decomposition(chr(cp))
    if not raw or (raw.startswith("<") and not compat):
        return [cp]
    parts = raw.split()
    if parts[0].startswith("<"):
        parts = parts[1:]
    out: list[int] = []
    for p in parts:
        out += _full(int(p, 16), ud, compat)
    return out


def _mapping(table: dict[int, list[int]]) -> list[int]:
    flat: list[int] = []
    for cp in sorted(table):
        flat += [cp, len(table[cp]), *table[cp]]
    return flat


def confusables(path: Path) -> dict[int, list[int]]:
    text = path.read_text(encoding="utf-8-sig")
    if f"# Version: {VERSION}" not in text:
        raise SystemExit(f"{path} is not confusables.txt of Unicode {VERSION}")
    table: dict[int, list[int]] = {}
    for line in text.splitlines():
        body = line.split("#", 1)[0].strip()
        if not body:
            continue
        source, target, kind = (x.strip() for x in body.split(";")[:3])
        if kind != "MA":
            raise SystemExit(f"unexpected confusable type {kind!r} in {line!r}")
        table[int(source, 16)] = [int(x, 16) for x in target.split()]
    return table


def build(npm_dir: Path, confusables_file: Path) -> dict:
    import unicodedata2 as ud

    if ud.unidata_version != VERSION:
        raise SystemExit(f"unicodedata2 has Unicode {ud.unidata_version}, not {VERSION}: pip install unicodedata2=={VERSION}")
    npm = json.loads(subprocess.run(["node", "--input-type=module", "-e", _DUMP_NPM, str(npm_dir.resolve())],
                                    check=True, capture_output=True, text=True).stdout)
    category = {cp: ud.category(chr(cp)) for cp in range(MAX_CP + 1)}
    by_cat: dict[str, set[int]] = {}
    for cp, cat in category.items():
        by_cat.setdefault(cat, set()).add(cp)

    def cats(*names: str) -> set[int]:
        return set().union(*(by_cat.get(n, set()) for n in names))

    white_space = set(npm["white_space"])
    default_ignorable = set(npm["default_ignorable"])
    sets = {
        "control": cats("Cc", "Cf", "Co", "Cs"),
        "whitespace": white_space,
        "punctuation": cats("Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po"),
        "nonspacing_mark": cats("Mn"),
        "unassigned": cats("Cn"),
        "default_ignorable": default_ignorable,
        "blank": white_space | default_ignorable | cats("Zs", "Zl", "Zp", "Cc", "Cf", "Mn", "Me") | set(EXTRA_BLANK),
    }
    combining: list[int] = []
    for cp in range(MAX_CP + 1):
        c = ud.combining(chr(cp))
        if c:
            if combining and combining[-2] == cp - 1 and combining[-1] == c:
                combining[-2] = cp
            else:
                combining += [cp, cp, c]
    canonical: dict[int, list[int]] = {}
    compatibility: dict[int, list[int]] = {}
    for cp in range(MAX_CP + 1):
        if 0xAC00 <= cp <= 0xD7A3 or not ud.decomposition(chr(cp)):
            continue
        nfd, nfkd = _full(cp, ud, False), _full(cp, ud, True)
        if nfd != [cp]:
            canonical[cp] = nfd
        if nfkd != nfd:
            compatibility[cp] = nfkd
    lower: dict[int, list[int]] = {cp: [to] for cp, to in npm["simple_lower"] if to != cp}
    for cp, to in npm["special_lower"]:  # the unconditional special casing wins over the simple mapping
        if to != [cp]:
            lower[cp] = list(to)
    return {
        "unicode_version": VERSION,
        "sources": f"Unicode Character Database {VERSION} (unicodedata2 {VERSION}; @unicode/unicode-{VERSION}) and "
                   f"UTS #39 confusables.txt {VERSION}; written by format/tools/gen_unicode.py",
        "sets": {name: ranges(cps) for name, cps in sets.items()},
        "combining_class": combining,
        "decomposition": _mapping(canonical),
        "compatibility": _mapping(compatibility),
        "lowercase": _mapping(lower),
        "confusable": _mapping(confusables(confusables_file)),
    }


def dumps(tables: dict) -> str:
    """JSON with one table per line (diffs stay readable, the file stays small)."""
    lines = ["{"]
    items = list(tables.items())
    for i, (key, value) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        if isinstance(value, dict):
            inner = ",\n".join(f"    {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}" for k, v in value.items())
            lines.append(f"  {json.dumps(key)}: {{\n{inner}\n  }}{comma}")
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value, separators=(',', ':'))}{comma}")
    return "\n".join(lines + ["}"]) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--npm", type=Path, required=True, help="the unpacked @unicode/unicode-18.0.0 package folder")
    ap.add_argument("--confusables", type=Path, required=True, help="UTS #39 confusables.txt of the same version")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "1" / "unicode.json")
    args = ap.parse_args(argv)
    args.out.write_text(dumps(build(args.npm, args.confusables)), encoding="utf-8")
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
