"""Properties of the format-1.0 reader, writer and scorer, on documents drawn from the schema
(tests/bundle_strategies.py) and on hostile inputs made from them:

(a) `runtime.bundle.unpack` raises nothing but a one-line BundleError on any mutated input, and
    returns within a time limit;
(b) finite scores by construction (relation "finite" of runtime/bundle/schema.py): every bundle
    drawn within every stated bound is accepted, and `runtime.scoring.Scorer` scores it with
    finite numbers in every mode, on random unit queries and on the queries closest to
    trouble (the origin's direction, the descriptions', the hyperplanes', a basis vector);
(c) the round trip: pack(unpack(x)) == x, and pack(load(file of x)) == x, for every document
    x the writer could have written.

The defaults are CI's bounded run (derandomized, fixed max_examples: the same examples every
time). ``DPEDGE_FUZZ=long`` runs 50 times as many random examples with Hypothesis' database:

    DPEDGE_FUZZ=long .venv/bin/python -m pytest tests/test_bundle_properties.py -p no:randomly

The corners the strategies' array budget leaves out (4096 labels, 2^24 buckets, a 4096 x 4096
projection, every scalar at its bound) are built explicitly in `test_scores_are_finite_at_the_corners`.
What the properties found in runtime/ is at the end, one regression test each;
bundle_strategies.KNOWN_FINDINGS lets property (a) explore past a finding while it is open.
"""

from __future__ import annotations

import math
import os
import signal
import tempfile
import traceback
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import bundle_strategies as bs
from conftest import ROOT
from runtime import bundle
from runtime.bundle import schema, wording
from runtime.bundle.schema import Key
from runtime.errors import BundleError
from runtime.scoring import MODES, Scorer

LONG = os.environ.get("DPEDGE_FUZZ", "") == "long"
#: CI: the same examples every run, no example database; a deadline far above a typical
#: example (tens of milliseconds) so that two busy cores do not make it flaky.
BASE = settings(max_examples=1, derandomize=not LONG, database=settings.default.database if LONG else None,
                deadline=timedelta(seconds=5), print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
                phases=tuple(Phase) if LONG else (Phase.explicit, Phase.generate, Phase.shrink))
#: A hard limit per input that also stops a pure-Python loop (the deadline only judges examples
#: that return).
HANG_SECONDS = 30


def examples(n: int) -> settings:
    return settings(BASE, max_examples=n * 50 if LONG else n)


class Hang(BaseException):
    """Raised by the alarm: a BaseException, so that no `except Exception` in the reader eats it."""


@contextmanager
def time_limit(seconds: float):
    def alarm(signum, frame):
        raise Hang(f"no answer after {seconds} s:\n{''.join(traceback.format_stack(frame))}")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# --------------------------------------------------------------------------- the bases


@pytest.fixture(scope="module")
def tiny_docs(dp_bundle, tables_bundle, random_bundle) -> list[dict]:
    """The three real ONNX bundles (class statistics; with vote tables; vote tables only), shrunk."""
    return [bs.tiny_document(p.read_bytes()) for p in (dp_bundle, tables_bundle, random_bundle)]


@pytest.fixture(scope="module")
def encoders(tiny_docs) -> list[bs.EncoderBytes]:
    """The real encoder shrunk (ONNX), a TFLite one, and the corpus's tiny MPNet (1.2) shrunk."""
    mpnet = (ROOT / "format" / "1" / "corpus" / "accept" / "mpnet.dpedge").read_bytes()
    return bs.encoders_of(tiny_docs[0], bs.tiny_document(mpnet))


def test_tiny_documents_are_valid_and_keep_the_real_parts(tiny_docs, dp_bundle):
    """The shrunk bundles load, still hold an initializer in encoder.weights and the real
    labels, and are small enough to fuzz."""
    real = bundle.load(dp_bundle)
    for doc in tiny_docs:
        blob = bs.seal(doc)
        b = bundle.unpack(blob)
        assert len(blob) < 64 * 1024 and b.labels == real.labels
        assert b.encoder.weights and schema.WEIGHTS_LOCATION.encode() in b.encoder.model
    assert bundle.unpack(bs.seal(tiny_docs[1])).votes is not None
    assert bundle.unpack(bs.seal(tiny_docs[2])).class_sums is None


# --------------------------------------------------------------------------- (b) and its premise


def unit_rows(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a, np.float64).reshape(-1, a.shape[-1])
    n = np.linalg.norm(a, axis=1, keepdims=True)
    return a[(n[:, 0] > 0) & np.isfinite(n[:, 0])] / n[(n[:, 0] > 0) & np.isfinite(n[:, 0])]


def queries(b: bundle.Bundle, random_units: np.ndarray) -> np.ndarray:
    """Random unit queries, and the unit directions nearest to a division by a tiny norm: the
    origin's (z = P (x - origin) near 0), the descriptions', the projection's rows, the
    hyperplanes', the check embedding's and the first basis vector."""
    d = b.encoder.dim
    special = [np.eye(d)[:1], unit_rows(b.encoder.check_embedding[None])]
    for a in (b.origin, b.prior, b.projection, b.hyperplanes):
        if a is not None:
            special.append(unit_rows(a)[:4])
    return np.concatenate([random_units, *special])


def assert_scores_finite(b: bundle.Bundle, x: np.ndarray) -> None:
    """Every mode the bundle can score in gives finite (n, C) scores; a mode it cannot score
    in (no statistics for it) is refused with ValueError and only then."""
    for mode in MODES:
        has = {"blend": True, "votes": b.votes is not None, "centroids": b.class_sums is not None,
               "prior": b.prior is not None, "head": b.head is not None}[mode]
        if not has:
            with pytest.raises(ValueError, match="to score with"):
                Scorer(b, mode)
            continue
        s = Scorer(b, mode).scores(x)
        assert s.shape == (len(x), len(b.labels))
        bad = ~np.isfinite(s)
        assert not bad.any(), f"mode {mode}: non-finite scores {s[bad][:4]} for queries {np.argwhere(bad)[:4].tolist()}"
        # and a distribution over the labels
        assert (s >= 0).all() and np.allclose(s.sum(axis=1), 1.0), f"mode {mode}: rows sum to {s.sum(axis=1)[:4]}"


def random_unit_queries(data: st.DataObject, d: int) -> np.ndarray:
    raw = data.draw(hnp.arrays(np.float64, (3, d), elements=st.floats(-1, 1), fill=st.floats(-1, 1)), label="queries")
    return np.stack([bs.unit_vector(r) for r in raw])


@examples(40)
@given(data=st.data())
def test_documents_within_every_bound_are_accepted_and_score_finitely(encoders, data):
    """(b): the reader accepts every drawn document (so the strategies and the reader agree on
    the format) and every score is finite in every mode."""
    doc = data.draw(bs.documents(encoders), label="document")
    blob = bs.seal(doc)
    with time_limit(HANG_SECONDS):
        try:
            b = bundle.unpack(blob)
        except BundleError as exc:
            pytest.fail(f"a document within every stated bound was refused: {exc}")
        assert_scores_finite(b, queries(b, random_unit_queries(data, b.encoder.dim)))


def corner(encoders, *, c: int, d: int, k: int | None, t: int | None, h: int | None, described: bool = True,
           value: float = float(np.finfo(np.float32).max)) -> bs.Params:
    """A bundle at the bounds: every epsilon at its minimum, K, R, the pull and the grid's steps
    at their maximum, temperatures at 1e-3, floats at +-``value`` (alternating signs), integers
    at their dtype's extremes."""
    def sign(*shape: int) -> np.ndarray:  # +value, -value, +value... along every axis (a checkerboard)
        parity = sum(np.arange(n, dtype=np.uint8).reshape([-1 if i == j else 1 for j in range(len(shape))]) % 2
                     for i, n in enumerate(shape)) % 2
        return np.where(parity == 0, np.float32(value), np.float32(-value))

    per_unit = schema.MAX_RECORDS_PER_UNIT
    names = [n for n, on in ((Key.CLASS_COUNTS, k), (Key.CLASS_SUMS, k), (Key.VOTES, t)) if on]
    steps = (1, float(schema.MAX_SENSITIVITY // per_unit))  # K x round(grid x clip) at most 2^31 - 1
    releases = bs.privacy_facts(per_unit, {n: schema.EPSILON_MIN for n in names}, steps if k else None, t or 0)
    for name, facts in releases.items():
        facts[Key.MECHANISM] = "m"
    i32, i16 = np.iinfo(np.int32), np.iinfo(np.int16)
    p = bs.Params(encoder=encoders[1], labels=[f"l{i}" for i in range(c)],
                  descriptions=[f"d{i}" for i in range(c)] if described else None,
                  privacy={Key.EPSILON: math.fsum(f[Key.EPSILON] for f in releases.values()), Key.DELTA: 0.0,
                           Key.MAX_RECORDS_PER_UNIT: per_unit,
                           "neighbour_relation": wording.neighbour_relation(per_unit, "u"),
                           "privacy_unit": wording.privacy_unit(per_unit),
                           "noise_source": "s", "public_inputs": []},
                  releases=releases, check_embedding=np.eye(d, dtype=np.float32)[0],
                  encoder_fields={"max_length": 8192, "text_prefix": "", "inputs": ["input_ids"], "output": "o",
                                  "check_text": "c"})
    if k:
        releases[Key.CLASS_COUNTS][Key.VALUES] = np.full(c, i32.min, np.int32)  # N = max(1, negative) = 1
        releases[Key.CLASS_SUMS][Key.VALUES] = np.where(sign(c, k) > 0, i32.max, i32.min).astype(np.int32)
        p.origin, p.projection = sign(d), sign(k, d)
        p.scoring = {"centroid_temperature": schema.TEMPERATURE_MIN, "prior_temperature": schema.TEMPERATURE_MIN,
                     "prior_records_per_class": 1e6, "description_pull": 1e3}
        p.prior = sign(c, d) if described else None
    if t:
        releases[Key.VOTES][Key.VALUES] = np.where(sign(t, 2**h, c) > 0, i16.max, i16.min).astype(np.int16)
        p.hyperplanes, p.offsets = sign(t, h, d), -sign(t, h)
    return p


CORNERS = {
    "D and k at 4096": dict(c=2, d=4096, k=4096, t=None, h=None),
    "4096 classes with descriptions": dict(c=4096, d=4, k=2, t=1, h=1),
    "1024 tables": dict(c=2, d=2, k=None, t=1024, h=1),
    "24 bits": dict(c=2, d=1, k=None, t=1, h=24),
    "every release at the bounds": dict(c=3, d=64, k=64, t=2, h=3),
    "tiny values": dict(c=3, d=64, k=64, t=2, h=3, value=float(np.finfo(np.float32).smallest_subnormal)),
}


@pytest.mark.parametrize("name", list(CORNERS))
def test_scores_are_finite_at_the_corners(encoders, name):
    """(b) where the strategies' array budget does not reach: each symbol of DIMS and every
    scalar at its bound, arrays at the float32 and integer extremes."""
    b = bundle.unpack(bs.seal(bs.build_document(corner(encoders, **CORNERS[name]))))
    rng = np.random.default_rng(0)
    x = np.stack([bs.unit_vector(r) for r in rng.standard_normal((3, b.encoder.dim))])
    assert_scores_finite(b, queries(b, x))


# --------------------------------------------------------------------------- (a)

@examples(150)
@given(data=st.data())
def test_mutated_inputs_raise_only_bundle_error(tiny_docs, encoders, data):
    """(a): fields dropped, retyped, out of bounds, NaN; repeated keys, nesting, extension types,
    lying headers; look-alike labels, drifting privacy facts, JSON-level tokenizer edits,
    model bytes; truncation and bit flips with and without a resealed digest. The reader
    refuses with one short line, or accepts a bundle that then scores finitely."""
    base = data.draw(st.one_of(st.sampled_from(tiny_docs), bs.documents(encoders, budget=16 * 1024)), label="base")
    what, blob = bs.mutate(base, bs.Draws(data.draw))
    note(f"mutation: {what}; {len(blob)} bytes")
    with time_limit(HANG_SECONDS):
        try:
            b = bundle.unpack(blob)
        except BundleError as exc:
            message = str(exc)
            assert "\n" not in message and 0 < len(message) < 1000, message
            return
        except Exception as exc:  # noqa: BLE001 - anything else is a finding, unless it is a known one
            if bs.is_known_finding(exc):  # an open finding, with its own test
                return
            raise
        assert_scores_finite(b, queries(b, random_unit_queries(data, b.encoder.dim)))


@examples(60)
@given(data=st.data())
def test_flipped_bytes_without_a_new_digest_are_corrupted(tiny_docs, data):
    """Any change to the bytes a digest covers, the digest left as it was, is the one
    'checksum mismatch' error (the reader hashes before it parses)."""
    blob = bytearray(bs.seal(data.draw(st.sampled_from(tiny_docs))))
    at = data.draw(st.integers(0, len(blob) - schema.TAIL_BYTES - 1))
    blob[at] ^= 1 << data.draw(st.integers(0, 7))
    with pytest.raises(BundleError, match="checksum mismatch"):
        bundle.unpack(bytes(blob))


# --------------------------------------------------------------------------- (c)


@examples(40)
@given(data=st.data())
def test_round_trip(encoders, data):
    """(c): pack(unpack(x)) == x for x as the writer writes it (float64 floats, writer order, no
    empty open map, no ``requires``: their own cases are below), and through a file: load()
    leaves the ONNX weights in it and pack() reads them back."""
    x = bs.seal(data.draw(bs.documents(encoders, canonical=True)))
    assert bundle.pack(bundle.unpack(x)) == x
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "x.dpedge"
        path.write_bytes(x)
        b = bundle.load(path)
        assert bundle.pack(b) == x


def test_round_trip_of_the_exporters_bundles(dp_bundle, tables_bundle, random_bundle):
    for path in (dp_bundle, tables_bundle, random_bundle):
        x = path.read_bytes()
        assert bundle.pack(bundle.unpack(x)) == x and bundle.pack(bundle.load(path)) == x


def _with(doc: dict, **extra) -> dict:
    """The document with extra top-level fields, each where FIELDS puts it."""
    order = [f.path for f in schema.FIELDS if "." not in f.path]
    merged = {**doc, **extra}
    return {k: merged[k] for k in order if k in merged}


def test_round_trip_keeps_an_empty_exporter_map(tiny_docs):
    x = bs.seal(_with(tiny_docs[0], exporter={}))
    assert bundle.pack(bundle.unpack(x)) == x


def test_round_trip_keeps_requires(tiny_docs):
    x = bs.seal(_with(tiny_docs[0], requires=["hashing.offsets"]))
    assert bundle.pack(bundle.unpack(x)) == x


# --------------------------------------------------------------------------- what the properties found


def _tokenizer_edit(doc: dict, change) -> bytes:
    import json

    doc = msgpack.unpackb(bs.seal(doc), raw=False)
    doc.pop(Key.SHA256)
    tok = json.loads(doc[Key.ENCODER][Key.TOKENIZER_JSON])
    change(tok)
    doc[Key.ENCODER][Key.TOKENIZER_JSON] = json.dumps(tok)
    return bs.seal(doc)


@pytest.mark.parametrize("bad_id", [["[CLS]"], {"a": 1}])
def test_special_token_id_of_the_wrong_type_is_refused(tiny_docs, bad_id):
    def change(tok):
        tok["post_processor"]["single"][0] = {"SpecialToken": {"id": bad_id, "type_id": 0}}
    with pytest.raises(BundleError) as info:
        bundle.unpack(_tokenizer_edit(tiny_docs[0], change))
    assert (info.value.code, info.value.path) == ("tokenizer.family", "encoder.tokenizer_json/post_processor/single/0")


def test_a_tflite_model_that_shares_one_name_many_times_is_refused(encoders, tiny_docs):
    """40,000 tensors that are one table with one 1 MiB name: the walk would read 40 GiB of names
    from a 1.2 MB model; it reads at most the model's own size, then refuses."""
    from benchmarks.hostile_bundles import tflite_shared_name

    model = tflite_shared_name(2 * schema.MAX_TFLITE_OPERATORS, 2**20)
    doc = msgpack.unpackb(bs.seal(tiny_docs[0]), raw=False)
    doc.pop(Key.SHA256)
    enc = doc[Key.ENCODER]
    enc.pop(Key.WEIGHTS)
    enc.update({Key.FORMAT: "tflite", Key.MODEL: model})
    with pytest.raises(BundleError, match="names add up to more bytes than the model has"):
        bundle.unpack(bs.seal(doc))


def test_declared_lengths_are_refused_before_allocation():
    import hashlib
    import tracemalloc

    head = (b"\x83" + msgpack.packb("format") + msgpack.packb("dpedge") + msgpack.packb("version")
            + msgpack.packb([1, 0]) + msgpack.packb("x") + b"\xdd\x00\x01\x86\xa0" * 1000)
    blob = head + schema.DIGEST_TAIL + hashlib.sha256(head).digest()
    tracemalloc.start()
    try:
        with pytest.raises(BundleError):
            bundle.unpack(blob)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * len(blob) + 4 * 2**20, f"{peak / 2**20:.0f} MiB for {len(blob)} bytes"


def test_texts_at_their_bounds_are_read(tiny_docs):
    """About 730,000 characters of printable text within the bounds (the privacy texts at
    10,000 characters, 64 public inputs of 10,000, the descriptions at 2,000) are accepted and
    come back as written (how long that takes is benchmarks/hostile_bundles.py's to measure)."""
    doc = msgpack.unpackb(bs.seal(tiny_docs[0]), raw=False)
    doc.pop(Key.SHA256)
    privacy = doc[Key.PRIVACY]
    for f in schema.FIELDS:
        if f.parent == Key.PRIVACY and f.kind == "str" and f.key not in (Key.PRIVACY_UNIT, Key.COMPOSITION):
            privacy[f.key] = "\u00e9" * schema.MAX_TEXT_CHARS
    # The relation's words are the contract's for K, the column's name as long as it may be.
    k = privacy[Key.MAX_RECORDS_PER_UNIT]
    bare = len(wording.neighbour_relation(k, ""))
    privacy[Key.NEIGHBOUR_RELATION] = wording.neighbour_relation(k, "\u00e9" * (schema.MAX_TEXT_CHARS - bare))
    privacy[Key.PRIVACY_UNIT] = wording.privacy_unit(k)
    privacy[Key.PUBLIC_INPUTS] = ["\u00e9" * schema.MAX_TEXT_CHARS] * 64
    doc[Key.LABEL_DESCRIPTIONS] = [f"{i} " + "\u00e9" * (schema.MAX_DESCRIPTION_CHARS - 2) for i in range(7)]
    b = bundle.unpack(bs.seal(doc))
    assert b.privacy[Key.PUBLIC_INPUTS][63] == "\u00e9" * schema.MAX_TEXT_CHARS
    assert b.label_descriptions[6].endswith("\u00e9")
