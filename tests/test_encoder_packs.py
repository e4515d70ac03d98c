"""Encoder packs and statistics bundles (format 1.1) with the real encoder, end to end.

A statistics bundle built with `--encoder-pack` holds the same releases as the one-file bundle
of the same records and noise, and answers every text alike when read with its pack; it is
refused without its pack, with another pack, or with a pack the application does not accept.
The format's own cases (every refusal code, and Java and the web reader agreeing) are in the
corpus (tests/test_conformance.py).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import DATA, ROOT, build_options
from exporter.build import build
from exporter.options import BuildError
from noise_hooks import ConstantNoise
from runtime import BundleError, Classifier
from runtime import bundle as fmt

TEXTS = ["wake me up at half past six", "will I need an umbrella in Lisbon tomorrow", "skip this song",
         "turn off all the lights downstairs", "push my dentist appointment to Friday"]


@pytest.fixture(scope="module")
def pack(exported_encoder, tmp_path_factory):
    path = tmp_path_factory.mktemp("packs") / "minilm.dpedge-encoder"
    return fmt.save_pack(exported_encoder.to_bundle_encoder(), path)[0]


@pytest.fixture(scope="module")
def pair(pack, tmp_path_factory):
    """The same records and noise (the test hook's), as one file and as statistics + pack."""
    folder = tmp_path_factory.mktemp("pair")
    one = folder / "one.dpedge"
    stats = folder / "stats.dpedge"
    build(build_options(one, votes_share=0.1), noise_for_tests=ConstantNoise(3))
    build(build_options(stats, votes_share=0.1, encoder_pack=pack), noise_for_tests=ConstantNoise(3))
    return one, stats


def test_a_statistics_bundle_is_small_and_answers_as_the_one_file_bundle(pair, pack):
    one, stats = pair
    assert stats.stat().st_size < 2**20 < one.stat().st_size
    a, b = fmt.load(one), fmt.load(stats, pack=fmt.load_pack(pack))
    assert b.version == (1, 1) and a.version == (1, 0)
    assert b.requires == ("encoder_pack",) and b.encoder_pack == fmt.load_pack(pack).digest
    for name in ("class_counts", "class_sums", "votes", "origin", "projection", "hyperplanes", "prior"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.privacy == b.privacy
    x, y = Classifier.load(one, threads=1), Classifier.load(stats, encoder=pack, threads=1)
    for p, q in zip(x.classify(TEXTS), y.classify(TEXTS)):
        assert p.label == q.label and p.scores == q.scores


def test_a_statistics_bundle_is_refused_without_its_pack_or_with_another(pair, pack, exported_encoder, tmp_path):
    one, stats = pair
    with pytest.raises(BundleError) as info:
        Classifier.load(stats)
    assert (info.value.code, info.value.path) == ("pack.missing", "encoder_pack")
    other_spec = dataclasses.replace(exported_encoder.to_bundle_encoder(), check_text="another public text")
    other, _ = fmt.save_pack(other_spec, tmp_path / "other.dpedge-encoder")
    with pytest.raises(BundleError) as info:
        Classifier.load(stats, encoder=other)
    assert info.value.code == "pack.mismatch"
    with pytest.raises(BundleError) as info:
        Classifier.load(one, encoder=pack)
    assert info.value.code == "pack.unexpected"


def test_an_application_pins_the_packs_it_accepts(pair, pack):
    _, stats = pair
    digest = fmt.load_pack(pack).sha256
    assert fmt.load_pack(pack, expect=[digest.upper()]).sha256 == digest
    with pytest.raises(BundleError) as info:
        fmt.load_pack(pack, expect=["0" * 64])
    assert info.value.code == "pack.untrusted"
    pinned = fmt.load_pack(pack, expect=[digest])
    assert Classifier.load(stats, encoder=pinned, threads=1).classify(TEXTS[:1])[0].label


def test_cli_encoder_pack_and_its_environment_variable(pair, pack):
    _, stats = pair
    run = [sys.executable, "-m", "runtime.classify", "--bundle", str(stats), "--json", TEXTS[0]]
    r = subprocess.run(run, capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and "--encoder-pack" in r.stderr, r.stderr
    r = subprocess.run(run + ["--encoder-pack", str(pack)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["label"]
    env = {**os.environ, "DPEDGE_ENCODER_PACK": str(pack)}
    r = subprocess.run(run[:-2] + ["--info", "--json"], capture_output=True, text=True, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["encoder"]["pack_sha256"] == fmt.load_pack(pack).sha256 and "encoder_pack" in info["sizes_bytes"]


@pytest.mark.exporter  # the CLI's build draws OpenDP's noise
def test_exporter_writes_a_pack_and_a_statistics_bundle(tmp_path, exported_encoder):
    pack = tmp_path / "minilm.dpedge-encoder"
    r = subprocess.run([sys.executable, "-m", "exporter", "encoder", "--pack", str(pack)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and f"sha256 {fmt.load_pack(pack).sha256}" in r.stdout, r.stdout + r.stderr
    out = tmp_path / "stats.dpedge"
    cmd = [sys.executable, "-m", "exporter", "build", "--train", str(DATA / "train.jsonl"), "--labels",
           str(DATA / "labels.txt"), "--epsilon", "8", "--encoder-pack", str(pack), "--out", str(out), "--quiet"]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "exporter", "inspect", str(out), "--encoder-pack", str(pack)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and "encoder pack" in r.stdout, r.stderr
    r = subprocess.run(cmd + ["--encoder-format", "tflite"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and "leave out --encoder-format" in r.stderr


def test_build_refuses_a_pack_beside_another_encoder(pack, tmp_path):
    with pytest.raises(BuildError, match="leave out --encoder"):
        build(build_options(tmp_path / "x.dpedge", encoder_pack=pack, encoder_source="all-MiniLM-L6-v2"),
              noise_for_tests=ConstantNoise(0))
