"""The head (``--delta``, DP-SGD on the frozen embeddings) against the default pure release.

    python benchmarks/head.py [--data ../shared/data/trec ../shared/data/agnews \\
        ../shared/data/cr ../shared/data/sst2] [--epsilons 1,5] [--delta 1e-5] [--repeats 3] \\
        [--out results.json]

Each dataset is embedded once with the int8 encoder a bundle ships (cached under
.cache/embeddings, as benchmarks/accuracy.py; the encoder's vocabulary words too). For each
epsilon and repeat, with real OpenDP noise:

- ``default``: the default bundle (class counts and class sums, pure epsilon-DP) made by the
  build's own stages (benchmarks/accuracy.py's `bundle_release`) and scored by the runtime's
  `Scorer`;
- ``head``: the head build's releases (exporter.privacy.head_shares: class counts, then the head
  at (epsilon, delta)) made by the build's own stage (exporter.stages.release_head_stats) on an
  in-memory engine, assembled into the bundle a ``--delta`` build writes and scored by the
  runtime's `Scorer` (softmax(W (x - origin) + b)).

It prints a markdown table (accuracy mean ± std over repeats, the average over datasets, the
head's rule per dataset and epsilon) and writes every run as JSON with --out. The train and
test splits are used as they are; kNN10 (non-private, same encoder) is the reference.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import CACHE, ROOT, Embedder, knn_accuracy  # noqa: E402
from accuracy import _accuracy, bundle_release  # noqa: E402

from exporter.engine import MemoryEngine  # noqa: E402
from exporter.head import learning_rate  # noqa: E402
from exporter.privacy import PrivacyBudget, head_shares  # noqa: E402
from exporter.public_basis import public_texts, task_basis  # noqa: E402
from exporter.stages import PublicInputs, assemble_bundle, release_head_stats  # noqa: E402
from runtime.scoring import Scorer  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
DATASETS = ("trec", "agnews", "cr", "sst2")


def vocabulary(embedder: Embedder) -> np.ndarray:
    """The encoder's vocabulary words' embeddings (public texts), cached beside the datasets'."""
    cache = CACHE / f"{embedder.key}-vocabulary.npy"
    if cache.is_file():
        return np.load(cache)
    tokenizer_json = (embedder.exported.directory / "tokenizer.json").read_text(encoding="utf-8")
    vocab = embedder.embed(public_texts(tokenizer_json, None))
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(cache, vocab)
    return vocab


def head_run(ds, encoder, embed, vocab: np.ndarray, eps: float, delta: float) -> tuple[float, dict]:
    """One head build's releases on the training split (as `python -m exporter build --delta`),
    and the test accuracy of the bundle through the runtime's scorer."""
    budget = PrivacyBudget(eps, shares=head_shares(), delta=delta)
    engine = MemoryEngine(ds.train.embeddings, ds.train.labels, ds.name)
    counts, head = release_head_stats(engine, embed, vocab, ds.labels, budget)
    bundle = assemble_bundle(ds.labels, encoder, budget, None, None, head=head, counts=counts)
    rule = {"sample_rate": head.sample_rate, "steps": head.steps, "noise_multiplier": head.noise_multiplier,
            "head_epsilon": head.epsilon, "learning_rate": learning_rate(budget.epsilon)}
    return _accuracy(Scorer(bundle), ds), rule


def _fmt(runs: list[float]) -> str:
    return f"{100 * np.mean(runs):.1f} ± {100 * np.std(runs):.1f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", nargs="+", type=Path, default=[DATA / d for d in DATASETS])
    ap.add_argument("--epsilons", default="1,5")
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None, help="write every run as JSON")
    args = ap.parse_args(argv)
    epsilons = [float(e) for e in args.epsilons.split(",")]

    embedder = Embedder()
    encoder = embedder.exported.to_bundle_encoder()
    vocab = vocabulary(embedder)
    settings = argparse.Namespace(basis_dim=None, clip_l1=None, tables=32, bits=None, public_directions=0,
                                  prior_records_per_class=None, description_pull=None)
    results: dict[str, dict] = {}
    for folder in args.data:
        ds = embedder.dataset(folder)
        descriptions = ds.labels.descriptions
        prior = None if descriptions is None else embedder.embed(list(descriptions)).astype(np.float32)
        public = PublicInputs(task_basis(vocab, prior), prior)
        r: dict = {"train": len(ds.train.labels), "classes": len(ds.labels), "knn10": knn_accuracy(ds.train, ds.test),
                   "default": {}, "head": {}, "rule": {}, "seconds": {}}
        for eps in epsilons:
            key = f"{eps:g}"
            t0 = time.perf_counter()
            r["default"][key] = [_accuracy(Scorer(bundle_release(ds, encoder, public, eps, i, 0.0, settings)), ds)
                                 for i in range(args.repeats)]
            t1 = time.perf_counter()
            r["head"][key] = []
            for _ in range(args.repeats):
                acc, rule = head_run(ds, encoder, embedder.embed, vocab, eps, args.delta)
                r["head"][key].append(acc)
            r["rule"][key] = rule
            r["seconds"][key] = {"default": (t1 - t0) / args.repeats, "head": (time.perf_counter() - t1) / args.repeats}
            print(f"{ds.name} eps {key}: default {_fmt(r['default'][key])}, head {_fmt(r['head'][key])} "
                  f"(q {rule['sample_rate']:.3f}, T {rule['steps']}, z {rule['noise_multiplier']:.2f}, "
                  f"{r['seconds'][key]['head']:.0f} s a head)", file=sys.stderr, flush=True)
        results[ds.name] = r

    cols = [(m, e) for e in epsilons for m in ("default", "head")]
    name = {"default": "default (pure eps {})", "head": f"head (eps {{}}, delta {args.delta:g})"}
    print("| dataset | kNN10 (non-private) | " + " | ".join(name[m].format(f"{e:g}") for m, e in cols) + " |")
    print("|---" * (len(cols) + 2) + "|")
    for ds_name, r in results.items():
        print(f"| {ds_name} | {100 * r['knn10']:.1f} | "
              + " | ".join(_fmt(r[m][f"{e:g}"]) for m, e in cols) + " |")
    avg = lambda m, e: 100 * np.mean([np.mean(r[m][f"{e:g}"]) for r in results.values()])  # noqa: E731
    print(f"| average | {100 * np.mean([r['knn10'] for r in results.values()]):.1f} | "
          + " | ".join(f"{avg(m, e):.1f}" for m, e in cols) + " |")
    print(f"\n{args.repeats} repeats, real OpenDP noise; the head's rule (q, T, z, learning rate) per dataset:")
    for ds_name, r in results.items():
        print(f"- {ds_name} ({r['train']} records, {r['classes']} classes): " + "; ".join(
            f"eps {k}: q {v['sample_rate']:.3f}, T {v['steps']}, z {v['noise_multiplier']:.3f}, lr "
            f"{v['learning_rate']:.2f}, {r['seconds'][k]['head']:.0f} s" for k, v in r["rule"].items()))
    if args.out:
        args.out.write_text(json.dumps({"settings": {k: str(v) for k, v in vars(args).items()},
                                        "results": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
