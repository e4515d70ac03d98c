"""Smoke runs of benchmarks/runtime_perf.py on a small real bundle, so the script cannot rot.

Repetition counts are tiny: these check that every section runs and that its figures are
plausible and consistent (sizes add up, hash+lookup is far cheaper than encoding), not the
speed of this machine.
"""

import json
import subprocess
import sys

import pytest

from conftest import DATA, ROOT

SCRIPT = "benchmarks/runtime_perf.py"
TINY = ["--threads", "1", "--queries", "10", "--lookup-reps", "200", "--cold-runs", "1",
        "--batch-texts", "20", "--batch-repeats", "1"]


def run_perf(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, cwd=ROOT, timeout=timeout)


def check_runtime_sections(result: dict, bundle_path, engine: tuple[str, str] = ("onnx", "onnxruntime")) -> dict:
    """The checks that hold with or without baselines, for either encoder format; returns the
    bundle's entry."""
    (entry,) = result["bundles"]
    assert (entry["format"], entry["engine"]) == engine
    assert len(entry["labels"]) == 7

    sizes = entry["sizes_bytes"]
    assert sizes["file"] == bundle_path.stat().st_size
    assert sum(v for k, v in sizes.items() if k != "file") == sizes["file"]
    assert 0 < sizes["metadata"] < 64 * 1024  # labels, privacy facts, check text: small next to the arrays
    assert sizes["encoder"] > 10 * 2**20 and "vote_tables" not in sizes  # int8 MiniLM; the default has no tables
    k = entry["class_stats_dim"]
    assert sizes["class_statistics"] == 4 * (384 + k * 384 + 7 * k + 7)  # origin, projection (f4), sums, counts (i4)

    # Section 0: the same command against the import floor; it does all the floor does and more.
    first = entry["first_answer"]
    assert first["runs"] == 1 and first["pack"] is None and 0 < first["floor_cpu_s"] < first["cpu_s"] < 60
    assert first["cpu_ratio"] == first["cpu_s"] / first["floor_cpu_s"]
    assert 20 < first["floor_peak_mib"] < first["peak_mib"] < 1000

    cold = entry["cold_start"]["1"]
    assert 0 < cold["answer_s"] <= cold["exit_s"] < 60
    assert all(r["launcher_mib"] < r["peak_rss_mib"] for r in cold["runs"])
    assert 30 < cold["peak_rss_mib"] < 1000  # numpy + onnxruntime + a 23 MB model, not the benchmark's own size

    texts = result["texts"]
    assert texts["short"]["tokens"] < 20 and texts["long"]["tokens"] >= 128
    for name in ("short", "long"):
        q = entry["latency"]["1"][name]
        assert q["tokens"] == texts[name]["tokens"]
        for part in ("tokenize", "encode", "hash_lookup", "total"):
            assert 0 < q[part]["p50_us"] <= q[part]["p95_us"], (name, part, q[part])
        assert q["encode"]["p50_us"] < q["total"]["p50_us"] * 3  # total includes encode (slack for noise)
    assert entry["latency"]["1"]["long"]["encode"]["p50_us"] > entry["latency"]["1"]["short"]["encode"]["p50_us"]

    tp = entry["throughput"]
    assert tp and all(t["texts_per_s"] > 0 and t["texts"] == 20 for t in tp)
    assert [t["target"].split(" (")[0] for t in entry["targets"]] == [
        "hash+lookup p50", "short query end to end p50", "cold start to answer, median",
        "cold start peak RSS, median", "small-device peak RSS goal", "bundle size"]
    assert all(isinstance(t["passed"], bool) for t in entry["targets"])

    # Section 5: the load steps, in Classifier.load's order, end where the cold start ends.
    stages = {st["stage"]: st for st in entry["memory"]["stages"]}
    names = list(stages)
    read = "bundle read and checked " + ("(ONNX weights left in the file)" if engine[0] == "onnx"
                                         else "(model bytes in memory)")
    assert names[0] == "python interpreter" and names[-1] == "first answer"
    assert names.index(read) < names.index("+ engine session (model loaded)") < names.index("+ tokenizer")
    assert all(st["VmRSS"] <= st["VmHWM"] + 0.01 for st in stages.values())
    assert abs(stages["first answer"]["VmHWM"] - cold["peak_rss_mib"]) < 20, (stages, cold)  # same program, same peak
    # The int8 model reaches the engine: the session and its first runs add at least half its size.
    loaded = stages["first answer"]["VmRSS"] - stages["+ engine import"]["VmRSS"]
    assert loaded > sizes["encoder"] / 2**20 / 2, stages
    # Section 6: the blend's parts, each timed alone.
    sc = entry["scoring"]
    assert sc["mode"] == "blend" and sc["whole_p50_us"] > 0
    assert set(sc["parts_p50_us"]) >= {"float64 copy", "centroids + prior (all)", "  the projection z = P x (dim x k)"}
    assert "hash (SimHash buckets)" not in sc["parts_p50_us"]  # the default bundle has no tables
    return entry


@pytest.mark.export  # the fp32 ONNX export and the PyTorch reference
def test_runtime_perf_with_baselines(dp_bundle, tmp_path):
    out = tmp_path / "perf.json"
    r = run_perf("--bundle", str(dp_bundle), "--train", str(DATA / "train.jsonl"), "--out", str(out), *TINY)
    assert r.returncode == 0, r.stderr[-3000:]
    for title in ("1. Cold start", "2. Per-query latency", "2b. Per-query baselines", "2c. Ratios",
                  "3. Batch throughput", "4. Bundle size", "5. Where the memory goes",
                  "6. Where the scoring time goes", "Targets"):
        assert f"## {title}" in r.stdout
    result = json.loads(out.read_text())
    entry = check_runtime_sections(result, dp_bundle)

    base = result["baselines"]
    assert set(base["cold_start"]) == {"fp32 ONNX", "PyTorch ST"}
    # PyTorch + transformers need far more memory than the bare runtime; fp32 weights are 4x the int8 ones.
    assert base["cold_start"]["PyTorch ST"]["1"]["peak_rss_mib"] > entry["cold_start"]["1"]["peak_rss_mib"] + 100
    assert base["cold_start"]["fp32 ONNX"]["1"]["peak_rss_mib"] > entry["cold_start"]["1"]["peak_rss_mib"]
    assert set(base["latency"]["1"]) == {"fp32_onnx", "pytorch_st", "exact_knn"}  # no TFLite bundle, no fp32 TFLite
    assert all(m["p50_us"] > 0 for per in base["latency"]["1"].values() for m in per.values())
    for ratios in entry["ratios"]["1"].values():
        assert ratios["encode_int8_over_fp32_same_engine"] == ratios["encode_int8_over_fp32_onnx"] > 0
        assert ratios["total_over_pytorch_st"] > 0 and ratios["hash_lookup_over_exact_knn"] > 0
    assert set(base["throughput"]) == {"fp32_onnx_loop", "pytorch_st_batch32"}
    assert result["imported"]["torch"] and result["settings"]["baselines"]


@pytest.mark.parametrize("which,engine", [("dp_bundle", ("onnx", "onnxruntime")),
                                          pytest.param("tflite_bundle", ("tflite", "litert"), marks=pytest.mark.tflite)])
def test_runtime_perf_without_baselines_stays_on_the_bare_runtime(which, engine, request, tmp_path):
    """Both encoder formats: the one-thread cold start (peak RSS of `python -m runtime.classify`
    forked from the small launcher) and the load steps behind it."""
    bundle = request.getfixturevalue(which)
    out = tmp_path / "perf.json"
    r = run_perf("--bundle", str(bundle), "--no-baselines", "--out", str(out), *TINY)
    assert r.returncode == 0, r.stderr[-3000:]
    result = json.loads(out.read_text())
    check_runtime_sections(result, bundle, engine)
    assert result["baselines"] == {"cold_start": {}, "latency": {}, "throughput": {}, "knn": None}
    assert not any(result["imported"].values()), result["imported"]  # no torch, exporter, TensorFlow
    assert result["settings"]["batch_source"].endswith("data/assistant/test.jsonl")


@pytest.mark.parametrize("args, message", [
    (["--bundle", "no/such.dpedge"], "bundle not found: no/such.dpedge"),
    (["--bundle", "README.md"], "README.md"),
])
def test_runtime_perf_refuses_a_bad_bundle(args, message):
    r = run_perf(*args, "--no-baselines", timeout=60)
    assert r.returncode == 2
    assert message in r.stderr and r.stdout == ""


@pytest.mark.exporter
def test_first_answer_of_a_statistics_bundle_with_its_pack(exported_encoder, tmp_path):
    """benchmarks/first_answer.py on a statistics bundle: the pack goes to the command line, and a
    one-file bundle beside it is run without it."""
    from runtime import bundle as fmt
    from conftest import build_options
    from exporter.build import build
    from noise_hooks import ConstantNoise

    pack = fmt.save_pack(exported_encoder.to_bundle_encoder(), tmp_path / "minilm.dpedge-encoder")[0]
    stats, one = tmp_path / "stats.dpedge", tmp_path / "one.dpedge"
    build(build_options(stats, encoder_pack=pack), noise_for_tests=ConstantNoise(0))
    build(build_options(one), noise_for_tests=ConstantNoise(0))
    out = tmp_path / "first.json"
    r = subprocess.run([sys.executable, "benchmarks/first_answer.py", "--bundle", str(stats), "--bundle", str(one),
                        "--encoder-pack", str(pack), "--runs", "1", "--out", str(out)],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr
    rows = json.loads(out.read_text())
    assert [(row["bundle"], row["pack"]) for row in rows] == [(str(stats), str(pack)), (str(one), None)]
    assert all(0 < row["floor_cpu_s"] < row["cpu_s"] and row["floor_peak_mib"] < row["peak_mib"] for row in rows)
    assert "CPU / floor" in r.stdout and "stats.dpedge + minilm.dpedge-encoder" in r.stdout
