"""Releases that add up (`exporter build --extend`): a batch of new records released with an
earlier bundle's public choices, summed with it.

With the noise pinned to zero (the test hook), a chain of batches holds exactly the statistics
of one build of all their records in the same basis and clip, and states the same privacy facts
per record, the batches counted. Settings that would not add up are refused, naming what to
change.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import DATA, build_options
from exporter.build import build
from exporter.options import BuildError
from noise_hooks import ConstantNoise
from runtime import BundleError
from runtime.describe import privacy_summary
from runtime import bundle as fmt

pytestmark = pytest.mark.exporter


@pytest.fixture(scope="module")
def batches(tmp_path_factory) -> list[Path]:
    """The assistant training records in three disjoint batches."""
    folder = tmp_path_factory.mktemp("batches")
    lines = (DATA / "train.jsonl").read_text(encoding="utf-8").splitlines()
    paths = []
    for i in range(3):
        p = folder / f"batch{i}.jsonl"
        p.write_text("\n".join(lines[i::3]) + "\n", encoding="utf-8")
        paths.append(p)
    return paths


@pytest.fixture(scope="module")
def chain(batches, tmp_path_factory) -> list[Path]:
    """Batch 0 built (class statistics and vote tables), then extended with batches 1 and 2."""
    folder = tmp_path_factory.mktemp("chain")
    out = [folder / "b0.dpedge"]
    build(build_options(out[0], train=batches[0], votes_share=0.1), noise_for_tests=ConstantNoise(0))
    for i in (1, 2):
        out.append(folder / f"b{i}.dpedge")
        build(build_options(out[i], train=batches[i], extend=out[i - 1], seed=None), noise_for_tests=ConstantNoise(0))
    return out


def test_a_chain_holds_the_statistics_of_one_build_of_all_records(chain, tmp_path):
    first, last = fmt.load(chain[0]), fmt.load(chain[-1])
    k, clip = first.projection.shape[0], first.releases["class_sums"].clip_l1
    whole = tmp_path / "whole.dpedge"
    build(build_options(whole, votes_share=0.1, basis_dim=int(k), clip_l1=clip), noise_for_tests=ConstantNoise(0))
    one = fmt.load(whole)
    assert np.array_equal(last.class_counts, one.class_counts)
    assert np.array_equal(last.class_sums, one.class_sums)
    assert np.array_equal(last.projection, one.projection) and np.array_equal(last.origin, one.origin)
    assert np.array_equal(last.hyperplanes, first.hyperplanes)  # the first batch's, as released
    records = int(one.class_counts.sum())
    assert (last.votes.astype(np.int64).sum(axis=(1, 2)) == records).all()  # every record, once in each table


def test_a_chain_states_the_same_privacy_per_record_and_counts_its_batches(chain):
    first, second, last = (fmt.load(p) for p in chain)
    assert first.version == (1, 0) and last.version == (1, 1)
    assert (second.batches, last.batches) == (2, 3) and last.requires == ("privacy.batches",)
    for key in ("epsilon", "delta", "max_records_per_unit", "privacy_unit", "neighbour_relation"):
        assert last.privacy[key] == first.privacy[key]
    assert last.releases == first.releases
    assert last.privacy["composition"].startswith("parallel over 3 disjoint batches")
    assert "in each of 3 disjoint batches, summed" in privacy_summary(last)


def test_an_extensions_report_states_the_bundle_it_wrote(chain, batches, tmp_path):
    """The console's privacy facts and summary are the written bundle's: both batches, summed."""
    out = tmp_path / "two.dpedge"
    report = build(build_options(out, train=batches[1], extend=chain[0], seed=None), noise_for_tests=ConstantNoise(0))
    written = fmt.load(out)
    assert report.privacy == written.privacy and written.batches == 2
    assert report.summary == privacy_summary(written) and "in each of 2 disjoint batches, summed" in report.summary


def test_an_extension_is_refused_unless_it_adds_up(chain, batches, tmp_path):
    out = tmp_path / "x.dpedge"

    def refused(**overrides) -> str:
        with pytest.raises(BuildError) as info:
            build(build_options(out, train=batches[1], extend=chain[0], **{"seed": None, **overrides}),
                  noise_for_tests=ConstantNoise(0))
        assert not out.exists()
        return str(info.value)

    assert "--epsilon must be the earlier bundle's" in refused(epsilon=4.0)
    assert "leave out --basis-dim" in refused(basis_dim=16)
    assert "leave out --votes-share" in refused(votes_share=0.2)
    assert "the privacy unit must be the earlier bundle's" in refused(unit_field="user", max_records_per_unit=2)
    labels = tmp_path / "labels.txt"
    labels.write_text("\n".join(reversed(fmt.load(chain[0]).labels)) + "\n", encoding="utf-8")
    assert "--labels must be the earlier bundle's labels" in refused(labels=labels)


def test_a_statistics_bundle_extends_with_its_pack(batches, exported_encoder, tmp_path):
    pack, _ = fmt.save_pack(exported_encoder.to_bundle_encoder(), tmp_path / "minilm.dpedge-encoder")
    first, second = tmp_path / "s0.dpedge", tmp_path / "s1.dpedge"
    build(build_options(first, train=batches[0], encoder_pack=pack), noise_for_tests=ConstantNoise(0))
    with pytest.raises(BundleError) as info:
        build(build_options(second, train=batches[1], extend=first, seed=None), noise_for_tests=ConstantNoise(0))
    assert info.value.code == "pack.missing"
    build(build_options(second, train=batches[1], extend=first, seed=None, encoder_pack=pack),
          noise_for_tests=ConstantNoise(0))
    b = fmt.load(second, pack=fmt.load_pack(pack))
    assert b.encoder_pack == fmt.load_pack(pack).digest and b.batches == 2
    assert set(b.requires) == {"encoder_pack", "privacy.batches"} and second.stat().st_size < 2**20


def test_a_series_planned_for_its_total_gets_the_subspace_of_one_build(batches, tmp_path):
    """--planned-records N chooses k and the clip as a build of N records would, from the number
    the builder gives (the zero noise of the hook makes the released count the exact one)."""
    total = sum(1 for p in batches for line in p.read_text(encoding="utf-8").splitlines() if line.strip())
    first, whole = tmp_path / "first.dpedge", tmp_path / "whole.dpedge"
    build(build_options(first, train=batches[0], planned_records=total), noise_for_tests=ConstantNoise(0))
    build(build_options(whole), noise_for_tests=ConstantNoise(0))
    planned, one = fmt.load(first), fmt.load(whole)
    assert planned.projection.shape == one.projection.shape
    assert planned.releases["class_sums"].clip_l1 == one.releases["class_sums"].clip_l1
    alone = tmp_path / "alone.dpedge"
    build(build_options(alone, train=batches[0]), noise_for_tests=ConstantNoise(0))
    assert fmt.load(alone).projection.shape[0] < planned.projection.shape[0]  # the plan changed the choice
    with pytest.raises(BuildError, match="give one of them"):
        build(build_options(tmp_path / "x.dpedge", planned_records=total, basis_dim=16), noise_for_tests=ConstantNoise(0))


def test_a_batch_with_real_noise_on_a_pinned_bundle_keeps_its_marker_for_ever(chain, batches, tmp_path):
    """An earlier bundle whose noise the test hook pinned is not differentially private; a batch
    with OpenDP's noise added to it must not make the sum look like it is."""
    from exporter.privacy import TEST_HOOK

    assert TEST_HOOK in fmt.load(chain[0]).privacy["noise_source"]
    out = tmp_path / "real-on-pinned.dpedge"
    build(build_options(out, train=batches[1], extend=chain[0], seed=None))  # the CLI's path: real noise
    b = fmt.load(out)
    assert TEST_HOOK in b.privacy["noise_source"] and "OpenDP" in b.privacy["noise_source"]


def test_a_head_bundle_is_not_extended_and_nothing_is_read(batches, tmp_path):
    from noise_hooks import ConstantGaussian

    head = tmp_path / "head.dpedge"
    build(build_options(head, train=batches[0], delta=1e-5, seed=None), noise_for_tests=ConstantNoise(0),
          gaussian_for_tests=ConstantGaussian())
    out = tmp_path / "more.dpedge"
    missing = tmp_path / "no-such-records.jsonl"  # never opened: refused before any record is read
    with pytest.raises(BuildError, match="the earlier bundle is a head bundle .*nothing was read or written"):
        build(build_options(out, train=missing, extend=head, seed=None))
    assert not out.exists()
