"""Export at scale: the streaming benchmark's smoke run, honest progress, and interrupted builds.

Real encoder, real OpenDP noise, real processes and signals. The large runs (100k vs 1M
records) are `benchmarks/export_scale.py`; here the same code runs at 2k and 20k records.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import DATA, ROOT, build_options
from exporter.build import build
from exporter.local_engine import CHUNK_RECORDS
from exporter.votes import VoteCounter
from exporter.dataset import MAX_COUNTED_UNKNOWN_LABELS, ReadStats, count_lines, read_labels, read_records
from exporter.hyperplanes import draw_hyperplanes
from noise_hooks import ConstantNoise
from runtime import bundle as bundle_format
from runtime.simhash import SimHasher

sys.path.insert(0, str(ROOT / "benchmarks"))
import export_scale  # noqa: E402

ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}
#: Every build here releases with OpenDP noise.
pytestmark = pytest.mark.exporter


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _leftovers(folder: Path, keep: set[str]) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)


@pytest.fixture(scope="module")
def sources(exported_encoder):
    return export_scale.load_sources()


@pytest.fixture(scope="module")
def corpus(sources, tmp_path_factory) -> Path:
    """5000 synthetic records recombined from the project's own texts."""
    path = tmp_path_factory.mktemp("corpus") / "corpus-5000.jsonl"
    export_scale.write_corpus(path, 5000, sources, read_labels(DATA / "labels.txt").names)
    return path


@pytest.fixture(scope="module")
def previous_bundle(dp_bundle) -> Path:
    """A real bundle already at the output path, which an interrupted build must leave as it was."""
    return dp_bundle


def test_benchmark_smoke_2k_and_20k(tmp_path):
    work = tmp_path / "work"
    out = tmp_path / "results.json"
    r = subprocess.run([sys.executable, "benchmarks/export_scale.py", "--records", "2000,20000", "--real-records", "0",
                        "--workdir", str(work), "--keep", "--quiet", "--out", str(out)],
                       cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "| precomputed 20k | 20,000 | hash+count |" in r.stdout
    runs = json.loads(out.read_text())["runs"]
    assert [(x["kind"], x["records"]) for x in runs] == [("precomputed", 2000), ("precomputed", 20000)]
    for x in runs:
        n = x["records"]
        assert set(export_scale.STAGES) <= set(x["seconds"]) and all(v > 0 for v in x["seconds"].values()), x
        b = bundle_format.load(work / f"precomputed-{n}.dpedge")
        assert b.votes.shape == (32, 64, 7) and "BENCHMARK STAND-IN" in b.exporter["embeddings"]
        # Each table counts every record once; the noise on a table's sum has sd ~ 120 here.
        per_table = b.votes.astype(np.int64).sum(axis=(1, 2))
        assert np.all(np.abs(per_table - n) < 1000), per_table
        assert abs(x["votes_total_per_table_mean"] - n) < 200
        assert x["clipped_cells"] == 0
        assert x["noise_scale"] == pytest.approx(32 / export_scale.EPSILON)  # the votes release: T / epsilon
        assert list(x["rss_stream_at"]) == ["1%", "10%", "50%", "100%"]
    small, big = runs
    # 10x the records, same memory (the 1M-record claim is the benchmark's; this is its smoke).
    assert abs(big["peak_rss_mib"] - small["peak_rss_mib"]) < 25, (small, big)
    assert abs(big["rss_stream_at"]["100%"] - small["rss_stream_at"]["100%"]) < 25


def test_stand_in_stream_counts_exactly_what_it_embeds(sources, corpus, tmp_path):
    """Through build's chunk loop, the counts equal counting all the stand-in embeddings at once."""
    from runtime.tokenizer import TextTokenizer

    from exporter.encoder_export import export_encoder

    spec = export_encoder(models_dir=ROOT / "models").to_bundle_encoder()
    tok = TextTokenizer(spec.tokenizer_json, spec.max_length)
    n = count_lines(corpus)
    out = tmp_path / "exact.dpedge"
    report = build(build_options(out, train=corpus, hashing="random"), noise_for_tests=ConstantNoise(0),
                   embed_for_benchmarks=export_scale.PrecomputedEmbeddings(sources, n, tok))
    assert report.stats.records == n == 5000

    labels = read_labels(DATA / "labels.txt")
    records = list(read_records(corpus, labels))
    again = export_scale.PrecomputedEmbeddings(sources, n, tok)
    emb = np.concatenate([again(records[i:i + CHUNK_RECORDS]) for i in range(0, n, CHUNK_RECORDS)])
    counter = VoteCounter(32, 6, len(labels))
    counter.add(SimHasher(draw_hyperplanes(1234, 32, 6, spec.dim)).buckets(emb), np.array([r.label for r in records]))
    assert np.array_equal(bundle_format.load(out).votes, counter.counts.astype(np.int16))


def test_progress_bar_shows_rate_and_eta(tmp_path, exported_encoder):
    """The CLI's bar on stderr (a pipe here, not a terminal) has done/total, elapsed<remaining and a rate."""
    out = tmp_path / "p.dpedge"
    r = subprocess.run([sys.executable, "-m", "exporter", "build", "--train", str(DATA / "train.jsonl"),
                        "--labels", str(DATA / "labels.txt"), "--epsilon", "8", "--seed", "3", "--out", str(out)],
                       cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    # tqdm redraws with \r; each state is "embed+hash+count:  46%|...| 256/560 [00:01<00:01, 245.1line/s]"
    states = re.findall(r"(\d+)/(\d+) \[(\d+:\d\d)<(\d+:\d\d|\?), +([\d.]+|\?)line/s\]", r.stderr)
    assert states, r.stderr
    assert all(total == "560" for _, total, *_ in states)
    mid = [s for s in states if 0 < int(s[0]) < 560]
    assert mid and all(re.fullmatch(r"\d+:\d\d", eta) and float(rate) > 0 for _, _, _, eta, rate in mid), states
    assert states[-1][0] == "560"  # ends at its total
    assert "seconds: load encoder" in r.stdout and "tokenize+encode" in r.stdout


def test_progress_bar_ends_at_its_total_after_trailing_skipped_lines(tmp_path, capsys, exported_encoder):
    lines = (DATA / "train.jsonl").read_text().splitlines()[:300]
    train = tmp_path / "t.jsonl"
    train.write_text("\n".join(lines) + "\n\n\n" + json.dumps({"text": "hi", "label": "nope"}))  # no final newline
    build(build_options(tmp_path / "t.dpedge", train=train, progress=True, skip_unknown_labels=True, hashing="random"))
    err = capsys.readouterr().err
    assert "/303 [" in err and "303/303 [" in err, err


def test_count_lines_is_the_bars_total(tmp_path):
    p = tmp_path / "x.jsonl"
    for data, n in ((b"", 0), (b"a\n", 1), (b"a\nb", 2), (b"a\nb\n", 2), (b"\n\n", 2)):
        p.write_bytes(data)
        assert count_lines(p) == n, data


def test_unknown_label_names_do_not_grow_with_the_file(tmp_path):
    p = tmp_path / "u.jsonl"
    with p.open("w") as f:
        for i in range(3000):
            f.write(json.dumps({"text": f"text {i}", "label": f"not-a-label-{i}"}) + "\n")
        f.write(json.dumps({"text": "wake me at six", "label": "alarm_timer"}) + "\n")
    stats = ReadStats()
    kept = list(read_records(p, read_labels(DATA / "labels.txt"), skip_unknown_labels=True, stats=stats))
    assert len(kept) == 1 and stats.skipped_unknown_label == 3000
    assert len(stats.unknown_label_digests) == MAX_COUNTED_UNKNOWN_LABELS
    assert stats.distinct_unknown_labels == f"at least {MAX_COUNTED_UNKNOWN_LABELS}"
    assert "not-a-label" not in repr(stats)  # only digests: the values are private data


# --------------------------------------------------------------------------- interrupted builds


def test_keyboard_interrupt_in_the_record_stream_writes_nothing(tmp_path, corpus, previous_bundle, monkeypatch):
    import exporter.local_engine as build_module

    out = tmp_path / "app.dpedge"
    out.write_bytes(previous_bundle.read_bytes())
    before = _sha(out)
    real_reader = build_module.read_records

    def interrupted(*args, **kwargs):
        for i, record in enumerate(real_reader(*args, **kwargs)):
            if i == 2 * CHUNK_RECORDS + 10:
                raise KeyboardInterrupt
            yield record

    monkeypatch.setattr(build_module, "read_records", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build(build_options(out, train=corpus, hashing="random"))
    assert _sha(out) == before and _leftovers(tmp_path, {"app.dpedge"}) == []
    new = tmp_path / "new.dpedge"
    with pytest.raises(KeyboardInterrupt):
        build(build_options(new, train=corpus, hashing="random"))
    assert not new.exists() and _leftovers(tmp_path, {"app.dpedge"}) == []


def test_keyboard_interrupt_while_writing_keeps_the_previous_bundle(tmp_path, previous_bundle, monkeypatch):
    out = tmp_path / "app.dpedge"
    out.write_bytes(previous_bundle.read_bytes())
    before = _sha(out)

    def interrupted_fsync(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted_fsync)
    with pytest.raises(KeyboardInterrupt):
        build(build_options(out, hashing="random"))
    assert _sha(out) == before and _leftovers(tmp_path, {"app.dpedge"}) == []


def _watch(stream, seen: list[str]) -> None:
    for block in iter(lambda: stream.read1(4096), b""):
        seen.append(block.decode("utf-8", "replace"))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_mid_stream_leaves_no_bundle(tmp_path, corpus, previous_bundle, sig):
    """`python -m exporter build` stopped by Ctrl-C or kill while it counts: nothing new on disk."""
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (out_dir / "old.dpedge").write_bytes(previous_bundle.read_bytes())
    before = _sha(out_dir / "old.dpedge")
    out = out_dir / "app.dpedge"
    p = subprocess.Popen([sys.executable, "-m", "exporter", "build", "--train", str(corpus), "--labels",
                          str(DATA / "labels.txt"), "--epsilon", "8", "--out", str(out)],
                         cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         # as from a terminal: a shell's background job would start it with SIGINT ignored
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen: list[str] = []
    reader = threading.Thread(target=_watch, args=(p.stderr, seen), daemon=True)
    reader.start()
    deadline = time.monotonic() + 120
    while not re.search(r"[1-9]\d*/5000 \[", "".join(seen)):  # at least one chunk counted
        assert p.poll() is None and time.monotonic() < deadline, "".join(seen)
        time.sleep(0.05)
    p.send_signal(sig)
    code = p.wait(timeout=60)
    reader.join(timeout=10)
    assert code in ((-signal.SIGINT, 1, 130) if sig == signal.SIGINT else (128 + signal.SIGTERM,)), "".join(seen)
    assert not out.exists()
    assert _leftovers(out_dir, {"old.dpedge"}) == [] and _sha(out_dir / "old.dpedge") == before
    assert "5000/5000" not in "".join(seen)  # it really was stopped mid-stream


WRITE_THEN_WAIT = """
import os, sys, time
from pathlib import Path
marker = Path(sys.argv[1])
real_fsync = os.fsync
def slow_fsync(fd):           # the temp bundle is written and not yet renamed: hold it there
    marker.write_text("writing")
    time.sleep(60)
    real_fsync(fd)
os.fsync = slow_fsync
from exporter.__main__ import main
sys.exit(main(sys.argv[2:]))
"""


def test_sigterm_while_writing_removes_the_temp_file(tmp_path, previous_bundle, exported_encoder):
    """kill (SIGTERM) during the write: Python's default would leave a 24 MB temp file behind."""
    out = tmp_path / "app.dpedge"
    out.write_bytes(previous_bundle.read_bytes())
    before = _sha(out)
    marker = tmp_path.parent / f"{tmp_path.name}.marker"
    p = subprocess.Popen([sys.executable, "-c", WRITE_THEN_WAIT, str(marker), "build", "--quiet", "--train",
                          str(DATA / "train.jsonl"), "--labels", str(DATA / "labels.txt"), "--epsilon", "8",
                          "--out", str(out)], cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()
        time.sleep(0.05)
    assert any(n.endswith(".tmp") for n in _leftovers(tmp_path, {"app.dpedge"}))  # the temp file exists now
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    marker.unlink()
    assert p.returncode == 128 + signal.SIGTERM, err
    assert _sha(out) == before and _leftovers(tmp_path, {"app.dpedge"}) == []
