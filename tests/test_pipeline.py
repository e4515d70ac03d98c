"""End to end with the real encoder: exporter and runtime hash alike, the bundle states its
privacy facts, and the classifier handles awkward input. (What else the bundle holds is
accounted for field by field in test_dp_audit.py.)"""

import numpy as np
import pytest

from exporter.build import BuildError, build
from exporter.options import check_shape
from exporter.votes import VoteCounter
from exporter.dataset import read_labels, read_records
from runtime import Classifier, InputError
from runtime import bundle as fmt
from conftest import DATA, build_options

TEXTS = ["wake me at 7", "is it windy on the coast", "play the next track", "reply to Ana: sounds good",
         "fastest way to the stadium", "what's on my calendar tomorrow", "set the thermostat to 20",
         "Play Beyoncé 🎵", "Zürich weather", "x", "?" * 3]


@pytest.fixture(scope="module")
def clf(dp_bundle):
    return Classifier.load(dp_bundle, threads=2)


def test_runtime_reproduces_the_exporters_exact_counts(exact_bundle):
    """With noise pinned to zero (test hook), recount the training set from the runtime's own
    tokenizer, encoder and hasher: it must equal the released table cell for cell."""
    clf = Classifier.load(exact_bundle)
    labels = read_labels(DATA / "labels.txt")
    records = list(read_records(DATA / "train.jsonl", labels))
    buckets = clf.scorer.hasher.buckets(clf.embed([r.text for r in records]))
    counter = VoteCounter(clf.bundle.tables, clf.bundle.bits, len(labels))
    counter.add(buckets, np.array([r.label for r in records]))
    assert np.array_equal(counter.counts, clf.bundle.votes)
    assert clf.bundle.votes.sum() == len(records) * clf.bundle.tables
    assert "NOT differentially private" in clf.privacy["noise_source"]


def test_batch_equals_one_text_at_a_time(clf, dp_bundle):
    """Exactly, bit for bit: an embedding depends on its text only, not on its batch, its
    onnxruntime thread count or how many texts run in parallel."""
    batch = clf.classify(TEXTS)
    single = [clf.classify([t])[0] for t in TEXTS]
    assert batch == single
    reference = np.vstack([clf.embed([t]) for t in TEXTS])
    assert np.array_equal(clf.embed(TEXTS), reference)
    parallel = Classifier.load(dp_bundle, threads=1, workers=2)
    assert np.array_equal(parallel.embed(TEXTS), reference)


def test_predictions_carry_every_label_and_argmax(clf):
    for p in clf.classify(TEXTS):
        assert list(p.scores) == list(clf.labels)
        assert p.label == max(p.scores, key=p.scores.get)
        assert p.top(3)[0][0] == p.label and len(p.top(3)) == 3


def test_embeddings_are_unit_vectors(clf):
    assert np.allclose(np.linalg.norm(clf.embed(TEXTS), axis=1), 1, atol=1e-4)


def test_bad_query_texts(clf):
    with pytest.raises(InputError, match="text 1: there is nothing to classify"):
        clf.classify(["fine", "   \n\t"])
    with pytest.raises(InputError, match="over the limit"):
        clf.classify(["a" * 1_000_001])
    with pytest.raises(InputError, match="must be a string"):
        clf.classify([None])
    long_text = " ".join(["the meeting moved to the large room on the third floor"] * 200)  # far over 256 tokens
    assert clf.classify([long_text])[0].label in clf.labels


@pytest.mark.exporter
def test_bundle_privacy_facts(dp_bundle, tables_bundle):
    b = fmt.load(dp_bundle)
    p = b.privacy
    counts, sums = b.releases["class_counts"], b.releases["class_sums"]
    assert (p["epsilon"], p["delta"]) == (8.0, 0.0)
    assert counts.epsilon == pytest.approx(0.4) and sums.epsilon == pytest.approx(7.6)
    assert sums.noise_scale == pytest.approx(sums.sensitivity_l1 / 7.6)
    assert p["neighbour_relation"] == "add or remove one record"
    assert p["noise_library"] == "opendp" and "NOT" not in p["noise_source"]
    assert b.encoder.facts["fidelity"]["mean_cosine"] >= 0.99
    assert b.hyperplanes is None and b.votes is None
    t = fmt.load(tables_bundle)
    votes = t.releases["votes"]
    assert votes.sensitivity_l1 == 32 and votes.noise_scale == pytest.approx(32 / (8.0 * 0.1))
    assert t.seed == 1234


@pytest.mark.exporter
def test_hashing_settings_are_checked_before_any_work(tmp_path):
    with pytest.raises(BuildError, match=r"--bits must be between 1 and 20"):
        check_shape(4, 21, 3)
    with pytest.raises(BuildError, match=r"--tables must be between 1 and 128"):
        check_shape(129, 6, 3)
    with pytest.raises(BuildError, match=r"128 x 2\^20 x 7 = .* = 1,792.0 MiB, over the limit of 64 MiB"):
        check_shape(128, 20, 7)
    check_shape(128, 16, 2, max_table_mib=64)  # exactly 32 MiB: allowed
    with pytest.raises(BuildError, match="epsilon must be"):
        build(build_options(tmp_path / "x.dpedge", epsilon=0))
    assert not (tmp_path / "x.dpedge").exists()


@pytest.mark.exporter
def test_empty_dataset_writes_nothing(tmp_path, exported_encoder):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(BuildError, match="no records"):
        build(build_options(tmp_path / "e.dpedge", train=empty))
    assert not (tmp_path / "e.dpedge").exists()
