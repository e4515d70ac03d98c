"""Writes the conformance corpus, format/1/corpus/: bundles and what every reader must answer.

    python format/tools/make_corpus.py            # rewrites format/1/corpus/ (the tiny encoders stay)

The corpus is the contract's proof: a reader written from format/1/ alone runs it and must
refuse every ``refuse`` bundle with its code and path, read every ``accept`` bundle, give each
query's token ids exactly, its embedding within the tolerance, and each embedding's scores and
label (cases.json says how). The answers come from the Python reader; this script checks each
refusal's code and path against what the case was made to break, so a wrong answer in Python
stops the corpus from being written.

The ``accept`` bundles are real builds of data/assistant through the exporter (`exporter.build`)
with the tiny encoders of format/tools/tiny_encoder.py (by default taken back out of the
corpus's own bundles, so that nothing but the corpus is committed), noised through the test hook by a
fixed public pattern (each bundle says it is not differentially private), so the corpus is the
same on every run; the variants and refusals are edits of them (format/tools/cases.py).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import math
import os
import shutil
import struct
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import cases  # noqa: E402
from runtime import BundleError, Classifier, InputError  # noqa: E402
from runtime import bundle as fmt  # noqa: E402
from runtime.scoring import Scorer  # noqa: E402
from runtime.text import escape, escape_json, label_key, shows_something, unassigned, unprintable  # noqa: E402
from runtime.tokenizer import TextTokenizer  # noqa: E402
from runtime.bundle import exactmath  # noqa: E402
from runtime.bundle.accounting import head_epsilon  # noqa: E402
from runtime.bundle.tokenizer_family import check_tokenizer_json  # noqa: E402

CORPUS = ROOT / "format" / "1" / "corpus"
DATA = ROOT / "data" / "assistant"

#: How close another reader's numbers must be (cases.json repeats them for readers). Scores from a
#: given embedding are exact: every reader computes them with the same operations in the same
#: order (docs/bundle-format.md section 7), so they agree bit for bit, ties included.
TOLERANCE = {
    "scores": 0.0,
    "embedding": 1e-5,
    "embedding_cosine": 0.999,
    "label_margin": 0.02,
    "bucket_margin": 0.01,
}
#: A corpus of the real encoder measured across engines: onnxruntime-web's WebAssembly kernels
#: reach cosine 0.9953 to the CPU kernels on its shortest texts ("OK", "?").
REAL_TOLERANCE = {**TOLERANCE, "embedding_cosine": 0.99}

#: Texts chosen to exercise every step of the normaliser, pre-tokenizer and WordPiece.
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
    "Ελληνικά: αβγ ΔΕΖ ΣΑΣ",
    "Русский текст с Ёлкой",
    "e\u0301 combining acute, n\u0303 combining tilde, A\u030a ring, ệ\u0302 stacked",
    "zero\u200bwidth\u200cjoiner\u200dtest and soft\u00adhyphen",
    "tabs\tand\nnewlines\r\nand  double  spaces",
    "control \x01\x02\x7f chars and a NUL \x00 in the middle",
    "replacement char \ufffd here, private use \ue000 and \U000f0000",
    "İstanbul ﬁle ß Ǆ ǅ ǆ Ⅻ ㍻",
    "new in Unicode 16 and later: \u1ac1\u1aeb \U00011f36 \U000105c9",
    "[CLS] literal [SEP] and [MASK] mid[UNK]word",
    "MPNet's <s>own</s> <pad> specials: <UNK> mid<unk>word <Unk> \u00a0<mask> <MASK>!",
    "x",
    "?",
    "OK",
    "1234567890 3.14159 1,000,000 -42 +7 50%",
    "a" * 120 + " after a word longer than one hundred characters",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    " ".join(["the quick brown fox jumps over the lazy dog"] * 8),  # over max_length tokens: truncated
]
#: Queries every reader must refuse, and the code.
REFUSED_QUERIES = [("", "query.empty"), ("   \t ", "query.empty"), ("\u200b\u2060\ufeff", "query.empty"),
                   ("\x01\x02\x7f", "query.empty")]
#: Texts whose escape, key and text rules every reader must reproduce.
TEXT_CASES = [
    "plain ASCII", "ok\x1b[2J\u202e", "a\tb\nc\rd\x00\x7f\x85", "tag \U000e0041\U000e007f",
    "\u2028\u2029\u061c", "\ufdd0\ufffe\uffff\U0001fffe\U0010ffff\ue000", "Ｂｉｌｌｉｎｇ\u200b", "ﬁle\u200d",
    "e\u0301", "\u00ad\u034f\ufeff", "ｶﾞｷﾞ", "㍻ Ⅻ ß", "\u3164\u115f\u1160\uffa0", "a\U0001d173b",
    "\u180b\u180e\u180f", "alarm\u200ctimer", "Ω\u2126K\u212a", "\u2060\u2061\u206f", "\U000e0100 variation",
    "\u200e\u200f mark", "한국어 \u1100\u1161", "wеather", "weather", "Illness", "lllness", "rn", "m", "0O", "O0",
    "\u2800\u2800", "\U0001d159", "\u0378 unassigned", "\U0002fffd", "e\u0323\u0301", "e\u0301\u0323",
    "İ", "ǅ", "\u0301\u0302", "👨‍👩‍👧", "\u0644\u0627", "ﻻ",
]


class PatternNoise:
    """The corpus's test-hook noise: a fixed public pattern (-5..5 by cell position), so the
    corpus is the same on every run; bundles made with it say they are not differentially private."""

    def facts(self) -> dict[str, str]:
        return {"noise_library": "format/tools/make_corpus.py", "noise_library_version": "1",
                "noise_source": "a fixed pattern by cell position, for the conformance corpus"}

    def epsilon_spent(self, scale: float, sensitivity: int) -> float:
        return sensitivity / scale

    def add_noise(self, counts: np.ndarray, scale: float) -> np.ndarray:
        pattern = (np.arange(counts.size, dtype=np.int64) * 7919) % 11 - 5
        return counts.astype(np.int64) + pattern.reshape(counts.shape)


def unpack_encoder(bundle: Path, dest: Path) -> Path:
    """The exported encoder a bundle carries, as the folder `python -m exporter encoder` writes
    (model, weights, tokenizer.json, encoder.json with its check embedding)."""
    from exporter.encoder_export import MODEL_FILES, WEIGHTS_FILE

    e = fmt.load(bundle).encoder
    dest.mkdir(parents=True, exist_ok=True)
    (dest / MODEL_FILES[e.format]).write_bytes(e.model)
    if e.format == "onnx":
        w = e.weights_file
        with open(w.path, "rb") as f:
            f.seek(w.offset)
            (dest / WEIGHTS_FILE).write_bytes(f.read(w.length))
    (dest / "tokenizer.json").write_text(e.tokenizer_json, encoding="utf-8")
    facts = {**(e.facts or {}), "format": e.format, "max_length": e.max_length, "dim": e.dim, "inputs": list(e.inputs),
             "output": e.output, "text_prefix": e.text_prefix, "family": e.family,
             "check": {"text": e.check_text, "embedding": _floats(e.check_embedding)}}
    (dest / "encoder.json").write_text(json.dumps(facts, indent=2, ensure_ascii=False), encoding="utf-8")
    return dest


def build(out: Path, encoders: Path, **overrides: Any) -> Path:
    from exporter.build import BuildOptions, build as build_bundle

    fmt_ = overrides.get("encoder_format", "onnx")
    opts = dict(train=DATA / "train.jsonl", labels=DATA / "labels.txt", epsilon=8.0, out=out,
                models_dir=Path(tempfile.mkdtemp()), progress=False, seed=1234, encoder_source=encoders / fmt_,
                workers=1)
    opts.update(overrides)
    build_bundle(BuildOptions(**opts), noise_for_tests=PatternNoise())
    doc = cases.document(out.read_bytes())
    doc["exporter"]["created"] = "the conformance corpus"  # a fixed date: the corpus is the same on every run
    out.write_bytes(cases.seal(doc))
    return out


def _floats(a: np.ndarray) -> list[float]:
    return [float(x) for x in np.asarray(a, np.float64).ravel()]


def _scored(scorer: Scorer, labels: tuple[str, ...], emb: np.ndarray) -> dict[str, Any]:
    x = np.asarray(emb, np.float32)[None, :]
    scores = scorer.scores(x)[0]
    top = np.sort(scores)[::-1]
    row = {"scores": _floats(scores), "label": labels[int(np.argmax(scores))], "margin": float(top[0] - top[1])}
    if scorer.hasher is not None:  # how far the embedding is from flipping a bucket bit
        h = scorer.hasher
        planes = h._planes.T  # (tables * bits, dim)
        distance = np.abs(planes @ x[0].astype(np.float64) - h._offsets) / np.linalg.norm(planes, axis=1)
        row["bucket_margin"] = float(distance.min())
    return row


def queries(path: Path, texts: list[str], engine: bool, pack: fmt.EncoderPack | None = None) -> list[dict[str, Any]]:
    """The Python reader's answers: token ids; with the engine, the embedding, scores and label."""
    if engine:
        clf = Classifier.load(path, encoder=pack, threads=1)
        tok, scorer, labels = clf.tokenizer, clf.scorer, clf.labels
    else:
        b = fmt.load(path, pack=pack)
        tok = TextTokenizer(check_tokenizer_json(b.encoder.tokenizer_json), b.encoder.max_length, b.encoder.text_prefix)
        clf, scorer, labels = None, None, b.labels
    out = []
    for text in texts:
        row: dict[str, Any] = {"text": text, "token_ids": tok.encode_one(text)}
        if clf is not None:
            emb = clf.embed([text])[0]
            row["embedding"] = _floats(emb)
            row.update(_scored(scorer, labels, emb))
            assert clf.classify([text])[0].label == row["label"]
        out.append(row)
    for text, code in REFUSED_QUERIES:
        if tok.has_token(text):  # a tokenizer without clean_text keeps controls and invisible characters
            out.append({"text": text, "token_ids": tok.encode_one(text)})
            continue
        if clf is not None:
            try:
                clf.classify([text])
            except InputError as exc:
                assert exc.code == code, (text, exc.code)
            else:
                raise SystemExit(f"{path.name}: the query {text!r} was classified")
        out.append({"text": text, "code": code})
    return out


def check_row(path: Path, pack: fmt.EncoderPack | None = None) -> dict[str, Any]:
    """The engine's answer for the bundle's check text: what a reader's engine (or a stand-in for
    it) must return at load."""
    clf = Classifier.load(path, encoder=pack, threads=1)
    ids = clf.tokenizer.encode_one(clf.bundle.encoder.check_text)
    return {"token_ids": ids, "embedding": _floats(clf.encoder.embed_one(ids))}


def vectors(path: Path, dim: int, embeddings: list[list[float]],
            pack: fmt.EncoderPack | None = None) -> list[dict[str, Any]]:
    """Scores of given vectors: some query embeddings, then unusual ones (zero, not unit, scaled)."""
    b = fmt.load(path, pack=pack)
    scorer = Scorer(b)
    rng = np.random.default_rng(7)  # public test vectors, not noise
    embs = [np.asarray(e, np.float32) for e in embeddings[:6]]
    embs += [rng.standard_normal(dim).astype(np.float32) for _ in range(4)]
    embs += [np.zeros(dim, np.float32), 3.0 * embs[0], np.float32(1e-7) * embs[1], embs[1] + embs[2],
             np.full(dim, 0.5, np.float32)]  # equal coordinates: the tie cases' query
    return [{"embedding": _floats(e), **_scored(scorer, b.labels, e)} for e in embs]


def _bits(x: float) -> str:
    return struct.pack(">d", x).hex()


def arithmetic_rows() -> list[dict[str, Any]]:
    """The contract's exp, log, log1p, expm1 (section 7.1) and the accountant's bound, each result
    as the 16 hex digits of its IEEE double: every reader must compute the same bits. The edges
    (the clamps, the sqrt(2) split, subnormals, the series' switch, k's rounding) and public
    pseudo-random values."""
    rng = np.random.default_rng(20261128)  # public test values, not noise
    a = exactmath
    nudge = lambda x, n: [x] + [float(v) for v in (np.nextafter(x, np.inf), np.nextafter(x, -np.inf))][:n]
    values: dict[str, list[float]] = {
        "exp": [0.0, -0.0, 1.0, -1.0, 0.5, 1e-300, -1e-300, 5e-324, 700.0, -700.0, 745.0, -745.0,
                *nudge(a.EXP_MAX, 2), *nudge(a.EXP_MIN, 2), *nudge(0.5 * a.LN2_HI, 2), *nudge(-0.5 * a.LN2_HI, 2),
                *[float(v) for v in rng.uniform(-708, 709, 40)], *[float(v) for v in rng.uniform(-3, 3, 40)],
                *[float(v) for v in -rng.exponential(30.0, 20)]],
        "log": [1.0, 2.0, 0.5, 5e-324, 2.2250738585072014e-308, 2.225073858507201e-308, 1.7976931348623157e308,
                *nudge(1.0, 2), *nudge(a.SQRT2, 2), *nudge(a.SQRT2 / 2, 2), 1e-5, 1e-10, 0.1, 0.25, 0.9375,
                *[float(v) for v in np.exp(rng.uniform(-700, 700, 40))], *[float(v) for v in rng.uniform(0, 4, 40)]],
        "log1p": [0.0, -0.5, -0.9999999999999999, 1e-17, -1e-17, 1e-8, 2.220446049250313e-16, 1.0, 1e300,
                  *[float(v) for v in -rng.uniform(0, 1, 30)], *[float(v) for v in 10.0 ** rng.uniform(-16, 0, 30)]],
        "expm1": [0.0, 1e-17, -1e-17, 1e-8, *nudge(a.EXPM1_BELOW, 2), *nudge(-a.EXPM1_BELOW, 2), -40.0, -800.0,
                  *[float(v) for v in rng.uniform(-1, 1, 40)], *[float(v) for v in -rng.exponential(20.0, 20)]],
    }
    rows = [{"function": name, "args": [x], "bits": _bits(getattr(a, name)(x))}
            for name, xs in values.items() for x in xs if not math.isnan(getattr(a, name)(x))]
    heads = [(1.1, 0.1, 1000, 1e-5), (42.4, 1.0, 100, 1e-5), (0.6, 1.0, 1, 1e-3), (200.0, 0.5, 10, 1e-12),
             (0.5, 0.001, 1, 1e-5), *[e for e in cases.EDGES]]
    heads += [(float(rng.uniform(0.5, 50)), float(rng.uniform(0.001, 1)), int(rng.integers(1, 5000)),
               float(10.0 ** rng.uniform(-12, -3))) for _ in range(40)]
    rows += [{"function": "head_epsilon", "args": list(h), "bits": _bits(head_epsilon(*h))} for h in heads]
    return rows


def number_rows() -> list[dict[str, Any]]:
    """The contract's number formatting (section 5: Python's ".10g"): the exact binary value to
    10 significant digits, ties to even. Exact ties (values whose decimal expansion stops at an
    11th digit 5, both ways), carries into a new exponent, both exponent switches, and public
    pseudo-random values."""
    rng = np.random.default_rng(5)  # public test values, not noise
    values = [2.0 ** -15, 3 * 2.0 ** -15, 5 * 2.0 ** -15, 2.0 ** -14, 12345678905.0, 12345678915.0, -12345678925.0,
              9999999999.5, 9999999998.5, 99999.999995, 0.00012207031250000001, 2.0 ** -13, 1e-4, 9.9999999995e-5,
              1e-5, 1e10, 9999999999.0, 0.1, 1.6, 1.5999999999999996, 20.000000000000004, 123456789.125, 0.0, -0.0,
              5e-324, 1.7976931348623157e308, -2.5, 1.00000000049, 8.0, 1e-300]
    values += [float(v) for v in rng.uniform(-1e6, 1e6, 20)] + [float(10.0 ** v) for v in rng.uniform(-12, 12, 20)]
    values += [k * 2.0 ** -20 for k in rng.integers(1, 2**20, 20).tolist()]
    return [{"value": v, "text": format(v, ".10g")} for v in values]


def text_rows() -> list[dict[str, Any]]:
    rows = []
    for t in TEXT_CASES:
        bad, gap = unprintable(t), unassigned(t)
        rows.append({"text": t, "escaped": escape(t), "escaped_json": escape_json(json.dumps(t, ensure_ascii=False)),
                     "key": label_key(t), "unprintable": None if bad is None else ord(bad),
                     "unassigned": None if gap is None else ord(gap), "shows_something": shows_something(t)})
    return rows


# --------------------------------------------------------------------------- the scoring branches

Edit = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Edit:
    return lambda d: cases.put(d, path, value(cases.get(d, path)) if callable(value) else value)


def _drop(*paths: str) -> Edit:
    return lambda d: cases.drop(d, *paths)


def _values(path: str, change: Callable[[np.ndarray], None]) -> Edit:
    def edit(d: dict[str, Any]) -> None:
        r = cases.get(d, path)
        a = np.frombuffer(r["data"], r["dtype"]).reshape(r["shape"]).copy()
        change(a)
        r["data"] = a.tobytes()
    return edit


def _spend(epsilon: float) -> Edit:
    """The releases' shares rescaled to add up to ``epsilon``, each noise scale its sensitivity
    over its new share (the relations hold; the values stay as released)."""
    def edit(d: dict[str, Any]) -> None:
        scale = epsilon / sum(r["epsilon"] for r in d["releases"].values())
        total = 0.0
        for r in d["releases"].values():
            r["epsilon"] *= scale
            r["noise_scale"] = r["sensitivity_l1"] / r["epsilon"]
            total += r["epsilon"]
        d["privacy"]["epsilon"] = total
    return edit


def _batches(n: int) -> Edit:
    """The statistics as a sum of ``n`` batches' releases (1.1): the pull's noise norm grows by sqrt(n)."""
    def edit(d: dict[str, Any]) -> None:
        cases.put(d, "version", [1, 1])
        cases.put(d, "requires", ["privacy.batches"])
        cases.put(d, "privacy.batches", n)
        cases.composed(d)
    return edit


def _as_head(**facts: Any) -> Edit:
    """The base as a head bundle (1.1, cases.head_base), the head's facts overridden by ``facts``
    and its arrays by ``arrays`` (float32 patterns)."""
    arrays = facts.pop("arrays", {})

    def edit(d: dict[str, Any]) -> None:
        cases.drop(d, "releases.class_sums", "releases.votes", "subspace", "hashing", "prior", "scoring")
        head = cases.head_release(len(d["labels"]), d["encoder"]["dim"], **facts)
        for key, make in arrays.items():
            shape = np.frombuffer(head[key]["data"], "<f4").reshape(head[key]["shape"]).shape
            head[key] = cases._f4(make(shape))
        cases.with_head(d, head)
    return edit


def _head_edge(edge: tuple[float, float, int, float]) -> Edit:
    return lambda d: cases.at_edge(d, edge, accepted=True)


def _tie(pull: bool) -> Edit:
    """`cases.tie` with the first pattern of a public sequence whose label changes when every
    sum runs the other way (for the query of equal coordinates `vectors` gives): a reader that
    sums in any order but the contract's (a folded product, BLAS, pairwise) may well label it
    otherwise."""
    def edit(d: dict[str, Any]) -> None:
        dim = d["encoder"]["dim"]
        rng = np.random.default_rng(11)  # a public search for a pattern, not noise
        for _ in range(1000):
            cases.tie(d, rng, pull)
            labels = []
            for reverse in (False, True):  # the contract's order, and every sum reversed
                trial = cases.composed(copy.deepcopy(d))
                if reverse:
                    for r in (trial["releases"]["class_sums"]["values"], trial["prior"]):
                        r.update(cases._record(cases._values(r)[:, ::-1], r["dtype"]))
                scores = Scorer(fmt.unpack(cases.seal(trial))).scores(np.full((1, dim), 0.5, np.float32))[0]
                labels.append(int(np.argmax(scores)) if max(scores[0], scores[1]) > scores[2] else -1)
            if labels[0] != labels[1] and -1 not in labels:  # the order picks the label: keep it
                return
        raise AssertionError("no rounding-sensitive tie in 1000 patterns")
    return edit


def _extremes(shape: tuple[int, ...]) -> np.ndarray:
    """float32's largest magnitudes, alternating in sign: logits near 1e42, finite in float64."""
    return np.where(np.arange(int(np.prod(shape))).reshape(shape) % 3 == 0, -3.4e38, 3.4e38)


_CLASS_STATISTICS = ("releases.class_counts", "releases.class_sums", "subspace", "prior", "scoring")
#: name -> the edits that make it from the base with vote tables: each branch of the scoring
#: rule (docs/bundle-format.md section 7) taken at least once.
SCORED: dict[str, list[Edit]] = {
    "blend-with-votes": [],
    "blend-with-votes-without-offsets": [_drop("hashing.offsets")],
    "blend-without-votes": [_drop("releases.votes", "hashing"), _spend(8.0)],
    "without-prior": [_drop("releases.votes", "hashing", "label_descriptions", "prior"), _spend(8.0)],
    "without-pull": [_set("scoring.description_pull", 0.0)],
    "pull-below-one": [_set("scoring.description_pull", 0.1)],
    "pull-at-its-bound": [_set("scoring.description_pull", 1000.0)],
    "boost-capped": [_spend(1e-3), _set("scoring.prior_records_per_class", 1e6)],
    "votes-alone-with-offsets": [_drop(*_CLASS_STATISTICS), _spend(8.0)],
    "votes-alone-without-offsets": [_drop(*_CLASS_STATISTICS, "hashing.offsets"), _spend(8.0)],
    "counts-below-one": [_values("releases.class_counts.values", lambda a: a.fill(-5))],
    "zero-class-sum-row": [_values("releases.class_sums.values", lambda a: a.__setitem__(0, 0)),
                           _set("scoring.description_pull", 0.0)],
    "zero-class-sum-row-pulled": [_values("releases.class_sums.values", lambda a: a.__setitem__(0, 0))],
    "temperatures-at-their-bounds": [_set("scoring.centroid_temperature", 1e-3), _set("scoring.prior_temperature", 1e3)],
    "sharp-prior": [_set("scoring.prior_temperature", 1e-3)],
    "votes-all-negative": [_values("releases.votes.values", lambda a: a.fill(-3))],
    "three-batches": [_batches(3)],
    "three-batches-pull-below-one": [_batches(3), _set("scoring.description_pull", 0.1)],
    "head": [_as_head()],
    "head-full-batches-small-delta": [_as_head(sample_rate=1.0, steps=20, delta=1e-12, epsilon=50.0)],
    "head-logits-at-float32-bounds": [_as_head(arrays={"weights": _extremes, "bias": _extremes})],
    "head-tied-logits": [_as_head(arrays={"weights": np.zeros, "bias": np.zeros})],
    "head-three-records-per-person": [_as_head(), cases.as_person_head],
    "tie-broken-by-rounding": [_drop("releases.votes", "hashing"), _spend(8.0), _tie(pull=True)],
    "tie-broken-by-rounding-without-pull": [_drop("releases.votes", "hashing"), _spend(8.0), _tie(pull=False)],
    # the least epsilon the accountant allows these numbers (one double less is refused: cases.py)
    **{f"head-epsilon-at-the-bound-{i}": [_as_head(), _head_edge(edge)] for i, edge in enumerate(cases.EDGES)},
}


# --------------------------------------------------------------------------- writing


def _write(out: Path, name: str, data: bytes) -> str:
    (out / name).parent.mkdir(parents=True, exist_ok=True)
    (out / name).write_bytes(data)
    return name


def _refused(data: bytes, pack: fmt.EncoderPack | None = None) -> BundleError | None:
    try:
        fmt.unpack(data, pack=pack)
    except BundleError as exc:
        return exc
    return None


def _checked(case: cases.Case, exc: BundleError | None) -> None:
    """Stop unless the Python reader refused ``case`` with the code and path it was made for."""
    if exc is None:
        raise SystemExit(f"{case.name}: the Python reader accepted it")
    if (exc.code, exc.path) != (case.code, case.path):
        raise SystemExit(f"{case.name}: made to be refused with {case.code} at {case.path!r}, but the Python "
                         f"reader said {exc.code} at {exc.path!r}: {exc}")


def pack_cases(out: Path, index: dict[str, Any], tables: Path, texts: list[str]) -> None:
    """Format 1.1's encoder packs: a statistics bundle read with its pack and run end to end; the
    refusals of a bundle with the wrong pack, or none; and the refusals of pack files."""
    b = fmt.load(tables)
    pack_data = fmt.pack_encoder(b.encoder)
    pack_file = _write(out, "packs/tiny-onnx.dpedge-encoder", pack_data)
    pack = fmt.load_pack(out / pack_file)
    stats_data = fmt.pack(dataclasses.replace(b, encoder_pack=pack.digest))
    stats = out / _write(out, "accept/statistics.dpedge", stats_data)
    rows = queries(stats, texts, engine=True, pack=pack)
    index["accept"].append({"file": "accept/statistics.dpedge", "pack": pack_file, "engine": "onnx",
                            "labels": list(b.labels), "check": check_row(stats, pack), "queries": rows,
                            "vectors": vectors(stats, b.encoder.dim, [r["embedding"] for r in rows if "embedding" in r],
                                               pack)})
    other_data = fmt.pack_encoder(dataclasses.replace(b.encoder, check_text=b.encoder.check_text + " (another pack)"))
    other_file = _write(out, "packs/another.dpedge-encoder", other_data)
    doc = cases.document(stats_data)
    without_requires = copy.deepcopy(doc)
    cases.drop(without_requires, "requires")
    both = copy.deepcopy(doc)
    cases.put(both, "encoder", cases.document(tables.read_bytes())["encoder"])
    newer = copy.deepcopy(doc)  # what a reader of 1.1 meets from a later minor: a requirement it cannot know
    cases.put(newer, "version", [1, 2])
    cases.put(newer, "requires", ["encoder_source"])
    cases.drop(newer, "encoder_pack")
    bundle_cases = [  # (case, the pack given to the reader or None)
        (cases.Case("statistics-without-its-pack", stats_data, "pack.missing", "encoder_pack"), None),
        (cases.Case("statistics-with-another-pack", stats_data, "pack.mismatch", "encoder_pack"), other_file),
        (cases.Case("own-encoder-with-a-pack", b"", "pack.unexpected", "encoder_pack"), pack_file),
        (cases.Case("statistics-not-requiring-its-pack", cases.seal(without_requires), "relation.requires", "requires"),
         pack_file),
        (cases.Case("statistics-with-an-encoder-too", cases.seal(both), "field.not_allowed", "encoder"), pack_file),
        (cases.Case("newer-minor-requiring-the-unknown", cases.seal(newer), "version.requires", "requires[0]"), None),
    ]
    same = {"statistics-without-its-pack": "accept/statistics.dpedge", "statistics-with-another-pack":
            "accept/statistics.dpedge", "own-encoder-with-a-pack": "accept/tables.dpedge"}  # files already there
    for case, given in bundle_cases:
        data = (out / same[case.name]).read_bytes() if case.name in same else case.data
        _checked(case, _refused(data, None if given is None else fmt.load_pack(out / given)))
        file = same.get(case.name) or _write(out, f"refuse/{case.name}.dpedge", case.data)
        row = {"file": file, "code": case.code, "path": case.path}
        index["refuse"].append({**row, **({} if given is None else {"pack": given})})
    pdoc = cases.document(pack_data)
    # The refusals below come before the model family is looked at: a one-byte model keeps them small.
    pdoc["encoder"].update(model=b"\x08", weights=b"\x00")
    enc = pdoc["encoder"]
    extra = copy.deepcopy(pdoc)
    cases.put(extra, "labels", ["a", "b"], before="encoder")
    unit = copy.deepcopy(pdoc)
    unit["encoder"]["check_embedding"]["data"] = bytes(len(enc["check_embedding"]["data"]))
    weights_first = copy.deepcopy(pdoc)
    weights_first["encoder"] = {"weights": enc["weights"], **{k: v for k, v in enc.items() if k != "weights"}}
    no_tokenizer = copy.deepcopy(pdoc)
    cases.drop(no_tokenizer, "encoder.tokenizer_json")
    pack_refusals = [  # (case, expect: the digests the application accepts, or None)
        (cases.Case("pack-not-among-the-accepted", b"", "pack.untrusted", ""), [other_data[-32:].hex()]),
        (cases.Case("pack-that-is-a-bundle", b"", "version.format", "format"), None),
        (cases.Case("pack-truncated", cases.seal(pdoc)[:-10], "container.truncated", ""), None),
        (cases.Case("pack-with-labels", cases.seal(extra), "field.unknown", "labels"), None),
        (cases.Case("pack-check-embedding-zero", cases.seal(unit), "relation.check", "encoder.check_embedding"), None),
        (cases.Case("pack-weights-not-last", cases.seal(weights_first), "relation.weights", "encoder.weights"), None),
        (cases.Case("pack-without-tokenizer", cases.seal(no_tokenizer), "field.missing", "encoder.tokenizer_json"),
         None),
    ]
    same = {"pack-not-among-the-accepted": pack_file, "pack-that-is-a-bundle": "accept/statistics.dpedge"}
    index["refuse_pack"] = []
    for case, expect in pack_refusals:
        try:
            fmt.unpack_pack((out / same[case.name]).read_bytes() if case.name in same else case.data, expect=expect)
            exc = None
        except BundleError as e:
            exc = e
        _checked(case, exc)
        file = same.get(case.name) or _write(out, f"refuse/packs/{case.name}.dpedge-encoder", case.data)
        row = {"file": file, "code": case.code, "path": case.path}
        index["refuse_pack"].append({**row, **({} if expect is None else {"expect": expect})})


def write(out: Path, encoders: Path, real_only: bool = False) -> dict[str, Any]:
    """Every bundle into ``out`` (accept/, refuse/), and the index (``real_only``: the engine
    bundles and their queries alone, for a corpus of a real encoder)."""
    work = Path(tempfile.mkdtemp())
    default = build(work / "default.dpedge", encoders)
    tables = build(work / "tables.dpedge", encoders, votes_share=0.1, tables=4, bits=4)
    random = build(work / "random.dpedge", encoders, hashing="random", tables=4, bits=4)
    real = [("default", default), ("tables", tables), ("random", random),
            ("tflite", build(work / "tflite.dpedge", encoders, encoder_format="tflite"))]
    if (encoders / "mpnet").is_dir():  # the MPNet family (1.2); a corpus of the real encoder has no MPNet
        real.append(("mpnet", build(work / "mpnet.dpedge", encoders, encoder_source=encoders / "mpnet")))
    tables_doc = cases.document(tables.read_bytes())
    person = copy.deepcopy(tables_doc)
    for path, value in cases.per_unit(3, person):
        cases.put(person, path, value)
    real.append(("three-records-per-person", work / _write(work, "three-records-per-person.dpedge", cases.seal(person))))

    index: dict[str, Any] = {"tolerance": REAL_TOLERANCE if real_only else TOLERANCE, "accept": [], "refuse": [],
                             "text": text_rows(), "numbers": number_rows(), "arithmetic": arithmetic_rows()}
    texts = SAMPLE + [json.loads(line)["text"] for line in (DATA / "test.jsonl").read_text().splitlines()[:12]]
    for name, path in real:
        b = fmt.load(path)
        rows = queries(path, texts, engine=True)
        embeddings = [r["embedding"] for r in rows if "embedding" in r]
        entry = {"file": _write(out, f"accept/{name}.dpedge", path.read_bytes()), "engine": b.encoder.format,
                 "labels": list(b.labels), "check": check_row(path), "queries": rows,
                 "vectors": vectors(path, b.encoder.dim, embeddings)}
        index["accept"].append(entry)
    if real_only:
        shutil.rmtree(work, ignore_errors=True)
        return {**index, "text": [], "numbers": [], "arithmetic": []}
    # Load-time refusal: a unit check embedding the engine does not compute (another direction).
    doc = copy.deepcopy(tables_doc)
    _values("encoder.check_embedding", lambda a: a.__setitem__(slice(None), a[::-1].copy()))(doc)
    index["accept"].append({"file": _write(out, "accept/check-embedding-another-direction.dpedge", cases.seal(doc)),
                            "engine": "onnx", "labels": list(doc["labels"]), "check": check_row(tables),
                            "load": {"code": "engine.check", "path": "encoder.check_embedding"}})

    base = cases.small_base(tables.read_bytes())
    for name, edits in SCORED.items():
        doc = copy.deepcopy(base)
        for edit in edits:
            edit(doc)
        data = cases.seal(cases.composed(doc))  # an edit may drop a release: the composition follows
        path = work / _write(work, f"{name}.dpedge", data)
        index["accept"].append({"file": _write(out, f"accept/scoring/{name}.dpedge", data), "engine": None,
                                "labels": list(doc["labels"]),
                                "vectors": vectors(path, doc["encoder"]["dim"], [])})
    for name, data in cases.valid(base):
        path = work / _write(work, f"{name}.dpedge", data)
        index["accept"].append({"file": _write(out, f"accept/variants/{name}.dpedge", data), "engine": None,
                                "labels": list(fmt.load(path).labels),
                                "queries": queries(path, SAMPLE[:8] + SAMPLE[16:23], engine=False)})
    made = cases.malformed(base) + cases.real_encoder_cases(tables.read_bytes())
    for case in made:
        _checked(case, _refused(case.data))
        index["refuse"].append({"file": _write(out, f"refuse/{case.name}.dpedge", case.data), "code": case.code,
                                "path": case.path})
    pack_cases(out, index, tables, texts)
    if (work / "mpnet.dpedge").is_file():
        mpnet_pack_case(out, index, work / "mpnet.dpedge", texts)
    shutil.rmtree(work, ignore_errors=True)
    return index


def mpnet_pack_case(out: Path, index: dict[str, Any], bundle: Path, texts: list[str]) -> None:
    """An MPNet encoder in a pack (1.2), and a statistics bundle run end to end with it."""
    b = fmt.load(bundle)
    pack_file = _write(out, "packs/tiny-mpnet.dpedge-encoder", fmt.pack_encoder(b.encoder))
    pack = fmt.load_pack(out / pack_file)
    stats = out / _write(out, "accept/statistics-mpnet.dpedge", fmt.pack(dataclasses.replace(b, encoder_pack=pack.digest)))
    index["accept"].append({"file": "accept/statistics-mpnet.dpedge", "pack": pack_file, "engine": "onnx",
                            "labels": list(b.labels), "check": check_row(stats, pack),
                            "queries": queries(stats, texts, engine=True, pack=pack)})


def dumps(index: dict[str, Any]) -> str:
    """cases.json: one case per line (diffs stay readable)."""
    lines = ["{", f'  "about": {json.dumps(ABOUT)},', f'  "tolerance": {json.dumps(index["tolerance"])},']
    keys = [k for k in ("accept", "refuse", "refuse_pack", "text", "numbers", "arithmetic") if k in index or k in (
        "accept", "refuse", "refuse_pack", "text")]
    for key in keys:
        rows = index.get(key, [])
        body = ",\n".join("    " + json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in rows)
        lines.append(f'  "{key}": [\n{body}\n  ]' + ("," if key != keys[-1] else ""))
    return "\n".join(lines + ["}"]) + "\n"


ABOUT = ("The conformance corpus of format 1 (docs/bundle-format.md section 9 says how a reader runs it). "
         "refuse: each file is refused with code and path. accept: each file is read; engine names the encoder "
         "format whose engine runs its queries end to end (null: tokenizer and scoring only); check is the engine's "
         "token ids and embedding of the bundle's check text (a stand-in engine answers with it); load, when present, "
         "is the refusal at load; each query's token_ids are exact; a query with code is refused; embedding is "
         "within tolerance.embedding per coordinate on the reference engine (cosine at least "
         "tolerance.embedding_cosine on any other); scores and label follow from the given embedding (scores "
         "within tolerance.scores); an end-to-end label is compared where margin exceeds tolerance.label_margin and, "
         "with vote tables, bucket_margin (the embedding's distance to the nearest hyperplane) exceeds "
         "tolerance.bucket_margin. "
         "pack (1.1), when present, is the encoder pack file the reader is given with the bundle (absent: none). "
         "refuse_pack: each encoder pack file is refused with code and path, read with expect (when present) as the "
         "digests the application accepts. "
         "text: escape, escape_json, key and the text rules of each string. "
         "numbers: value written as the contract writes numbers (10 significant digits, ties to even). "
         "arithmetic: the function (section 7.1's exp, log, log1p, expm1, or head_epsilon, the accountant's bound "
         "of section 5) of args, its IEEE double result as 16 hex digits, bit for bit.")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=CORPUS)
    ap.add_argument("--encoders", type=Path, default=None,
                    help="the tiny encoders (format/tools/tiny_encoder.py's onnx/ and tflite/; default: taken out of "
                         "the corpus's own accept/default.dpedge and accept/tflite.dpedge)")
    ap.add_argument("--real", action="store_true",
                    help="a corpus of the real default encoder (exported into models/), for the integration tier: the "
                         "engine bundles and their queries only (use another --out)")
    args = ap.parse_args(argv)
    encoders = args.encoders
    if args.real:
        from exporter.encoder_export import export_encoder

        if args.out.resolve() == CORPUS.resolve():
            raise SystemExit("--real writes a corpus of the real encoder: give it another --out")
        encoders = Path(tempfile.mkdtemp())
        for name in ("onnx", "tflite"):
            (encoders / name).symlink_to(export_encoder(None, ROOT / "models", encoder_format=name).directory)
    elif encoders is None:
        encoders = Path(tempfile.mkdtemp())
        for name, bundle in (("onnx", "default"), ("tflite", "tflite"), ("mpnet", "mpnet")):
            unpack_encoder(CORPUS / "accept" / f"{bundle}.dpedge", encoders / name)
    for sub in ("accept", "refuse"):
        shutil.rmtree(args.out / sub, ignore_errors=True)
    index = write(args.out, encoders, real_only=args.real)
    (args.out / "cases.json").write_text(dumps(index), encoding="utf-8")
    size = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    print(f"wrote {args.out}: {len(index['accept'])} accepted bundles, {len(index['refuse'])} refused, "
          f"{len(index['text'])} text cases; {size / 2**20:.2f} MiB in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
