"""The runtime's own tokenizer against Hugging Face's `tokenizers` (Rust) on a real tokenizer.json.

    python benchmarks/tokenizer_agreement.py --bundle B.dpedge [--random 3000] [--seed 0]

Every reader tokenizes with the contract's WordPiece and format/1/unicode.json (Unicode 18.0)
rather than a tokenizer library, so that the three readers agree by construction. This measures
what that costs against the library the encoder was trained with: how many texts get other
token ids (the test texts of ../shared/data's four datasets, plus random strings of any code
point), and the time per text of each, in the same process (ratios, not absolute times).
Differences are expected only where the library's Unicode (older than 18.0) does not know a
code point; the first few are printed with their code points. Needs the exporter's
environment (`tokenizers` is not a runtime dependency).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runtime import bundle as fmt  # noqa: E402
from runtime.bundle.tokenizer_family import check_tokenizer_json  # noqa: E402
from runtime.text import escape  # noqa: E402
from runtime.tokenizer import TextTokenizer  # noqa: E402

DATA = ROOT.parent / "shared" / "data"


def texts(n_random: int, seed: int) -> dict[str, list[str]]:
    """The datasets' test texts and random strings, by source."""
    out = {}
    for name in ("trec", "agnews", "cr", "sst2"):
        path = DATA / name / "test.jsonl"
        if path.is_file():
            out[name] = [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line]
    rng = random.Random(seed)
    scalars = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]
    out["random"] = ["".join(chr(rng.choice(scalars)) if rng.random() < 0.3 else rng.choice("abc Xyz.,! é")
                             for _ in range(rng.randint(1, 30))) for _ in range(n_random)]
    return out


def per_text_us(fn, items: list[str], rounds: int = 5) -> float:
    """Median over rounds of the mean time per text."""
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for t in items:
            fn(t)
        times.append((time.perf_counter() - t0) / len(items) * 1e6)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bundle", type=Path, required=True)
    p.add_argument("--random", type=int, default=3000)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    from tokenizers import Tokenizer  # the exporter's environment only

    enc = fmt.load(args.bundle).encoder
    ours = TextTokenizer(check_tokenizer_json(enc.tokenizer_json), enc.max_length, enc.text_prefix)
    rust = Tokenizer.from_str(enc.tokenizer_json)
    rust.no_padding()
    rust.enable_truncation(enc.max_length)
    print("| texts | count | different token ids | ours µs/text | tokenizers µs/text | ours / tokenizers |")
    print("|---|---:|---:|---:|---:|---:|")
    shown = 0
    for source, items in texts(args.random, args.seed).items():
        differ = [t for t in items if ours.encode_one(t) != rust.encode(enc.text_prefix + t).ids]
        sample = items[:500]
        a, b = per_text_us(ours.encode_one, sample), per_text_us(lambda t: rust.encode(enc.text_prefix + t), sample)
        print(f"| {source} | {len(items):,} | {len(differ)} | {a:.1f} | {b:.1f} | {a / b:.2f} |")
        for t in differ[: max(0, 5 - shown)]:
            print(f"  {source}: {escape(t[:40])} {[hex(ord(c)) for c in t[:8]]}", file=sys.stderr)
            shown += 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
