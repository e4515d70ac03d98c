"""The DP classifiers a practitioner would pick instead of dpedge, and non-private references,
run by benchmarks/accuracy.py on the same embeddings and seeds as dpedge's own rows.

DP peers (each pure epsilon-DP with the whole epsilon, on the int8 embeddings a bundle ships):

- ``dp_lr``: diffprivlib's `LogisticRegression` (objective perturbation), ``data_norm=1``
  (the embeddings are unit vectors: an exact public bound), C = 0.1, the best fixed C of
  0.1, 1, 10 and 100 on the visible datasets (docs/accuracy.md), one-vs-rest as diffprivlib
  does it.
- ``dp_nb``: diffprivlib's `GaussianNB`, with ``bounds`` the per-coordinate range of the
  encoder's vocabulary embeddings (public text).
- ``dp_ncm384`` / ``dp_ncm128``: the simple DP nearest class mean. Each record minus the
  public centre (the mean of the vocabulary and description embeddings), in the full 384-d
  space or the 128-d public subspace, is L1-clipped (15 and 7.5) on a 1/100 grid; per-class
  sums and counts (a count weighing one unit) get discrete Laplace noise through the
  exporter's own `PrivacyBudget` (OpenDP); a query goes to the class whose noisy mean is
  nearest in cosine, in the same public-centred frame.

Non-private references: ``lr`` (scikit-learn `LogisticRegression`, C = 1) and kNN10
(benchmarks/common.knn_accuracy).
"""

from __future__ import annotations

import warnings
from typing import Callable

import numpy as np

from common import Dataset
from exporter.class_stats import QUANTUM, clip_and_quantize, clip_steps
from exporter.privacy import PrivacyBudget
from exporter.public_basis import PublicBasis

DP_PEERS = ("dp_lr", "dp_nb", "dp_ncm384", "dp_ncm128")
#: The nearest-class-mean peer's one release (sums and counts together), named for the budget only.
NCM_RELEASE = "peer_class_means"
DP_LR_C = 0.1
NCM_CLIP = {384: 15.0, 128: 7.5}


def _accuracy(predicted: np.ndarray, ds: Dataset) -> float:
    return float((np.asarray(predicted) == ds.test.labels).mean())


def dp_logistic_regression(ds: Dataset, eps: float, seed: int) -> float:
    from diffprivlib.models import LogisticRegression

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # diffprivlib's convergence and privacy-leak notices
        model = LogisticRegression(epsilon=eps, data_norm=1.0, C=DP_LR_C, max_iter=200, random_state=seed)
        return _accuracy(model.fit(ds.train.embeddings, ds.train.labels).predict(ds.test.embeddings), ds)


def dp_gaussian_nb(ds: Dataset, eps: float, seed: int, bounds: tuple[np.ndarray, np.ndarray]) -> float:
    from diffprivlib.models import GaussianNB

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = GaussianNB(epsilon=eps, bounds=bounds, random_state=seed)
        return _accuracy(model.fit(ds.train.embeddings, ds.train.labels).predict(ds.test.embeddings), ds)


def dp_nearest_class_mean(ds: Dataset, eps: float, basis: PublicBasis, dim: int) -> float:
    """The 'twenty lines of numpy' peer, with OpenDP noise through the exporter's budget."""
    if dim >= basis.projection.shape[1]:
        frame: Callable[[np.ndarray], np.ndarray] = lambda x: np.asarray(x, np.float64) - basis.origin  # noqa: E731
    else:
        p = basis.projection[:dim].astype(np.float64)
        frame = lambda x: (np.asarray(x, np.float64) - basis.origin) @ p.T  # noqa: E731
    steps = clip_steps(NCM_CLIP[dim])
    grid = clip_and_quantize(frame(ds.train.embeddings), steps)
    classes = len(ds.labels)
    sums = np.zeros((classes, grid.shape[1]), np.int64)
    np.add.at(sums, ds.train.labels, grid)
    counts = np.bincount(ds.train.labels, minlength=classes) * QUANTUM
    budget = PrivacyBudget(eps, shares={NCM_RELEASE: 1.0})
    noisy = budget.release(NCM_RELEASE, np.concatenate([sums.reshape(-1), counts]),
                           sensitivity=steps + QUANTUM, mechanism="peer: noisy class sums and counts")
    means = noisy[:sums.size].reshape(sums.shape) / np.maximum(noisy[sums.size:], QUANTUM)[:, None]
    unit = lambda a: a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)  # noqa: E731
    return _accuracy((unit(frame(ds.test.embeddings)) @ unit(means).T).argmax(axis=1), ds)


def logistic_regression(ds: Dataset) -> float:
    """Non-private reference: scikit-learn's logistic regression (C = 1)."""
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=1.0, max_iter=2000)
    return _accuracy(model.fit(ds.train.embeddings, ds.train.labels).predict(ds.test.embeddings), ds)


def dp_peer(name: str, ds: Dataset, eps: float, seed: int, basis: PublicBasis,
            bounds: tuple[np.ndarray, np.ndarray]) -> float:
    """Accuracy of DP peer ``name`` (one of DP_PEERS) for one epsilon and seed."""
    if name == "dp_lr":
        return dp_logistic_regression(ds, eps, seed)
    if name == "dp_nb":
        return dp_gaussian_nb(ds, eps, seed, bounds)
    return dp_nearest_class_mean(ds, eps, basis, int(name.removeprefix("dp_ncm")))
