"""How closely two encoders agree where it matters: SimHash bits, buckets and labels.

    python benchmarks/encoder_agreement.py --bundle B --data ../shared/data/agnews [--save emb.npy]
    python benchmarks/encoder_agreement.py --bundle B --data DIR --compare other-emb.npy
    python benchmarks/encoder_agreement.py --bundle B --data DIR --other-bundle B_TFLITE [--knn]

Embeds the dataset's test texts with the bundle's int8 encoder (on the engine this process
picks for it) and compares them, under the bundle's own released statistics (its hyperplanes
and noisy votes when it has vote tables, its class sums and prior: one release, since
different noise draws would not compare encoders), with the fp32
sentence-transformers model (needs the [export] extra); with --compare, with embeddings
saved by another run (e.g. another onnxruntime version or machine, made with --save there;
--save alone needs only the bare runtime); with --other-bundle, with the encoder shipped in
another bundle (e.g. the TFLite one). Prints cosine, the share of hash bits and table
buckets that differ (– for a bundle without vote tables), and label agreement; --knn adds the label agreement of a non-private
exact kNN (k=10) over the training texts, which bounds what any classifier on these
embeddings can reach.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from runtime import Classifier  # noqa: E402


def knn_labels(train: np.ndarray, train_labels: np.ndarray, queries: np.ndarray, k: int = 10) -> np.ndarray:
    """Exact cosine kNN majority label (ties to the lower class index)."""
    top = np.argpartition(-(queries @ train.T), k, axis=1)[:, :k]
    votes = train_labels[top]
    return np.stack([(votes == c).sum(axis=1) for c in range(int(train_labels.max()) + 1)], axis=1).argmax(1)


def compare(name: str, a: np.ndarray, b: np.ndarray, clf: Classifier, truth: np.ndarray,
            knn: tuple[np.ndarray, np.ndarray] | None = None) -> None:
    cos = np.sum(a * b, axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    hasher = clf.scorer.hasher
    bits = tables = "–"  # the default bundle has no vote tables, so no hash bits to compare
    if hasher is not None:
        b_ = clf.bundle
        planes = b_.hyperplanes.reshape(-1, b_.hyperplanes.shape[-1]).astype(np.float64)
        offsets = 0.0 if b_.offsets is None else b_.offsets.reshape(-1).astype(np.float64)
        differ = (a.astype(np.float64) @ planes.T > offsets) != (b.astype(np.float64) @ planes.T > offsets)
        bits = f"{100 * np.mean(differ):.2f}%"
        tables = f"{100 * np.mean(hasher.buckets(a) != hasher.buckets(b)):.2f}%"
    la, lb = clf.scorer.scores(a).argmax(1), clf.scorer.scores(b).argmax(1)
    knn_same = "" if knn is None else f" {100 * np.mean(knn_labels(*knn, a) == knn_labels(*knn, b)):.1f}% |"
    print(f"| {name} | {cos.mean():.6f} / {cos.min():.6f} | {bits} | {tables} | "
          f"{100 * np.mean(la == lb):.1f}% | {100 * np.mean(la == truth):.1f} / {100 * np.mean(lb == truth):.1f} |"
          f"{knn_same}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", type=Path, required=True)
    ap.add_argument("--data", type=Path, required=True, help="dataset folder with test.jsonl")
    ap.add_argument("--save", type=Path, help="save this run's int8 embeddings (.npy) and stop")
    ap.add_argument("--compare", type=Path, help="embeddings (.npy) saved by another run")
    ap.add_argument("--other-bundle", type=Path, help="compare with the encoder shipped in this bundle")
    ap.add_argument("--knn", action="store_true", help="also compare exact kNN (k=10) labels over train.jsonl")
    args = ap.parse_args(argv)

    clf = Classifier.load(args.bundle, threads=1, workers=os.cpu_count() or 1)
    rows = [json.loads(line) for line in (args.data / "test.jsonl").read_text(encoding="utf-8").splitlines() if line]
    texts = [r["text"] for r in rows]
    truth = np.array([clf.labels.index(r["label"]) for r in rows])
    emb = clf.embed(texts)
    engine = _engine_version(clf)

    if args.save:
        np.save(args.save, emb)
        print(f"saved {len(texts)} embeddings from {engine} to {args.save}")
        return 0
    others: list[tuple[str, np.ndarray]] = []
    if args.compare:
        others.append((f"saved ({args.compare.name})", np.load(args.compare)))
    if args.other_bundle:
        other = Classifier.load(args.other_bundle, threads=1, workers=os.cpu_count() or 1)
        others.append((f"{args.other_bundle.name} ({_engine_version(other)})", other.embed(texts)))
    from exporter.encoder_export import default_source, reference_embeddings

    others.append(("fp32 sentence-transformers", reference_embeddings(default_source(), texts)))
    knn = None
    if args.knn:
        train = [json.loads(line) for line in (args.data / "train.jsonl").read_text(encoding="utf-8").splitlines() if line]
        knn = (clf.embed([r["text"] for r in train]), np.array([clf.labels.index(r["label"]) for r in train]))

    hashing = (f"{clf.bundle.tables} tables x {clf.bundle.bits} bits" if clf.bundle.tables else "no vote tables")
    print(f"{args.data.name}, {len(texts)} test texts, bundle {args.bundle.name} "
          f"({hashing}, epsilon {clf.privacy['epsilon']:g}); "
          f"int8 here = {clf.bundle.encoder.format} on {engine}\n")
    extra = (" same label, exact kNN10 |", "---|") if knn else ("", "")
    print(f"| compared with | cosine mean / min | bits differing | table buckets differing | same label | "
          f"accuracy (this / other) |{extra[0]}")
    print(f"|---|---|---|---|---|---|{extra[1]}")
    for name, other_emb in others:
        compare(name, emb, other_emb, clf, truth, knn)
    return 0


def _engine_version(clf: Classifier) -> str:
    from importlib.metadata import PackageNotFoundError, version

    dist = {"onnxruntime": "onnxruntime", "litert": "ai-edge-litert", "tflite-runtime": "tflite-runtime"}
    try:
        return f"{clf.encoder.engine} {version(dist[clf.encoder.engine])}"
    except PackageNotFoundError:
        return clf.encoder.engine


if __name__ == "__main__":
    sys.exit(main())
