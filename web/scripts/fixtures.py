"""What the TypeScript runtime's tests compare with, made by the Python side from a fresh clone.

    .venv/bin/python web/scripts/fixtures.py --out DIR     # then: DPEDGE_WEB_FIXTURES=DIR npm test (in web/)

It writes into DIR (replaced):

- golden/: android_demo/golden.py's folder, with the four real bundles it builds from
  data/assistant at epsilon 8 (the exporter's default with the ONNX and with the TFLite
  encoder, one with vote tables too, one of vote tables alone), the Python runtime's token
  ids, embeddings, buckets, scores and labels for 205 texts on each, the scored, malformed and
  valid bundles and the text tables;
- quickstart.dpedge (the default ONNX bundle, as `make quickstart` builds it) and
  quickstart.json: `python -m runtime.classify --json --top-k 2` on the quick start's seven
  texts (the Makefile's), which the demo page must answer alike;
- probe.msgpack: the Python tokenizer's ids for every Unicode code point (each inside a word
  and alone), with the bundle's tokenizer.json and three other BertNormalizer settings of it;
- pyrepr.json: Python's repr and format(x, ".Ng") of floats, which error messages quote.

It needs the project's .venv with the export and tflite extras (`make test` installs them)
and takes about two minutes here, most of it building the bundles.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import msgpack

WEB = Path(__file__).resolve().parents[1]
ROOT = WEB.parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path[:0] = [str(ROOT)]


def quickstart_texts() -> list[str]:
    """The seven texts of the Makefile's quickstart target, read from it (not copied)."""
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    block = make[make.index("quickstart: "):]
    block = block[:block.index("\n\n")]
    return re.findall(r'"([^"]+)"', block)


def probe(bundle: Path) -> dict:
    """The Python tokenizer's ids, code point by code point (see the module doc)."""
    from tokenizers import Tokenizer

    from runtime import bundle as fmt

    base = json.loads(fmt.load(bundle).encoder.tokenizer_json)
    points = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    bmp = [c for c in points if c < 0x10000]
    configs = {
        "bundle": ({}, points),
        "cased": ({"lowercase": False, "strip_accents": None}, bmp),
        "accents-stripped-cased": ({"lowercase": False, "strip_accents": True}, bmp),
        "raw": ({"clean_text": False, "handle_chinese_chars": False, "strip_accents": False}, bmp),
    }
    extra = ["[CLS] wake me [SEP] up [MASK]", "a[UNK]b [PAD][PAD]", "ΣΑΣ ΟΔΟΣ σ ς Σ.", "İstanbul ǅ ß ẞ ﬁ", "\u0130\u0307",
             "e\u0301\u0316 a\u0316\u0301 \u1e0b\u0323", "x" * 101, "\u3000\u00a0\u2003tabs\t\x0b\x0c\x85end"]
    out = {}
    for name, (change, cps) in configs.items():
        doc = json.loads(json.dumps(base))
        doc["normalizer"].update(change)
        text = json.dumps(doc)
        tok = Tokenizer.from_str(text)
        tok.no_padding()
        tok.no_truncation()
        texts = [" ".join(f"x{chr(c)}y q{chr(c)} " for c in cps[i:i + 400]) for i in range(0, len(cps), 400)] + extra
        out[name] = {"tokenizer_json": text, "texts": texts,
                     "ids": [e.ids for e in tok.encode_batch(texts, add_special_tokens=True)]}
    return out


def float_cases() -> list[dict]:
    """Floats and how Python's repr and format(x, ".Ng") write them."""
    rnd = random.Random(20261125)
    xs = [0.0, -0.0, 1.0, 8.0, 0.5, 2.5, 1e-06, 5e-07, 2e6, 1e16, 1e15, 123456789012345678.0, 4294967294000000.0,
          2147483647 / 1e-6, 0.1 + 0.2, 1 / 3, 9.999995, 0.000123456, 1.25, 1.35, 2.675, 1e-300, 5e-324, 1.7976931348623157e308]
    for _ in range(3000):
        kind = rnd.random()
        if kind < 0.3:
            x = rnd.uniform(-1, 1) * 10 ** rnd.randint(-12, 20)
        elif kind < 0.6:
            x = round(rnd.uniform(0, 1000), rnd.randint(0, 6))
        elif kind < 0.8:
            x = rnd.randint(0, 10 ** rnd.randint(1, 18)) / 10 ** rnd.randint(0, 8)
        else:
            x = struct_double(rnd.getrandbits(64))
        if math.isfinite(x):
            xs.append(x)
    return [{"x": x, "repr": repr(x), "g4": f"{x:.4g}", "g6": f"{x:.6g}", "g10": f"{x:.10g}"} for x in xs]


def struct_double(bits: int) -> float:
    import struct
    return struct.unpack("<d", bits.to_bytes(8, "little"))[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="folder to write (replaced)")
    ap.add_argument("--bundle", type=Path, action="append",
                    help="golden.py's --bundle (default: it builds its four bundles from data/assistant)")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    python = sys.executable
    golden_args = [python, str(ROOT / "android_demo" / "golden.py"), "--out", str(args.out / "golden")]
    for b in args.bundle or []:
        golden_args += ["--bundle", str(b)]
    subprocess.run(golden_args, cwd=ROOT, check=True)
    from runtime import bundle as fmt

    bundles = sorted((args.out / "golden").glob("*.dpedge"))
    default = next(b for b in bundles if (lambda x: x.encoder.format == "onnx" and x.votes is None)(fmt.load(b)))
    quickstart = args.out / "quickstart.dpedge"
    shutil.copy(default, quickstart)
    texts = quickstart_texts()
    run = subprocess.run([python, "-m", "runtime.classify", "--bundle", str(quickstart), "--json", "--top-k", "2", *texts],
                         cwd=ROOT, check=True, capture_output=True, text=True)
    answers = [json.loads(line) for line in run.stdout.splitlines() if line]
    (args.out / "quickstart.json").write_text(json.dumps({"texts": texts, "answers": answers}, indent=1), encoding="utf-8")
    (args.out / "probe.msgpack").write_bytes(msgpack.packb(probe(default), use_bin_type=True))
    (args.out / "pyrepr.json").write_text(json.dumps(float_cases()), encoding="utf-8")
    print(f"wrote {args.out} in {time.monotonic() - t0:.0f} s: golden/ ({len(bundles)} bundles), quickstart.dpedge and "
          f"quickstart.json ({len(texts)} texts), probe.msgpack, pyrepr.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
