"""Checks the runtime's normalization, made from format/1/unicode.json, against the UCD itself.

    pip install unicodedata2==18.0.0
    python format/tools/check_unicode.py [--strings 20000] [--seed 1]

gen_unicode.py writes the tables; the readers apply them with their own code (runtime/unicode.py
in Python, the same algorithm in Java and TypeScript, held equal by the corpus and
tests/fuzz/reader_agreement.py). This compares runtime.unicode's NFD and NFKD with unicodedata2's
(the C implementation of the same Unicode version) on every code point and on random strings
weighted towards combining marks, where canonical reordering can go wrong. It prints a table and
exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from runtime import unicode as U  # noqa: E402

FORMS = (("NFD", U.nfd), ("NFKD", U.nfkd))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--strings", type=int, default=20000)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    try:
        import unicodedata2 as ucd
    except ImportError:
        sys.exit("check_unicode: pip install unicodedata2==18.0.0")
    if ucd.unidata_version != "18.0.0":
        sys.exit(f"check_unicode: unicodedata2 has Unicode {ucd.unidata_version}, the contract 18.0.0")
    scalars = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]
    marks = [cp for cp in scalars if ucd.combining(chr(cp))]
    rng = random.Random(args.seed)
    strings = ["".join(chr(rng.choice(marks if rng.random() < 0.5 else scalars)) for _ in range(rng.randint(1, 8)))
               for _ in range(args.strings)]
    print("| form | inputs | differences |\n|---|---:|---:|")
    bad = 0
    for what, inputs in (("code points", [chr(cp) for cp in scalars]), ("strings", strings)):
        for name, ours in FORMS:
            diff = [s for s in inputs if ours(s) != ucd.normalize(name, s)]
            print(f"| {name} of {what} | {len(inputs):,} | {len(diff)} |")
            for s in diff[:5]:
                print(f"  {name} {[hex(ord(c)) for c in s]}: {[hex(ord(c)) for c in ours(s)]}", file=sys.stderr)
            bad += len(diff)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
