"""Golden vectors for the Java core: what the Python runtime answers, for the JVM to reproduce.

    python android_demo/golden.py --out DIR [--bundle B ...]

Without --bundle it builds four real DP bundles of the project's data/assistant set (epsilon 8,
seed 1234): the exporter's default (class statistics and the prior, no vote tables) with the
int8 ONNX encoder and with the int8 TFLite encoder, one with vote tables too (--votes-share
0.1) and one of vote tables alone (--hashing random). With --bundle, the bundles given must
include one with vote tables and class statistics (the derived bundles are made from it).

It writes into DIR (replaced), for android_demo/core/run-tests.sh DIR:

- each bundle, and for each text of a varied sample (accents, punctuation, CJK, emoji, control
  and combining characters, right-to-left scripts, over-long words and texts, then the
  assistant test set) the Python runtime's token ids, embedding, bucket per table (none
  without vote tables), scores and label;
- scored/*.dpedge: bundles derived from the one with vote tables, each taking another branch of
  the one scoring rule (runtime/scoring.py), with the Python scorer's prior boost and its
  buckets, scores and label for the sample's embeddings and a few unusual vectors;
- malformed/*.dpedge: every case of tests/schema_cases.py (generated from the format's table),
  each with the phrases its error must contain, after checking that the Python reader refuses
  it with them; variants/*.dpedge: bundles both readers must load;
- the text tables (runtime/text.py), Python's escape and fold of some tricky texts, and the
  format's table (runtime/bundle/schema.py), which the Java tests compare with their own.

Everything goes into golden.msgpack (layout in android_demo/README.md) beside the files.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Callable

import msgpack
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import schema_cases  # noqa: E402
from runtime import BundleError, Classifier  # noqa: E402
from runtime import bundle as fmt  # noqa: E402
from runtime.bundle.schema import BOOST_MAX, CONDITIONS, DIMS, FIELDS  # noqa: E402
from runtime.scoring import Scorer  # noqa: E402
from runtime.text import INVISIBLE, UNPRINTABLE, escape, fold, unprintable  # noqa: E402

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

#: Texts whose escape and fold the Java core's Text must reproduce (runtime/text.py).
TEXT_CASES = [
    "plain ASCII", "ok\x1b[2J\u202e", "a\tb\nc\rd\x00\x7f\x85", "tag \U000e0041\U000e007f",
    "\u2028\u2029\u061c", "\ufdd0\ufffe\uffff\U0001fffe\U0010ffff\ue000", "Ｂｉｌｌｉｎｇ\u200b", "ﬁle\u200d",
    "e\u0301", "\u00ad\u034f\ufeff", "ｶﾞｷﾞ", "㍻ Ⅻ ß", "\u3164\u115f\u1160\uffa0", "a\U0001d173b",
    "\u180b\u180e\u180f", "alarm\u200ctimer", "Ω\u2126K\u212a", "\u2060\u2061\u206f", "\U000e0100 variation",
    "\u200e\u200f mark", "한국어 \u1100\u1161",
]


def _sample() -> list[str]:
    rows = [json.loads(line) for line in (DATA / "test.jsonl").read_text(encoding="utf-8").splitlines() if line]
    return SAMPLE + [r["text"] for r in rows]


def build_bundles(out: Path) -> list[Path]:
    """The four real bundles of the module doc."""
    from exporter.build import BuildOptions, build

    paths = []
    for name, extra in (("onnx", {}), ("onnx-tables", {"votes_share": 0.1}), ("tflite", {"encoder_format": "tflite"}),
                        ("onnx-votes", {"hashing": "random"})):
        path = out / f"assistant-{name}.dpedge"
        build(BuildOptions(train=DATA / "train.jsonl", labels=DATA / "labels.txt", epsilon=8.0, out=path, seed=1234,
                           models_dir=ROOT / "models", progress=False, **extra))
        paths.append(path)
    return paths


def cases(bundle: Path, texts: list[str]) -> list[dict[str, Any]]:
    """The Python runtime's answer to each text, stage by stage (no buckets without vote tables)."""
    clf = Classifier.load(bundle, threads=1)
    hasher = clf.scorer.hasher
    out = []
    for text in texts:
        ids = clf.tokenizer.encode([text])[0]
        emb = clf.encoder.embed_one(ids)[None, :]
        scores = clf.scorer.scores(emb)[0]
        label = clf.predict([text])[0].label
        assert label == clf.labels[int(np.argmax(scores))]
        out.append({"text": text, "token_ids": [int(i) for i in ids], "embedding": emb[0].astype("<f4").tobytes(),
                    "buckets": [] if hasher is None else [int(b) for b in hasher.buckets(emb)[0]],
                    "scores": [float(s) for s in scores], "label": label})
    return out


# --------------------------------------------------------------------------- scored bundles

Edit = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Edit:
    return lambda d: schema_cases.put(d, path, value(schema_cases.get(d, path)) if callable(value) else value)


def _drop(*paths: str) -> Edit:
    return lambda d: schema_cases.drop(d, *paths)


def _values(path: str, change: Callable[[np.ndarray], None]) -> Edit:
    """Edits an array record's values in place (shape and dtype unchanged)."""
    def edit(d: dict[str, Any]) -> None:
        r = schema_cases.get(d, path)
        a = np.frombuffer(r["data"], r["dtype"]).reshape(r["shape"]).copy()
        change(a)
        r["data"] = a.tobytes()
    return edit


def _spend(epsilon: float) -> Edit:
    """The releases' shares rescaled to add up to ``epsilon``, each noise scale its sensitivity
    over its new share (the relations hold; the values stay as released)."""
    def edit(d: dict[str, Any]) -> None:
        scale = epsilon / sum(r["epsilon"] for r in d["releases"].values())
        for r in d["releases"].values():
            r["epsilon"] *= scale
            r["noise_scale"] = r["sensitivity_l1"] / r["epsilon"]
        d["privacy"]["epsilon"] = sum(r["epsilon"] for r in d["releases"].values())
    return edit


def _records_per_unit(k: int) -> Edit:
    def edit(d: dict[str, Any]) -> None:
        d["privacy"]["max_records_per_unit"] = k
        for r in d["releases"].values():
            r["sensitivity_l1"] *= k
            r["noise_scale"] = r["sensitivity_l1"] / r["epsilon"]
    return edit


_CLASS_STATISTICS = ("releases.class_counts", "releases.class_sums", "subspace", "prior", "scoring")
#: name -> the edits that make it from the bundle with vote tables: each branch of the scoring
#: rule (docs/bundle-format.md section 7) taken at least once.
SCORED: dict[str, list[Edit]] = {
    "blend-with-votes": [],
    "blend-with-votes-without-offsets": [_drop("hashing.offsets")],
    "blend-without-votes": [_drop("releases.votes", "hashing"), _spend(8.0)],
    "without-prior": [_drop("releases.votes", "hashing", "label_descriptions", "prior"), _spend(8.0)],
    "without-pull": [_set("scoring.description_pull", 0.0)],
    "pull-below-one": [_set("scoring.description_pull", 0.1)],  # m = 1: the sums keep their length
    "pull-at-its-bound": [_set("scoring.description_pull", 1000.0)],  # m >> 1: the descriptions lead
    "three-records-per-unit": [_records_per_unit(3)],
    "boost-capped": [_spend(1e-3), _set("scoring.prior_records_per_class", 1e6)],
    "votes-alone-with-offsets": [_drop(*_CLASS_STATISTICS), _spend(8.0)],
    "votes-alone-without-offsets": [_drop(*_CLASS_STATISTICS, "hashing.offsets"), _spend(8.0)],
    "counts-below-one": [_values("releases.class_counts.values", lambda a: a.fill(-5))],
    "zero-class-sum-row": [_values("releases.class_sums.values", lambda a: a.__setitem__(0, 0)),
                           _set("scoring.description_pull", 0.0)],
    "zero-class-sum-row-pulled": [_values("releases.class_sums.values", lambda a: a.__setitem__(0, 0))],
    "temperatures-at-their-bounds": [_set("scoring.centroid_temperature", 1e-3), _set("scoring.prior_temperature", 1e3)],
    "sharp-prior": [_set("scoring.prior_temperature", 1e-3)],
}


def scored_embeddings(golden_cases: list[dict[str, Any]], dim: int) -> list[np.ndarray]:
    """The golden embeddings of the sample texts, plus a few unusual vectors."""
    embs = [np.frombuffer(c["embedding"], "<f4") for c in golden_cases[:len(SAMPLE)]]
    rng = np.random.default_rng(7)
    return embs + [np.zeros(dim, "<f4"),                        # every cosine 0
                   rng.standard_normal(dim).astype("<f4"),      # not unit length
                   (3.0 * embs[0]).astype("<f4"),               # a scaled embedding
                   (embs[1] + embs[2]).astype("<f4")]


def write_scored(base: dict[str, Any], golden_cases: list[dict[str, Any]], out: Path) -> list[dict[str, Any]]:
    listed = []
    for name, edits in SCORED.items():
        doc = copy.deepcopy(base)
        for edit in edits:
            edit(doc)
        data = schema_cases.seal(doc)
        (out / "scored" / f"{name}.dpedge").write_bytes(data)
        b = fmt.unpack(data)  # raises if the Python reader refuses it
        scorer = Scorer(b)
        rows = []
        for emb in scored_embeddings(golden_cases, b.encoder.dim):
            x = emb[None, :]
            scores = scorer.scores(x)[0]
            rows.append({"embedding": emb.astype("<f4").tobytes(),
                         "buckets": [] if scorer.hasher is None else [int(v) for v in scorer.hasher.buckets(x)[0]],
                         "scores": [float(v) for v in scores], "label": b.labels[int(np.argmax(scores))]})
        boost = float(getattr(scorer, "boost", 0.0))
        if name == "boost-capped" and boost != BOOST_MAX:
            raise SystemExit(f"{name}: the prior boost {boost} is not the cap {BOOST_MAX}")
        listed.append({"file": f"scored/{name}.dpedge", "plain_votes": bool(scorer.plain_votes),
                       "prior_boost": boost, "cases": rows})
    return listed


# --------------------------------------------------------------------------- malformed and valid bundles


def write_malformed(tables: Path, base: dict[str, Any], out: Path) -> list[dict[str, Any]]:
    """Every generated case, after checking that the Python reader refuses it with its phrases."""
    listed = []
    for case in schema_cases.malformed(base) + schema_cases.real_encoder_cases(tables.read_bytes()):
        try:
            fmt.unpack(case.data)
        except BundleError as exc:
            missing = [p for p in case.phrases if p not in str(exc)]
            if missing:
                raise SystemExit(f"{case.name}: the Python reader said {exc!s}, without {missing}") from None
        else:
            raise SystemExit(f"{case.name}: the Python reader accepted it")
        (out / "malformed" / f"{case.name}.dpedge").write_bytes(case.data)
        listed.append({"file": f"malformed/{case.name}.dpedge", "phrases": list(case.phrases)})
    return listed


def write_variants(base: dict[str, Any], out: Path) -> list[dict[str, str]]:
    listed = []
    for name, data in schema_cases.valid(base):
        fmt.unpack(data)  # raises if the Python reader refuses it
        (out / "variants" / f"{name}.dpedge").write_bytes(data)
        listed.append({"file": f"variants/{name}.dpedge"})
    return listed


def schema_rows() -> dict[str, Any]:
    """The format's table as data (the Java core's Fields must be the same)."""
    return {"fields": [[f.path, f.kind, f.need, f.low, f.high, f.dtype, list(f.shape), list(f.choices), f.text, f.open]
                       for f in FIELDS],
            "dims": {k: list(v) for k, v in DIMS.items()}, "conditions": CONDITIONS}


def text_rows() -> dict[str, Any]:
    """runtime/text.py's tables and its answers for TEXT_CASES (and each sample text)."""
    texts = TEXT_CASES + SAMPLE[:22]
    return {"unprintable": [list(r) for r in UNPRINTABLE], "invisible": [list(r) for r in INVISIBLE],
            "cases": [{"text": t, "escaped": escape(t), "folded": fold(t),
                       "unprintable": -1 if unprintable(t) is None else ord(unprintable(t))} for t in texts]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="folder to write (replaced)")
    ap.add_argument("--bundle", type=Path, action="append",
                    help="bundles to use, among them one with vote tables and class statistics (default: build four)")
    args = ap.parse_args(argv)
    if args.out.exists():
        shutil.rmtree(args.out)
    for sub in ("scored", "malformed", "variants"):
        (args.out / sub).mkdir(parents=True)
    bundles = [Path(shutil.copy(b, args.out / b.name)) for b in args.bundle] if args.bundle else build_bundles(args.out)
    loaded = [fmt.load(b) for b in bundles]
    tables = [b for b, x in zip(bundles, loaded) if x.votes is not None and x.class_sums is not None
              and x.encoder.format == "onnx"]
    if not tables:
        raise SystemExit("golden.py needs an ONNX bundle with vote tables and class statistics (--votes-share 0.1)")
    texts = _sample()
    entries = [{"file": b.name, "cases": cases(b, texts)} for b in bundles]
    base = schema_cases.small_base(tables[0].read_bytes())
    golden = {
        "bundles": entries,
        "scored": write_scored(base, entries[bundles.index(tables[0])]["cases"], args.out),
        "malformed": write_malformed(tables[0], base, args.out),
        "variants": write_variants(base, args.out),
        "schema": schema_rows(),
        "text": text_rows(),
    }
    (args.out / "golden.msgpack").write_bytes(msgpack.packb(golden, use_bin_type=True))
    print(f"wrote {args.out}: {len(bundles)} bundles with {sum(len(e['cases']) for e in entries)} cases, "
          f"{len(golden['scored'])} scored bundles, {len(golden['malformed'])} malformed bundles, "
          f"{len(golden['variants'])} valid variants")
    return 0


if __name__ == "__main__":
    sys.exit(main())
