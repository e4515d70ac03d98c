"""Smoke runs of the benchmark scripts on the project's own data, so they cannot rot."""

import json
import subprocess
import sys

import pytest

from conftest import DATA, ROOT
from exporter.stages import SCORING

#: The releases need OpenDP; the peers, the attack and the plots the dev extra.
pytestmark = [pytest.mark.exporter, pytest.mark.dev]


def test_accuracy_benchmark_runs_and_writes_json(exported_encoder, tmp_path):
    """The CI smoke version of benchmarks/accuracy.py: one dataset, one seed, two epsilons."""
    out, plot = tmp_path / "acc.json", tmp_path / "acc.png"
    r = subprocess.run([sys.executable, "benchmarks/accuracy.py", "--data", str(DATA), "--epsilons", "1,8",
                        "--seeds", "1", "--out", str(out), "--plot", str(plot)],
                       capture_output=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr.decode()
    text = r.stdout.decode()
    assert "assistant" in text and "avg drop" in text and "dp_ncm384" in text and "\nLR " in text
    res = json.loads(out.read_text())
    row = res["datasets"]["assistant"]
    assert row["knn10"] > 0.8  # the non-private reference on easy hand-written data
    assert row["lr"] > 0.8  # the non-private logistic regression reference
    for method in ("default", "centroids", "with_votes", "votes", "random", "paper", "prior", "dp_lr", "dp_nb",
                   "dp_ncm384", "dp_ncm128"):
        assert all(0 <= a <= 1 for a in row["runs"][method]["8.0"]), method
    assert len(row["runs"]["default"]["8.0"]) == 1
    assert sum(row["runs"]["default"]["8.0"]) > 0.6  # far above chance (1/7) on this data
    assert 16 <= row["k"]["8.0"] <= 384 and set(res["best_peer"]) == {"1.0", "8.0"}
    assert row["scoring"] == vars(SCORING)  # without options, the constants the exporter ships
    assert plot.stat().st_size > 1000 and plot.read_bytes()[:4] == b"\x89PNG"


def test_accuracy_benchmark_replaces_the_scoring_constants(exported_encoder, tmp_path):
    """--description-pull and --prior-records-per-class reach the assembled bundle's scoring:
    with R = 0 the prior's boost is 0, so the blend is the class sums' cosine alone and the
    default row equals the centroids row."""
    out = tmp_path / "acc.json"
    r = subprocess.run([sys.executable, "benchmarks/accuracy.py", "--data", str(DATA), "--epsilons", "8",
                        "--seeds", "1", "--methods", "default,centroids", "--description-pull", "0",
                        "--prior-records-per-class", "0", "--out", str(out)],
                       capture_output=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr.decode()
    row = json.loads(out.read_text())["datasets"]["assistant"]
    assert row["scoring"]["description_pull"] == 0.0 and row["scoring"]["prior_records_per_class"] == 0.0
    assert row["scoring"]["centroid_temperature"] == SCORING.centroid_temperature  # the rest as shipped
    assert row["runs"]["default"]["8.0"] == row["runs"]["centroids"]["8.0"]


def test_accuracy_benchmark_compares_encoders(exported_encoder, tmp_path):
    """--encoders prints the per-encoder table: real bundles (their size), the paper's rows where
    it has the dataset (not on the project's own data), LR and kNN10 on the same embeddings; a
    study source (st:FOLDER, the same weights in fp32) has no bundle and scores alike."""
    from exporter import encoders

    out = tmp_path / "enc.json"
    study = f"st:{encoders.resolve(None)[0]}"
    r = subprocess.run([sys.executable, "benchmarks/accuracy.py", "--data", str(DATA), "--epsilons", "1,8",
                        "--seeds", "2", "--encoders", "all-MiniLM-L6-v2", study, "--out", str(out)],
                       capture_output=True, cwd=ROOT, timeout=900)
    assert r.returncode == 0, r.stderr.decode()
    text = r.stdout.decode()
    assert "all-MiniLM-L6-v2" in text and "MiB" in text and "eps 8" in text and "paper" not in text
    enc = json.loads(out.read_text())["encoders"]["all-MiniLM-L6-v2"]
    row = enc["datasets"]["assistant"]
    assert len(row["runs"]["8.0"]) == 2 and all(0.6 < a <= 1 for a in row["runs"]["8.0"])
    assert 0.8 < row["lr"] <= 1 and 0.8 < row["knn10"] <= 1 and 0.6 < row["ncm"] <= 1
    assert 5 < enc["bundle_mib"] < 60 and enc["ms_per_text"] > 0
    fp32 = json.loads(out.read_text())["encoders"][study]
    assert fp32["bundle_mib"] is None and "(fp32, study)" in text
    assert abs(fp32["datasets"]["assistant"]["lr"] - row["lr"]) < 0.05  # int8 and fp32 embed alike


def test_second_moment_study_runs_and_its_exact_row_is_the_ceiling(exported_encoder):
    """benchmarks/second_moment.py: with exact statistics (inf) the LDA of the project's data
    classifies well above chance, and every released row is a valid accuracy."""
    r = subprocess.run([sys.executable, "benchmarks/second_moment.py", "--data", str(DATA), "--epsilons", "8,inf",
                        "--dims", "16,32", "--seeds", "1"], capture_output=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr.decode()
    rows = [line.split() for line in r.stdout.decode().splitlines()[1:]]
    assert len(rows) == 4 and all(row[0] == "assistant" for row in rows)
    accs = {(row[1], row[2]): [float(a) for a in row[3:]] for row in rows}
    assert all(0 <= a <= 100 for values in accs.values() for a in values) and all(len(v) == 4 for v in accs.values())
    assert max(accs[("inf", "32")][:3]) > 60  # 7 labels: chance is 14


@pytest.mark.ray
def test_head_steps_benchmark_times_local_and_ray(tmp_path):
    """The CI smoke version of benchmarks/head_steps.py (the head's steps, local and on Ray)."""
    out = tmp_path / "steps.json"
    r = subprocess.run([sys.executable, "benchmarks/head_steps.py", "--records", "4000", "--steps", "3", "--out",
                        str(out)], capture_output=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr.decode()
    assert "| ray (2 workers) |" in r.stdout.decode()
    result = json.loads(out.read_text())
    assert result["rule_steps"] == 196 and all(s > 0 for s in result["seconds_per_step"].values())


def test_person_head_benchmark_runs_and_writes_json(exported_encoder, tmp_path):
    """The CI smoke version of benchmarks/person_head.py (the person-level head against the
    person-level default): the project's own data in synthetic persons of up to 4 records."""
    out = tmp_path / "person.json"
    r = subprocess.run([sys.executable, "benchmarks/person_head.py", "--data", str(DATA), "--epsilons", "8",
                        "--repeats", "1", "--max-records", "4", "--out", str(out)], capture_output=True, cwd=ROOT,
                       timeout=600)
    assert r.returncode == 0, r.stderr.decode()
    assert "| person head (eps 8, delta 1e-05) |" in r.stdout.decode()
    row = json.loads(out.read_text())["results"]["assistant"]
    assert row["person default"]["8"][0] > 0.5 and row["person head"]["8"][0] > 0.5  # chance is 1/7
    assert row["persons"] < row["train"] and abs(row["rule"]["8"]["person head"]["noisy_persons"] - row["persons"]) < 100


def test_head_benchmark_runs_and_writes_json(exported_encoder, tmp_path):
    """The CI smoke version of benchmarks/head.py (the opt-in head against the default): the
    project's own data, one epsilon, one repeat."""
    out = tmp_path / "head.json"
    r = subprocess.run([sys.executable, "benchmarks/head.py", "--data", str(DATA), "--epsilons", "8", "--repeats", "1",
                        "--out", str(out)], capture_output=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr.decode()
    assert "| assistant |" in r.stdout.decode() and "head (eps 8, delta 1e-05)" in r.stdout.decode()
    row = json.loads(out.read_text())["results"]["all-MiniLM-L6-v2"]["assistant"]  # by encoder, then dataset
    assert row["default"]["8"][0] > 0.6 and row["head"]["8"][0] > 0.6  # far above chance (1/7) on this data
    assert row["rule"]["8"]["sample_rate"] == 1.0 and row["rule"]["8"]["steps"] == 100  # 560 records: q = 1
