"""The README's privacy statement matches what the bundles say about themselves.

The statement is read by people deciding whether to trust a bundle, so every release a
default bundle's privacy map holds must be named there, with its share, its clip and grid,
and its sensitivity, and the `--hashing random` bundle's single release too.
"""

from __future__ import annotations

import re

import pytest

from conftest import ROOT
from runtime import bundle as fmt


def privacy_section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## The privacy guarantee")
    end = text.index("\n## ", start + 1)
    return " ".join(text[start:end].split())  # one line: statements may wrap anywhere


def test_readme_names_every_release_of_the_default_bundle(dp_bundle, tables_bundle):
    section = privacy_section()
    b = fmt.load(dp_bundle)
    assert list(b.releases) == ["class_counts", "class_sums"]
    for name, r in b.releases.items():
        share = round(100 * r.epsilon / b.epsilon)
        assert f"`{name}`, **{share}% of epsilon**" in section, name
    counts, sums = b.releases.values()
    assert counts.sensitivity_l1 == 1 and "(L1 sensitivity 1)" in section
    assert sums.sensitivity_l1 == round(sums.grid * sums.clip_l1)
    assert f"grid of 1/{sums.grid}" in section and "(L1 sensitivity round(100 x B))" in section
    k = b.projection.shape[0]
    assert b.class_sums.shape[1] == k and 16 <= k <= b.encoder.dim == 384 and "from 16 to D (384; mpnet 768)" in section
    # the optional third release, as a --votes-share bundle states it
    t = fmt.load(tables_bundle)
    votes = t.releases["votes"]
    assert list(t.releases)[-1] == "votes" and votes.sensitivity_l1 == t.tables
    assert "`--votes-share F` adds a third release, `votes`" in section
    assert f"T = {t.tables} tables: L1 sensitivity T)" in section


@pytest.mark.exporter  # the noise facts of bundles released through OpenDP, not the test-only hook
def test_readme_states_the_neighbour_relation_delta_and_noise_the_bundle_states(dp_bundle, random_bundle):
    section = privacy_section()
    for bundle in (dp_bundle, random_bundle):
        privacy = fmt.load(bundle).privacy
        assert privacy["neighbour_relation"] == "add or remove one record"
        assert "Adding or removing any one training record" in section
        assert privacy["delta"] == 0 and "(delta = 0)" in section
        assert privacy["noise_library"] == "opendp" and "OpenDP's sampler" in section
        assert "OpenSSL's cryptographically secure RNG" in privacy["noise_source"]
        assert "OpenSSL's cryptographically secure RNG" in section
    assert list(fmt.load(random_bundle).releases) == ["votes"]
    assert re.search(r"`--hashing random` bundle releases `votes` alone, with all of epsilon", section)
