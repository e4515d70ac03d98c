"""How accuracy grows as batches are added (`exporter build --extend`), against one build of the
same records.

    python benchmarks/extend.py [--data ../shared/data/agnews] [--batches 5] [--epsilon 1 8] [--repeats 3]

The training split is cut into disjoint batches by line (record i goes to batch i mod B: the
split's own order may group labels). The first batch is built as usual, each later one with
`--extend` on the bundle before it; after each, the bundle classifies the test split through the
runtime (`exporter evaluate`'s code). The same chain again with the first build planned for the
total (`--planned-records`: its subspace chosen for all the records the series will add up).
Beside them, one build of all the records at the same epsilon. Every build draws real OpenDP noise, so each row is the mean over --repeats
independent runs (min..max beside it). Prints a markdown table; --out writes JSON.

Each record is in one batch, so every bundle of the chain is epsilon-DP per record (parallel
composition); the chain keeps the first batch's public choices (its basis dimension k was
chosen from the first batch's noisy count), which is where it can trail one build.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from exporter.build import build  # noqa: E402
from exporter.evaluate import evaluate  # noqa: E402
from exporter.options import BuildOptions  # noqa: E402
from runtime import bundle as fmt  # noqa: E402


def _split(train: Path, batches: int, folder: Path) -> list[Path]:
    lines = [line for line in train.read_text(encoding="utf-8").splitlines() if line.strip()]
    paths = []
    for i in range(batches):
        p = folder / f"batch{i + 1}.jsonl"
        p.write_text("\n".join(lines[i::batches]) + "\n", encoding="utf-8")
        paths.append(p)
    return paths


def _accuracy(bundle: Path, test: Path) -> float:
    return 100.0 * evaluate(bundle, test, threads=1).accuracy


def _chain(data: Path, batches: list[Path], epsilon: float, folder: Path, planned: int | None) -> tuple[list[float], int]:
    labels, test = data / "labels.txt", data / "test.jsonl"
    accuracies, previous = [], None
    for i, batch in enumerate(batches):
        out = folder / f"chain{i + 1}.dpedge"
        build(BuildOptions(train=batch, labels=labels, epsilon=epsilon, out=out, progress=False, extend=previous,
                           planned_records=planned if previous is None else None))
        accuracies.append(_accuracy(out, test))
        previous = out
    return accuracies, int(fmt.load(previous).projection.shape[0])


def run_once(data: Path, batches: list[Path], total: int, epsilon: float, folder: Path) -> dict[str, object]:
    chain, k_chain = _chain(data, batches, epsilon, folder, None)
    planned, k_planned = _chain(data, batches, epsilon, folder, total)
    whole = folder / "whole.dpedge"
    build(BuildOptions(train=data / "train.jsonl", labels=data / "labels.txt", epsilon=epsilon, out=whole,
                       progress=False))
    return {"chain": chain, "planned": planned, "one_build": _accuracy(whole, data / "test.jsonl"),
            "k": {"chain": k_chain, "planned": k_planned, "one_build": int(fmt.load(whole).projection.shape[0])}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "agnews")
    ap.add_argument("--batches", type=int, default=5)
    ap.add_argument("--epsilon", type=float, nargs="+", default=[1.0, 8.0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    started = time.perf_counter()
    results: dict[str, list[dict[str, object]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        batches = _split(args.data / "train.jsonl", args.batches, folder)
        sizes = [sum(1 for line in p.read_text(encoding="utf-8").splitlines() if line.strip()) for p in batches]
        for eps in args.epsilon:
            results[f"{eps:g}"] = [run_once(args.data, batches, sum(sizes), eps, folder) for _ in range(args.repeats)]
            print(f"[{time.perf_counter() - started:6.0f} s] epsilon {eps:g} done", file=sys.stderr)
    print(f"{args.data.name}: {sum(sizes):,} training records in {args.batches} disjoint batches of about "
          f"{sizes[0]:,}; accuracy (%) on its test split, mean (min..max) over {args.repeats} runs\n")
    head = " | ".join(f"after {i + 1}" for i in range(args.batches))
    print(f"| epsilon | series | k | {head} | one build of all (its k) |")
    print("|---|---|---:|" + "---:|" * (args.batches + 1))

    def cell(xs: list[float]) -> str:
        return f"{statistics.mean(xs):.1f} ({min(xs):.1f}..{max(xs):.1f})"
    for eps, runs in results.items():
        one = f"{cell([r['one_build'] for r in runs])} ({runs[0]['k']['one_build']})"
        for series, name in (("chain", "k from the first batch"), ("planned", "--planned-records (total)")):
            cells = [cell([r[series][i] for r in runs]) for i in range(args.batches)]
            print(f"| {eps} | {name} | {runs[0]['k'][series]} | {' | '.join(cells)} | {one} |")
    if args.out:
        args.out.write_text(json.dumps({"data": str(args.data), "batch_sizes": sizes, "results": results}, indent=1))
    print(f"\n({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
