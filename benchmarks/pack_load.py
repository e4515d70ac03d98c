"""What a device pays to load the two shapes of a bundle: one file, or statistics + encoder pack.

    python benchmarks/pack_load.py [--train ../shared/data/agnews/train.jsonl] [--runs 5] [--out results.json]

Builds both shapes of the same records at epsilon 8 (`exporter build`, then again with
`--encoder-pack`), then measures, each in fresh processes (medians over --runs):
- the file that travels: its size, and the time to read and check it alone (`bundle.load`,
  the last of five reads in one process), the encoder pack already loaded for the statistics
  bundle (an app loads its pack once);
- loading to the first answer (`Classifier.load` + one `classify`), the pack included, and the
  peak resident memory of that process (VmHWM: reset at exec, unlike ru_maxrss).
Ratios are against the one-file bundle measured in the same run (this machine is shared). Prints
a markdown table; --out writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"

#: The child: load a shape, answer one text, print timings and the peak memory.
CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from runtime import Classifier, bundle
mode, path, pack_path = sys.argv[1], sys.argv[2], sys.argv[3] or None
t1 = time.perf_counter()
pack = bundle.load_pack(pack_path) if pack_path else None
t2 = time.perf_counter()
if mode == "read":
    for _ in range(5):
        s = time.perf_counter(); bundle.load(path, pack=pack); reads = time.perf_counter() - s
    out = {"read_s": reads}
else:
    clf = Classifier.load(path, encoder=pack, threads=1)
    clf.classify(["is it going to rain tomorrow"])
    t3 = time.perf_counter()
    hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    out = {"import_s": t1 - t0, "pack_s": t2 - t1, "to_answer_s": t3 - t1, "peak_mib": hwm / 1024}
print(json.dumps(out))
"""


def _child(mode: str, bundle: Path, pack: Path | None) -> dict[str, float]:
    r = subprocess.run([sys.executable, "-c", CHILD, mode, str(bundle), str(pack or "")], capture_output=True,
                       text=True, cwd=ROOT, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def _median(rows: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in rows) for k in rows[0]}


def _build(train: Path, labels: Path, out: Path, *extra: str) -> None:
    subprocess.run([sys.executable, "-m", "exporter", "build", "--train", str(train), "--labels", str(labels),
                    "--epsilon", "8", "--seed", "7", "--out", str(out), "--quiet", *extra], check=True, cwd=ROOT,
                   capture_output=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", type=Path, default=DATA / "agnews" / "train.jsonl")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    labels = args.train.parent / "labels.txt"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        pack = work / "minilm.dpedge-encoder"
        subprocess.run([sys.executable, "-m", "exporter", "encoder", "--pack", str(pack)], check=True, cwd=ROOT,
                       capture_output=True)
        one, stats = work / "one.dpedge", work / "stats.dpedge"
        _build(args.train, labels, one)
        _build(args.train, labels, stats, "--encoder-pack", str(pack))
        shapes = {"one file": (one, None), "statistics + pack": (stats, pack)}
        rows = {}
        for name, (bundle, given) in shapes.items():
            _child("load", bundle, given)  # warms the page cache: a process cold start, not a disk one
            load = _median([_child("load", bundle, given) for _ in range(args.runs)])
            read = _median([_child("read", bundle, given) for _ in range(args.runs)])
            rows[name] = {"file_bytes": bundle.stat().st_size, **read, **load}
        rows["statistics + pack"]["pack_bytes"] = pack.stat().st_size
    base = rows["one file"]
    print(f"Both shapes of {args.train.parent.name} at epsilon 8; medians over {args.runs} fresh processes; "
          f"ratios against the one-file bundle.\n")
    print("| shape | file that travels | read + check it | pack load (once) | load to first answer | peak RSS |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, r in rows.items():
        ratio = "" if r is base else f" ({r['read_s'] / base['read_s']:.2f}x)"
        print(f"| {name} | {r['file_bytes'] / 1e6:.3f} MB | {r['read_s'] * 1e3:.1f} ms{ratio} | "
              f"{r['pack_s'] * 1e3:.0f} ms | {r['to_answer_s']:.3f} s ({r['to_answer_s'] / base['to_answer_s']:.2f}x) | "
              f"{r['peak_mib']:.1f} MiB ({r['peak_mib'] / base['peak_mib']:.2f}x) |")
    if args.out:
        args.out.write_text(json.dumps({"train": str(args.train), "runs": args.runs, "shapes": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
