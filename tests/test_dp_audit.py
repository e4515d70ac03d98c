"""Privacy evidence: an empirical audit of the real release, and what a bundle contains.

The audit (tests/dp_audit.py) runs the real `release_votes` thousands of times on two
neighbouring datasets, D and D' = D + {x}, hashed and counted by the product's own SimHasher
and VoteCounter under fixed hyperplanes, and bounds the privacy loss from below with
Clopper-Pearson intervals. The correct release must stay at or below its stated epsilon;
each planted bug (tests/noise_hooks.py) must push the bound above it, which shows the audit
has the power to catch them.
"""

import msgpack
import numpy as np
import pytest

from dp_audit import epsilon_lower_bound, run_statistic
from exporter.counting import VoteCounter
from exporter.hyperplanes import draw_hyperplanes
from exporter.release import release_votes
from noise_hooks import ConstantSeedNoise, HalvedScaleNoise, NonEmptyOnlyNoise, ScaleIgnoresUnitNoise
from runtime.simhash import SimHasher

EPSILON = 1.0
TABLES, BITS, DIM, CLASSES = 2, 1, 16, 2
RUNS = 3000          # releases per dataset, each a separate call
ALPHA = 1e-3         # chance that a correct release fails the audit
THRESHOLDS = range(-3, 5)


@pytest.fixture(scope="module")
def neighbours():
    """D: 12 records (fixed hyperplanes, T=2, H=1); x: a class-1 record whose bucket holds no
    class-1 record of D in either table, so D' = D + {x} turns empty cells non-empty."""
    hasher = SimHasher(draw_hyperplanes(seed=7, tables=TABLES, bits=BITS, dim=DIM))
    rng = np.random.default_rng(0)  # test data, not noise
    points = rng.standard_normal((400, DIM))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    codes = hasher.buckets(points)
    x, x_cells = points[0], codes[0]
    elsewhere = np.all(codes != x_cells, axis=1)  # in neither of x's buckets
    d_points = np.vstack([points[1:7], points[elsewhere][:6]])  # class 0 anywhere, class 1 elsewhere
    d_labels = np.array([0] * 6 + [1] * 6)

    def counts(pts, labels):
        c = VoteCounter(TABLES, BITS, CLASSES)
        c.add(hasher.buckets(pts), labels)
        return c.counts

    d = counts(d_points, d_labels)
    dp = counts(np.vstack([d_points, x]), np.append(d_labels, 1))
    assert (d[np.arange(TABLES), x_cells, 1] == 0).all() and (dp - d).sum() == TABLES
    return d, dp, x_cells


def audit(neighbours, noise=None, records_per_unit: int = 1):
    """With records_per_unit = K > 1, D' adds one person with K records (all like x) and the
    release is the per-person one (scale K*T/epsilon)."""
    d, dp, cells = neighbours
    dp = d + records_per_unit * (dp - d)
    unit = None if records_per_unit == 1 else "person"

    def release(counts):
        return release_votes(counts, EPSILON, unit=unit, max_records_per_unit=records_per_unit,
                             noise_for_tests=noise).votes

    stat_d = run_statistic(release, d, cells, label=1, runs=RUNS)
    stat_dp = run_statistic(release, dp, cells, label=1, runs=RUNS)
    result = epsilon_lower_bound(stat_d, stat_dp, THRESHOLDS, ALPHA)
    print(f"\n{type(noise).__name__ if noise else 'OpenDP (product)'}: epsilon lower bound "
          f"{result.epsilon_lower:.3f} from '{result.event}' over {RUNS} releases each of D and D'")
    return result


def test_the_real_release_stays_within_its_epsilon(neighbours):
    result = audit(neighbours)
    assert result.epsilon_lower <= EPSILON
    # and it is not vacuous: the tightest event gets close to the stated epsilon
    assert result.epsilon_lower > 0.4 * EPSILON


@pytest.mark.parametrize("bug", [HalvedScaleNoise, NonEmptyOnlyNoise, ConstantSeedNoise],
                         ids=["scale T/(2 eps)", "noise only on non-empty buckets", "constant seed"])
def test_the_audit_catches_a_planted_bug(neighbours, bug):
    assert audit(neighbours, bug()).epsilon_lower > EPSILON


PERSON_RECORDS = 3


def test_the_per_person_release_stays_within_its_epsilon_for_a_person(neighbours):
    """One person with K = 3 records, all in x's cells: the per-person release (scale K*T/eps)
    bounds that person's privacy loss by epsilon."""
    result = audit(neighbours, records_per_unit=PERSON_RECORDS)
    assert 0.4 * EPSILON < result.epsilon_lower <= EPSILON


def test_the_audit_catches_a_per_person_scale_that_ignores_k(neighbours):
    assert audit(neighbours, ScaleIgnoresUnitNoise(PERSON_RECORDS), records_per_unit=PERSON_RECORDS).epsilon_lower > EPSILON


def test_bundle_holds_only_noisy_tables_and_public_inputs(dp_bundle, exported_encoder):
    """Every field of the payload is accounted for: the noisy tables, public inputs (labels,
    descriptions, seeded hyperplanes, the pretrained encoder and its check text) and facts
    about the mechanism. No exact counts, embeddings, record ids or record count."""
    from conftest import DATA
    from exporter.dataset import read_labels, read_records
    from runtime import Classifier

    outer = msgpack.unpackb(dp_bundle.read_bytes(), raw=False)
    payload = msgpack.unpackb(outer["payload"], raw=False)
    assert set(outer) == {"format", "version", "checksum", "payload"}
    assert set(payload) == {"labels", "label_descriptions", "privacy", "lsh", "votes", "encoder", "exporter",
                            "class_stats", "prior", "scoring"}  # class_stats: the second noisy release
    assert set(payload["encoder"]) == {"format", "model", "tokenizer_json", "max_length", "dim", "pooling",
                                       "normalized", "inputs", "output", "facts", "check"}
    # the encoder is the public export, byte for byte: it was not touched by the records
    assert payload["encoder"]["model"] == (exported_encoder.directory / "model.onnx").read_bytes()
    assert payload["encoder"]["check"]["text"] == exported_encoder.facts["check"]["text"]
    assert set(payload["lsh"]) == {"family", "tables", "bits", "dim", "seed", "distribution", "bit_rule", "hyperplanes",
                                   "offsets", "bits_rule"}  # offsets: post-processing of the class statistics
    assert set(payload["exporter"]) == {"name", "version", "created"}

    clf = Classifier.load(dp_bundle, threads=1)
    labels = read_labels(DATA / "labels.txt")
    records = list(read_records(DATA / "train.jsonl", labels))
    n = len(records)
    # the hyperplanes are a seeded draw inside the span of the *released* noisy class
    # statistics (post-processing), not fitted to the records
    from exporter.hyperplanes import aligned_hyperplanes
    from exporter.public_basis import PublicBasis
    cs = clf.bundle.class_stats
    planes, offsets = aligned_hyperplanes(1234, clf.bundle.tables, clf.bundle.bits, PublicBasis(cs.origin, cs.projection),
                                          cs.sums, cs.counts)
    assert np.allclose(planes, clf.bundle.hyperplanes, atol=1e-4) and np.allclose(offsets, clf.bundle.offsets, atol=1e-4)
    # the released votes are not the exact counts (noise on every cell, empty ones included)
    counter = VoteCounter(clf.bundle.tables, clf.bundle.bits, len(labels))
    counter.add(clf.scorer.hasher.buckets(clf.embed([r.text for r in records])), np.array([r.label for r in records]))
    votes = clf.bundle.votes.astype(np.int64)
    assert np.mean(votes != counter.counts) > 0.5 and np.mean(votes[counter.counts == 0] != 0) > 0.5
    assert counter.counts.astype("<i2").tobytes() not in outer["payload"]
    # no record count anywhere in the metadata (the votes' own total is a noisy statistic)
    metadata = msgpack.packb({k: v for k, v in payload.items() if k not in ("votes", "lsh", "encoder", "class_stats", "prior")})
    assert str(n).encode() not in metadata and msgpack.packb(n) not in msgpack.packb(payload["privacy"])
    # no record embedding: nothing in the payload is a record's embedding (the only vector
    # besides the hyperplanes is the check text's)
    check = np.frombuffer(payload["encoder"]["check"]["embedding"]["data"], "<f4")
    emb = clf.embed([r.text for r in records])
    assert float((emb @ check).max()) < 0.99
    blob = dp_bundle.read_bytes()
    assert emb[:20].astype("<f4").tobytes()[:64] not in blob
    for r in records[:50]:
        assert r.text.encode() not in blob  # no training text is shipped
