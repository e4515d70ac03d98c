"""Export at scale: records per second for each stage of a build, and peak memory, by size.

    python benchmarks/export_scale.py [--records 100000,1000000] [--real-records 20000]
        [--head-records 1000000] [--out results.json] [--workdir /tmp/dpedge-export-scale] [--keep] [--quiet]

Prints a table (run, records, stage, records/s, seconds, peak RSS MiB) on stdout; progress
bars and notes go to stderr. With --out, writes the full results as JSON.

Method:
- Corpus. Synthetic labelled JSONL made by recombining the project's own texts
  (data/assistant, train and test, 735 hand-written requests): record i takes the first words
  of source text a and the last words of another text b with the same label, and a's label.
  Which texts and how many words are a pure function of (seed, i), so the corpus is written
  in blocks and any record can be regenerated from its line number alone.
- "precomputed" runs (the --records sizes) call the real `exporter.build.build` on that file,
  with one stand-in: `embed_for_benchmarks` replaces the int8 encoder, which would take about
  70 minutes for a million texts on 2 cores. The stand-in still runs the real tokenizer on
  each chunk, then makes each record's embedding from the cached real embeddings of its two
  source texts (mixed in proportion to the words taken from each, plus seeded Gaussian noise,
  normalised), one chunk of exporter.build.CHUNK_RECORDS at a time. Everything else is the
  exporter's own code in its own order: count_lines for the progress bar, the streaming
  reader, SimHash, the vote counter, OpenDP noise, the atomic bundle write.
- "real" runs (--real-records) are plain `build` with the real int8 encoder, one worker per
  core, as `python -m exporter build` runs it.
- "head" and "default" runs (--head-records) build, with the same stand-in, the head bundle
  (``--delta HEAD_DELTA``: class counts, then DP-SGD on every embedding held in memory) and, for
  its cost beside it, the default bundle (class counts and class sums, two passes over the
  spilled embeddings), each at epsilon EPSILON.
- Each run is a fresh child process, so no peak carries over. Peak RSS is the child's own
  VmHWM (/proc/self/status) at the end: its high-water mark since exec. (ru_maxrss would also
  count the parent's size, which Linux carries into a child through fork and exec.) The
  precomputed stand-in also samples the child's RSS as the stream passes 1%, 10%, 50% and
  100% of the records.
- Stage seconds come from the BuildReport: read (count_lines, JSON parsing and checks),
  tokenize+encode, hash+count, noise, write; records/s is records / stage seconds. Noise and
  write cost the same for any number of records (they work on the fixed-size tables), so
  their records/s only says how little they add per record.
- Cores: the child's CPU time over its wall time ("cores busy"), the CPU seconds of its
  busiest threads (sampled during the build: the encoder's workers end with it), and how
  many cores other processes kept busy meanwhile (/proc/stat), since a shared machine's
  rates say little without it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from exporter.build import BuildOptions, build  # noqa: E402
from exporter.local_engine import CHUNK_RECORDS  # noqa: E402
from exporter.dataset import Record, read_labels, read_records  # noqa: E402

DATA = ROOT / "data" / "assistant"
LABELS = DATA / "labels.txt"
SOURCE_FILES = (DATA / "train.jsonl", DATA / "test.jsonl")
STAGES = ("read", "tokenize+encode", "hash+count", "noise", "write")
CORPUS_SEED = 20240607
HYPERPLANE_SEED = 7
EPSILON = 8.0
HEAD_DELTA = 1e-7  # below 1 / N for the sizes the head runs are made for (up to a few million records)
STAND_IN_KINDS = ("precomputed", "head", "default")
NOISE_SIGMA = 0.3  # stand-in embeddings: norm of the added Gaussian noise, before normalising
CHECKPOINTS = (0.01, 0.1, 0.5, 1.0)


# --------------------------------------------------------------------------- corpus


@dataclass
class Sources:
    """The project's own texts, their real int8 embeddings, labels and word counts."""

    embeddings: np.ndarray  # (S, dim) float32, unit rows
    labels: np.ndarray      # (S,) int64 class indices
    lengths: np.ndarray     # (S,) int64 words per text
    texts: list[str] | None = None  # only where the corpus is written

    def save(self, path: Path) -> None:
        np.savez(path, embeddings=self.embeddings, labels=self.labels, lengths=self.lengths)

    @classmethod
    def load(cls, path: Path) -> "Sources":
        z = np.load(path)
        return cls(z["embeddings"], z["labels"], z["lengths"])


def load_sources() -> Sources:
    """Texts and labels from data/assistant; embeddings from benchmarks/common's cache."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from common import Embedder

    labels = read_labels(LABELS)
    embedder = Embedder()
    texts: list[str] = []
    parts = []
    for f in SOURCE_FILES:
        texts += [r.text for r in read_records(f, labels)]
        parts.append(embedder.split(f, labels))
    return Sources(np.concatenate([p.embeddings for p in parts]).astype(np.float32),
                   np.concatenate([p.labels for p in parts]).astype(np.int64),
                   np.array([len(t.split()) for t in texts], dtype=np.int64), texts)


def _splitmix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on a uint64 array: a stateless hash of each record index."""
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def _unit(h: np.ndarray) -> np.ndarray:
    return (h >> np.uint64(11)).astype(np.float64) / 2.0**53


def plan(src: Sources, index: np.ndarray, seed: int = CORPUS_SEED) -> tuple[np.ndarray, ...]:
    """For record indices (0-based): sources a, b (same label) and the words taken from each.

    The record's text is a's first ``ka`` words then b's words from ``kb`` on (at least one
    word of each), and its label is a's.
    """
    h1 = _splitmix(index.astype(np.uint64) ^ np.uint64(seed))
    h2, h3 = _splitmix(h1), _splitmix(h1 ^ np.uint64(1))
    h4 = _splitmix(h1 ^ np.uint64(2))
    a = (h1 % np.uint64(len(src.labels))).astype(np.int64)
    order = np.argsort(src.labels, kind="stable")
    per_class = np.bincount(src.labels)
    starts = np.concatenate([[0], np.cumsum(per_class)[:-1]])
    lab = src.labels[a]
    b = order[starts[lab] + (h2 % per_class[lab].astype(np.uint64)).astype(np.int64)]
    la, lb = src.lengths[a], src.lengths[b]
    ka = np.minimum(1 + (_unit(h3) * la).astype(np.int64), la)
    kb = np.minimum((_unit(h4) * lb).astype(np.int64), lb - 1)
    return a, b, ka, kb


def write_corpus(path: Path, n: int, src: Sources, label_names: Sequence[str], block: int = 8192) -> None:
    """Write n synthetic records as JSONL, block by block (atomically: temp file, then rename)."""
    assert src.texts is not None
    words = [t.split() for t in src.texts]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for start in range(0, n, block):
            a, b, ka, kb = plan(src, np.arange(start, min(n, start + block)))
            lines = [json.dumps({"text": " ".join(words[i][:p] + words[j][q:]), "label": label_names[src.labels[i]]},
                                ensure_ascii=False)
                     for i, j, p, q in zip(a.tolist(), b.tolist(), ka.tolist(), kb.tolist())]
            f.write("\n".join(lines) + "\n")
    os.replace(tmp, path)


# --------------------------------------------------------------------------- memory


def rss_mib() -> float:
    """This process's resident set size now."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mib() -> float:
    """This process's high-water RSS since exec (VmHWM; ru_maxrss where /proc is missing)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def system_busy_seconds() -> float:
    """CPU seconds all processes on the machine have been busy (from /proc/stat; 0 without it)."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]  # user nice system idle iowait irq softirq steal
    except OSError:
        return 0.0
    return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


class ThreadCPU:
    """CPU seconds (user + system) of each thread of this process, sampled while a build runs.

    Shows whether the embedding work was spread over one worker per core, even when other
    processes on the machine keep this one from getting every core. Sampled (every 0.25 s),
    because the encoder's worker threads end when the build returns.
    """

    def __init__(self) -> None:
        self.seen: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        ticks = os.sysconf("SC_CLK_TCK")
        for task in Path("/proc/self/task").iterdir():
            try:
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            cpu = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime (fields 14 and 15)
            self.seen[task.name] = max(cpu, self.seen.get(task.name, 0.0))

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            self._sample()

    def __enter__(self) -> "ThreadCPU":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def busiest(self, n: int = 6) -> list[float]:
        return sorted(self.seen.values(), reverse=True)[:n]


# --------------------------------------------------------------------------- stand-in encoder


class PrecomputedEmbeddings:
    """`embed_for_benchmarks` for `build`: real tokenizer, then embeddings made from the sources'.

    Holds nothing per record: each call sees one chunk and returns its (n, dim) embeddings.
    Also times the tokenizer apart and samples RSS as the stream passes CHECKPOINTS.
    """

    def __init__(self, src: Sources, total: int, tokenizer: Any):
        self.src, self.total, self.tokenizer = src, total, tokenizer
        self.dim = src.embeddings.shape[1]
        self.records = 0
        self.tokenize_seconds = 0.0
        self.rss_first_chunk: float | None = None
        self.rss_max = 0.0
        self.rss_at: dict[str, float] = {}
        self._next = 0

    def __call__(self, chunk: list[Record]) -> np.ndarray:
        t = time.perf_counter()
        self.tokenizer.encode([r.text for r in chunk])  # the real work the encoder's input needs
        self.tokenize_seconds += time.perf_counter() - t
        index = np.fromiter((r.line - 1 for r in chunk), np.int64, len(chunk))  # one record per line
        a, b, ka, kb = plan(self.src, index)
        lb = self.src.lengths[b]
        if len(chunk[0].text.split()) != ka[0] + lb[0] - kb[0]:
            raise RuntimeError(f"line {chunk[0].line} was not written by this corpus plan")
        w = (ka / (ka + lb - kb))[:, None]
        rng = np.random.default_rng([CORPUS_SEED, int(index[0])])
        v = w * self.src.embeddings[a] + (1 - w) * self.src.embeddings[b]
        v += rng.standard_normal(v.shape) * (NOISE_SIGMA / np.sqrt(self.dim))
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        self.records += len(chunk)
        rss = rss_mib()
        self.rss_first_chunk = rss if self.rss_first_chunk is None else self.rss_first_chunk
        self.rss_max = max(self.rss_max, rss)
        while self._next < len(CHECKPOINTS) and self.records >= CHECKPOINTS[self._next] * self.total:
            self.rss_at[f"{CHECKPOINTS[self._next]:.0%}"] = round(rss, 1)
            self._next += 1
        return v.astype(np.float32)


# --------------------------------------------------------------------------- one run (child process)


def child(kind: str, train: Path, out: Path, sources: Path | None, records: int, progress: bool) -> dict[str, Any]:
    from runtime import bundle as bundle_format

    settings: dict[str, Any] = {"seed": HYPERPLANE_SEED, "hashing": "random"}  # a vote tables' build, one pass
    if kind == "head":
        settings = {"delta": HEAD_DELTA}
    elif kind == "default":
        settings = {}
    opts = BuildOptions(train=train, labels=LABELS, epsilon=EPSILON, out=out, models_dir=ROOT / "models",
                        progress=progress, **settings)
    stand_in = None
    if kind in STAND_IN_KINDS:
        from exporter.encoder_export import export_encoder
        from runtime.tokenizer import TextTokenizer

        spec = export_encoder(models_dir=opts.models_dir).to_bundle_encoder()
        stand_in = PrecomputedEmbeddings(Sources.load(sources), records,
                                         TextTokenizer(spec.tokenizer_json, spec.max_length))
        del spec
    rss_start = rss_mib()
    cpu0, busy0, t0 = os.times(), system_busy_seconds(), time.perf_counter()
    with ThreadCPU() as threads:
        report = build(opts, embed_for_benchmarks=stand_in)
    wall, cpu1, busy1 = time.perf_counter() - t0, os.times(), system_busy_seconds()
    peak = peak_rss_mib()
    cpu = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
    b = bundle_format.load(out)  # the bundle is whole and valid
    result: dict[str, Any] = {
        "kind": kind, "records": report.stats.records, "lines": records,
        "seconds": {k: round(v, 4) for k, v in report.seconds.items()},
        "wall_seconds": round(wall, 2), "cpu_seconds": round(cpu, 2), "cores_busy": round(cpu / wall, 2),
        "cpu_count": os.cpu_count(), "thread_cpu_seconds": [round(x, 2) for x in threads.busiest()],
        "other_processes_cores_busy": round(max(0.0, busy1 - busy0 - cpu) / wall, 2),
        "peak_rss_mib": round(peak, 1), "rss_before_build_mib": round(rss_start, 1),
        "bundle_bytes": report.bundle_bytes, "clipped_cells": report.clipped_cells,
    }
    if b.votes is not None:
        result.update(votes_total_per_table_mean=round(float(b.votes.astype(np.int64).sum(axis=(1, 2)).mean()), 1),
                      noise_scale=b.releases["votes"].noise_scale, cells_per_table=int(b.votes[0].size))
    if b.head is not None:
        result.update(head={"sample_rate": b.head.sample_rate, "steps": b.head.steps,
                            "noise_multiplier": b.head.noise_multiplier, "delta": b.head.delta})
    if stand_in is not None:
        result.update(tokenize_seconds=round(stand_in.tokenize_seconds, 4),
                      rss_stream_first_chunk_mib=round(stand_in.rss_first_chunk or 0, 1),
                      rss_stream_max_mib=round(stand_in.rss_max, 1), rss_stream_at=stand_in.rss_at)
    return result


def run_child(kind: str, train: Path, out: Path, sources: Path | None, records: int, quiet: bool,
              workdir: Path) -> dict[str, Any]:
    result_file = workdir / f"result-{kind}-{records}.json"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", kind, "--train", str(train),
           "--bundle", str(out), "--records", str(records), "--result", str(result_file)]
    if sources is not None:
        cmd += ["--sources", str(sources)]
    if quiet:
        cmd.append("--quiet")
    subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL if quiet else sys.stderr,
                   stderr=subprocess.DEVNULL if quiet else None)
    return json.loads(result_file.read_text())


# --------------------------------------------------------------------------- table


def _size(n: int) -> str:
    return f"{n // 1_000_000}M" if n % 1_000_000 == 0 else f"{n // 1000}k" if n % 1000 == 0 else str(n)


def rows(results: list[dict[str, Any]]) -> list[list[str]]:
    out = []
    for r in results:
        name = f"{r['kind']} {_size(r['lines'])}"
        n = r["records"]
        kinds_stages = STAGES if r["kind"] in ("precomputed", "real") else tuple(r["seconds"])
        stages = [*kinds_stages, "total"]
        secs = {**r["seconds"], "total": sum(r["seconds"].get(s, 0.0) for s in kinds_stages)}
        for s in stages:
            label = "tokenize+stand-in" if s == "tokenize+encode" and r["kind"] == "precomputed" else s
            sec = secs.get(s, 0.0)
            out.append([name, f"{n:,}", label, f"{n / sec:,.0f}" if sec > 0 else "-", f"{sec:.2f}",
                        f"{r['peak_rss_mib']:.1f}" if s == "total" else ""])
    return out


def print_table(results: list[dict[str, Any]]) -> None:
    head = ["run", "records", "stage", "records/s", "seconds", "peak RSS MiB"]
    body = rows(results)
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" if i < 3 else "---:" for i in range(len(head))) + "|")
    for row in body:
        print("| " + " | ".join(row) + " |")
    print()
    for r in results:
        name = f"{r['kind']} {_size(r['lines'])}"
        extra = [f"peak RSS {r['peak_rss_mib']:.1f} MiB (before build {r['rss_before_build_mib']:.1f})",
                 f"wall {r['wall_seconds']:.1f} s",
                 f"cores busy {r['cores_busy']:.2f} of {r['cpu_count']} (other processes: "
                 f"{r['other_processes_cores_busy']:.2f})",
                 *([f"votes per table {r['votes_total_per_table_mean']:,.0f}", f"clipped cells {r['clipped_cells']}"]
                   if "votes_total_per_table_mean" in r else []),
                 *([f"head: q {r['head']['sample_rate']:.6f}, T {r['head']['steps']}, z "
                    f"{r['head']['noise_multiplier']:.3f}, delta {r['head']['delta']:g}"] if "head" in r else [])]
        if r["kind"] == "real":
            extra.insert(3, f"CPU s of the busiest threads {', '.join(f'{x:.1f}' for x in r['thread_cpu_seconds'][:4])} "
                            f"(tokenize+encode wall {r['seconds']['tokenize+encode']:.1f} s)")
        if "rss_stream_at" in r:
            at = ", ".join(f"{k} {v:.1f}" for k, v in r["rss_stream_at"].items())
            extra.insert(1, f"RSS during the stream: {at} MiB")
            extra.insert(2, f"tokenize alone {r['records'] / max(r['tokenize_seconds'], 1e-9):,.0f} records/s")
        print(f"{name}: " + "; ".join(extra))
    for big in [r for r in results if r["kind"] == "head"]:
        same = [d for d in results if d["kind"] == "default" and d["lines"] == big["lines"]]
        if same:
            d = same[0]
            print(f"head vs default at {_size(big['lines'])}: wall {big['wall_seconds']:.0f} vs {d['wall_seconds']:.0f} s "
                  f"({big['wall_seconds'] / d['wall_seconds']:.2f}x), peak RSS {big['peak_rss_mib']:.0f} vs "
                  f"{d['peak_rss_mib']:.0f} MiB")
    pre = [r for r in results if r["kind"] == "precomputed"]
    if len(pre) >= 2:
        small, big = min(pre, key=lambda r: r["lines"]), max(pre, key=lambda r: r["lines"])
        print(f"peak RSS {_size(big['lines'])} vs {_size(small['lines'])}: {big['peak_rss_mib']:.1f} vs "
              f"{small['peak_rss_mib']:.1f} MiB ({big['peak_rss_mib'] - small['peak_rss_mib']:+.1f} MiB for "
              f"{big['lines'] / small['lines']:.0f}x the records)")


# --------------------------------------------------------------------------- main


def _sizes(text: str) -> list[int]:
    return [int(s.replace("_", "")) for s in text.split(",") if s.strip() and int(s.replace("_", "")) > 0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", default="100000,1000000", help="precomputed-embedding run sizes (comma-separated)")
    ap.add_argument("--real-records", default="20000", help="real-encoder run sizes (comma-separated; 0: none)")
    ap.add_argument("--head-records", default="",
                    help="head (--delta) and default build sizes, precomputed embeddings (comma-separated; none by default)")
    ap.add_argument("--out", type=Path, default=None, help="write results as JSON")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/dpedge-export-scale"),
                    help="where corpora and bundles go")
    ap.add_argument("--keep", action="store_true", help="keep the corpora and bundles in --workdir")
    ap.add_argument("--quiet", action="store_true", help="no progress bars")
    # internal: one run in a fresh process
    ap.add_argument("--child", choices=(*STAND_IN_KINDS, "real"), help=argparse.SUPPRESS)
    ap.add_argument("--train", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--bundle", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--sources", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child:
        result = child(args.child, args.train, args.bundle, args.sources, int(args.records), not args.quiet)
        args.result.write_text(json.dumps(result, indent=2) + "\n")
        return 0

    started = time.perf_counter()
    work = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    label_names = read_labels(LABELS).names
    src = load_sources()
    sources_file = work / "sources.npz"
    src.save(sources_file)
    results: list[dict[str, Any]] = []
    made: list[Path] = [sources_file]
    plan_runs = ([("precomputed", n) for n in _sizes(args.records)] + [("real", n) for n in _sizes(args.real_records)]
                 + [(kind, n) for n in _sizes(args.head_records) for kind in ("head", "default")])
    for kind, n in plan_runs:
        corpus = work / f"corpus-{n}.jsonl"
        if not corpus.is_file():
            t = time.perf_counter()
            write_corpus(corpus, n, src, label_names)
            print(f"[{kind} {_size(n)}] wrote {corpus} ({corpus.stat().st_size / 2**20:.1f} MiB) in "
                  f"{time.perf_counter() - t:.1f} s", file=sys.stderr)
        bundle = work / f"{kind}-{n}.dpedge"
        results.append(run_child(kind, corpus, bundle, sources_file if kind in STAND_IN_KINDS else None, n,
                                 args.quiet, work))
        made += [corpus, bundle]
        r = results[-1]
        print(f"[{kind} {_size(n)}] {r['wall_seconds']:.1f} s, peak RSS {r['peak_rss_mib']:.1f} MiB",
              file=sys.stderr)
    print_table(results)
    total = time.perf_counter() - started
    print(f"\nbenchmark wall time {total:.0f} s; {os.cpu_count()} cores; chunk {CHUNK_RECORDS} records")
    if args.out:
        args.out.write_text(json.dumps({"chunk_records": CHUNK_RECORDS, "epsilon": EPSILON, "runs": results,
                                        "wall_seconds": round(total, 1)}, indent=2) + "\n")
    if not args.keep:
        for p in made:
            p.unlink(missing_ok=True)
        for p in work.glob("result-*.json"):
            p.unlink()
        with_leftovers = list(work.iterdir())
        if not with_leftovers:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
