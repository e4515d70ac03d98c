"""What one query costs on a small device: cold start, latency, throughput and bundle size.

    python benchmarks/runtime_perf.py --bundle B [--bundle B2 ...] [--train ../shared/data/agnews/train.jsonl]
        [--threads 1,all] [--queries 200] [--out results.json] [--pin-core N] [--no-baselines] [--no-memory]

Prints markdown tables on stdout (progress goes to stderr) and, with --out, writes JSON.

Method:
- Every figure is a median (or p50/p95) over repeated runs, because this is meant to run on
  noisy, shared 2-core machines; ratios compare figures taken in the same run, so they are
  more trustworthy than any absolute number. The garbage collector is off while timing.
- A process's first answer (section 0, benchmarks/first_answer.py): the CPU time and peak RSS of
  `python -m runtime.classify --threads 1 TEXT` against `python -c "import numpy, msgpack,
  onnxruntime"` (the import floor), alternating, with bytecode caches as an installed package has.
- Cold start: a fresh `python -m runtime.classify --bundle B --threads T TEXT` per run. The
  clock starts just before the fork and stops when the answer line arrives on the child's
  stdout ("to answer"); "to exit" also includes interpreter shutdown. One untimed spawn
  first warms the page cache, so the figure is a process cold start, not a disk cold start.
- Peak RSS: the child's ru_maxrss from os.wait4 on its pid, as /usr/bin/time -f %M reads it
  (getrusage(RUSAGE_CHILDREN) is a maximum over all children reaped so far, useless across
  several). Linux carries the forking process's RSS high-water mark through fork/vfork and
  exec into the child's ru_maxrss, so a child forked by this process (hundreds of MB once
  PyTorch or TensorFlow are loaded) would report this process's size. Each child is
  therefore forked, timed and reaped by a tiny stdlib-only launcher (`python -I -S`); its RSS
  at the fork, about 10 MiB and recorded as "launcher_mib", is the floor the child inherits,
  well below any real child's peak.
- Per query: tokenize, encode and the whole `Classifier.classify` are timed in the same loop
  iteration with perf_counter_ns, after a warm-up; hash+lookup (`Scorer.scores` on one
  embedding, about 10 µs) is timed alone in a tight loop with more repetitions.
- Threads: "1" is one engine thread, "all" is `threads=None` (every core). --pin-core N
  pins this process, every thread it already has, and so every child it spawns, to core N.
- Baselines (skipped with --no-baselines, which keeps this script to the bare runtime: no
  torch or exporter import): the fp32 ONNX encoder (exported once into .cache/fp32/) run
  through the runtime's own engine wrapper at the same thread setting, the fp32 TFLite
  encoder when a TFLite bundle is measured (optional, needs TensorFlow once to convert),
  sentence-transformers on PyTorch, and exact cosine kNN (k = 10) over the --train
  dataset's embeddings instead of hash+lookup.
- Where the memory goes (section 5, skipped with --no-memory): a fresh process takes
  Classifier.load's steps one at a time (MEMORY_STAGES_CHILD) and reads VmRSS, VmHWM (the
  peak so far, so a transient inside a step shows), RssAnon and RssFile from
  /proc/self/status after each; its last peak matches the cold-start figure. RssFile holds
  what is mapped from files: the engine's libraries and, for an ONNX bundle, the weights
  onnxruntime maps from the bundle file itself.
- Where the scoring time goes (section 6): each part of `Scorer.scores` (hash, vote gather,
  the one product behind the centroid and prior logits, their softmax) timed alone on the
  short query's embedding, beside the whole call and the cost of one numpy call on a tiny
  array.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

from runtime import bundle as bundle_format  # noqa: E402
from runtime.bundle import Bundle, EncoderSpec  # noqa: E402
from runtime.classifier import Classifier  # noqa: E402
from runtime.describe import bundle_info  # noqa: E402
from runtime.encoder import TextEncoder, choose_engine  # noqa: E402
from runtime.errors import BundleError  # noqa: E402
from runtime.tokenizer import TextTokenizer  # noqa: E402

FP32_CACHE = ROOT / ".cache" / "fp32"
DEFAULT_BATCH_SOURCE = ROOT / "data" / "assistant" / "test.jsonl"
SHORT_TEXT = "will it rain in lisbon tomorrow morning"
#: Original filler for the long query; words are taken from it until the text has LONG_TOKENS tokens.
LONG_SOURCE = (
    "The regional transport authority said on Tuesday that it would replace the ageing fleet of "
    "diesel buses on its northern routes with battery models over the next four years, after a "
    "trial on two suburban lines cut fuel and maintenance costs by almost a third. Officials told "
    "reporters that the first forty vehicles would arrive in the spring, that depots in three towns "
    "would get new charging equipment, and that fares would not rise to pay for the change. Drivers' "
    "representatives welcomed the plan but asked for more training time, while a group of local "
    "businesses warned that road works at the depots could disrupt deliveries during the busy "
    "holiday season. The authority expects the programme to cost about two hundred million and "
    "hopes that national grants will cover close to half of it."
)
LONG_TOKENS = 128
KNN_K = 10
MIB = 2**20

# Targets on a 2-core machine at one engine thread (checked per bundle in the "targets" block).
TARGET_LOOKUP_US = 20.0
TARGET_SHORT_TOTAL_MS = 5.0
TARGET_COLD_S = 0.5
TARGET_RSS_MIB = 150.0
#: The goal for a Raspberry Pi 3 or Zero 2 W (512 MiB to 1 GiB): peak RSS of a one-text classify.
TARGET_SMALL_DEVICE_RSS_MIB = {"onnx": 110.0, "tflite": 90.0}
TARGET_BUNDLE_MB = 25.0

# Forks, times and reaps one command; run as `python -I -S -c LAUNCHER CMD...` so that the
# process the command is forked from is tiny (see the module docstring on ru_maxrss).
LAUNCHER = """
import json, os, sys, time
def rss_kib():
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return None
r, w = os.pipe()
floor = rss_kib()
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.close(r)
        os.dup2(w, 1)
        os.execvp(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)
os.close(w)
with os.fdopen(r, "rb") as out:
    first = out.readline()
    answered = time.perf_counter() - t0
    out.read()
_, status, usage = os.wait4(pid, 0)
exited = time.perf_counter() - t0
print(json.dumps({"answer_s": answered, "exit_s": exited, "answered": bool(first.strip()),
                  "status": os.waitstatus_to_exitcode(status), "maxrss": usage.ru_maxrss,
                  "cpu_s": usage.ru_utime + usage.ru_stime, "floor_kib": floor}))
"""

# Child programs for the cold-start baselines: the least an application needs to embed one
# text with each stack (import, load, tokenize, one embedding), printing a line when done.
FP32_ONNX_CHILD = """
import sys
import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer
model, tokenizer, threads, text = sys.argv[1:5]
tok = Tokenizer.from_file(tokenizer)
tok.no_padding()
tok.enable_truncation(256)
so = ort.SessionOptions()
so.intra_op_num_threads = int(threads)
so.inter_op_num_threads = 1
so.log_severity_level = 3
session = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
ids = np.asarray([tok.encode(text).ids], dtype=np.int64)
feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
emb = session.run(["sentence_embedding"], {i.name: feeds[i.name] for i in session.get_inputs()})[0]
print("embedded", emb.shape[-1], flush=True)
"""
PYTORCH_ST_CHILD = """
import sys
import torch
threads, source, text = sys.argv[1:4]
torch.set_num_threads(int(threads))
from sentence_transformers import SentenceTransformer
model = SentenceTransformer(source, device="cpu", local_files_only=True)
emb = model.encode([text], show_progress_bar=False)
print("embedded", emb.shape[-1], flush=True)
"""

# Where the memory goes: a fresh process takes the load steps of Classifier.load one at a
# time, in the same order and through the same functions (runtime/classifier.py: read and
# check the bundle, the Embedder's engine session then its tokenizer, the check text, the
# Scorer), and records its resident memory (and the high-water mark so far, which shows a
# transient peak inside a step) after each. Keep the order in step with runtime/classifier.py.
MEMORY_STAGES_CHILD = r"""
import json, sys
def mem(stage):
    d = {"stage": stage}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                d[key] = int(value.split()[0]) / 1024
    stages.append(d)
stages = []
path, threads, text = sys.argv[1], int(sys.argv[2]), sys.argv[3]
mem("python interpreter")
import numpy
mem("+ numpy")
import msgpack
mem("+ msgpack")
import hashlib
mem("+ hashlib (OpenSSL, the bundle checksum)")
from runtime import bundle as bundle_format
from runtime.encoder import TextEncoder, choose_engine
from runtime.scoring import Scorer
from runtime.tokenizer import TextTokenizer
mem("+ runtime package")
b = bundle_format.load(path)
mem("bundle read and checked" + (" (ONNX weights left in the file)" if b.encoder.weights_file else
                                 " (model bytes in memory)"))
import importlib
importlib.import_module(choose_engine(b.encoder.format).module)
mem("+ engine import")
enc = TextEncoder(b.encoder, threads=threads)
mem("+ engine session (model loaded)")
tok = TextTokenizer(b.encoder.tokenizer_json, b.encoder.max_length, b.encoder.text_prefix)
mem("+ tokenizer")
enc.verify(tok.encode([b.encoder.check_text])[0])
mem("+ check text embedded")
scorer = Scorer(b)
mem("+ scorer (end of Classifier.load)")
scorer.scores(enc.embed_one(tok.encode([text])[0])[None])
mem("first answer")
print(json.dumps(stages))
"""


# --------------------------------------------------------------------------- small helpers


_T0 = time.perf_counter()


def log(msg: str) -> None:
    """Progress on stderr, so stdout holds only the tables."""
    sys.stderr.write(f"[{time.perf_counter() - _T0:6.1f}s] {msg}\n")
    sys.stderr.flush()


def usable_cores() -> int:
    """Cores this process may run on (1 when pinned), which is what "all" can use."""
    return len(os.sched_getaffinity(0))


def thread_key(threads: int | None) -> str:
    """JSON/table key of a thread setting: "1", "2", ... or "all" (threads=None)."""
    return "all" if threads is None else str(threads)


def parse_threads(spec: str) -> list[int | None]:
    """"1,all" -> [1, None]; None is the runtime's "every core"."""
    out: list[int | None] = []
    for part in spec.split(","):
        part = part.strip().lower()
        if part == "all":
            out.append(None)
        elif part.isdigit() and int(part) > 0:
            out.append(int(part))
        else:
            raise argparse.ArgumentTypeError(f"{part!r} is neither a positive number nor 'all'")
    return list(dict.fromkeys(out))


def pin_process(core: int) -> None:
    """Pin every existing thread of this process to one core; threads and children made later inherit it.

    Linux affinity is per thread and sched_setaffinity(0) sets only the calling one, while
    numpy's BLAS pool may already be running, hence the walk over /proc/self/task.
    """
    if core not in os.sched_getaffinity(0):
        raise ValueError(f"--pin-core {core}: this process may only run on cores {sorted(os.sched_getaffinity(0))}")
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(ProcessLookupError):
            os.sched_setaffinity(int(task.name), {core})
    os.sched_setaffinity(0, {core})


@contextlib.contextmanager
def no_gc() -> Iterator[None]:
    """Keep the garbage collector from landing inside a timed call (as timeit does)."""
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def stats_us(samples_ns: Sequence[int]) -> dict[str, float]:
    """p50/p95 in microseconds: tails matter for an interactive query, means hide them."""
    a = np.asarray(samples_ns, dtype=np.float64) / 1e3
    return {"p50_us": float(np.percentile(a, 50)), "p95_us": float(np.percentile(a, 95)), "n": int(a.size)}


def time_calls(fn: Callable[[], Any], reps: int, warmup: int) -> list[int]:
    """Wall time of each of ``reps`` calls after ``warmup`` untimed ones, in ns."""
    for _ in range(warmup):
        fn()
    out = []
    with no_gc():
        for _ in range(reps):
            t0 = time.perf_counter_ns()
            fn()
            out.append(time.perf_counter_ns() - t0)
    return out


def warmup_count(reps: int) -> int:
    """Untimed calls first: the engines allocate and tune on their first runs."""
    return max(3, reps // 10)


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


def fmt(x: float | None, digits: int = 2) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def fmt_ratio(x: float | None) -> str:
    return "–" if x is None else (f"{x:.3f}×" if x < 0.1 else f"{x:.2f}×")


def md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A markdown table with padded columns, readable both raw and rendered."""
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows)]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    return "\n".join([line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)])


def emit(title: str, table: str, note: str = "") -> None:
    print(f"\n## {title}\n")
    if note:
        print(note + "\n")
    print(table, flush=True)


# --------------------------------------------------------------------------- inputs


def read_texts(path: Path, n: int) -> list[str]:
    """``n`` texts spread evenly over a JSONL/CSV/TSV file with a "text" field.

    Read here rather than with exporter.dataset so the runtime sections import no exporter code.
    """
    with path.open(encoding="utf-8-sig", newline="") as f:
        if path.suffix == ".jsonl":
            texts = [json.loads(line)["text"] for line in f if line.strip()]
        else:
            texts = [row["text"] for row in csv.DictReader(f, delimiter="\t" if path.suffix == ".tsv" else ",")]
    texts = [t for t in texts if isinstance(t, str) and t.strip()]
    if not texts:
        raise UsageError(f"{path}: no texts to measure throughput with")
    idx = np.linspace(0, len(texts) - 1, num=min(n, len(texts))).round().astype(int)
    return [texts[i] for i in idx]


def long_text(tokenizer: TextTokenizer, target: int = LONG_TOKENS) -> str:
    """The shortest prefix (in words) of LONG_SOURCE, repeated if needed, with >= target tokens."""
    words = LONG_SOURCE.split()
    text = ""
    for i in range(10 * target):
        text = f"{text} {words[i % len(words)]}".strip()
        if len(tokenizer.encode([text])[0]) >= target:
            break
    return text


# --------------------------------------------------------------------------- section 1: cold start


@dataclasses.dataclass
class ColdRun:
    answer_s: float
    exit_s: float
    peak_rss_mib: float
    launcher_mib: float | None  # the launcher's RSS at the fork: the floor the child inherits, far below its peak


def spawn_once(cmd: Sequence[str], env: dict[str, str]) -> ColdRun:
    """Run ``cmd`` under LAUNCHER: time to its first stdout line and to exit, and its own peak RSS."""
    with tempfile.TemporaryFile() as err:  # a file, not a pipe: a chatty child cannot block on it
        r = subprocess.run([sys.executable, "-I", "-S", "-c", LAUNCHER, *cmd], stdout=subprocess.PIPE,
                           stderr=err, env=env, cwd=ROOT, check=False)
        got = json.loads(r.stdout.decode().strip().splitlines()[-1]) if r.returncode == 0 and r.stdout.strip() else {}
        if not got or got["status"] != 0 or not got["answered"]:
            err.seek(0)
            tail = " / ".join(err.read().decode(errors="replace").strip().splitlines()[-5:])
            raise RuntimeError(f"{' '.join(cmd[:5])} ...: exit status {got.get('status', r.returncode)}, "
                               f"no answer line: {tail}")
    kib = 1 / 1024 if sys.platform == "darwin" else 1  # ru_maxrss is KiB on Linux, bytes on macOS
    floor = None if got["floor_kib"] is None else got["floor_kib"] / 1024
    return ColdRun(got["answer_s"], got["exit_s"], got["maxrss"] * kib / 1024, floor)


def cold_start(cmd: Sequence[str], runs: int) -> dict[str, Any]:
    """Median over ``runs`` fresh processes after one untimed spawn that warms the page cache."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    spawn_once(cmd, env)
    got = [spawn_once(cmd, env) for _ in range(runs)]
    return {
        "answer_s": statistics.median(r.answer_s for r in got),
        "exit_s": statistics.median(r.exit_s for r in got),
        "peak_rss_mib": statistics.median(r.peak_rss_mib for r in got),
        "runs": [dataclasses.asdict(r) for r in got],
    }


def runtime_cmd(bundle: Path, threads: int | None, text: str) -> list[str]:
    """The user-facing CLI; without --threads it uses every core, like threads=None."""
    cmd = [sys.executable, "-m", "runtime.classify", "--bundle", str(bundle)]
    return cmd + ([] if threads is None else ["--threads", str(threads)]) + [text]


# --------------------------------------------------------------------------- section 2: per query


def measure_query(clf: Classifier, text: str, reps: int, lookup_reps: int) -> dict[str, Any]:
    """Tokenize / encode / classify timed in the same iteration (so drift hits all alike);
    hash+lookup timed alone, since its ~10 µs would drown in the timer's own noise otherwise."""
    tok, enc, scorer = clf.tokenizer, clf.encoder, clf.scorer
    ids = tok.encode([text])[0]
    samples: dict[str, list[int]] = {"tokenize": [], "encode": [], "total": []}
    for _ in range(warmup_count(reps)):
        enc.embed_one(tok.encode([text])[0])
        clf.classify([text])
    with no_gc():
        for _ in range(reps):
            t0 = time.perf_counter_ns()
            tok.encode([text])
            t1 = time.perf_counter_ns()
            enc.embed_one(ids)
            t2 = time.perf_counter_ns()
            clf.classify([text])
            t3 = time.perf_counter_ns()
            samples["tokenize"].append(t1 - t0)
            samples["encode"].append(t2 - t1)
            samples["total"].append(t3 - t2)
    emb = enc.embed_one(ids)[None, :]
    lookup = time_calls(lambda: scorer.scores(emb), lookup_reps, warmup_count(lookup_reps))
    return {"tokens": len(ids), **{k: stats_us(v) for k, v in samples.items()}, "hash_lookup": stats_us(lookup)}


# --------------------------------------------------------------------------- baselines


def cached_export(folder: Path, make: Callable[[Path], None], what: str) -> Path:
    """Build ``folder`` once through a temp folder and a rename, so an interrupted export
    never leaves a half model that a later run would trust."""
    if folder.is_dir():
        return folder
    log(f"making the {what} in {folder} (once; cached for later runs)")
    FP32_CACHE.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".work-", dir=FP32_CACHE))
    try:
        make(work)
        os.replace(work, folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return folder


def fp32_onnx_model() -> tuple[Path, tuple[str, ...]]:
    """The fp32 ONNX export of the default encoder (about 10 s once), and its graph input names."""
    from exporter.encoder_export import _export_fp32, default_source, source_key

    source = default_source()

    def make(work: Path) -> None:
        import onnx

        model = _export_fp32(source, work)
        inputs = [i.name for i in onnx.load(str(model), load_external_data=False).graph.input]
        (work / "fp32.json").write_text(json.dumps({"inputs": inputs}) + "\n")

    folder = cached_export(FP32_CACHE / f"onnx-{source_key(source)[:12]}", make, "fp32 ONNX encoder")
    return folder / "model.onnx", tuple(json.loads((folder / "fp32.json").read_text())["inputs"])


def fp32_tflite_model() -> Path | None:
    """The fp32 TFLite conversion of the default encoder (about 30 s once), or None without TensorFlow."""
    from exporter.encoder_export import EncoderExportError, default_source, source_key

    source = default_source()

    def make(work: Path) -> None:
        from exporter import tflite_export

        tflite_export.convert(source, work / "model.tflite", quantize=False)
        shutil.rmtree(work / "model.savedmodel", ignore_errors=True)  # the converter's intermediate

    try:
        folder = cached_export(FP32_CACHE / f"tflite-{source_key(source, 'tflite')[:12]}", make, "fp32 TFLite encoder")
    except EncoderExportError as exc:  # no TensorFlow here: the comparison is optional
        log(f"no fp32 TFLite baseline: {exc}")
        return None
    return folder / "model.tflite"


@dataclasses.dataclass
class Baselines:
    """Everything the comparisons need, loaded lazily: only imported when baselines are asked for."""

    spec: EncoderSpec                  # a bundle's encoder spec (tokenizer, dim) to derive fp32 specs from
    onnx_path: Path
    onnx_inputs: tuple[str, ...]
    tflite_path: Path | None = None
    st_source: str = ""
    train: Path | None = None
    _st: Any = dataclasses.field(default=None, repr=False)
    _knn: tuple[np.ndarray, np.ndarray] | None = dataclasses.field(default=None, repr=False)

    @classmethod
    def prepare(cls, spec: EncoderSpec, want_tflite: bool, train: Path | None) -> "Baselines":
        from exporter.encoder_export import default_source

        onnx_path, inputs = fp32_onnx_model()
        tflite = fp32_tflite_model() if want_tflite else None
        return cls(spec, onnx_path, inputs, tflite, str(default_source()), train)

    def encoder(self, fmt: str, threads: int | None, workers: int = 1) -> TextEncoder:
        """An fp32 encoder behind the runtime's own TextEncoder: same engine, options and call path
        as the bundle's int8 one, so the ratio isolates the weights."""
        # The fp32 models keep their weights inside the graph: no external data, in memory or in a file.
        plain = dict(output="sentence_embedding", facts={}, weights=b"", weights_file=None)
        if fmt == "onnx":
            spec = dataclasses.replace(self.spec, format="onnx", model=self.onnx_path.read_bytes(),
                                       inputs=self.onnx_inputs, **plain)
        else:
            assert self.tflite_path is not None
            spec = dataclasses.replace(self.spec, format="tflite", model=self.tflite_path.read_bytes(),
                                       inputs=("input_ids",), **plain)
        return TextEncoder(spec, threads=threads, workers=workers)

    def sentence_transformer(self, threads: int | None) -> Any:
        """The PyTorch reference, loaded once; torch's thread count is process-wide, so set each time."""
        import torch

        torch.set_num_threads(threads or usable_cores())
        if self._st is None:
            from sentence_transformers import SentenceTransformer

            self._st = SentenceTransformer(self.st_source, device="cpu", local_files_only=True)
        return self._st

    def knn_data(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(train embeddings, class indices) of --train, embedded once with the int8 encoder and cached."""
        if self.train is None:
            return None
        if self._knn is None:
            from benchmarks.common import Embedder
            from exporter.dataset import read_labels

            folder = self.train.parent
            log(f"loading the embeddings of {self.train} for exact kNN (embedded once, then cached)")
            split = Embedder().split(self.train, read_labels(folder / "labels.txt"))
            self._knn = (np.ascontiguousarray(split.embeddings, dtype=np.float32), split.labels)
        return self._knn

    def cold_commands(self, threads: int | None, text: str) -> dict[str, list[str]]:
        tok = str(Path(self.st_source) / "tokenizer.json")
        n = threads or 0  # onnxruntime: 0 = every core
        return {
            "fp32 ONNX": [sys.executable, "-c", FP32_ONNX_CHILD, str(self.onnx_path), tok, str(n), text],
            "PyTorch ST": [sys.executable, "-c", PYTORCH_ST_CHILD, str(threads or usable_cores()), self.st_source, text],
        }


def blas_threads(threads: int | None) -> contextlib.AbstractContextManager[Any]:
    """Limit numpy's BLAS to the thread setting (threadpoolctl, when installed) for a fair kNN."""
    if threads is None:
        return contextlib.nullcontext()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=threads, user_api="blas")


def measure_baseline_queries(base: Baselines, threads: int | None, texts: dict[str, str],
                             tokenizer: TextTokenizer, query_emb: dict[str, np.ndarray], reps: int,
                             formats: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per-query baselines at one thread setting: fp32 encode per engine, PyTorch encode, exact kNN."""
    out: dict[str, dict[str, Any]] = {}
    for fmt in formats:
        log(f"  fp32 {fmt} encode, threads={thread_key(threads)}")
        enc = base.encoder(fmt, threads)
        out[f"fp32_{fmt}"] = {name: stats_us(time_calls(lambda ids=tokenizer.encode([t])[0]: enc.embed_one(ids),
                                                        reps, warmup_count(reps)))
                              for name, t in texts.items()}
    log(f"  PyTorch sentence-transformers encode, threads={thread_key(threads)}")
    st = base.sentence_transformer(threads)
    out["pytorch_st"] = {name: stats_us(time_calls(lambda t=t: st.encode([t], show_progress_bar=False),
                                                   reps, warmup_count(reps)))
                         for name, t in texts.items()}
    knn = base.knn_data()
    if knn is not None:
        train, labels = knn
        classes = int(labels.max()) + 1

        def exact_knn(q: np.ndarray) -> int:
            sims = train @ q
            top = np.argpartition(-sims, KNN_K)[:KNN_K]
            return int(np.bincount(labels[top], minlength=classes).argmax())

        log(f"  exact kNN over {len(train)} embeddings, threads={thread_key(threads)}")
        with blas_threads(threads):
            out["exact_knn"] = {name: stats_us(time_calls(lambda q=query_emb[name]: exact_knn(q), reps,
                                                          warmup_count(reps)))
                                for name in texts}
    return out


# --------------------------------------------------------------------------- section 5: memory


def memory_stages(bundle: Path, threads: int) -> list[dict[str, Any]]:
    """Resident memory after each load step, in a fresh process (MEMORY_STAGES_CHILD)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-c", MEMORY_STAGES_CHILD, str(bundle), str(threads), SHORT_TEXT],
                       capture_output=True, text=True, cwd=ROOT, env=env, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"memory stages of {bundle.name}: {r.stderr.strip()[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def section_memory(entries: list[dict[str, Any]]) -> None:
    """Fills each entry's "memory": the load stages at one engine thread."""
    for e in entries:
        log(f"memory: {e['name']} (load stages)")
        e["memory"] = {"stages": memory_stages(Path(e["path"]), 1)}


# --------------------------------------------------------------------------- section 6: scoring


def scoring_breakdown(clf: Classifier, text: str, reps: int) -> dict[str, Any]:
    """p50 µs of each part of `Scorer.scores` on one embedding, each call timed on its own.

    The parts follow runtime/scoring.py: the float64 copy; the one product of the query with the
    (dim, k + 2C) matrix (projection, class directions, prior) and the two components' logits
    and fused softmax; with vote tables, the SimHash buckets and the vote gather (normalised
    in the blend, summed raw by Algorithm 2). "whole" is the call itself; "rest" is whole minus
    the parts (the blend's own arithmetic).
    """
    from runtime.rowwise import row_products
    from runtime.scoring import vote_sums

    scorer = clf.scorer
    emb = clf.encoder.embed_one(clf.tokenizer.encode([text])[0])[None, :]
    x = np.asarray(emb, np.float64)
    parts: dict[str, Callable[[], Any]] = {"float64 copy": lambda: np.asarray(emb, np.float64)}
    if scorer._directions_t is not None:
        parts["centroids + prior (all)"] = lambda: scorer._components(x)
        parts["  the projection z = P x (dim x k)"] = lambda: row_products(x, scorer._proj_t)
    if scorer.votes is not None:
        buckets = scorer.hasher.buckets(x)
        parts["hash (SimHash buckets)"] = lambda: scorer.hasher.buckets(x)
        if scorer.plain_votes:
            parts["vote gather (Algorithm 2)"] = lambda: vote_sums(buckets, scorer.votes)
        else:
            positive = np.maximum(scorer.votes, 0)
            parts["vote gather + normalise"] = lambda: (lambda v: v / np.maximum(v.sum(axis=1, keepdims=True), 1e-12))(
                vote_sums(buckets, positive).astype(np.float64))
    parts["numpy call floor (np.add on 1 element)"] = (lambda one=np.ones(1): np.add(one, one))
    parts["whole"] = lambda: scorer.scores(emb)
    # Every part once per round, round after round, so that a busy moment of a shared machine
    # lands on all parts alike instead of on whichever was being timed then.
    samples: dict[str, list[int]] = {name: [] for name in parts}
    for _ in range(warmup_count(reps)):
        for fn in parts.values():
            fn()
    with no_gc():
        for _ in range(reps):
            for name, fn in parts.items():
                t0 = time.perf_counter_ns()
                fn()
                samples[name].append(time.perf_counter_ns() - t0)
    timed = {name: stats_us(v)["p50_us"] for name, v in samples.items()}
    whole = timed.pop("whole")
    top = [k for k in timed if not k.startswith("  ") and not k.startswith("numpy call floor")]
    return {"mode": scorer.mode, "parts_p50_us": timed, "whole_p50_us": whole,
            "rest_p50_us": whole - sum(timed[k] for k in top)}


def section_scoring(entries: list[dict[str, Any]], reps: int) -> None:
    for e in entries:
        log(f"scoring breakdown: {e['name']}")
        clf = Classifier.load(e["path"], threads=1)
        e["scoring"] = scoring_breakdown(clf, SHORT_TEXT, reps)
        del clf


# --------------------------------------------------------------------------- section 3: throughput


def throughput(fn: Callable[[Sequence[str]], Any], texts: Sequence[str], repeats: int) -> dict[str, Any]:
    """Texts per second over the whole list, median of ``repeats`` passes after a short warm-up."""
    fn(texts[: min(8, len(texts))])
    secs = []
    with no_gc():
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn(texts)
            secs.append(time.perf_counter() - t0)
    return {"texts_per_s": len(texts) / statistics.median(secs), "texts": len(texts), "runs_s": secs}


# --------------------------------------------------------------------------- report


def bundle_sizes(b: Bundle, path: Path) -> dict[str, int]:
    """Bytes per part as `python -m runtime.classify --info` reports them, and metadata: the rest
    of the file (so the parts add up to it)."""
    sizes = dict(bundle_info(b, path)["sizes_bytes"])
    sizes["metadata"] = sizes["file"] - sum(v for k, v in sizes.items() if k != "file")
    return sizes


def evaluate_targets(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """Pass/miss per target, all at one engine thread (the device case they were set for)."""
    lat = entry["latency"].get("1", {}).get("short")
    cold = entry["cold_start"].get("1")
    classes = len(entry["labels"])
    rows = [
        ("hash+lookup p50 (µs)", TARGET_LOOKUP_US, lat and lat["hash_lookup"]["p50_us"]),
        ("short query end to end p50 (ms)", TARGET_SHORT_TOTAL_MS, lat and lat["total"]["p50_us"] / 1e3),
        ("cold start to answer, median (s)", TARGET_COLD_S, cold and cold["answer_s"]),
        ("cold start peak RSS, median (MiB)", TARGET_RSS_MIB, cold and cold["peak_rss_mib"]),
        ("small-device peak RSS goal (MiB)", TARGET_SMALL_DEVICE_RSS_MIB[entry["format"]], cold and cold["peak_rss_mib"]),
        (f"bundle size (MB){'' if classes == 4 else f'; target set for 4 classes, this has {classes}'}",
         TARGET_BUNDLE_MB, entry["sizes_bytes"]["file"] / 1e6),
    ]
    # The ONNX small-device goal is "at or under 110 MiB"; every other limit is strict.
    inclusive = {("small-device peak RSS goal (MiB)", "onnx")}
    return [{"target": name, "limit": limit, "measured": value,
             "passed": None if value is None else bool(value <= limit if (name, entry["format"]) in inclusive
                                                       else value < limit)} for name, limit, value in rows]


def print_cold(entries: list[dict[str, Any]], base: dict[str, dict[str, Any]]) -> None:
    rows = []
    for key in dict.fromkeys(k for e in entries for k in e["cold_start"]):
        ref = {name: cs.get(key) for name, cs in base.items()}
        onnx, st = ref.get("fp32 ONNX"), ref.get("PyTorch ST")
        for e in entries:
            c = e["cold_start"][key]
            rows.append([e["name"], e["engine"], key, fmt(c["answer_s"], 3), fmt(c["exit_s"], 3), fmt(c["peak_rss_mib"], 1),
                         fmt_ratio(ratio(c["answer_s"], onnx and onnx["answer_s"])),
                         fmt_ratio(ratio(c["peak_rss_mib"], onnx and onnx["peak_rss_mib"])),
                         fmt_ratio(ratio(c["answer_s"], st and st["answer_s"])),
                         fmt_ratio(ratio(c["peak_rss_mib"], st and st["peak_rss_mib"]))])
        for name, c in ref.items():
            if c:
                rows.append([f"baseline: {name}", "", key, fmt(c["answer_s"], 3), fmt(c["exit_s"], 3),
                             fmt(c["peak_rss_mib"], 1), "", "", "", ""])
    emit("1. Cold start (fresh process: import, load, one answer)", md_table(
        ["bundle / program", "engine", "threads", "to answer s", "to exit s", "peak RSS MiB",
         "time / fp32 ONNX", "RSS / fp32 ONNX", "time / PyTorch", "RSS / PyTorch"], rows),
        "Medians over fresh processes (after one warm-up spawn); peak RSS is the child's ru_maxrss (os.wait4), "
        "forked from a ~10 MiB launcher so that this process's size does not leak into it.")


def print_latency(entries: list[dict[str, Any]], base: dict[str, dict[str, Any]]) -> None:
    rows = []
    for e in entries:
        for key, per_text in e["latency"].items():
            for name, m in per_text.items():
                cells = [f"{m[part]['p50_us'] / div:.{d}f} / {m[part]['p95_us'] / div:.{d}f}"
                         for part, div, d in (("tokenize", 1, 1), ("encode", 1e3, 2), ("hash_lookup", 1, 1), ("total", 1e3, 2))]
                rows.append([e["name"], e["engine"], key, f"{name} ({m['tokens']})", *cells])
    emit("2. Per-query latency (p50 / p95)", md_table(
        ["bundle", "engine", "threads", "text (tokens)", "tokenize µs", "encode ms", "hash+lookup µs", "total ms"], rows),
        "total = Classifier.classify([text]) (check, tokenize, encode, hash+lookup, label).")
    if not base:
        return
    rows = []
    for key, per in base.items():
        for what, per_text in per.items():
            for name, m in per_text.items():
                unit, div = ("µs", 1) if what == "exact_knn" else ("ms", 1e3)
                rows.append([what, key, name, f"{m['p50_us'] / div:.2f} / {m['p95_us'] / div:.2f} {unit}"])
    emit("2b. Per-query baselines (p50 / p95)", md_table(["baseline", "threads", "text", "time"], rows),
         "fp32_* = fp32 encoder, encode only, through the runtime's TextEncoder; pytorch_st = "
         "SentenceTransformer.encode([text]) (tokenize + encode); exact_knn = cosine kNN, k=10, over --train.")
    rows = []
    for e in entries:
        for key, per_text in e["latency"].items():
            for name, r in e["ratios"].get(key, {}).items():
                rows.append([e["name"], key, name, fmt_ratio(r.get("encode_int8_over_fp32_same_engine")),
                             fmt_ratio(r.get("encode_int8_over_fp32_onnx")), fmt_ratio(r.get("total_over_pytorch_st")),
                             fmt_ratio(r.get("hash_lookup_over_exact_knn"))])
    emit("2c. Ratios against the baselines (p50, same run)", md_table(
        ["bundle", "threads", "text", "encode int8/fp32 (same engine)", "encode int8/fp32 ONNX",
         "total / PyTorch encode", "hash+lookup / exact kNN"], rows))


def print_throughput(entries: list[dict[str, Any]], base: dict[str, dict[str, Any]]) -> None:
    rows = []
    for e in entries:
        for t in e["throughput"]:
            cores = t["cores"]
            onnx = base.get("fp32_onnx_loop", {}).get(cores)
            st = base.get("pytorch_st_batch32", {}).get(cores)
            rows.append([e["name"], e["engine"], f"threads={t['threads']} × workers={t['workers']}",
                         fmt(t["texts_per_s"], 1), fmt_ratio(ratio(t["texts_per_s"], onnx and onnx["texts_per_s"])),
                         fmt_ratio(ratio(t["texts_per_s"], st and st["texts_per_s"]))])
    for what, per in base.items():
        for cores, t in per.items():
            rows.append([f"baseline: {what}", "", f"{cores} core(s)", fmt(t["texts_per_s"], 1), "", ""])
    n = entries[0]["throughput"][0]["texts"] if entries and entries[0]["throughput"] else 0
    emit("3. Batch throughput (texts/s)", md_table(
        ["bundle / program", "engine", "configuration", "texts/s", "vs fp32 ONNX loop", "vs PyTorch batch 32"], rows),
        f"Classifier.classify over {n} texts, median of passes; ratios against baselines using the same number of cores.")


def print_sizes(entries: list[dict[str, Any]]) -> None:
    rows = []
    for e in entries:
        s = e["sizes_bytes"]
        rows.append([e["name"], e["format"], *(f"{s.get(k, 0) / MIB:.3f}" for k in (
            "encoder", "class_statistics", "prior", "vote_tables", "metadata", "file")), f"{s['file'] / 1e6:.2f}"])
    emit("4. Bundle size", md_table(
        ["bundle", "encoder format", "encoder MiB", "class statistics MiB", "prior MiB",
         "vote tables + hyperplanes MiB", "metadata MiB", "total MiB", "total MB"], rows),
         "encoder includes its tokenizer.json (and an ONNX model's weights); metadata = the rest of the file "
         "(labels, privacy facts, check text, msgpack framing); MB = 10^6 bytes, MiB = 2^20.")


def print_memory(entries: list[dict[str, Any]]) -> None:
    for e in entries:
        mem = e.get("memory")
        if not mem:
            continue
        rows, prev = [], None
        for st in mem["stages"]:
            delta = "" if prev is None else f"{st['VmRSS'] - prev:+.1f}"
            rows.append([st["stage"], f"{st['VmRSS']:.1f}", delta, f"{st['VmHWM']:.1f}", f"{st['RssAnon']:.1f}",
                         f"{st['RssFile']:.1f}"])
            prev = st["VmRSS"]
        emit(f"5. Where the memory goes: {e['name']} ({e['engine']}, 1 thread)", md_table(
            ["load step (in Classifier.load's order)", "RSS MiB", "step MiB", "peak so far MiB", "anon MiB",
             "file MiB"], rows),
            "One fresh process takes the load steps one at a time through the runtime's own functions. "
            "'peak so far' above RSS shows a transient inside a step; file = mapped libraries and files "
            "(shared, reclaimable; an ONNX bundle's weights, mapped by onnxruntime, are here), anon = this "
            "process's own heap.")


def print_scoring(entries: list[dict[str, Any]]) -> None:
    rows = []
    for e in entries:
        sc = e.get("scoring")
        if not sc:
            continue
        for name, us in sc["parts_p50_us"].items():
            rows.append([e["name"], name, f"{us:.1f}"])
        rows.append([e["name"], "rest (the blend's own arithmetic)", f"{sc['rest_p50_us']:.1f}"])
        rows.append([e["name"], f"whole: Scorer.scores, mode {sc['mode']}", f"{sc['whole_p50_us']:.1f}"])
    if rows:
        emit("6. Where the scoring time goes (one query, p50 µs)", md_table(["bundle", "part", "µs"], rows),
             "Each part timed call by call on the short query's embedding, all parts in turn every round; indented rows split the "
             "centroid part. The numpy floor is the cost of any one numpy call on a tiny array.")


def tier_ratios(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each bundle after the first against the first, in this run: per-text encode and
    end-to-end time (p50), cold start to the first answer and its peak RSS, file size."""
    first, out = entries[0], []
    for e in entries[1:]:
        row: dict[str, Any] = {"bundle": e["name"], "against": first["name"], "by_threads": {}}
        for key in e["latency"]:
            a, b = e["latency"][key], first["latency"].get(key, {})
            cold, cold0 = e["cold_start"].get(key), first["cold_start"].get(key)
            row["by_threads"][key] = {
                **{f"{part} {text}": ratio(a[text][part]["p50_us"], b[text][part]["p50_us"])
                   for text in a if text in b for part in ("encode", "total")},
                "to answer": ratio(cold and cold["answer_s"], cold0 and cold0["answer_s"]),
                "peak RSS": ratio(cold and cold["peak_rss_mib"], cold0 and cold0["peak_rss_mib"])}
        row["size"] = ratio(e["sizes_bytes"]["file"], first["sizes_bytes"]["file"])
        out.append(row)
    return out


def print_tiers(entries: list[dict[str, Any]]) -> None:
    rows = []
    for e, r in zip(entries[1:], tier_ratios(entries)):
        for key, ratios in r["by_threads"].items():
            rows.append([f"{e['name']} ({e['encoder'].split('/')[-1]}) / {r['against']}", key,
                         *(fmt_ratio(ratios.get(k)) for k in ("encode short", "encode long", "total short",
                                                              "total long", "to answer", "peak RSS")),
                         fmt_ratio(r["size"])])
    if rows:
        emit("7. Encoder tiers: each bundle against the first (same run)", md_table(
            ["bundle / first bundle", "threads", "encode short", "encode long", "total short", "total long",
             "cold start to answer", "cold start peak RSS", "file size"], rows),
            "p50 ratios of section 2 and medians of section 1; above 1: the bundle is slower or larger than the first.")


def print_targets(entries: list[dict[str, Any]]) -> None:
    rows = [[e["name"], t["target"], f"{'≤' if t['target'].startswith('small-device') and e['format'] == 'onnx' else '<'} "
             f"{t['limit']:g}", fmt(t["measured"], 3),
             "not measured (needs --threads 1)" if t["passed"] is None else ("pass" if t["passed"] else "MISS")]
            for e in entries for t in e["targets"]]
    emit("Targets (2-core machine, 1 engine thread)", md_table(["bundle", "target", "limit", "measured", "result"], rows))


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", type=Path, action="append", required=True, help=".dpedge file (repeatable)")
    ap.add_argument("--train", type=Path, help="JSONL/CSV training file: exact-kNN baseline (labels.txt beside it) "
                    "and the texts for the throughput section")
    ap.add_argument("--threads", type=parse_threads, default=[1, None], help="engine thread settings, e.g. 1,all (default)")
    ap.add_argument("--queries", type=int, default=200, help="timed repetitions per query latency (default 200)")
    ap.add_argument("--lookup-reps", type=int, default=2000, help="timed repetitions of hash+lookup (default 2000)")
    ap.add_argument("--cold-runs", type=int, default=5, help="fresh processes per cold-start figure (default 5)")
    ap.add_argument("--batch-texts", type=int, default=300, help="texts in the throughput section (default 300)")
    ap.add_argument("--batch-repeats", type=int, default=3, help="passes per throughput figure (default 3)")
    ap.add_argument("--out", type=Path, help="also write the results as JSON")
    ap.add_argument("--pin-core", type=int, metavar="N", help="run this process and its children on core N only")
    ap.add_argument("--no-baselines", action="store_true", help="skip fp32/PyTorch/kNN baselines (bare runtime only)")
    ap.add_argument("--no-memory", action="store_true", help="skip section 5 (memory after each load step)")
    args = ap.parse_args(argv)
    for name in ("queries", "lookup_reps", "cold_runs", "batch_texts", "batch_repeats"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


class UsageError(Exception):
    """Unusable arguments or inputs: reported in one line, exit status 2."""


def check_inputs(args: argparse.Namespace) -> list[tuple[Path, Bundle]]:
    """Fail early with one clear message, before minutes of measuring."""
    for p in args.bundle:
        if not p.is_file():
            raise UsageError(f"bundle not found: {p}")
    if args.train is not None and not args.train.is_file():
        raise UsageError(f"--train file not found: {args.train}")
    if args.train is not None and not args.no_baselines and not (args.train.parent / "labels.txt").is_file():
        raise UsageError(f"the kNN baseline needs {args.train.parent / 'labels.txt'} beside --train")
    loaded = []
    for p in args.bundle:
        try:
            loaded.append((p.resolve(), bundle_format.load(p)))
        except BundleError as exc:
            raise UsageError(str(exc)) from None
    return loaded


def describe_bundles(bundles: list[tuple[Path, Bundle]]) -> list[dict[str, Any]]:
    """One result entry per bundle, with what needs no measuring (sizes, engine)."""
    entries = []
    for path, b in bundles:
        try:
            engine = choose_engine(b.encoder.format).name
        except BundleError as exc:  # e.g. a TFLite bundle and no LiteRT installed
            raise UsageError(f"{path}: {exc}") from None
        entries.append({"path": str(path), "name": path.name, "format": b.encoder.format, "labels": list(b.labels),
                        "encoder": (b.encoder.facts or {}).get("name", "?"), "family": b.encoder.family,
                        "engine": engine, "sizes_bytes": bundle_sizes(b, path), "cold_start": {}, "latency": {},
                        "ratios": {}, "throughput": [],
                        "class_stats_dim": None if b.projection is None else int(b.projection.shape[0])})
    return entries


def section_cold_start(entries: list[dict[str, Any]], base: Baselines | None, threads: Sequence[int | None],
                       runs: int) -> dict[str, dict[str, Any]]:
    """Fills each entry's "cold_start"; returns the baselines' figures by program and thread setting."""
    base_cold: dict[str, dict[str, Any]] = {}
    for t in threads:
        for e in entries:
            log(f"cold start: {e['name']}, threads={thread_key(t)} ({runs} runs + 1 warm-up)")
            e["cold_start"][thread_key(t)] = cold_start(runtime_cmd(Path(e["path"]), t, SHORT_TEXT), runs)
        if base is not None:
            for name, cmd in base.cold_commands(t, SHORT_TEXT).items():
                log(f"cold start baseline: {name}, threads={thread_key(t)}")
                base_cold.setdefault(name, {})[thread_key(t)] = cold_start(cmd, runs)
    return base_cold


def section_latency(entries: list[dict[str, Any]], base: Baselines | None, threads: Sequence[int | None],
                    texts: dict[str, str], tokenizer: TextTokenizer, args: argparse.Namespace) -> dict[str, Any]:
    """Fills each entry's "latency" and "ratios"; returns the baselines' figures by thread setting."""
    base_lat: dict[str, Any] = {}
    for t in threads:
        key = thread_key(t)
        query_emb: dict[str, np.ndarray] = {}
        for e in entries:
            log(f"per-query latency: {e['name']}, threads={key}")
            clf = Classifier.load(e["path"], threads=t, workers=1)
            e["latency"][key] = {name: measure_query(clf, x, args.queries, args.lookup_reps) for name, x in texts.items()}
            query_emb = query_emb or {name: clf.encoder.embed_one(tokenizer.encode([x])[0]) for name, x in texts.items()}
            del clf  # one engine at a time: a second session's threads would compete with the timed one
        if base is not None:
            formats = ["onnx"] + (["tflite"] if base.tflite_path is not None else [])
            base_lat[key] = measure_baseline_queries(base, t, texts, tokenizer, query_emb, args.queries, formats)
            for e in entries:
                e["ratios"][key] = {name: latency_ratios(e, key, name, base_lat[key]) for name in texts}
    return base_lat


def section_throughput(entries: list[dict[str, Any]], base: Baselines | None, threads: Sequence[int | None],
                       batch: list[str], tokenizer: TextTokenizer, repeats: int) -> dict[str, dict[str, Any]]:
    """Fills each entry's "throughput"; baselines are keyed by the number of cores they use, so each
    configuration is compared with a baseline using as many cores."""
    cores = usable_cores()
    configs = list(dict.fromkeys([(t, 1) for t in threads] + ([(1, cores)] if cores > 1 else [])))
    for e in entries:
        for t, workers in configs:
            log(f"throughput: {e['name']}, threads={thread_key(t)} × workers={workers}")
            clf = Classifier.load(e["path"], threads=t, workers=workers)
            e["throughput"].append({"threads": thread_key(t), "workers": workers, "cores": str((t or cores) * workers),
                                    **throughput(clf.predict, batch, repeats)})
            del clf
    base_tp: dict[str, dict[str, Any]] = {}
    if base is not None:
        for t in threads:
            n = str(t or cores)
            log(f"throughput baselines, threads={thread_key(t)}")
            enc = base.encoder("onnx", t)
            base_tp.setdefault("fp32_onnx_loop", {})[n] = throughput(lambda xs: enc.embed(tokenizer.encode(xs)),
                                                                     batch, repeats)
            st = base.sentence_transformer(t)
            base_tp.setdefault("pytorch_st_batch32", {})[n] = throughput(
                lambda xs: st.encode(list(xs), batch_size=32, show_progress_bar=False), batch, repeats)
    return base_tp


def run(args: argparse.Namespace) -> dict[str, Any]:
    """All four sections in order, each printed as soon as it is measured; returns the JSON result."""
    if args.pin_core is not None:
        try:
            pin_process(args.pin_core)
        except (ValueError, OSError) as exc:
            raise UsageError(str(exc)) from None
    bundles = check_inputs(args)
    entries = describe_bundles(bundles)
    spec = bundles[0][1].encoder  # the texts and fp32 baselines are the first bundle's (the tiers share BERT's vocabulary)
    tokenizer = TextTokenizer(spec.tokenizer_json, spec.max_length)
    del bundles  # the classifiers below load their own copies
    texts = {"short": SHORT_TEXT, "long": long_text(tokenizer)}
    source = args.train or DEFAULT_BATCH_SOURCE
    try:
        batch = read_texts(source, args.batch_texts)
    except (OSError, ValueError, KeyError) as exc:  # unreadable, bad JSON, no "text" field
        raise UsageError(f"{source}: cannot read texts for the throughput section ({exc!r})") from None

    base: Baselines | None = None
    if not args.no_baselines:
        log("preparing baselines (fp32 encoders, PyTorch reference)")
        base = Baselines.prepare(spec, want_tflite=any(e["format"] == "tflite" for e in entries), train=args.train)

    from benchmarks import first_answer  # it imports this module's launcher: imported here, once both exist

    log(f"first answer against the import floor: {len(entries)} bundle(s), {args.cold_runs} rounds of processes")
    for e, row in zip(entries, first_answer.measure_all([(Path(e["path"]), None) for e in entries], args.cold_runs)):
        e["first_answer"] = row
    emit("0. A process's first answer against the import floor (one thread)", first_answer.table(
        [e["first_answer"] for e in entries]), first_answer.NOTE)
    base_cold = section_cold_start(entries, base, args.threads, args.cold_runs)
    print_cold(entries, base_cold)
    base_lat = section_latency(entries, base, args.threads, texts, tokenizer, args)
    print_latency(entries, base_lat)
    log(f"throughput over {len(batch)} texts from {source}")
    base_tp = section_throughput(entries, base, args.threads, batch, tokenizer, args.batch_repeats)
    print_throughput(entries, base_tp)
    print_sizes(entries)
    if not args.no_memory:
        section_memory(entries)
        print_memory(entries)
    section_scoring(entries, args.lookup_reps)
    print_scoring(entries)
    for e in entries:
        e["targets"] = evaluate_targets(e)
    print_targets(entries)
    print_tiers(entries)

    return {
        "command": [sys.executable, *sys.argv],
        "machine": machine_facts(args.pin_core),
        "settings": {"threads": [thread_key(t) for t in args.threads], "queries": args.queries,
                     "lookup_reps": args.lookup_reps, "cold_runs": args.cold_runs, "batch_texts": len(batch),
                     "batch_source": str(source), "batch_repeats": args.batch_repeats, "baselines": base is not None},
        "texts": {name: {"text": x, "tokens": len(tokenizer.encode([x])[0])} for name, x in texts.items()},
        "bundles": entries,
        "tiers": tier_ratios(entries),
        "baselines": {"cold_start": base_cold, "latency": base_lat, "throughput": base_tp,
                      "knn": None if base is None or args.train is None else {"train": str(args.train), "k": KNN_K}},
    }


def latency_ratios(e: dict[str, Any], key: str, text: str, base: dict[str, Any]) -> dict[str, float | None]:
    """p50 ratios of one bundle's query against the same-run baselines at the same thread setting."""
    m = e["latency"][key][text]
    p50 = lambda what: base.get(what, {}).get(text, {}).get("p50_us")  # noqa: E731
    return {
        "encode_int8_over_fp32_same_engine": ratio(m["encode"]["p50_us"], p50(f"fp32_{e['format']}")),
        "encode_int8_over_fp32_onnx": ratio(m["encode"]["p50_us"], p50("fp32_onnx")),
        "total_over_pytorch_st": ratio(m["total"]["p50_us"], p50("pytorch_st")),
        "hash_lookup_over_exact_knn": ratio(m["hash_lookup"]["p50_us"], p50("exact_knn")),
    }


def machine_facts(pinned: int | None) -> dict[str, Any]:
    """What the figures were taken on; an engine's version changes them as much as the CPU does."""
    import importlib.metadata as md

    versions = {}
    for pkg in ("numpy", "onnxruntime", "ai-edge-litert", "tokenizers", "torch", "sentence-transformers"):
        with contextlib.suppress(md.PackageNotFoundError):
            versions[pkg] = md.version(pkg)
    return {"cpu_count": os.cpu_count(), "usable_cores": usable_cores(), "pinned_core": pinned,
            "platform": platform.platform(), "machine": platform.machine(), "python": platform.python_version(),
            "versions": versions}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    try:
        result = run(args)
    except UsageError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    except (RuntimeError, BundleError) as exc:  # a child that failed, an engine that cannot run a bundle
        sys.stderr.write(f"error: {exc}\n")
        return 1
    result["elapsed_s"] = time.perf_counter() - started
    result["imported"] = {m: m in sys.modules for m in ("torch", "exporter", "tensorflow", "sentence_transformers")}
    log(f"done in {result['elapsed_s']:.0f} s")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
