"""ONNX and TFLite encoders against one released set of tables, on a real test set."""

import numpy as np
import pytest

from exporter.dataset import read_labels, read_records
from exporter.encoder_export import MIN_MEAN_COSINE, default_source, reference_embeddings
from runtime import Classifier
from runtime.encoder import TextEncoder
from conftest import AGNEWS

pytestmark = pytest.mark.export


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.mark.slow
def test_onnx_and_tflite_give_the_same_labels_under_one_release(agnews_bundle, exported_tflite):
    """One bundle's tables and hyperplanes (agnews, epsilon 8, seed 11); the test texts embedded
    by its int8 ONNX encoder, by the int8 TFLite encoder and by the fp32 model.

    Measured (docs/encoder.md): ONNX vs TFLite cosine 0.9965, same label 94.9%, accuracy 77.1
    vs 77.3; ONNX vs fp32 95.3% (measured on pre-release vote-table bundles). 99% same label is
    out of reach there: a non-private exact kNN over the same two embeddings agrees on only
    99.0% of the texts, and hard SimHash buckets amplify small differences (14.7% of table
    buckets differ). The bounds below hold for a correct encoder with room for the noise draw,
    and fail one that pools or normalises differently (cosine about 0.9, labels at about 60%
    agreement)."""
    clf = Classifier.load(agnews_bundle, threads=1, workers=2)
    labels = read_labels(AGNEWS / "labels.txt")
    records = list(read_records(AGNEWS / "test.jsonl", labels))
    texts, truth = [r.text for r in records], np.array([r.label for r in records])
    ids = clf.tokenizer.encode(texts)
    onnx = clf.encoder.embed(ids)
    tflite = TextEncoder(exported_tflite.to_bundle_encoder(), threads=1, workers=2).embed(ids)
    fp32 = reference_embeddings(default_source(), texts)

    lab = {k: clf.scorer.scores(e).argmax(1) for k, e in (("onnx", onnx), ("tflite", tflite), ("fp32", fp32))}
    same = float(np.mean(lab["onnx"] == lab["tflite"]))
    acc = {k: float(np.mean(v == truth)) for k, v in lab.items()}
    print(f"\nagnews, one release: ONNX vs TFLite same label {same:.3f}, cosine {_cos(onnx, tflite).mean():.4f}; "
          f"vs fp32: ONNX {np.mean(lab['onnx'] == lab['fp32']):.3f}, TFLite {np.mean(lab['tflite'] == lab['fp32']):.3f}; "
          f"accuracy {acc}")
    # What the fidelity gate promises, now on a real dataset rather than the fixed sample:
    assert _cos(onnx, fp32).mean() >= MIN_MEAN_COSINE and _cos(tflite, fp32).mean() >= MIN_MEAN_COSINE
    assert same >= 0.90
    assert min(np.mean(lab["onnx"] == lab["fp32"]), np.mean(lab["tflite"] == lab["fp32"])) >= 0.90
    assert abs(acc["onnx"] - acc["tflite"]) <= 0.02  # switching format costs no accuracy
