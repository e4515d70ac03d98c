"""docs/bundle-format.md is a contract a second implementation can follow: a decoder written
from it alone (tests/independent_decoder.py) gives every text the runtime's label."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import DATA, ROOT

sys.path.insert(0, str(Path(__file__).resolve().parent))
from independent_decoder import Decoder  # noqa: E402
from runtime import Classifier  # noqa: E402

SAMPLE_EXTRA = ["", "x", "?", "東京明天的天气怎么样？", "a" * 300, "wake me up at 6:30 tomorrow", "🎵🎶 play it"]


def _texts() -> list[str]:
    rows = [json.loads(line) for line in (DATA / "test.jsonl").read_text(encoding="utf-8").splitlines() if line]
    return [r["text"] for r in rows] + [t for t in SAMPLE_EXTRA if t.strip()]


@pytest.mark.parametrize("which", ["dp_bundle", "random_bundle"])
def test_independent_decoder_agrees_on_every_label(which, request):
    """Every text of the assistant test split (and a few odd ones): the same label from the
    decoder as from the runtime, and the same scores to float rounding."""
    path = request.getfixturevalue(which)
    clf = Classifier.load(path, threads=1)
    dec = Decoder(Path(path).read_bytes())
    texts = _texts()
    embeddings = clf.embed(texts)
    preds = clf.predict(texts)
    agree = 0
    for emb, pred in zip(embeddings, preds):
        ours = dec.scores(emb)
        theirs = np.array([pred.scores[label] for label in clf.labels])
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12)
        agree += dec.label(emb) == pred.label
    assert agree == len(texts), f"{agree}/{len(texts)} labels agree"


def test_independent_decoder_covers_the_scored_variants(dp_bundle, tmp_path):
    """The golden script's derived bundles (both centroid rules, no scoring map, no prior, no
    class statistics, the prior boost's terms, stripped to 1.2) score alike in both decoders."""
    sys.path.insert(0, str(ROOT / "android_demo"))
    import golden
    from runtime.scoring import Scorer
    from runtime import bundle as fmt

    rng = np.random.default_rng(3)
    embeddings = [v / np.linalg.norm(v) for v in rng.standard_normal((20, 384))] + [np.zeros(384)]
    data = Path(dp_bundle).read_bytes()
    for name, make in golden.SCORED.items():
        blob = make(data)
        path = tmp_path / f"{name}.dpedge"
        path.write_bytes(blob)
        scorer = Scorer.from_bundle(fmt.load(path))
        dec = Decoder(blob)
        for e in embeddings:
            theirs = scorer.scores(np.asarray(e, np.float32)[None, :])[0]
            ours = dec.scores(np.asarray(e, np.float32))
            np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12, err_msg=name)
            assert int(np.argmax(theirs)) == int(np.flatnonzero(ours == ours.max())[0]), name
