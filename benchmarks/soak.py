"""Soak test: classify many short queries in one process and watch memory and throughput.

    python benchmarks/soak.py --bundle B [--queries 1000000] [--report-every 50000] [--threads 1]
        [--engine auto] [--seed 0] [--warmup 0.1] [--max-rss-growth-mib 8] [--min-drift 0.6]
        [--probe-every 1000] [--out soak.json]

One `Classifier` is loaded once, then queries are classified one at a time through the public
API (`Classifier.classify([text])`), as an app answering requests would. Every
--report-every queries the script samples the process's resident memory (VmRSS from
/proc/self/status), the number of live Python objects the garbage collector tracks (not
counting this script's own per-window records), the wall-clock and CPU time of the window,
and the machine's 1-minute load average. It prints one table row per window and a verdict:

- RSS growth after warm-up: RSS at the end minus RSS at the end of the warm-up (the first
  --warmup fraction of the queries), and the largest RSS seen after warm-up minus that same
  starting point. A leak of even a few hundred bytes per query shows up here as hundreds of MiB
  over a million queries.
- Throughput drift: the slowest window's queries/s divided by the fastest one's, over the
  windows after warm-up (1.0 = perfectly steady). The same ratio is also given for CPU time
  per query, which other processes on a shared machine disturb far less than the wall clock
  (they still share caches and cores), so a wall-clock dip that the CPU figure and the load
  average explain is contention, not the runtime slowing down. The trend
  (mean CPU time per query in the last third of those windows over the first third) shows a
  slow-down that builds up, such as a cache or list growing per query, apart from noise.
- Stable answers: a fixed probe text is re-classified every 1,000 queries (--probe-every) and
  must get the identical scores every time.

Queries are generated deterministically (--seed) from a small vocabulary: 2 to 12 words, with
numbers, capitals and punctuation mixed in, so they are short (about 4 to 20 tokens) and
nearly all distinct. The exit status is 1 if RSS grew by more than --max-rss-growth-mib after
warm-up, if the CPU-time drift ratio is below --min-drift, or if an answer changed.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from runtime import Classifier  # noqa: E402

WORDS = (
    "the a my our your this that next last every some any please now today tonight tomorrow morning "
    "evening weekend monday friday set cancel change move add remove play pause skip stop start show "
    "find tell send call text remind wake turn dim open close lock check book order buy sell share price "
    "stock market team game match score win lose election president minister war peace talks deal bank "
    "oil energy company profit quarter report growth rate rates inflation court police storm rain snow "
    "sunny weather forecast temperature traffic route airport station train flight hotel music song "
    "album playlist volume lights kitchen door heating alarm timer meeting calendar appointment dentist "
    "doctor message email mom dad friend boss about with from for to in on at of and or but new old big "
    "small fast slow good bad latest breaking record season league cup final space rocket launch phone "
    "software chip data cloud network security update release research study scientists climate"
).split()
PUNCT = ("", "", "", "", ".", "?", "!", ",")
PROBE = "what is the weather like in Paris tomorrow morning"
PROBE_EVERY = 1000


def queries(n: int, seed: int) -> Iterator[str]:
    """n short, varied, deterministic query texts."""
    rng = random.Random(seed)
    for _ in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(2, 12))]
        if rng.random() < 0.3:
            words.insert(rng.randrange(len(words) + 1), str(rng.randint(0, 2099)))
        if rng.random() < 0.3:
            words[0] = words[0].capitalize()
        yield " ".join(words) + rng.choice(PUNCT)


def rss_mib() -> float:
    """Resident set size of this process, from /proc/self/status (Linux)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


@dataclass
class Window:
    done: int          # queries classified so far
    rss_mib: float     # VmRSS at the end of the window
    objects: int       # objects tracked by the garbage collector
    qps: float         # queries per wall-clock second in this window
    cpu_ms: float      # CPU time (all threads of this process) per query in this window
    load: float = 0.0  # the machine's 1-minute load average at the end of the window


@dataclass
class Verdict:
    warmup_queries: int
    rss_start_mib: float        # at the end of the warm-up
    rss_end_mib: float
    rss_growth_mib: float       # end minus start
    rss_max_growth_mib: float   # largest after warm-up minus start
    qps_min: float
    qps_max: float
    qps_drift: float            # min / max over windows after warm-up
    cpu_ms_drift: float         # fastest / slowest CPU ms per query, after warm-up
    cpu_ms_trend: float         # mean CPU ms per query, last third of those windows / first third
    probe_checks: int
    probe_mismatches: int
    total_seconds: float
    mean_qps: float


def verdict(windows: list[Window], warmup: int, probe_checks: int, mismatches: int, seconds: float) -> Verdict:
    warm = [w for w in windows if w.done <= warmup]
    start = warm[-1] if warm else windows[0]
    after = [w for w in windows if w.done > start.done] or windows[-1:]
    qps = [w.qps for w in after]
    cpu = [w.cpu_ms for w in after]
    third = max(1, len(cpu) // 3)
    return Verdict(
        warmup_queries=start.done, rss_start_mib=start.rss_mib, rss_end_mib=windows[-1].rss_mib,
        rss_growth_mib=windows[-1].rss_mib - start.rss_mib,
        rss_max_growth_mib=max(w.rss_mib for w in after) - start.rss_mib,
        qps_min=min(qps), qps_max=max(qps), qps_drift=min(qps) / max(qps),
        cpu_ms_drift=min(cpu) / max(cpu), cpu_ms_trend=(sum(cpu[-third:]) / third) / (sum(cpu[:third]) / third),
        probe_checks=probe_checks, probe_mismatches=mismatches,
        total_seconds=seconds, mean_qps=windows[-1].done / seconds,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", required=True, type=Path)
    ap.add_argument("--queries", type=int, default=1_000_000)
    ap.add_argument("--report-every", type=int, default=50_000)
    ap.add_argument("--threads", type=int, default=1, help="encoder threads (default 1)")
    ap.add_argument("--engine", default="auto")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--warmup", type=float, default=0.1, help="fraction of the queries treated as warm-up")
    ap.add_argument("--max-rss-growth-mib", type=float, default=8.0)
    ap.add_argument("--min-drift", type=float, default=0.6, help="lowest acceptable CPU-time drift ratio")
    ap.add_argument("--probe-every", type=int, default=PROBE_EVERY, help="re-classify the probe text every N queries")
    ap.add_argument("--out", type=Path, help="write the windows and the verdict as JSON")
    args = ap.parse_args(argv)
    if args.queries < 1 or args.report_every < 1 or args.probe_every < 1:
        ap.error("--queries, --report-every and --probe-every must be positive")

    t0 = time.perf_counter()
    clf = Classifier.load(args.bundle, engine=args.engine, threads=args.threads)
    probe = clf.classify([PROBE])[0]
    print(f"# {args.bundle}: {clf.bundle.encoder.format} encoder on {clf.encoder.engine}, threads={args.threads}, "
          f"loaded in {time.perf_counter() - t0:.2f} s, RSS {rss_mib():.1f} MiB", flush=True)
    print(f"| {'queries':>9} | {'RSS MiB':>8} | {'py objects':>10} | {'queries/s':>9} | {'CPU ms/query':>12} | "
          f"{'load avg':>8} |")
    print(f"|{'-' * 11}|{'-' * 10}|{'-' * 12}|{'-' * 11}|{'-' * 14}|{'-' * 10}|", flush=True)

    windows: list[Window] = []
    labels: dict[str, int] = {}
    checks = mismatches = 0
    start = time.perf_counter()
    w_wall, w_cpu, w_done = start, time.process_time(), 0
    for i, text in enumerate(queries(args.queries, args.seed), start=1):
        pred = clf.classify([text])[0]
        labels[pred.label] = labels.get(pred.label, 0) + 1
        if i % args.probe_every == 0:
            checks += 1
            mismatches += clf.classify([PROBE])[0] != probe
        if i % args.report_every == 0 or i == args.queries:
            now, cpu = time.perf_counter(), time.process_time()
            n = i - w_done
            w = Window(i, rss_mib(), len(gc.get_objects()) - len(windows), n / (now - w_wall), 1000 * (cpu - w_cpu) / n,
                       os.getloadavg()[0])
            windows.append(w)
            print(f"| {w.done:>9,} | {w.rss_mib:>8.1f} | {w.objects:>10,} | {w.qps:>9.1f} | {w.cpu_ms:>12.3f} | "
                  f"{w.load:>8.2f} |", flush=True)
            w_wall, w_cpu, w_done = time.perf_counter(), time.process_time(), i
    v = verdict(windows, int(args.queries * args.warmup), checks, mismatches, time.perf_counter() - start)

    print()
    print(f"queries        {args.queries:,} in {v.total_seconds:.0f} s ({v.mean_qps:.1f}/s); labels: "
          + ", ".join(f"{k} {n:,}" for k, n in sorted(labels.items())))
    print(f"RSS            {v.rss_start_mib:.1f} MiB after warm-up ({v.warmup_queries:,} queries), "
          f"{v.rss_end_mib:.1f} MiB at the end: growth {v.rss_growth_mib:+.1f} MiB "
          f"(largest {v.rss_max_growth_mib:+.1f} MiB)")
    print(f"throughput     {v.qps_min:.1f} .. {v.qps_max:.1f} queries/s after warm-up: drift {v.qps_drift:.2f} "
          f"(min/max; CPU time per query: {v.cpu_ms_drift:.2f}); CPU time per query, last third of the run "
          f"over first third: {v.cpu_ms_trend:.2f}")
    print(f"answers        probe re-classified {v.probe_checks:,} times, {v.probe_mismatches} changed")
    problems = []
    if v.rss_growth_mib > args.max_rss_growth_mib or v.rss_max_growth_mib > 2 * args.max_rss_growth_mib:
        problems.append(f"RSS grew by more than {args.max_rss_growth_mib} MiB after warm-up")
    if v.cpu_ms_drift < args.min_drift:
        problems.append(f"CPU time per query drifted (ratio {v.cpu_ms_drift:.2f} < {args.min_drift})")
    if v.probe_mismatches:
        problems.append("the probe's answer changed")
    print("verdict        " + ("OK: RSS flat after warm-up, throughput steady, answers stable"
                               if not problems else "FAIL: " + "; ".join(problems)))
    if args.out:
        args.out.write_text(json.dumps({
            "bundle": str(args.bundle), "engine": clf.encoder.engine, "threads": args.threads,
            "queries": args.queries, "seed": args.seed, "labels": labels,
            "windows": [asdict(w) for w in windows], "verdict": asdict(v), "problems": problems,
        }, indent=2) + "\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
