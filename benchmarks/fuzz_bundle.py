"""Fuzz the bundle reader with mutated real bundles.

    python benchmarks/fuzz_bundle.py --bundle B [--inputs 100000] [--seed 0] [--full-every 500]
        [--load-every 50] [--max-seconds 2] [--mem-ratio 4] [--mem-slack-mib 4] [--findings DIR]
        [--only I] [--no-special] [--no-score]

Every input is made from a real bundle (--bundle, default models/quickstart.dpedge) by one
mutator, chosen at random, and handed to `runtime.bundle.unpack` (every --load-every'th input
is written to a file and read with `runtime.bundle.load` instead). The reader must either
return a bundle that passes `check_valid` (every invariant the format promises: dtypes,
shapes, ranges, finiteness...) and that `--info` can describe (runtime.describe, as text and
JSON), and that `runtime.scoring.Scorer.from_bundle` can score in every mode (blend, votes,
centroids, prior: a few unit embeddings, among them the bundle's own check embedding and its
label descriptions' embeddings, must get finite scores of the right shape; a mode the bundle
has no statistics for may be refused with the ValueError that the Classifier reports as
InputError), or raise `BundleError` with a short one-line message. Anything else is a finding:
another exception type, a bundle that breaks an invariant or cannot be described, an accepted
bundle whose scoring raises or returns NaN or infinite scores (--no-score skips this stage),
an input that takes longer than --max-seconds (reading, or scoring), or one whose peak traced
allocation (tracemalloc, which also sees numpy's buffers; measured in a second, untimed run of
the reader) exceeds --mem-ratio x the input size + --mem-slack-mib. A hard watchdog (SIGALRM,
with faulthandler's stack dump) ends the run if one input hangs for 30 s, even inside C code.

The fuzzer fuzzes whatever bundle it is given: a format-1.2 bundle (`--hashing random`), a
format-3.0 one without vote tables (the default: class_stats, prior, scoring, privacy.releases
class_counts and class_sums) or one with them (`--votes-share`: lsh with offsets, votes and a
votes release too); 2.x bundles still load and are fuzzed alike. The `format2` mutator targets
the fields format 2 added (3.0 kept them all), the `format3` mutator what 3.0 added (vote
tables optional but together, D from encoder.dim without them, the two class releases and the
headline release at the top level, the cosine_public rule and the linear prior boost, the major
version deciding whether tables are required); on a 1.x bundle both first graft consistent
class statistics onto the payload, as 3.0 writes them, and label the file 3.0.

Bundles: mostly (all but every --full-every'th input) a *tiny* copy of the real bundle, whose
encoder model is replaced by two bytes and its tokenizer.json by a short string (the reader
never runs either) and whose tables, if it has any, are cut to 4 tables x 4 bits (about 28 KiB
in all; offsets are cut alike and the class-statistics subspace to 8 dimensions, about 30 KiB
without tables and 60 KiB with them), so 100,000 inputs take a few minutes; the rest use the
full-size bundle as it is.

Mutators (see MUTATORS): byte level on the whole file (truncation, bit flips, interesting
bytes, chunk insert/delete/duplicate, trailing bytes); byte level on the payload with the
checksum re-sealed, so that the payload parser, not the checksum, is exercised; msgpack
header lengths rewritten (bin/str/array/map/ext declaring 0, +-1, 2^31, 4 GB... with little
data after them); and structure-aware mutations of the decoded outer map and payload, re-sealed
with a correct SHA-256: wrong types at any field, dropped fields, huge/negative/zero/float
shapes (e.g. [2**40, 2**30, 7], [0, 2**64-1, 7]), data lengths, dtypes, edge numbers, label
lists, deep nesting (up to and past msgpack's limit of 1024), raw msgpack fragments spliced in
(giant declared lengths, reserved bytes, extension types, non-string map keys), dense runs of
tiny containers (one byte of msgpack, 64 bytes of Python object each), stacks of several of
these, and benign changes a reader must accept (unknown fields and metadata of any type,
newer minor version, per-person privacy, consistent re-sizing of tables/bits/labels/dim).
Formats 2 and 3 (`format2`, `format3`, and the generic mutators wherever the fields exist):
scoring numbers set to NaN/inf/negative/denormal/huge values, strings, booleans or containers;
unknown or mistyped centroid_rule and prior_boost_rule, the Gaussian rule without a clip, the
linear boost without class statistics; scoring maps dropped, emptied or replaced;
privacy.releases of the wrong type, missing a statistic, duplicated, reordered, merged (3.0's
two class releases as 2.x's one), over budget, entries with fields dropped or mistyped; the
top-level facts another release's; lsh or votes dropped or added, encoder.dim changed, the
file relabelled 1.x, 2.x, 3.x, 4.x or 5.0; class_stats, prior and offsets arrays dropped, re-shaped
(consistently or not), holding NaN/inf/huge values, non-positive counts; and extremes
(epsilon and its shares scaled down to 1e-320, blend weights of 1e308, temperatures of 1e-310):
inside the reader's bounds (scoring numbers at most 1e6, temperatures at least 1e-6) the
scorer must survive them, outside them the reader refuses the bundle.

Every input is reproducible on its own: input i uses random.Random(f"{seed}:{i}"), so
`--only I` re-runs one input, and --findings DIR saves each finding's bytes. Special files
(missing, a directory, empty, /dev/null, /dev/zero, a FIFO with no writer) are also given to
`load`, each in a child process allowed 1 GiB more address space and a 10 s timeout.

Prints a table of inputs by mutator (outcomes, slowest input, largest memory ratio over inputs
of 1 MiB or more; smaller ones are bounded by the slack) and exits 1 on any finding.
tests/test_fuzz_bundle.py drives the same mutators through Hypothesis (CI's short run).
"""

from __future__ import annotations

import argparse
import copy
import faulthandler
import hashlib
import json
import math
import os
import random
import reprlib
import signal
import struct
import subprocess
import sys
import tempfile
import time
import traceback
import tracemalloc
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import msgpack  # noqa: E402
import numpy as np  # noqa: E402

from runtime import bundle as fmt  # noqa: E402
from runtime.describe import bundle_info, format_info  # noqa: E402
from runtime.errors import BundleError, DpedgeError  # noqa: E402
from runtime.bundle.schema import (CENTROID_RULES, LSH_FAMILY, PRIOR_BOOST_RULES, PRIVACY_RTOL,  # noqa: E402
                                   SCORING_MAX, SCORING_NUMBERS, SCORING_TEMPERATURES, TEMPERATURE_MIN, Array as A,
                                   ClassStatsKey, EncoderKey, Lsh, Outer, Payload as P, PriorKey, Privacy, Release,
                                   Scoring, Statistic)
from runtime.scoring import MODES, Scorer, Weights  # noqa: E402

#: Longest acceptable BundleError message: a person has to read it.
MAX_MESSAGE_CHARS = 1000
#: An input still running after this many seconds ends the run with every thread's stack.
HANG_SECONDS = 30
#: The memory ratio column only counts inputs at least this large.
RATIO_MIN_SIZE = 1 << 20


def _proto(field: int, body: bytes) -> bytes:
    """One length-delimited protobuf field (bodies under 128 bytes)."""
    return bytes([field << 3 | 2, len(body)]) + body


#: The smallest models inside the encoder family (runtime.bundle.model_family): an ONNX graph of
#: one Cast node, and a TFLite flatbuffer of one empty subgraph. The reader checks their
#: structure; no engine runs them.
TINY_ONNX = (b"\x08\x08" + _proto(8, b"\x10\x12")
             + _proto(7, _proto(1, _proto(1, b"input_ids") + _proto(2, b"sentence_embedding") + _proto(4, b"Cast"))))
TINY_TFLITE = struct.pack("<I4sHHHHHHiIIIIHHi", 20, b"TFL3", 10, 12, 4, 0, 8, 0, 12, 3, 4, 1, 8, 4, 4, 4)
TINY_MODELS = {"onnx": TINY_ONNX, "tflite": TINY_TFLITE}
#: The smallest tokenizer.json inside the family (runtime.bundle.tokenizer_family).
TINY_TOKENIZER = json.dumps({
    "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
    "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": None,
                   "lowercase": True},
    "pre_tokenizer": {"type": "BertPreTokenizer"},
    "post_processor": {"type": "TemplateProcessing",
                       "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                  {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
                       "special_tokens": {t: {"id": t, "ids": [i], "tokens": [t]} for t, i in (("[CLS]", 1), ("[SEP]", 2))}},
    "decoder": None,
    "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
              "max_input_chars_per_word": 100, "vocab": {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2}},
})

# ----------------------------------------------------------------------------- msgpack helpers


def pack(obj: Any) -> bytes:
    return msgpack.packb(obj, use_bin_type=True)


def seal(body: bytes, outer: dict[str, Any] | None = None) -> bytes:
    """An outer map around payload bytes, with a correct SHA-256 (so the payload is parsed)."""
    o = {"format": fmt.FORMAT_NAME, "version": list(fmt.FORMAT_VERSION)} if outer is None else dict(outer)
    o["checksum"] = {"algorithm": "sha256", "digest": hashlib.sha256(body).digest()}
    o["payload"] = body
    return pack(o)


@dataclass(frozen=True)
class Header:
    """One msgpack header in a document: where it starts and what length it declares."""

    offset: int
    code: int
    width: int    # bytes of the length field after the type byte (0 for fix types)
    length: int   # declared length (bytes for str/bin/ext, elements for array, pairs for map)


_WIDTHS = {0xC4: 1, 0xC5: 2, 0xC6: 4, 0xD9: 1, 0xDA: 2, 0xDB: 4, 0xC7: 1, 0xC8: 2, 0xC9: 4,
           0xDC: 2, 0xDD: 4, 0xDE: 2, 0xDF: 4}
_FIXED = {0xC0: 0, 0xC2: 0, 0xC3: 0, 0xCA: 4, 0xCB: 8, 0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8, 0xD0: 1, 0xD1: 2,
          0xD2: 4, 0xD3: 8, 0xD4: 2, 0xD5: 3, 0xD6: 5, 0xD7: 9, 0xD8: 17}


def headers(doc: bytes) -> list[Header]:
    """Every header of a well-formed msgpack document (str/bin contents are skipped)."""
    out: list[Header] = []
    pos, pending = 0, 1
    while pending:
        pending -= 1
        c = doc[pos]
        if c <= 0x7F or c >= 0xE0 or c in _FIXED:
            pos += 1 + _FIXED.get(c, 0)
        elif 0x80 <= c <= 0x8F:
            out.append(Header(pos, c, 0, c & 0x0F))
            pending += 2 * (c & 0x0F)
            pos += 1
        elif 0x90 <= c <= 0x9F:
            out.append(Header(pos, c, 0, c & 0x0F))
            pending += c & 0x0F
            pos += 1
        elif 0xA0 <= c <= 0xBF:
            out.append(Header(pos, c, 0, c & 0x1F))
            pos += 1 + (c & 0x1F)
        else:
            w = _WIDTHS[c]
            n = int.from_bytes(doc[pos + 1:pos + 1 + w], "big")
            out.append(Header(pos, c, w, n))
            if c in (0xDC, 0xDD):
                pending += n
                pos += 1 + w
            elif c in (0xDE, 0xDF):
                pending += 2 * n
                pos += 1 + w
            elif c in (0xC7, 0xC8, 0xC9):
                pos += 1 + w + 1 + n
            else:
                pos += 1 + w + n
    return out


def set_header_length(doc: bytes, h: Header, n: int) -> bytes:
    """Rewrite one header to declare length n, widening it to the 32-bit form if needed."""
    if h.width:
        if n < 256 ** h.width:
            return doc[:h.offset + 1] + n.to_bytes(h.width, "big") + doc[h.offset + 1 + h.width:]
        code = {0xC4: 0xC6, 0xC5: 0xC6, 0xD9: 0xDB, 0xDA: 0xDB, 0xC7: 0xC9, 0xC8: 0xC9, 0xDC: 0xDD,
                0xDE: 0xDF}.get(h.code, h.code)
        return doc[:h.offset] + bytes([code]) + min(n, 2**32 - 1).to_bytes(4, "big") + doc[h.offset + 1 + h.width:]
    base, mask = (0xA0, 0x1F) if h.code >= 0xA0 else (h.code & 0xF0, 0x0F)
    if n <= mask:
        return doc[:h.offset] + bytes([base | n]) + doc[h.offset + 1:]
    wide = {0xA0: 0xDB, 0x90: 0xDD, 0x80: 0xDF}[base]
    return doc[:h.offset] + bytes([wide]) + min(n, 2**32 - 1).to_bytes(4, "big") + doc[h.offset + 1:]


# ----------------------------------------------------------------------------- the base bundles


@dataclass
class Base:
    """A real bundle, decoded once, that mutators start from."""

    name: str
    data: bytes
    outer: dict[str, Any]
    payload: dict[str, Any]
    paths: list[tuple[Any, ...]]          # every node of the payload tree
    outer_headers: list[Header]
    payload_headers: list[Header]
    payload_offset: int                   # where the payload bytes start inside data
    arrays: list[tuple[Any, ...]] = field(default_factory=list)    # the ARRAYS this payload holds
    numeric: list[tuple[Any, ...]] = field(default_factory=list)   # the NUMERIC fields it can hold

    @property
    def version(self) -> str:
        v = self.outer.get("version")
        return ".".join(map(str, v)) if isinstance(v, list) else repr(v)

    @property
    def format2(self) -> bool:
        """Whether it carries fields that format 2 added (and 3.0 kept): class statistics..."""
        return has_format2(self.payload)

    @property
    def tables(self) -> bool:
        """Whether it has vote tables (`lsh` and `votes`: optional from format 3)."""
        return has_tables(self.payload)

    @property
    def major(self) -> int | None:
        v = self.outer.get(Outer.VERSION)
        return v[0] if isinstance(v, list) and v and type(v[0]) is int else None


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(node, list) and len(node) <= 16:
        for i, v in enumerate(node):
            out += _paths(v, prefix + (i,))
    return out


def has_format2(payload: Any) -> bool:
    """Whether a decoded payload carries any field that format 2 added (class statistics, the
    prior, the scoring map, hyperplane offsets; all of them kept by 3.0)."""
    if not isinstance(payload, dict):
        return False
    lsh = payload.get(P.LSH)
    return any(k in payload for k in (P.CLASS_STATS, P.PRIOR, P.SCORING)) \
        or isinstance(lsh, dict) and Lsh.OFFSETS in lsh


def has_tables(payload: Any) -> bool:
    """Whether a decoded payload has vote tables: the reader reads a payload with either `lsh`
    or `votes` as one that has them (docs/bundle-format.md section 2)."""
    return isinstance(payload, dict) and (P.LSH in payload or P.VOTES in payload)


def _get(obj: Any, path: tuple[Any, ...]) -> Any:
    for k in path:
        if isinstance(obj, dict) and k in obj or isinstance(obj, list) and isinstance(k, int) and k < len(obj):
            obj = obj[k]
        else:
            return None
    return obj


def make_base(name: str, data: bytes) -> Base:
    outer = msgpack.unpackb(data, raw=False)
    payload = msgpack.unpackb(outer["payload"], raw=False)
    body = outer["payload"]
    arrays = [path for path in ARRAYS if isinstance(_get(payload, path), dict)]
    numeric = [path for path in NUMERIC if isinstance(_get(payload, path[:-1]), dict)]
    releases = _get(payload, ("privacy", "releases"))
    for i, r in enumerate(releases if isinstance(releases, list) else []):
        if isinstance(r, dict):
            numeric += [("privacy", "releases", i, k) for k in RELEASE_NUMERIC if k in r]
    return Base(name, data, outer, payload, _paths(payload), headers(data), headers(body), data.find(body),
                arrays, numeric)


def f4(a: Any) -> dict[str, Any]:
    """An array record of float32 values, as the exporter writes it."""
    a = np.ascontiguousarray(a, dtype="<f4")
    return {"dtype": "<f4", "shape": list(a.shape), "data": a.tobytes()}


def tiny_bundle(data: bytes, tables: int = 4, bits: int = 4, basis: int = 8) -> bytes:
    """The same bundle with a two-byte model and a short tokenizer.json (unpack runs neither),
    and its hyperplanes and votes, when it has vote tables, cut to the first `tables` tables and
    `bits` bits (as a bundle built with --tables 4 --bits 4 is shaped), so that an input is
    about 30 KiB. Offsets are cut alike, and the class statistics to the first `basis`
    directions of their public subspace (rows of an orthonormal basis stay orthonormal, and
    each class sum keeps its coordinates along them: a bundle built with --basis-dim 8)."""
    outer = msgpack.unpackb(data, raw=False)
    payload = msgpack.unpackb(outer[Outer.PAYLOAD], raw=False)
    enc = payload[P.ENCODER]
    enc[EncoderKey.MODEL] = TINY_MODELS[enc[EncoderKey.FORMAT]]
    enc[EncoderKey.TOKENIZER_JSON] = TINY_TOKENIZER
    privacy = payload[P.PRIVACY]
    lsh, votes = payload.get(P.LSH), payload.get(P.VOTES)
    if lsh is not None:  # format 3 bundles may have no vote tables
        t, h, d = lsh[Lsh.HYPERPLANES][A.SHAPE]
        c = votes[A.SHAPE][2]
        t2, h2 = min(t, tables), min(h, bits)
        planes = np.frombuffer(lsh[Lsh.HYPERPLANES][A.DATA], "<f4").reshape(t, h, d)[:t2, :h2]
        counts = np.frombuffer(votes[A.DATA], "<i2").reshape(t, 2**h, c)[:t2, : 2**h2]
        lsh.update({Lsh.TABLES: t2, Lsh.BITS: h2, Lsh.HYPERPLANES: f4(planes)})
        payload[P.VOTES] = {A.DTYPE: "<i2", A.SHAPE: [t2, 2**h2, c], A.DATA: counts.tobytes()}
        if Lsh.OFFSETS in lsh:
            lsh[Lsh.OFFSETS] = f4(np.frombuffer(lsh[Lsh.OFFSETS][A.DATA], "<f4").reshape(t, h)[:t2, :h2])
        # Fewer tables, a smaller sensitivity (the headline's: scales follow in _consistent_scales).
        privacy[Privacy.SENSITIVITY_L1] = (privacy.get(Privacy.MAX_RECORDS_PER_UNIT) or 1) * t2
        for r in privacy.get(Privacy.RELEASES) or []:
            if r.get(Release.STATISTIC) == Statistic.VOTES:
                r[Release.SENSITIVITY_L1] = privacy[Privacy.SENSITIVITY_L1]
    cs = payload.get(P.CLASS_STATS)
    if isinstance(cs, dict):
        k, dim = cs[ClassStatsKey.PROJECTION][A.SHAPE]
        k2 = min(k, basis)
        projection = np.frombuffer(cs[ClassStatsKey.PROJECTION][A.DATA], "<f4").reshape(k, dim)
        cs[ClassStatsKey.PROJECTION] = f4(projection[:k2])
        cs[ClassStatsKey.SUMS] = f4(np.frombuffer(cs[ClassStatsKey.SUMS][A.DATA], "<f4").reshape(-1, k)[:, :k2])
        for r in privacy.get(Privacy.RELEASES) or []:  # informational: the subspace the sums were released in
            if r.get(Release.STATISTIC) in CLASS_RELEASES and Release.DIM in r:
                r[Release.DIM] = k2
    # Scale = sensitivity / epsilon everywhere, and the top level the headline release's: the
    # reader refuses privacy facts that contradict each other.
    _consistent_scales(payload)
    return seal(pack(payload), {k: v for k, v in outer.items() if k in (Outer.FORMAT, Outer.VERSION)})


# ----------------------------------------------------------------------------- value generators

EDGE_INTS = [0, 1, 2, 3, 4, 7, 16, 24, 25, 127, 128, 255, 256, 384, 1023, 1024, 1025, 8192, 8193, 65535, 65536,
             2**24, 2**30, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**40, 2**53 + 1, 2**62, 2**63 - 1, 2**64 - 1,
             -1, -2, -7, -128, -129, -2**31, -2**63]
EDGE_FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, 8.0, 1e-300, 5e-324, 1e308, math.inf, -math.inf, math.nan, 2.0**64]
STRINGS = ["", " ", "a", "onnx", "tflite", "simhash", "sha256", "<i2", "<f4", "dpedge-bundle", "\x00", "\u202e",
           "e\u0301", "\U0001f600", "input_ids", "sentence_embedding", "x" * 300, "\ud7ff\uffff"]
FIELD_NAMES = ["labels", "label_descriptions", "privacy", "lsh", "votes", "encoder", "exporter", "dtype", "shape",
               "data", "check", "model", "format", "version", "checksum", "payload", "tables", "bits", "dim"]


def garbage(rng: random.Random, depth: int = 0) -> Any:
    """A random msgpack-serializable value, possibly nested."""
    r = rng.randrange(13 if depth < 4 else 9)
    if r == 0:
        return None
    if r == 1:
        return rng.choice([True, False])
    if r == 2:
        return rng.choice(EDGE_INTS)
    if r == 3:
        return rng.choice(EDGE_FLOATS)
    if r == 4:
        return rng.choice(STRINGS)
    if r == 5:
        return rng.getrandbits(8 * 16).to_bytes(16, "big")[: rng.randrange(17)]
    if r == 6:
        return rng.randrange(-2**63, 2**64)
    if r == 7:
        return msgpack.Timestamp(rng.randrange(2**34), rng.randrange(10**9))
    if r == 8:
        return bytes(rng.choice([0, 1, 2, 32, 1536, 24576]))
    if r in (9, 10):
        return [garbage(rng, depth + 1) for _ in range(rng.randrange(5))]
    return {rng.choice(FIELD_NAMES + STRINGS[:6]): garbage(rng, depth + 1) for _ in range(rng.randrange(5))}


def deep(rng: random.Random) -> bytes:
    """Raw msgpack nested around and past the unpacker's limit (1024 levels)."""
    depth = rng.choice([10, 100, 500, 998, 999, 1000, 1001, 1022, 1023, 1024, 1025, 2000, 100_000])
    unit = rng.choice([b"\x91", b"\x81\xa1k", b"\xdc\x00\x01", b"\x92\xc0", b"\x81\xa5shape"])
    return unit * depth + rng.choice([b"\xc0", b"\x01", b"\x90", b"\x80", b"\xa1x"])


def fragment(rng: random.Random) -> bytes:
    """A raw msgpack fragment that msgpack.packb would never write."""
    r = rng.randrange(10)
    if r == 0:
        return deep(rng)
    if r == 1:  # a header declaring far more than follows
        code, width = rng.choice([(0xC4, 1), (0xC5, 2), (0xC6, 4), (0xD9, 1), (0xDA, 2), (0xDB, 4), (0xDC, 2),
                                  (0xDD, 4), (0xDE, 2), (0xDF, 4), (0xC7, 1), (0xC8, 2), (0xC9, 4)])
        n = rng.choice([256 ** width - 1, 256 ** width // 2, 2**31 % 256 ** width, rng.randrange(256 ** width)])
        tail = bytes([rng.choice([0x00, 0xC0, 0x01, 0x90])]) * rng.choice([0, 1, 5, 100, 5000])
        return bytes([code]) + n.to_bytes(width, "big") + tail
    if r == 2:  # extension types, including malformed timestamps (type -1)
        return rng.choice([b"\xd4\x05x", b"\xd6\xff\x00\x00\x00\x01", b"\xd7\xff" + bytes(8),
                           b"\xc7\x0c\xff" + bytes(12),
                           b"\xc7\x05\xff" + bytes(5), b"\xd5\xff\x00\x00", b"\xc9\x00\x00\x00\x00\x07",
                           b"\xd8\x80" + bytes(16), b"\xc7\x00\xff"])
    if r == 3:  # the reserved byte and invalid UTF-8 in a str
        return rng.choice([b"\xc1", b"\xa2\xff\xfe", b"\xa3\xed\xa0\x80", b"\xd9\x02\xc3\x28", b"\xa1\x80"])
    if r == 4:  # non-string map keys
        return rng.choice([b"\x81\x01\x02", b"\x81\xc0\xc0", b"\x81\xc4\x01k\x01", b"\x81\x90\x01", b"\x81\x80\x01",
                           b"\x81\xcb" + struct.pack(">d", math.nan) + b"\x01"])
    if r == 5:  # duplicate keys: msgpack keeps the last
        return b"\x82\xa5dtype\xa3<i2\xa5dtype\xa3<f4"
    if r == 6:  # a map or array whose count is off by one
        return rng.choice([b"\x82\xa1a\x01", b"\x93\x01\x02", b"\x80\x01", b"\x90\x01"])
    if r == 7:  # float32 / int widths for numbers
        return rng.choice([b"\xca" + struct.pack(">f", 8.0), b"\xcf" + (2**64 - 1).to_bytes(8, "big"),
                           b"\xd3" + (2**63).to_bytes(8, "big"), b"\xcc\x20", b"\xd0\x80", b"\xca\x7f\xc0\x00\x00"])
    if r == 8:
        return pack(garbage(rng))
    return rng.getrandbits(8 * 24).to_bytes(24, "big")[: rng.randrange(1, 25)]


_SPLICE = b"\xf5\xf5dpedge-fuzz-splice-point\xf5\xf5"


def pack_spliced(obj: Any, raw: dict[tuple[Any, ...], bytes]) -> bytes:
    """Pack obj after putting a unique marker at each path, then swap each marker for raw bytes."""
    markers = {}
    for i, (path, frag) in enumerate(raw.items()):
        marker = _SPLICE + bytes([i])
        if not _set_at(obj, path, marker):
            continue
        markers[pack(marker)] = frag
    doc = pack(obj)
    for m, frag in markers.items():
        doc = doc.replace(m, frag, 1)
    return doc


def _parent(obj: Any, path: tuple[Any, ...]) -> Any:
    for k in path[:-1]:
        if isinstance(obj, dict) and k in obj or isinstance(obj, list) and isinstance(k, int) and k < len(obj):
            obj = obj[k]
        else:
            return None
    return obj


def _set_at(obj: Any, path: tuple[Any, ...], value: Any) -> bool:
    parent = _parent(obj, path)
    key = path[-1]
    if isinstance(parent, dict):
        parent[key] = value
        return True
    if isinstance(parent, list) and isinstance(key, int) and key < len(parent):
        parent[key] = value
        return True
    return False


def _drop_at(obj: Any, path: tuple[Any, ...]) -> None:
    parent = _parent(obj, path)
    key = path[-1]
    if isinstance(parent, dict):
        parent.pop(key, None)
    elif isinstance(parent, list) and isinstance(key, int) and key < len(parent):
        del parent[key]


#: Array records, and the dtype each must have. A mutator picks among those its base holds
#: (Base.arrays): votes and hyperplanes in a bundle with vote tables, the check embedding in
#: every bundle from 1.1, the rest in formats 2 and 3.
ARRAYS = {(P.VOTES,): fmt.VOTES_DTYPE, (P.LSH, Lsh.HYPERPLANES): fmt.HYPERPLANES_DTYPE,
          (P.ENCODER, EncoderKey.CHECK, EncoderKey.CHECK_EMBEDDING): fmt.HYPERPLANES_DTYPE,
          (P.LSH, Lsh.OFFSETS): fmt.HYPERPLANES_DTYPE, (P.CLASS_STATS, ClassStatsKey.ORIGIN): fmt.HYPERPLANES_DTYPE,
          (P.CLASS_STATS, ClassStatsKey.PROJECTION): fmt.HYPERPLANES_DTYPE,
          (P.CLASS_STATS, ClassStatsKey.SUMS): fmt.HYPERPLANES_DTYPE,
          (P.CLASS_STATS, ClassStatsKey.COUNTS): fmt.HYPERPLANES_DTYPE, (P.PRIOR, PriorKey.EMBEDDINGS): fmt.HYPERPLANES_DTYPE}
#: Numeric fields (Base.numeric: those whose parent map the base holds, plus RELEASE_NUMERIC
#: in each of its privacy.releases entries).
NUMERIC = [(P.LSH, Lsh.TABLES), (P.LSH, Lsh.BITS), (P.LSH, Lsh.DIM), (P.LSH, Lsh.SEED), (P.ENCODER, EncoderKey.MAX_LENGTH),
           (P.ENCODER, EncoderKey.DIM), (P.PRIVACY, Privacy.EPSILON), (P.PRIVACY, Privacy.DELTA),
           (P.PRIVACY, Privacy.SENSITIVITY_L1), (P.PRIVACY, Privacy.NOISE_SCALE), (P.ENCODER, EncoderKey.NORMALIZED),
           (P.PRIVACY, Privacy.MAX_RECORDS_PER_UNIT)] + [(P.SCORING, name) for name in SCORING_NUMBERS]
RELEASE_NUMERIC = (Release.EPSILON, Release.SENSITIVITY_L1, Release.NOISE_SCALE, Release.GRID, Release.COUNT_GRID,
                   Release.CLIP_L1, Release.DIM, Release.MAX_RECORDS_PER_UNIT)


# ----------------------------------------------------------------------------- structure-aware operations
# Each takes (rng, payload) and changes the decoded payload in place; it may return raw splices
# {path: raw msgpack bytes} to be put into the packed document.

Splices = dict[tuple[Any, ...], bytes]


def op_field_type(rng: random.Random, p: dict, base: Base) -> Splices:
    _set_at(p, rng.choice(base.paths), garbage(rng))
    return {}


def op_field_drop(rng: random.Random, p: dict, base: Base) -> Splices:
    _drop_at(p, rng.choice(base.paths))
    return {}


def _shape(rng: random.Random, ndim: int) -> Any:
    r = rng.randrange(6)
    if r == 0:
        return [rng.choice(EDGE_INTS) for _ in range(ndim)]
    if r == 1:  # one zero dimension with huge others: zero elements, so any data length check passes
        s = [rng.choice([2**40, 2**62, 2**63 - 1, 2**64 - 1, 2**31, 7]) for _ in range(ndim)]
        s[rng.randrange(ndim)] = 0
        return s
    if r == 2:
        return [rng.choice(EDGE_INTS) for _ in range(rng.choice([0, 1, 2, 4, 5, 100]))]
    if r == 3:  # the example and its relatives
        s = rng.choice([[2**40, 2**30, 7], [2**40, 2**10, 7], [2**64 - 1] * 3, [-1, 16, 7], [2**32, 2**32, 2**32]])
        return s[:ndim] + [1] * max(0, ndim - 3)
    if r == 4:
        return [garbage(rng) for _ in range(ndim)]
    return rng.choice(["[4, 16, 7]", {"0": 4}, None, 7, b"\x04\x10\x07", [4.0, 16.0, 7.0], [True, True, True]])


def op_shape(rng: random.Random, p: dict, base: Base) -> Splices:
    path = rng.choice(base.arrays)
    rec = _parent(p, path + ("shape",))
    if not isinstance(rec, dict):
        return {}
    ndim = len(rec.get("shape", [0, 0, 0])) if isinstance(rec.get("shape"), list) else 3
    rec["shape"] = _shape(rng, max(ndim, 1))
    shape = rec["shape"]
    if (rng.random() < 0.5 and isinstance(shape, list) and all(type(s) is int and s >= 0 for s in shape)
            and math.prod(shape) * 4 <= 1 << 20):
        item = ARRAYS[path].itemsize
        rec["data"] = bytes(math.prod(shape) * item)  # make the byte length agree, so later checks run
    return {}


def op_array_data(rng: random.Random, p: dict, base: Base) -> Splices:
    path = rng.choice(base.arrays)
    rec = _parent(p, path + ("data",))
    if not isinstance(rec, dict) or not isinstance(rec.get("data"), bytes):
        return {}
    d = rec["data"]
    r = rng.randrange(8)
    if r == 0:
        rec["data"] = d[: rng.randrange(len(d) + 1)]
    elif r == 1:
        rec["data"] = d + bytes(rng.choice([1, 2, 4, 1000]))
    elif r == 2:
        rec["data"] = b""
    elif r == 3 and rec.get("dtype") == "<f4" and len(d) >= 4 and len(d) % 4 == 0:  # non-finite or scaled floats
        a = np.frombuffer(d, "<f4").copy()
        a[rng.randrange(len(a))] = rng.choice([np.nan, np.inf, -np.inf, 3.4e38])
        rec["data"] = a.tobytes()
    elif r == 4 and rec.get("dtype") == "<f4" and len(d) % 4 == 0:
        with np.errstate(over="ignore", invalid="ignore"):  # inf from a large value times 1e30 is fine here
            rec["data"] = (np.frombuffer(d, "<f4") * rng.choice([0.0, 0.5, 2.0, -1.0, 1e30])).astype("<f4").tobytes()
    elif r == 5:
        rec["data"] = d.decode("latin-1")  # a str where bin is expected
    elif r == 6:  # random contents of the right length (votes: any int16 is valid)
        sub = random.Random(rng.getrandbits(64))
        rec["data"] = sub.randbytes(len(d))
    else:
        return {path + ("data",): fragment(rng)}
    return {}


def op_dtype(rng: random.Random, p: dict, base: Base) -> Splices:
    rec = _parent(p, rng.choice(base.arrays) + ("dtype",))
    if isinstance(rec, dict):
        rec["dtype"] = rng.choice(["<i2", ">i2", "<f4", ">f4", "<f8", "|i1", "i2", "f4", "<i4", "", "int16",
                                   "<i2\x00", "<I2", b"<i2", 2, None, ["<i2"], "x" * 10_000])
    return {}


def op_numeric(rng: random.Random, p: dict, base: Base) -> Splices:
    path = rng.choice(base.numeric + [("labels",)])
    if path == ("labels",):
        return {}
    value = rng.choice([rng.choice(EDGE_INTS), rng.choice(EDGE_FLOATS), True, False, None, "8",
                        rng.randrange(-2**63, 2**64)])
    _set_at(p, path, value)
    return {}


def op_strings(rng: random.Random, p: dict, base: Base) -> Splices:
    labels = list(p.get("labels", [])) if isinstance(p.get("labels"), list) else []
    r = rng.randrange(9)
    if r == 0 and labels:
        labels[rng.randrange(len(labels))] = rng.choice(STRINGS + [None, 1, b"x", ["a"]])
        p["labels"] = labels
    elif r == 1 and labels:
        p["labels"] = labels + [labels[0]]
    elif r == 2:
        p["labels"] = labels[: rng.randrange(3)]
    elif r == 3:  # many labels: every shape check then disagrees
        p["labels"] = [f"l{i}" for i in range(rng.choice([100, 10_000, 50_000]))]
    elif r == 4:
        p["label_descriptions"] = rng.choice([None, [], ["x"] * (len(labels) + 1), [1] * len(labels), "text"])
    elif r == 5:
        enc = p.get("encoder")
        if isinstance(enc, dict):
            enc["inputs"] = rng.choice([[], ["input_ids"], ["input_ids", "pixel_values"], "input_ids", [1],
                                        ["input_ids"] * 1000, None])
    elif r == 6:
        enc = p.get("encoder")
        if isinstance(enc, dict):
            enc["format"] = rng.choice(STRINGS + ["ONNX", "coreml", "tflite\x00", None, 1])
    elif r == 7:
        lsh = p.get("lsh")
        if isinstance(lsh, dict):
            lsh["family"] = rng.choice(STRINGS + ["minhash", None])
    else:
        enc = p.get("encoder")
        if isinstance(enc, dict) and isinstance(enc.get("check"), dict):
            enc["check"]["text"] = rng.choice(["", " \n\t", "\x00", "ok", None, 5, "x" * 100_000])
    return {}


def op_nested(rng: random.Random, p: dict, base: Base) -> Splices:
    return {rng.choice(base.paths): deep(rng)}


def op_fragment(rng: random.Random, p: dict, base: Base) -> Splices:
    return {rng.choice(base.paths): fragment(rng)}


def _small_int(v: Any, default: int) -> int:
    """v if it is an integer a mutator can do arithmetic on (an earlier mutation in a stack may
    have left 2**64 - 1 there, which times 50 no longer packs), else the default."""
    return v if type(v) is int and 0 < v < 2**31 else default


def per_person(p: dict, k: int) -> None:
    """K records per person (format 1.2): every sensitivity becomes K times the per-record one
    (the vote tables' K x T), each noise scale following."""
    privacy = p[P.PRIVACY]
    old = _small_int(privacy.get(Privacy.MAX_RECORDS_PER_UNIT), 1)
    privacy[Privacy.MAX_RECORDS_PER_UNIT] = k
    privacy[Privacy.SENSITIVITY_L1] = _small_int(privacy[Privacy.SENSITIVITY_L1], old) // old * k
    for rel in privacy.get(Privacy.RELEASES) or []:
        rel[Release.SENSITIVITY_L1] = _small_int(rel[Release.SENSITIVITY_L1], old) // old * k
    _consistent_scales(p)


def op_valid(rng: random.Random, p: dict, base: Base) -> Splices:
    """Changes a reader must accept: unknown fields, free-form metadata, optional fields."""
    f2, tables = has_format2(p), has_tables(p)
    enc = p[P.ENCODER]
    r = rng.randrange(12 if f2 else 7)
    if r == 6:  # per-person privacy (format 1.2): sensitivity K x T
        per_person(p, rng.choice([1, 2, 3, 50]))
    elif r == 0:
        targets = [p, enc, p[P.PRIVACY], enc[EncoderKey.FACTS]]
        if tables:
            targets += [p[P.LSH], p[P.VOTES]]
        if f2:  # maps of format 2 whose unknown fields a reader ignores (scoring's must be numbers)
            targets += [m for m in (p.get(P.CLASS_STATS), p.get(P.PRIOR), p.get(P.LSH, {}).get(Lsh.OFFSETS))
                        if isinstance(m, dict)] + list(p[P.PRIVACY].get(Privacy.RELEASES) or [])
        target = rng.choice(targets)
        target[rng.choice(["future_field", "x", "\u00e9t\u00e9", "zz" * 20])] = garbage(rng)
    elif r >= 7:
        _valid_format2(rng, p, r - 7)
    elif r == 1:
        p[P.EXPORTER] = {k: garbage(rng) for k in ("name", "version", "created", "extra")[: rng.randrange(5)]}
    elif r == 2:
        enc[EncoderKey.FACTS] = {"name": garbage(rng), "fidelity": garbage(rng)}
    elif r == 3:
        p[P.LABEL_DESCRIPTIONS] = None if rng.random() < 0.5 else [f"d{i}" for i in range(len(p[P.LABELS]))]
    elif r == 4:
        enc.pop(EncoderKey.CHECK, None)
    elif tables:
        p[P.LSH][Lsh.SEED] = rng.choice(EDGE_INTS)
        p[P.LSH][Lsh.DISTRIBUTION] = rng.choice(STRINGS)
    else:  # informational text of the privacy facts
        p[P.PRIVACY][rng.choice([Privacy.MECHANISM, Privacy.NOISE_SOURCE, Privacy.POST_PROCESSING])] = \
            rng.choice(STRINGS[:6] + ["NOT differentially private"])
    return {}


def op_resize(rng: random.Random, p: dict, base: Base) -> Splices:
    """Consistently change tables, bits, labels and dim (without vote tables, labels and dim):
    valid unless a value is out of range."""
    t = rng.choice([1, 2, 3, 4, 1024, 1025, 0])
    h = rng.choice([1, 2, 3, 24, 25, 0])
    c = rng.choice([2, 3, 7, 1])
    d = rng.choice([1, 2, 384, 0])
    if t * h * d * 4 > 1 << 22 or t * 2**h * c * 2 > 1 << 22:  # keep inputs small; sizes are tested elsewhere
        h = min(h, 3)
        t = min(t, 4)
    sub = random.Random(rng.getrandbits(64))
    privacy = p[P.PRIVACY]
    p[P.LABELS] = [f"label{i}" for i in range(c)]
    p[P.LABEL_DESCRIPTIONS] = None
    p[P.ENCODER][EncoderKey.DIM] = d
    if has_tables(p):
        planes = np.random.default_rng(sub.getrandbits(64)).standard_normal(t * h * d).astype("<f4")
        p[P.LSH].update({Lsh.TABLES: t, Lsh.BITS: h, Lsh.DIM: d,
                         Lsh.HYPERPLANES: {A.DTYPE: "<f4", A.SHAPE: [t, h, d], A.DATA: planes.tobytes()}})
        p[P.VOTES] = {A.DTYPE: "<i2", A.SHAPE: [t, 2**h, c], A.DATA: sub.randbytes(t * 2**h * c * 2)}
        privacy[Privacy.SENSITIVITY_L1] = _small_int(privacy.get(Privacy.MAX_RECORDS_PER_UNIT), 1) * t
    if has_format2(p):  # formats 2 and 3: every array that depends on tables, bits, classes or dim
        g = np.random.default_rng(sub.getrandbits(64))
        if Lsh.OFFSETS in p.get(P.LSH, {}):
            p[P.LSH][Lsh.OFFSETS] = f4(g.standard_normal((t, h)) * 0.1)
        if isinstance(p.get(P.CLASS_STATS), dict):
            k = rng.choice([1, 2, 8, d + 1]) if d else 1
            k = min(k, d) if rng.random() < 0.9 else k  # now and then more directions than dims: refused
            p[P.CLASS_STATS] = _class_stats(g, c, max(k, 0), d)
        if isinstance(p.get(P.PRIOR), dict):
            p[P.PRIOR][PriorKey.EMBEDDINGS] = f4(_unit(g.standard_normal((c, d))))
        for rel in privacy.get(Privacy.RELEASES) or []:
            if isinstance(rel, dict) and rel.get(Release.STATISTIC) == Statistic.VOTES:
                rel[Release.SENSITIVITY_L1] = privacy[Privacy.SENSITIVITY_L1]
            elif isinstance(rel, dict) and rel.get(Release.STATISTIC) in CLASS_RELEASES and Release.DIM in rel \
                    and isinstance(p.get(P.CLASS_STATS), dict):
                rel[Release.DIM] = p[P.CLASS_STATS][ClassStatsKey.PROJECTION][A.SHAPE][0]
    _consistent_scales(p)
    if rng.random() < 0.5:
        emb = np.zeros(d, dtype="<f4")
        if d:
            emb[0] = 1.0
        p[P.ENCODER][EncoderKey.CHECK] = {EncoderKey.CHECK_TEXT: "check", EncoderKey.CHECK_EMBEDDING: f4(emb)}
    else:
        p[P.ENCODER].pop(EncoderKey.CHECK, None)
    return {}


# ----------------------------------------------------------------------------- formats 2 and 3

#: Values for a number of formats 2 and 3 (scoring weights, temperatures, clip, release shares):
#: non-finite, negative, zero, denormal, huge, and every other msgpack type.
F2_NUMBERS = [math.nan, math.inf, -math.inf, -1, -1e-300, -0.0, 0, 0.0, 5e-324, 1e-310, 1e-300, 1e-12, 0.003,
              0.05, 1, 5.0, 1e12, 1e300, 1e308, 2**63 - 1, 2**64 - 1, -2**63, "0.5", "", "nan", True, False, None,
              [1.0], {"x": 1}, b"\x01"]
CENTROID_RULE_VALUES = [*CENTROID_RULES, "median", "", "Gaussian", "gaussian\x00", " cosine", "cosine-public",
                        "euclidean", None, 0, 1, 2.5, math.nan, True, ["gaussian"], {"gaussian": 1}, b"gaussian",
                        "g" * 10_000]
PRIOR_BOOST_RULE_VALUES = [*PRIOR_BOOST_RULES, "log", "", "Linear", "linear\x00", " max", None, 0, 1, math.nan, True,
                           ["linear"], {"linear": 1}, b"linear", "l" * 10_000]
RELEASE_FIELDS = [Release.STATISTIC, Release.EPSILON, Release.SENSITIVITY_L1, Release.MECHANISM, Release.NOISE_SCALE,
                  Release.GRID, Release.COUNT_GRID, Release.CLIP_L1, Release.DIM, Release.NOTE,
                  Release.MAX_RECORDS_PER_UNIT]
#: The releases of the class statistics: one in format 2, two (counts, then sums) in 3.0.
CLASS_RELEASES = (Statistic.CLASS_STATS, Statistic.CLASS_COUNTS, Statistic.CLASS_SUMS)
STATISTIC_VALUES = [Statistic.VOTES, *CLASS_RELEASES, "VOTES", "prior", "class_count", "class_sums "]
CLASS_STATS = (ClassStatsKey.ORIGIN, ClassStatsKey.PROJECTION, ClassStatsKey.SUMS, ClassStatsKey.COUNTS)
NUM = (int, float)


def _unit(a: np.ndarray) -> np.ndarray:
    return a / np.maximum(np.linalg.norm(a, axis=-1, keepdims=True), 1e-12)


def _class_stats(g: np.random.Generator, classes: int, k: int, dim: int) -> dict[str, Any]:
    """Consistent class statistics: an orthonormal k x dim basis (k <= dim), noisy sums, counts."""
    if 1 <= k <= dim:
        proj = np.linalg.qr(g.standard_normal((dim, k)))[0].T
    else:
        proj = g.standard_normal((k, dim))
    return {ClassStatsKey.ORIGIN: f4(g.standard_normal(dim) * 0.01), ClassStatsKey.PROJECTION: f4(proj),
            ClassStatsKey.SUMS: f4(g.standard_normal((classes, k)) * 10),
            ClassStatsKey.COUNTS: f4(g.uniform(-5, 120, classes))}


def _dim(p: dict) -> int:
    """D: lsh.dim in a payload with vote tables, encoder.dim in one without (384 where an
    earlier mutation left something no array can be sized by: 2**30 floats are 8 GiB)."""
    d = _get(p, (P.LSH, Lsh.DIM)) if has_tables(p) else _get(p, (P.ENCODER, EncoderKey.DIM))
    return d if type(d) is int and 1 <= d <= 4096 else 384


def _release(statistic: str, eps: float, sensitivity: int, **extra: Any) -> dict[str, Any]:
    return {Release.STATISTIC: statistic, Release.EPSILON: eps, Release.MECHANISM: "discrete Laplace",
            Release.SENSITIVITY_L1: sensitivity, Release.NOISE_SCALE: sensitivity / eps, **extra}


def graft_class_stats(rng: random.Random, p: dict) -> None:
    """Consistent class statistics, prior and scoring map, as the exporter writes them with
    --votes-share (format 3.0: class_counts, class_sums, then votes), for a payload that has
    none (a 1.x base), so that the format-2 and format-3 mutations run on it too."""
    privacy = p[P.PRIVACY]
    d, c = _dim(p), len(p[P.LABELS])
    per_unit = _small_int(privacy.get(Privacy.MAX_RECORDS_PER_UNIT), 1)
    g = np.random.default_rng(rng.getrandbits(64))
    k = min(d, rng.choice([1, 2, 8]))
    if has_tables(p):
        lsh = p[P.LSH]
        lsh[Lsh.OFFSETS] = f4(g.standard_normal((lsh[Lsh.TABLES], lsh[Lsh.BITS])) * 0.1)
    p[P.CLASS_STATS] = _class_stats(g, c, k, d)
    p[P.PRIOR] = {PriorKey.EMBEDDINGS: f4(_unit(g.standard_normal((c, d)))),
                  PriorKey.SOURCE: "the label descriptions (public text), embedded by the bundle's encoder"}
    p[P.SCORING] = Weights.measured().as_map()
    eps = float(privacy[Privacy.EPSILON])
    votes_share = rng.choice([0.1, 0.5]) if has_tables(p) else 0.0
    privacy[Privacy.RELEASES] = [
        _release(Statistic.CLASS_COUNTS, 0.05 * eps, per_unit),
        _release(Statistic.CLASS_SUMS, (0.95 - votes_share) * eps, per_unit * 305, grid=100, clip_l1=3.05, dim=k)]
    if has_tables(p):
        privacy[Privacy.RELEASES].append(_release(Statistic.VOTES, votes_share * eps, privacy[Privacy.SENSITIVITY_L1]))
    _consistent_scales(p)


def _consistent_scales(p: dict) -> None:
    """Every release's noise scale set to its sensitivity over its share, and the top level's
    facts to the headline release's (the votes release, else the last one), or the top-level
    scale to sensitivity / epsilon without releases: the reader refuses privacy facts that
    contradict each other. Non-numbers are left for the reader to refuse."""
    privacy = p[P.PRIVACY]
    listed = privacy.get(Privacy.RELEASES)
    releases = [r for r in listed if isinstance(r, dict)] if isinstance(listed, list) else []
    for rel in releases:
        share, sensitivity = rel.get(Release.EPSILON), rel.get(Release.SENSITIVITY_L1)
        if isinstance(share, NUM) and isinstance(sensitivity, NUM) and share > 0:
            rel[Release.NOISE_SCALE] = sensitivity / share
    head = next((r for r in releases if r.get(Release.STATISTIC) == Statistic.VOTES),
                releases[-1] if releases else None)
    if head is not None and Release.NOISE_SCALE in head:
        if type(head.get(Release.SENSITIVITY_L1)) is int:
            privacy[Privacy.SENSITIVITY_L1] = head[Release.SENSITIVITY_L1]
        privacy[Privacy.NOISE_SCALE] = head[Release.NOISE_SCALE]
    elif isinstance(privacy.get(Privacy.EPSILON), NUM) and isinstance(privacy.get(Privacy.SENSITIVITY_L1), NUM) \
            and privacy[Privacy.EPSILON] > 0:
        privacy[Privacy.NOISE_SCALE] = privacy[Privacy.SENSITIVITY_L1] / privacy[Privacy.EPSILON]


def _epsilon_from_releases(p: dict) -> None:
    """The bundle's epsilon set to what its releases spend (after one was dropped or added)."""
    privacy = p[P.PRIVACY]
    shares = [r.get(Release.EPSILON) for r in privacy.get(Privacy.RELEASES) or [] if isinstance(r, dict)]
    if shares and all(isinstance(s, NUM) for s in shares):
        privacy[Privacy.EPSILON] = float(sum(shares))


def _scale_budget(p: dict, factor: float) -> None:
    """epsilon and every release's share multiplied by the same factor (valid while positive)."""
    privacy = p[P.PRIVACY]
    privacy[Privacy.EPSILON] = float(privacy[Privacy.EPSILON]) * factor
    for rel in privacy.get(Privacy.RELEASES) or []:
        if isinstance(rel, dict) and isinstance(rel.get(Release.EPSILON), NUM):
            rel[Release.EPSILON] = float(rel[Release.EPSILON]) * factor * (1 - 1e-12)  # within the reader's 1e-9
    _consistent_scales(p)  # below about 1e-305 the scales overflow: refused, as the format says


def _valid_format2(rng: random.Random, p: dict, r: int) -> None:
    """Changes of the fields of formats 2 and 3 that a reader must accept."""
    sc = p.get(P.SCORING)
    cs = isinstance(p.get(P.CLASS_STATS), dict)
    if r == 0 and isinstance(sc, dict):  # another centroid rule (none: the 2.0 meaning) or prior boost
        choice = rng.randrange(5)
        if choice == 0:
            sc.pop(Scoring.CENTROID_RULE, None)
            sc.pop(Scoring.CENTROID_CLIP_L1, None)
        elif choice == 1:
            sc[Scoring.CENTROID_RULE] = rng.choice(["cosine", "cosine_public"])
        elif choice == 2:
            sc.update({Scoring.CENTROID_RULE: "gaussian",
                       Scoring.CENTROID_CLIP_L1: rng.choice([0.01, 1, 5.0, 50, 1e6])})
        elif choice == 3 or not cs:  # the 2.x boost, named or not
            sc[Scoring.PRIOR_BOOST_RULE] = "max"
            if rng.random() < 0.5:
                del sc[Scoring.PRIOR_BOOST_RULE]
        else:
            sc.update({Scoring.PRIOR_BOOST_RULE: "linear",
                       Scoring.PRIOR_RECORDS_PER_CLASS: rng.choice([0, 0.5, 1, 100, 1e6])})
    elif r == 1:  # an optional component removed (the class statistics only where vote tables classify)
        victims = [P.PRIOR, P.SCORING] + ([Lsh.OFFSETS, P.CLASS_STATS] if has_tables(p) else [])
        victim = rng.choice(victims)
        if victim == Lsh.OFFSETS:
            p[P.LSH].pop(Lsh.OFFSETS, None)
        else:
            p.pop(victim, None)
        if victim == P.CLASS_STATS and isinstance(sc, dict):  # the linear boost needs the class counts
            sc[Scoring.PRIOR_BOOST_RULE] = "max"
    elif r == 2:  # free text where the reader reads none
        if isinstance(p.get(P.PRIOR), dict):
            p[P.PRIOR][PriorKey.SOURCE] = garbage(rng)
        if isinstance(sc, dict):
            sc[Scoring.RULE] = rng.choice(STRINGS)
    else:  # extreme numbers: the scorer must survive those inside the reader's bounds
        which = rng.randrange(4)
        if which == 0:
            _scale_budget(p, rng.choice([1e-3, 1e-100, 1e-300, 1e-310, 1e-320, 1e6, 1e300]))
        elif which == 1 and isinstance(sc, dict):
            sc[rng.choice([Scoring.VOTES, Scoring.CENTROIDS, Scoring.PRIOR, Scoring.PRIOR_RECORDS_PER_CLASS])] = \
                rng.choice([0, 0.0, 1e-300, 1e12, 1e300, 1e308, 2**64 - 1, 1e6])
        elif which == 2 and isinstance(sc, dict):
            sc[rng.choice(list(SCORING_TEMPERATURES))] = rng.choice([5e-324, 1e-310, 1e-300, 1e-100, 1e-12, 1e-6,
                                                                     1e12, 1e308])
        elif isinstance(sc, dict) and sc.get(Scoring.CENTROID_RULE) == "gaussian":
            sc[Scoring.CENTROID_CLIP_L1] = rng.choice([5e-324, 1e-300, 1e-12, 1e12, 1e308])


def _f2_scoring(rng: random.Random, p: dict) -> None:
    sc = p.get(P.SCORING)
    r = rng.randrange(6)
    if r == 0 or not isinstance(sc, dict):
        p[P.SCORING] = rng.choice([None, [], {}, "blend", 1, 0.5, True, b"", {Scoring.VOTES: 1},
                                   {Scoring.CENTROID_RULE: "gaussian"}, {Scoring.CENTROID_RULE: "cosine"},
                                   {Scoring.PRIOR_BOOST_RULE: "linear"}, [[Scoring.VOTES, 1.0]], garbage(rng)])
    elif r == 1:  # a number of the map
        sc[rng.choice(list(SCORING_NUMBERS) + [Scoring.RULE, "future_weight"])] = rng.choice(F2_NUMBERS)
    elif r == 2:  # a rule
        if rng.random() < 0.5:
            sc[Scoring.CENTROID_RULE] = rng.choice(CENTROID_RULE_VALUES)
            if rng.random() < 0.3:
                sc.pop(Scoring.CENTROID_CLIP_L1, None)
            elif rng.random() < 0.3:
                sc[Scoring.CENTROID_CLIP_L1] = rng.choice(F2_NUMBERS)
        else:
            sc[Scoring.PRIOR_BOOST_RULE] = rng.choice(PRIOR_BOOST_RULE_VALUES)
    elif r == 3:  # names dropped
        for _ in range(rng.randint(1, 3)):
            if sc:
                sc.pop(rng.choice(list(sc)))
    elif r == 4:  # an unknown name of any type
        sc[rng.choice(["future", "weights", "Votes", "votes ", "\u00e9"])] = garbage(rng)
    else:  # every number at once
        v = rng.choice(F2_NUMBERS)
        for name in SCORING_NUMBERS:
            if name in sc or rng.random() < 0.5:
                sc[name] = v


def _f2_releases(rng: random.Random, p: dict) -> None:
    privacy = p[P.PRIVACY]
    rel = privacy.get(Privacy.RELEASES)
    rel = rel if isinstance(rel, list) else []
    r = rng.randrange(4)
    if r == 0:  # the list as a whole
        votes = [x for x in rel if isinstance(x, dict) and x.get(Release.STATISTIC) == Statistic.VOTES]
        stats = [x for x in rel if isinstance(x, dict) and x.get(Release.STATISTIC) in CLASS_RELEASES]
        privacy[Privacy.RELEASES] = rng.choice([
            None, [], Statistic.VOTES, {}, 1, [None], [[]], [{}], [Statistic.VOTES, *CLASS_RELEASES], votes, stats,
            rel + rel, list(reversed(rel)), rel + [{}], rel + [garbage(rng)], votes * rng.choice([2, 100, 5000]),
            [{**x, Release.EPSILON: 1e-6} for x in rel] * rng.choice([10, 1000]),
        ])
        if rng.random() < 0.2:
            privacy.pop(Privacy.RELEASES, None)
    elif r == 1 and rel:  # one field of one release
        entry = rng.choice(rel)
        if isinstance(entry, dict):
            key = rng.choice(RELEASE_FIELDS)
            if rng.random() < 0.25:
                entry.pop(key, None)
            else:
                entry[key] = rng.choice(F2_NUMBERS + STRINGS[:6] + STATISTIC_VALUES)
    elif r == 2 and rel:  # the shares against the total
        factor = rng.choice([0, -1, 0.5, 1.0 + 1e-6, 1.01, 2, 1e300, math.inf, math.nan])
        for entry in rel:
            if isinstance(entry, dict) and isinstance(entry.get(Release.EPSILON), NUM):
                entry[Release.EPSILON] = entry[Release.EPSILON] * factor
    else:  # the top-level facts beside the releases
        key = rng.choice([Privacy.EPSILON, Privacy.SENSITIVITY_L1, Privacy.NOISE_SCALE, Privacy.RELEASED_STATISTICS,
                          Privacy.COMPOSITION])
        privacy[key] = rng.choice(F2_NUMBERS + [[Statistic.VOTES], "sequential"])


def _f2_array(rng: random.Random, p: dict, path: tuple[str, ...], expected: tuple[int, ...]) -> None:
    """One array of formats 2 and 3: dropped, replaced, re-shaped with data that agrees, or new values."""
    parent = _parent(p, path)
    if not isinstance(parent, dict):
        return
    rec = parent.get(path[-1])
    r = rng.randrange(6)
    if r == 0:
        parent.pop(path[-1], None)
    elif r == 1:
        parent[path[-1]] = rng.choice([None, [], {}, "array", 0, b"\x00" * 16, garbage(rng),
                                       {A.DTYPE: "<f4", A.SHAPE: list(expected)}, {A.DATA: b"", A.SHAPE: [0]}])
    elif r == 2:  # another shape, the data agreeing, so that the shape check is what refuses it
        dims = list(expected) or [1]
        choice = rng.randrange(5)
        if choice == 0:
            i = rng.randrange(len(dims))
            dims[i] = rng.choice([0, 1, dims[i] + 1, max(dims[i] - 1, 0), 2 * dims[i]])
        elif choice == 1:
            dims = dims[::-1]
        elif choice == 2:
            dims = [math.prod(dims)]
        elif choice == 3:
            dims = dims + [1]
        else:
            dims = dims[:-1] or [0]
        n = math.prod(dims)
        if n <= 1 << 18:
            parent[path[-1]] = f4(np.random.default_rng(rng.getrandbits(32)).standard_normal(n).reshape(dims))
    elif isinstance(rec, dict) and isinstance(rec.get(A.DATA), bytes) and len(rec[A.DATA]) % 4 == 0 and rec[A.DATA]:
        a = np.frombuffer(rec[A.DATA], "<f4").copy()
        if r == 3:  # one non-finite or extreme value
            a[rng.randrange(len(a))] = rng.choice([np.nan, np.inf, -np.inf, 3.4e38, -3.4e38, 1e-45])
        elif r == 4:  # every value the same: zero, negative, tiny, huge (valid for any finite value)
            a[:] = rng.choice([0.0, -1.0, 1e-45, -1e-45, 1e-38, 3.4e38, -3.4e38, 1e30])
        else:
            with np.errstate(over="ignore", invalid="ignore"):  # float32 overflowing to inf is one of the aims
                a = a * np.float32(rng.choice([0.0, -1.0, 1e-30, 1e30, 1e38]))
        rec[A.DATA] = a.astype("<f4").tobytes()


def op_format2(rng: random.Random, p: dict, base: Base) -> Splices:
    """The fields format 2 added (3.0 kept them): scoring, privacy.releases, class_stats, prior,
    lsh.offsets (grafted first, as 3.0 writes them, onto a payload that has none)."""
    if not has_format2(p):
        graft_class_stats(rng, p)
    tables = has_tables(p)
    t, h = (_get(p, (P.LSH, Lsh.TABLES)), _get(p, (P.LSH, Lsh.BITS))) if tables else (None, None)
    d, c = _dim(p), len(p[P.LABELS])
    cs = p.get(P.CLASS_STATS)
    k = _get(cs, (ClassStatsKey.PROJECTION, A.SHAPE, 0)) if isinstance(cs, dict) else 1
    r = rng.randrange(10)
    if r in (0, 1):
        _f2_scoring(rng, p)
    elif r in (2, 3):
        _f2_releases(rng, p)
    elif r in (4, 5):
        name = rng.choice(CLASS_STATS)
        if rng.random() < 0.1:  # the map itself
            p[P.CLASS_STATS] = rng.choice([None, [], {}, "stats", 0, {n: None for n in CLASS_STATS}])
        else:
            expected = {ClassStatsKey.ORIGIN: (d,), ClassStatsKey.PROJECTION: (k, d), ClassStatsKey.SUMS: (c, k),
                        ClassStatsKey.COUNTS: (c,)}[name]
            _f2_array(rng, p, (P.CLASS_STATS, name), expected)
    elif r == 6 or r == 7 and not tables:
        if rng.random() < 0.2:
            p[P.PRIOR] = rng.choice([None, [], {}, "prior", {PriorKey.SOURCE: "x"}, {PriorKey.EMBEDDINGS: None}])
        elif rng.random() < 0.2 and isinstance(p.get(P.PRIOR), dict):
            p[P.PRIOR][PriorKey.SOURCE] = garbage(rng)
        else:
            _f2_array(rng, p, (P.PRIOR, PriorKey.EMBEDDINGS), (c, d))
    elif r == 7:
        _f2_array(rng, p, (P.LSH, Lsh.OFFSETS), (t, h))
    else:
        _valid_format2(rng, p, rng.randrange(4))
    return {}


# ----------------------------------------------------------------------------- format 3

#: A key the format-3 mutator sets in the payload to relabel the outer version; `structured`
#: takes it out before packing (it never reaches the reader).
OUTER_VERSION = "\x00fuzz: outer version"
#: Versions to relabel a 4.0 bundle with: majors 1 and 2 require vote tables, 3.x and 4.x
#: minors only add fields, 5.0 is newer than the reader.
VERSIONS = [[1, 2], [1, 0], [2, 0], [2, 1], [3, 0], [3, 1], [4, 0], [4, 1], [4, 99], [5, 0], [0, 9]]


def _add_tables(rng: random.Random, p: dict, lsh: bool = True, votes: bool = True) -> None:
    """Vote tables (4 tables of 2 bits, with offsets) and their release, consistent, for a payload
    without them; or only one of `lsh` and `votes`."""
    privacy = p[P.PRIVACY]
    t, h, d, c = 4, 2, _dim(p), len(p[P.LABELS])
    g = np.random.default_rng(rng.getrandbits(64))
    per_unit = _small_int(privacy.get(Privacy.MAX_RECORDS_PER_UNIT), 1)
    if lsh:
        p[P.LSH] = {Lsh.FAMILY: LSH_FAMILY, Lsh.TABLES: t, Lsh.BITS: h, Lsh.DIM: d, Lsh.SEED: 1,
                    Lsh.HYPERPLANES: f4(_unit(g.standard_normal((t, h, d)))),
                    Lsh.OFFSETS: f4(g.standard_normal((t, h)) * 0.01)}
    if votes:
        p[P.VOTES] = {A.DTYPE: "<i2", A.SHAPE: [t, 2**h, c],
                      A.DATA: g.integers(-50, 200, (t, 2**h, c)).astype("<i2").tobytes()}
    share = float(privacy[Privacy.EPSILON]) * rng.choice([0.1, 0.5])
    privacy[Privacy.RELEASES].append(_release(Statistic.VOTES, share, per_unit * t))
    _epsilon_from_releases(p)
    _consistent_scales(p)


def _drop_tables(p: dict) -> None:
    """The vote tables and their release gone (what the exporter writes without --votes-share)."""
    p.pop(P.LSH, None)
    p.pop(P.VOTES, None)
    privacy = p[P.PRIVACY]
    privacy[Privacy.RELEASES] = [r for r in privacy[Privacy.RELEASES] if r.get(Release.STATISTIC) != Statistic.VOTES]
    _epsilon_from_releases(p)
    _consistent_scales(p)


def op_format3(rng: random.Random, p: dict, base: Base) -> Splices:
    """What format 3.0 added: vote tables optional (and together), D from encoder.dim without
    them, nothing to classify with, the class statistics released as class_counts then
    class_sums, the headline release whose facts stand at the top level, the cosine_public rule,
    the linear prior boost, and the major version that decides whether tables are required
    (3.0's class statistics grafted first onto a payload that has none). About half of these
    keep the bundle valid."""
    if not isinstance(p.get(P.CLASS_STATS), dict) or not isinstance(_get(p, (P.PRIVACY, Privacy.RELEASES)), list):
        graft_class_stats(rng, p)
        p[OUTER_VERSION] = list(fmt.FORMAT_VERSION)
    privacy = p[P.PRIVACY]
    releases = privacy[Privacy.RELEASES]
    sc = p.get(P.SCORING)
    tables = has_tables(p)
    r = rng.randrange(9)
    if r == 0:  # the vote tables: both, one, or none
        choice = rng.randrange(4)
        if tables and choice == 0:
            _drop_tables(p)                                          # valid: the default bundle's shape
        elif tables and choice in (1, 2):
            p.pop(P.LSH if choice == 1 else P.VOTES)                 # "missing field 'lsh'" / 'votes'
        elif tables:
            p.pop(P.LSH), p.pop(P.VOTES)                             # the votes release stays listed
            _consistent_scales(p)
        else:
            _add_tables(rng, p, lsh=choice != 1, votes=choice != 2)  # valid with both; else the missing one
    elif r == 1:  # the major version decides whether the tables are required
        p[OUTER_VERSION] = rng.choice(VERSIONS)
        if tables and rng.random() < 0.3:
            _drop_tables(p)
    elif r == 2:  # the releases of 3.0
        named = {x.get(Release.STATISTIC): x for x in releases if isinstance(x, dict)}
        counts, sums = named.get(Statistic.CLASS_COUNTS), named.get(Statistic.CLASS_SUMS)
        choice = rng.randrange(6)
        if choice == 0 and counts is not None:  # one of the two dropped: the list misses a statistic
            releases.remove(rng.choice([counts, sums]) if sums is not None else counts)
        elif choice == 1 and counts is not None and sums is not None:  # merged into 2.x's one release: valid
            merged = _release(Statistic.CLASS_STATS, counts[Release.EPSILON] + sums[Release.EPSILON],
                              counts[Release.SENSITIVITY_L1] + sums[Release.SENSITIVITY_L1], grid=100, count_grid=1)
            releases[releases.index(counts)] = merged
            releases.remove(sums)
        elif choice == 2:  # another order: the headline of a bundle without tables moves
            rng.shuffle(releases)
        elif choice == 3 and sums is not None:  # the sums released in two parts: valid
            half = {**sums, Release.EPSILON: sums[Release.EPSILON] / 2}
            releases[releases.index(sums)] = half
            releases.insert(releases.index(half), dict(half))
        elif choice == 4:  # a statistic renamed
            entry = rng.choice(releases)
            if isinstance(entry, dict):
                entry[Release.STATISTIC] = rng.choice(STATISTIC_VALUES)
        else:  # a statistic the bundle does not hold, listed too: valid (it only overstates the spending)
            releases.insert(rng.randrange(len(releases) + 1),
                            _release(rng.choice([Statistic.CLASS_STATS, "prior"]), 0.1, 3))
        if rng.random() < 0.5:
            _epsilon_from_releases(p)
        if rng.random() < 0.7:
            _consistent_scales(p)
    elif r == 3:  # the headline release's facts at the top level
        others = [x for x in releases if isinstance(x, dict)]
        src = rng.choice(others) if others else {}
        choice = rng.randrange(4)
        if choice == 0:  # another release's (refused unless it is the headline)
            privacy[Privacy.SENSITIVITY_L1] = src.get(Release.SENSITIVITY_L1)
            privacy[Privacy.NOISE_SCALE] = src.get(Release.NOISE_SCALE)
        elif choice == 1:  # the scale just outside the tolerance of 1e-9, or just inside it
            privacy[Privacy.NOISE_SCALE] = float(privacy[Privacy.NOISE_SCALE]) * rng.choice([1 + 1e-6, 1 + 1e-12])
        elif choice == 2:  # sensitivity / epsilon of the whole budget, as a 1.x bundle would have it
            privacy[Privacy.NOISE_SCALE] = privacy[Privacy.SENSITIVITY_L1] / float(privacy[Privacy.EPSILON])
        else:  # both the release and the top level changed alike
            head = next((x for x in others if x.get(Release.STATISTIC) == Statistic.VOTES),
                        others[-1] if others else None)
            if head is not None:
                head[Release.NOISE_SCALE] = rng.choice([0.0, -5.0, math.inf, math.nan, 1e-300, 2.5])
                privacy[Privacy.NOISE_SCALE] = head[Release.NOISE_SCALE]
    elif r == 4:  # the rules of 3.0 and 4.0 in the scoring map
        if not isinstance(sc, dict):
            sc = p[P.SCORING] = Weights.measured().as_map()
        choice = rng.randrange(6)
        if choice == 5:  # 4.0's pull: absent, off, huge, mistyped
            sc[Scoring.DESCRIPTION_PULL] = rng.choice(F2_NUMBERS + [0.5, 1e-300, 1e6, 2e6, -1.0, "0.5", None, True])
            if rng.random() < 0.2:
                del sc[Scoring.DESCRIPTION_PULL]
        elif choice == 0:
            sc[Scoring.PRIOR_BOOST_RULE] = rng.choice(PRIOR_BOOST_RULE_VALUES)
        elif choice == 1:
            sc[Scoring.CENTROID_RULE] = rng.choice(CENTROID_RULE_VALUES[:4])
            sc[Scoring.CENTROID_TEMPERATURE] = rng.choice([1e-6, 0.003, 0.04, 1, 1e6])
        elif choice == 2:  # R in the linear boost
            sc[Scoring.PRIOR_RECORDS_PER_CLASS] = rng.choice(F2_NUMBERS)
        elif choice == 3 or not tables:  # the 2.x boost, named or not: valid
            sc[Scoring.PRIOR_BOOST_RULE] = "max"
            if rng.random() < 0.5:
                del sc[Scoring.PRIOR_BOOST_RULE]
        else:  # the linear boost without the class counts it needs
            p.pop(P.CLASS_STATS)
            sc[Scoring.PRIOR_BOOST_RULE] = "linear"
    elif r == 5:  # D: encoder.dim without tables (and lsh.dim with them)
        where = (P.LSH, Lsh.DIM) if tables and rng.random() < 0.5 else (P.ENCODER, EncoderKey.DIM)
        d = _small_int(_get(p, where), 384)
        _set_at(p, where, rng.choice([0, -1, 1, d + 1, d - 1, 2 * d, 2**31, str(d), float(d), None, True]))
    elif r == 6:  # nothing to classify with, or class statistics without their releases
        choice = rng.randrange(3)
        if choice == 0:
            p.pop(P.CLASS_STATS)
        elif choice == 1:
            p[P.CLASS_STATS] = None
        else:
            privacy.pop(Privacy.RELEASES)
            _consistent_scales(p)
    elif r == 7:  # valid: K records per person, another budget, no counts at all (the boost's cap)
        choice = rng.randrange(3)
        if choice == 0:
            per_person(p, rng.choice([2, 3, 50]))
        elif choice == 1:
            _scale_budget(p, rng.choice([1e-3, 0.1, 2.0, 1e3]))
        else:
            _f2_array(rng, p, (P.CLASS_STATS, ClassStatsKey.COUNTS), (len(p[P.LABELS]),))
    else:  # valid: a newer minor version with a field this reader does not know
        p[OUTER_VERSION] = [3, rng.choice([1, 7, 2**31])]
        p[rng.choice(["future_field", "calibration"])] = garbage(rng)
    return {}


def dense(rng: random.Random) -> bytes:
    """Raw msgpack: many tiny containers (an empty map is one byte, but a 64-byte Python object)."""
    unit = rng.choice([b"\x80", b"\x90", b"\xc0", b"\xa2ab", b"\x81\xa1k\x80", b"\x91\x90"])
    per = rng.choice([1, 15, 1000, 65535])
    head = bytes([0x90 | per]) if per < 16 else b"\xdc" + per.to_bytes(2, "big")
    groups = rng.choice([10, 1000, 100_000, 1_000_000]) // per + 1
    return b"\xdd" + groups.to_bytes(4, "big") + (head + unit * per) * groups


def op_amplify(rng: random.Random, p: dict, base: Base) -> Splices:
    return {rng.choice(base.paths): dense(rng)}


STRUCT_OPS: dict[str, Callable[[random.Random, dict, Base], Splices]] = {
    "field-type": op_field_type, "field-drop": op_field_drop, "shape": op_shape, "array-data": op_array_data,
    "dtype": op_dtype, "numeric": op_numeric, "strings": op_strings, "nested-deep": op_nested,
    "raw-fragment": op_fragment, "amplify": op_amplify, "valid-variant": op_valid, "resize": op_resize,
    "format2": op_format2, "format3": op_format3,
}


def structured(name: str) -> Callable[[random.Random, Base], bytes]:
    def mutate(rng: random.Random, base: Base) -> bytes:
        p = copy.deepcopy(base.payload)
        splices: Splices = {}
        ops = [STRUCT_OPS[name]] if name != "stacked" else \
            [rng.choice(list(STRUCT_OPS.values())) for _ in range(rng.randint(2, 4))]
        for op in ops:
            try:
                splices.update(op(rng, p, base))
            except (KeyError, TypeError, AttributeError, IndexError, ValueError):
                if name != "stacked":  # a single op on a fresh copy of the payload must work
                    raise
                # in a stack, an earlier op may have removed what this one changes: skip it
        head = _outer_head(base)
        if has_format2(p) and not base.format2:  # class statistics grafted onto a 1.x bundle: label it 4.0
            head[Outer.VERSION] = list(fmt.FORMAT_VERSION)
        if OUTER_VERSION in p:  # the format-3 mutator's relabelling
            head[Outer.VERSION] = p.pop(OUTER_VERSION)
        return seal(pack_spliced(p, splices), head)
    return mutate


def _outer_head(base: Base) -> dict[str, Any]:
    return {k: v for k, v in base.outer.items() if k in ("format", "version")}


# ----------------------------------------------------------------------------- byte-level mutators

INTERESTING = [0x00, 0xFF, 0x7F, 0x80, 0xC0, 0xC1, 0xC4, 0xC5, 0xC6, 0xC7, 0xC9, 0xCF, 0xD3, 0xD4, 0xD8, 0xD9, 0xDB,
               0xDC, 0xDD, 0xDE, 0xDF, 0x90, 0x9F, 0x8F, 0xA0, 0xBF, 0xE0]


def _position(rng: random.Random, doc: bytes, hs: list[Header]) -> int:
    """A byte position, biased towards msgpack headers (where types and lengths are)."""
    if hs and rng.random() < 0.6:
        h = rng.choice(hs)
        return min(len(doc) - 1, h.offset + rng.randrange(1 + h.width + 1))
    if rng.random() < 0.3:
        return rng.randrange(min(len(doc), 200))
    return rng.randrange(len(doc))


def _truncate(rng: random.Random, doc: bytes, hs: list[Header]) -> bytes:
    r = rng.randrange(4)
    if r == 0:
        return doc[: rng.randrange(len(doc))]
    if r == 1:
        return doc[: rng.randrange(min(len(doc), 64))]
    if r == 2:
        return doc[: len(doc) - rng.randrange(1, min(len(doc), 64) + 1)]
    return doc[: _position(rng, doc, hs)]


def _bitflip(rng: random.Random, doc: bytes, hs: list[Header]) -> bytes:
    b = bytearray(doc)
    for _ in range(rng.choice([1, 1, 1, 2, 4, 8])):
        b[_position(rng, doc, hs)] ^= 1 << rng.randrange(8)
    return bytes(b)


def _bytes(rng: random.Random, doc: bytes, hs: list[Header]) -> bytes:
    b = bytearray(doc)
    for _ in range(rng.choice([1, 1, 2, 4])):
        pos = _position(rng, doc, hs)
        if rng.random() < 0.7:
            b[pos] = rng.choice(INTERESTING)
        else:
            b[pos: pos + 4] = rng.choice([b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00", bytes(4)])
    return bytes(b)


def _chunks(rng: random.Random, doc: bytes, hs: list[Header]) -> bytes:
    i = _position(rng, doc, hs)
    n = rng.choice([1, 2, 3, 8, 100, 5000])
    r = rng.randrange(5)
    if r == 0:
        return doc[:i] + doc[i + n:]
    if r == 1:
        return doc[:i] + doc[i: i + n] + doc[i:]
    if r == 2:
        return doc[:i] + bytes([rng.choice(INTERESTING)]) * rng.choice([1, 4, 1000]) + doc[i:]
    if r == 3:
        return doc + rng.choice([b"\x00", b"\xc0", doc[:100], pack({"format": "dpedge-bundle"}),
                                 b"\xdd\xff\xff\xff\xff"])
    j = _position(rng, doc, hs)
    return doc[:i] + doc[j: j + n] + doc[i + n:]


def _header_length(rng: random.Random, doc: bytes, hs: list[Header]) -> bytes:
    h = rng.choice(hs)
    top = 256 ** h.width - 1 if h.width else 2**32 - 1
    n = rng.choice([0, 1, max(0, h.length - 1), h.length + 1, 2 * h.length, top, 2**31, 2**32 - 1,
                    len(doc), len(doc) * 8, rng.randrange(top + 1)])
    return set_header_length(doc, h, n)


BYTE_OPS = {"truncate": _truncate, "bitflip": _bitflip, "bytes": _bytes, "chunks": _chunks,
            "header-length": _header_length}


def raw(name: str) -> Callable[[random.Random, Base], bytes]:
    def mutate(rng: random.Random, base: Base) -> bytes:
        return BYTE_OPS[name](rng, base.data, base.outer_headers)
    return mutate


def in_payload(name: str) -> Callable[[random.Random, Base], bytes]:
    """A byte-level mutation of the payload, re-sealed so that the payload parser sees it."""
    def mutate(rng: random.Random, base: Base) -> bytes:
        body = BYTE_OPS[name](rng, base.outer["payload"], base.payload_headers)
        return seal(body, _outer_head(base))
    return mutate


def outer_fields(rng: random.Random, base: Base) -> bytes:
    """Structure-aware mutations of the outer map (format, version, checksum, payload)."""
    o = {k: (dict(v) if isinstance(v, dict) else v) for k, v in base.outer.items()}
    splices: Splices = {}
    r = rng.randrange(9)
    if r == 0:
        o["format"] = rng.choice(STRINGS + [None, 1, b"dpedge-bundle", ["dpedge-bundle"], "dpedge-bundle "])
    elif r == 1:
        o["version"] = rng.choice([[1, 0], [1, 1], [1, 99], [1, 2**64 - 1], [2, 0], [3, 0], [3, 5], [4, 0], [4, 5], [5, 0], [0, 0],
                                   [-1, 0], [2**64 - 1, 0],
                                   [1], [1, 1, 1], "1.1", 1.1, [1.0, 1], [True, 1], [1, None], None, {}, [[1], [1]]])
    elif r == 2:
        o["checksum"] = rng.choice([None, "sha256", {}, {"algorithm": "sha256"}, {"digest": o["checksum"]["digest"]},
                                    {"algorithm": "md5", "digest": o["checksum"]["digest"]},
                                    {"algorithm": "sha256", "digest": o["checksum"]["digest"][:31]},
                                    {"algorithm": "sha256", "digest": o["checksum"]["digest"].hex()},
                                    {"algorithm": "sha256", "digest": bytes(32)}])
    elif r == 3:
        o["payload"] = rng.choice([None, o["payload"].decode("latin-1"), [o["payload"]], b"", {"labels": []}])
    elif r == 4:
        o.pop(rng.choice(list(o)))
    elif r == 5:
        o[rng.choice(["extra", "future", "payload2"])] = garbage(rng)
    elif r == 6:  # keys in another order
        keys = list(o)
        rng.shuffle(keys)
        o = {k: o[k] for k in keys}
    elif r == 7:
        splices[(rng.choice(["format", "version", "checksum", "payload", "extra"]),)] = \
            fragment(rng) if rng.random() < 0.7 else dense(rng)
    else:  # a payload that is valid msgpack but not a map, re-sealed
        body = pack(rng.choice([[1, 2], "payload", 7, None, [base.payload]]))
        return seal(body, _outer_head(base))
    return pack_spliced(o, splices)


MUTATORS: dict[str, Callable[[random.Random, Base], bytes]] = {
    **{f"raw-{name}": raw(name) for name in BYTE_OPS},
    **{f"payload-{name}": in_payload(name) for name in BYTE_OPS},
    "outer-fields": outer_fields,
    **{name: structured(name) for name in STRUCT_OPS},
    "stacked": structured("stacked"),
}
KINDS = tuple(MUTATORS)


# ----------------------------------------------------------------------------- checking one input


def check_valid(b: fmt.Bundle) -> None:
    """Assert everything the format promises about a bundle the reader accepted."""
    assert isinstance(b, fmt.Bundle)
    labels = b.labels
    assert isinstance(labels, tuple) and len(labels) >= 2 and len(set(labels)) == len(labels)
    assert all(isinstance(x, str) and x for x in labels)
    if b.label_descriptions is not None:
        assert len(b.label_descriptions) == len(labels) and all(isinstance(x, str) for x in b.label_descriptions)
    privacy = b.privacy
    eps = privacy[Privacy.EPSILON]
    assert type(eps) in (int, float) and eps > 0 and math.isfinite(eps)
    assert privacy[Privacy.DELTA] == 0 and type(privacy[Privacy.DELTA]) in (int, float)
    k = privacy.get(Privacy.MAX_RECORDS_PER_UNIT)
    k = 1 if k is None else k
    assert type(k) is int and k >= 1
    assert type(privacy[Privacy.SENSITIVITY_L1]) is int
    scale = privacy[Privacy.NOISE_SCALE]
    assert type(scale) in (int, float) and scale > 0 and math.isfinite(scale)
    for key in (Privacy.MECHANISM, Privacy.NEIGHBOUR_RELATION, Privacy.PRIVACY_UNIT, Privacy.NOISE_SOURCE):
        assert isinstance(privacy[key], str)
    # The vote tables: all of lsh, hyperplanes and votes, or (format 3) none of them.
    assert (b.lsh is None) == (b.hyperplanes is None) == (b.votes is None)
    assert b.votes is not None or b.class_stats is not None, "nothing to classify with"
    d = b.encoder.dim
    if b.votes is not None:
        t, h = b.lsh[Lsh.TABLES], b.lsh[Lsh.BITS]
        for v in (t, h, b.lsh[Lsh.DIM]):
            assert type(v) is int
        assert 1 <= t <= fmt.MAX_TABLES and 1 <= h <= fmt.MAX_BITS and b.lsh[Lsh.DIM] == d
        assert b.hyperplanes.dtype == fmt.HYPERPLANES_DTYPE and b.hyperplanes.shape == (t, h, d)
        assert np.isfinite(b.hyperplanes).all()
        assert b.votes.dtype == fmt.VOTES_DTYPE and b.votes.shape == (t, 2**h, len(labels))
        assert b.tables == t and b.bits == h
        assert privacy[Privacy.SENSITIVITY_L1] == k * t
    else:
        assert b.offsets is None and b.tables == 0 and b.bits == 0
    e = b.encoder
    assert e.format in fmt.ENCODER_FORMATS and isinstance(e.model, bytes) and e.model
    assert isinstance(e.tokenizer_json, str) and type(e.max_length) is int and 2 <= e.max_length <= 8192
    assert type(e.dim) is int and e.dim >= 1 and isinstance(e.normalized, bool)
    assert set(e.inputs) <= {"input_ids", "attention_mask", "token_type_ids"}
    assert all(isinstance(x, str) for x in e.inputs) and isinstance(e.output, str) and isinstance(e.pooling, str)
    assert isinstance(e.facts, dict) and isinstance(b.exporter, dict)
    if e.check_text is not None:
        assert isinstance(e.check_text, str) and e.check_text.strip()
        assert e.check_embedding.dtype == fmt.HYPERPLANES_DTYPE and e.check_embedding.shape == (d,)
        assert np.isfinite(e.check_embedding).all() and 0.9 < float(np.linalg.norm(e.check_embedding)) < 1.1
    check_valid_format2(b)


def _number(v: Any) -> bool:
    return type(v) in (int, float) and math.isfinite(v)


def check_valid_format2(b: fmt.Bundle) -> None:
    """The promises of docs/bundle-format.md sections 3 and 9 about the fields of formats 2 and 3
    (every one of them optional)."""
    d, c = b.encoder.dim, len(b.labels)

    def f4_array(a: Any, shape: tuple[int, ...]) -> None:
        assert isinstance(a, np.ndarray) and a.dtype == fmt.HYPERPLANES_DTYPE and a.shape == shape, \
            (getattr(a, "dtype", type(a)), getattr(a, "shape", None), shape)
        assert np.isfinite(a).all()

    if b.offsets is not None:
        f4_array(b.offsets, (b.tables, b.bits))
    cs = b.class_stats
    if cs is not None:
        assert cs.projection.ndim == 2
        k = cs.projection.shape[0]
        assert 1 <= k <= d
        f4_array(cs.origin, (d,))
        f4_array(cs.projection, (k, d))
        f4_array(cs.sums, (c, k))
        f4_array(cs.counts, (c,))
    if b.prior is not None:
        f4_array(b.prior, (c, d))
    sc = b.scoring
    if sc is not None:
        assert isinstance(sc, dict)
        for name, v in sc.items():
            assert isinstance(v, str) or (_number(v) and v >= 0), (name, v)
        for name in SCORING_NUMBERS:
            assert name not in sc or (_number(sc[name]) and sc[name] <= SCORING_MAX), (name, sc[name])
        for name in SCORING_TEMPERATURES:
            assert name not in sc or sc[name] >= TEMPERATURE_MIN, (name, sc[name])
        rule = sc.get(Scoring.CENTROID_RULE, CENTROID_RULES[0])
        assert rule in CENTROID_RULES, rule
        if rule == "gaussian":
            assert _number(sc.get(Scoring.CENTROID_CLIP_L1)) and sc[Scoring.CENTROID_CLIP_L1] > 0
        boost = sc.get(Scoring.PRIOR_BOOST_RULE, PRIOR_BOOST_RULES[0])
        assert boost in PRIOR_BOOST_RULES, boost
        assert boost != "linear" or cs is not None, "the linear prior boost without class counts"
    privacy = b.privacy
    releases = privacy.get(Privacy.RELEASES)
    assert releases is not None or cs is None, "class statistics without privacy.releases"
    if releases is not None:
        assert isinstance(releases, list)
        names, total = [], 0.0
        for r in releases:
            assert isinstance(r, dict)
            assert isinstance(r[Release.STATISTIC], str) and isinstance(r[Release.MECHANISM], str)
            assert type(r[Release.SENSITIVITY_L1]) is int and r[Release.SENSITIVITY_L1] >= 1
            assert _number(r[Release.EPSILON]) and r[Release.EPSILON] > 0
            assert _number(r[Release.NOISE_SCALE]) and math.isclose(
                r[Release.NOISE_SCALE], r[Release.SENSITIVITY_L1] / r[Release.EPSILON], rel_tol=PRIVACY_RTOL)
            names.append(r[Release.STATISTIC])
            total += float(r[Release.EPSILON])
        assert b.votes is None or Statistic.VOTES in names, names
        assert cs is None or Statistic.CLASS_STATS in names \
            or {Statistic.CLASS_COUNTS, Statistic.CLASS_SUMS} <= set(names), names
        # Sequential composition: the releases spend the bundle's epsilon, no more.
        assert math.isclose(total, float(privacy[Privacy.EPSILON]), rel_tol=PRIVACY_RTOL), (total, privacy)
        if releases:  # the top-level facts are the headline release's
            head = next((r for r in releases if r[Release.STATISTIC] == Statistic.VOTES), releases[-1])
            assert privacy[Privacy.SENSITIVITY_L1] == head[Release.SENSITIVITY_L1]
            assert math.isclose(privacy[Privacy.NOISE_SCALE], head[Release.NOISE_SCALE], rel_tol=PRIVACY_RTOL)
    if not releases:  # format 1.x: the scale of the whole budget
        assert math.isclose(privacy[Privacy.NOISE_SCALE], privacy[Privacy.SENSITIVITY_L1] / privacy[Privacy.EPSILON],
                            rel_tol=PRIVACY_RTOL)


def score_queries(b: fmt.Bundle) -> np.ndarray:
    """Unit float32 embeddings, as the encoder gives them, to score an accepted bundle with: the
    exporter's embedding of the check text, the label descriptions' embeddings, a fixed random
    direction and the first axis both ways."""
    d = b.encoder.dim
    rows = []
    if b.encoder.check_embedding is not None:
        rows.append(np.asarray(b.encoder.check_embedding, np.float64))
    if b.prior is not None:
        rows += [r for r in np.asarray(b.prior[:3], np.float64)]
    axis = np.zeros(d)
    axis[0] = 1.0
    rows += [np.random.default_rng(d).standard_normal(d), axis, -axis]
    x = np.stack(rows)
    norms = np.linalg.norm(x, axis=1)
    x = x[(norms > 1e-6) & np.isfinite(norms)]
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def check_scoring(b: fmt.Bundle) -> str:
    """Score an accepted bundle in every mode through the real Scorer; "" if all is well, else
    what went wrong. A mode the bundle has no statistics for may be refused with ValueError
    (Classifier.load reports it as InputError); the runtime's own errors (DpedgeError) are clear
    errors too. Any other exception, a refusal of a mode the bundle supports, scores of the
    wrong shape, or a NaN or infinite score is a finding."""
    x = score_queries(b)
    for mode in MODES:
        unavailable = (mode == "centroids" and b.class_stats is None) or (mode == "prior" and b.prior is None) \
            or (mode == "votes" and b.votes is None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                scorer = Scorer.from_bundle(b, mode=mode)
            except DpedgeError:
                continue
            except ValueError as exc:
                if unavailable:
                    continue
                return (f"Scorer.from_bundle(mode={mode!r}) refused an accepted bundle (Classifier.load would say "
                        f"InputError: {exc}):\n" + traceback.format_exc(limit=-3))
            except Exception:  # noqa: BLE001
                return (f"Scorer.from_bundle(mode={mode!r}) failed on an accepted bundle:\n"
                        + traceback.format_exc(limit=-3))
            try:
                s = scorer.scores(x)
            except DpedgeError:
                continue
            except Exception:  # noqa: BLE001
                return f"scoring (mode={mode!r}) failed on an accepted bundle:\n" + traceback.format_exc(limit=-3)
        expected = (len(x), len(b.labels))
        if not isinstance(s, np.ndarray) or s.shape != expected:
            return f"scoring (mode={mode!r}) returned shape {getattr(s, 'shape', type(s))}, expected {expected}"
        if not np.isfinite(s).all():
            kind = "NaN" if np.isnan(s).any() else "infinite"
            warned = "; ".join(sorted({f"{w.category.__name__}: {w.message} at {Path(w.filename).name}:{w.lineno}"
                                       for w in caught})) or "no warning"
            # The last line names the failure without the input's numbers (findings are grouped by it).
            return (f"{int((~np.isfinite(s)).sum())} of {s.size} scores not finite; scoring={_scoring_summary(b)}, "
                    f"epsilon={b.privacy['epsilon']!r}\n"
                    f"scoring (mode={mode!r}) returned {kind} scores on an accepted bundle ({warned})")
    return ""


def _scoring_summary(b: fmt.Bundle) -> str:
    sc = b.scoring
    if sc is None:
        return "None"
    return "{" + ", ".join(f"{k}: {_SHORT.repr(v)}" for k, v in sc.items() if k != "rule") + "}"


_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 40


@dataclass
class Outcome:
    result: str            # "valid", "BundleError" or a finding: other/invalid/describe/score/slow/memory/message
    seconds: float
    peak: int              # peak traced bytes above what was allocated before the call
    size: int
    detail: str = ""
    score_seconds: float = 0.0   # scoring the accepted bundle in every mode (check_scoring)

    @property
    def finding(self) -> bool:
        return self.result not in ("valid", "BundleError")


@dataclass
class Limits:
    max_seconds: float = 2.0
    mem_ratio: float = 4.0
    mem_slack: int = 4 << 20
    score: bool = True     # score accepted bundles in every mode (check_scoring)


def _read(blob: bytes, via_file: Path | None) -> tuple[fmt.Bundle | None, str, str]:
    """The reader on one input: (bundle or None, "valid" / "BundleError" / "other", detail)."""
    try:
        return (fmt.load(via_file) if via_file is not None else fmt.unpack(blob)), "valid", ""
    except BundleError as exc:
        return None, "BundleError", str(exc)
    except BaseException as exc:  # noqa: BLE001 - anything else is what we are looking for
        if isinstance(exc, KeyboardInterrupt):
            raise
        return None, "other", "".join(traceback.format_exception(exc, limit=-6)).strip()


def run_one(blob: bytes, limits: Limits, *, via_file: Path | None = None) -> Outcome:
    """Feed one input to the reader and classify what happened.

    The reader runs twice: once timed, then once with tracemalloc on for its peak allocation
    (numpy buffers included). Tracing slows a parse of many small objects up to ten times, so
    the timed run is untraced; and memory is traced only while the reader runs, not while the
    mutators build the input.
    """
    if via_file is not None:
        via_file.write_bytes(blob)
    t0 = time.perf_counter()
    b, result, detail = _read(blob, via_file)
    seconds = time.perf_counter() - t0
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    _read(blob, via_file)
    peak = tracemalloc.get_traced_memory()[1] - before
    if not tracing:
        tracemalloc.stop()
    if result == "valid":
        try:
            check_valid(b)
        except AssertionError:
            result, detail = "invalid", "accepted a bundle that breaks an invariant:\n" + traceback.format_exc(limit=-2)
        try:  # what `--info` and `exporter inspect` do with an accepted bundle
            info = bundle_info(b)
            json.dumps(info, ensure_ascii=False, indent=2)
            format_info(info)
        except Exception:  # noqa: BLE001
            result, detail = "describe", "describing an accepted bundle failed:\n" + traceback.format_exc(limit=-3)
    score_seconds = 0.0
    if result == "valid" and limits.score:  # what a device does next: score queries against the bundle
        t1 = time.perf_counter()
        problem = check_scoring(b)
        score_seconds = time.perf_counter() - t1
        if problem:
            result, detail = "score", problem
    del b
    if result == "BundleError" and (not detail or len(detail) > MAX_MESSAGE_CHARS or "\n" in detail):
        result = "message"
        detail = f"unclear BundleError message ({len(detail)} chars): {detail[:300]!r}"
    if seconds > limits.max_seconds:
        result, detail = "slow", f"took {seconds:.2f} s (limit {limits.max_seconds} s); {result}: {detail[:200]}"
    elif score_seconds > limits.max_seconds:
        result, detail = "slow", (f"scoring took {score_seconds:.2f} s in all (limit {limits.max_seconds} s); "
                                  f"{result}: {detail[:200]}")
    elif peak > limits.mem_ratio * len(blob) + limits.mem_slack:
        result, detail = "memory", (f"peak traced allocation {peak / 2**20:.1f} MiB for a {len(blob) / 2**20:.2f} MiB "
                                    f"input (limit {limits.mem_ratio}x + {limits.mem_slack >> 20} MiB); {result}: "
                                    f"{detail[:200]}")
    return Outcome(result, seconds, peak, len(blob), detail, score_seconds)


def make_input(rng: random.Random, kind: str, base: Base) -> bytes:
    return MUTATORS[kind](rng, base)


# ----------------------------------------------------------------------------- special files

SPECIAL_CHILD = r"""
import resource, sys
from runtime import bundle
from runtime.errors import BundleError
vm = next(int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmSize:")) * 1024
resource.setrlimit(resource.RLIMIT_AS, (vm + (1 << 30), vm + (1 << 30)))  # 1 GiB more than after the imports
try:
    bundle.load(sys.argv[1])
    print("valid")
except BundleError as exc:
    print("BundleError", exc)
except BaseException as exc:
    print("other", type(exc).__name__, exc)
"""


def special_files(tmp: Path) -> list[tuple[str, str]]:
    """`load` on things that are not bundle files, each in a child allowed 1 GiB more address space."""
    (tmp / "empty.dpedge").write_bytes(b"")
    fifo = tmp / "fifo.dpedge"
    if not fifo.exists():
        os.mkfifo(fifo)
    (tmp / "loop").unlink(missing_ok=True)
    (tmp / "loop").symlink_to(tmp / "loop")
    cases = [("missing file", tmp / "missing.dpedge"), ("directory", tmp), ("empty file", tmp / "empty.dpedge"),
             ("symlink loop", tmp / "loop"), ("/dev/null", Path("/dev/null")), ("/dev/zero", Path("/dev/zero")),
             ("FIFO with no writer", fifo)]
    out = []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for name, path in cases:
        try:
            r = subprocess.run([sys.executable, "-c", SPECIAL_CHILD, str(path)], capture_output=True, text=True,
                               timeout=10, env=env, cwd=ROOT)
            line = r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else \
                f"other: exit status {r.returncode}: {r.stderr.strip()[-200:]}"
        except subprocess.TimeoutExpired:
            line = "other: hang (no answer in 10 s)"
        out.append((name, line))
    return out


# ----------------------------------------------------------------------------- the run


@dataclass
class Stats:
    inputs: int = 0
    outcomes: Counter = field(default_factory=Counter)
    max_seconds: float = 0.0
    max_ratio: float = 0.0
    max_peak: int = 0
    scored: int = 0
    max_score_seconds: float = 0.0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", type=Path, default=ROOT / "models" / "quickstart.dpedge")
    ap.add_argument("--inputs", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--full-every", type=int, default=500,
                    help="every N'th input mutates the full-size bundle (0: never)")
    ap.add_argument("--load-every", type=int, default=50, help="every N'th input goes through load() on a file")
    ap.add_argument("--max-seconds", type=float, default=2.0)
    ap.add_argument("--mem-ratio", type=float, default=4.0)
    ap.add_argument("--mem-slack-mib", type=float, default=4.0)
    ap.add_argument("--findings", type=Path, help="save each finding's input here")
    ap.add_argument("--only", type=int, help="run just input number I (to reproduce a finding)")
    ap.add_argument("--no-special", action="store_true", help="skip the special-file cases")
    ap.add_argument("--no-score", action="store_true",
                    help="do not score accepted bundles (Scorer.from_bundle in every mode); only read them")
    args = ap.parse_args(argv)
    limits = Limits(args.max_seconds, args.mem_ratio, int(args.mem_slack_mib * 2**20), score=not args.no_score)

    t0 = time.perf_counter()
    full = make_base("full", args.bundle.read_bytes())
    tiny = make_base("tiny", tiny_bundle(full.data))
    for b in (full, tiny):  # the bases themselves must be valid and score cleanly
        bundle = fmt.unpack(b.data)
        check_valid(bundle)
        problem = check_scoring(bundle)
        if problem:
            print(f"the {b.name} base does not score cleanly: {problem}", file=sys.stderr)
            return 2
    print(f"# bases: {args.bundle} (format {full.version}, {len(full.data) / 2**20:.1f} MiB), tiny copy "
          f"({len(tiny.data) / 1024:.1f} KiB); seed {args.seed}; {len(KINDS)} mutators; "
          f"scoring {'off' if args.no_score else 'on'}", flush=True)

    stats: dict[str, Stats] = defaultdict(Stats)
    findings: list[tuple[int, str, str, Outcome]] = []
    seen_details: set[str] = set()
    harness_errors = 0
    indices = [args.only] if args.only is not None else range(args.inputs)
    tmpdir = Path(tempfile.mkdtemp(prefix="dpedge-fuzz-"))
    via = tmpdir / "input.dpedge"
    faulthandler.enable()
    # The hang watchdog: SIGALRM's default action ends the process, and faulthandler first dumps
    # every thread's stack from inside the signal handler, so a hang in C code is shown too.
    faulthandler.register(signal.SIGALRM, all_threads=True, chain=True)
    start = time.perf_counter()
    last_note = start
    try:
        for i in indices:
            rng = random.Random(f"{args.seed}:{i}")
            kind = rng.choice(KINDS)
            base = full if args.full_every and i % args.full_every == args.full_every - 1 else tiny
            try:
                blob = make_input(rng, kind, base)
            except Exception:  # a defect of this harness, not of the reader: count it, say it once
                harness_errors += 1
                if harness_errors == 1:
                    print(f"HARNESS ERROR making input {i} ({kind}):\n{traceback.format_exc()}", flush=True)
                continue
            use_file = args.load_every and i % args.load_every == args.load_every - 1
            signal.alarm(HANG_SECONDS)
            out = run_one(blob, limits, via_file=via if use_file else None)
            signal.alarm(0)
            for key in (kind, f"(base {base.name})", "(via load)" if use_file else "(via unpack)", "total"):
                s = stats[key]
                s.inputs += 1
                s.outcomes[out.result] += 1
                s.max_seconds = max(s.max_seconds, out.seconds)
                s.scored += out.score_seconds > 0
                s.max_score_seconds = max(s.max_score_seconds, out.score_seconds)
                if out.size >= RATIO_MIN_SIZE:  # below this the slack, not the ratio, is the bound
                    s.max_ratio = max(s.max_ratio, out.peak / out.size)
                s.max_peak = max(s.max_peak, out.peak)
            if out.finding:
                findings.append((i, kind, base.name, out))
                if args.findings:
                    args.findings.mkdir(parents=True, exist_ok=True)
                    (args.findings / f"{args.seed}-{i}-{kind}.dpedge").write_bytes(blob)
                first_line = out.detail.strip().splitlines()[-1] if out.detail.strip() else out.result
                if first_line not in seen_details:
                    seen_details.add(first_line)
                    print(f"FINDING input {i} ({kind}, {base.name} base, {out.result}): {out.detail}", flush=True)
            now = time.perf_counter()
            if now - last_note > 30:
                done = stats["total"].inputs
                sys.stderr.write(f"  {done:,} inputs, {done / (now - start):.0f}/s, {len(findings)} findings\n")
                last_note = now
    finally:
        signal.alarm(0)
        faulthandler.unregister(signal.SIGALRM)
        faulthandler.disable()
        via.unlink(missing_ok=True)
    elapsed = time.perf_counter() - start

    cols = ["valid", "BundleError", "other", "invalid", "describe", "score", "slow", "memory", "message"]
    print()
    print(f"| mutator | inputs | {' | '.join(cols)} | max ms | max mem/input (inputs >= 1 MiB) |")
    print("|---|" + "---:|" * (len(cols) + 3))
    order = [k for k in KINDS if k in stats] + [k for k in stats if k.startswith("(")] + ["total"]
    for k in order:
        s = stats[k]
        counts = " | ".join(f"{s.outcomes[c]:,}" for c in cols)
        name = f"**{k}**" if k == "total" else k
        ratio = f"{s.max_ratio:.2f}x" if s.max_ratio else "-"
        print(f"| {name} | {s.inputs:,} | {counts} | {1000 * s.max_seconds:.1f} | {ratio} |")
    total = stats["total"]
    print()
    print(f"inputs         {total.inputs:,} in {elapsed:.0f} s ({total.inputs / elapsed:.0f} inputs/s, "
          f"setup {start - t0:.1f} s)")
    print(f"slowest input  {1000 * total.max_seconds:.1f} ms (limit {1000 * limits.max_seconds:.0f} ms)")
    if limits.score:
        print(f"scoring        {total.scored:,} accepted bundles scored in {len(MODES)} modes; slowest "
              f"{1000 * total.max_score_seconds:.1f} ms")
    print(f"memory         largest peak traced allocation {total.max_peak / 2**20:.1f} MiB; largest peak/input "
          f"{total.max_ratio:.2f}x (limit {limits.mem_ratio}x + {limits.mem_slack >> 20} MiB)")
    special_bad = 0
    if not args.no_special and args.only is None:
        print("special files given to load():")
        for name, line in special_files(tmpdir):
            bad = not line.startswith("BundleError")
            special_bad += bad
            print(f"  {'FINDING ' if bad else ''}{name:<20} {line}")
    print(f"findings       {len(findings) + special_bad}" + (f" ({len(seen_details)} distinct)" if findings else ""))
    if harness_errors:
        print(f"harness errors {harness_errors} inputs could not be made (a bug in this script)")
    return 1 if findings or special_bad or harness_errors else 0


if __name__ == "__main__":
    sys.exit(main())
