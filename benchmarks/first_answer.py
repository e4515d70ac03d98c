"""A process's first answer against the import floor: what a script, a shell pipeline or a
Raspberry Pi pays on every call of the command line.

    python benchmarks/first_answer.py --bundle B [--bundle STATS --encoder-pack PACK] [--runs 15] [--out F.json]

Fresh processes of

- the floor: ``python -c "import numpy, msgpack, onnxruntime"`` (the runtime's dependencies
  imported, nothing done), and
- the answer: ``python -m runtime.classify --bundle B [--encoder-pack PACK] --threads 1 TEXT``
  (import, read and check the bundle, create the engine's session, check the encoder against
  the bundle's check embedding, classify one text, exit),

are run alternately, in rounds: a floor process before each bundle's answer process, the
bundles in turn (floor, answer A, floor, answer B, floor, answer A, ...), so that a machine's
changing load falls on every row alike; each ratio is against the median of all the run's
floors. Each child is forked by a tiny launcher (runtime_perf.LAUNCHER) and
reaped with os.wait4: its CPU time is its own user + system time (every thread), its peak
memory its ru_maxrss. The table gives medians and their ratios; the goals are 1.6x the floor's
CPU and 90 MiB of peak memory for the quick-start bundle.

The children run with bytecode caches, as an installed package does (pip compiles every module
at install): PYTHONDONTWRITEBYTECODE is dropped from their environment and PYTHONPYCACHEPREFIX
points into .cache/pycache, which the first (untimed) pair of runs fills. Without it, a
checkout run under PYTHONDONTWRITEBYTECODE=1 compiles the runtime's modules from source at
every start (about 80 ms on this machine), which no user pays.

The Python is this one (sys.executable): run it with the bare runtime install
(`.venv-runtime/bin/python`) to measure what a device has.
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
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.runtime_perf import LAUNCHER, SHORT_TEXT, fmt, fmt_ratio, md_table  # noqa: E402

FLOOR_CODE = "import numpy, msgpack, onnxruntime"
GOAL_CPU_RATIO = 1.6
GOAL_PEAK_MIB = 90.0
PYCACHE = ROOT / ".cache" / "pycache"


def child_env() -> dict[str, str]:
    """The children's environment: bytecode caches on (see the module doc), the hub offline."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    env["HF_HUB_OFFLINE"] = "1"
    return env


def launch(cmd: Sequence[str], env: dict[str, str]) -> dict[str, float]:
    """One fresh process: its CPU seconds (user + system, all threads) and peak RSS in MiB."""
    with tempfile.TemporaryFile() as err:
        r = subprocess.run([sys.executable, "-I", "-S", "-c", LAUNCHER, *cmd], stdout=subprocess.PIPE, stderr=err,
                           env=env, cwd=ROOT, check=False)
        got = json.loads(r.stdout.decode().strip().splitlines()[-1]) if r.returncode == 0 and r.stdout.strip() else {}
        if not got or got["status"] != 0:
            err.seek(0)
            tail = " / ".join(err.read().decode(errors="replace").strip().splitlines()[-3:])
            raise RuntimeError(f"{' '.join(cmd[:6])} ...: exit status {got.get('status', r.returncode)}: {tail}")
    return {"cpu_s": got["cpu_s"], "peak_mib": got["maxrss"] / 1024, "answer_s": got["answer_s"]}


def answer_cmd(bundle: Path, pack: Path | None, text: str = SHORT_TEXT) -> list[str]:
    pack_args = [] if pack is None else ["--encoder-pack", str(pack)]
    return [sys.executable, "-m", "runtime.classify", "--bundle", str(bundle), *pack_args, "--threads", "1", text]


def measure_all(cases: Sequence[tuple[Path, Path | None]], runs: int = 15) -> list[dict[str, Any]]:
    """Medians of ``runs`` rounds (after one untimed round), each round a floor process before
    each bundle's answer process, bundles in turn: every bundle is measured over the same span
    of the machine's changing load, and against the floors of the whole run (``runs`` times the
    number of bundles of them), whose median is steadier than a few of its own."""
    env = child_env()
    floor_cmd = [sys.executable, "-c", FLOOR_CODE]
    cmds = [answer_cmd(bundle, pack) for bundle, pack in cases]
    for cmd in cmds:
        launch(floor_cmd, env), launch(cmd, env)  # fills the bytecode cache and the page cache
    floor: list[dict[str, float]] = []
    answers: list[list[dict[str, float]]] = [[] for _ in cmds]
    for _ in range(runs):
        for cmd, answer in zip(cmds, answers):
            floor.append(launch(floor_cmd, env))
            answer.append(launch(cmd, env))
    med = lambda rows, key: statistics.median(r[key] for r in rows)  # noqa: E731
    floors = {"floor_cpu_s": med(floor, "cpu_s"), "floor_peak_mib": med(floor, "peak_mib")}
    return [{"bundle": str(bundle), "pack": None if pack is None else str(pack), "runs": runs, **floors,
             "cpu_s": med(answer, "cpu_s"), "peak_mib": med(answer, "peak_mib"), "answer_s": med(answer, "answer_s"),
             "cpu_ratio": med(answer, "cpu_s") / floors["floor_cpu_s"]}
            for (bundle, pack), answer in zip(cases, answers)]


#: What the table's figures are (printed under it).
NOTE = ("Medians over rounds of fresh processes, a floor process (python -c 'import numpy, msgpack, "
        "onnxruntime') before each bundle's, bundles in turn; each ratio is against the floors of the whole run. "
        "CPU is the child's user + system time (os.wait4), peak its ru_maxrss; bytecode caches on.")


def table(rows: list[dict[str, Any]]) -> str:
    return md_table(
        ["bundle", "floor CPU s", "first answer CPU s", f"CPU / floor (goal <= {GOAL_CPU_RATIO:g}x)", "floor peak MiB",
         f"first answer peak MiB (goal <= {GOAL_PEAK_MIB:g})", "wall s to the answer"],
        [[Path(r["bundle"]).name + ("" if r["pack"] is None else f" + {Path(r['pack']).name}"),
          fmt(r["floor_cpu_s"], 3), fmt(r["cpu_s"], 3), fmt_ratio(r["cpu_ratio"]), fmt(r["floor_peak_mib"], 1),
          fmt(r["peak_mib"], 1), fmt(r["answer_s"], 3)] for r in rows])


def names_a_pack(bundle: Path) -> bool:
    """Whether ``bundle`` is a statistics bundle (it names an encoder pack instead of holding one)."""
    from runtime.bundle.reader import parse

    return parse(bundle.read_bytes()).get("encoder_pack") is not None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", type=Path, action="append", required=True, help=".dpedge file (repeatable)")
    ap.add_argument("--encoder-pack", type=Path, help="the encoder pack the statistics bundles among --bundle name")
    ap.add_argument("--runs", type=int, default=15, help="rounds: fresh processes of each kind per bundle (default 15)")
    ap.add_argument("--out", type=Path, help="also write the results as JSON")
    args = ap.parse_args(argv)
    cases = []
    for b in args.bundle:
        if not b.is_file():
            ap.error(f"bundle not found: {b}")
        cases.append((b, args.encoder_pack if args.encoder_pack is not None and names_a_pack(b) else None))
    sys.stderr.write(f"first answer: {len(cases)} bundle(s), {args.runs} rounds of fresh processes\n")
    try:
        rows = measure_all(cases, args.runs)
    except RuntimeError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    print(table(rows))
    print(f"\n{NOTE}")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
