"""benchmarks/soak.py in miniature, so the script cannot rot (the real run is 1,000,000 queries,
docs/reliability.md)."""

import json
import subprocess
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import soak  # noqa: E402


def test_queries_are_short_varied_and_deterministic():
    a = list(soak.queries(2000, seed=4))
    assert a == list(soak.queries(2000, seed=4)) and a != list(soak.queries(2000, seed=5))
    assert len(set(a)) > 1990 and all(1 <= len(q.split()) <= 13 for q in a)


def test_verdict_measures_after_the_warm_up():
    w = [soak.Window(100 * i, 100.0 + (5 if i == 1 else 0) + (2 if i == 4 else 0), 10, 200.0 / i, float(i))
         for i in range(1, 5)]
    v = soak.verdict(w, warmup=100, probe_checks=3, mismatches=0, seconds=10.0)
    assert v.warmup_queries == 100 and v.rss_start_mib == 105.0 and v.rss_end_mib == 102.0
    assert v.rss_growth_mib == -3.0 and v.rss_max_growth_mib == -3.0
    assert v.qps_min == 50.0 and v.qps_max == 100.0 and v.qps_drift == 0.5 and v.cpu_ms_drift == 0.5
    assert v.cpu_ms_trend == 2.0  # windows after warm-up: 2, 3, 4 ms; last third / first third


@pytest.mark.tflite
def test_soak_script_runs(tflite_bundle, tmp_path):
    out = tmp_path / "soak.json"
    r = subprocess.run([sys.executable, "benchmarks/soak.py", "--bundle", str(tflite_bundle), "--queries", "600",
                        "--report-every", "200", "--probe-every", "100", "--max-rss-growth-mib", "64",
                        "--min-drift", "0.05",
                        "--out", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "|       600 |" in r.stdout and "verdict        OK" in r.stdout
    data = json.loads(out.read_text())
    assert [w["done"] for w in data["windows"]] == [200, 400, 600]
    assert data["verdict"]["probe_mismatches"] == 0 and data["verdict"]["probe_checks"] == 6
    assert sum(data["labels"].values()) == 600
