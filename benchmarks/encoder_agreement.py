"""How closely two encoders agree where it matters: SimHash bits, buckets and labels.

    python benchmarks/encoder_agreement.py --bundle B --data ../shared/data/agnews [--save emb.npy]
    python benchmarks/encoder_agreement.py --bundle B --data DIR --compare other-emb.npy

Embeds the dataset's test texts with the bundle's int8 encoder (this process's onnxruntime)
and compares them, under the bundle's own hyperplanes and noisy votes, with the fp32
sentence-transformers model (needs the [export] extra) and, with --compare, with embeddings
saved by another run (e.g. another onnxruntime version or machine, made with --save there;
--save alone needs only the bare runtime). Prints cosine, the share of hash bits and table
buckets that differ, and label agreement.
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


def compare(name: str, a: np.ndarray, b: np.ndarray, clf: Classifier, truth: np.ndarray) -> None:
    planes = clf.bundle.hyperplanes.reshape(-1, clf.bundle.hyperplanes.shape[-1]).astype(np.float64)
    cos = np.sum(a * b, axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    bits = np.mean((a.astype(np.float64) @ planes.T > 0) != (b.astype(np.float64) @ planes.T > 0))
    hasher = clf.scorer.hasher
    tables = np.mean(hasher.buckets(a) != hasher.buckets(b))
    la, lb = clf.scorer.scores(a).argmax(1), clf.scorer.scores(b).argmax(1)
    print(f"| {name} | {cos.mean():.6f} / {cos.min():.6f} | {100 * bits:.2f}% | {100 * tables:.2f}% | "
          f"{100 * np.mean(la == lb):.1f}% | {100 * np.mean(la == truth):.1f} / {100 * np.mean(lb == truth):.1f} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", type=Path, required=True)
    ap.add_argument("--data", type=Path, required=True, help="dataset folder with test.jsonl")
    ap.add_argument("--save", type=Path, help="save this run's int8 embeddings (.npy) and stop")
    ap.add_argument("--compare", type=Path, help="embeddings (.npy) saved by another run")
    args = ap.parse_args(argv)

    clf = Classifier.load(args.bundle, threads=1, workers=os.cpu_count() or 1)
    rows = [json.loads(line) for line in (args.data / "test.jsonl").read_text(encoding="utf-8").splitlines() if line]
    texts = [r["text"] for r in rows]
    truth = np.array([clf.labels.index(r["label"]) for r in rows])
    emb = clf.embed(texts)
    import onnxruntime

    if args.save:
        np.save(args.save, emb)
        print(f"saved {len(texts)} embeddings from onnxruntime {onnxruntime.__version__} to {args.save}")
        return 0
    print(f"{args.data.name}, {len(texts)} test texts, bundle {args.bundle.name} "
          f"({clf.bundle.tables} tables x {clf.bundle.bits} bits); int8 here = onnxruntime {onnxruntime.__version__}\n")
    print("| compared with | cosine mean / min | bits differing | table buckets differing | same label | accuracy (this / other) |")
    print("|---|---|---|---|---|---|")
    if args.compare:
        compare(f"saved ({args.compare.name})", emb, np.load(args.compare), clf, truth)
    from exporter.encoder_export import default_source, reference_embeddings

    compare("fp32 sentence-transformers", emb, reference_embeddings(default_source(), texts), clf, truth)
    return 0


if __name__ == "__main__":
    sys.exit(main())
