"""Both command lines end to end, as a user runs them: real processes, real bundles, real encoder."""

import json
import os
import subprocess
import sys

import pytest

from conftest import DATA, FIXTURE_NOISE, ROOT


def run(args, *, stdin: bytes | None = None, env_extra=None, cwd=ROOT):
    env = {k: v for k, v in os.environ.items() if k != "DPEDGE_BUNDLE"}
    env.update({"HF_HUB_OFFLINE": "1", **(env_extra or {})})
    return subprocess.run([sys.executable, "-m", *args], input=stdin, capture_output=True, cwd=cwd, env=env,
                          timeout=300)


def test_classify_arguments_human_output(dp_bundle):
    r = run(["runtime.classify", "--bundle", str(dp_bundle), "set an alarm for 6 am", "dim the hallway lights"])
    assert r.returncode == 0, r.stderr.decode()
    lines = r.stdout.decode().splitlines()
    assert len(lines) == 2
    labels = (DATA / "labels.txt").read_text().split("\n")
    names = {line.split("\t")[0] for line in labels if line}
    assert all(line.split("\t")[0] in names for line in lines)
    assert lines[0].endswith("\tset an alarm for 6 am")
    assert "epsilon = 8, delta = 0 (pure DP)" in r.stderr.decode()  # the privacy facts are shown


def test_classify_json_and_top_k(dp_bundle):
    r = run(["runtime.classify", "--bundle", str(dp_bundle), "--json", "--top-k", "3", "text Jo that I'm outside"])
    assert r.returncode == 0, r.stderr.decode()
    rec = json.loads(r.stdout)
    assert rec["text"] == "text Jo that I'm outside"
    assert len(rec["scores"]) == 7 and rec["label"] == rec["top"][0] and len(rec["top"]) == 3
    assert rec["scores"][rec["top"][0]] >= rec["scores"][rec["top"][1]] >= rec["scores"][rec["top"][2]]
    human = run(["runtime.classify", "--bundle", str(dp_bundle), "--top-k", "2", "snooze"]).stdout.decode().splitlines()
    assert human[0] == "snooze" and len(human) == 3


def test_classify_stdin_keeps_going_past_bad_lines(dp_bundle):
    stdin = "play some jazz\n\n".encode() + b"caf\xe9 au lait\n" + "what's the weather\nlast line no newline".encode()
    r = run(["runtime.classify", "--bundle", str(dp_bundle), "--json"], stdin=stdin)
    assert r.returncode == 1  # some lines failed
    out = [json.loads(line) for line in r.stdout.decode().splitlines()]
    assert [o["text"] for o in out] == ["play some jazz", "what's the weather", "last line no newline"]
    err = r.stderr.decode()
    assert "skipped line 2: there is nothing to classify" in err and "skipped line 3: not valid UTF-8" in err


def test_classify_stdin_answers_each_line_before_the_next_arrives(dp_bundle):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "runtime.classify", "--bundle", str(dp_bundle), "--json"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT, env=env)
    try:
        proc.stdin.write(b"what's the temperature outside\n")
        proc.stdin.flush()
        first = json.loads(proc.stdout.readline())  # stdin is still open: the answer came per line
        assert first["text"] == "what's the temperature outside"
        proc.stdin.write(b"next song please\n")
        proc.stdin.close()
        assert json.loads(proc.stdout.readline())["text"] == "next song please"
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()


def test_classify_info(dp_bundle, tables_bundle):
    r = run(["runtime.classify", "--bundle", str(dp_bundle), "--info"])
    assert r.returncode == 0
    text = r.stdout.decode()
    # The noise library the fixture's bundle names: OpenDP, or the test-only hook without it.
    library = "opendp" if FIXTURE_NOISE is None else "tests"
    for fact in ("epsilon               8.0", "delta                 0.0", "add or remove one record", library,
                 "discrete Laplace", "release 1             class_counts: epsilon 0.4, L1 sensitivity 1, noise scale 2.5",
                 "release 2             class_sums: epsilon 7.6", "hashing     none", "alarm_timer", "MiB total"):
        assert fact in text, fact
    info = json.loads(run(["runtime.classify", "--bundle", str(dp_bundle), "--info", "--json"]).stdout)
    assert info["privacy"]["epsilon"] == 8.0 and info["hashing"] is None and "vote_tables" not in info["sizes_bytes"]
    assert info["format_version"] == "1.0" and info["releases"]["class_sums"]["grid"] == 100
    text = run(["runtime.classify", "--bundle", str(tables_bundle), "--info"]).stdout.decode()
    for fact in ("votes: epsilon 0.8, L1 sensitivity 32, noise scale 40.0", "32 tables x 4 bits", "release 3             votes"):
        assert fact in text, fact
    info = json.loads(run(["runtime.classify", "--bundle", str(tables_bundle), "--info", "--json"]).stdout)
    hashing = info["hashing"]
    assert info["sizes_bytes"]["vote_tables"] == (32 * 2 ** hashing["bits"] * 7 * 2 + 32 * hashing["bits"] * 384 * 4
                                                  + 32 * hashing["bits"] * 4)


def test_default_bundle_and_missing_bundle(dp_bundle, tmp_path):
    r = run(["runtime.classify", "hello"], cwd=tmp_path)
    assert r.returncode == 2
    assert "models/quickstart.dpedge: no such bundle file" in r.stderr.decode() and "make quickstart" in r.stderr.decode()
    r = run(["runtime.classify", "hello"], cwd=tmp_path, env_extra={"DPEDGE_BUNDLE": str(dp_bundle)})
    assert r.returncode == 0 and r.stdout.decode().endswith("\thello\n")


def test_classify_corrupt_bundle_exit_2(dp_bundle, tmp_path):
    bad = tmp_path / "bad.dpedge"
    bad.write_bytes(dp_bundle.read_bytes()[:5000])
    r = run(["runtime.classify", "--bundle", str(bad), "hi"])
    assert r.returncode == 2 and "truncated" in r.stderr.decode() and "Traceback" not in r.stderr.decode()


def exporter_build(tmp_path, train, *extra):
    return run(["exporter", "build", "--train", str(train), "--labels", str(DATA / "labels.txt"), "--epsilon", "4",
                "--out", str(tmp_path / "out.dpedge"), "--models-dir", str(ROOT / "models"), "--quiet", *extra])


@pytest.mark.exporter
def test_exporter_build_and_inspect(tmp_path, exported_encoder):
    r = exporter_build(tmp_path, DATA / "train.jsonl", "--votes-share", "0.2", "--bits", "4", "--tables", "8",
                       "--seed", "5")
    assert r.returncode == 0, r.stderr.decode()
    out = r.stdout.decode()
    assert "records counted: 560" in out and "epsilon = 4" in out
    r = run(["exporter", "inspect", str(tmp_path / "out.dpedge")])
    assert r.returncode == 0 and "8 tables x 4 bits" in r.stdout.decode() and "seed 5" in r.stdout.decode()
    assert "votes: epsilon 0.8, L1 sensitivity 8, noise scale 10.0" in r.stdout.decode()


@pytest.mark.exporter
def test_exporter_reports_bad_records_with_file_and_line(tmp_path, exported_encoder):
    train = tmp_path / "t.jsonl"
    lines = (DATA / "train.jsonl").read_text(encoding="utf-8").splitlines()[:20]
    lines.insert(4, json.dumps({"text": "order pizza", "label": "food"}))
    train.write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = exporter_build(tmp_path, train)
    assert r.returncode == 2
    assert f"{train}:5: the label (field 'label') is not in the label list" in r.stderr.decode()
    assert "food" not in r.stderr.decode()  # the label value is private data
    assert not (tmp_path / "out.dpedge").exists()
    r = exporter_build(tmp_path, train, "--skip-unknown-labels")
    assert r.returncode == 0, r.stderr.decode()
    assert "records counted: 20, skipped (unknown label): 1" in r.stdout.decode()
    assert "unknown labels: 1 records, 1 distinct values" in r.stdout.decode() and "food" not in r.stdout.decode()


@pytest.mark.exporter
@pytest.mark.parametrize("extra,message", [
    (["--votes-share", "0.1", "--bits", "20", "--tables", "128"], "= 1,792.0 MiB, over the limit of 64 MiB"),
    (["--hashing", "random", "--bits", "21"], "--bits must be between 1 and 20"),
    (["--bits", "4"], "this bundle has none: add --votes-share"),
    (["--votes-share", "0.9"], "--votes-share must be between 0 and 0.85"),
    (["--epsilon", "-1"], "epsilon must be a positive finite number"),
])
def test_exporter_refuses_bad_settings(tmp_path, extra, message):
    r = exporter_build(tmp_path, DATA / "train.jsonl", *extra)
    assert r.returncode == 2 and message in r.stderr.decode()
    assert not (tmp_path / "out.dpedge").exists()
