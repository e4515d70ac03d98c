"""The Python reader against the cases generated from the format's table (tests/schema_cases.py).

The same cases are the Java core's golden malformed bundles (android_demo/golden.py), so this
is the fast half of holding both readers to one list: no Java needed. Each case must be refused
with each of its phrases, every row of the table must have produced its cases, and the valid
variants must load.
"""

from __future__ import annotations

import collections

import pytest

import schema_cases
from runtime.bundle import unpack
from runtime.bundle.schema import FIELDS
from runtime.errors import BundleError


@pytest.fixture(scope="module")
def data(tables_bundle) -> bytes:
    """A real bundle with every field: class statistics, vote tables with offsets, the prior."""
    return tables_bundle.read_bytes()


@pytest.fixture(scope="module")
def cases(data) -> list[schema_cases.Case]:
    return schema_cases.malformed(schema_cases.small_base(data)) + schema_cases.real_encoder_cases(data)


def test_every_case_is_refused_with_its_phrases(cases):
    wrong = []
    for case in cases:
        try:
            unpack(case.data)
        except BundleError as exc:
            missing = [p for p in case.phrases if p not in str(exc)]
            if missing:
                wrong.append(f"{case.name}: {exc!s} lacks {missing}")
        else:
            wrong.append(f"{case.name}: accepted")
    assert not wrong, "\n".join(wrong[:20])


def test_every_row_of_the_table_has_its_cases(cases):
    """The generator skips no row: each field has the cases its kind and presence imply."""
    names = collections.defaultdict(set)
    for case in cases:
        path, _, mutation = case.name.partition("-")
        names[path].add(mutation)
    for f in FIELDS:
        if f.path in schema_cases.CONTAINER_FIELDS:
            continue
        have = names[f.path]
        expected = {"wrong-type"}
        if f.need == "required":
            expected.add("missing")
        if f.need.startswith("iff "):
            expected.add(f"absent-while-{f.need[4:].replace(' ', '-')}")
        if f.need == "optional":
            expected.add("nil")
        if f.kind == "float":
            expected |= {"integer", "nan", "inf", "-inf", "below-low", "above-high"}
        if f.kind == "int":
            expected |= {"float", "boolean", "below-low"}
        if f.kind == "ndarray":
            expected |= {"extra-key", "dtype-wider", "dtype-big-endian", "shape-rank", "data-short", "data-not-bin"}
        if f.kind == "map" and not f.open:
            expected.add("unknown-key")
        if f.text is not None:
            expected.add("unprintable" if f.kind == "str" else "item-unprintable")
        assert expected <= have, f"{f.path}: no case for {sorted(expected - have)}"
    assert len({c.data for c in cases}) == len(cases), "two cases are the same file"


def test_the_small_base_keeps_the_real_statistics(data):
    base = schema_cases.small_base(data)
    small, real = unpack(schema_cases.seal(base)), unpack(data)
    assert small.releases == real.releases and small.labels == real.labels
    assert (small.votes == real.votes).all() and (small.class_sums == real.class_sums).all()
    assert len(schema_cases.seal(base)) < len(data) / 50


def test_valid_variants_load(data):
    variants = dict(schema_cases.valid(schema_cases.small_base(data)))
    loaded = {name: unpack(d) for name, d in variants.items()}
    assert loaded["newer-minor-with-unknown-fields"].version == (1, 7)
    assert loaded["hashing-without-offsets"].offsets is None
    assert loaded["three-records-per-unit"].records_per_unit == 3
    assert loaded["seed-largest-uint64"].seed == 2**64 - 1
    assert loaded["float32-numbers"].epsilon == 8.0
