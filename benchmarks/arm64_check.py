"""Raspberry Pi conformance: the runtime on Debian bookworm arm64 (emulated) against x86_64.

    sudo .venv/bin/python benchmarks/arm64_check.py [--data ../shared/data/trec] [--texts N]
        [--cpu cortex-a72[,cortex-a76,...]] [--cache DIR] [--out arm64.json]
        [--onnx-bundle B --tflite-bundle B2] [--mirror URL] [--no-pin]

Raspberry Pi OS Bookworm (64-bit) is Debian bookworm for aarch64. This script builds that
userland here and runs the device runtime in it under QEMU user-mode emulation, installed
exactly as the README tells Pi users to, then compares its answers with this machine's:

1. binfmt_misc: mounted if it is not, and QEMU's aarch64 handler enabled (Debian's
   qemu-user-static and binfmt-support). If binfmt_misc cannot be mounted (an unprivileged
   container), the script prints SKIP and exits 0: nothing can be emulated there. Every other
   failure exits 1 (2 for bad arguments), saying what failed.
2. The arm64 root: `debootstrap --arch=arm64 --variant=minbase` of bookworm from the mirror
   apt is configured with, with python3, python3-venv, python3-pip and ca-certificates;
   cached under --cache, keyed by what it contains, so only the first run pays for it
   (about 4 minutes). /sys is never mounted into it (onnxruntime's cpuinfo library misreads
   the host's /sys under QEMU and crashes); /proc is mounted while commands run.
3. dpedge on the "Pi": `pip wheel --no-deps` of this repository (the README's command), then
   in a venv in the root `pip install 'dpedge-*.whl[litert]'` from the package index. The
   dependencies are pinned to the versions installed here (--no-pin: newest), so that a
   difference is the CPU architecture's, not a version's. The venv is cached in the root.
4. Two bundles, one per encoder format (ONNX on onnxruntime, TFLite on LiteRT), built here
   with the repository's exporter from --data (epsilon 8, seed 11, the label descriptions
   when the dataset has them) and cached; or given with --onnx-bundle/--tflite-bundle.
5. The same texts (the first --texts of the dataset's test split, spread evenly over it)
   through the public CLI on both sides: `python -m runtime.classify --bundle B --threads 1
   --json` here, and the same command in the root under QEMU_CPU=<cpu> (cortex-a72 is a
   Raspberry Pi 4, cortex-a76 a Pi 5, cortex-a53 a Pi 3 or Zero 2 W).
6. A probe (benchmarks/arm64_probe.py, through the public Python API) on both sides: the
   check cosine of each bundle (`Classifier.check_cosine`), and for every text whose label or
   scores differ beyond the tolerance, both embeddings and SimHash buckets, to say why.

Pass: every text answered on both sides; the arm64 check cosine >= CHECK_COSINE_MIN; every
score within SCORE_TOLERANCE of x86's; labels identical for at least LABEL_AGREEMENT_MIN of
the texts; and every text whose label differs has x86 and arm64 embeddings with cosine >=
EMBEDDING_COSINE_MIN (the same function computed with other rounding, near a tie between two
labels), never a broken kernel. The thresholds and why: docs/raspberry-pi.md.

Only correctness is checked. Emulated time says nothing about a real Pi's speed: QEMU
translates every ARM instruction, and the runtime's NEON kernels run tens to hundreds of
times slower than on the hardware. The times printed are this script's own cost.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import importlib.metadata as md
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from runtime.limits import TIME_SCALE_ENV  # noqa: E402  (the standard library only)

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "trec"
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "dpedge" / "arm64"

SUITE, ARCH, VARIANT = "bookworm", "arm64", "minbase"
INCLUDE = ("python3", "python3-venv", "python3-pip", "ca-certificates")
#: Bumped when the way the root is made changes, so an old cached root is not reused.
ROOT_RECIPE = 1
#: The runtime stops an encoder run that overstays its time budget (3 s for the check text at
#: load); QEMU runs the encoder 10 to 50 times slower than the host, more on a busy machine, so
#: the emulated side stretches every budget by this factor (the user-side setting a slow board
#: would use too: docs/raspberry-pi.md).
EMULATION_TIME_SCALE = 30.0

#: The device runtime's dependencies, pinned in the arm64 venv to the versions installed here.
PINNED = ("numpy", "msgpack", "onnxruntime", "ai-edge-litert")
BINFMT = Path("/proc/sys/fs/binfmt_misc")
QEMU_HANDLER = "qemu-aarch64"
WORK_IN_ROOT = "/dpedge-check"
BUNDLE_EPSILON, BUNDLE_SEED = "8", "11"
CPUS = {"cortex-a72": "Raspberry Pi 4", "cortex-a76": "Raspberry Pi 5", "cortex-a53": "Raspberry Pi 3 / Zero 2 W"}

# Pass thresholds, set from measurement (docs/raspberry-pi.md has the figures behind them).
#: The arm64 engines must reproduce the exporter's embedding of the check text at least this
#: well (the runtime itself refuses a bundle below 0.98; docs/encoder.md promises >= 0.998).
CHECK_COSINE_MIN = 0.998
#: Largest allowed |score(arm64) - score(x86)| for any label of any text. The blend's centroid
#: softmax is sharp (temperature 0.003), so a 0.9994-cosine difference in the embedding moves
#: a near-tied text's scores by up to about a quarter; measured maxima are in the doc.
SCORE_TOLERANCE = 0.25
#: Share of texts whose label must be identical on both machines: a loose floor (measured:
#: 97.7% for ONNX, 100% for TFLite), the exact count is what is reported.
LABEL_AGREEMENT_MIN = 0.90
#: A text whose label differs must still have nearly the same embedding on both machines.
EMBEDDING_COSINE_MIN = 0.998


class Skip(Exception):
    """Nothing can be emulated here (binfmt_misc cannot be mounted): exit 0 with a message."""


class CheckError(Exception):
    """A step failed: exit 1 with this message."""


class UsageError(Exception):
    """Bad arguments or inputs: exit 2."""


_T0 = time.perf_counter()


def log(msg: str) -> None:
    """Progress on stderr, so stdout holds only the table."""
    sys.stderr.write(f"[{time.perf_counter() - _T0:6.1f}s] {msg}\n")
    sys.stderr.flush()


def run(cmd: Sequence[str], *, what: str, log_file: Path | None = None, **kw: Any) -> subprocess.CompletedProcess:
    """Run a command; on failure raise CheckError with the tail of its output."""
    if log_file is not None:
        with log_file.open("ab") as f:
            r = subprocess.run(list(cmd), stdout=f, stderr=subprocess.STDOUT, check=False, **kw)
        tail = log_file.read_bytes()[-3000:].decode(errors="replace")
    else:
        r = subprocess.run(list(cmd), capture_output=True, check=False, **kw)
        tail = ((r.stdout or b"") + (r.stderr or b""))[-3000:].decode(errors="replace")
    if r.returncode != 0:
        raise CheckError(f"{what} failed (exit status {r.returncode}): {' '.join(map(str, cmd))}\n{tail}")
    return r


# --------------------------------------------------------------------------- emulation


def ensure_binfmt() -> dict[str, str]:
    """binfmt_misc mounted and QEMU's aarch64 handler enabled; returns the handler's fields.

    Raises Skip if binfmt_misc cannot be mounted, CheckError if the handler is missing.
    """
    if not (BINFMT / "status").exists():
        r = subprocess.run(["mount", "-t", "binfmt_misc", "binfmt_misc", str(BINFMT)], capture_output=True, text=True)
        if r.returncode != 0 or not (BINFMT / "status").exists():
            raise Skip(f"binfmt_misc cannot be mounted here ({(r.stderr or 'no status file').strip()}), so arm64 "
                       "binaries cannot run under QEMU on this machine")
    handler = BINFMT / QEMU_HANDLER
    if not handler.exists() or not handler.read_text().startswith("enabled"):
        if shutil.which("update-binfmts") is None or not Path("/usr/share/binfmts", QEMU_HANDLER).exists():
            raise CheckError("QEMU's aarch64 handler is not registered: apt-get install qemu-user-static binfmt-support")
        run(["update-binfmts", "--enable", QEMU_HANDLER], what="update-binfmts --enable qemu-aarch64")
    fields: dict[str, str] = {}
    for line in handler.read_text().splitlines():
        key, _, value = line.partition(" ")
        fields[key] = value
    return fields


def mirror_from_apt() -> str:
    """The Debian mirror apt uses for bookworm (deb822 sources first, then sources.list)."""
    sources = Path("/etc/apt/sources.list.d/debian.sources")
    if sources.exists():
        mirror = mirror_from_deb822(sources.read_text())
        if mirror:
            return mirror
    legacy = Path("/etc/apt/sources.list")
    if legacy.exists():
        for line in legacy.read_text().splitlines():
            words = [w for w in line.split("#")[0].split() if not w.startswith("[")]
            if len(words) >= 3 and words[0] == "deb" and words[2] == SUITE:
                return words[1]
    raise UsageError("cannot find the bookworm mirror in /etc/apt/sources.list.d/debian.sources or "
                     "/etc/apt/sources.list: pass --mirror URL")


def mirror_from_deb822(text: str) -> str | None:
    """The first URI of the first deb stanza whose Suites include bookworm itself."""
    for stanza in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if line.startswith("#") or ":" not in line or line[0].isspace():
                continue
            key, _, value = line.partition(":")
            fields[key.strip().lower()] = value.strip()
        if "deb" in fields.get("types", "").split() and SUITE in fields.get("suites", "").split():
            uris = fields.get("uris", "").split()
            if uris:
                return uris[0]
    return None


def key_of(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


@contextlib.contextmanager
def locked(cache: Path) -> Iterator[None]:
    """One run at a time per cache: two runs must not build or mount the same root."""
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".lock").open("w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def start_root(cache: Path, mirror: str) -> tuple[Path, subprocess.Popen | None, dict[str, Any]]:
    """The cached root if it exists, else start debootstrap into a temporary folder.

    Returns (final path, the running debootstrap or None, the key's contents). The caller
    waits with finish_root, so the x86 bundles can be built while debootstrap runs.
    """
    recipe = {"suite": SUITE, "arch": ARCH, "variant": VARIANT, "include": list(INCLUDE), "mirror": mirror,
              "recipe": ROOT_RECIPE}
    final = cache / f"root-{SUITE}-{ARCH}-{key_of(recipe)}"
    if (final / ".dpedge-root.json").exists():
        return final, None, recipe
    if shutil.which("debootstrap") is None:
        raise CheckError("debootstrap is not installed: apt-get install debootstrap")
    for stale in cache.glob(f"{final.name}.tmp-*"):  # left by an interrupted build
        unmount_all(stale)
        shutil.rmtree(stale, ignore_errors=True)
    tmp = cache / f"{final.name}.tmp-{os.getpid()}"
    log_file = cache / f"{final.name}.debootstrap.log"
    log_file.unlink(missing_ok=True)
    log(f"building the arm64 root with debootstrap from {mirror} (about 4 minutes, once; log: {log_file})")
    cmd = ["debootstrap", f"--arch={ARCH}", f"--variant={VARIANT}", f"--include={','.join(INCLUDE)}", SUITE,
           str(tmp), mirror]
    proc = subprocess.Popen(cmd, stdout=log_file.open("wb"), stderr=subprocess.STDOUT)
    proc.dpedge_tmp, proc.dpedge_log = tmp, log_file  # type: ignore[attr-defined]
    return final, proc, recipe


def finish_root(final: Path, proc: subprocess.Popen | None, recipe: dict[str, Any]) -> None:
    """Wait for debootstrap, check the result and move it into place."""
    if proc is None:
        return
    tmp, log_file = proc.dpedge_tmp, proc.dpedge_log  # type: ignore[attr-defined]
    if proc.poll() is None:
        log("waiting for debootstrap to finish")
    status = proc.wait()
    unmount_all(tmp)  # debootstrap unmounts what it mounted, unless it failed half-way
    if status != 0:
        tail = log_file.read_bytes()[-3000:].decode(errors="replace")
        shutil.rmtree(tmp, ignore_errors=True)
        raise CheckError(f"debootstrap failed (exit status {status}); log {log_file}:\n{tail}")
    shutil.rmtree(tmp / "var/cache/apt/archives", ignore_errors=True)  # the .debs: 0.1 GB nobody needs
    (tmp / "var/cache/apt/archives/partial").mkdir(parents=True, exist_ok=True)
    (tmp / ".dpedge-root.json").write_text(json.dumps(recipe, indent=2) + "\n")
    os.replace(tmp, final)


def unmount_all(root: Path) -> None:
    """Unmount whatever is mounted under ``root`` (deepest first)."""
    prefix = str(root.resolve()) + "/"
    with open("/proc/self/mounts") as f:
        points = [line.split()[1].encode().decode("unicode_escape") for line in f]
    for p in sorted((p for p in points if p.startswith(prefix)), key=len, reverse=True):
        subprocess.run(["umount", "-l", p], check=False)


@contextlib.contextmanager
def mounted_proc(root: Path) -> Iterator[None]:
    """/proc inside the root while commands run (Python's subprocess, pip and the engines read
    it); /sys stays out (see the module doc)."""
    target = root / "proc"
    if not os.path.ismount(target):
        run(["mount", "-t", "proc", "proc", str(target)], what="mounting /proc in the arm64 root")
    try:
        yield
    finally:
        subprocess.run(["umount", "-l", str(target)], check=False)


@dataclass
class Chroot:
    """Runs commands inside the arm64 root, with a clean environment and QEMU_CPU set."""

    root: Path
    cpu: str
    venv: str = ""
    extra_env: dict[str, str] = field(default_factory=dict)

    def env(self) -> list[str]:
        path = (f"{self.venv}/bin:" if self.venv else "") + "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        env = {"PATH": path, "HOME": "/root", "LANG": "C.UTF-8", "QEMU_CPU": self.cpu,
               TIME_SCALE_ENV: f"{EMULATION_TIME_SCALE:g}", **self.extra_env}
        return [f"{k}={v}" for k, v in env.items()]

    def cmd(self, *args: str, cwd: str = "/") -> list[str]:
        # chroot(8) then env(1): -i drops the host's environment (its pip configuration and
        # certificate paths point at host files); QEMU_CPU reaches QEMU through it.
        return ["chroot", str(self.root), "/usr/bin/env", "-i", "-C", cwd, *self.env(), *args]


# --------------------------------------------------------------------------- the "Pi" side


def host_pins() -> dict[str, str]:
    pins = {}
    for pkg in PINNED:
        try:
            pins[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            raise UsageError(f"{pkg} is not installed in {sys.executable}; run this with the project's .venv") from None
    return pins


def pip_env() -> dict[str, str]:
    """pip inside the root: the host's CA bundle (copied in) and, if set, its index and proxies."""
    env = {"PIP_CERT": "/etc/ssl/certs/dpedge-host-ca.crt", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
           "PIP_DEFAULT_TIMEOUT": os.environ.get("PIP_DEFAULT_TIMEOUT", "120"), "PIP_NO_INPUT": "1"}
    for name in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "http_proxy", "https_proxy", "no_proxy",
                 "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"):
        value = os.environ.get(name, "")
        # Only URLs the root can reach: a file:// index is a host path.
        if value and not value.startswith("file:") and "file://" not in value:
            env[name] = value
    return env


def copy_host_network_files(root: Path) -> None:
    """DNS and the CA bundle, so pip in the root reaches the index the way the host does."""
    shutil.copyfile("/etc/resolv.conf", root / "etc/resolv.conf")
    for ca in ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"):
        if Path(ca).exists():
            shutil.copyfile(ca, root / "etc/ssl/certs/dpedge-host-ca.crt")
            return
    raise CheckError("no CA bundle found on this machine to copy into the arm64 root")


def build_wheel(dest: Path) -> Path:
    """The README's `pip wheel --no-deps -w dist .`, written to ``dest`` instead of dist/."""
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(dest), "."], cwd=ROOT,
        what="building the dpedge wheel")
    wheels = sorted(dest.glob("dpedge-*-py3-none-any.whl"))
    if len(wheels) != 1:
        raise CheckError(f"expected one pure-Python dpedge wheel in {dest}, found {[w.name for w in wheels]}")
    return wheels[0]


def install_on_pi(ch: Chroot, wheel_in_root: str, constraints_in_root: str | None, log_file: Path) -> dict[str, Any]:
    """A venv in the root (cached, keyed by the pins) and the wheel installed into it."""
    pins_key = Path(ch.root, constraints_in_root.lstrip("/")).read_text() if constraints_in_root else "newest"
    venv = f"/opt/dpedge-venv-{key_of({'pins': pins_key})}"
    ready = ch.root / venv.lstrip("/") / ".dpedge-ready"
    timings: dict[str, float] = {}
    t = time.perf_counter()
    if not ready.exists():
        shutil.rmtree(ch.root / venv.lstrip("/"), ignore_errors=True)
        log(f"creating the venv {venv} in the arm64 root (cached for later runs)")
        run(ch.cmd("python3", "-m", "venv", venv), what="python3 -m venv in the arm64 root", log_file=log_file)
    timings["venv_s"] = time.perf_counter() - t
    ch.venv = venv
    ch.extra_env = pip_env()
    t = time.perf_counter()
    # The same version number is rebuilt from changed sources: remove the old install first,
    # so pip installs this wheel instead of saying "already satisfied".
    run(ch.cmd("pip", "uninstall", "--yes", "--quiet", "dpedge"), what="pip uninstall dpedge", log_file=log_file)
    log("pip install 'dpedge-*.whl[litert]' in the arm64 root" + ("" if ready.exists() else
        " (first time: downloads the aarch64 wheels of numpy, msgpack, onnxruntime, ai-edge-litert)"))
    install = ["pip", "install", "--quiet"] + (["-c", constraints_in_root] if constraints_in_root else [])
    run(ch.cmd(*install, f"{wheel_in_root}[litert]"), what="pip install dpedge[litert] in the arm64 root",
        log_file=log_file)
    ready.write_text("installed\n")
    timings["pip_install_s"] = time.perf_counter() - t
    ch.extra_env = {}
    return {"venv": venv, **timings}


# --------------------------------------------------------------------------- bundles and texts


def dataset_labels(data: Path) -> Path:
    described = data / "labels_described.txt"
    return described if described.exists() else data / "labels.txt"


def sources_digest(*folders: str) -> str:
    h = hashlib.sha256()
    for folder in folders:
        for p in sorted((ROOT / folder).rglob("*.py")):
            h.update(str(p.relative_to(ROOT)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def build_bundles(cache: Path, data: Path, log_file: Path) -> dict[str, Path]:
    """An ONNX and a TFLite bundle of --data, built with this repository's exporter and cached
    (keyed by the dataset, the exporter and runtime sources and the settings)."""
    train, labels = data / "train.jsonl", dataset_labels(data)
    key = key_of({"train": hashlib.sha256(train.read_bytes()).hexdigest(),
                  "labels": hashlib.sha256(labels.read_bytes()).hexdigest(),
                  "sources": sources_digest("exporter", "runtime"), "epsilon": BUNDLE_EPSILON, "seed": BUNDLE_SEED})
    folder = cache / "bundles" / f"{data.name}-{key}"
    out = {fmt: folder / f"{data.name}-{fmt}.dpedge" for fmt in ("onnx", "tflite")}
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    for fmt, path in out.items():
        if path.exists():
            continue
        log(f"building the {fmt} bundle of {data.name} with the exporter (cached for later runs)")
        folder.mkdir(parents=True, exist_ok=True)
        run([sys.executable, "-m", "exporter", "build", "--train", str(train), "--labels", str(labels),
             "--epsilon", BUNDLE_EPSILON, "--seed", BUNDLE_SEED, "--encoder-format", fmt, "--quiet",
             "--out", str(path)], cwd=ROOT, env=env, what=f"building the {fmt} bundle", log_file=log_file)
    return out


def read_texts(data: Path, n: int | None) -> list[str]:
    """``n`` texts spread evenly over the test split (all of them without n), one line each."""
    with (data / "test.jsonl").open(encoding="utf-8") as f:
        texts = [" ".join(json.loads(line)["text"].split()) for line in f if line.strip()]
    texts = [t for t in texts if t]
    if n is None or n >= len(texts):
        return texts
    step = len(texts) / n
    return [texts[int(i * step)] for i in range(n)]


# --------------------------------------------------------------------------- comparison


@dataclass
class Comparison:
    texts: int
    labels_identical: int
    max_score_diff: float
    p50_score_diff: float
    p95_score_diff: float
    differing_labels: list[dict[str, Any]]
    beyond_tolerance: list[dict[str, Any]]


def top2(scores: dict[str, float]) -> tuple[str, float]:
    """The best label and its margin over the second best."""
    ranked = sorted(scores.items(), key=lambda kv: -kv[1])
    return ranked[0][0], ranked[0][1] - ranked[1][1]


def compare(x86: list[dict[str, Any]], arm: list[dict[str, Any]], tolerance: float) -> Comparison:
    """Labels and scores of the same texts, answered by the CLI on both machines."""
    if len(x86) != len(arm):
        raise CheckError(f"x86 answered {len(x86)} texts and arm64 {len(arm)}")
    diffs, differing, beyond = [], [], []
    for i, (a, b) in enumerate(zip(x86, arm)):
        if a["text"] != b["text"] or set(a["scores"]) != set(b["scores"]):
            raise CheckError(f"answer {i} is for another text or label set on the two machines")
        d = max(abs(a["scores"][k] - b["scores"][k]) for k in a["scores"])
        diffs.append(d)
        row = {"index": i, "text": a["text"], "x86_label": a["label"], "arm64_label": b["label"],
               "x86_margin": top2(a["scores"])[1], "arm64_margin": top2(b["scores"])[1], "max_score_diff": d}
        if a["label"] != b["label"]:
            differing.append(row)
        if d > tolerance:
            beyond.append(row)
    ordered = sorted(diffs)
    pct = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0  # noqa: E731
    return Comparison(len(x86), len(x86) - len(differing), max(diffs, default=0.0), statistics.median(diffs) if diffs else 0.0,
                      pct(0.95), differing, beyond)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    na, nb = sum(x * x for x in a) ** 0.5, sum(y * y for y in b) ** 0.5
    return dot / (na * nb) if na and nb else 0.0


def explain(rows: list[dict[str, Any]], x86_probe: dict[str, Any], arm_probe: dict[str, Any]) -> None:
    """Add, to each differing row, how far apart the two embeddings are and how many tables hashed differently."""
    for row in rows:
        a, b = x86_probe["texts"].get(row["text"]), arm_probe["texts"].get(row["text"])
        if a and b:
            row["embedding_cosine"] = cosine(a["embedding"], b["embedding"])
            if a["buckets"] is not None and b["buckets"] is not None:
                row["tables_hashed_differently"] = sum(x != y for x, y in zip(a["buckets"], b["buckets"]))


def verdict(cmp: Comparison, check_cosine: float | None) -> list[str]:
    """Why this bundle fails the check (empty: it passes)."""
    problems = []
    if check_cosine is None or check_cosine < CHECK_COSINE_MIN:
        problems.append(f"arm64 check cosine {check_cosine} < {CHECK_COSINE_MIN}")
    if cmp.beyond_tolerance:
        problems.append(f"{len(cmp.beyond_tolerance)} texts with a score more than {SCORE_TOLERANCE} from x86's "
                        f"(max {cmp.max_score_diff:.3f})")
    if cmp.texts and cmp.labels_identical / cmp.texts < LABEL_AGREEMENT_MIN:
        problems.append(f"labels identical for only {cmp.labels_identical}/{cmp.texts} texts "
                        f"(< {LABEL_AGREEMENT_MIN:.0%})")
    for row in cmp.differing_labels:
        cos = row.get("embedding_cosine")
        if cos is None or cos < EMBEDDING_COSINE_MIN:
            problems.append(f"text {row['index']} changes label with embedding cosine {cos} < {EMBEDDING_COSINE_MIN}")
    return problems


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA,
                    help="dataset folder with train.jsonl, test.jsonl, labels.txt (default ../shared/data/trec)")
    ap.add_argument("--texts", type=int, default=None, metavar="N",
                    help="classify N texts of the test split, spread evenly (default: all of them)")
    ap.add_argument("--cpu", default="cortex-a72",
                    help=f"QEMU_CPU value(s), comma-separated ({', '.join(f'{k}: {v}' for k, v in CPUS.items())})")
    ap.add_argument("--onnx-bundle", type=Path, help="use this ONNX bundle instead of building one from --data")
    ap.add_argument("--tflite-bundle", type=Path, help="use this TFLite bundle instead of building one from --data")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help=f"root, venv and bundle cache (default {DEFAULT_CACHE})")
    ap.add_argument("--mirror", help="Debian mirror for debootstrap (default: the one apt is configured with)")
    ap.add_argument("--no-pin", action="store_true", help="install the newest dependencies in the root, not this machine's versions")
    ap.add_argument("--out", type=Path, help="also write the results as JSON")
    args = ap.parse_args(argv)
    args.cpus = [c.strip() for c in args.cpu.split(",") if c.strip()]
    if not args.cpus:
        ap.error("--cpu needs at least one CPU name")
    if args.texts is not None and args.texts < 2:
        ap.error("--texts must be at least 2")
    if bool(args.onnx_bundle) != bool(args.tflite_bundle):
        ap.error("give both --onnx-bundle and --tflite-bundle, or neither")
    return args


def preflight(args: argparse.Namespace) -> None:
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise UsageError(f"this check runs on an x86_64 Linux host (this is {platform.system()} {platform.machine()})")
    if os.geteuid() != 0:
        raise UsageError("this check needs root (debootstrap, chroot, mount): run it with sudo")
    for p in (args.data / "test.jsonl", args.data / "labels.txt") + ((args.data / "train.jsonl",) if not args.onnx_bundle else ()):
        if not p.is_file():
            raise UsageError(f"{p} not found (--data: a dataset folder as under ../shared/data)")
    for p in (args.onnx_bundle, args.tflite_bundle):
        if p is not None and not p.is_file():
            raise UsageError(f"bundle not found: {p}")


def classify_x86(bundle: Path, texts_file: Path, out: Path) -> float:
    """The CLI on this machine, with the repository's runtime."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    t = time.perf_counter()
    with texts_file.open("rb") as stdin, out.open("wb") as stdout:
        r = subprocess.run([sys.executable, "-m", "runtime.classify", "--bundle", str(bundle), "--threads", "1", "--json"],
                           stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, cwd=ROOT, env=env, check=False)
    if r.returncode != 0:
        raise CheckError(f"x86 classify of {bundle.name} failed (exit {r.returncode}): {r.stderr.decode()[-2000:]}")
    return time.perf_counter() - t


def probe(cmd_prefix: list[str], probe_path: str, bundles: dict[str, str], texts_file: str | None,
          cwd: Path | None = None, env: dict[str, str] | None = None) -> dict[str, Any]:
    cmd = [*cmd_prefix, probe_path] + [a for fmt, p in bundles.items() for a in ("--bundle", f"{fmt}={p}")]
    if texts_file:
        cmd += ["--texts", texts_file]
    r = run(cmd, what="the probe", cwd=cwd, env=env)
    return json.loads(r.stdout.decode().strip().splitlines()[-1])


def check(args: argparse.Namespace) -> dict[str, Any]:
    preflight(args)
    timings: dict[str, float] = {}
    t_all = time.perf_counter()
    binfmt = ensure_binfmt()
    mirror = args.mirror or mirror_from_apt()
    cache = args.cache.resolve()
    result: dict[str, Any] = {"command": [sys.executable, *sys.argv], "thresholds": {
        "check_cosine_min": CHECK_COSINE_MIN, "score_tolerance": SCORE_TOLERANCE,
        "label_agreement_min": LABEL_AGREEMENT_MIN, "embedding_cosine_min": EMBEDDING_COSINE_MIN}, "host": {
        "machine": platform.machine(), "python": platform.python_version(), "pins": host_pins(),
        "qemu_handler": binfmt.get("interpreter"), "qemu_flags": binfmt.get("flags")}}
    with locked(cache):
        t = time.perf_counter()
        final, proc, recipe = start_root(cache, mirror)
        cold_root = proc is not None
        try:
            t_b = time.perf_counter()
            if args.onnx_bundle:
                bundles = {"onnx": args.onnx_bundle.resolve(), "tflite": args.tflite_bundle.resolve()}
            else:
                bundles = build_bundles(cache, args.data.resolve(), cache / "bundles.log")
            timings["bundles_s"] = time.perf_counter() - t_b
        except BaseException:
            if proc is not None:
                proc.terminate()
                proc.wait()
                unmount_all(proc.dpedge_tmp)  # type: ignore[attr-defined]
            raise
        finish_root(final, proc, recipe)
        timings["root_s"] = time.perf_counter() - t
        result["root"] = {"path": str(final), "cold": cold_root, **recipe}
        if "F" not in binfmt.get("flags", ""):
            # Without the F flag the kernel looks for the interpreter inside the chroot.
            interp = final / binfmt["interpreter"].lstrip("/")
            interp.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(binfmt["interpreter"], interp)

        work = final / WORK_IN_ROOT.lstrip("/")
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        t = time.perf_counter()
        wheel = build_wheel(work)
        timings["wheel_s"] = time.perf_counter() - t
        pins = None if args.no_pin else host_pins()
        if pins:
            (work / "constraints.txt").write_text("".join(f"{k}=={v}\n" for k, v in pins.items()))
        shutil.copy2(ROOT / "benchmarks" / "arm64_probe.py", work / "arm64_probe.py")
        for fmt, path in bundles.items():
            shutil.copyfile(path, work / f"{fmt}.dpedge")
        texts = read_texts(args.data, args.texts)
        texts_file = cache / "texts.txt"
        texts_file.write_text("".join(t + "\n" for t in texts), encoding="utf-8")
        result["texts"] = {"data": str(args.data), "count": len(texts), "split": "test"}
        result["bundles"] = {fmt: str(p) for fmt, p in bundles.items()}

        log(f"x86: classifying {len(texts)} texts with each bundle")
        x86_out = {fmt: cache / f"x86-{fmt}.jsonl" for fmt in bundles}
        timings["x86_classify_s"] = sum(classify_x86(bundles[fmt], texts_file, x86_out[fmt]) for fmt in bundles)
        x86 = {fmt: read_jsonl(p) for fmt, p in x86_out.items()}

        pi_log = cache / "arm64-root-commands.log"
        pi_log.unlink(missing_ok=True)
        copy_host_network_files(final)
        with mounted_proc(final):
            ch = Chroot(final, args.cpus[0])
            uname = run(ch.cmd("uname", "-m"), what="running an arm64 binary under QEMU").stdout.decode().strip()
            if uname != "aarch64":
                raise CheckError(f"uname -m in the arm64 root says {uname!r}, expected aarch64")
            result["install"] = install_on_pi(ch, f"{WORK_IN_ROOT}/{wheel.name}",
                                              f"{WORK_IN_ROOT}/constraints.txt" if pins else None, pi_log)
            timings.update({k: v for k, v in result["install"].items() if k.endswith("_s")})
            result["runs"] = []
            for cpu in args.cpus:
                result["runs"].append(run_cpu(Chroot(final, cpu, ch.venv), cache, bundles, texts_file, x86))
        timings["total_s"] = time.perf_counter() - t_all
        result["timings"] = timings
    return result


def run_cpu(ch: Chroot, cache: Path, bundles: dict[str, Path], texts_file: Path,
            x86: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Both bundles through the CLI in the root under one QEMU_CPU (two processes at once), then the probe."""
    log(f"arm64 ({ch.cpu}, {CPUS.get(ch.cpu, 'not a Pi model')}): classifying {len(x86['onnx'])} texts "
        "with each bundle under emulation")
    t = time.perf_counter()
    procs = {}
    for fmt in bundles:
        out, err = cache / f"arm64-{ch.cpu}-{fmt}.jsonl", cache / f"arm64-{ch.cpu}-{fmt}.stderr"
        with texts_file.open("rb") as stdin, out.open("wb") as stdout, err.open("wb") as stderr:
            procs[fmt] = (subprocess.Popen(ch.cmd("python", "-m", "runtime.classify", "--bundle", f"{fmt}.dpedge",
                                                  "--threads", "1", "--json", cwd=WORK_IN_ROOT),
                                           stdin=stdin, stdout=stdout, stderr=stderr), out, err)
    arm = {}
    for fmt, (p, out, err) in procs.items():
        if p.wait() != 0:
            raise CheckError(f"arm64 classify of the {fmt} bundle failed (exit {p.returncode}): "
                             f"{err.read_bytes()[-2000:].decode(errors='replace')}")
        arm[fmt] = read_jsonl(out)
    elapsed = time.perf_counter() - t
    comparisons = {fmt: compare(x86[fmt], arm[fmt], SCORE_TOLERANCE) for fmt in bundles}
    # The probe embeds only the texts whose answers differ (emulated embedding is slow).
    odd = sorted({r["text"] for c in comparisons.values() for r in c.differing_labels + c.beyond_tolerance})
    odd_file = texts_file.with_name(f"odd-{ch.cpu}.txt")
    odd_file.write_text("".join(t + "\n" for t in odd), encoding="utf-8")
    shutil.copyfile(odd_file, ch.root / WORK_IN_ROOT.lstrip("/") / "odd.txt")
    log(f"probe: check cosines, and embeddings of the {len(odd)} texts whose answers differ")
    arm_probe = probe(ch.cmd("python", cwd=WORK_IN_ROOT), "arm64_probe.py",
                      {fmt: f"{fmt}.dpedge" for fmt in bundles}, "odd.txt" if odd else None)
    x86_probe = probe([sys.executable], str(ROOT / "benchmarks" / "arm64_probe.py"),
                      {fmt: str(p) for fmt, p in bundles.items()}, str(odd_file) if odd else None, cwd=ROOT,
                      env={**os.environ, "PYTHONPATH": str(ROOT)})
    if arm_probe["machine"] != "aarch64":
        raise CheckError(f"the probe in the root ran on {arm_probe['machine']}, not aarch64")
    out: dict[str, Any] = {"cpu": ch.cpu, "board": CPUS.get(ch.cpu), "classify_s": elapsed,
                           "arm64_versions": arm_probe["versions"], "arm64_python": arm_probe["python"],
                           "arm64_runtime": arm_probe["runtime_file"], "bundles": {}}
    for fmt, cmp in comparisons.items():
        explain(cmp.differing_labels + cmp.beyond_tolerance, x86_probe["bundles"][fmt], arm_probe["bundles"][fmt])
        check_cos = arm_probe["bundles"][fmt]["check_cosine"]
        problems = verdict(cmp, check_cos)
        out["bundles"][fmt] = {"engine": arm_probe["bundles"][fmt]["engine"], "check_cosine_arm64": check_cos,
                               "check_cosine_x86": x86_probe["bundles"][fmt]["check_cosine"], **cmp.__dict__,
                               "passed": not problems, "problems": problems}
    return out


def fmt_cos(x: float | None) -> str:
    return "none (bundle has no check)" if x is None else f"{x:.5f}"


def print_table(result: dict[str, Any]) -> None:
    rows = []
    for r in result["runs"]:
        for fmt, b in r["bundles"].items():
            rows.append([f"{r['cpu']} ({r['board'] or '-'})", f"{fmt} ({b['engine']})",
                         f"{b['labels_identical']}/{b['texts']}", f"{b['max_score_diff']:.4f}",
                         f"{b['p50_score_diff']:.2g}", fmt_cos(b["check_cosine_arm64"]), fmt_cos(b["check_cosine_x86"]),
                         "pass" if b["passed"] else "FAIL"])
    headers = ["QEMU_CPU", "bundle (engine)", "labels identical", "max abs Δscore", "p50 abs Δscore",
               "check cos arm64", "check cos x86", "result"]
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows)]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    print(f"\n## arm64 (emulated, Debian {SUITE}) against x86_64: {result['texts']['count']} texts of "
          f"{Path(result['texts']['data']).name}, score tolerance {SCORE_TOLERANCE}\n")
    print("\n".join([line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)]))
    for r in result["runs"]:
        for fmt, b in r["bundles"].items():
            for row in b["differing_labels"]:
                print(f"\n{r['cpu']} {fmt}: text {row['index']} {row['text']!r}: x86 {row['x86_label']} "
                      f"(margin {row['x86_margin']:.4f}), arm64 {row['arm64_label']} (margin {row['arm64_margin']:.4f}); "
                      f"embedding cosine {row.get('embedding_cosine', float('nan')):.5f}"
                      + (f", {row['tables_hashed_differently']} of the tables hashed differently"
                         if "tables_hashed_differently" in row else ""))
            for p in b["problems"]:
                print(f"\n{r['cpu']} {fmt}: FAIL: {p}")
    t = result["timings"]
    # Bundles are built while debootstrap runs, so a cold root's time includes them.
    root = f"root built in {t['root_s']:.0f} s" if result["root"]["cold"] else "root cached"
    print(f"\nwall time {t['total_s']:.0f} s ({root}, bundles {t['bundles_s']:.0f} s, "
          f"venv {t.get('venv_s', 0):.0f} s, pip {t.get('pip_install_s', 0):.0f} s, emulated classify "
          f"{sum(r['classify_s'] for r in result['runs']):.0f} s); arm64 versions: "
          + ", ".join(f"{k} {v}" for k, v in result["runs"][0]["arm64_versions"].items()), flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # A CI time-out or Ctrl-C must still unmount /proc from the root: turn SIGTERM into an exception.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        result = check(args)
    except Skip as exc:
        print(f"SKIP: arm64 conformance check not run: {exc}.")
        return 0
    except UsageError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    except CheckError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    print_table(result)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        log(f"wrote {args.out}")
    failed = [f"{r['cpu']} {fmt}" for r in result["runs"] for fmt, b in r["bundles"].items() if not b["passed"]]
    if failed:
        sys.stderr.write(f"arm64 conformance FAILED: {', '.join(failed)}\n")
        return 1
    log("arm64 conformance passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
