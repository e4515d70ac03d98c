"""docs/bundle-format.md is a contract a second implementation can follow: a reader written
from it alone (tests/independent_decoder.py) gives every text the runtime's label and scores,
from the text through its own tokenizer and ONNX session to the score, for each kind of bundle
the exporter writes (the default: class statistics and the prior; --votes-share: vote tables
too; --hashing random: vote tables alone), and for bundles derived from them that reach the
other branches of section 7 (no prior, the pull weak, strong and absent, the boost's cap and
zero, K records per person, vote tables with and without offsets, Algorithm 2 on aligned
hyperplanes). Both readers also refuse and accept the same malformed containers."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import sys
from pathlib import Path
from typing import Any, Callable

import msgpack
import numpy as np
import pytest

from conftest import DATA

sys.path.insert(0, str(Path(__file__).resolve().parent))
from independent_decoder import Decoder, Refused  # noqa: E402
from runtime import Classifier  # noqa: E402
from runtime import bundle as fmt  # noqa: E402
from runtime.bundle import Bundle, ReleaseFacts  # noqa: E402
from runtime.errors import BundleError  # noqa: E402
from runtime.scoring import Scorer, prior_boost, sums_noise_norm  # noqa: E402

#: Texts the runtime accepts beyond the test split: one character, CJK, past max_length, emoji.
SAMPLE_EXTRA = ["x", "?", "東京明天的天气怎么样？", "a " * 300, "wake me up at 6:30 tomorrow", "🎵🎶 play it"]


def _texts() -> list[str]:
    rows = [json.loads(line) for line in (DATA / "test.jsonl").read_text(encoding="utf-8").splitlines() if line]
    return [r["text"] for r in rows] + SAMPLE_EXTRA


@pytest.mark.parametrize("which,kind", [("dp_bundle", "blend"), ("tables_bundle", "blend with votes"),
                                        ("random_bundle", "algorithm 2")])
def test_independent_decoder_gives_every_text_the_runtimes_label_and_scores(which, kind, request):
    """Every text of the assistant test split (and a few odd ones), end to end: the decoder's
    own tokenizer, ONNX session (weights in memory under the placeholder name) and scoring
    against the runtime's Classifier, which maps the weights from the file."""
    path = request.getfixturevalue(which)
    clf = Classifier.load(path, threads=1)
    dec = Decoder(Path(path).read_bytes())
    b = clf.bundle
    assert kind == ("algorithm 2" if b.class_sums is None else "blend with votes" if b.votes is not None else "blend")
    assert (dec.votes is not None, dec.sums is not None, dec.prior is not None) == (
        b.votes is not None, b.class_sums is not None, b.prior is not None)
    texts = _texts()
    preds = clf.predict(texts)
    for text, pred in zip(texts, preds):
        label, ours = dec.classify(text)
        theirs = np.array([pred.scores[name] for name in clf.labels])
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=0, err_msg=text)
        assert label == pred.label, text
    assert dec.check_cosine == pytest.approx(clf.check_cosine, abs=1e-6)  # the runtime takes it in float32
    assert len({p.label for p in preds}) == len(clf.labels)  # every class is reached: the scores are not flat


# ----------------------------------------------------------------------------- derived bundles

Edit = Callable[[Bundle], Bundle]


def releases(b: Bundle, *, epsilon: float | None = None, per_unit: int | None = None) -> Bundle:
    """Every release's epsilon scaled to a new total, or every sensitivity to K records per
    unit, each noise scale following, so the derived bundle's facts stay consistent."""
    factor = 1.0 if epsilon is None else epsilon / b.epsilon
    k_old, k_new = b.records_per_unit, per_unit or b.records_per_unit
    new = {}
    for name, r in b.releases.items():
        eps, sens = r.epsilon * factor, r.sensitivity_l1 // k_old * k_new
        new[name] = dataclasses.replace(r, epsilon=eps, sensitivity_l1=sens, noise_scale=sens / eps)
    privacy = {**b.privacy, "epsilon": math.fsum(r.epsilon for r in new.values()), "max_records_per_unit": k_new}
    return dataclasses.replace(b, releases=new, privacy=privacy)


def pull_strength(s: float) -> Edit:
    """description_pull set so that the pull's strength a x nu is ``s``."""
    return lambda b: dataclasses.replace(b, scoring=dataclasses.replace(
        b.scoring, description_pull=s / sums_noise_norm(b)))


def scoring(**names: float) -> Edit:
    return lambda b: dataclasses.replace(b, scoring=dataclasses.replace(b.scoring, **names))


def no_prior(b: Bundle) -> Bundle:
    """Without label descriptions there is no prior (and so no pull)."""
    return dataclasses.replace(b, label_descriptions=None, prior=None)


def zero_counts(b: Bundle) -> Bundle:
    return dataclasses.replace(b, class_counts=np.zeros_like(b.class_counts))


def votes_only(b: Bundle) -> Bundle:
    """The class statistics' releases dropped: Algorithm 2 on the aligned hyperplanes (with
    their offsets); epsilon becomes what the votes release spent."""
    votes: ReleaseFacts = b.releases["votes"]
    return dataclasses.replace(b, releases={"votes": votes}, privacy={**b.privacy, "epsilon": votes.epsilon},
                               class_counts=None, class_sums=None, origin=None, projection=None, prior=None,
                               scoring=None)


#: name -> edits of the default bundle (class statistics and the prior, no vote tables).
FROM_DEFAULT: dict[str, tuple[Edit, ...]] = {
    "as-built": (),
    "no-prior": (no_prior,),
    "no-pull": (scoring(description_pull=0.0),),
    # The pull's strength s below and above 1 (m = 1 and m = s): dividing both terms by m does
    # not change unit(S_c), so these check the pull's direction and weight, not m.
    "weak-pull": (pull_strength(0.4),),
    "strong-pull": (pull_strength(7.0),),
    "per-person-3": (lambda b: releases(b, per_unit=3),),    # K in the boost, and nu three times larger
    "small-epsilon": (lambda b: releases(b, epsilon=0.5),),  # boost above 1
    "boost-capped": (lambda b: releases(b, epsilon=1e-4), zero_counts),  # R C K / (eps N) = 7e6 -> 1e6
    "no-records-per-class": (scoring(prior_records_per_class=0.0),),   # boost 0: the prior adds nothing
    "temperatures": (scoring(centroid_temperature=0.7, prior_temperature=0.003),),
}

#: name -> edits of the bundle with vote tables (--votes-share 0.1).
FROM_TABLES: dict[str, tuple[Edit, ...]] = {
    "as-built": (),
    "no-prior": (no_prior,),                                 # centroids and votes alone
    "no-offsets": (lambda b: dataclasses.replace(b, offsets=None),),
    "votes-only": (votes_only,),                             # Algorithm 2 with offsets
    "per-person-2": (lambda b: releases(b, per_unit=2),),
}


def _queries(dim: int, origin: np.ndarray) -> list[np.ndarray]:
    """Random unit vectors, the zero vector, one not of unit length, one near the public origin.

    Not at the origin itself: there z = P x - P o is rounding noise (about 1e-16), far below
    section 7's guard max(|z|, 1e-12), so its cosines depend on the order each reader sums in
    (the runtime's and this decoder's differ by 1e-4 there)."""
    rng = np.random.default_rng(3)
    out = [v / np.linalg.norm(v) for v in rng.standard_normal((12, dim))]
    out += [np.zeros(dim), 3.0 * out[0], out[1] + out[2], np.asarray(origin, np.float64) + 0.01 * out[3]]
    return [np.asarray(v, np.float32) for v in out]


@pytest.mark.parametrize("which,variants", [("dp_bundle", FROM_DEFAULT), ("tables_bundle", FROM_TABLES)])
def test_independent_decoder_scores_the_derived_bundles_as_the_runtime_does(which, variants, request):
    """Bundles derived by editing the decoded Bundle and packing it again (each one a valid
    bundle: the runtime's reader checks it in full) score alike in both readers, on embeddings
    of the test split and on unusual vectors; each variant reaches the branch it is named for
    and changes some score."""
    path = request.getfixturevalue(which)
    base = fmt.unpack(Path(path).read_bytes())  # the ONNX weights in memory, so pack can write them
    clf = Classifier.load(path, threads=1)
    embeddings = list(clf.embed(_texts()[:40])) + _queries(base.encoder.dim, base.origin)
    reference = None
    for name, edits in variants.items():
        b = base
        for edit in edits:
            b = edit(b)
        blob = fmt.pack(b)
        runtime_b = fmt.unpack(blob)
        scorer, dec = Scorer(runtime_b), Decoder(blob)
        theirs = scorer.scores(np.stack(embeddings))
        ours = np.array([dec.scores(e) for e in embeddings])
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=0, err_msg=name)
        assert [dec.labels[int(i)] for i in theirs.argmax(axis=1)] == [dec.label(e) for e in embeddings], name
        if reference is None:
            reference = ours
        else:
            assert not np.allclose(ours, reference, rtol=1e-12, atol=0), f"{name} changes nothing"
        if runtime_b.prior is not None:
            assert dec.boost() == pytest.approx(prior_boost(runtime_b), rel=1e-12)
        _reaches(name, runtime_b, dec)


def _reaches(name: str, b: Bundle, dec: Decoder) -> None:
    """The variant takes the branch of section 7 it is named for."""
    strength = None if b.prior is None else b.scoring.description_pull * sums_noise_norm(b)
    expected = {
        "no-prior": lambda: b.prior is None and dec.prior is None,
        "no-pull": lambda: strength == 0.0,
        "weak-pull": lambda: 0 < strength < 1,
        "strong-pull": lambda: strength > 1,
        "as-built": lambda: b.class_sums is None or b.prior is None or strength > 0,
        "per-person-3": lambda: b.records_per_unit == 3,
        "small-epsilon": lambda: dec.boost() > 1,
        "boost-capped": lambda: dec.boost() == 1e6,
        "no-records-per-class": lambda: dec.boost() == 0.0,
        "temperatures": lambda: b.scoring.prior_temperature == 0.003,
        "no-offsets": lambda: b.offsets is None and not dec.offsets.any(),
        "votes-only": lambda: b.class_sums is None and b.offsets is not None and dec.sums is None,
        "per-person-2": lambda: b.records_per_unit == 2,
    }[name]
    assert expected(), name


# ----------------------------------------------------------------------------- the container


def _reseal(entries: list[tuple[str, Any]]) -> bytes:
    """A map of these entries (in this order, repeats allowed) sealed by its digest entry."""
    p = msgpack.Packer(use_bin_type=True)
    head = p.pack_map_header(len(entries) + 1) + b"".join(p.pack(k) + p.pack(v) for k, v in entries)
    return head + p.pack("sha256") + p.pack(hashlib.sha256(head).digest())


def _entries(data: bytes) -> list[tuple[str, Any]]:
    doc = msgpack.unpackb(data, raw=False)
    doc.pop("sha256")
    return list(doc.items())


def _insert_before_encoder(entries: list[tuple[str, Any]], key: str, value: Any) -> list[tuple[str, Any]]:
    i = [k for k, _ in entries].index("encoder")
    return entries[:i] + [(key, value)] + entries[i:]


def _with_version(entries: list[tuple[str, Any]], minor: int) -> list[tuple[str, Any]]:
    return [(k, [1, minor] if k == "version" else v) for k, v in entries]


MALFORMED: dict[str, Callable[[bytes], bytes]] = {
    "a flipped byte": lambda d: d[:100] + bytes([d[100] ^ 1]) + d[101:],
    "truncated": lambda d: d[:-1],
    "a byte after the digest": lambda d: d + b"\x00",
    "a repeated key": lambda d: _reseal(_insert_before_encoder(_entries(d), "labels", ["a", "b"])),
    "an unknown key in a 1.0 bundle": lambda d: _reseal(_insert_before_encoder(_entries(d), "future", 1)),
    "an unknown release": lambda d: _reseal([(k, {**v, "extra": v["class_counts"]} if k == "releases" else v)
                                              for k, v in _entries(d)]),
    "requires a path this reader does not know": lambda d: _reseal(
        _insert_before_encoder(_with_version(_entries(d), 4), "requires", ["scoring.future_rule"])),
    "the ONNX weights not just before the digest": lambda d: _reseal(
        [(k, v) for k, v in _entries(d) if k != "labels"] + [("labels", dict(_entries(d))["labels"])]),
    "major version 2": lambda d: _reseal([(k, [2, 0] if k == "version" else v) for k, v in _entries(d)]),
    "an extension type": lambda d: _reseal(_insert_before_encoder(
        _with_version(_entries(d), 4), "future", msgpack.ExtType(5, b"x"))),
    "a pre-release bundle": lambda d: msgpack.packb({"format": "dpedge-bundle", "version": [4, 0],
                                                     "payload": b"\x80", "checksum": {}}, use_bin_type=True),
}


@pytest.mark.parametrize("what", MALFORMED)
def test_both_readers_refuse_the_same_malformed_containers(what, dp_bundle):
    data = MALFORMED[what](dp_bundle.read_bytes())
    with pytest.raises(BundleError) as theirs:
        fmt.unpack(data)
    with pytest.raises(Refused) as ours:
        Decoder(data)
    if what == "a pre-release bundle":
        assert "pre-release format 4.0" in str(theirs.value) and "pre-release" in str(ours.value)
    if what == "a flipped byte":
        assert "checksum mismatch" in str(theirs.value) and "checksum mismatch" in str(ours.value)


def test_both_readers_accept_a_newer_minor_with_fields_they_do_not_know(dp_bundle):
    """Section 2: a newer minor's unknown keys are ignored, and the answers do not change."""
    data = dp_bundle.read_bytes()
    newer = _reseal(_insert_before_encoder(_with_version(_entries(data), 4), "future_field", {"x": 1}))
    b = fmt.unpack(newer)
    assert b.version == (1, 4)
    x = np.random.default_rng(8).standard_normal((5, b.encoder.dim)).astype(np.float32)
    np.testing.assert_allclose([Decoder(newer).scores(v) for v in x], Scorer(b).scores(x), rtol=1e-9, atol=0)
    np.testing.assert_array_equal(Scorer(b).scores(x), Scorer(fmt.unpack(data)).scores(x))
