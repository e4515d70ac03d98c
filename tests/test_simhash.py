"""SimHash bucket ids against a brute-force transcription of Algorithm 1, lines 12-16."""

import numpy as np
import pytest

from exporter.hyperplanes import draw_hyperplanes
from runtime.simhash import SimHasher


def brute_force_bucket(x: np.ndarray, planes_t: np.ndarray) -> int:
    """u = sum_{h=1..H} b_h 2^(h-1), b_h = [<x, r_h> > 0], one hyperplane at a time."""
    u = 0
    for h in range(1, len(planes_t) + 1):
        dot = sum(float(a) * float(b) for a, b in zip(x, planes_t[h - 1]))
        b_h = 1 if dot > 0 else 0
        u += b_h * 2 ** (h - 1)
    return u


@pytest.mark.parametrize("tables,bits,dim", [(1, 1, 3), (3, 6, 16), (5, 12, 384), (2, 20, 8)])
def test_buckets_match_brute_force(tables, bits, dim):
    planes = draw_hyperplanes(seed=tables * 100 + bits, tables=tables, bits=bits, dim=dim)
    x = np.random.default_rng(bits).standard_normal((25, dim)).astype(np.float32)
    got = SimHasher(planes).buckets(x)
    expected = [[brute_force_bucket(row, planes[t]) for t in range(tables)] for row in x]
    assert got.tolist() == expected
    assert got.min() >= 0 and got.max() < 2**bits


def test_bit_order_hyperplane_zero_is_least_significant():
    planes = np.eye(4, dtype=np.float32)[None]  # one table; hyperplane h is axis h
    hasher = SimHasher(planes)
    assert hasher.buckets(np.array([[1, 0, 0, 0]], np.float32)).tolist() == [[1]]
    assert hasher.buckets(np.array([[0, 0, 0, 1]], np.float32)).tolist() == [[8]]
    assert hasher.buckets(np.array([[1, -1, 1, -1]], np.float32)).tolist() == [[5]]


def test_zero_dot_product_gives_bit_zero():
    """The strict '>' of Algorithm 1: a vector orthogonal to a hyperplane gets bit 0."""
    planes = np.array([[[1, 0], [0, 1]]], np.float32)
    assert SimHasher(planes).buckets(np.array([[0, 0], [0, 1]], np.float32)).tolist() == [[0], [2]]


def test_hyperplanes_are_unit_length_and_reproducible_from_seed():
    a = draw_hyperplanes(42, 4, 6, 384)
    assert a.dtype == np.float32 and a.shape == (4, 6, 384)
    assert np.allclose(np.linalg.norm(a, axis=-1), 1, atol=1e-6)
    assert np.array_equal(a, draw_hyperplanes(42, 4, 6, 384))
    assert not np.array_equal(a, draw_hyperplanes(43, 4, 6, 384))


def test_rejects_wrong_embedding_width():
    with pytest.raises(ValueError, match="embeddings must be"):
        SimHasher(draw_hyperplanes(1, 2, 3, 8)).buckets(np.zeros((1, 9), np.float32))
