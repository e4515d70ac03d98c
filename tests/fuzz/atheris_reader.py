"""Coverage-guided fuzzing of the bundle reader: atheris (libFuzzer) on `runtime.bundle.unpack`.

    python tests/fuzz/atheris_reader.py --seeds-from A.dpedge [--seeds-from B.dpedge ...] CORPUS [flags]
    python tests/fuzz/atheris_reader.py CORPUS -max_total_time=1200 -timeout=10 -rss_limit_mb=2048
    python tests/fuzz/atheris_reader.py crash-<sha1>          # re-run one saved input

It lives in tests/ rather than benchmarks/ because it is a test harness, not a measurement: it
shares the document code of tests/bundle_strategies.py (the seeds, the mutations) and its
bounded run is a test (tests/fuzz/test_fuzz_smoke.py); benchmarks/ holds scripts that print
tables of numbers.

An input is one mode byte and bytes. Even mode: the bytes are a document without its digest
entry, and the target appends the entry (schema.DIGEST_TAIL and the true SHA-256), so that
libFuzzer's mutations reach everything after the checksum. Odd mode: the bytes are the file as
it is (the container's checks: digest, truncation, pre-release bundles). ``--seeds-from`` writes
each real bundle given, shrunk by bundle_strategies.tiny_document, in both modes, and a
pre-release file, into the corpus folder. The custom mutator alternates libFuzzer's byte
mutations with bundle_strategies.mutate (its `Dice` seeded by libFuzzer's seed), so inputs stay
documents often enough to reach the relations, the text rules and the model and tokenizer
families; a dictionary of the format's keys as msgpack strings is passed unless -dict= is.

A finding is any exception from unpack but BundleError, a BundleError message of more than
one line, or an accepted bundle whose scores are not finite (runtime.scoring.Scorer, blend);
atheris prints the traceback and libFuzzer saves the input (crash-*, timeout-*, oom-*).
``--known TYPE:FILE:FUNCTION`` (repeatable) counts an already reported finding instead of
stopping, for long runs while its fix is pending (counts are printed at 1, 2, 4, 8... inputs).
``--last-input PATH`` writes each input (and each input the mutator starts from, to PATH.mutating)
there first: libFuzzer cannot save the input of an out-of-memory kill in a Python target.
"""

from __future__ import annotations

import collections
import hashlib
import random
import sys
import tempfile
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

KNOWN: set[tuple[str, str, str]] = set()
SEEN: collections.Counter = collections.Counter()
LAST: list[Path] = []


def _options(argv: list[str]) -> tuple[list[str], list[Path]]:
    """Our options out of argv (the rest is libFuzzer's): --seeds-from PATH, --known T:F:F."""
    rest, seeds, i = [argv[0]], [], 1
    while i < len(argv):
        if argv[i] in ("--seeds-from", "--known", "--last-input") and i + 1 < len(argv):
            if argv[i] == "--seeds-from":
                seeds.append(Path(argv[i + 1]))
            elif argv[i] == "--last-input":
                LAST.append(Path(argv[i + 1]))
            else:
                KNOWN.add(tuple(argv[i + 1].split(":", 2)))
            i += 2
        else:
            rest.append(argv[i])
            i += 1
    return rest, seeds


def write_seeds(corpus: Path, bundles: list[Path]) -> int:
    """Each bundle shrunk, as a document to reseal (mode 0) and as a file (mode 1), and a
    pre-release file; returns how many seeds were written."""
    import msgpack

    import bundle_strategies as bs

    corpus.mkdir(parents=True, exist_ok=True)
    seeds = {}
    for path in bundles:
        blob = bs.seal(bs.tiny_document(path.read_bytes()))
        seeds[f"seed-{path.stem}-document"] = b"\x00" + blob[:-41]
        seeds[f"seed-{path.stem}-file"] = b"\x01" + blob
    payload = msgpack.packb({"labels": ["a", "b"]})
    seeds["seed-pre-release-4.0"] = b"\x01" + msgpack.packb(
        {"format": "dpedge-bundle", "version": [4, 0], "checksum": {"algorithm": "sha256",
                                                                    "digest": hashlib.sha256(payload).digest()},
         "payload": payload}, use_bin_type=True)
    for name, data in seeds.items():
        (corpus / name).write_bytes(data)
    return len(seeds)


def write_dictionary(folder: Path) -> Path:
    """libFuzzer's -dict: every key of the format, a few values, as msgpack strings."""
    import msgpack

    from runtime.bundle import schema

    words = {f.key for f in schema.FIELDS} | {schema.Key.DTYPE, schema.Key.SHAPE, schema.Key.DATA, "<f4", "<i4", "<i2",
                                              schema.FORMAT_NAME, schema.PRE_RELEASE_NAME, *schema.ENCODER_FORMATS,
                                              *schema.ENCODER_INPUTS, *schema.STATISTICS}
    def escaped(raw: bytes) -> str:
        return "".join("\\x%02x" % b for b in raw)

    lines = [f'kw{i}="{escaped(msgpack.packb(w))}"' for i, w in enumerate(sorted(words))]
    lines.append(f'tail="{escaped(schema.DIGEST_TAIL)}"')
    path = folder / "bundle.dict"
    path.write_text("\n".join(lines) + "\n")
    return path


def main(argv: list[str] | None = None) -> None:
    import atheris

    args, seeds = _options(list(sys.argv if argv is None else argv))
    # First, before anything imports runtime: only modules imported inside this block are
    # instrumented, and only the reader's (runtime/__init__ imports the engines too).
    with atheris.instrument_imports(include=["runtime.bundle", "runtime.text", "runtime.scoring", "runtime.simhash"]):
        from runtime.bundle import unpack
        from runtime.bundle.schema import DIGEST_TAIL, TAIL_BYTES
        from runtime.errors import BundleError
        from runtime.scoring import Scorer
    import msgpack
    import numpy as np

    import bundle_strategies as bs

    corpora = [Path(a) for a in args[1:] if not a.startswith("-")]
    if seeds:
        if not corpora:
            sys.exit("--seeds-from needs a corpus folder to write them to")
        print(f"# {write_seeds(corpora[0], seeds)} seeds in {corpora[0]}", file=sys.stderr)
    if not any(a.startswith("-dict=") for a in args) and not any(p.is_file() for p in corpora):
        args.append(f"-dict={write_dictionary(Path(tempfile.mkdtemp(prefix='dpedge-fuzz-')))}")

    def test_one_input(data: bytes) -> None:
        if LAST:
            LAST[0].write_bytes(data)
        if not data:
            return
        body = data[1:]
        blob = body if data[0] & 1 else body + DIGEST_TAIL + hashlib.sha256(body).digest()
        try:
            b = unpack(blob)
        except BundleError as exc:
            if "\n" in str(exc):
                raise AssertionError(f"a BundleError of more than one line: {str(exc)[:300]!r}") from None
            return
        except Exception as exc:  # noqa: BLE001 - the finding, unless already known
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            signature = (type(exc).__name__, Path(frame.filename).name, frame.name)
            if signature in KNOWN:
                SEEN[signature] += 1
                n = SEEN[signature]
                if n & (n - 1) == 0:  # libFuzzer ends the process without Python's atexit: report as it goes
                    print(f"# known finding {':'.join(signature)}: {n} inputs so far", file=sys.stderr)
                return
            raise
        x = np.eye(b.encoder.dim)[:1]
        scores = Scorer(b).scores(x)
        if not np.isfinite(scores).all():
            raise AssertionError(f"an accepted bundle scores {scores!r}")

    def mutator(data: bytes, max_size: int, seed: int) -> bytes:
        if LAST:
            LAST[0].with_suffix(".mutating").write_bytes(seed.to_bytes(8, "little") + data)
        rng = random.Random(seed)
        if len(data) < 2 or rng.random() < 0.5:
            return atheris.Mutate(data, max_size)
        mode, body = data[:1], data[1:]
        sealed = body + DIGEST_TAIL + bytes(32) if not mode[0] & 1 else body
        try:
            doc = msgpack.unpackb(sealed, raw=False, strict_map_key=False)
            if not isinstance(doc, dict):
                raise ValueError
            doc.pop("sha256", None)
            _, blob = bs.mutate(doc, bs.Dice(rng))
        except Exception:  # noqa: BLE001 - not a document (yet): libFuzzer's mutations then
            return atheris.Mutate(data, max_size)
        out = mode + (blob if mode[0] & 1 else blob[:-TAIL_BYTES])
        return out if len(out) <= max_size else atheris.Mutate(data, max_size)

    atheris.Setup(args, test_one_input, custom_mutator=mutator)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
