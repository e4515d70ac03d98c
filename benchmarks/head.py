"""The head (``--delta``, DP-SGD on the frozen embeddings) against the default pure release.

    python benchmarks/head.py [--data ../shared/data/trec ../shared/data/agnews \\
        ../shared/data/cr ../shared/data/sst2] [--encoders all-MiniLM-L6-v2 all-mpnet-base-v2] \\
        [--epsilons 1,5] [--delta 1e-5] [--repeats 3] [--lr-scales 1,2] [--max-steps 100,0] \\
        [--train-sizes 2000,0] [--out results.json]

Each dataset is embedded once with each int8 encoder a bundle ships (``--encoders``: registered
names or exported folders; cached under .cache/embeddings, as benchmarks/accuracy.py; the
encoder's vocabulary words too). For each encoder, epsilon and repeat, with real OpenDP noise:

- ``default``: the default bundle (class counts and class sums, pure epsilon-DP) made by the
  build's own stages (benchmarks/accuracy.py's `bundle_release`) and scored by the runtime's
  `Scorer`;
- ``head``: the head build's releases (exporter.privacy.head_shares: class counts, then the head
  at (epsilon, delta)) made by the build's own stage (exporter.stages.release_head_stats) on an
  in-memory engine, assembled into the bundle a ``--delta`` build writes and scored by the
  runtime's `Scorer` (softmax(W (x - origin) + b)).

It prints a markdown table (accuracy mean ± std over repeats, the average over datasets, the
head's rule per dataset and epsilon; the encoders' rows side by side under the paper's Table 2
row where it has the dataset) and writes every run as JSON with --out. The train and test
splits are used as they are; kNN10 (non-private, same encoder) is the reference. ``--lr-scales``
is the study behind an encoder's public rule (exporter.encoders' head_lr_scale): the head again
with its learning rate scaled by each factor (default: the encoder's own factor alone).
``--max-steps`` is the study behind the rule's cap on T (exporter.head.RULE_MAX_STEPS): the head
again with T capped at each value (0: the rule's own). ``--train-sizes`` runs each dataset again on
a subsample of its training split of each size (0: all of it), drawn by a public seeded
permutation (numpy's generator, seed 0: a public choice of records, not noise).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import CACHE, ROOT, Dataset, Embedder, Split, knn_accuracy  # noqa: E402
from accuracy import _accuracy, bundle_release  # noqa: E402

from encoder_table import MODELS, PAPER_TABLE2  # noqa: E402

from exporter import encoders as known  # noqa: E402
from exporter.encoder_export import export_encoder  # noqa: E402
from exporter.engine import MemoryEngine  # noqa: E402
from exporter.head import RULE_MAX_STEPS, learning_rate  # noqa: E402
from exporter.privacy import NeighbourRelation, PrivacyBudget, head_shares  # noqa: E402
from exporter.public_basis import public_texts, task_basis  # noqa: E402
from exporter.stages import PublicInputs, assemble_bundle, release_head_stats  # noqa: E402
from runtime.scoring import Scorer  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
DATASETS = ("trec", "agnews", "cr", "sst2")
#: The default bundle's settings: the build's defaults (benchmarks/accuracy.py's `bundle_release`).
SETTINGS = argparse.Namespace(basis_dim=None, clip_l1=None, tables=32, bits=None, public_directions=0,
                              prior_records_per_class=None, description_pull=None)


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


def head_run(ds, encoder, embed, vocab: np.ndarray, eps: float, delta: float,
             lr_scale: float = 1.0, max_steps: int = 0, units: np.ndarray | None = None,
             relation: NeighbourRelation | None = None) -> tuple[float, dict]:
    """One head build's releases on the training split (as `python -m exporter build --delta`),
    and the test accuracy of the bundle through the runtime's scorer. With ``units`` (each
    record's person) and a person ``relation`` of K above 1, the person-level head's."""
    person = relation is not None and relation.max_records > 1
    budget = PrivacyBudget(eps, relation, shares=head_shares(person=person), delta=delta)
    engine = MemoryEngine(ds.train.embeddings, ds.train.labels, ds.name, units=units if person else None)
    counts, head, persons = release_head_stats(engine, embed, vocab, ds.labels, budget, lr_scale=lr_scale,
                                               max_steps=max_steps or RULE_MAX_STEPS)
    bundle = assemble_bundle(ds.labels, encoder, budget, None, None, head=head, counts=counts, persons=persons)
    rule = {"sample_rate": head.sample_rate, "steps": head.steps, "noise_multiplier": head.noise_multiplier,
            "head_epsilon": head.epsilon, "learning_rate": lr_scale * learning_rate(budget.epsilon),
            "noisy_persons": persons}
    return _accuracy(Scorer(bundle), ds), rule


def _fmt(runs: list[float]) -> str:
    return f"{100 * np.mean(runs):.1f} ± {100 * np.std(runs):.1f}"


def subsample(ds: Dataset, size: int) -> Dataset:
    """``ds`` with ``size`` training records (0 or more than it has: all), chosen by a public
    seeded permutation; the test split unchanged."""
    if not 0 < size < len(ds.train.labels):
        return ds
    keep = np.sort(np.random.default_rng(0).permutation(len(ds.train.labels))[:size])
    return Dataset(f"{ds.name}@{size}", ds.labels, Split(ds.train.embeddings[keep], ds.train.labels[keep]), ds.test)


def run_encoder(name: str, args: argparse.Namespace, epsilons: list[float]) -> dict[str, dict]:
    """Every dataset's runs with one encoder: {dataset: {knn10, default, head (or one row per
    variant of a study), rule, seconds}}."""
    embedder = Embedder(export_encoder(name, models_dir=MODELS))
    encoder = embedder.exported.to_bundle_encoder()
    vocab = vocabulary(embedder)
    variants = [(x, m) for x in (args.lr_scales or [known.head_lr_scale(encoder)]) for m in args.max_steps]
    results: dict[str, dict] = {}
    for folder, size in ((f, n) for f in args.data for n in args.train_sizes):
        ds = subsample(embedder.dataset(folder), size)
        descriptions = ds.labels.descriptions
        prior = None if descriptions is None else embedder.embed(list(descriptions)).astype(np.float32)
        public = PublicInputs(task_basis(vocab, prior), prior)
        r: dict = {"train": len(ds.train.labels), "classes": len(ds.labels), "knn10": knn_accuracy(ds.train, ds.test),
                   "default": {}, "rule": {}, "seconds": {}, **{_head(v, variants): {} for v in variants}}
        for eps in epsilons:
            key = f"{eps:g}"
            t0 = time.perf_counter()
            r["default"][key] = [_accuracy(Scorer(bundle_release(ds, encoder, public, eps, i, 0.0, SETTINGS)), ds)
                                 for i in range(args.repeats)]
            t1 = time.perf_counter()
            for v in variants:
                runs = []
                for _ in range(args.repeats):
                    acc, rule = head_run(ds, encoder, embedder.embed, vocab, eps, args.delta, *v)
                    runs.append(acc)
                r[_head(v, variants)][key] = runs
                r["rule"][key] = rule
            r["seconds"][key] = {"default": (t1 - t0) / args.repeats,
                                 "head": (time.perf_counter() - t1) / (args.repeats * len(variants))}
            print(f"{name} {ds.name} eps {key}: default {_fmt(r['default'][key])}, "
                  + ", ".join(f"{_head(v, variants)} {_fmt(r[_head(v, variants)][key])}" for v in variants)
                  + f" (q {rule['sample_rate']:.3f}, T {rule['steps']}, z {rule['noise_multiplier']:.2f}, "
                  f"{r['seconds'][key]['head']:.0f} s a head)", file=sys.stderr, flush=True)
        results[ds.name] = r
    return results


def _head(variant: tuple[float, int], variants: list[tuple[float, int]]) -> str:
    """The head's row name: "head", or in a study "head lr xS" and/or "head T <= M"."""
    scale, steps = variant
    parts = (["" if len({v[0] for v in variants}) == 1 else f" lr x{scale:g}"]
             + ["" if len({v[1] for v in variants}) == 1 else f" T <= {steps}" if steps else " T by the rule"])
    return "head" + "".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", nargs="+", type=Path, default=[DATA / d for d in DATASETS])
    ap.add_argument("--encoders", nargs="+", default=[known.DEFAULT], metavar="NAME")
    ap.add_argument("--epsilons", default="1,5")
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--lr-scales", type=lambda v: [float(x) for x in v.split(",")], default=None,
                    help="a study: the head with its learning rate scaled by each factor (default: the encoder's own)")
    ap.add_argument("--max-steps", type=lambda v: [int(x) for x in v.split(",")], default=[0],
                    help="a study: the head with T capped at each value (0: the rule's own; default 0 alone)")
    ap.add_argument("--train-sizes", type=lambda v: [int(x) for x in v.split(",")], default=[0],
                    help="each dataset on a public subsample of its training split of each size (0: all)")
    ap.add_argument("--out", type=Path, default=None, help="write every run as JSON")
    args = ap.parse_args(argv)
    epsilons = [float(e) for e in args.epsilons.split(",")]
    by_encoder = {name: run_encoder(name, args, epsilons) for name in args.encoders}

    names = list(next(iter(by_encoder.values())))
    print(f"| encoder | method | " + " | ".join(names) + " | average |")
    print("|---" * (len(names) + 3) + "|")
    paper = [PAPER_TABLE2.get(n.split("@")[0]) for n in names]
    for e in epsilons:
        cells = [p.get(f"{e:g}") if p else None for p in paper]
        if any(c is not None for c in cells):
            print(f"| paper Table 2 (Phi-4-Mini) | pure eps {e:g} | " + " | ".join(
                "-" if c is None else f"{c:.1f}" for c in cells) + " | - |")
    for enc, results in by_encoder.items():
        rows = [("kNN10 (non-private)", lambda r: [r["knn10"]])]
        methods = [m for m in next(iter(results.values())) if m == "default" or m.startswith("head")]
        for e in epsilons:
            for m in methods:
                label = f"default (pure eps {e:g})" if m == "default" else f"{m} (eps {e:g}, delta {args.delta:g})"
                rows.append((label, lambda r, m=m, e=e: r[m][f"{e:g}"]))
        for label, runs in rows:
            print(f"| {enc} | {label} | " + " | ".join(_fmt(runs(results[n])) for n in names)
                  + f" | {100 * np.mean([np.mean(runs(results[n])) for n in names]):.1f} |")
    print(f"\n{args.repeats} repeats, real OpenDP noise; the head's rule (q, T, z, learning rate) per dataset:")
    for enc, results in by_encoder.items():
        for ds_name, r in results.items():
            print(f"- {enc}, {ds_name} ({r['train']} records, {r['classes']} classes): " + "; ".join(
                f"eps {k}: q {v['sample_rate']:.3f}, T {v['steps']}, z {v['noise_multiplier']:.3f}, lr "
                f"{v['learning_rate']:.2f}, {r['seconds'][k]['head']:.0f} s" for k, v in r["rule"].items()))
    if args.out:
        args.out.write_text(json.dumps({"settings": {k: str(v) for k, v in vars(args).items()},
                                        "results": by_encoder}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
