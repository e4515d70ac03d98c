"""Accuracy under privacy: the real release and the real runtime scoring on real datasets.

    python benchmarks/accuracy.py --data ../shared/data/trec ../shared/data/agnews \\
        [--epsilons 1,8,inf] [--grid 6x32,8x16] [--seeds 3] [--out results.json]

For each dataset, hashing setting (bits x tables), epsilon and seed it draws hyperplanes,
counts the training embeddings (exporter.counting), releases them with OpenDP noise
(exporter.release) and scores the test set with the runtime's SimHasher and vote_sums: the code paths a
bundle goes through, minus packing the encoder. Prints accuracy (mean +- std over seeds),
the non-private exact cosine kNN (k=10) with the same encoder, and the share of test queries
whose bucket holds no training record (a diagnostic from exact counts; never released).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Dataset, Embedder, knn_accuracy  # noqa: E402

from exporter.counting import VoteCounter  # noqa: E402
from exporter.hyperplanes import draw_hyperplanes  # noqa: E402
from exporter.release import release_votes  # noqa: E402
from runtime.scoring import vote_sums  # noqa: E402
from runtime.simhash import SimHasher  # noqa: E402


def run_setting(ds: Dataset, bits: int, tables: int, epsilon: float, seed: int) -> tuple[float, float]:
    """(accuracy, empty-bucket rate) for one release."""
    planes = draw_hyperplanes(seed, tables, bits, ds.train.embeddings.shape[1])
    hasher = SimHasher(planes)
    counter = VoteCounter(tables, bits, len(ds.labels))
    counter.add(hasher.buckets(ds.train.embeddings), ds.train.labels)
    test_codes = hasher.buckets(ds.test.embeddings)
    occupied = counter.counts.sum(axis=2) > 0
    empty_rate = float(1 - occupied[np.arange(tables)[None, :], test_codes].mean())
    # eps = inf: the exact counts, a non-private reference for what hashing alone loses.
    votes = counter.counts if np.isinf(epsilon) else release_votes(counter.counts, epsilon).votes
    scores = vote_sums(test_codes, votes)  # runtime.scoring.Scorer = SimHasher + vote_sums
    return float((scores.argmax(axis=1) == ds.test.labels).mean()), empty_rate


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", nargs="+", type=Path, required=True, help="dataset folders (train/test.jsonl, labels.txt)")
    ap.add_argument("--epsilons", default="1,8")
    ap.add_argument("--grid", default="6x32", help="comma-separated BITSxTABLES settings")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None, help="write results as JSON")
    args = ap.parse_args(argv)
    epsilons = [float(e) for e in args.epsilons.split(",")]
    grid = [tuple(int(x) for x in g.split("x")) for g in args.grid.split(",")]

    embedder = Embedder()
    results = []
    print(f"{'dataset':<8} {'kNN10':>6} {'HxT':>7} {'empty':>6} " + " ".join(f"{'eps=' + format(e, 'g'):>13}" for e in epsilons))
    for folder in args.data:
        t0 = time.perf_counter()
        ds = embedder.dataset(folder)
        knn = knn_accuracy(ds.train, ds.test)
        for bits, tables in grid:
            row = {"dataset": ds.name, "bits": bits, "tables": tables, "knn10": knn, "acc": {}}
            cells = []
            empty = []
            for eps in epsilons:
                accs = []
                for seed in range(args.seeds):
                    acc, e = run_setting(ds, bits, tables, eps, seed)
                    accs.append(acc)
                    empty.append(e)
                row["acc"][str(eps)] = {"mean": float(np.mean(accs)), "std": float(np.std(accs)), "runs": accs}
                cells.append(f"{100 * np.mean(accs):6.1f} ±{100 * np.std(accs):4.1f}")
            row["empty_bucket_rate"] = float(np.mean(empty))
            results.append(row)
            print(f"{ds.name:<8} {100 * knn:6.1f} {f'{bits}x{tables}':>7} {100 * row['empty_bucket_rate']:5.1f}% "
                  + " ".join(f"{c:>13}" for c in cells), flush=True)
        print(f"  ({ds.name}: {time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
