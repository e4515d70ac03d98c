"""The person-level head against the person-level default, on the shared datasets split into
synthetic persons.

    python benchmarks/person_head.py [--data ../shared/data/trec ...] [--epsilons 1,5] \\
        [--delta 1e-5] [--repeats 3] [--max-records 8] [--record-level] [--lr-scales 0.5,0.25] \\
        [--heads-only] [--out results.json]

Persons are a public draw (numpy's generator, seed 0: a public choice of who wrote what, not
noise): the training records, in a seeded permutation, are dealt to persons in turn, each person
taking a number of records drawn uniformly from 1 to K (``--max-records``, default 8: about
4.5 records a person), so no record is dropped and a person's records are of any classes. The
splits are used as they are (the test split is not split into persons). For each epsilon and
repeat, with real OpenDP noise, on the default encoder's cached embeddings (benchmarks/head.py):

- ``person default``: the default bundle with K records a person (class counts and class sums
  at K times a record's sensitivity: the build's own stages), scored by the runtime's `Scorer`;
- ``person head``: the head build's releases with K records a person (class counts, the noisy
  number of persons, the head by user-level DP-SGD: exporter.stages.release_head_stats on an
  in-memory engine that knows each record's person), scored by the `Scorer`;
- with ``--record-level``, the same two with one record as the unit, for the cost of the unit;
- with ``--lr-scales``, a study: the person head again with its learning rate scaled by each
  factor (``person head lr xS``); ``--heads-only`` leaves out the defaults.

It prints a markdown table (accuracy mean ± std over repeats, and the average over datasets)
and each dataset's persons and head rule, and writes every run as JSON with --out.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Embedder  # noqa: E402
from accuracy import _accuracy, bundle_release  # noqa: E402
from encoder_table import MODELS  # noqa: E402
from head import DATA, DATASETS, SETTINGS, _fmt, head_run, vocabulary  # noqa: E402

from exporter import encoders as known  # noqa: E402
from exporter.encoder_export import export_encoder  # noqa: E402
from exporter.privacy import NeighbourRelation  # noqa: E402
from exporter.public_basis import task_basis  # noqa: E402
from exporter.stages import PublicInputs  # noqa: E402
from runtime.scoring import Scorer  # noqa: E402

UNIT_COLUMN = "person"


def synthetic_persons(records: int, k: int, seed: int = 0) -> np.ndarray:
    """Each record's person (n,): a seeded permutation of the records dealt to persons in turn,
    each taking 1 to ``k`` of them (uniform). Public: a choice of who wrote what, not noise.

    Example:
        >>> units = synthetic_persons(10, 3)
        >>> int(np.bincount(units).max()) <= 3, len(units)
        (True, 10)
    """
    rng = np.random.default_rng(seed)
    order = rng.permutation(records)
    sizes = rng.integers(1, k + 1, size=records)
    owner = np.repeat(np.arange(records), sizes)[:records]  # person p takes the next sizes[p] records
    units = np.empty(records, np.int64)
    units[order] = owner
    return units


def relation(k: int) -> NeighbourRelation:
    """The privacy unit: a person of up to K records (K = 1: one record)."""
    return NeighbourRelation.person(UNIT_COLUMN, k) if k > 1 else NeighbourRelation.record()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", nargs="+", type=Path, default=[DATA / d for d in DATASETS])
    ap.add_argument("--epsilons", default="1,5")
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-records", type=int, default=8, help="K: the most records a synthetic person has")
    ap.add_argument("--record-level", action="store_true", help="also the default and the head with one record as "
                                                                  "the unit")
    ap.add_argument("--lr-scales", type=lambda v: [float(x) for x in v.split(",")], default=[],
                    help="a study: the person head again with its learning rate scaled by each factor")
    ap.add_argument("--heads-only", action="store_true", help="leave out the default bundles (a study of the head)")
    ap.add_argument("--out", type=Path, default=None, help="write every run as JSON")
    args = ap.parse_args(argv)
    epsilons = [float(e) for e in args.epsilons.split(",")]
    k = args.max_records
    embedder = Embedder(export_encoder(known.DEFAULT, models_dir=MODELS))
    encoder = embedder.exported.to_bundle_encoder()
    vocab = vocabulary(embedder)
    # Each method's learning-rate factor (the head's; 1.0 for the rule's rate and for the defaults).
    lr_factors = {"person default": 1.0, "person head": 1.0,
                  **({"record default": 1.0, "record head": 1.0} if args.record_level else {}),
                  **{f"person head lr x{f:g}": f for f in args.lr_scales}}
    methods = [m for m in lr_factors if not (args.heads_only and m.endswith("default"))]
    results: dict[str, dict] = {}
    for folder in args.data:
        ds = embedder.dataset(folder)
        units = synthetic_persons(len(ds.train.labels), k)
        descriptions = ds.labels.descriptions
        prior = None if descriptions is None else embedder.embed(list(descriptions)).astype(np.float32)
        public = PublicInputs(task_basis(vocab, prior), prior)
        r: dict = {"train": len(units), "persons": int(len(np.unique(units))), "rule": {}, "seconds": {},
                   **{m: {} for m in methods}}
        for eps in epsilons:
            key, t0 = f"{eps:g}", time.perf_counter()
            for m in methods:
                runs = []
                unit = relation(k if m.startswith("person") else 1)
                for _ in range(args.repeats):
                    if m.endswith("default"):
                        runs.append(_accuracy(Scorer(bundle_release(ds, encoder, public, eps, 0, 0.0, SETTINGS, unit)),
                                              ds))
                    else:
                        acc, rule = head_run(ds, encoder, embedder.embed, vocab, eps, args.delta,
                                             lr_factors[m] * known.head_lr_scale(encoder), units=units,
                                             relation=unit)
                        runs.append(acc)
                        r["rule"].setdefault(key, {})[m] = rule
                r[m][key] = runs
            r["seconds"][key] = time.perf_counter() - t0
            print(f"{ds.name} eps {key}: " + ", ".join(f"{m} {_fmt(r[m][key])}" for m in methods)
                  + f" ({r['seconds'][key]:.0f} s)", file=sys.stderr, flush=True)
        results[ds.name] = r

    names = list(results)
    print(f"| method | " + " | ".join(names) + " | average |")
    print("|---" * (len(names) + 2) + "|")
    for e in epsilons:
        for m in methods:
            label = f"{m} (eps {e:g}" + (", pure)" if m.endswith("default") else f", delta {args.delta:g})")
            cells = [results[n][m][f"{e:g}"] for n in names]
            print(f"| {label} | " + " | ".join(_fmt(c) for c in cells)
                  + f" | {100 * np.mean([np.mean(c) for c in cells]):.1f} |")
    print(f"\n{args.repeats} repeats, real OpenDP noise, K = {k}; persons and the person-level head's rule:")
    for n, r in results.items():
        print(f"- {n}: {r['train']} records, {r['persons']} persons; " + "; ".join(
            f"eps {e}: q {v[m]['sample_rate']:.3f}, T {v[m]['steps']}, z {v[m]['noise_multiplier']:.3f}"
            for e, v in r["rule"].items() for m in list(v)[:1]))
    if args.out:
        args.out.write_text(json.dumps({"settings": {k_: str(v) for k_, v in vars(args).items()}, "results": results},
                                       indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
