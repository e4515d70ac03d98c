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


def test_readme_states_each_readers_own_call_for_a_statistics_bundle():
    """Each reader's call to load a statistics bundle with its pack, and to pin the packs, as the
    README writes it, is that reader's real API (Python's signature, the Java core's and the web
    runtime's sources)."""
    import inspect

    from runtime import Classifier

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("### Statistics bundles")
    section = " ".join(text[start:text.index("\n### ", start + 1)].split())
    assert "Java and web alike" not in section
    java = (ROOT / "android_demo/core/src/main/java/org/dpedge/core/BundleReader.java").read_text(encoding="utf-8")
    web_classifier = (ROOT / "web/src/classifier.ts").read_text(encoding="utf-8")
    web_reader = (ROOT / "web/src/reader.ts").read_text(encoding="utf-8")
    claims = {
        # Python
        "in Python `Classifier.load(bundle, encoder=pack)`":
            "encoder" in inspect.signature(Classifier.load).parameters,
        "`runtime.bundle.load_pack(path, expect=[sha256])`":
            "expect" in inspect.signature(fmt.load_pack).parameters,
        # Java
        "in Java `BundleReader.read(file, pack)`":
            "public static Bundle read(File file, EncoderPack pack)" in java,
        "`BundleReader.readPack(file, expect)`":
            "public static EncoderPack readPack(File file, Collection<String> expect)" in java,
        # the web
        "in the web `Classifier.load(bytes, { encoderPack })`":
            "static async load(bytes: Uint8Array | ArrayBuffer, options: LoadOptions" in web_classifier
            and re.search(r"interface LoadOptions \{[^}]*readonly encoderPack\?", web_classifier) is not None,
        "`readPack(bytes, { expect })`":
            "export async function readPack(bytes: Uint8Array | ArrayBuffer, options: PackOptions" in web_reader
            and re.search(r"interface PackOptions \{[^}]*readonly expect\?", web_reader) is not None,
    }
    for words, real in claims.items():
        assert words in section, f"the README does not say {words}"
        assert real, f"the README says {words}, which that reader does not have"
