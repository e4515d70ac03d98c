"""What loading a bundle costs in memory: a legitimate bundle with big vote tables against the quick start's.

    python benchmarks/load_memory.py [--base models/quickstart.dpedge] [--tables 64] [--bits 18] [--out DIR]

Builds (once, under build/load-memory/ unless --out) a bundle from the quick-start bundle with the
project's own writer: its class statistics and encoder kept, vote tables of T x 2^H x C int16 added
(T = 64, H = 18 and the quick start's 7 labels: 235 MB), with hyperplanes, offsets and a votes
release of its own epsilon, so that the bundle is valid and sealed (the reader accepts it). Then
measures, each in a fresh process, the CLI's two paths: `python -m runtime.classify --info` and the
classification of one text (`--memory-budget 0`, so the CLI's own guard never ends the process):

- baseline: the resident memory of the child after `import runtime.classify` (the interpreter,
  numpy and the runtime's modules, before any bundle is read);
- peak: the process's peak resident memory when main() returns (VmHWM, from /proc; it is reset at
  exec, unlike ru_maxrss of the children);
- peak - baseline, and that over the file's size (the goal: under 1.5 for the big bundle; the
  classification row includes the engine, a fixed cost the quick-start row shows).

Prints a markdown table.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runtime import bundle as fmt  # noqa: E402
from runtime.bundle import wording  # noqa: E402
from runtime.bundle.schema import Key, ReleaseFacts  # noqa: E402

#: The child: the baseline after the CLI's imports, then the CLI's main(), then the peak (VmHWM).
CHILD = r"""
import json, os, sys
def status(key):
    return next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith(key + ":"))
import runtime.classify as cli
base = status("VmRSS")
out, err = sys.stdout, sys.stderr
sys.stdout = sys.stderr = open(os.devnull, "w")
try:
    code = cli.main(sys.argv[1:])
finally:
    sys.stdout, sys.stderr = out, err
print(json.dumps({"code": code, "base": base, "peak": status("VmHWM")}))
"""

VOTES_EPSILON = 2.0
TEXT = "is it going to rain tomorrow"


def build(base: Path, out: Path, tables: int, bits: int, seed: int = 7) -> Path:
    """``base`` (a bundle with class statistics and no vote tables) with T x 2^H x C vote tables
    added as the exporter adds them (aligned hashing: hyperplanes and offsets; a votes release of
    its own epsilon, sensitivity K x T), written by runtime.bundle.writer (sealed)."""
    if out.exists():
        return out
    b = fmt.load(base)
    if b.votes is not None or b.class_sums is None:
        raise SystemExit(f"{base}: expected a bundle with class statistics and no vote tables")
    rng = np.random.default_rng(seed)
    classes, dim, k = len(b.labels), b.encoder.dim, b.records_per_unit
    votes = rng.integers(-120, 121, size=(tables, 2**bits, classes), dtype=np.int16)  # noise of scale 64 / 2
    sensitivity = k * tables
    releases = {**b.releases, Key.VOTES: ReleaseFacts(
        statistic=Key.VOTES, epsilon=VOTES_EPSILON, sensitivity_l1=sensitivity,
        noise_scale=sensitivity / VOTES_EPSILON,
        mechanism="discrete Laplace (two-sided geometric) noise added independently to every cell of the "
                  "T x 2^H x C vote tables, empty buckets included")}
    total = 0.0
    for r in releases.values():  # in release order, as a reader adds them
        total += r.epsilon
    privacy = {**b.privacy, Key.EPSILON: total,
               "composition": wording.composition(list(releases), head=False, batches=b.batches)}
    big = dataclasses.replace(
        b, privacy=privacy, releases=releases, votes=votes,
        hyperplanes=rng.standard_normal((tables, bits, dim), dtype=np.float32),
        offsets=(0.01 * rng.standard_normal((tables, bits))).astype(np.float32), seed=seed)
    out.parent.mkdir(parents=True, exist_ok=True)
    fmt.save(big, out)
    return out


def measure(path: Path, info: bool) -> dict[str, int]:
    args = ["--bundle", str(path), "--memory-budget", "0", "--threads", "1"]
    args += ["--info"] if info else [TEXT]
    r = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, text=True, cwd=ROOT)
    if r.returncode != 0:
        raise SystemExit(f"the child failed ({r.returncode}): {r.stderr[-2000:]}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    if out["code"] != 0:
        raise SystemExit(f"python -m runtime.classify {' '.join(args)}: exit status {out['code']}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", type=Path, default=ROOT / "models" / "quickstart.dpedge")
    ap.add_argument("--tables", type=int, default=64)
    ap.add_argument("--bits", type=int, default=18)
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "load-memory")
    args = ap.parse_args(argv)
    big = build(args.base, args.out / f"votes-{args.tables}x{args.bits}.dpedge", args.tables, args.bits)
    mib = 2**20
    print("| bundle | file MiB | path | baseline MiB | peak MiB | peak - baseline MiB | (peak - baseline) / file |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for path in (args.base, big):
        size = path.stat().st_size
        for info in (True, False):
            m = measure(path, info)
            grew = m["peak"] - m["base"]
            print(f"| {path.name} | {size / mib:.1f} | {'--info' if info else 'one text'} | {m['base'] / mib:.0f} | "
                  f"{m['peak'] / mib:.0f} | {grew / mib:.0f} | {grew / size:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
