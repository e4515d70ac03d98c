"""One loaded Classifier shared by several threads answers exactly as sequential use does.

onnxruntime sessions are thread-safe, so an ONNX bundle's one session is shared by every
thread. A TFLite interpreter is not: runtime.encoder gives each calling thread its own
interpreter (threading.local), including threads the application starts itself. Both paths
are checked on real bundles: identical labels and scores, bit-identical embeddings, and batch
`predict` equal to one call per text (with 1 and 2 workers).
"""

import gc
import json
import random
import threading
import weakref

import numpy as np
import pytest

from conftest import DATA
from runtime import Classifier

THREADS = 4


def _texts() -> list[str]:
    """100 varied texts: the assistant test split plus odd and long ones."""
    rows = [json.loads(line)["text"] for line in (DATA / "test.jsonl").read_text(encoding="utf-8").splitlines()]
    odd = ["x", "?!?", "42", "Play Beyoncé 🎵", "Zürich Wetter morgen", "שלום, מה מזג האוויר",
           "مرحبا", "e\u0301\u0301 combining", "tab\there", "NUL\x00inside", "👨‍👩‍👧‍👦🇫🇷",
           "ALL CAPS PLEASE",
           " ".join(["the meeting moved to the large room on the third floor"] * 40),  # over 256 tokens
           "remind me " * 60, "a" * 3000]
    return rows[: 100 - len(odd)] + odd


TEXTS = _texts()


@pytest.fixture(scope="module", params=["dp_bundle", pytest.param("tflite_bundle", marks=pytest.mark.tflite)])
def bundle_path(request):
    return request.getfixturevalue(request.param)


def _sequential(clf: Classifier):
    return [clf.classify([t])[0] for t in TEXTS], [clf.embed([t])[0] for t in TEXTS]


def test_shared_classifier_from_several_threads_matches_sequential(bundle_path):
    clf = Classifier.load(bundle_path, threads=1)
    assert len(TEXTS) == 100 and len(set(TEXTS)) == 100
    seq_pred, seq_emb = _sequential(clf)

    start = threading.Barrier(THREADS)
    results: dict[int, dict[int, tuple]] = {}
    engines = []
    errors = []

    def work(k: int) -> None:
        try:
            order = list(range(len(TEXTS)))
            random.Random(k).shuffle(order)  # every thread its own order
            engines.append(clf.encoder._runner())
            start.wait(timeout=60)
            mine = {}
            for _ in range(2):
                for i in order:
                    mine[i] = (clf.classify([TEXTS[i]])[0], clf.embed([TEXTS[i]])[0])
            results[k] = mine
        except BaseException as exc:  # noqa: BLE001 - reported below, with the thread's number
            errors.append((k, exc))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not errors, errors
    assert sorted(results) == list(range(THREADS))
    for k, mine in results.items():
        for i, (pred, emb) in mine.items():
            assert pred == seq_pred[i], (k, TEXTS[i])
            assert emb.tobytes() == seq_emb[i].tobytes(), (k, TEXTS[i])  # bit-identical

    main_engine = clf.encoder._runner()
    if clf.bundle.encoder.format == "onnx":
        assert all(e is main_engine for e in engines)  # one shared, thread-safe session
    else:
        assert len({id(e) for e in engines}) == THREADS  # one interpreter per thread...
        assert all(e is not main_engine for e in engines)  # ...none of them the loading thread's


@pytest.mark.parametrize("workers", [1, 2])
def test_batch_predict_equals_one_call_per_text(bundle_path, workers):
    clf = Classifier.load(bundle_path, threads=1, workers=workers)
    seq_pred, seq_emb = _sequential(clf)
    assert clf.classify(TEXTS) == seq_pred
    assert clf.embed(TEXTS).tobytes() == np.vstack(seq_emb).tobytes()


def test_workers_pool_shared_by_application_threads(bundle_path):
    """Two application threads each sending whole batches through a 2-worker classifier."""
    reference = Classifier.load(bundle_path, threads=1).classify(TEXTS)
    clf = Classifier.load(bundle_path, threads=1, workers=2)
    out, errors = {}, []

    def work(k: int) -> None:
        try:
            order = list(range(len(TEXTS)))
            random.Random(100 + k).shuffle(order)
            preds = clf.classify([TEXTS[i] for i in order])
            out[k] = {i: p for i, p in zip(order, preds)}
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not errors, errors
    for k in range(2):
        assert [out[k][i] for i in range(len(TEXTS))] == reference


@pytest.mark.tflite
def test_interpreters_of_finished_threads_are_released(tflite_bundle):
    """Short-lived application threads do not pile up TFLite interpreters."""
    clf = Classifier.load(tflite_bundle, threads=1)
    refs = []

    def work() -> None:
        clf.classify(["what's the weather"])
        refs.append(weakref.ref(clf.encoder._runner()))

    for _ in range(8):
        t = threading.Thread(target=work)
        t.start()
        t.join()
    gc.collect()
    assert len(refs) == 8 and all(r() is None for r in refs)
    assert clf.classify(["what's the weather"])[0].label in clf.labels  # the loading thread's still works
