"""The TFLite encoder and the engine choice: exported with dynamic length and int8 weights,
run by LiteRT, hashing exactly as the exporter did, and refused with a clear message by an
engine that cannot run it (or runs it wrongly)."""

import dataclasses
import subprocess
import sys

import numpy as np
import pytest

from exporter.votes import VoteCounter
from exporter.dataset import read_labels, read_records
from exporter.encoder_export import MIN_MEAN_COSINE
from runtime import BundleError, Classifier
from runtime import bundle as fmt
from runtime.encoder import ENGINES, TextEncoder, choose_engine, installed
from conftest import DATA, ROOT

pytestmark = pytest.mark.tflite

TEXTS = ["wake me at 7", "is it windy on the coast", "Play Beyoncé 🎵", "x", "東京の天気は？",
         "a much longer request that goes on " * 12]


def test_tflite_encoder_is_int8_dynamic_length_and_faithful(exported_tflite):
    from ai_edge_litert.interpreter import Interpreter

    f = exported_tflite.facts
    assert f["format"] == "tflite" and f["inputs"] == ["input_ids"] and f["output"] == "sentence_embedding"
    assert f["fidelity"]["mean_cosine"] >= MIN_MEAN_COSINE and f["fidelity"]["texts"] >= 50
    model = exported_tflite.directory / "model.tflite"
    assert model.stat().st_size < 30 * 2**20  # int8 weights, not the 90 MB fp32 model
    runner = Interpreter(model_path=str(model)).get_signature_runner("serving_default")
    (spec,) = runner.get_input_details().values()
    assert list(spec["shape_signature"]) == [1, -1] and spec["dtype"] == np.int32  # length is dynamic
    for n in (3, 40, 256):  # each length runs as itself: no padding to a fixed 128
        out = runner(input_ids=np.array([[101] + [2023] * (n - 2) + [102]], dtype=np.int32))["sentence_embedding"]
        assert out.shape == (1, 384) and abs(np.linalg.norm(out) - 1) < 1e-4


def test_runtime_reproduces_the_exporters_exact_counts_with_tflite(tflite_exact_bundle):
    """Zero noise (test hook): the runtime's LiteRT embeddings of the training set, hashed,
    recount the released table cell for cell; with two workers, each with its own interpreter."""
    clf = Classifier.load(tflite_exact_bundle, threads=1, workers=2)
    assert clf.encoder.engine == "litert" and clf.bundle.encoder.format == "tflite"
    labels = read_labels(DATA / "labels.txt")
    records = list(read_records(DATA / "train.jsonl", labels))
    counter = VoteCounter(clf.bundle.tables, clf.bundle.bits, len(labels))
    counter.add(clf.scorer.hasher.buckets(clf.embed([r.text for r in records])), np.array([r.label for r in records]))
    assert np.array_equal(counter.counts, clf.bundle.votes)


def test_tflite_batch_equals_single_texts_and_check_text_matches(tflite_bundle):
    clf = Classifier.load(tflite_bundle, threads=1)
    assert clf.check_cosine > 0.9999  # same engine as the exporter
    single = np.vstack([clf.embed([t]) for t in TEXTS])
    assert np.array_equal(clf.embed(TEXTS), single)
    assert np.array_equal(Classifier.load(tflite_bundle, threads=1, workers=2).embed(TEXTS), single)
    assert np.allclose(np.linalg.norm(single, axis=1), 1, atol=1e-4)
    assert clf.classify(TEXTS) == [clf.classify([t])[0] for t in TEXTS]


def test_onnx_and_tflite_encoders_agree_on_the_projects_texts(exported_encoder, exported_tflite):
    """The two int8 models are different quantizations of one fp32 model: close, not equal."""
    from runtime.tokenizer import TextTokenizer

    onnx_spec, tfl_spec = exported_encoder.to_bundle_encoder(), exported_tflite.to_bundle_encoder()
    labels = read_labels(DATA / "labels.txt")
    texts = [r.text for r in read_records(DATA / "test.jsonl", labels)]
    ids = TextTokenizer(onnx_spec.tokenizer_json, onnx_spec.max_length, onnx_spec.text_prefix).encode(texts)
    a = TextEncoder(onnx_spec, threads=1).embed(ids)
    b = TextEncoder(tfl_spec, threads=1).embed(ids)
    cos = np.sum(a * b, axis=1)
    assert cos.mean() > 0.99 and cos.min() > 0.97, (cos.mean(), cos.min())


def test_backend_choice_follows_the_bundles_format(dp_bundle, tflite_bundle):
    assert Classifier.load(dp_bundle, threads=1).encoder.engine == "onnxruntime"
    assert choose_engine("tflite").name == "litert"  # preferred over tflite-runtime when both exist
    assert choose_engine("onnx", "onnxruntime").name == "onnxruntime"
    with pytest.raises(BundleError, match="runs onnx encoders, but this bundle's encoder is tflite .use litert, tflite-runtime"):
        Classifier.load(tflite_bundle, engine="onnxruntime")
    with pytest.raises(BundleError, match="runs tflite encoders, but this bundle's encoder is onnx"):
        Classifier.load(dp_bundle, engine="litert")
    with pytest.raises(BundleError, match="unknown engine 'coreml'"):
        choose_engine("onnx", "coreml")
    if not installed("tflite-runtime"):
        with pytest.raises(BundleError, match="engine tflite-runtime is not installed: pip install tflite-runtime"):
            choose_engine("tflite", "tflite-runtime")
    assert set(ENGINES) == {"onnxruntime", "litert", "tflite-runtime"}


def test_cli_engine_flag_and_info(tflite_bundle):
    def run(*args):
        return subprocess.run([sys.executable, "-m", "runtime.classify", "--bundle", str(tflite_bundle), *args],
                              capture_output=True, cwd=ROOT, timeout=120)

    ok = run("--engine", "litert", "set a timer for ten minutes")
    assert ok.returncode == 0, ok.stderr.decode()
    assert ok.stdout.decode().endswith("\tset a timer for ten minutes\n")
    assert "tflite encoder on litert" in ok.stderr.decode()
    wrong = run("--engine", "onnxruntime", "hello")
    assert wrong.returncode == 2 and b"this bundle's encoder is tflite" in wrong.stderr and not wrong.stdout
    info = run("--info")
    assert info.returncode == 0 and b"runs on               litert" in info.stdout


@pytest.mark.parametrize("which", ["onnx", "tflite"])
def test_an_engine_computing_other_embeddings_is_refused(which, dp_bundle, tflite_bundle, tmp_path):
    """Stand-in for an engine that runs the model to garbage without an error (tflite-runtime
    2.14 on int8 models): the bundle's check embedding no longer matches what the engine
    computes, and loading refuses with a message that says so."""
    path = dp_bundle if which == "onnx" else tflite_bundle
    b = fmt.load(path)
    rng = np.random.default_rng(0)
    other = rng.standard_normal(b.encoder.dim)
    other -= other @ b.encoder.check_embedding * b.encoder.check_embedding  # orthogonal to the real one
    other = (other / np.linalg.norm(other)).astype(np.float32)
    bad = fmt.save(dataclasses.replace(b, encoder=dataclasses.replace(b.encoder, check_embedding=other)),
                   tmp_path / "bad.dpedge")
    with pytest.raises(BundleError, match=r"computes a different embedding than the exporter did .*cosine -?0\.0"):
        Classifier.load(bad)
