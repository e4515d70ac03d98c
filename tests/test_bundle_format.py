"""Bundle format 1.0 (docs/bundle-format.md): the round trip, atomic writes, one clear BundleError
for each container problem, the version rules, the release kinds, the labels' text rules, the
ONNX external-data form and the weights-last placement, and the ONNX engine's two routes to
the weights (left in the file for onnxruntime to map, or held in memory), whatever the file is
named. Everything runs the real reader, writer, msgpack and onnxruntime."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import msgpack
import numpy as np
import pytest

import bundle_strategies as bs
from runtime import BundleError, Classifier
from runtime import bundle
from runtime.bundle import model_family, schema
from runtime.bundle.schema import Key
from runtime.embedder import Embedder

TEXTS = ["set a timer for ten minutes", "what's the forecast for Sunday", "lock the back door"]


@pytest.fixture(scope="module")
def tiny(dp_bundle) -> dict:
    """The default bundle shrunk to a few KiB, still valid (tests/bundle_strategies.py)."""
    return bs.tiny_document(dp_bundle.read_bytes())


def refused(blob: bytes, phrase: str) -> str:
    """The reader refuses ``blob`` with one line that contains ``phrase``."""
    with pytest.raises(BundleError) as info:
        bundle.unpack(blob)
    message = str(info.value)
    assert phrase in message and "\n" not in message, message
    return message


def edited(doc: dict, change) -> bytes:
    """A copy of ``doc`` changed by ``change`` and sealed with a correct digest (so that what is
    tested is the field, not the checksum)."""
    doc = bs.decode(bs.seal(doc))
    out = change(doc)
    return bs.seal(doc if out is None else out)


def reordered(doc: dict, keys: list[str]) -> dict:
    return {k: doc[k] for k in keys}


# --------------------------------------------------------------------------- round trip


@pytest.mark.parametrize("which", ["dp_bundle", "tables_bundle", "random_bundle", "tflite_bundle"])
def test_round_trip_gives_identical_bytes_and_predictions(request, tmp_path, which):
    """save(load(file)) writes the file's bytes again (the ONNX weights read back from where
    load left them), unpack and pack agree, and the copy classifies identically."""
    path = request.getfixturevalue(which)
    data = path.read_bytes()
    b = bundle.load(path)
    copy = bundle.save(b, tmp_path / "copy.dpedge")
    assert copy.read_bytes() == data and bundle.pack(bundle.unpack(data)) == data
    assert b.encoder.weights == b"" and (b.encoder.weights_file is not None) == (b.encoder.format == "onnx")
    assert Classifier.load(path).classify(TEXTS) == Classifier.load(copy).classify(TEXTS)


# --------------------------------------------------------------------------- atomic writes


def test_save_writes_a_temp_file_beside_the_target_then_renames_it(tiny, tmp_path, monkeypatch):
    """The bytes go to a temp file in the target's folder, fsynced, renamed over the target in
    one step; the result has open()'s mode and no temp file is left."""
    renames, real_replace = [], os.replace

    def spy(src, dst):
        renames.append((Path(src), Path(dst), Path(src).read_bytes()))
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    target = tmp_path / "out.dpedge"
    b = bundle.unpack(bs.seal(tiny))
    bundle.save(b, target)
    (src, dst, written), = renames
    assert dst == target and src.parent == target.parent and src.name.startswith(".out.dpedge.")
    assert written == target.read_bytes() == bundle.pack(b)
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~mask
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.dpedge"]


@pytest.mark.parametrize("fail", ["fsync", "replace"])
def test_an_interrupted_save_keeps_the_previous_file(tiny, tmp_path, monkeypatch, fail):
    b = bundle.unpack(bs.seal(tiny))
    target = tmp_path / "out.dpedge"
    target.write_bytes(b"the previous bundle")

    def crash(*args):
        raise KeyboardInterrupt if fail == "fsync" else OSError("disk full")

    monkeypatch.setattr(os, fail, crash)
    with pytest.raises(KeyboardInterrupt if fail == "fsync" else OSError):
        bundle.save(b, target)
    assert target.read_bytes() == b"the previous bundle"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.dpedge"]  # no temp file left


# --------------------------------------------------------------------------- the container


#: A file cut before its first two entries (format, version) is not recognisably a bundle.
HEAD_BYTES = 1 + len(bs.encode("format") + bs.encode("dpedge") + bs.encode("version") + bs.encode([1, 0]))


@pytest.mark.parametrize("cut", [0, 1, 10, HEAD_BYTES, 1000, "half", -schema.TAIL_BYTES, -1])
def test_a_truncated_bundle_is_one_error(tiny, cut):
    blob = bs.seal(tiny)
    n = len(blob) // 2 if cut == "half" else cut if cut >= 0 else len(blob) + cut
    refused(blob[:n], "not a dpedge bundle" if n < HEAD_BYTES else "the bundle is truncated or corrupted")


@pytest.mark.parametrize("where", [0.01, 0.5, 0.99, "digest"])
def test_a_changed_byte_is_a_checksum_mismatch(tiny, where):
    blob = bytearray(bs.seal(tiny))
    blob[len(blob) - 1 if where == "digest" else int((len(blob) - schema.TAIL_BYTES) * where)] ^= 0x04
    refused(bytes(blob), "checksum mismatch")


def test_trailing_bytes_are_refused(tiny):
    refused(bs.seal(tiny) + b"\x00", "the bundle is truncated or corrupted")


@pytest.mark.parametrize("where", ["top", "privacy", "array record", "exporter"])
def test_a_repeated_key_is_refused(tiny, where):
    """msgpack would keep the last of two equal keys, another parser the first: the reader
    refuses the map (the digest is correct; only the repetition is wrong)."""
    def change(doc):
        if where == "top":
            items = list(doc.items())
            items.insert(3, (Key.LABELS, ["x", "y"]))
            return bs.Pairs(items)
        node, key = {"privacy": (doc[Key.PRIVACY], Key.EPSILON), "exporter": (doc[Key.EXPORTER], "name"),
                     "array record": (doc[Key.SUBSPACE][Key.ORIGIN], Key.SHAPE)}[where]
        items = list(node.items()) + [(key, node[key])]
        parent = doc[Key.SUBSPACE] if where == "array record" else doc
        parent[{"privacy": Key.PRIVACY, "exporter": Key.EXPORTER, "array record": Key.ORIGIN}[where]] = bs.Pairs(items)
    refused(edited(tiny, change), "a map repeats the key")


EXTENSION = "not a dpedge bundle: it holds a msgpack extension type, which no field may"


@pytest.mark.parametrize("raw,phrase", [
    (b"\xc7\x00\x05", EXTENSION),                                         # ext 8 of length 0 (type 5)
    (b"\xd6\xff\x00\x00\x00\x01", EXTENSION),                             # a timestamp (ext type -1)
    (b"\xd7\xff" + bytes(8), EXTENSION),                                  # a 64-bit timestamp
    (b"\xc7\x03\x01abc", EXTENSION),                                      # ext 8 with data
    (b"\xc1", "not valid msgpack"),                                    # the never-used byte
    (b"\xdd\x00\x01\x86\xa1" + b"\xc0" * 100_001, "not valid msgpack"),  # 100,001 entries
])
def test_extension_types_and_bad_msgpack_are_refused(tiny, raw, phrase):
    refused(edited(tiny, lambda d: d[Key.EXPORTER].update(x=bs.Raw(raw))), phrase)


def test_a_non_string_key_is_refused(tiny):
    refused(edited(tiny, lambda d: d.update(exporter=bs.Pairs([*d[Key.EXPORTER].items(), (b"k", 1)]))),
            "a map has a key that is not a string")


def _nested(levels: int):
    v: object = 1
    for _ in range(levels):
        v = [v]
    return v


def test_containers_nest_at_most_32_deep(tiny):
    """The top map is depth 1 and exporter depth 2: 30 nested arrays in exporter reach 32."""
    bundle.unpack(edited(tiny, lambda d: d[Key.EXPORTER].update(n=_nested(30))))
    refused(edited(tiny, lambda d: d[Key.EXPORTER].update(n=_nested(31))), "containers nest deeper than 32")
    # past msgpack's own stack (1024): the same phrase
    refused(edited(tiny, lambda d: d[Key.EXPORTER].update(n=bs.Raw(b"\x91" * 5000 + b"\xc0"))),
            "containers nest deeper than 32")


def test_many_tiny_containers_exceed_the_value_budget(tiny):
    """An empty array is one byte of msgpack but a Python object: at most size / 64 + 4096
    entries in all."""
    refused(edited(tiny, lambda d: d[Key.EXPORTER].update(n=[[]] * 60_000)), "it holds more msgpack values than")


@pytest.mark.parametrize("version", [[4, 0], [3, 1]])
def test_a_pre_release_bundle_says_to_rebuild(version):
    payload = msgpack.packb({"labels": ["a", "b"]})
    blob = msgpack.packb({"format": "dpedge-bundle", "version": version,
                          "checksum": {"algorithm": "sha256", "digest": hashlib.sha256(payload).digest()},
                          "payload": payload}, use_bin_type=True)
    message = refused(blob, f"pre-release format {version[0]}.{version[1]}")
    assert "rebuild it with `python -m exporter build`" in message and "epsilon adds to" in message


@pytest.mark.parametrize("blob,phrase", [
    (b"", "does not start with a msgpack map"),
    (b"\x89PNG\r\n\x1a\n" + bytes(100), "not a dpedge bundle (its first entry is not format: dpedge)"),
    (bs.reseal(b"\x95\x01\x02\x03"), "its top level is array, expected a map"),  # [1, 2, 3, "sha256", digest]
    (bs.seal({"format": "other", "version": [1, 0]}), "not a dpedge bundle: field 'format' is 'other'"),
    (bs.seal({"version": [1, 0], "format": "dpedge"}), "a bundle's map starts with 'format' and 'version'"),
])
def test_not_a_bundle(blob, phrase):
    refused(blob, phrase)


def test_special_files(tmp_path):
    """A directory, a device and a FIFO are refused by their type (never read), a missing file
    by its name."""
    with pytest.raises(BundleError, match="no such bundle file"):
        bundle.load(tmp_path / "missing.dpedge")
    with pytest.raises(BundleError, match="is a directory"):
        bundle.load(tmp_path)
    with pytest.raises(BundleError, match="is not a regular file"):
        bundle.load("/dev/zero")
    fifo = tmp_path / "fifo.dpedge"
    os.mkfifo(fifo)
    with pytest.raises(BundleError, match="is not a regular file"):
        bundle.load(fifo)


# --------------------------------------------------------------------------- versions


def _before_encoder(doc: dict, **extra) -> dict:
    keys = [k for k in doc if k != Key.ENCODER]
    return {**{k: doc[k] for k in keys}, **extra, Key.ENCODER: doc[Key.ENCODER]}


def test_a_newer_minor_version_ignores_unknown_fields_before_encoder(tiny):
    def change(d):
        d[Key.VERSION] = [1, 7]
        d[Key.PRIVACY]["future_fact"] = {"any": [1, 2]}
        return _before_encoder(d, future_field=b"\x00" * 10)
    b = bundle.unpack(edited(tiny, change))
    assert b.version == (1, 7) and "future_fact" in b.privacy


def test_a_newer_minor_version_may_not_put_fields_after_encoder(tiny):
    def change(d):
        d[Key.VERSION] = [1, 7]
        d["future_field"] = 1  # after encoder, before sha256: the weights no longer end the file
    refused(edited(tiny, change), "must be the last entry of 'encoder', the last map before 'sha256'")


@pytest.mark.parametrize("where,name", [("top", "future_field"), ("privacy", "privacy.future_fact")])
def test_unknown_fields_are_refused_in_this_minor_version(tiny, where, name):
    def change(d):
        if where == "top":
            return _before_encoder(d, future_field=1)
        d[Key.PRIVACY]["future_fact"] = 1
    refused(edited(tiny, change), f"unknown field '{name}' in a version 1.0 file")


def test_requires_a_known_path_loads_and_an_unknown_one_says_upgrade(tiny):
    def requiring(paths, minor=0):
        def change(d):
            d[Key.VERSION] = [1, minor]
            return {Key.FORMAT: d[Key.FORMAT], Key.VERSION: d[Key.VERSION], Key.REQUIRES: paths,
                    **{k: v for k, v in d.items() if k not in (Key.FORMAT, Key.VERSION)}}
        return edited(tiny, change)
    bundle.unpack(requiring(["hashing.offsets", "privacy.epsilon"]))
    message = refused(requiring(["scoring.new_rule"], minor=3), "requires 'scoring.new_rule'")
    assert "upgrade dpedge" in message


@pytest.mark.parametrize("version,phrase", [
    ([2, 0], "bundle format version 2.0 is not 1.x"), ([0, 9], "bundle format version 0.9 is not 1.x"),
    ([1], "must be [major, minor]"), ("1.0", "must be [major, minor]"), ([1, -1], "must be [major, minor]"),
    ([True, 0], "must be [major, minor]"),
])
def test_other_versions_are_refused(tiny, version, phrase):
    refused(edited(tiny, lambda d: d.update(version=version)), phrase)


@pytest.mark.parametrize("minor", [0, 5])
def test_an_unknown_release_kind_is_refused_in_every_minor_version(tiny, minor):
    """releases is closed: a release this reader cannot account for is refused even when its
    epsilon is part of a consistent total."""
    def change(d):
        d[Key.VERSION] = [1, minor]
        d[Key.RELEASES]["histogram"] = {"epsilon": 1.0, "sensitivity_l1": 1, "noise_scale": 1.0, "mechanism": "m"}
        d[Key.PRIVACY][Key.EPSILON] += 1.0
    refused(edited(tiny, change), "field 'releases.histogram' is a release this reader cannot account for")


# --------------------------------------------------------------------------- labels


@pytest.mark.parametrize("twin,phrase", [
    (lambda s: s + "\u200b", "look alike"),                  # a zero-width space
    (lambda s: s.translate({i: i + 0xFEE0 for i in range(0x21, 0x7F)}), "look alike"),  # NFKC
    (lambda s: "\u00ad" + s + "\ufe0f", "look alike"),         # soft hyphen, selector
    (lambda s: s + "\U000e0041\U000e007f", "holds U+E0041, which is not printable"),  # tag characters
    (lambda s: "\u202e" + s, "holds U+202E, which is not printable"),           # a bidi override
    (lambda s: s + "\u2066", "holds U+2066, which is not printable"),           # a bidi isolate
    (lambda s: "\u200b\u2060", "shows nothing"),                                # invisible only
])
def test_labels_text_rules(tiny, twin, phrase):
    refused(edited(tiny, lambda d: d[Key.LABELS].__setitem__(1, twin(d[Key.LABELS][0]))), phrase)


def test_a_description_with_a_bidi_control_is_refused(tiny):
    refused(edited(tiny, lambda d: d[Key.LABEL_DESCRIPTIONS].__setitem__(0, "fine\u202eenif")),
            "field 'label_descriptions[0]' holds U+202E")


# --------------------------------------------------------------------------- the ONNX external-data form


@pytest.fixture(scope="module")
def real(dp_bundle) -> tuple[dict, list[model_family.ExternalRef]]:
    doc = bs.decode(dp_bundle.read_bytes())
    enc = doc[Key.ENCODER]
    return doc, model_family.check_onnx(enc[Key.MODEL], len(enc[Key.WEIGHTS]))


def test_the_exporters_model_uses_exactly_the_external_data_form(real):
    """Every external initializer names the 256-byte placeholder and 20-digit offsets; the
    ranges lie inside encoder.weights without overlapping."""
    doc, refs = real
    model, weights = doc[Key.ENCODER][Key.MODEL], doc[Key.ENCODER][Key.WEIGHTS]
    assert len(refs) > 100 and len(schema.WEIGHTS_LOCATION) == 256
    for r in refs:
        assert model[r.location_at:r.location_at + 256] == schema.WEIGHTS_LOCATION.encode()
        assert model[r.offset_at:r.offset_at + schema.NUMBER_DIGITS] == b"%020d" % r.offset
    spans = sorted((r.offset, r.offset + r.length) for r in refs)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])) and spans[-1][1] <= len(weights)


def _rewritten_model(real, at: str, value: bytes) -> bytes:
    """The real bundle with one fixed-width field of its last initializer's external data
    rewritten in place."""
    doc, refs = real
    r = max(refs, key=lambda r: r.offset)
    model = bytearray(doc[Key.ENCODER][Key.MODEL])
    start = {"location": r.location_at, "offset": r.offset_at}[at]
    model[start:start + len(value)] = value
    copy = dict(doc)
    copy[Key.ENCODER] = {**doc[Key.ENCODER], Key.MODEL: bytes(model)}
    return bs.seal(copy)


def test_an_offset_past_the_weights_is_refused(real):
    doc, _ = real
    n = len(doc[Key.ENCODER][Key.WEIGHTS])
    refused(_rewritten_model(real, "offset", b"%020d" % n), f"past the {n} bytes of encoder.weights")


@pytest.mark.parametrize("at,value", [
    ("location", b"/etc/passwd".ljust(256, b"/")), ("location", b"README.md".ljust(256, b" ")),
    ("offset", b"0000000000000000000x"), ("offset", b"+0000000000000000001"),
])
def test_external_data_outside_the_form_is_refused(real, at, value):
    refused(_rewritten_model(real, at, value), "outside the ONNX encoder family")


# --------------------------------------------------------------------------- weights last


def test_the_weights_end_41_bytes_before_the_end_of_the_file(dp_bundle):
    data = dp_bundle.read_bytes()
    w = bundle.load(dp_bundle).encoder.weights_file
    assert w.offset + w.length == len(data) - schema.TAIL_BYTES
    assert data[w.offset:w.offset + w.length] == bundle.unpack(data).encoder.weights


@pytest.mark.parametrize("how", ["weights before dim", "exporter after encoder"])
def test_the_weights_must_be_the_last_entry_before_the_digest(tiny, how):
    def change(d):
        if how == "weights before dim":
            enc = d[Key.ENCODER]
            keys = [k for k in enc if k != Key.WEIGHTS]
            keys.insert(keys.index(Key.DIM), Key.WEIGHTS)
            d[Key.ENCODER] = {k: enc[k] for k in keys}
        else:
            return reordered(d, [k for k in d if k != Key.EXPORTER] + [Key.EXPORTER])
    refused(edited(tiny, change), "must be the last entry of 'encoder', the last map before 'sha256'")


# --------------------------------------------------------------------------- the two routes to the weights


def mapped(path: Path) -> bool:
    """Whether this process maps the file (onnxruntime maps external data it reads from a file)."""
    return str(path) in Path("/proc/self/maps").read_text()


@pytest.fixture(scope="module")
def in_memory_embeddings(dp_bundle) -> np.ndarray:
    """The embeddings of TEXTS with the weights handed to onnxruntime from memory (unpack)."""
    b = bundle.unpack(dp_bundle.read_bytes())
    assert b.encoder.weights_file is None and len(b.encoder.weights) > 20 * 2**20
    return Embedder(b.encoder, threads=1).embed(TEXTS)


def test_load_leaves_the_weights_in_the_file_and_embeds_bit_identically(dp_bundle, in_memory_embeddings):
    b = bundle.load(dp_bundle)
    assert b.encoder.weights == b"" and b.encoder.weights_file.path == str(dp_bundle.resolve())
    emb = Embedder(b.encoder, threads=1)
    assert mapped(dp_bundle.resolve())
    assert np.array_equal(emb.embed(TEXTS), in_memory_embeddings)


#: File names around the placeholder's 256 bytes: the name is written as "./" x n + name (an
#: odd pad starts ".//"); from 254 bytes on it cannot fit and the weights are read into memory.
NAMES = {
    "even pad": "b.dpedge", "odd pad": "ab.dpedge", "non-ASCII": "bündel-ß-€-データ.dpedge",
    "250 bytes": "n" * 243 + ".dpedge", "252 bytes (pad 4)": "n" * 245 + ".dpedge",
    "253 bytes (pad 3)": "n" * 246 + ".dpedge", "254 bytes (too long)": "n" * 247 + ".dpedge",
    "255 bytes (too long)": "é" * 123 + "nn.dpedge",
}
#: Each name in a fresh process, as the CLI would load it: the bytes onnxruntime reads must not
#: depend on what an earlier test left in memory.
CHILD = """
import hashlib, json, sys
from pathlib import Path
from runtime import bundle
from runtime.embedder import Embedder
path = Path(sys.argv[1])
emb = Embedder(bundle.load(path).encoder, threads=1)
mapped = str(path) in Path("/proc/self/maps").read_text()
try:
    out = hashlib.sha256(emb.embed(json.loads(sys.argv[2])).tobytes()).hexdigest()
except Exception as exc:
    out = f"{type(exc).__name__}: {exc}"
print(json.dumps([mapped, out]))
"""


@pytest.mark.parametrize("label", list(NAMES))
def test_a_renamed_bundle_file_loads_and_embeds_identically(dp_bundle, tmp_path, in_memory_embeddings, label):
    """Any name a file system allows: mapped in place when it fits the placeholder's 256 bytes,
    read into memory when it does not; either way the same embeddings, bit for bit."""
    import json
    import subprocess
    import sys

    from conftest import ROOT

    name = NAMES[label]
    path = tmp_path / name
    try:
        os.link(dp_bundle, path)
    except OSError:
        path.write_bytes(dp_bundle.read_bytes())
    r = subprocess.run([sys.executable, "-c", CHILD, str(path), json.dumps(TEXTS)], capture_output=True, text=True,
                       cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert r.returncode == 0, r.stderr
    was_mapped, embedded = json.loads(r.stdout.splitlines()[-1])
    fits = len(schema.WEIGHTS_LOCATION) - len(name.encode()) >= 3
    assert was_mapped == fits, f"{len(name.encode())}-byte name: expected {'the file mapped' if fits else 'no map'}"
    assert embedded == hashlib.sha256(in_memory_embeddings.tobytes()).hexdigest()
