"""The encoder registry (`--encoder NAME|FOLDER`, `python -m exporter encoders`) and a
sentence-transformers folder's pooling and prompt honoured by the export."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT
from exporter import encoders
from exporter.encoder_export import EncoderExportError, export_encoder, reference_embeddings

pytestmark = pytest.mark.export


def test_names_resolve_to_their_packages_folders():
    folder, name = encoders.resolve(None)
    assert (folder / "modules.json").is_file() and name == "sentence-transformers/all-MiniLM-L6-v2"
    assert encoders.resolve("all-MiniLM-L6-v2") == (folder, name)
    assert encoders.resolve(folder) == (folder, folder.name)  # a folder is taken as it is
    with pytest.raises(encoders.UnknownEncoder, match="neither a folder nor a known encoder"):
        encoders.resolve("bge-small")
    with pytest.raises(encoders.UnknownEncoder, match="not exportable yet"):
        encoders.resolve("multilingual-e5-small")


def test_the_cli_lists_every_known_encoder():
    r = subprocess.run([sys.executable, "-m", "exporter", "encoders"], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    for e in encoders.REGISTRY.values():
        assert e.name in r.stdout and e.licence in r.stdout and e.install_command in r.stdout
        assert e.accuracy in r.stdout and e.ms_per_text in r.stdout
    assert "phone" in r.stdout and "laptop and Raspberry Pi" in r.stdout  # the tiers
    assert "installed" in r.stdout and "--encoder FOLDER" in r.stdout
    bad = subprocess.run([sys.executable, "-m", "exporter", "encoder", "--encoder", "no-such-encoder"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "neither a folder nor a known encoder" in bad.stderr


def _variant(tmp_path, pooling: str, prompts: dict | None):
    """The default encoder's folder with another pooling mode and prompts."""
    src, _ = encoders.resolve(None)
    folder = tmp_path / f"minilm-{pooling}"
    shutil.copytree(src, folder)
    config = json.loads((folder / "1_Pooling" / "config.json").read_text())
    for k in config:
        if k.startswith("pooling_mode"):
            config[k] = k == pooling
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(config))
    if prompts is not None:
        (folder / "config_sentence_transformers.json").write_text(json.dumps({"prompts": prompts}))
    return folder


def test_a_folder_with_a_query_prompt_exports_it_as_the_text_prefix(tmp_path):
    folder = _variant(tmp_path, "pooling_mode_mean_tokens", {"query": "query: ", "passage": "passage: "})
    exported = export_encoder(folder, models_dir=tmp_path / "models")
    assert exported.facts["pooling"] == "mean" and exported.facts["text_prefix"] == "query: "
    assert exported.facts["fidelity"]["mean_cosine"] >= 0.99  # against sentence-transformers with the prompt
    spec = exported.to_bundle_encoder()
    assert spec.text_prefix == "query: "
    from runtime.embedder import Embedder

    texts = ["wake me up at seven", "is it going to rain"]
    got = Embedder(spec, threads=1).embed(texts)
    with_prompt = reference_embeddings(folder, texts, "query: ")
    without = reference_embeddings(folder, texts)
    assert (np.sum(got * with_prompt, axis=1) > 0.99).all()   # the runtime prepends the prompt...
    assert (np.sum(got * without, axis=1) < np.sum(got * with_prompt, axis=1)).all()  # ...which changes the text


def test_a_cls_pooled_folder_exports_its_first_token_within_the_model_family(tmp_path):
    """bge-style CLS pooling: the int8 graph reproduces sentence-transformers' CLS embedding (the
    fidelity gate), differs from the same weights mean-pooled, and passes the format's ONNX
    family (no If subgraph), so a bundle carrying it loads on every reader."""
    from runtime.bundle.model_family import check_model
    from runtime.embedder import Embedder

    folder = _variant(tmp_path, "pooling_mode_cls_token", None)
    exported = export_encoder(folder, models_dir=tmp_path / "models")
    assert exported.facts["pooling"] == "cls" and exported.facts["fidelity"]["mean_cosine"] >= 0.99
    spec = exported.to_bundle_encoder()
    check_model(spec.format, spec.model, len(spec.weights))
    texts = ["wake me up at seven", "is it going to rain", "OK"]
    got = Embedder(spec, threads=1).embed(texts)
    cls, mean = reference_embeddings(folder, texts), reference_embeddings(encoders.resolve(None)[0], texts)
    assert (np.sum(got * cls, axis=1) > 0.98).all()
    assert (np.sum(got * mean, axis=1) < 0.95).all()  # the pooling changed what the graph computes


def test_a_pooling_the_export_cannot_honour_is_refused(tmp_path):
    folder = _variant(tmp_path, "pooling_mode_max_tokens", None)
    with pytest.raises(EncoderExportError, match="the pooling must be one of mean, cls"):
        export_encoder(folder, models_dir=tmp_path / "models")
