"""The head's DP-SGD steps at scale: the local engine's sums against Ray's, on the same embeddings.

    python benchmarks/head_steps.py [--records 1000000] [--dim 384] [--classes 4] [--steps 100] \\
        [--workers 2] [--out results.json]

Makes N unit embeddings and labels in memory (numpy's generator, seed 0: test data, not noise; a
step's cost does not depend on the values), then times ``--steps`` steps of the head's exact
integer gradient sums (`exporter.head.StepSums`) at the rule's sample rate for N, clip and grid,
at fixed weights:

- ``local``: `exporter.head.InMemory` in this process (the local engine's head);
- ``ray``: `exporter.ray_engine.RayHeadRecords` over ``--workers`` actors on a local Ray
  instance, each holding its share of the embeddings and answering a step with its exact sum,
  as a ``--engine ray --delta`` build's actors do once they have embedded their shards (the
  embedding is not timed here: docs/export-scale.md times it).

It prints seconds per step, the rule's T steps projected from them, and Ray's ratio to local in
the same run. For the same sample the two sums are equal bit for bit (tests/test_ray_engine.py),
so only time is compared.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from exporter.head import CLIP_L2, GRID, InMemory, rule_sampling  # noqa: E402
from exporter.ray_engine import RayHeadRecords, ray_session  # noqa: E402


class ArrayShard:
    """A Ray actor with the step of exporter.ray_engine.HeadShard over embeddings it is given
    (HeadShard embeds its shards first; that part is not what this benchmark times)."""

    def __init__(self, embeddings: np.ndarray, labels: np.ndarray, origin: np.ndarray):
        self.records = InMemory(embeddings, labels, origin)

    def step(self, weights: np.ndarray, bias: np.ndarray, sample_rate: float, clip_l2: float, grid: int) -> np.ndarray:
        return self.records(weights, bias, sample_rate=sample_rate, clip_l2=clip_l2, grid=grid)


def data(n: int, dim: int, classes: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)  # test data, not noise
    x = np.empty((n, dim), np.float32)
    for start in range(0, n, 65536):  # in blocks: no float64 copy of the whole
        block = rng.standard_normal((min(65536, n - start), dim))
        x[start:start + len(block)] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return x, rng.integers(0, classes, n)


def timed(sums, steps: int, weights: np.ndarray, bias: np.ndarray, q: float) -> float:
    """Seconds per step of ``sums`` (after one warm-up step)."""
    sums(weights, bias, sample_rate=q, clip_l2=CLIP_L2, grid=GRID)
    t = time.perf_counter()
    for _ in range(steps):
        sums(weights, bias, sample_rate=q, clip_l2=CLIP_L2, grid=GRID)
    return (time.perf_counter() - t) / steps


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--classes", type=int, default=4)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None, help="write the results as JSON")
    args = ap.parse_args(argv)
    x, y = data(args.records, args.dim, args.classes)
    origin = np.zeros(args.dim, np.float32)
    rng = np.random.default_rng(1)  # fixed weights: test data
    weights, bias = rng.standard_normal((args.classes, args.dim)) * 0.1, np.zeros(args.classes)
    q, rule_steps = rule_sampling(float(args.records))
    local = timed(InMemory(x, y, origin), args.steps, weights, bias, q)
    with ray_session(workers=args.workers) as ray:
        actor = ray.remote(num_cpus=1)(ArrayShard)
        bounds = np.linspace(0, args.records, args.workers + 1).astype(int)
        actors = [actor.remote(ray.put(x[a:b]), ray.put(y[a:b]), origin) for a, b in zip(bounds, bounds[1:])]
        distributed = timed(RayHeadRecords(ray, actors, args.dim), args.steps, weights, bias, q)
        for a in actors:
            ray.kill(a)
    result = {"records": args.records, "dim": args.dim, "classes": args.classes, "sample_rate": q,
              "rule_steps": rule_steps, "timed_steps": args.steps, "workers": args.workers,
              "seconds_per_step": {"local": local, "ray": distributed}}
    print(f"| engine | seconds a step | the rule's {rule_steps:,} steps | ratio to local |")
    print("|---|---:|---:|---:|")
    for name, s in result["seconds_per_step"].items():
        print(f"| {name}{f' ({args.workers} workers)' if name == 'ray' else ''} | {s:.3f} | "
              f"{s * rule_steps / 60:.1f} min | {s / local:.2f} |")
    print(f"\n{args.records:,} records of {args.dim} dimensions, {args.classes} classes; q {q:g} (the rule's), "
          f"{args.steps} timed steps each after one warm-up")
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
