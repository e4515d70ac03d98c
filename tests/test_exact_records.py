"""Every record's integers depend on that record alone.

A record's projection, clip, grid value and bucket must be the same bits whether it is
processed alone or beside any other records: otherwise adding or removing one record could
move another's integer at a grid or hyperplane boundary, and two neighbouring datasets could
differ by more than the stated sensitivity. The unit tests run the same rows alone and in
blocks of every size; the builds run the local engine with blocks of other sizes, and a
boundary audit removes the record at the end of the first block, so that every record after it
moves to another block, and checks that the exact statistics differ by exactly that one
record's integers, computed alone. (tests/test_ray_engine.py holds the Ray engine's exact
statistics equal to the local engine's, for shards of 100 and 77 lines.)
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from exporter.class_stats import QUANTUM, clip_and_quantize, clip_steps
from exporter.public_basis import PublicBasis
from runtime.rowwise import row_products
from runtime.simhash import SimHasher

N, D, K, T, H = 37, 384, 32, 8, 10


@pytest.fixture(scope="module")
def rows():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((N, D)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q, _ = np.linalg.qr(rng.standard_normal((D, K)))
    basis = PublicBasis((rng.standard_normal(D) * 0.05).astype(np.float32), q.T.astype(np.float32))
    planes = rng.standard_normal((T, H, D)).astype(np.float32)
    offsets = (rng.standard_normal((T, H)) * 0.01).astype(np.float32)
    return x, basis, SimHasher(planes, offsets)


def _in_blocks(f, x: np.ndarray, size: int) -> np.ndarray:
    return np.concatenate([f(x[i:i + size]) for i in range(0, len(x), size)])


def test_products_are_the_same_bits_alone_and_in_blocks_of_every_size(rows):
    x, basis, hasher = rows
    alone = np.concatenate([basis.project(x[i:i + 1]) for i in range(N)])
    for size in range(1, N + 1):
        assert np.array_equal(_in_blocks(basis.project, x, size), alone), size


@pytest.mark.parametrize("clip_l1", [0.3, 1.13, 5.0])
def test_grid_rows_and_buckets_are_the_same_alone_and_in_blocks_of_every_size(rows, clip_l1):
    x, basis, hasher = rows
    steps = clip_steps(clip_l1)

    def grid(block: np.ndarray) -> np.ndarray:
        return clip_and_quantize(basis.project(block), steps)

    grid_alone = np.concatenate([grid(x[i:i + 1]) for i in range(N)])
    buckets_alone = np.concatenate([hasher.buckets(x[i:i + 1]) for i in range(N)])
    assert np.abs(grid_alone).sum(axis=1).max() <= steps
    for size in range(1, N + 1):
        assert np.array_equal(_in_blocks(grid, x, size), grid_alone), size
        assert np.array_equal(_in_blocks(hasher.buckets, x, size), buckets_alone), size


def test_rows_on_a_grid_boundary_round_alike_in_any_block(rows):
    """Rows built to lie within 1e-15 of grid steps and hyperplanes: where a block-dependent
    summation order would flip them, the row-wise one cannot."""
    x, basis, hasher = rows
    z = basis.project(x)
    # Shift each embedding along the first basis direction so that its first coordinate is
    # (almost) exactly on a grid step.
    target = np.round(z[:, 0] * QUANTUM) / QUANTUM
    direction = basis.projection[0].astype(np.float64)
    near = (x + (target - z[:, 0])[:, None] * direction[None, :]).astype(np.float32)
    steps = clip_steps(100.0)  # no clipping: the grid value is trunc(z * 100)
    alone = np.concatenate([clip_and_quantize(basis.project(near[i:i + 1]), steps) for i in range(N)])
    for size in (2, 3, 16, N):
        assert np.array_equal(np.concatenate([clip_and_quantize(basis.project(near[i:i + size]), steps)
                                              for i in range(0, N, size)]), alone)


def test_row_products_sum_in_ascending_order():
    """The order the Java and TypeScript runtimes sum in: ((x0 m0 + x1 m1) + x2 m2) + ..."""
    x = np.array([[1e16, 1.0, -1e16]])
    m = np.array([[1.0], [1.0], [1.0]])
    assert row_products(x, m)[0, 0] == 0.0  # (1e16 + 1) rounds to 1e16, then - 1e16
    assert row_products(x[:, ::-1].copy(), m)[0, 0] == 0.0


def test_non_finite_projections_are_refused_before_any_integer():
    with pytest.raises(ValueError, match="not finite"):
        clip_and_quantize(np.array([[0.5, np.nan]]), 100)
    with pytest.raises(ValueError, match="not finite"):
        clip_and_quantize(np.array([[np.inf, 0.0]]), 100)


def test_an_exact_value_out_of_range_is_refused_without_showing_it():
    from exporter.privacy import BudgetError, PrivacyBudget
    from noise_hooks import ConstantNoise

    budget = PrivacyBudget(1.0, noise_for_tests=ConstantNoise(0))
    for value in (np.iinfo(np.int64).min, 2**40, -(2**40)):
        with pytest.raises(BudgetError) as err:
            budget.release("class_counts", np.array([3, value], np.int64), sensitivity=1, mechanism="m")
        assert str(abs(value)) not in str(err.value) and str(value) not in str(err.value)


# -- builds: the local engine in blocks of other sizes, and the boundary audit ---------------

def _records_without(src, dst, index: int) -> dict:
    lines = [line for line in src.read_text(encoding="utf-8").splitlines() if line.strip()]
    removed = json.loads(lines[index])
    dst.write_text("\n".join(lines[:index] + lines[index + 1:]) + "\n", encoding="utf-8")
    return removed


@pytest.mark.exporter
@pytest.mark.parametrize("hashing", ["aligned", "random"])
def test_the_local_engine_gives_the_same_integers_in_blocks_of_any_size(exported_encoder, tmp_path, monkeypatch,
                                                                        hashing):
    from conftest import build_options
    from exporter import local_engine
    from exporter.build import build
    from noise_hooks import ConstantNoise
    from runtime import bundle as bundle_format

    got = {}
    for size in (1, 7, 256):
        monkeypatch.setattr(local_engine, "CHUNK_RECORDS", size)
        out = tmp_path / f"{hashing}-{size}.dpedge"
        build(build_options(out, hashing=hashing, votes_share=0.1 if hashing == "aligned" else 0.0),
              noise_for_tests=ConstantNoise(0))
        got[size] = bundle_format.load(out)
    for size in (1, 7):
        for field in ("class_counts", "class_sums", "votes", "hyperplanes", "offsets"):
            a, b = getattr(got[size], field), getattr(got[256], field)
            assert (a is None and b is None) or np.array_equal(a, b), (size, field)


@pytest.mark.exporter
def test_neighbours_across_a_block_boundary_differ_by_exactly_one_record(exported_encoder, tmp_path):
    """D and D' = D without its 256th record (the last of the first block of 256): every
    later record moves to another block. With the noise pinned to zero, the exact class sums
    and vote tables of D and D' differ by exactly the removed record's grid row and its one
    vote per table, each computed from that record alone: never more than the sensitivity."""
    from conftest import DATA, build_options
    from exporter.build import build
    from noise_hooks import ConstantNoise
    from runtime import bundle as bundle_format
    from runtime.embedder import Embedder

    neighbour = tmp_path / "without-256.jsonl"
    removed = _records_without(DATA / "train.jsonl", neighbour, 255)
    for hashing in ("aligned", "random"):
        full, less = tmp_path / f"{hashing}-d.dpedge", tmp_path / f"{hashing}-d1.dpedge"
        build(build_options(full, hashing=hashing), noise_for_tests=ConstantNoise(0))
        build(build_options(less, train=neighbour, hashing=hashing), noise_for_tests=ConstantNoise(0))
        b, b1 = bundle_format.load(full), bundle_format.load(less)
        c = b.labels.index(removed["label"])
        emb = Embedder(b.encoder, threads=1).embed([removed["text"]])
        if hashing == "aligned":
            assert b.class_sums.shape == b1.class_sums.shape, "the neighbours chose different subspaces"
            assert np.array_equal(b.projection, b1.projection) and np.array_equal(b.origin, b1.origin)
            facts = b.releases["class_sums"]
            row = clip_and_quantize(PublicBasis(b.origin, b.projection).project(emb), clip_steps(facts.clip_l1))[0]
            diff = b.class_sums.astype(np.int64) - b1.class_sums.astype(np.int64)
            expected = np.zeros_like(diff)
            expected[c] = row
            assert np.array_equal(diff, expected)
            assert np.abs(diff).sum() <= facts.sensitivity_l1
        else:
            assert np.array_equal(b.hyperplanes, b1.hyperplanes)  # data-independent (same seed)
            buckets = SimHasher(b.hyperplanes, b.offsets).buckets(emb)[0]
            diff = b.votes.astype(np.int64) - b1.votes.astype(np.int64)
            expected = np.zeros_like(diff)
            expected[np.arange(len(buckets)), buckets, c] = 1
            assert np.array_equal(diff, expected)
