"""Golden vectors for the Java core: what the Python runtime answers, for the JVM to reproduce.

    python android_demo/golden.py --out DIR [--bundle B ...]

Without --bundle it builds two real DP bundles from the project's own data/assistant set
(epsilon 8, seed 1234): one with the int8 ONNX encoder, one with the int8 TFLite encoder.
For each bundle and each text of a varied sample (accents, punctuation, CJK, emoji, control
and combining characters, right-to-left scripts, over-long words and texts, plus the
assistant test set) it records the Python runtime's token ids, the encoder's embedding, the
bucket id per table, the per-label scores and the label. It also writes malformed variants
of the ONNX bundle, each with a phrase its error message must contain, and checks that the
Python reader rejects each with that phrase, so both readers are held to the same cases.

Everything goes into DIR: golden.msgpack (layout in android_demo/README.md), the bundles and
malformed/*.dpedge. The Java tests (android_demo/core/run-tests.sh DIR) read it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Callable

import msgpack
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from runtime import BundleError, Classifier  # noqa: E402
from runtime import bundle as fmt  # noqa: E402

DATA = ROOT / "data" / "assistant"

#: Texts chosen to exercise every step of BERT's normaliser, pre-tokenizer and WordPiece.
SAMPLE = [
    "wake me up at 6:30 tomorrow",
    "Turn OFF the lights in the LIVING room!!!",
    "Café crème, naïve résumé, Ångström, Øresund, façade",
    "Zürich → Genève (via Bern); ETA 14h05?",
    "what's the weather like... in São Paulo?",
    "don't/can't/won't — it's \"quoted\" and 'single' [brackets] {braces} <angles>",
    "email me at ana.silva@example.com or visit https://example.org/a?b=c&d=e#frag",
    "东京明天的天气怎么样？",
    "日本語のテキスト：カタカナとひらがな、漢字。",
    "한국어 문장도 테스트합니다",
    "𠮷野家 and 𩸽 are outside the basic CJK plane",
    "Play Beyoncé 🎵🎶 and 👍🏽 with a family 👨‍👩‍👧 emoji",
    "مرحبا، كيف حالك؟ — Arabic, right to left",
    "שלום עולם",
    "ภาษาไทยไม่มีช่องว่าง",
    "Ελληνικά: αβγ ΔΕΖ",
    "Русский текст с Ёлкой",
    "e\u0301 combining acute, n\u0303 combining tilde, A\u030a ring",
    "zero\u200bwidth\u200cjoiner\u200dtest and soft\u00adhyphen",
    "tabs\tand\nnewlines\r\nand  double  spaces",
    "control \x01\x02\x7f chars and a NUL \x00 in the middle",
    "replacement char \ufffd here",
    "x",
    "?",
    "OK",
    "1234567890 3.14159 1,000,000 -42 +7 50%",
    "a" * 120 + " after a word longer than one hundred characters",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "#hashtag @mention $dollar ^caret *star ~tilde `backtick` |pipe| \\backslash",
    " ".join(["the quick brown fox jumps over the lazy dog"] * 40),  # over 256 tokens: truncated
]


def _sample() -> list[str]:
    rows = [json.loads(line) for line in (DATA / "test.jsonl").read_text(encoding="utf-8").splitlines() if line]
    return SAMPLE + [r["text"] for r in rows]


def build_bundles(out: Path) -> list[Path]:
    """Two real DP bundles of the assistant data, with the ONNX and with the TFLite encoder."""
    from exporter.build import BuildOptions, build

    paths = []
    for encoder_format in ("onnx", "tflite"):
        path = out / f"assistant-{encoder_format}.dpedge"
        build(BuildOptions(train=DATA / "train.jsonl", labels=DATA / "labels.txt", epsilon=8.0, out=path,
                           seed=1234, encoder_format=encoder_format, models_dir=ROOT / "models", progress=False))
        paths.append(path)
    return paths


def cases(bundle: Path, texts: list[str]) -> list[dict[str, Any]]:
    """The Python runtime's answer to each text, stage by stage."""
    clf = Classifier.load(bundle, threads=1)
    out = []
    for text in texts:
        ids = clf.tokenizer.encode([text])[0]
        emb = clf.encoder.embed_one(ids)[None, :]
        buckets = clf.scorer.hasher.buckets(emb)[0]
        scores = clf.scorer.scores(emb)[0]
        pred = clf.predict([text])[0]
        assert pred.label == clf.labels[int(np.argmax(scores))]
        out.append({"text": text, "token_ids": [int(i) for i in ids],
                    "embedding": emb[0].astype("<f4").tobytes(), "buckets": [int(b) for b in buckets],
                    "scores": [float(s) for s in scores], "label": pred.label})
    return out


# --------------------------------------------------------------------------- malformed bundles


def _reseal(outer: dict[str, Any], payload: dict[str, Any]) -> bytes:
    outer = dict(outer)
    outer["payload"] = msgpack.packb(payload, use_bin_type=True)
    outer["checksum"] = {**outer["checksum"], "digest": hashlib.sha256(outer["payload"]).digest()}
    return msgpack.packb(outer, use_bin_type=True)


def _payload_edit(edit: Callable[[dict[str, Any]], None]) -> Callable[[bytes], bytes]:
    def make(data: bytes) -> bytes:
        outer = msgpack.unpackb(data, raw=False)
        payload = msgpack.unpackb(outer["payload"], raw=False)
        edit(payload)
        return _reseal(outer, payload)
    return make


def _outer_edit(edit: Callable[[dict[str, Any]], None]) -> Callable[[bytes], bytes]:
    def make(data: bytes) -> bytes:
        outer = msgpack.unpackb(data, raw=False)
        edit(outer)
        return msgpack.packb(outer, use_bin_type=True)
    return make


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(p: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        for key in parents:
            p = p[key]
        p[last] = value(p[last]) if callable(value) else value
    return edit


def _delete(path: str) -> Callable[[dict[str, Any]], None]:
    def edit(p: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        for key in parents:
            p = p[key]
        del p[last]
    return edit


def _flip_payload_byte(data: bytes) -> bytes:
    b = bytearray(data)
    b[len(b) // 2] ^= 0x10  # inside the payload (the model is most of it)
    return bytes(b)


#: name -> (how to make it from a valid bundle, phrase the error must contain)
MALFORMED: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "empty": (lambda d: b"", "truncated"),
    "truncated": (lambda d: d[: len(d) // 3], "truncated"),
    "trailing-bytes": (lambda d: d + b"\x00\x01", "trailing bytes"),
    "not-a-map": (lambda d: msgpack.packb([1, 2, 3]), "top level is array, expected a map"),
    "wrong-magic": (_outer_edit(_set("format", "something-else")), "not a dpedge bundle"),
    "newer-major": (_outer_edit(_set("version", [2, 0])), "newer than this runtime supports"),
    "older-major": (_outer_edit(_set("version", [0, 9])), "is not supported"),
    "bit-flip": (_flip_payload_byte, "checksum mismatch"),
    "bad-checksum-algorithm": (_outer_edit(_set("checksum.algorithm", "md5")), "unsupported checksum algorithm"),
    "missing-hyperplanes": (_payload_edit(_delete("lsh.hyperplanes")), "missing field 'lsh.hyperplanes'"),
    "missing-privacy-epsilon": (_payload_edit(_delete("privacy.epsilon")), "missing field 'privacy.epsilon'"),
    "labels-wrong-type": (_payload_edit(_set("labels", "alarm_timer")), "field 'labels' is string, expected array"),
    "labels-duplicate": (_payload_edit(_set("labels", ["a", "a", "b", "c", "d", "e", "f"])), "distinct"),
    "one-label": (_payload_edit(_set("labels", ["only"])), "at least two"),
    "votes-wrong-dtype": (_payload_edit(_set("votes.dtype", "<i4")), "expected '<i2'"),
    "votes-big-endian": (_payload_edit(_set("votes.dtype", ">i2")), "expected '<i2'"),
    "votes-short-data": (_payload_edit(_set("votes.data", lambda d: d[:-2])), "bytes, but dtype <i2 and shape"),
    "votes-huge-shape": (_payload_edit(_set("votes.shape", [2**40, 2**10, 7])), "bytes, but dtype"),
    "votes-wrong-shape": (_payload_edit(_set("votes.shape", [64, 32, 7])), "field 'votes' has shape"),
    "hyperplanes-nan": (_payload_edit(_set("lsh.hyperplanes.data",
                                           lambda d: np.full(len(d) // 4, np.nan, "<f4").tobytes())), "non-finite"),
    "bits-out-of-range": (_payload_edit(_set("lsh.bits", 40)), "out of range"),
    "tables-boolean": (_payload_edit(_set("lsh.tables", True)), "is boolean, expected integer"),
    "not-simhash": (_payload_edit(_set("lsh.family", "minhash")), "expected 'simhash'"),
    "sensitivity-mismatch": (_payload_edit(_set("privacy.sensitivity_l1", 1)), "touches one cell in each of"),
    "per-person-sensitivity-mismatch": (_payload_edit(_set("privacy.max_records_per_unit", 3)),
                                        "for each of the up to 3 records of a person"),
    "per-person-zero": (_payload_edit(_set("privacy.max_records_per_unit", 0)), "expected at least 1"),
    "delta-not-zero": (_payload_edit(_set("privacy.delta", 1e-6)), "only pure epsilon-DP"),
    "negative-epsilon": (_payload_edit(_set("privacy.epsilon", -1.0)), "positive finite"),
    "epsilon-string": (_payload_edit(_set("privacy.epsilon", "8")), "is string, expected float or integer"),
    "unknown-encoder-format": (_payload_edit(_set("encoder.format", "coreml")), "not supported by this runtime"),
    "encoder-dim-mismatch": (_payload_edit(_set("encoder.dim", 128)), "384-d"),
    "empty-model": (_payload_edit(_set("encoder.model", b"")), "is empty"),
    "unknown-input": (_payload_edit(_set("encoder.inputs", ["input_ids", "pixel_values"])), "unsupported inputs"),
    "inputs-not-strings": (_payload_edit(_set("encoder.inputs", ["input_ids", 7])),
                           "field 'encoder.inputs' must be a list of strings"),
    "privacy-not-a-map": (_payload_edit(_set("privacy", [1, 2])), "field 'privacy' is array, expected map"),
    "check-empty-text": (_payload_edit(_set("encoder.check.text", "")), "non-empty text and a finite unit 384-d embedding"),
    "check-zero-embedding": (_payload_edit(_set("encoder.check.embedding.data", lambda d: bytes(len(d)))),
                             "finite unit 384-d embedding"),
}


def _per_person(payload: dict[str, Any]) -> None:
    p = payload["privacy"]
    p.update(max_records_per_unit=3, sensitivity_l1=3 * p["sensitivity_l1"], noise_scale=3 * p["noise_scale"],
             privacy_unit="one person, up to 3 records")


def _format_1_0(payload: dict[str, Any]) -> None:
    del payload["encoder"]["check"]
    payload["privacy"].pop("max_records_per_unit", None)


#: name -> (how to make it from a valid bundle): other shapes the format allows, which must load.
VARIANTS: dict[str, Callable[[bytes], bytes]] = {
    "per-person": _payload_edit(_per_person),
    "format-1.0": lambda d: _outer_edit(_set("version", [1, 0]))(_payload_edit(_format_1_0)(d)),
}


def write_variants(valid: Path, out: Path) -> list[dict[str, str]]:
    """Each valid variant, after checking that the Python reader loads it."""
    folder = out / "variants"
    folder.mkdir(parents=True, exist_ok=True)
    listed = []
    for name, make in VARIANTS.items():
        path = folder / f"{name}.dpedge"
        path.write_bytes(make(valid.read_bytes()))
        fmt.load(path)  # raises if the Python reader refuses it
        listed.append({"file": f"variants/{name}.dpedge"})
    return listed


def write_malformed(valid: Path, out: Path) -> list[dict[str, str]]:
    """Each malformed variant, after checking that the Python reader rejects it as promised."""
    folder = out / "malformed"
    folder.mkdir(parents=True, exist_ok=True)
    data = valid.read_bytes()
    listed = []
    for name, (make, phrase) in MALFORMED.items():
        path = folder / f"{name}.dpedge"
        path.write_bytes(make(data))
        try:
            fmt.load(path)
        except BundleError as exc:
            if phrase not in str(exc):
                raise SystemExit(f"{name}: the Python reader said {exc!s}, without {phrase!r}") from None
        else:
            raise SystemExit(f"{name}: the Python reader accepted it")
        listed.append({"file": f"malformed/{name}.dpedge", "message": phrase})
    return listed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="folder to write (replaced)")
    ap.add_argument("--bundle", type=Path, action="append", help="bundles to use (default: build two)")
    args = ap.parse_args(argv)
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    if args.bundle:
        bundles = [Path(shutil.copy(b, args.out / b.name)) for b in args.bundle]
    else:
        bundles = build_bundles(args.out)
    texts = _sample()
    golden = {
        "bundles": [{"file": b.name, "cases": cases(b, texts)} for b in bundles],
        "malformed": write_malformed(bundles[0], args.out),
        "variants": write_variants(bundles[0], args.out),
    }
    (args.out / "golden.msgpack").write_bytes(msgpack.packb(golden, use_bin_type=True))
    n = sum(len(b["cases"]) for b in golden["bundles"])
    print(f"wrote {args.out}: {len(bundles)} bundles, {n} cases, {len(golden['malformed'])} malformed bundles, "
          f"{len(golden['variants'])} valid variants")
    return 0


if __name__ == "__main__":
    sys.exit(main())
