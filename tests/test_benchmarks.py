"""Smoke runs of the benchmark scripts on the project's own data, so they cannot rot."""

import json
import subprocess
import sys

from conftest import DATA, ROOT


def test_accuracy_benchmark_runs_and_writes_json(exported_encoder, tmp_path):
    out = tmp_path / "acc.json"
    r = subprocess.run([sys.executable, "benchmarks/accuracy.py", "--data", str(DATA), "--grid", "4x16",
                        "--epsilons", "8,inf", "--seeds", "1", "--out", str(out)],
                       capture_output=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr.decode()
    assert "assistant" in r.stdout.decode() and "4x16" in r.stdout.decode()
    (row,) = json.loads(out.read_text())
    assert (row["dataset"], row["bits"], row["tables"]) == ("assistant", 4, 16)
    assert row["knn10"] > 0.8  # the non-private reference on easy hand-written data
    assert row["acc"]["inf"]["mean"] > 0.5 and 0 <= row["acc"]["8.0"]["mean"] <= 1
