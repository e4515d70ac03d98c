"""Shared benchmark plumbing: datasets in the ../shared/data layout, embedded once and cached.

Embeddings come from the exact int8 encoder a bundle ships (through the runtime's tokenizer
and encoder), and are cached under .cache/embeddings keyed by the encoder's hash and the
file's hash, so sweeps over hashing settings and epsilons do not re-embed.
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from exporter.dataset import LabelSet, read_labels, read_records  # noqa: E402
from exporter.encoder_export import ExportedEncoder, export_encoder  # noqa: E402
from runtime.embedder import Embedder as TextEmbedder  # noqa: E402

CACHE = ROOT / ".cache" / "embeddings"


@dataclass
class Split:
    embeddings: np.ndarray  # (n, dim) float32, unit rows
    labels: np.ndarray      # (n,) int64 class indices


@dataclass
class Dataset:
    name: str
    labels: LabelSet
    train: Split
    test: Split


def file_hash(path: Path) -> str:
    """SHA-256 of a file, read in 4 MiB blocks (a model's weights need not fit in memory twice)."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 22):
            h.update(block)
    return h.hexdigest()


class Embedder:
    """Embeds dataset files with the shipped int8 encoder, caching results on disk."""

    def __init__(self, exported: ExportedEncoder | None = None):
        self.exported = exported or export_encoder(models_dir=ROOT / "models")
        spec = self.exported.to_bundle_encoder()
        self.embedder = TextEmbedder(spec, threads=1, workers=os.cpu_count() or 1)
        self.key = self.exported.facts["source_sha256"][:16]

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit embeddings of ``texts`` (what a device computes with the shipped encoder)."""
        return self.embedder.embed(texts)

    def split(self, path: Path, labels: LabelSet) -> Split:
        cache = CACHE / f"{self.key}-{file_hash(path)[:16]}.npz"
        if cache.is_file():
            z = np.load(cache)
            return Split(z["embeddings"], z["labels"])
        records = list(read_records(path, labels))
        emb = self.embed([r.text for r in records])
        split = Split(emb, np.array([r.label for r in records], dtype=np.int64))
        CACHE.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(".tmp.npz")
        np.savez(tmp, embeddings=split.embeddings, labels=split.labels)
        os.replace(tmp, cache)
        return split

    def dataset(self, folder: Path) -> Dataset:
        labels_file = folder / "labels_described.txt"
        labels = read_labels(labels_file if labels_file.is_file() else folder / "labels.txt")
        return Dataset(folder.name, labels, self.split(folder / "train.jsonl", labels),
                       self.split(folder / "test.jsonl", labels))


def knn_accuracy(train: Split, test: Split, k: int = 10) -> float:
    """Non-private reference: exact cosine kNN, majority vote (ties go to the lower class index)."""
    sims = test.embeddings @ train.embeddings.T
    votes = train.labels[np.argpartition(-sims, k, axis=1)[:, :k]]
    classes = int(max(train.labels.max(), test.labels.max())) + 1
    counts = np.stack([(votes == c).sum(axis=1) for c in range(classes)], axis=1)
    return float((counts.argmax(axis=1) == test.labels).mean())
