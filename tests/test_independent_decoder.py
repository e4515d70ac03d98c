"""docs/bundle-format.md is a contract a second implementation can follow: a decoder written
from it alone (tests/independent_decoder.py) gives every text the runtime's label and scores,
for every format the exporter writes (4.0 without vote tables, the default; 4.0 with them,
--votes-share; 1.2, --hashing random) and for bundles derived from them that exercise each
rule of the document (2.0 and 2.1 scoring, each centroid rule, both prior boosts and their
terms, missing components, per-person facts, Algorithm 2)."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any, Callable

import msgpack
import numpy as np
import pytest

from conftest import DATA

sys.path.insert(0, str(Path(__file__).resolve().parent))
from independent_decoder import Decoder  # noqa: E402
from runtime import Classifier  # noqa: E402
from runtime import bundle as fmt  # noqa: E402
from runtime.scoring import Scorer  # noqa: E402

SAMPLE_EXTRA = ["", "x", "?", "東京明天的天气怎么样？", "a" * 300, "wake me up at 6:30 tomorrow", "🎵🎶 play it"]


def _texts() -> list[str]:
    rows = [json.loads(line) for line in (DATA / "test.jsonl").read_text(encoding="utf-8").splitlines() if line]
    return [r["text"] for r in rows] + [t for t in SAMPLE_EXTRA if t.strip()]


@pytest.mark.parametrize("which,version,tables", [("dp_bundle", [4, 0], False), ("tables_bundle", [4, 0], True),
                                                  ("random_bundle", [1, 2], True)])
def test_independent_decoder_agrees_on_every_label(which, version, tables, request):
    """Every text of the assistant test split (and a few odd ones): the same label from the
    decoder as from the runtime, and the same scores to float rounding."""
    path = request.getfixturevalue(which)
    clf = Classifier.load(path, threads=1)
    dec = Decoder(Path(path).read_bytes())
    assert [dec.major, msgpack.unpackb(Path(path).read_bytes())["version"][1]] == version
    assert dec.has_tables == tables
    texts = _texts()
    embeddings = clf.embed(texts)
    preds = clf.predict(texts)
    agree = 0
    for emb, pred in zip(embeddings, preds):
        ours = dec.scores(emb)
        theirs = np.array([pred.scores[label] for label in clf.labels])
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)
        agree += dec.label(emb) == pred.label
    assert agree == len(texts), f"{agree}/{len(texts)} labels agree"


# ----------------------------------------------------------------------------- derived bundles

Edit = Callable[[dict[str, Any], dict[str, Any]], None]   # (outer, payload), changed in place


def derive(data: bytes, *edits: Edit) -> bytes:
    """The bundle with its outer map and payload edited, re-sealed with a correct checksum."""
    outer = msgpack.unpackb(data, raw=False)
    p = msgpack.unpackb(outer["payload"], raw=False)
    for edit in edits:
        edit(outer, p)
    outer["payload"] = msgpack.packb(p, use_bin_type=True)
    outer["checksum"]["digest"] = hashlib.sha256(outer["payload"]).digest()
    return msgpack.packb(outer, use_bin_type=True)


def consistent(p: dict[str, Any]) -> None:
    """Every release's scale sensitivity / share; the top level the headline release's (the
    votes release, else the last one: section 3), or sensitivity / epsilon without releases."""
    pr = p["privacy"]
    releases = pr.get("releases") or []
    for r in releases:
        r["noise_scale"] = r["sensitivity_l1"] / r["epsilon"]
    if releases:
        head = next((r for r in releases if r["statistic"] == "votes"), releases[-1])
        pr["sensitivity_l1"], pr["noise_scale"] = head["sensitivity_l1"], head["noise_scale"]
    else:
        pr["noise_scale"] = pr["sensitivity_l1"] / pr["epsilon"]


def scoring(**names: Any) -> Edit:
    """Names set in the scoring map (None: the name removed)."""
    def edit(o: dict, p: dict) -> None:
        for k, v in names.items():
            if v is None:
                p["scoring"].pop(k, None)
            else:
                p["scoring"][k] = v
    return edit


def version(major: int, minor: int) -> Edit:
    return lambda o, p: o.update(version=[major, minor])


def drop(*keys: str) -> Edit:
    return lambda o, p: [p.pop(k, None) for k in keys]


def epsilon(eps: float) -> Edit:
    """Epsilon and every share scaled to ``eps``, each scale following (as a release at that
    epsilon would have)."""
    def edit(o: dict, p: dict) -> None:
        pr = p["privacy"]
        factor = eps / float(pr["epsilon"])
        pr["epsilon"] = eps
        for r in pr.get("releases") or []:
            r["epsilon"] = float(r["epsilon"]) * factor
        consistent(p)
    return edit


def per_person(k: int) -> Edit:
    """K records per person: every sensitivity K times the per-record one."""
    def edit(o: dict, p: dict) -> None:
        pr = p["privacy"]
        old = pr.get("max_records_per_unit") or 1
        pr["max_records_per_unit"] = k
        pr["sensitivity_l1"] = pr["sensitivity_l1"] // old * k
        for r in pr.get("releases") or []:
            r["sensitivity_l1"] = r["sensitivity_l1"] // old * k
            r["max_records_per_unit"] = k
        consistent(p)
    return edit


def only_votes_release(o: dict, p: dict) -> None:
    """The class statistics' releases dropped: epsilon becomes what the votes release spent."""
    pr = p["privacy"]
    pr["releases"] = [r for r in pr["releases"] if r["statistic"] == "votes"]
    pr["epsilon"] = float(pr["releases"][0]["epsilon"])
    consistent(p)


def no_releases(o: dict, p: dict) -> None:
    """No releases at all (a 1.x bundle's facts): the votes release's numbers at the top."""
    only_votes_release(o, p)
    p["privacy"].pop("releases")
    consistent(p)


def floats(path: str, change: Callable[[np.ndarray], None]) -> Edit:
    def edit(o: dict, p: dict) -> None:
        *parents, last = path.split(".")
        node = p
        for key in parents:
            node = node[key]
        rec = node[last]
        a = np.frombuffer(rec["data"], "<f4").reshape(rec["shape"]).copy()
        change(a)
        rec["data"] = a.astype("<f4").tobytes()
    return edit


def _zero_row(a: np.ndarray) -> None:
    a[1] = 0.0


def _counts_odd(a: np.ndarray) -> None:
    a[0], a[1], a[2] = -3.0, 0.25, 0.0


def _counts_zero(a: np.ndarray) -> None:
    a[:] = 0.0


#: name -> edits of the default bundle (format 4.0, no vote tables).
FROM_DEFAULT: dict[str, tuple[Edit, ...]] = {
    "as-built": (),
    "custom-weights": (scoring(votes=0.5, centroids=2.0, prior=0.25, centroid_temperature=0.1, prior_temperature=0.02,
                               future_weight=3.0, note="ignored"),),
    "integer-weights": (scoring(votes=2, centroids=1, prior=3, centroid_temperature=1, prior_temperature=1,
                                prior_records_per_class=700),),
    "small-epsilon": (epsilon(0.5),),                                      # linear boost x16
    "tiny-epsilon-boost-capped": (epsilon(1e-4), floats("class_stats.counts", _counts_zero)),  # 7e6 -> 1e6
    "per-person-3": (per_person(3),),                                      # K enters the linear boost
    "linear-without-records": (scoring(prior_records_per_class=None),),    # b = 0: the prior adds nothing
    "max-boost": (scoring(prior_boost_rule="max"),),                       # 2.x's boost on 3.0 statistics
    "max-boost-count-term": (scoring(prior_boost_rule="max", prior_records_per_class=1e6), epsilon(0.5)),
    "no-boost-rule": (scoring(prior_boost_rule=None),),                    # absent: "max"
    "no-scoring-map": (drop("scoring"),),                                  # cosine rule, max boost
    "scoring-nil": (lambda o, p: p.update(scoring=None),),
    "no-prior": (drop("prior"),),
    "zero-class-sum": (floats("class_stats.sums", _zero_row),),           # that class's cosine is 0
    "counts-odd": (floats("class_stats.counts", _counts_odd),),
    "cosine-rule": (scoring(centroid_rule="cosine", centroid_temperature=0.05),),
    "gaussian-rule": (scoring(centroid_rule="gaussian", centroid_clip_l1=1, centroid_temperature=0.003),),
    "minor-3.7": (version(3, 7), lambda o, p: p.update(future_field={"x": 1})),
}

#: name -> edits of the bundle with vote tables (format 4.0, --votes-share 0.1).
FROM_TABLES: dict[str, tuple[Edit, ...]] = {
    "as-built": (),
    "as-2.1": (version(2, 1), scoring(centroid_rule="gaussian", centroid_clip_l1=3.05, centroid_temperature=0.003,
                                      prior_records_per_class=1000, prior_boost_rule=None)),
    "as-2.0": (version(2, 0), scoring(centroid_rule=None, centroid_clip_l1=None, prior_records_per_class=None,
                                      prior_boost_rule=None)),
    "votes-weighted": (scoring(votes=3.0, centroids=0.5),),
    "no-class-stats": (drop("class_stats"), only_votes_release, scoring(prior_boost_rule="max")),
    "no-prior": (drop("prior"),),
    "prior-only-besides-votes": (drop("class_stats", "scoring"), no_releases),
    "offsets-only": (drop("class_stats", "prior", "scoring"), no_releases),           # Algorithm 2
    "no-offsets": (lambda o, p: p["lsh"].pop("offsets"),),
    "stripped-to-1.2": (drop("class_stats", "prior", "scoring"), no_releases, version(1, 2),
                        lambda o, p: p["lsh"].pop("offsets")),
    "per-person-2": (per_person(2),),
    "small-epsilon": (epsilon(0.5),),
}


def _queries(dim: int, origin: np.ndarray | None) -> list[np.ndarray]:
    """Random unit vectors, the zero vector, one not of unit length, one near the public origin."""
    rng = np.random.default_rng(3)
    out = [v / np.linalg.norm(v) for v in rng.standard_normal((16, dim))]
    out += [np.zeros(dim), 3.0 * out[0], out[1] + out[2]]
    if origin is not None:
        out.append(origin + 0.01 * out[3])
    return [np.asarray(v, np.float32) for v in out]


@pytest.mark.parametrize("which,variants", [("dp_bundle", FROM_DEFAULT), ("tables_bundle", FROM_TABLES)])
def test_independent_decoder_covers_the_scored_variants(which, variants, request, tmp_path):
    """Bundles derived from the exporter's two format-4.0 bundles, each exercising one rule of
    section 9 (both boosts and their terms and cap, the three centroid rules, 2.0 and 2.1
    bundles, missing components, K, Algorithm 2), score alike in both decoders, on embeddings
    of the test split and on unusual vectors."""
    data = Path(request.getfixturevalue(which)).read_bytes()
    clf = Classifier.load(request.getfixturevalue(which), threads=1)
    texts = _texts()[:40]
    base = fmt.unpack(data)
    embedded = [np.asarray(e, np.float32) for e in clf.embed(texts)]
    origin = None if base.class_stats is None else np.asarray(base.class_stats.origin, np.float64)
    embeddings = embedded + _queries(base.encoder.dim, origin)
    seen_boosts = {}
    for name, edits in variants.items():
        blob = derive(data, *edits)
        path = tmp_path / f"{name}.dpedge"
        path.write_bytes(blob)
        b = fmt.load(path)  # every variant is a valid bundle
        scorer = Scorer.from_bundle(b)
        dec = Decoder(blob)
        assert dec.has_tables == (b.votes is not None), name
        if b.prior is not None:
            assert dec.boost() == pytest.approx(scorer.prior_boost, rel=1e-12), name
            seen_boosts[name] = dec.boost()
        for e in embeddings:
            theirs = scorer.scores(e[None, :])[0]
            ours = dec.scores(e)
            np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12, err_msg=name)
            assert int(np.argmax(theirs)) == int(np.flatnonzero(ours == ours.max())[0]), name
    if which == "dp_bundle":  # the boost's regimes were all reached
        assert seen_boosts["tiny-epsilon-boost-capped"] == 1e6
        assert seen_boosts["linear-without-records"] == 0.0
        assert seen_boosts["per-person-3"] == pytest.approx(3 * seen_boosts["as-built"])
        assert 0 < seen_boosts["as-built"] < 1 < seen_boosts["small-epsilon"]
        assert seen_boosts["max-boost"] == 1.0 and seen_boosts["max-boost-count-term"] > 2.0


def test_derived_variants_differ_from_the_base(dp_bundle, tables_bundle):
    """The variants are not the base in disguise: each changes some label or score."""
    rng = np.random.default_rng(5)
    x = [np.asarray(v / np.linalg.norm(v), np.float32) for v in rng.standard_normal((8, 384))]
    for data, variants in ((dp_bundle.read_bytes(), FROM_DEFAULT), (tables_bundle.read_bytes(), FROM_TABLES)):
        base = Decoder(data)
        ref = np.array([base.scores(e) for e in x])
        for name, edits in variants.items():
            if name in ("as-built", "minor-3.7", "scoring-nil", "no-boost-rule"):
                continue
            ours = np.array([Decoder(derive(data, *edits)).scores(e) for e in x])
            assert not np.allclose(ours, ref, rtol=1e-12, atol=0), name

