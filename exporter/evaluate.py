"""How accurate a bundle is on the owner's own labelled test file.

`python -m exporter evaluate --bundle B --test FILE [--plot [PNG]] [--json]` classifies every
record of FILE with the runtime (exactly as a device would) and reports accuracy, macro-F1,
per-class precision and recall, the confusion matrix and how often the top score is right at
each score level (a reliability table; with --plot, both as pictures).

The test file is private data and these figures are computed from it exactly, without noise:
they are for the data owner deciding whether to ship the bundle, not part of any release, and
must not be published with it. (The bundle itself is unchanged: evaluating costs no budget,
but the figures are not covered by its guarantee.)
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from exporter.dataset import LabelSet, ReadStats, read_records
from runtime.bundle import write_atomic
from runtime.text import escape

#: What every report says first.
NOTICE = ("The test file is private data: these figures are computed from it exactly, for its owner; they are not "
          "differentially private and not part of the bundle's release, so do not publish them with it.")
#: Reliability bins of the top score (a share of 1, so at least 1/C).
BINS = 10
#: Records classified per call (memory stays small for any file size).
CHUNK = 256


class PlotUnavailable(RuntimeError):
    """--plot was asked for where matplotlib is not installed."""


@dataclass(frozen=True)
class Evaluation:
    """Exact figures of one bundle on one labelled test file (never released)."""

    labels: tuple[str, ...]
    confusion: np.ndarray                      # (C, C): row = true label, column = predicted
    top_scores: np.ndarray                     # (n,) the winning label's score
    correct: np.ndarray                        # (n,) bool
    stats: ReadStats = field(default_factory=ReadStats)

    @property
    def records(self) -> int:
        return int(self.confusion.sum())

    @property
    def accuracy(self) -> float:
        return float(np.trace(self.confusion) / max(self.records, 1))

    def per_class(self) -> list[dict[str, Any]]:
        """Precision, recall, F1 and support of each label (0 where undefined: no predictions or
        no records of it)."""
        tp = np.diag(self.confusion).astype(np.float64)
        predicted, support = self.confusion.sum(axis=0), self.confusion.sum(axis=1)
        precision = np.divide(tp, predicted, out=np.zeros_like(tp), where=predicted > 0)
        recall = np.divide(tp, support, out=np.zeros_like(tp), where=support > 0)
        f1 = np.divide(2 * precision * recall, precision + recall, out=np.zeros_like(tp), where=precision + recall > 0)
        return [{"label": name, "precision": float(p), "recall": float(r), "f1": float(f), "support": int(s)}
                for name, p, r, f, s in zip(self.labels, precision, recall, f1, support)]

    @property
    def macro_f1(self) -> float:
        """The mean F1 over the labels that have test records."""
        rows = [r["f1"] for r in self.per_class() if r["support"] > 0]
        return float(np.mean(rows)) if rows else 0.0

    def reliability(self) -> list[dict[str, Any]]:
        """For top scores in each of BINS equal bins of [0, 1]: records, mean top score, accuracy."""
        edges = np.linspace(0.0, 1.0, BINS + 1)
        which = np.clip(np.digitize(self.top_scores, edges[1:-1]), 0, BINS - 1)
        out = []
        for b in range(BINS):
            mask = which == b
            if mask.any():
                out.append({"from": float(edges[b]), "to": float(edges[b + 1]), "records": int(mask.sum()),
                            "mean_score": float(self.top_scores[mask].mean()),
                            "accuracy": float(self.correct[mask].mean())})
        return out

    def to_json(self) -> dict[str, Any]:
        return {"notice": NOTICE, "records": self.records, "accuracy": self.accuracy, "macro_f1": self.macro_f1,
                "per_class": self.per_class(), "confusion": {"labels": list(self.labels),
                                                             "rows_true_columns_predicted": self.confusion.tolist()},
                "reliability": self.reliability(),
                "skipped": {"unknown_label": self.stats.skipped_unknown_label,
                            "empty_text": self.stats.skipped_empty_texts}}


def evaluate(bundle: os.PathLike[str] | str, test: os.PathLike[str] | str, *, fmt: str | None = None,
             text_field: str = "text", label_field: str = "label", threads: int | None = None,
             encoder: os.PathLike[str] | str | None = None) -> Evaluation:
    """Classify every record of ``test`` with the runtime and count. Records whose label the
    bundle does not have, and empty texts, are skipped and counted; a malformed line is an
    error naming the file and line (exporter.dataset)."""
    from runtime import Classifier  # the device's own path: what the figures describe

    clf = Classifier.load(bundle, encoder=encoder, threads=threads)
    labels = tuple(clf.labels)
    index = {name: i for i, name in enumerate(labels)}
    stats = ReadStats()
    records = read_records(test, LabelSet(labels), fmt=fmt, text_field=text_field, label_field=label_field,
                           skip_unknown_labels=True, skip_empty_texts=True, stats=stats)
    confusion = np.zeros((len(labels), len(labels)), np.int64)
    top, correct = [], []
    chunk: list = []

    def flush() -> None:
        for record, pred in zip(chunk, clf.classify([r.text for r in chunk])):
            guess = index[pred.label]
            confusion[record.label, guess] += 1
            top.append(pred.scores[pred.label])
            correct.append(guess == record.label)
        chunk.clear()

    for record in records:
        chunk.append(record)
        if len(chunk) == CHUNK:
            flush()
    flush()
    return Evaluation(labels, confusion, np.array(top, np.float64), np.array(correct, bool), stats)


def format_report(ev: Evaluation, bundle: Path, test: Path) -> str:
    """The human-readable report: the notice, the totals, one row per label, the reliability table."""
    shown = {name: escape(name) for name in ev.labels}  # text from the bundle, escaped for the terminal
    width = max(len("label"), *(len(x) for x in shown.values()))
    lines = [NOTICE, "",
             f"{escape(bundle.name)} on {escape(test.name)}: {ev.records} records, accuracy {100 * ev.accuracy:.1f}%, "
             f"macro-F1 {100 * ev.macro_f1:.1f}%"]
    skipped = ev.stats.skipped_unknown_label + ev.stats.skipped_empty_texts
    if skipped:
        lines.append(f"skipped {ev.stats.skipped_unknown_label} record(s) with a label the bundle does not have and "
                     f"{ev.stats.skipped_empty_texts} with an empty text")
    lines += ["", f"{'label':<{width}}  precision  recall     f1  records"]
    for r in ev.per_class():
        lines.append(f"{shown[r['label']]:<{width}}  {100 * r['precision']:8.1f}%  {100 * r['recall']:5.1f}%  "
                     f"{100 * r['f1']:5.1f}%  {r['support']:7d}")
    lines += ["", "top score   records  mean score  accuracy"]
    for b in ev.reliability():
        lines.append(f"{b['from']:.1f}-{b['to']:.1f}   {b['records']:9d}  {b['mean_score']:10.3f}  "
                     f"{100 * b['accuracy']:7.1f}%")
    return "\n".join(lines)


def plot_path(bundle: os.PathLike[str] | str) -> Path:
    """Where `--plot` without a file name writes: beside the bundle, never in the working
    directory (the figures are private, like the test file).

    Example:
        >>> plot_path("models/quickstart.dpedge").as_posix()
        'models/quickstart-evaluation.png'
    """
    bundle = Path(bundle)
    return bundle.with_name(f"{bundle.stem}-evaluation.png")


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise PlotUnavailable("--plot needs matplotlib: pip install matplotlib (the export extra has it)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def figure(ev: Evaluation):
    """The confusion matrix (row-normalised) and the reliability diagram side by side: a
    matplotlib Figure (close it with matplotlib.pyplot.close). Every count label is inside its
    axes: beside its point, on the side away from the nearer edge."""
    plt = _pyplot()
    c = len(ev.labels)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(6 + 0.45 * c, 5 + 0.15 * c), width_ratios=[1.4, 1],
                                   layout="constrained")
    rows = ev.confusion / np.maximum(ev.confusion.sum(axis=1, keepdims=True), 1)
    ax1.imshow(rows, cmap="Blues", vmin=0, vmax=1)
    ax1.set_xticks(range(c), ev.labels, rotation=60, ha="right", fontsize=8)
    ax1.set_yticks(range(c), ev.labels, fontsize=8)
    ax1.set_xlabel("predicted")
    ax1.set_ylabel("true")
    ax1.set_title(f"confusion (accuracy {100 * ev.accuracy:.1f}%)")
    if c <= 20:
        for i in range(c):
            for j in range(c):
                if ev.confusion[i, j]:
                    ax1.text(j, i, str(ev.confusion[i, j]), ha="center", va="center", fontsize=7,
                             color="white" if rows[i, j] > 0.5 else "black")
    bins = ev.reliability()
    ax2.plot([0, 1], [0, 1], color="grey", linestyle=":", linewidth=1)
    ax2.plot([b["mean_score"] for b in bins], [b["accuracy"] for b in bins], marker="o")
    for b in bins:
        x, y = b["mean_score"], b["accuracy"]
        # Off the curve, which mostly rises: above left of a point on the right (the headroom above
        # 1 holds it), below right of one on the left, unless it is near 0.
        left = x > 0.6
        up = left or y < 0.15
        ax2.annotate(str(b["records"]), (x, y), xytext=(-5 if left else 5, 5 if up else -5),
                     textcoords="offset points", ha="right" if left else "left", va="bottom" if up else "top",
                     fontsize=7, bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none",
                                       "alpha": 0.8})
    # Headroom: a point at 0 or 1 (a bin every record of which is right) stays off the frame, and
    # the label above it inside.
    ax2.set_xlim(-0.03, 1.03)
    ax2.set_ylim(-0.03, 1.1)
    ax2.set_xlabel("top score (mean in its bin)")
    ax2.set_ylabel("accuracy (numbers: records in the bin)")
    ax2.set_title("reliability of the top score")
    fig.suptitle("private test figures: for the data owner, not a release", fontsize=9)
    return fig


def plot(ev: Evaluation, out: Path) -> None:
    """`figure` written atomically to ``out`` (PNG)."""
    plt = _pyplot()
    fig = figure(ev)
    png = io.BytesIO()
    try:
        fig.savefig(png, format="png", dpi=120)
    finally:
        plt.close(fig)
    write_atomic(Path(out), png.getvalue())
