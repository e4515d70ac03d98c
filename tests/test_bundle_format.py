"""Bundle format v1: round trip, atomic writes, and one clear BundleError for every malformed input."""

import hashlib
import json
import os
import random
from pathlib import Path

import msgpack
import numpy as np
import pytest

from runtime import BundleError, Classifier
from runtime import bundle as fmt


@pytest.fixture(scope="module")
def data(tables_bundle) -> bytes:
    return tables_bundle.read_bytes()


def rewrite(data: bytes, mutate_payload=None, mutate_outer=None) -> bytes:
    """Change a bundle's fields and re-seal it with a correct checksum (so the reader's field
    validation is what gets tested, not the checksum)."""
    outer = msgpack.unpackb(data, raw=False)
    if mutate_payload:
        payload = msgpack.unpackb(outer["payload"], raw=False)
        mutate_payload(payload)
        outer["payload"] = msgpack.packb(payload, use_bin_type=True)
        outer["checksum"]["digest"] = hashlib.sha256(outer["payload"]).digest()
    if mutate_outer:
        mutate_outer(outer)
    return msgpack.packb(outer, use_bin_type=True)


def load_bytes(tmp_path: Path, blob: bytes):
    p = tmp_path / "b.dpedge"
    p.write_bytes(blob)
    return fmt.load(p)


@pytest.mark.parametrize("which", ["dp_bundle", "tables_bundle", "random_bundle"])
def test_round_trip_gives_identical_fields_and_predictions(request, tmp_path, which):
    path = request.getfixturevalue(which)
    b = fmt.load(path)
    copy = fmt.save(b, tmp_path / "copy.dpedge")
    assert copy.read_bytes() == path.read_bytes()  # packing is deterministic
    b2 = fmt.load(copy)
    assert b2.labels == b.labels and b2.privacy == b.privacy and b2.lsh == b.lsh
    for name in ("votes", "hyperplanes", "offsets", "prior"):
        assert np.array_equal(getattr(b2, name), getattr(b, name)) if getattr(b, name) is not None \
            else getattr(b2, name) is None
    if b.votes is not None:
        assert b2.votes.dtype == np.dtype("<i2") and b2.hyperplanes.dtype == np.dtype("<f4")
    if b.class_stats is not None:
        assert all(np.array_equal(getattr(b2.class_stats, f), getattr(b.class_stats, f))
                   for f in ("origin", "projection", "sums", "counts"))
    texts = ["set a timer for ten minutes", "what's the forecast for Sunday", "lock the back door"]
    p1 = Classifier.load(path).predict(texts)
    p2 = Classifier.load(copy).predict(texts)
    assert p1 == p2


def test_header_and_byte_order_are_explicit(data):
    outer = msgpack.unpackb(data, raw=False)
    assert list(outer) == ["format", "version", "checksum", "payload"]
    assert outer["format"] == "dpedge-bundle" and outer["version"] == list(fmt.FORMAT_VERSION)
    payload = msgpack.unpackb(outer["payload"], raw=False)
    assert payload["votes"]["dtype"] == "<i2" and payload["lsh"]["hyperplanes"]["dtype"] == "<f4"


TRUNCATIONS = [0, 1, 10, 100, 1000, -1, -100, "half"]


@pytest.mark.parametrize("cut", TRUNCATIONS)
def test_truncated_bundle(data, tmp_path, cut):
    n = len(data) // 2 if cut == "half" else (cut if cut >= 0 else len(data) + cut)
    with pytest.raises(BundleError, match="truncated|not valid msgpack"):
        load_bytes(tmp_path, data[:n])


@pytest.mark.parametrize("where", [0.3, 0.5, 0.9, 0.999])
def test_bit_flip_in_payload_fails_the_checksum(data, tmp_path, where):
    blob = bytearray(data)
    blob[int(len(blob) * where)] ^= 0x10
    with pytest.raises(BundleError, match="checksum mismatch"):
        load_bytes(tmp_path, bytes(blob))


def test_random_bit_flips_anywhere_give_bundle_error_or_a_valid_bundle(data, tmp_path):
    rng = random.Random(7)
    positions = list(range(0, 120)) + [rng.randrange(len(data)) for _ in range(30)]
    for pos in positions:
        blob = bytearray(data)
        blob[pos] ^= 1 << rng.randrange(8)
        try:
            load_bytes(tmp_path, bytes(blob))  # a flip in e.g. the minor version still loads
        except BundleError:
            pass


@pytest.mark.parametrize("blob,message", [
    (b"", "truncated"),
    (b'{"format": "dpedge-bundle"}', "not a dpedge bundle"),
    (b"\x89PNG\r\n\x1a\n" + bytes(100), "not"),
    (msgpack.packb([1, 2, 3]), "top level is array"),
    (msgpack.packb({"format": "something-else", "version": [1, 0]}), "not a dpedge bundle"),
    (msgpack.packb({"format": "dpedge-bundle", "version": [1, 0]}), "missing field 'checksum'"),
    (msgpack.packb(msgpack.ExtType(5, b"xx")), "extension type"),
])
def test_not_a_bundle(tmp_path, blob, message):
    with pytest.raises(BundleError, match=message):
        load_bytes(tmp_path, blob)


def test_trailing_bytes(data, tmp_path):
    with pytest.raises(BundleError, match="trailing bytes"):
        load_bytes(tmp_path, data + b"\x00\x01")


@pytest.mark.parametrize("version,message", [
    ([5, 0], "newer than this runtime supports"),
    ([9, 3], "upgrade dpedge"),
    ([0, 9], "not supported"),
    ("1.0", "field 'version' is string, expected array"),
    ([1], "must be \\[major, minor\\]"),
])
def test_wrong_version(data, tmp_path, version, message):
    blob = rewrite(data, mutate_outer=lambda o: o.update(version=version))
    with pytest.raises(BundleError, match=message):
        load_bytes(tmp_path, blob)


def test_newer_minor_version_with_extra_fields_still_loads(data, tmp_path):
    def add_field(p):
        p["future_field"] = {"anything": 1}
    blob = rewrite(data, mutate_payload=add_field, mutate_outer=lambda o: o.update(version=[3, 7]))
    assert load_bytes(tmp_path, blob).labels[0] == "alarm_timer"


REQUIRED = ["labels", "privacy", "lsh", "votes", "encoder", "exporter",
            "privacy.epsilon", "privacy.delta", "privacy.mechanism", "privacy.sensitivity_l1",
            "privacy.noise_scale", "privacy.neighbour_relation", "privacy.privacy_unit", "privacy.noise_source",
            "lsh.tables", "lsh.bits", "lsh.dim", "lsh.hyperplanes", "lsh.family", "votes.data", "votes.shape",
            "votes.dtype", "encoder.model", "encoder.tokenizer_json", "encoder.max_length", "encoder.format",
            "encoder.inputs", "encoder.output", "lsh.hyperplanes.data"]


@pytest.mark.parametrize("field", REQUIRED)
def test_missing_field(data, tmp_path, field):
    def drop(p):
        *parents, last = field.split(".")
        for key in parents:
            p = p[key]
        del p[last]
    with pytest.raises(BundleError, match=f"missing field '{field}'"):
        load_bytes(tmp_path, rewrite(data, mutate_payload=drop))


def _set(path: str, value):
    def mutate(p):
        *parents, last = path.split(".")
        for key in parents:
            p = p[key]
        p[last] = value(p[last]) if callable(value) else value
    return mutate


@pytest.mark.parametrize("mutate,message", [
    (_set("labels", "alarm_timer"), "field 'labels' is string, expected array"),
    (_set("labels", ["a", "a", "b", "c", "d", "e", "f"]), "distinct"),
    (_set("labels", ["only"]), "at least two"),
    (_set("label_descriptions", ["x"]), "entries for 7 labels"),
    (_set("votes.dtype", "<i4"), "expected '<i2'"),
    (_set("votes.dtype", ">i2"), "expected '<i2'"),
    (_set("votes.shape", [32, 64]), "must be 3 non-negative integers"),
    (_set("votes.shape", [32, 64, -7]), "non-negative"),
    (_set("votes.shape", lambda s: [s[1], s[0], s[2]]), "field 'votes' has shape"),
    (_set("votes.data", lambda d: d[:-2]), "bytes, but dtype <i2 and shape"),
    (_set("votes.shape", [2**40, 2**10, 7]), "bytes, but dtype"),
    (_set("lsh.hyperplanes.data", lambda d: np.full(len(d) // 4, np.nan, "<f4").tobytes()), "non-finite"),
    (_set("lsh.bits", 7), "field 'lsh.hyperplanes' has shape"),
    (_set("lsh.bits", 40), "out of range"),
    (_set("lsh.tables", True), "is boolean, expected integer"),
    (_set("lsh.family", "minhash"), "expected 'simhash'"),
    (_set("privacy.sensitivity_l1", 1), "touches one cell in each of 32 tables"),
    (_set("privacy.max_records_per_unit", 3), "touches one cell in each of 32 tables, for each of the up to 3 records"),
    (_set("privacy.max_records_per_unit", 0), "max_records_per_unit' is 0, expected at least 1"),
    (_set("privacy.max_records_per_unit", "3"), "max_records_per_unit' is string, expected integer"),
    (_set("privacy.delta", 1e-6), "only pure epsilon-DP"),
    (_set("privacy.epsilon", -1.0), "positive finite"),
    (_set("privacy.epsilon", "8"), "is string, expected float or integer"),
    (_set("encoder.format", "coreml"), "not supported by this runtime"),
    (_set("encoder.dim", 128), "384-d"),
    (_set("encoder.model", b""), "is empty"),
    (_set("encoder.inputs", ["input_ids", "pixel_values"]), "unsupported inputs"),
    (_set("encoder.max_length", 10**9), "max_length"),
    (_set("privacy", [1, 2]), "field 'privacy' is array, expected map"),
    (_set("encoder.check.text", ""), "non-empty text and a finite unit 384-d embedding"),
    (_set("encoder.check.embedding.data", lambda d: bytes(len(d))), "finite unit 384-d embedding"),
    (_set("encoder.check.embedding.shape", [383]), "bytes, but dtype <f4 and shape"),
    (_set("encoder.check", "yes"), "field 'encoder.check' is string, expected map"),
])
def test_invalid_fields(data, tmp_path, mutate, message):
    with pytest.raises(BundleError, match=message):
        load_bytes(tmp_path, rewrite(data, mutate_payload=mutate))


def _proto(field: int, body: bytes) -> bytes:
    """One length-delimited protobuf field (the field numbers are onnx.proto's)."""
    return bytes([field << 3 | 2, len(body)]) + body


#: A well-formed ONNX model within the family whose one node reads an input nothing defines:
#: the reader's family check passes it, onnxruntime refuses it.
_DANGLING_ONNX = (b"\x08\x08" + _proto(8, b"\x10\x12")
                  + _proto(7, _proto(1, _proto(1, b"nowhere") + _proto(2, b"y") + _proto(4, b"Add"))))


def test_corrupt_encoder_model_or_tokenizer_is_a_bundle_error(data, tmp_path):
    p = tmp_path / "bad.dpedge"
    p.write_bytes(rewrite(data, mutate_payload=_set("encoder.model", b"\x08\x01garbage-not-onnx")))
    with pytest.raises(BundleError, match="field 'encoder.model' is not a valid ONNX model"):
        Classifier.load(p)
    p.write_bytes(rewrite(data, mutate_payload=_set("encoder.model", _DANGLING_ONNX)))
    with pytest.raises(BundleError, match="cannot be loaded by onnxruntime") as refused:
        Classifier.load(p)
    assert "\n" not in str(refused.value)
    p.write_bytes(rewrite(data, mutate_payload=_set("encoder.tokenizer_json", "{not json")))
    with pytest.raises(BundleError, match="field 'encoder.tokenizer_json' is not valid JSON"):
        Classifier.load(p)

    def odd_strategy(s: str) -> str:  # inside the family's bounds, refused by tokenizers itself
        doc = json.loads(s)
        doc["truncation"] = {"max_length": 128, "strategy": "Sideways", "stride": 0}
        return json.dumps(doc)
    p.write_bytes(rewrite(data, mutate_payload=_set("encoder.tokenizer_json", odd_strategy)))
    with pytest.raises(BundleError, match="tokenizer cannot be loaded"):
        Classifier.load(p)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(BundleError, match="no such bundle file"):
        fmt.load(tmp_path / "nope.dpedge")
    with pytest.raises(BundleError, match="is a directory"):
        fmt.load(tmp_path)


def test_save_is_atomic_when_interrupted(dp_bundle, tmp_path, monkeypatch):
    b = fmt.load(dp_bundle)
    target = tmp_path / "out.dpedge"
    target.write_bytes(b"previous bundle")

    def crash(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(KeyboardInterrupt):
        fmt.save(b, target)
    assert target.read_bytes() == b"previous bundle"  # the old file is untouched
    assert sorted(x.name for x in tmp_path.iterdir()) == ["out.dpedge"]  # no temp file left
    monkeypatch.undo()
    fmt.save(b, tmp_path / "new.dpedge")
    assert fmt.load(tmp_path / "new.dpedge").labels == b.labels


def _per_person(k: int, skip: str | None = None, factor: int | None = None):
    """A payload edit: every release made under a person bound of k (sensitivity times
    ``factor``, k unless given, and the noise scale to match), except the ``skip`` release."""
    def edit(p):
        for r in p["privacy"]["releases"]:
            if r["statistic"] != skip:
                r["sensitivity_l1"] *= factor or k
                r.update(max_records_per_unit=k, noise_scale=r["sensitivity_l1"] / r["epsilon"])
        head = next(r for r in p["privacy"]["releases"] if r["statistic"] == "votes")
        p["privacy"].update(max_records_per_unit=k, sensitivity_l1=head["sensitivity_l1"],
                            noise_scale=head["noise_scale"])
    return edit


def test_per_person_bundle_with_matching_sensitivity_loads(data, tmp_path):
    """One person, up to K records -> every sensitivity K times one record's (K*T for the
    votes); a bundle saying so in every release and the top-level facts loads."""
    b = load_bytes(tmp_path, rewrite(data, mutate_payload=_per_person(3)))
    assert b.privacy["max_records_per_unit"] == 3 and b.privacy["sensitivity_l1"] == 3 * b.tables


@pytest.mark.parametrize("edit, message", [
    (_per_person(3, skip="class_sums"), r"releases\[1\].max_records_per_unit' is 1, but field 'privacy.max_records_per_unit' is 3"),
    (_per_person(3, factor=1), "touches one cell in each of"),
    (_per_person(1, skip="votes", factor=2), "class_counts release with at most 1 record"),
], ids=["a-release-says-one-record", "record-level-sensitivities", "doubled-sensitivities"])
def test_a_person_bound_the_releases_contradict_is_refused(data, tmp_path, edit, message):
    """A bundle cannot claim a person-level guarantee (K = 3) on record-level noise: every
    release states the bundle's K, and the class counts' and sums' sensitivities are K times
    one record's (1, and round(grid x clip_l1))."""
    with pytest.raises(BundleError, match=message):
        load_bytes(tmp_path, rewrite(data, mutate_payload=edit))

