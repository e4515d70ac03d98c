"""`python -m exporter evaluate`: a bundle's figures on a labelled test file, counted through the
runtime exactly as a device classifies, with the notice that they are private."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import DATA, ROOT
from exporter.evaluate import NOTICE, Evaluation, evaluate
from runtime import Classifier

pytestmark = pytest.mark.exporter


def test_metrics_on_a_hand_example():
    # true 0: 3 right, 1 as class 1; true 1: 1 right; true 2: 2 as class 1
    confusion = np.array([[3, 1, 0], [0, 1, 0], [0, 2, 0]])
    ev = Evaluation(("a", "b", "c"), confusion, np.array([0.9] * 7), np.array([1, 1, 1, 0, 1, 0, 0], bool))
    assert ev.records == 7 and ev.accuracy == pytest.approx(4 / 7)
    rows = {r["label"]: r for r in ev.per_class()}
    assert rows["a"]["precision"] == 1.0 and rows["a"]["recall"] == 0.75
    assert rows["b"]["precision"] == pytest.approx(0.25) and rows["b"]["recall"] == 1.0
    assert rows["c"] == {"label": "c", "precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 2}
    f1 = [2 * 0.75 / 1.75, 2 * 0.25 / 1.25, 0.0]
    assert ev.macro_f1 == pytest.approx(np.mean(f1))
    [b] = ev.reliability()
    assert b["records"] == 7 and b["from"] == pytest.approx(0.9) and b["accuracy"] == pytest.approx(4 / 7)


def test_evaluate_counts_what_the_runtime_predicts(dp_bundle):
    ev = evaluate(dp_bundle, DATA / "test.jsonl", threads=1)
    rows = [json.loads(line) for line in (DATA / "test.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    preds = Classifier.load(dp_bundle, threads=1).classify([r["text"] for r in rows])
    right = sum(p.label == r["label"] for p, r in zip(preds, rows))
    assert ev.records == len(rows) and ev.confusion.sum() == len(rows)
    assert ev.accuracy == pytest.approx(right / len(rows))
    assert ev.top_scores.max() <= 1.0 and ev.top_scores.min() >= 1.0 / len(ev.labels) - 1e-12
    assert sum(b["records"] for b in ev.reliability()) == len(rows)


def test_the_cli_prints_the_notice_writes_the_plot_and_json(dp_bundle, tmp_path):
    test = tmp_path / "test.jsonl"
    text = (DATA / "test.jsonl").read_text(encoding="utf-8")
    test.write_text(text + json.dumps({"text": "order a pizza", "label": "food"}) + "\n", encoding="utf-8")
    png = tmp_path / "eval.png"
    run = [sys.executable, "-m", "exporter", "evaluate", "--bundle", str(dp_bundle), "--test", str(test), "--threads", "1"]
    r = subprocess.run(run + ["--plot", str(png)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(NOTICE) and "accuracy" in r.stdout and "macro-F1" in r.stdout
    assert "skipped 1 record(s) with a label the bundle does not have" in r.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".eval.png")]  # the temp file is gone
    assert png.stat().st_mode & 0o044  # readable as any file the user writes (umask), not mkstemp's 0600
    j = subprocess.run(run + ["--json"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    doc = json.loads(j.stdout)
    assert doc["notice"] == NOTICE and doc["skipped"]["unknown_label"] == 1
    assert len(doc["confusion"]["rows_true_columns_predicted"]) == len(doc["per_class"])


def test_a_malformed_test_line_names_file_and_line(dp_bundle, tmp_path):
    test = tmp_path / "bad.jsonl"
    test.write_text('{"text": "wake me up", "label": "alarm_timer"}\n{"text": oops}\n', encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "exporter", "evaluate", "--bundle", str(dp_bundle), "--test", str(test)],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and f"{test}:2" in r.stderr and "Traceback" not in r.stderr


def _hand_evaluation(records_at_top: int = 12345) -> Evaluation:
    """Bins at the plot's edges: a crowded one near score 1 all right, one near 1/3 all wrong,
    one in the middle, with counts of several digits."""
    top = np.array([0.995] * records_at_top + [0.34] * 250 + [0.55] * 1000)
    correct = np.array([True] * records_at_top + [False] * 250 + [True, False] * 500)
    confusion = np.array([[records_at_top, 125, 0], [125, 500, 0], [0, 500, 0]])
    return Evaluation(("alarm", "weather", "music"), confusion, top, correct)


def test_the_plot_keeps_every_label_and_point_inside_its_axes():
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from exporter.evaluate import figure

    ev = _hand_evaluation()
    assert {b["records"] for b in ev.reliability()} == {12345, 250, 1000}
    fig = figure(ev)
    try:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        for ax in fig.axes:
            frame = ax.get_window_extent(renderer)
            assert ax.texts, "the counts are labelled"
            for t in ax.texts:
                box = t.get_window_extent(renderer)
                assert (frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1), \
                    f"label {t.get_text()!r} at {box.bounds} leaves its axes {frame.bounds}"
        reliability = fig.axes[1]
        (x0, x1), (y0, y1) = reliability.get_xlim(), reliability.get_ylim()
        assert x0 < 0 and x1 > 1 and y0 < 0 and y1 > 1  # a point at 0 or 1 is off the frame
    finally:
        plt.close(fig)


def test_plot_without_a_file_name_goes_beside_the_bundle_not_the_working_directory(dp_bundle, tmp_path):
    bundle = tmp_path / "bundles" / "app.dpedge"
    bundle.parent.mkdir()
    bundle.symlink_to(dp_bundle)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    r = subprocess.run([sys.executable, "-m", "exporter", "evaluate", "--bundle", str(bundle), "--test",
                        str(DATA / "test.jsonl"), "--threads", "1", "--plot"], cwd=cwd, capture_output=True, text=True,
                       timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    png = bundle.parent / "app-evaluation.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"wrote {png}" in r.stdout
    assert list(cwd.iterdir()) == []


def test_the_readmes_evaluate_commands_write_their_plot_under_models():
    """The README's commands run from the repository's root: a plot there would be a stray file
    (and private figures); under models/ it is beside the bundle and ignored by git."""
    import shlex

    from exporter.__main__ import parse_args

    lines = [line.split("#")[0] for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
             if line.startswith("python -m exporter evaluate")]
    assert lines
    for line in lines:
        args = parse_args(shlex.split(line)[3:])
        assert args.plot is not None and args.plot.parent == Path("models"), line
        ignored = subprocess.run(["git", "check-ignore", "-q", str(args.plot)], cwd=ROOT)
        assert ignored.returncode == 0, f"{args.plot} is not ignored by git"
