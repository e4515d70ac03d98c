"""Vote counting: one record adds exactly 1 to one class of one bucket per table."""

import numpy as np
import pytest

from exporter.votes import VoteCounter


def test_counts_match_a_loop_and_each_record_adds_exactly_one_per_table():
    rng = np.random.default_rng(0)
    tables, bits, classes, n = 7, 5, 4, 500
    buckets = rng.integers(0, 2**bits, size=(n, tables))
    labels = rng.integers(0, classes, size=n)
    counter = VoteCounter(tables, bits, classes)
    counter.add(buckets[:200], labels[:200])
    counter.add(buckets[200:], labels[200:])  # counting in chunks equals counting at once

    expected = np.zeros((tables, 2**bits, classes), np.int64)
    for i in range(n):
        for t in range(tables):
            expected[t, buckets[i, t], labels[i]] += 1
    assert np.array_equal(counter.counts, expected)
    assert counter.counts.sum(axis=(1, 2)).tolist() == [n] * tables
    assert counter.counts.dtype == np.int32


def test_neighbouring_datasets_differ_by_one_in_each_table():
    """The sensitivity argument: adding one record changes T cells by exactly 1 (L1 = T)."""
    rng = np.random.default_rng(1)
    buckets, labels = rng.integers(0, 8, size=(50, 6)), rng.integers(0, 3, size=50)
    d, d_plus = VoteCounter(6, 3, 3), VoteCounter(6, 3, 3)
    d.add(buckets[:-1], labels[:-1])
    d_plus.add(buckets, labels)
    diff = d_plus.counts.astype(np.int64) - d.counts
    assert np.abs(diff).sum() == 6 and diff.min() == 0 and diff.max() == 1
    assert (np.abs(diff).sum(axis=(1, 2)) == 1).all()


def test_rejects_out_of_range_ids():
    counter = VoteCounter(2, 3, 2)
    with pytest.raises(ValueError, match="out of range"):
        counter.add(np.array([[0, 8]]), np.array([0]))
    with pytest.raises(ValueError, match="out of range"):
        counter.add(np.array([[0, 1]]), np.array([2]))
    assert counter.counts.sum() == 0
