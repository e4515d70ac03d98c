"""Golden vectors for the Java core: what the Python runtime answers, for the JVM to reproduce.

    python android_demo/golden.py --out DIR [--bundle B ...]

Without --bundle it builds four real DP bundles from the project's own data/assistant set
(epsilon 8, seed 1234): format 4.0 as the exporter writes it by default (class counts and
class sums, the prior, the "cosine_public" rule with its pull toward the descriptions and the
"linear" prior boost, no vote tables) with the int8 ONNX encoder and with the int8 TFLite
encoder, format 4.0 with vote tables (--votes-share 0.1: offsets, class statistics, prior,
scoring and votes) with ONNX, and format 1.2 (random hashing, plain vote sums) with ONNX. With --bundle, the bundles given must
include a default format-4 bundle (no vote tables) and a format-4 bundle with vote tables (the
derived cases below are made from them).

For each bundle and each text of a varied sample (accents, punctuation, CJK, emoji, control
and combining characters, right-to-left scripts, over-long words and texts, plus the
assistant test set) it records the Python runtime's token ids, the encoder's embedding,
the bucket id per table (none without vote tables), the per-label scores and the label.

From the default bundle and from the bundle with vote tables it derives "scored" bundles that
exercise each part of the scorer (SCORED and SCORED_TABLES): other weights and temperatures, a
small epsilon, records per person, no scoring map, no prior, no class statistics, offsets
alone, counts below the floor, a class sum of zeros, the fields stripped to 1.2, every
centroid rule (format 3.0's "cosine_public", format 2.1's Gaussian rule, also with a clip
small enough to clip nearly every query, and format 2.0's cosine rule), both prior boost rules
(3.0's linear boost, also without R and at its cap of 1e6; 2.x's max(1, 1/epsilon, R C /
(epsilon N)) with its count term deciding, too small to matter and absent), and bundles
rewritten as formats 2.1 and 2.0 wrote them (one class_stats release, their scoring maps),
which a format-3 reader still reads. For each it records the Python scorer's prior boost and
its buckets, scores and label for a set of embeddings. It also writes malformed variants (of
the bundle with vote tables, and of the default bundle: MALFORMED_3), each with a phrase its
error message must contain (the scoring checks among them: a string where a number is meant,
an unknown centroid or boost rule, a number above 1e6, a temperature below 1e-6, the Gaussian
rule without a clip, the linear boost without class statistics, and which error wins when
several apply; releases that do not list every statistic, do not add up or whose noise scales
contradict their sensitivity; the vote tables half present, or absent before major 3), and
checks that the Python reader rejects each with that phrase, so both readers are held to the
same cases; and valid variants both readers must load. Every expected value comes from the
Python runtime.

Everything goes into DIR: golden.msgpack (layout in android_demo/README.md), the bundles,
scored/*.dpedge, variants/*.dpedge and malformed/*.dpedge. The Java tests
(android_demo/core/run-tests.sh DIR) read it.
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
from runtime.bundle.schema import (SCORING_MAX, Array, ClassStatsKey, EncoderKey, Lsh, Outer, Payload,  # noqa: E402
                                   PriorKey, Privacy, Release, Scoring, Statistic, path)
from runtime.scoring import Scorer  # noqa: E402

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
    """Real DP bundles of the assistant data: format 3.0 by default (ONNX, TFLite), format 3.0
    with vote tables (ONNX, --votes-share 0.1) and format 1.2 (ONNX, random hashing)."""
    from exporter.build import BuildOptions, build

    paths = []
    for name, encoder_format, extra in (("onnx", "onnx", {}), ("onnx-tables", "onnx", {"votes_share": 0.1}),
                                        ("tflite", "tflite", {}), ("onnx-random", "onnx", {"hashing": "random"})):
        path = out / f"assistant-{name}.dpedge"
        build(BuildOptions(train=DATA / "train.jsonl", labels=DATA / "labels.txt", epsilon=8.0, out=path,
                           seed=1234, encoder_format=encoder_format, models_dir=ROOT / "models", progress=False,
                           **extra))
        paths.append(path)
    return paths


def is_default_format_3(path: Path) -> bool:
    """The exporter's default: class statistics, prior and scoring, no vote tables."""
    b = fmt.load(path)
    return b.votes is None and all(x is not None for x in (b.class_stats, b.prior, b.scoring))


def is_full_with_tables(path: Path) -> bool:
    """A bundle with every field: vote tables with offsets, class statistics, prior and scoring."""
    b = fmt.load(path)
    return all(x is not None for x in (b.votes, b.offsets, b.class_stats, b.prior, b.scoring))


def is_format_1(path: Path) -> bool:
    return msgpack.unpackb(path.read_bytes(), raw=False)[Outer.VERSION][0] == 1


def cases(bundle: Path, texts: list[str]) -> list[dict[str, Any]]:
    """The Python runtime's answer to each text, stage by stage (no buckets without vote tables)."""
    clf = Classifier.load(bundle, threads=1)
    hasher = clf.scorer.hasher
    out = []
    for text in texts:
        ids = clf.tokenizer.encode([text])[0]
        emb = clf.encoder.embed_one(ids)[None, :]
        buckets = [] if hasher is None else hasher.buckets(emb)[0]
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
    outer[Outer.PAYLOAD] = msgpack.packb(payload, use_bin_type=True)
    outer[Outer.CHECKSUM] = {**outer[Outer.CHECKSUM], Outer.DIGEST: hashlib.sha256(outer[Outer.PAYLOAD]).digest()}
    return msgpack.packb(outer, use_bin_type=True)


def _payload_edit(edit: Callable[[dict[str, Any]], None]) -> Callable[[bytes], bytes]:
    def make(data: bytes) -> bytes:
        outer = msgpack.unpackb(data, raw=False)
        payload = msgpack.unpackb(outer[Outer.PAYLOAD], raw=False)
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


#: name -> (how to make it from the bundle with vote tables, phrase the error must contain)
MALFORMED: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "empty": (lambda d: b"", "truncated"),
    "truncated": (lambda d: d[: len(d) // 3], "truncated"),
    "trailing-bytes": (lambda d: d + b"\x00\x01", "trailing bytes"),
    "not-a-map": (lambda d: msgpack.packb([1, 2, 3]), "top level is array, expected a map"),
    "wrong-magic": (_outer_edit(_set(path(Outer.FORMAT), "something-else")), "not a dpedge bundle"),
    "newer-major": (_outer_edit(_set(path(Outer.VERSION), [5, 0])),
                    "bundle format version 5.0 is newer than this runtime supports (1.x and 2.x and 3.x and 4.x); upgrade "
                    "dpedge to read it"),
    "older-major": (_outer_edit(_set(path(Outer.VERSION), [0, 9])),
                    "bundle format version 0.9 is not supported (this runtime reads 1.x and 2.x and 3.x and 4.x)"),
    "bit-flip": (_flip_payload_byte, "checksum mismatch"),
    "bad-checksum-algorithm": (_outer_edit(_set(path(Outer.CHECKSUM, Outer.ALGORITHM), "md5")), "unsupported checksum algorithm"),
    "missing-hyperplanes": (_payload_edit(_delete(path(Payload.LSH, Lsh.HYPERPLANES))), "missing field 'lsh.hyperplanes'"),
    "missing-privacy-epsilon": (_payload_edit(_delete(path(Payload.PRIVACY, Privacy.EPSILON))), "missing field 'privacy.epsilon'"),
    "labels-wrong-type": (_payload_edit(_set(path(Payload.LABELS), "alarm_timer")), "field 'labels' is string, expected array"),
    "labels-duplicate": (_payload_edit(_set(path(Payload.LABELS), ["a", "a", "b", "c", "d", "e", "f"])), "distinct"),
    "one-label": (_payload_edit(_set(path(Payload.LABELS), ["only"])), "at least two"),
    "votes-wrong-dtype": (_payload_edit(_set(path(Payload.VOTES, Array.DTYPE), "<i4")), "expected '<i2'"),
    "votes-big-endian": (_payload_edit(_set(path(Payload.VOTES, Array.DTYPE), ">i2")), "expected '<i2'"),
    "votes-short-data": (_payload_edit(_set(path(Payload.VOTES, Array.DATA), lambda d: d[:-2])), "bytes, but dtype <i2 and shape"),
    "votes-huge-shape": (_payload_edit(_set(path(Payload.VOTES, Array.SHAPE), [2**40, 2**10, 7])), "bytes, but dtype"),
    # the first two dimensions swapped: the same byte count, so the shape check is what refuses it
    "votes-wrong-shape": (_payload_edit(_set(path(Payload.VOTES, Array.SHAPE), lambda s: [s[1], s[0], s[2]])), "field 'votes' has shape"),
    "hyperplanes-nan": (_payload_edit(_set(path(Payload.LSH, Lsh.HYPERPLANES, Array.DATA),
                                           lambda d: np.full(len(d) // 4, np.nan, "<f4").tobytes())), "non-finite"),
    "bits-out-of-range": (_payload_edit(_set(path(Payload.LSH, Lsh.BITS), 40)), "out of range"),
    "tables-boolean": (_payload_edit(_set(path(Payload.LSH, Lsh.TABLES), True)), "is boolean, expected integer"),
    "not-simhash": (_payload_edit(_set(path(Payload.LSH, Lsh.FAMILY), "minhash")), "expected 'simhash'"),
    "sensitivity-mismatch": (_payload_edit(_set(path(Payload.PRIVACY, Privacy.SENSITIVITY_L1), 1)), "touches one cell in each of"),
    "per-person-sensitivity-mismatch": (_payload_edit(_set(path(Payload.PRIVACY, Privacy.MAX_RECORDS_PER_UNIT), 3)),
                                        "for each of the up to 3 records of a person"),
    "per-person-zero": (_payload_edit(_set(path(Payload.PRIVACY, Privacy.MAX_RECORDS_PER_UNIT), 0)), "expected at least 1"),
    "delta-not-zero": (_payload_edit(_set(path(Payload.PRIVACY, Privacy.DELTA), 1e-6)), "only pure epsilon-DP"),
    "negative-epsilon": (_payload_edit(_set(path(Payload.PRIVACY, Privacy.EPSILON), -1.0)), "positive finite"),
    "epsilon-string": (_payload_edit(_set(path(Payload.PRIVACY, Privacy.EPSILON), "8")), "is string, expected float or integer"),
    "unknown-encoder-format": (_payload_edit(_set(path(Payload.ENCODER, EncoderKey.FORMAT), "coreml")), "not supported by this runtime"),
    "encoder-dim-mismatch": (_payload_edit(_set(path(Payload.ENCODER, EncoderKey.DIM), 128)), "384-d"),
    "empty-model": (_payload_edit(_set(path(Payload.ENCODER, EncoderKey.MODEL), b"")), "is empty"),
    "unknown-input": (_payload_edit(_set(path(Payload.ENCODER, EncoderKey.INPUTS), ["input_ids", "pixel_values"])), "unsupported inputs"),
    "inputs-not-strings": (_payload_edit(_set(path(Payload.ENCODER, EncoderKey.INPUTS), ["input_ids", 7])),
                           "field 'encoder.inputs' must be a list of strings"),
    "privacy-not-a-map": (_payload_edit(_set(path(Payload.PRIVACY), [1, 2])), "field 'privacy' is array, expected map"),
    "check-empty-text": (_payload_edit(_set(path(Payload.ENCODER, EncoderKey.CHECK, EncoderKey.CHECK_TEXT), "")), "non-empty text and a finite unit 384-d embedding"),
    "check-zero-embedding": (_payload_edit(_set(path(Payload.ENCODER, EncoderKey.CHECK, EncoderKey.CHECK_EMBEDDING, Array.DATA), lambda d: bytes(len(d)))),
                             "finite unit 384-d embedding"),
}



def _swap_shape(path: str) -> Callable[[dict[str, Any]], None]:
    """An array record's first two dimensions swapped: same bytes, wrong shape."""
    return _set(path + ".shape", lambda s: [s[1], s[0], *s[2:]])


def _floats(path: str, change: Callable[[np.ndarray], None]) -> Callable[[dict[str, Any]], None]:
    """Edits the float32 values of an array record in place (its shape unchanged)."""
    def edit(p: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        for key in parents:
            p = p[key]
        a = np.frombuffer(p[last][Array.DATA], "<f4").copy()
        change(a)
        p[last][Array.DATA] = a.astype("<f4").tobytes()
    return edit


def _drop_last_count(p: dict[str, Any]) -> None:
    counts = p[Payload.CLASS_STATS][ClassStatsKey.COUNTS]
    counts[Array.SHAPE] = [counts[Array.SHAPE][0] - 1]
    counts[Array.DATA] = counts[Array.DATA][:-4]


def _projection_wider_than_dim(p: dict[str, Any]) -> None:
    """k = dim + 1 rows: refused on the projection, before any other class-statistics array."""
    proj = p[Payload.CLASS_STATS][ClassStatsKey.PROJECTION]
    k, dim = proj[Array.SHAPE]
    proj[Array.SHAPE] = [dim + 1, dim]
    proj[Array.DATA] = np.ones((dim + 1, dim), "<f4").tobytes()


def _release(index: int, key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(p: dict[str, Any]) -> None:
        r = p[Payload.PRIVACY][Privacy.RELEASES][index]
        r[key] = value(r[key]) if callable(value) else value
    return edit


def _drop_release(statistic: str) -> Callable[[dict[str, Any]], None]:
    def edit(p: dict[str, Any]) -> None:
        p[Payload.PRIVACY][Privacy.RELEASES] = [r for r in p[Payload.PRIVACY][Privacy.RELEASES]
                                               if r[Release.STATISTIC] != statistic]
    return edit


def _overspend(p: dict[str, Any]) -> None:
    p[Payload.PRIVACY][Privacy.RELEASES][0][Release.EPSILON] = 1.5 * float(p[Payload.PRIVACY][Privacy.EPSILON])


def _all(*edits: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def edit(p: dict[str, Any]) -> None:
        for e in edits:
            e(p)
    return edit


def _scoring(weights: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    def edit(p: dict[str, Any]) -> None:
        p[Payload.SCORING] = {**p[Payload.SCORING], **weights}
    return edit


def _scoring_without(*names: str) -> Callable[[dict[str, Any]], None]:
    def edit(p: dict[str, Any]) -> None:
        for name in names:
            p[Payload.SCORING].pop(name, None)
    return edit


def _one_class_stats_release(p: dict[str, Any]) -> None:
    """The class counts' and class sums' releases (format 3) merged into the one class_stats
    release of format 2, listed first as 2.x wrote it: their shares and sensitivities added
    (the sensitivity of the pair), its noise scale their quotient, the top level the headline's."""
    privacy = p[Payload.PRIVACY]
    releases = privacy[Privacy.RELEASES]
    parts = [r for r in releases if r[Release.STATISTIC] in (Statistic.CLASS_COUNTS, Statistic.CLASS_SUMS)]
    sums = next(r for r in parts if r[Release.STATISTIC] == Statistic.CLASS_SUMS)
    merged = {Release.STATISTIC: Statistic.CLASS_STATS, Release.EPSILON: sum(float(r[Release.EPSILON]) for r in parts),
              Release.MECHANISM: sums[Release.MECHANISM],
              Release.SENSITIVITY_L1: sum(int(r[Release.SENSITIVITY_L1]) for r in parts),
              Release.GRID: sums.get(Release.GRID), Release.CLIP_L1: sums.get(Release.CLIP_L1)}
    privacy[Privacy.RELEASES] = [merged] + [r for r in releases if r not in parts]
    privacy[Privacy.RELEASED_STATISTICS] = [r[Release.STATISTIC] for r in privacy[Privacy.RELEASES]]
    _consistent_scales(p)


def _as_2_0(p: dict[str, Any]) -> None:
    """The scoring map a format-2.0 bundle carried: no rules or clip (the cosine rule and the
    "max" boost), no prior_records_per_class (the boost is max(1, 1/epsilon)) and the 2.0
    centroid temperature; its class statistics in one release."""
    _scoring_without(Scoring.CENTROID_RULE, Scoring.CENTROID_CLIP_L1, Scoring.PRIOR_RECORDS_PER_CLASS,
                     Scoring.PRIOR_BOOST_RULE)(p)
    p[Payload.SCORING][Scoring.CENTROID_TEMPERATURE] = 0.05
    _one_class_stats_release(p)


def _as_2_1(p: dict[str, Any]) -> None:
    """The scoring map a format-2.1 bundle carried: the Gaussian rule at the records' clip (the
    class sums release's clip_l1) and temperature 0.003, prior_records_per_class 1000 and no
    boost rule ("max"); its class statistics in one release."""
    clip = next(float(r[Release.CLIP_L1]) for r in p[Payload.PRIVACY][Privacy.RELEASES]
                if r[Release.STATISTIC] == Statistic.CLASS_SUMS)
    _scoring_without(Scoring.PRIOR_BOOST_RULE)(p)
    _scoring({Scoring.CENTROID_RULE: "gaussian", Scoring.CENTROID_CLIP_L1: clip, Scoring.CENTROID_TEMPERATURE: 0.003,
              Scoring.PRIOR_RECORDS_PER_CLASS: 1000.0})(p)
    _one_class_stats_release(p)


def _without_class_stats(p: dict[str, Any]) -> None:
    """No class statistics: their releases dropped, epsilon what the rest spends, and the "max"
    boost (the linear one reads the class counts)."""
    p.pop(Payload.CLASS_STATS)
    _drop_release(Statistic.CLASS_COUNTS)(p)
    _drop_release(Statistic.CLASS_SUMS)(p)
    _epsilon_from_releases(p)
    _scoring({Scoring.PRIOR_BOOST_RULE: "max"})(p)


#: Cases made from a bundle with vote tables, offsets, class statistics, prior and scoring
#: (name -> (how to make it, phrase the error must contain)). The "scoring-" cases after
#: "scoring-not-a-map" are the scoring map's checks (runtime/bundle/reader.py _check_scoring),
#: including which error wins when a map breaks several rules: strings, the centroid rule,
#: every number at most 1e6 (in SCORING_NUMBERS' order), the temperatures at least 1e-6, the
#: Gaussian clip, the prior boost rule (format 3.0) and the linear boost's class statistics.
MALFORMED_TABLES: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "offsets-wrong-shape": (_payload_edit(_swap_shape(path(Payload.LSH, Lsh.OFFSETS))), "field 'lsh.offsets' must be finite with shape"),
    "offsets-nan": (_payload_edit(_floats(path(Payload.LSH, Lsh.OFFSETS), lambda a: a.__setitem__(3, np.nan))),
                    "field 'lsh.offsets' must be finite with shape"),
    "offsets-wrong-dtype": (_payload_edit(_set(path(Payload.LSH, Lsh.OFFSETS, Array.DTYPE), "<f8")), "field 'lsh.offsets.dtype' is '<f8', "
                                                                               "expected '<f4'"),
    "offsets-one-dimensional": (_payload_edit(_set(path(Payload.LSH, Lsh.OFFSETS, Array.SHAPE), lambda s: [s[0] * s[1]])),
                                "field 'lsh.offsets.shape' must be 2 non-negative integers"),
    "offsets-nil": (_payload_edit(_set(path(Payload.LSH, Lsh.OFFSETS), None)), "field 'lsh.offsets' is nil, expected map"),
    "class-stats-sums-wrong-shape": (_payload_edit(_swap_shape(path(Payload.CLASS_STATS, ClassStatsKey.SUMS))),
                                     "field 'class_stats.sums' must be finite with shape"),
    "class-stats-counts-short": (_payload_edit(_drop_last_count), "field 'class_stats.counts' must be finite with "
                                                                   "shape (7,), got (6,)"),
    "class-stats-count-inf": (_payload_edit(_floats(path(Payload.CLASS_STATS, ClassStatsKey.COUNTS), lambda a: a.__setitem__(0, np.inf))),
                              "field 'class_stats.counts' must be finite"),
    "class-stats-projection-wider-than-dim": (_payload_edit(_projection_wider_than_dim),
                                              "field 'class_stats.projection' must have 1 to 384 rows (the embedding "
                                              "size), got 385"),
    "class-stats-missing-origin": (_payload_edit(_delete(path(Payload.CLASS_STATS, ClassStatsKey.ORIGIN))), "missing field 'class_stats.origin'"),
    "class-stats-not-a-map": (_payload_edit(_set(path(Payload.CLASS_STATS), [1])), "field 'class_stats' is array, expected map"),
    "releases-over-budget": (_payload_edit(_overspend), "the releases spend epsilon"),
    "releases-missing": (_payload_edit(_delete(path(Payload.PRIVACY, Privacy.RELEASES))), "missing field 'privacy.releases'"),
    "releases-without-class-sums": (_payload_edit(_drop_release(Statistic.CLASS_SUMS)),
                                    "field 'privacy.releases' must list every released statistic, got "
                                    "['class_counts', 'votes']"),
    "releases-without-votes": (_payload_edit(_drop_release(Statistic.VOTES)),
                               "must list every released statistic, got ['class_counts', 'class_sums']"),
    # format 2's one class_stats release stands for both parts, but not for the votes
    "releases-one-class-stats-without-votes": (_payload_edit(_all(_one_class_stats_release, _drop_release(Statistic.VOTES))),
                                               "must list every released statistic, got ['class_stats']"),
    "release-epsilon-zero": (_payload_edit(_release(0, Release.EPSILON, 0)),
                             "field 'privacy.releases[0].epsilon' must be positive, got 0"),
    "release-epsilon-nan": (_payload_edit(_release(1, Release.EPSILON, float("nan"))),
                            "field 'privacy.releases[1].epsilon' must be positive, got nan"),
    "release-sensitivity-float": (_payload_edit(_release(1, Release.SENSITIVITY_L1, 1.5)),
                                  "field 'privacy.releases[1].sensitivity_l1' is float, expected integer"),
    "release-missing-mechanism": (_payload_edit(lambda p: p[Payload.PRIVACY][Privacy.RELEASES][0].pop(Release.MECHANISM)),
                                  "missing field 'privacy.releases[0].mechanism'"),
    # noise_scale: a float or integer, checked after sensitivity_l1 and before mechanism
    "release-noise-scale-string": (_payload_edit(_release(1, Release.NOISE_SCALE, "20.0")),
                                   "field 'privacy.releases[1].noise_scale' is string, expected float or integer"),
    "release-noise-scale-nil": (_payload_edit(_release(0, Release.NOISE_SCALE, None)),
                                "field 'privacy.releases[0].noise_scale' is nil, expected float or integer"),
    "release-noise-scale-boolean": (_payload_edit(_release(0, Release.NOISE_SCALE, True)),
                                    "field 'privacy.releases[0].noise_scale' is boolean, expected float or integer"),
    "release-missing-noise-scale": (_payload_edit(lambda p: p[Payload.PRIVACY][Privacy.RELEASES][1].pop(Release.NOISE_SCALE)),
                                    "missing field 'privacy.releases[1].noise_scale'"),
    "release-sensitivity-before-noise-scale": (_payload_edit(_all(_release(0, Release.NOISE_SCALE, "x"),
                                                                  _release(0, Release.SENSITIVITY_L1, 1.5))),
                                               "field 'privacy.releases[0].sensitivity_l1' is float, expected integer"),
    "release-noise-scale-before-mechanism": (_payload_edit(_all(lambda p: p[Payload.PRIVACY][Privacy.RELEASES][0].pop(Release.MECHANISM),
                                                                _release(0, Release.NOISE_SCALE, False))),
                                             "field 'privacy.releases[0].noise_scale' is boolean, expected float or "
                                             "integer"),
    "release-not-a-map": (_payload_edit(_set(path(Payload.PRIVACY, Privacy.RELEASES), lambda r: [7, *r[1:]])),
                          "field 'privacy.releases[0]' must be a map, got integer"),
    "prior-wrong-shape": (_payload_edit(_swap_shape(path(Payload.PRIOR, PriorKey.EMBEDDINGS))),
                          "field 'prior.embeddings' must be finite with shape (7, 384), got (384, 7)"),
    "prior-missing-embeddings": (_payload_edit(_delete(path(Payload.PRIOR, PriorKey.EMBEDDINGS))), "missing field 'prior.embeddings'"),
    "scoring-negative": (_payload_edit(_set(path(Payload.SCORING, Scoring.VOTES), -1.0)),
                         "field 'scoring' must map names to finite non-negative numbers"),
    "scoring-boolean": (_payload_edit(_set(path(Payload.SCORING, Scoring.PRIOR), True)), "must map names to finite non-negative numbers"),
    "scoring-nan": (_payload_edit(_set(path(Payload.SCORING, Scoring.CENTROID_TEMPERATURE), float("nan"))),
                    "must map names to finite non-negative numbers"),
    "scoring-nil-value": (_payload_edit(_set(path(Payload.SCORING, 'extra'), None)), "must map names to finite non-negative numbers"),
    "scoring-not-a-map": (_payload_edit(_set(path(Payload.SCORING), [1.0])), "field 'scoring' is array, expected map"),
    "scoring-votes-string": (_payload_edit(_scoring({Scoring.VOTES: "2"})), "field 'scoring.votes' must be a number, got str"),
    "scoring-clip-string": (_payload_edit(_scoring({Scoring.CENTROID_CLIP_L1: "5"})),
                            "field 'scoring.centroid_clip_l1' must be a number, got str"),
    # the names are checked in SCORING_NUMBERS' order, not the map's
    "scoring-strings-out-of-order": (_payload_edit(_set(path(Payload.SCORING), {"centroid_clip_l1": "5", "prior_temperature": "1",
                                                                    "centroid_rule": "gaussian"})),
                                     "field 'scoring.prior_temperature' must be a number, got str"),
    "scoring-string-before-rule": (_payload_edit(_scoring({Scoring.CENTROIDS: "1", Scoring.CENTROID_RULE: "median"})),
                                   "field 'scoring.centroids' must be a number, got str"),
    "scoring-rule-unknown": (_payload_edit(_scoring({Scoring.CENTROID_RULE: "median"})),
                             "field 'scoring.centroid_rule' must be one of cosine, gaussian, cosine_public, got 'median'"),
    "scoring-rule-quoted": (_payload_edit(_scoring({Scoring.CENTROID_RULE: "Gaussian's"})),
                            "field 'scoring.centroid_rule' must be one of cosine, gaussian, cosine_public, got \"Gaussian's\""),
    "scoring-rule-integer": (_payload_edit(_scoring({Scoring.CENTROID_RULE: 1})),
                             "field 'scoring.centroid_rule' must be one of cosine, gaussian, cosine_public, got 1"),
    "scoring-rule-float": (_payload_edit(_scoring({Scoring.CENTROID_RULE: 2.5})),
                           "field 'scoring.centroid_rule' must be one of cosine, gaussian, cosine_public, got 2.5"),
    "scoring-rule-before-temperature": (_payload_edit(_scoring({Scoring.CENTROID_RULE: "median", Scoring.CENTROID_TEMPERATURE: 0})),
                                        "field 'scoring.centroid_rule' must be one of cosine, gaussian, cosine_public"),
    # at most 1e6, in SCORING_NUMBERS' order, after the strings and the rule
    "scoring-votes-1e308": (_payload_edit(_scoring({Scoring.VOTES: 1e308})), "field 'scoring.votes' must be at most 1e6"),
    "scoring-prior-above-max-integer": (_payload_edit(_scoring({Scoring.PRIOR: 1000001})),
                                        "field 'scoring.prior' must be at most 1e6"),
    "scoring-records-per-class-1e308": (_payload_edit(_scoring({Scoring.PRIOR_RECORDS_PER_CLASS: 1e308})),
                                        "field 'scoring.prior_records_per_class' must be at most 1e6"),
    "scoring-records-per-class-uint64": (_payload_edit(_scoring({Scoring.PRIOR_RECORDS_PER_CLASS: 2**64 - 1})),
                                         "field 'scoring.prior_records_per_class' must be at most 1e6"),
    "scoring-records-per-class-string": (_payload_edit(_scoring({Scoring.PRIOR_RECORDS_PER_CLASS: "1000"})),
                                         "field 'scoring.prior_records_per_class' must be a number, got str"),
    "scoring-clip-uint64": (_payload_edit(_scoring({Scoring.CENTROID_RULE: "gaussian", Scoring.CENTROID_CLIP_L1: 2**64 - 1})),
                            "field 'scoring.centroid_clip_l1' must be at most 1e6"),
    "scoring-bounds-in-order": (_payload_edit(_scoring({Scoring.PRIOR_RECORDS_PER_CLASS: 1e7, Scoring.CENTROIDS: 1.0000000001e6})),
                                "field 'scoring.centroids' must be at most 1e6"),
    "scoring-string-before-bound": (_payload_edit(_scoring({Scoring.VOTES: 1e308, Scoring.PRIOR_RECORDS_PER_CLASS: "x"})),
                                    "field 'scoring.prior_records_per_class' must be a number, got str"),
    "scoring-rule-before-bound": (_payload_edit(_scoring({Scoring.CENTROID_RULE: "median", Scoring.VOTES: 1e308})),
                                  "field 'scoring.centroid_rule' must be one of cosine, gaussian, cosine_public, got 'median'"),
    "scoring-bound-before-temperature": (_payload_edit(_scoring({Scoring.CENTROID_TEMPERATURE: 0, Scoring.PRIOR_TEMPERATURE: 1e300})),
                                         "field 'scoring.prior_temperature' must be at most 1e6"),
    # temperatures at least 1e-6, centroid_temperature first
    "scoring-centroid-temperature-zero": (_payload_edit(_scoring({Scoring.CENTROID_TEMPERATURE: 0})),
                                          "field 'scoring.centroid_temperature' must be at least 1e-6"),
    "scoring-prior-temperature-zero-float": (_payload_edit(_scoring({Scoring.PRIOR_TEMPERATURE: 0.0})),
                                             "field 'scoring.prior_temperature' must be at least 1e-6"),
    "scoring-prior-temperature-negative-zero": (_payload_edit(_scoring({Scoring.PRIOR_TEMPERATURE: -0.0})),
                                                "field 'scoring.prior_temperature' must be at least 1e-6"),
    "scoring-prior-temperature-subnormal": (_payload_edit(_scoring({Scoring.PRIOR_TEMPERATURE: 5e-324})),
                                            "field 'scoring.prior_temperature' must be at least 1e-6"),
    "scoring-centroid-temperature-below-min": (_payload_edit(_scoring({Scoring.CENTROID_TEMPERATURE: 9.9e-7})),
                                               "field 'scoring.centroid_temperature' must be at least 1e-6"),
    "scoring-both-temperatures-zero": (_payload_edit(_scoring({Scoring.CENTROID_TEMPERATURE: 0.0, Scoring.PRIOR_TEMPERATURE: 0})),
                                       "field 'scoring.centroid_temperature' must be at least 1e-6"),
    "scoring-gaussian-without-clip": (_payload_edit(_all(_scoring({Scoring.CENTROID_RULE: "gaussian"}),
                                                         _scoring_without("centroid_clip_l1"))),
                                      "field 'scoring.centroid_clip_l1' must be positive for the gaussian centroid "
                                      "rule"),
    "scoring-gaussian-clip-zero": (_payload_edit(_scoring({Scoring.CENTROID_RULE: "gaussian", Scoring.CENTROID_CLIP_L1: 0})),
                                   "field 'scoring.centroid_clip_l1' must be positive for the gaussian centroid rule"),
    "scoring-gaussian-clip-negative-zero": (_payload_edit(_scoring({Scoring.CENTROID_RULE: "gaussian", Scoring.CENTROID_CLIP_L1: -0.0})),
                                            "field 'scoring.centroid_clip_l1' must be positive for the gaussian"),
    "scoring-temperature-before-clip": (_payload_edit(_all(_scoring({Scoring.CENTROID_RULE: "gaussian", Scoring.PRIOR_TEMPERATURE: 0}),
                                                           _scoring_without("centroid_clip_l1"))),
                                        "field 'scoring.prior_temperature' must be at least 1e-6"),
    # format 3.0: the prior boost rule, checked after the Gaussian clip; "linear" reads the class counts
    "scoring-boost-rule-unknown": (_payload_edit(_scoring({Scoring.PRIOR_BOOST_RULE: "log"})),
                                   "field 'scoring.prior_boost_rule' must be one of max, linear, got 'log'"),
    "scoring-boost-rule-integer": (_payload_edit(_scoring({Scoring.PRIOR_BOOST_RULE: 1})),
                                   "field 'scoring.prior_boost_rule' must be one of max, linear, got 1"),
    "scoring-clip-before-boost-rule": (_payload_edit(_all(_scoring({Scoring.CENTROID_RULE: "gaussian",
                                                                    Scoring.PRIOR_BOOST_RULE: "log"}),
                                                          _scoring_without(Scoring.CENTROID_CLIP_L1))),
                                       "field 'scoring.centroid_clip_l1' must be positive for the gaussian"),
    "scoring-linear-without-class-stats": (_payload_edit(_all(_without_class_stats,
                                                              _scoring({Scoring.PRIOR_BOOST_RULE: "linear"}))),
                                           "field 'scoring.prior_boost_rule' is 'linear', which needs the released "
                                           "class counts of 'class_stats'"),
    # format 3.0: the vote tables are optional, but come together
    "tables-votes-without-lsh": (_payload_edit(_delete(path(Payload.LSH))), "missing field 'lsh'"),
    "tables-lsh-without-votes": (_payload_edit(_delete(path(Payload.VOTES))), "missing field 'votes'"),
}


def _varint(n: int) -> bytes:
    out = b""
    while True:
        out += bytes([(n & 0x7F) | (0x80 if n > 0x7F else 0)])
        n >>= 7
        if not n:
            return out


def _proto(field: int, body: bytes) -> bytes:
    """One length-delimited protobuf field (field numbers of onnx.proto)."""
    return _varint(field << 3 | 2) + _varint(len(body)) + body


def _onnx_model(*graph: bytes, model_fields: bytes = b"") -> bytes:
    """A small ONNX model: IR 8, opset 18 of the default domain, a graph of the given fields."""
    return b"\x08\x08" + _proto(8, b"\x10\x12") + model_fields + _proto(7, b"".join(graph))


def _onnx_node(op: str, *attributes: bytes) -> bytes:
    return _proto(1, _proto(1, b"input_ids") + _proto(2, b"y") + _proto(4, op.encode())
                  + b"".join(_proto(5, a) for a in attributes))


def _model(model: bytes) -> Callable[[dict[str, Any]], None]:
    return _set(path(Payload.ENCODER, EncoderKey.MODEL), model)


def _tokenizer(change: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], None]:
    """Edits the tokenizer.json document (a change may return replacement text instead)."""
    def edit(p: dict[str, Any]) -> None:
        enc = p[Payload.ENCODER]
        doc = json.loads(enc[EncoderKey.TOKENIZER_JSON])
        out = change(doc)
        enc[EncoderKey.TOKENIZER_JSON] = out if isinstance(out, str) else json.dumps(doc)
    return edit


def _doc_set(*keys: Any, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        for k in keys[:-1]:
            doc = doc[k]
        doc[keys[-1]] = value
    return change


def _tflite(change_name: str) -> Callable[[bytes], bytes]:
    """The TFLite bundle with its model rewritten by benchmarks/hostile_bundles.py's helper."""
    def make(data: bytes) -> bytes:
        from benchmarks import hostile_bundles as hb

        def edit(p: dict[str, Any]) -> None:
            model = p[Payload.ENCODER][EncoderKey.MODEL]
            p[Payload.ENCODER][EncoderKey.MODEL] = (
                hb.tflite_vector_length(model) if change_name == "vector-length"
                else hb.tflite_rewrite(model, {"custom": hb._tflite_custom, "while": hb._tflite_op_code(119),
                                               "two-subgraphs": hb._tflite_two_subgraphs,
                                               "buffer-offset": hb._tflite_buffer_offset,
                                               "bad-name": hb._tflite_bad_name}[change_name]))
        return _payload_edit(edit)(data)
    return make


def _votes_release(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(p: dict[str, Any]) -> None:
        for r in p[Payload.PRIVACY][Privacy.RELEASES]:
            if r[Release.STATISTIC] == Statistic.VOTES:
                r[key] = value
    return edit


def _claim_epsilon(eps: float) -> Callable[[dict[str, Any]], None]:
    """Epsilon and the shares rescaled to ``eps``, the noise scales left as they were."""
    def edit(p: dict[str, Any]) -> None:
        factor = eps / float(p[Payload.PRIVACY][Privacy.EPSILON])
        p[Payload.PRIVACY][Privacy.EPSILON] = eps
        for r in p[Payload.PRIVACY][Privacy.RELEASES]:
            r[Release.EPSILON] = float(r[Release.EPSILON]) * factor
    return edit


def _underspend(p: dict[str, Any]) -> None:
    """The votes share halved and its scale made to match: the shares no longer add up."""
    for r in p[Payload.PRIVACY][Privacy.RELEASES]:
        if r[Release.STATISTIC] == Statistic.VOTES:
            r[Release.EPSILON] = float(r[Release.EPSILON]) / 2
    _consistent_scales(p)


#: Issue 13's refusals (name -> (how to make it from the bundle with vote tables, phrase)): the declared
#: tokenizer and ONNX model families, the check text's and names' bounds, what may reach a
#: terminal, the 16 MiB string bound, and privacy facts that contradict each other.
MALFORMED_HOSTILE: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "tokenizer-normalizer-sequence": (_payload_edit(_tokenizer(_doc_set("normalizer", value={
        "type": "Sequence", "normalizers": []}))), "field 'encoder.tokenizer_json' is outside the tokenizer family: "
                                                   "normalizer.type is \"Sequence\", expected \"BertNormalizer\""),
    "tokenizer-pre-tokenizer-split": (_payload_edit(_tokenizer(_doc_set("pre_tokenizer", value={
        "type": "Split", "pattern": {"Regex": "^(a+)+$"}, "behavior": "Isolated", "invert": False}))),
        "pre_tokenizer.type is \"Split\", expected \"BertPreTokenizer\""),
    "tokenizer-missing-unk": (_payload_edit(_tokenizer(_doc_set("model", "unk_token", value="[NOPE]"))),
                              "model.unk_token \"[NOPE]\" is not in model.vocab"),
    "tokenizer-bpe": (_payload_edit(_tokenizer(_doc_set("model", "type", value="BPE"))),
                      "model.type is \"BPE\", expected \"WordPiece\""),
    "tokenizer-max-input-chars": (_payload_edit(_tokenizer(_doc_set("model", "max_input_chars_per_word",
                                                                    value=10**9))),
                                  "model.max_input_chars_per_word must be an integer in 1..100, got 1000000000"),
    "tokenizer-vocab-id-out-of-range": (_payload_edit(_tokenizer(_doc_set("model", "vocab", "wake", value=10**9))),
                                        "model.vocab id of \"wake\" must be an integer in 0..30521, got 1000000000"),
    "tokenizer-single-template": (_payload_edit(_tokenizer(
        lambda d: d["post_processor"]["single"].append(d["post_processor"]["single"].pop(0)))),
                                  "post_processor.single must be [SpecialToken, Sequence A, SpecialToken] with "
                                  "type_id 0"),
    "tokenizer-unknown-key": (_payload_edit(_tokenizer(_doc_set("x", value=1))), "'x' is not part of the family"),
    "tokenizer-not-json": (_payload_edit(_tokenizer(lambda d: "{\"model\": ")),
                           "field 'encoder.tokenizer_json' is not valid JSON"),
    "tokenizer-duplicate-key": (_payload_edit(_tokenizer(lambda d: json.dumps(d)[:-1] + ', "model": 1}')),
                                "key \"model\" appears twice in one object"),
    "tokenizer-too-long": (_payload_edit(_set(path(Payload.ENCODER, EncoderKey.TOKENIZER_JSON), "x" * 4_000_001)),
                           "field 'encoder.tokenizer_json' has 4000001 characters, more than 4000000"),
    "check-text-too-long": (_payload_edit(_set(path(Payload.ENCODER, EncoderKey.CHECK, EncoderKey.CHECK_TEXT),
                                               "x" * 1001)),
                            "field 'encoder.check.text' has 1001 characters, more than 1000"),
    "string-over-16-mib": (_payload_edit(_set(path("future_field"), "y" * (17 * 2**20))),
                           "holds a string of 17825792 bytes, longer than any field allows (16777216)"),
    "output-name-escape": (_payload_edit(_set(path(Payload.ENCODER, EncoderKey.OUTPUT), "sentence\x1b[2J")),
                           "field 'encoder.output' must be a printable name of 1 to 128 characters"),
    "label-escape": (_payload_edit(_set(path(Payload.LABELS), lambda v: ["alarm\x1b]0;pwned\x07", *v[1:]])),
                     "field 'labels[0]' holds control character U+001B"),
    "label-bidi-override": (_payload_edit(_set(path(Payload.LABELS), lambda v: [v[0], "music\u202eevil", *v[2:]])),
                            "field 'labels[1]' holds control character U+202E"),
    "label-too-long": (_payload_edit(_set(path(Payload.LABELS), lambda v: [*v[:2], "l" * 201, *v[3:]])),
                       "field 'labels[2]' has 201 characters, more than 200"),
    "description-carriage-return": (_payload_edit(_set(path(Payload.LABEL_DESCRIPTIONS),
                                                       lambda v: [v[0], "fine\r  music  spoofed", *v[2:]])),
                                    "field 'label_descriptions[1]' holds control character U+000D"),
    "onnx-loop": (_payload_edit(_model(_onnx_model(_onnx_node("Loop")))),
                  "field 'encoder.model' is outside the ONNX encoder family: operator 'Loop' is not one the encoder "
                  "family uses"),
    "onnx-subgraph-attribute": (_payload_edit(_model(_onnx_model(_onnx_node("Add", _proto(6, b""))))),
                                "operator 'Add' has a subgraph attribute"),
    "onnx-external-data": (_payload_edit(_model(_onnx_model(_proto(5, _proto(8, b"w") + b"\x70\x01"),
                                                            _onnx_node("Add")))),
                           "an initializer keeps its data in an external file"),
    "onnx-custom-domain": (_payload_edit(_model(_onnx_model(_onnx_node("Add"),
                                                            model_fields=_proto(8, _proto(1, b"com.example"))))),
                           "operator set domain 'com.example' is not one the encoder family uses"),
    "onnx-functions": (_payload_edit(_model(_onnx_model(_onnx_node("Add"), model_fields=_proto(25, b"")))),
                       "the model defines its own functions"),
    "onnx-not-protobuf": (_payload_edit(_model(b"\x0f\xff")), "field 'encoder.model' is not a valid ONNX model"),
    "epsilon-claims-1": (_payload_edit(_claim_epsilon(1.0)),
                         "field 'privacy.releases[0].noise_scale' is 2.5, but sensitivity 1 at epsilon 0.05 needs "
                         "noise scale 20.0: the privacy facts contradict each other"),
    "noise-scale-zero": (_payload_edit(_all(_votes_release(Release.NOISE_SCALE, 0),
                                            _set(path(Payload.PRIVACY, Privacy.NOISE_SCALE), 0))),
                         "field 'privacy.releases[2].noise_scale' must be a positive finite number, got 0"),
    "noise-scale-negative": (_payload_edit(_all(_votes_release(Release.NOISE_SCALE, -5),
                                                _set(path(Payload.PRIVACY, Privacy.NOISE_SCALE), -5))),
                             "field 'privacy.releases[2].noise_scale' must be a positive finite number, got -5"),
    "releases-underspent": (_payload_edit(_underspend), "the releases spend epsilon"),
    "top-level-scale-not-votes": (_payload_edit(_set(path(Payload.PRIVACY, Privacy.NOISE_SCALE), 21)),
                                  "must be the votes release's"),
    "release-sensitivity-zero": (_payload_edit(_release(0, Release.SENSITIVITY_L1, 0)),
                                 "field 'privacy.releases[0].sensitivity_l1' must be at least 1, got 0"),
}

#: Made from a format-1.2 (--hashing random) bundle: its top-level scale must be sensitivity / epsilon.
MALFORMED_PLAIN: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "plain-noise-scale-mismatch": (_payload_edit(_set(path(Payload.PRIVACY, Privacy.NOISE_SCALE), 0.5)),
                                   "field 'privacy.noise_scale' is 0.5, but sensitivity 32 at epsilon 8.0 needs noise "
                                   "scale 4.0"),
}

#: Made from a TFLite bundle: the TFLite encoder family.
MALFORMED_TFLITE: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "tflite-custom-op": (_tflite("custom"), "is outside the TFLite encoder family: it uses a custom operator"),
    "tflite-while": (_tflite("while"), "builtin operator code 119 is not one the encoder family uses"),
    "tflite-two-subgraphs": (_tflite("two-subgraphs"), "it has 2 subgraphs; the encoder family has one"),
    "tflite-buffer-offset": (_tflite("buffer-offset"), "a buffer is stored outside the flatbuffer"),
    "tflite-non-utf8-name": (_tflite("bad-name"), "a tensor name b'\\xff\\xfename' is not UTF-8"),
    "tflite-vector-length": (_tflite("vector-length"), "declares 2147483648 elements, more than its bytes hold"),
    "tflite-garbage": (_payload_edit(_model(b"\x10\x00\x00\x00TFL3" + bytes(range(64)))),
                       "field 'encoder.model' is not a valid TFLite model"),
}


def _consistent_scales(p: dict[str, Any]) -> None:
    """Each release's noise scale set to its sensitivity over its share, the top level's facts to
    the headline release's (the votes release, or the last one without vote tables): the privacy
    facts of a bundle must agree (docs/bundle-format.md section 3)."""
    privacy = p[Payload.PRIVACY]
    releases = privacy.get(Privacy.RELEASES) or []
    for r in releases:
        r[Release.NOISE_SCALE] = r[Release.SENSITIVITY_L1] / r[Release.EPSILON]
    if releases:
        head = next((r for r in releases if r[Release.STATISTIC] == Statistic.VOTES), releases[-1])
        privacy[Privacy.SENSITIVITY_L1] = head[Release.SENSITIVITY_L1]
        privacy[Privacy.NOISE_SCALE] = head[Release.NOISE_SCALE]


def _epsilon_from_releases(p: dict[str, Any]) -> None:
    """The bundle's epsilon set to what its releases spend (after one was dropped)."""
    p[Payload.PRIVACY][Privacy.EPSILON] = sum(float(r[Release.EPSILON]) for r in p[Payload.PRIVACY][Privacy.RELEASES])


def _small_epsilon(p: dict[str, Any]) -> None:
    """Epsilon 0.5 (prior weight x2), every release's share scaled to match, and its noise
    scale with it (as a release at epsilon 0.5 would have)."""
    old = float(p[Payload.PRIVACY][Privacy.EPSILON])
    p[Payload.PRIVACY][Privacy.EPSILON] = 0.5
    for r in p[Payload.PRIVACY][Privacy.RELEASES]:
        r[Release.EPSILON] = float(r[Release.EPSILON]) * 0.5 / old
    _consistent_scales(p)


def _counts_below_floor(p: dict[str, Any]) -> None:
    def change(a: np.ndarray) -> None:
        a[0], a[1], a[2] = -3.0, 0.25, 0.0
    _floats(path(Payload.CLASS_STATS, ClassStatsKey.COUNTS), change)(p)


def _counts_zero(p: dict[str, Any]) -> None:
    """Every released class count 0: the noisy record count is read as 1 in the prior's boost."""
    _floats(path(Payload.CLASS_STATS, ClassStatsKey.COUNTS), lambda a: a.__setitem__(slice(None), 0.0))(p)


def _records_per_class_deciding(p: dict[str, Any]) -> None:
    """The "max" boost with prior_records_per_class an integer R whose count term, R * classes /
    (epsilon * N), is about 4 times max(1, 1/epsilon) (at most 1e6): the count term decides."""
    eps = float(p[Payload.PRIVACY][Privacy.EPSILON])
    counts = np.frombuffer(p[Payload.CLASS_STATS][ClassStatsKey.COUNTS][Array.DATA], "<f4").astype(np.float64)
    r = 4 * max(1.0, 1.0 / eps) * eps * max(float(np.sum(counts)), 1.0) / len(counts)
    _scoring({Scoring.PRIOR_RECORDS_PER_CLASS: int(min(max(round(r), 1), 1_000_000)),
              Scoring.PRIOR_BOOST_RULE: "max"})(p)


def _per_person_releases(p: dict[str, Any]) -> None:
    """A person unit of up to 3 records (format 1.2's field): every release's sensitivity (and
    so its scale) 3 times larger, and the linear prior boost 3 times larger."""
    privacy = p[Payload.PRIVACY]
    privacy.update({Privacy.MAX_RECORDS_PER_UNIT: 3, Privacy.PRIVACY_UNIT: "one person, up to 3 records"})
    for r in privacy[Privacy.RELEASES]:
        r[Release.SENSITIVITY_L1] = 3 * r[Release.SENSITIVITY_L1]
        r[Release.MAX_RECORDS_PER_UNIT] = 3
    _consistent_scales(p)


def _zero_class_sum(p: dict[str, Any]) -> None:
    """The first class's noisy sum all zeros: its cosine with every query is 0."""
    sums = p[Payload.CLASS_STATS][ClassStatsKey.SUMS]
    k = sums[Array.SHAPE][1]
    _floats(path(Payload.CLASS_STATS, ClassStatsKey.SUMS), lambda a: a.__setitem__(slice(0, k), 0.0))(p)


def _gaussian_at_the_records_clip(p: dict[str, Any]) -> None:
    """The Gaussian rule (format 2.1) at the clip the records were summed with (the class sums
    release's clip_l1) and 2.1's temperature 0.003."""
    clip = next(float(r[Release.CLIP_L1]) for r in p[Payload.PRIVACY][Privacy.RELEASES]
                if r[Release.STATISTIC] == Statistic.CLASS_SUMS)
    _scoring({Scoring.CENTROID_RULE: "gaussian", Scoring.CENTROID_CLIP_L1: clip, Scoring.CENTROID_TEMPERATURE: 0.003})(p)


def _only(*keep: str) -> Callable[[dict[str, Any]], None]:
    """Drops the optional payload fields not in ``keep`` (releases go with class_stats)."""
    def edit(p: dict[str, Any]) -> None:
        for key in (Payload.CLASS_STATS, Payload.PRIOR, Payload.SCORING):
            if key not in keep:
                p.pop(key, None)
        if Lsh.OFFSETS not in keep:
            p[Payload.LSH].pop(Lsh.OFFSETS, None)
        if Privacy.RELEASES not in keep:
            # Without releases the top-level facts are the whole statement: the votes' epsilon.
            releases = p[Payload.PRIVACY].pop(Privacy.RELEASES, None) or []
            votes = [r for r in releases if r[Release.STATISTIC] == Statistic.VOTES]
            if votes:
                p[Payload.PRIVACY][Privacy.EPSILON] = float(votes[0][Release.EPSILON])
    return edit


def _nested_person_bound(p: dict[str, Any]) -> None:
    """The first release's person bound nested 1,000 lists deep: refused, with the value echoed
    short (Python's repr() of it raised RecursionError before reliability finding 9)."""
    v: list = []
    for _ in range(1000):
        v = [v]
    p[Payload.PRIVACY][Privacy.RELEASES][0][Release.MAX_RECORDS_PER_UNIT] = v


def _class_sums_without_grid(p: dict[str, Any]) -> None:
    """The class_sums release without its grid: the pull reads the noise scale in stored units
    (grid 1), and the reader no longer compares the sensitivity with the clip."""
    for r in p[Payload.PRIVACY][Privacy.RELEASES]:
        if r[Release.STATISTIC] == Statistic.CLASS_SUMS:
            del r[Release.GRID]


def _relabel(version: list[int], edit: Callable[[dict[str, Any]], None]) -> Callable[[bytes], bytes]:
    """The payload edited, then the bundle relabelled with another version."""
    return lambda d: _outer_edit(_set(path(Outer.VERSION), version))(_payload_edit(edit)(d))


#: name -> how to make it from the default format-3 bundle (no vote tables): valid bundles whose
#: scores (not only whose acceptance) the Java scorer must reproduce, each exercising one part of
#: the scorer. The as-built bundle scores centroids by "cosine_public" at 0.04 and boosts the
#: prior linearly, R C K / (epsilon N) with R = 100 (about 0.15 for the assistant data at epsilon
#: 8); these check that boost at epsilon 0.5 (about 2.5), with 3 records per person (3 times
#: larger), without R (0: no prior), and at its cap of 1e6 (counts 0, read as 1); the "max"
#: boost of format 2 in such a bundle, where R = 100 is too small to matter (the boost is 1) or
#: an R chosen to decide it; the other centroid rules on format 3's sums; and format 4.0's
#: pull toward the descriptions (0.5 as built; absent in a bundle relabelled 3.0; small enough
#: that the sums are not rescaled, an integer, at its cap of 1e6, and with the class sums'
#: grid absent, read as 1).
SCORED: dict[str, Callable[[bytes], bytes]] = {
    "as-built": lambda d: d,
    "custom-weights": _payload_edit(_scoring({Scoring.VOTES: 0.5, Scoring.CENTROIDS: 2.0, Scoring.PRIOR: 0.25, Scoring.CENTROID_TEMPERATURE: 0.1, Scoring.PRIOR_TEMPERATURE: 0.02, 'future_weight': 3.0, 'note': "ignored"})),
    "integer-weights": _payload_edit(_scoring({Scoring.CENTROIDS: 1, Scoring.PRIOR: 3, Scoring.CENTROID_TEMPERATURE: 1, Scoring.PRIOR_TEMPERATURE: 1, Scoring.PRIOR_RECORDS_PER_CLASS: 100})),
    "small-epsilon": _payload_edit(_small_epsilon),
    "per-person": _payload_edit(_per_person_releases),
    "no-scoring-map": _payload_edit(lambda p: p.pop(Payload.SCORING)),
    "no-prior": _payload_edit(lambda p: p.pop(Payload.PRIOR)),
    "counts-below-floor": _payload_edit(_counts_below_floor),
    "zero-class-sum": _payload_edit(_zero_class_sum),
    "newer-minor": _relabel([3, 9], _all(_set("future_field", {"x": [1, 2]}), _scoring({"future_rule": "x"}))),
    "linear-without-records-per-class": _payload_edit(_scoring_without(Scoring.PRIOR_RECORDS_PER_CLASS)),
    "prior-boost-capped": _payload_edit(_all(_small_epsilon, _counts_zero,
                                             _scoring({Scoring.PRIOR_RECORDS_PER_CLASS: 1000000.0}))),
    "max-boost": _payload_edit(_scoring_without(Scoring.PRIOR_BOOST_RULE)),
    "records-per-class-decides": _payload_edit(_records_per_class_deciding),
    "cosine-named": _payload_edit(_scoring({Scoring.CENTROID_RULE: "cosine", Scoring.CENTROID_TEMPERATURE: 0.05})),
    "gaussian": _payload_edit(_gaussian_at_the_records_clip),
    "gaussian-clip-1": _payload_edit(_scoring({Scoring.CENTROID_RULE: "gaussian", Scoring.CENTROID_CLIP_L1: 1, Scoring.CENTROID_TEMPERATURE: 0.003})),
    "format-3.0-no-pull": _relabel([3, 0], _scoring_without(Scoring.DESCRIPTION_PULL)),
    "pull-below-one": _payload_edit(_scoring({Scoring.DESCRIPTION_PULL: 0.01})),
    "pull-integer": _payload_edit(_scoring({Scoring.DESCRIPTION_PULL: 3})),
    "pull-capped": _payload_edit(_scoring({Scoring.DESCRIPTION_PULL: 1000000.0})),
    "pull-grid-absent": _payload_edit(_class_sums_without_grid),
}

#: name -> how to make it from a format-3 bundle with vote tables (--votes-share): the votes'
#: share in the blend (other weights, no scoring map, no prior, no class statistics with the
#: "max" boost, offsets alone, stripped to 1.2 and so to Algorithm 2), and the bundle rewritten
#: as formats 2.1 and 2.0 wrote theirs (one class_stats release; the Gaussian rule with R 1000,
#: the cosine rule with no R), which a format-3 reader scores as they did; the 2.x "max" boost
#: with R too small to matter, and without R as format 2.0 scored: max(1, 1/epsilon), at
#: epsilon 8 and at 0.5.
SCORED_TABLES: dict[str, Callable[[bytes], bytes]] = {
    "tables-as-built": lambda d: d,
    "tables-custom-weights": _payload_edit(_scoring({Scoring.VOTES: 0.5, Scoring.CENTROIDS: 2.0, Scoring.PRIOR: 0.25, Scoring.CENTROID_TEMPERATURE: 0.1, Scoring.PRIOR_TEMPERATURE: 0.02})),
    "tables-integer-weights": _payload_edit(_scoring({Scoring.VOTES: 2, Scoring.CENTROIDS: 1, Scoring.PRIOR: 0, Scoring.CENTROID_TEMPERATURE: 1, Scoring.PRIOR_TEMPERATURE: 1})),
    "tables-small-epsilon": _payload_edit(_small_epsilon),
    "tables-no-scoring-map": _payload_edit(lambda p: p.pop(Payload.SCORING)),
    "tables-no-prior": _payload_edit(lambda p: p.pop(Payload.PRIOR)),
    "tables-no-class-stats": _payload_edit(_without_class_stats),
    "tables-prior-only-besides-votes": _payload_edit(_only(Lsh.OFFSETS, Payload.PRIOR, Privacy.RELEASES)),
    "tables-offsets-only": _payload_edit(_only(Lsh.OFFSETS)),
    "tables-stripped-to-1.2": _relabel([1, 2], _only()),
    "format-2.1": _relabel([2, 1], _as_2_1),
    "format-2.0": _relabel([2, 0], _as_2_0),
    "tables-records-per-class-below-one": _payload_edit(_scoring({Scoring.PRIOR_RECORDS_PER_CLASS: 0.5,
                                                                  Scoring.PRIOR_BOOST_RULE: "max"})),
    "tables-no-records-per-class": _payload_edit(_scoring_without(Scoring.PRIOR_RECORDS_PER_CLASS,
                                                                  Scoring.PRIOR_BOOST_RULE)),
    "tables-no-records-per-class-small-epsilon": _payload_edit(_all(_small_epsilon, _scoring_without(
        Scoring.PRIOR_RECORDS_PER_CLASS, Scoring.PRIOR_BOOST_RULE))),
}

#: The scored case whose prior boost must come from the "max" rule's count term (above
#: max(1, 1/epsilon), below the cap), and the one whose boost must be the cap: golden.py refuses
#: to write data that does not exercise both.
COUNT_TERM_DECIDES = "records-per-class-decides"
BOOST_CAPPED = "prior-boost-capped"


def scored_embeddings(golden_cases: list[dict[str, Any]], dim: int) -> list[np.ndarray]:
    """The golden embeddings of a bundle's sample texts, plus a few unusual vectors."""
    embs = [np.frombuffer(c["embedding"], "<f4") for c in golden_cases[:len(SAMPLE)]]
    rng = np.random.default_rng(7)
    embs += [np.zeros(dim, "<f4"),                                        # every cosine 0: uniform softmaxes
             rng.standard_normal(dim).astype("<f4"),                      # not unit length
             (3.0 * embs[0]).astype("<f4"),                               # a scaled embedding
             (embs[1] + embs[2]).astype("<f4")]
    return embs


def write_scored(bases: list[tuple[Path, list[dict[str, Any]], dict[str, Callable[[bytes], bytes]]]],
                 out: Path) -> list[dict[str, Any]]:
    """Each derived bundle with the Python scorer's answer for each embedding; ``bases`` gives,
    for each base bundle, its golden cases and the derivations to make from it."""
    folder = out / "scored"
    folder.mkdir(parents=True, exist_ok=True)
    listed = []
    for base, golden_cases, derived in bases:
        for name, make in derived.items():
            path = folder / f"{name}.dpedge"
            path.write_bytes(make(base.read_bytes()))
            b = fmt.load(path)  # raises if the Python reader refuses it
            scorer = Scorer.from_bundle(b)
            scored_cases = []
            for emb in scored_embeddings(golden_cases, b.encoder.dim):
                x = emb[None, :]
                scores = scorer.scores(x)[0]
                buckets = [] if scorer.hasher is None else [int(v) for v in scorer.hasher.buckets(x)[0]]
                scored_cases.append({"embedding": emb.astype("<f4").tobytes(), "buckets": buckets,
                                     "scores": [float(v) for v in scores], "label": b.labels[int(np.argmax(scores))]})
            listed.append({"file": f"scored/{name}.dpedge", "plain_votes": bool(scorer.plain_votes),
                           "prior_boost": float(scorer.prior_boost), "cases": scored_cases})
            eps_boost = max(1.0, 1.0 / float(b.privacy[Privacy.EPSILON]))
            if name == COUNT_TERM_DECIDES and not eps_boost < scorer.prior_boost < SCORING_MAX:
                raise SystemExit(f"{name}: the prior boost {scorer.prior_boost} does not come from the count term")
            if name == BOOST_CAPPED and scorer.prior_boost != SCORING_MAX:
                raise SystemExit(f"{name}: the prior boost {scorer.prior_boost} is not the cap {SCORING_MAX}")
    return listed


def _per_person(payload: dict[str, Any]) -> None:
    p = payload[Payload.PRIVACY]
    p.update({Privacy.MAX_RECORDS_PER_UNIT: 3, Privacy.SENSITIVITY_L1: 3 * p[Privacy.SENSITIVITY_L1],
              Privacy.NOISE_SCALE: 3 * p[Privacy.NOISE_SCALE], Privacy.PRIVACY_UNIT: "one person, up to 3 records"})


def _format_1_0(payload: dict[str, Any]) -> None:
    del payload[Payload.ENCODER][EncoderKey.CHECK]
    payload[Payload.PRIVACY].pop(Privacy.MAX_RECORDS_PER_UNIT, None)


#: name -> (how to make it from the format-1.2 bundle, when there is one): other shapes the format
#: allows, which must load.
VARIANTS: dict[str, Callable[[bytes], bytes]] = {
    "per-person": _payload_edit(_per_person),
    "format-1.0": lambda d: _outer_edit(_set(path(Outer.VERSION), [1, 0]))(_payload_edit(_format_1_0)(d)),
}


def _integer_votes_scale(p: dict[str, Any]) -> None:
    """The votes release's noise scale and the top level's written as the nearest integer (32 /
    0.7999999999999998 is 40.00000000000001 in floats: the integer 40 agrees within PRIVACY_RTOL)."""
    for r in p[Payload.PRIVACY][Privacy.RELEASES]:
        if r[Release.STATISTIC] == Statistic.VOTES:
            r[Release.NOISE_SCALE] = int(round(r[Release.NOISE_SCALE]))
            p[Payload.PRIVACY][Privacy.NOISE_SCALE] = r[Release.NOISE_SCALE]


#: name -> (how to make it from the format-3 bundle with vote tables): other shapes the format
#: allows, which must load; among them the bundle relabelled 2.x (a 2.x bundle that carries 3.0's
#: fields is read like a 3.0 one) and rewritten as format 2.0 wrote it.
VARIANTS_TABLES: dict[str, Callable[[bytes], bytes]] = {
    "format-2-newer-minor": _relabel([2, 9], _set(path('future_field'), {"x": [1, 2]})),
    "tables-scoring-strings-only": _payload_edit(_set(path(Payload.SCORING), {"rule": "defaults"})),
    "tables-scoring-nil": _payload_edit(_set(path(Payload.SCORING), None)),
    "tables-releases-integer-epsilon": _payload_edit(_all(
        _set(path(Payload.PRIVACY, Privacy.EPSILON), 8), _release(0, Release.EPSILON, 1), _release(1, Release.EPSILON, 6),
        _release(2, Release.EPSILON, 1), _consistent_scales)),
    "tables-prior-without-source": _payload_edit(_delete(path(Payload.PRIOR, PriorKey.SOURCE))),
    # the cosine rule needs no clip. The bounds themselves load (numbers at most 1e6, an
    # integer clip and R at it, temperatures at least 1e-6), and a name the runtime does not
    # read is not bounded (a uint64 above int64). (A uint64 clip is refused:
    # MALFORMED_TABLES' "scoring-clip-uint64".)
    "tables-cosine-without-clip": _payload_edit(_scoring({Scoring.CENTROID_RULE: "cosine", Scoring.CENTROID_CLIP_L1: 0})),
    "tables-scoring-at-the-bounds": _payload_edit(_scoring({
        Scoring.VOTES: 1e6, Scoring.PRIOR: 1000000, Scoring.CENTROID_RULE: "gaussian", Scoring.CENTROID_CLIP_L1: 1000000,
        Scoring.PRIOR_RECORDS_PER_CLASS: 1000000, Scoring.CENTROID_TEMPERATURE: 1e-6, Scoring.PRIOR_TEMPERATURE: 1e6,
        "future_weight": 2**64 - 1})),
    "tables-scoring-integer-temperatures": _payload_edit(_scoring({Scoring.CENTROID_TEMPERATURE: 1, Scoring.PRIOR_TEMPERATURE: 1})),
    "tables-release-integer-noise-scale": _payload_edit(_integer_votes_scale),
    "format-2.0-cosine": _relabel([2, 0], _as_2_0),
}


#: name -> (how to make it from the default format-3 bundle, without vote tables): other shapes
#: format 3 allows, which must load.
VARIANTS_3: dict[str, Callable[[bytes], bytes]] = {
    "format-3-newer-minor": _relabel([3, 9], _set(path('future_field'), {"x": [1, 2]})),
    "format-3-scoring-nil": _payload_edit(_set(path(Payload.SCORING), None)),
    "format-3-scoring-strings-only": _payload_edit(_set(path(Payload.SCORING), {"rule": "defaults"})),
    "format-3-class-stats-alone": _payload_edit(_all(lambda p: p.pop(Payload.PRIOR),
                                                     lambda p: p.pop(Payload.LABEL_DESCRIPTIONS))),
    "format-3-releases-integer-epsilon": _payload_edit(_all(
        _set(path(Payload.PRIVACY, Privacy.EPSILON), 8), _release(0, Release.EPSILON, 1), _release(1, Release.EPSILON, 7),
        _consistent_scales)),
    # format 2's one class_stats release stands for the counts and the sums
    "format-3-one-class-stats-release": _payload_edit(_one_class_stats_release),
    "format-3-without-records-per-unit": _payload_edit(lambda p: p[Payload.PRIVACY].pop(Privacy.MAX_RECORDS_PER_UNIT)),
    "format-3-extra-release-facts": _payload_edit(_release(1, "future_fact", [1, {"x": None}])),
}


def write_variants(plain: Path | None, tables: Path, default: Path, out: Path) -> list[dict[str, str]]:
    """Each valid variant, after checking that the Python reader loads it."""
    folder = out / "variants"
    folder.mkdir(parents=True, exist_ok=True)
    listed = []
    for base, variants in ((plain, VARIANTS), (tables, VARIANTS_TABLES), (default, VARIANTS_3)):
        if base is None:
            continue
        for name, make in variants.items():
            path = folder / f"{name}.dpedge"
            path.write_bytes(make(base.read_bytes()))
            fmt.load(path)  # raises if the Python reader refuses it
            listed.append({"file": f"variants/{name}.dpedge"})
    return listed


def _tables_of_one_bit(p: dict[str, Any]) -> None:
    """An ``lsh`` map that passes its own checks (one table of one bit), and no votes."""
    dim = p[Payload.ENCODER][EncoderKey.DIM]
    p[Payload.LSH] = {Lsh.FAMILY: "simhash", Lsh.TABLES: 1, Lsh.BITS: 1, Lsh.DIM: dim,
                      Lsh.HYPERPLANES: {Array.DTYPE: "<f4", Array.SHAPE: [1, 1, dim],
                                        Array.DATA: np.ones(dim, "<f4").tobytes()}}


def _scale_claims_whole_epsilon(p: dict[str, Any]) -> None:
    """The top level states the class sums' sensitivity at the whole epsilon's scale."""
    privacy = p[Payload.PRIVACY]
    privacy[Privacy.NOISE_SCALE] = privacy[Privacy.SENSITIVITY_L1] / float(privacy[Privacy.EPSILON])


#: Format 3.0's refusals of a bundle without vote tables (name -> (how to make it from the
#: default bundle, phrase)): nothing to classify with, the tables required before major 3 and
#: half present, the embedding size from encoder.dim, releases that miss a statistic, do not
#: add up or contradict their scale, a top level that is not the last release's (the class
#: sums'), the prior's shape and the new rules' names.
MALFORMED_3: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "format-3-nothing-to-classify": (_payload_edit(lambda p: p.pop(Payload.CLASS_STATS)),
                                     "a bundle without vote tables ('votes') must hold 'class_stats': it has nothing "
                                     "to classify with"),
    "format-3-relabelled-2.1": (_outer_edit(_set(path(Outer.VERSION), [2, 1])), "missing field 'lsh'"),
    "format-3-relabelled-1.2": (_outer_edit(_set(path(Outer.VERSION), [1, 2])), "missing field 'lsh'"),
    "format-3-newer-major": (_outer_edit(_set(path(Outer.VERSION), [5, 0])),
                             "bundle format version 5.0 is newer than this runtime supports (1.x and 2.x and 3.x "
                             "and 4.x)"),
    "format-3-votes-without-lsh": (_payload_edit(_set(path(Payload.VOTES), {Array.DTYPE: "<i2", Array.SHAPE: [1, 2, 7],
                                                                            Array.DATA: bytes(28)})),
                                   "missing field 'lsh'"),
    "format-3-lsh-without-votes": (_payload_edit(_tables_of_one_bit), "missing field 'votes'"),
    "format-3-missing-encoder-dim": (_payload_edit(_delete(path(Payload.ENCODER, EncoderKey.DIM))),
                                     "missing field 'encoder.dim'"),
    "format-3-encoder-dim-string": (_payload_edit(_set(path(Payload.ENCODER, EncoderKey.DIM), "384")),
                                    "field 'encoder.dim' is string, expected integer"),
    "format-3-encoder-dim-zero": (_payload_edit(_set(path(Payload.ENCODER, EncoderKey.DIM), 0)),
                                  "field 'class_stats.projection' must have 1 to 0 rows (the embedding size), got "),
    "format-3-encoder-dim-before-class-stats": (_payload_edit(_all(lambda p: p.pop(Payload.CLASS_STATS),
                                                                   _set(path(Payload.ENCODER, EncoderKey.DIM), None))),
                                                "field 'encoder.dim' is nil, expected integer"),
    "format-3-projection-swapped": (_payload_edit(_swap_shape(path(Payload.CLASS_STATS, ClassStatsKey.PROJECTION))),
                                    "field 'class_stats.projection' must be finite with shape (384, 384), got (384, "),
    "format-3-releases-missing": (_payload_edit(_delete(path(Payload.PRIVACY, Privacy.RELEASES))),
                                  "missing field 'privacy.releases'"),
    "format-3-releases-without-class-sums": (_payload_edit(_drop_release(Statistic.CLASS_SUMS)),
                                             "field 'privacy.releases' must list every released statistic, got "
                                             "['class_counts']"),
    "format-3-releases-without-class-counts": (_payload_edit(_drop_release(Statistic.CLASS_COUNTS)),
                                               "must list every released statistic, got ['class_sums']"),
    "format-3-releases-empty": (_payload_edit(_set(path(Payload.PRIVACY, Privacy.RELEASES), [])),
                                "must list every released statistic, got []"),
    "format-3-releases-overspent": (_payload_edit(_overspend), "the releases spend epsilon"),
    "format-3-class-sums-scale": (_payload_edit(_release(1, Release.NOISE_SCALE, lambda s: s / 2)),
                                  "the privacy facts contradict each other"),
    "format-3-top-level-not-class-sums": (_payload_edit(_set(path(Payload.PRIVACY, Privacy.NOISE_SCALE), 21)),
                                          "must be the class_sums release's"),
    "format-3-top-level-whole-epsilon": (_payload_edit(_scale_claims_whole_epsilon), "must be the class_sums release's"),
    "format-3-top-level-class-counts": (_payload_edit(_all(_set(path(Payload.PRIVACY, Privacy.SENSITIVITY_L1), 1),
                                                           _set(path(Payload.PRIVACY, Privacy.NOISE_SCALE), 2.5))),
                                        "fields 'privacy.sensitivity_l1' and 'privacy.noise_scale' (1, 2.5) must be "
                                        "the class_sums release's"),
    "format-3-person-bound-on-record-noise": (
        _payload_edit(_all(_set(path(Payload.PRIVACY, Privacy.MAX_RECORDS_PER_UNIT), 3),
                           _release(0, Release.MAX_RECORDS_PER_UNIT, 3), _release(1, Release.MAX_RECORDS_PER_UNIT, 3))),
        "field 'privacy.releases[0].sensitivity_l1' is 1, but a class_counts release with at most 3 record(s) per "
        "unit has sensitivity 3 x 1: the privacy facts contradict each other"),
    "format-3-release-person-bound-differs": (_payload_edit(_release(1, Release.MAX_RECORDS_PER_UNIT, 2)),
                                              "field 'privacy.releases[1].max_records_per_unit' is 2, but field "
                                              "'privacy.max_records_per_unit' is 1"),
    "format-3-release-person-bound-string": (_payload_edit(_release(0, Release.MAX_RECORDS_PER_UNIT, "1")),
                                             "field 'privacy.releases[0].max_records_per_unit' is '1', but field "
                                             "'privacy.max_records_per_unit' is 1"),
    "format-3-class-sums-clip-contradicts": (_payload_edit(_release(1, Release.CLIP_L1, lambda c: 2 * c)),
                                             "but a class_sums release with at most 1 record(s) per unit has "
                                             "sensitivity 1 x "),
    "format-3-prior-wrong-shape": (_payload_edit(_swap_shape(path(Payload.PRIOR, PriorKey.EMBEDDINGS))),
                                   "field 'prior.embeddings' must be finite with shape (7, 384), got (384, 7)"),
    "format-3-boost-rule-unknown": (_payload_edit(_scoring({Scoring.PRIOR_BOOST_RULE: "Linear"})),
                                    "field 'scoring.prior_boost_rule' must be one of max, linear, got 'Linear'"),
    "format-3-centroid-rule-unknown": (_payload_edit(_scoring({Scoring.CENTROID_RULE: "cosine-public"})),
                                       "field 'scoring.centroid_rule' must be one of cosine, gaussian, cosine_public, "
                                       "got 'cosine-public'"),
    "format-3-person-bound-nested": (_payload_edit(_nested_person_bound),
                                     "field 'privacy.releases[0].max_records_per_unit' is [[[["),
    "format-4-pull-a-string": (_payload_edit(_scoring({Scoring.DESCRIPTION_PULL: "0.5"})),
                               "field 'scoring.description_pull' must be a number, got str"),
    "format-4-pull-too-large": (_payload_edit(_scoring({Scoring.DESCRIPTION_PULL: 2e6})),
                                "field 'scoring.description_pull' must be at most 1e6"),
    "format-4-pull-negative": (_payload_edit(_scoring({Scoring.DESCRIPTION_PULL: -0.5})),
                               "field 'scoring' must map names to finite non-negative numbers"),
}


def write_malformed(tables: Path, default: Path, out: Path, plain: Path | None = None,
                    tflite: Path | None = None) -> list[dict[str, str]]:
    """Each malformed variant, after checking that the Python reader rejects it as promised
    (the format-1.2 and TFLite cases only when such a bundle is among the inputs)."""
    folder = out / "malformed"
    folder.mkdir(parents=True, exist_ok=True)
    listed = []
    for base, cases_ in ((tables, MALFORMED), (tables, MALFORMED_TABLES), (tables, MALFORMED_HOSTILE),
                         (default, MALFORMED_3), (plain, MALFORMED_PLAIN), (tflite, MALFORMED_TFLITE)):
        if base is None:
            continue
        data = base.read_bytes()
        for name, (make, phrase) in cases_.items():
            file = folder / f"{name}.dpedge"
            file.write_bytes(make(data))
            try:
                fmt.load(file)
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
    ap.add_argument("--bundle", type=Path, action="append",
                    help="bundles to use, among them a default format-3 bundle and one with vote tables "
                         "(default: build four)")
    args = ap.parse_args(argv)
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    if args.bundle:
        bundles = [Path(shutil.copy(b, args.out / b.name)) for b in args.bundle]
    else:
        bundles = build_bundles(args.out)
    default = [b for b in bundles if is_default_format_3(b)]
    tables = [b for b in bundles if is_full_with_tables(b)]
    if not default or not tables:
        raise SystemExit("golden.py needs a default format-3 bundle (class statistics, prior and scoring, no vote "
                         "tables) and one with vote tables, offsets, class statistics, prior and scoring (build "
                         "them with the defaults and with --votes-share 0.1)")
    plain = [b for b in bundles if is_format_1(b)]
    texts = _sample()
    entries = [{"file": b.name, "cases": cases(b, texts)} for b in bundles]

    def golden_cases(b: Path) -> list[dict[str, Any]]:
        return entries[bundles.index(b)]["cases"]

    golden = {
        "bundles": entries,
        "scored": write_scored([(default[0], golden_cases(default[0]), SCORED),
                                (tables[0], golden_cases(tables[0]), SCORED_TABLES)], args.out),
        "malformed": write_malformed(tables[0], default[0], args.out, plain[0] if plain else None,
                                     next((b for b in bundles if fmt.load(b).encoder.format == "tflite"), None)),
        "variants": write_variants(plain[0] if plain else None, tables[0], default[0], args.out),
    }
    (args.out / "golden.msgpack").write_bytes(msgpack.packb(golden, use_bin_type=True))
    n = sum(len(b["cases"]) for b in golden["bundles"])
    m = sum(len(b["cases"]) for b in golden["scored"])
    print(f"wrote {args.out}: {len(bundles)} bundles ({len(default)} default format 3, {len(tables)} with vote "
          f"tables and class statistics, {len(plain)} format 1), {n} cases, {len(golden['scored'])} scored bundles "
          f"with {m} cases, {len(golden['malformed'])} malformed bundles, {len(golden['variants'])} valid variants")
    return 0


if __name__ == "__main__":
    sys.exit(main())
