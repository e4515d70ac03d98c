"""What reading a bundle costs in memory: each array's bytes land in their final buffer once (from
a file: one read, never copied again; from bytes in memory: views of them), and validating the
arrays (finiteness) makes no temporary of an array's size. benchmarks/load_memory.py measures
the same at scale (235 MB of vote tables) in the command line's processes.

The bundle is the corpus's tables bundle with bigger vote tables and hyperplanes (written by the
project's writer, so sealed and valid): 14 MiB of int16 votes and 1.25 MiB of float32
hyperplanes. Memory is what tracemalloc sees (numpy reports its buffers to it).
"""

from __future__ import annotations

import dataclasses
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT
from runtime import BundleError
from runtime import bundle as fmt
from runtime.bundle.schema import Key

pytestmark = pytest.mark.check

BASE = ROOT / "format" / "1" / "corpus" / "accept" / "tables.dpedge"
TABLES, BITS = 1024, 10
#: What reading may allocate beyond what the bundle keeps: parsing headers, the tokenizer's and
#: the model's checks (about 55 KiB for this bundle), never anything of an array's size (a
#: finiteness mask of the hyperplanes alone is 320 KiB: reading peaked 268 KiB over what it kept).
TRANSIENT = 128 * 2**10


def _bigger(b: fmt.Bundle, tables: int, bits: int, seed: int = 5) -> fmt.Bundle:
    """``b`` with T x 2^H x C vote tables and T x H x D hyperplanes (the votes release's
    sensitivity and scale follow T)."""
    rng = np.random.default_rng(seed)
    votes = b.releases[Key.VOTES]
    sensitivity = b.records_per_unit * tables
    releases = {**b.releases, Key.VOTES: dataclasses.replace(votes, sensitivity_l1=sensitivity,
                                                             noise_scale=sensitivity / votes.epsilon)}
    return dataclasses.replace(
        b, releases=releases, votes=rng.integers(-300, 300, (tables, 2**bits, len(b.labels)), dtype=np.int16),
        hyperplanes=rng.standard_normal((tables, bits, b.encoder.dim), dtype=np.float32),
        offsets=(0.01 * rng.standard_normal((tables, bits))).astype(np.float32))


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> tuple[fmt.Bundle, bytes, Path]:
    b = _bigger(fmt.load(BASE), TABLES, BITS)
    data = fmt.pack(b)
    path = tmp_path_factory.mktemp("load-memory") / "big-tables.dpedge"
    path.write_bytes(data)
    return b, data, path


def _traced(read) -> tuple[fmt.Bundle, int, int]:
    """``read()``'s bundle, the bytes it keeps and the peak while reading (tracemalloc)."""
    read()  # the first read caches the contract's tables: not the reader's cost
    tracemalloc.start()
    try:
        b = read()
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return b, kept, peak


def test_a_file_is_read_into_each_arrays_buffer_once(big):
    written, _, path = big
    b, kept, peak = _traced(lambda: fmt.load(path))
    arrays = b.votes.nbytes + b.hyperplanes.nbytes
    assert np.array_equal(b.votes, written.votes) and np.array_equal(b.hyperplanes, written.hyperplanes)
    assert not b.votes.flags.writeable and not b.hyperplanes.flags.writeable  # as before: the file's values
    assert kept < arrays + 2**20, f"keeps {kept / 2**20:.1f} MiB for {arrays / 2**20:.1f} MiB of arrays"
    assert peak - kept < TRANSIENT, f"{(peak - kept) / 2**10:.0f} KiB of temporaries while reading"
    assert peak < 1.1 * arrays


def test_bytes_in_memory_are_read_as_views(big):
    _, data, _ = big
    b, kept, peak = _traced(lambda: fmt.unpack(data))
    assert np.shares_memory(b.votes, np.frombuffer(data, np.uint8))
    assert kept < 2**20, f"keeps {kept / 2**20:.1f} MiB: an array was copied"
    assert peak - kept < TRANSIENT, f"{(peak - kept) / 2**10:.0f} KiB of temporaries while reading"


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("at", [0, -1, "middle"])
def test_a_value_that_is_not_finite_is_refused_wherever_it_is(value, at):
    b = _bigger(fmt.load(BASE), 8, 4)
    planes = b.hyperplanes.copy()
    flat = planes.reshape(-1)
    flat[flat.size // 2 if at == "middle" else at] = value
    with pytest.raises(BundleError) as info:
        fmt.unpack(fmt.pack(dataclasses.replace(b, hyperplanes=planes)))
    assert (info.value.code, info.value.path) == ("field.not_finite", "hashing.hyperplanes")


def test_the_scorer_keeps_no_copy_of_the_vote_tables(big):
    """The blend reads negative vote cells as 0 on the query's gathered cells, never on a copy of
    the tables (which doubled a large bundle's memory); the scores are the same."""
    from runtime.scoring import Scorer

    b = big[0]
    tracemalloc.start()
    try:
        scorer = Scorer(b)
        kept, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # what it keeps: the hyperplanes in float64 (twice their float32 bytes) and small things
    assert kept < 2 * b.hyperplanes.nbytes + 2**20 < 0.5 * b.votes.nbytes, (kept, b.votes.nbytes)
    x = np.random.default_rng(4).standard_normal((3, b.encoder.dim)).astype(np.float32)
    scores = scorer.scores(x)
    assert np.allclose(scores.sum(axis=1), 1.0) and scores.min() >= 0.0
