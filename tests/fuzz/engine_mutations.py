"""Structured mutations of a bundle's encoder model, each loaded by the real engine in a process
of its own: a signal, a hang or a traceback is a finding.

    python tests/fuzz/engine_mutations.py BUNDLE [--runs 500] [--seed 1] [--keep DIR] [--aimed]

The other fuzzers stop before the engine (reader_agreement.py: "Engines are not run"; the
atheris target calls `unpack`), because a model that passes the family check can still crash
onnxruntime or LiteRT, and with them the fuzzing process. This one runs each mutated bundle
through `python -m runtime.classify` in a subprocess, so a crash is an exit status, not the end
of the run. It aims at the model's structure rather than its weights: in a TFLite model every
byte outside the buffers' data (the tables, vtables, index vectors, shapes: about half of the
corpus's tiny encoder), in an ONNX model every byte (its weights are external). Each run
changes one to three of those bytes: a bit flipped, a byte set to an edge (0, 1, 2, 0x7f, 0x80,
0xff), nudged by one or two, inverted, or an aligned int32 set to -1, 2^31 - 1, 1 or 256 (a
tensor index, offset or length at its edge: -1 is an input "left out"). ``--aimed`` rewires
instead, through the format's own library (the onnx package, LiteRT's flatbuffer schema): one
node input of an ONNX graph emptied (left out) or renamed to another value of the graph, one
operator input of a TFLite subgraph pointed at another tensor.

Each run is the hostile bench's (benchmarks/hostile_bundles.py `run_cli` and `judge`): the CLI
in a sandbox with its memory and time limits, judged classified, refused (one `error:` line) or
skipped (one `skipped` line: the model loads and fails on the query), else a finding: a crash,
a hang, over memory, a traceback, terminal controls printed, or a file written. Findings are
kept (--keep, else a temporary folder) and printed with the CLI's first line; the exit status is
1 if there is any. tests/fuzz/test_fuzz_smoke.py runs it at a small fixed size on the corpus's
TFLite and ONNX bundles.
"""

from __future__ import annotations

import argparse
import collections
import random
import struct
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(ROOT), str(HERE.parent)]

import bundle_strategies as bs  # noqa: E402 - after the path above
from benchmarks.hostile_bundles import Family, judge, run_cli, tflite_rewrite  # noqa: E402
from runtime.bundle import model_family as mf  # noqa: E402
from runtime.bundle.schema import Key  # noqa: E402

TEXT = "wake me up at six"
#: What a mutated bundle is judged as: one text, classified or refused (the bench's default).
MUTATION = Family("engine mutation", "", make=lambda base: b"", texts=[TEXT])
#: The outcomes that are not findings.
EXPECTED = ("classified", "refused", "skipped")


def structure(model: bytes, encoder_format: str) -> list[int]:
    """The positions a mutation may change: all but a TFLite model's buffer data."""
    data: list[tuple[int, int]] = []
    if encoder_format == "tflite":
        fb = mf._Flat(model)
        for buffer in fb.tables(fb.root(), mf._M_BUFFERS, 10**6, "buffers"):
            first, length = fb.vector(buffer, 0, 1)
            if length:
                data.append((first, first + length))
    data.sort()
    out, at = [], 0
    for start, end in data + [(len(model), len(model))]:
        out.extend(range(at, start))
        at = max(at, end)
    return out


def mutated(model: bytes, where: list[int], rnd: random.Random) -> bytes:
    m = bytearray(model)
    for _ in range(rnd.randint(1, 3)):
        at = rnd.choice(where)
        how = rnd.randint(0, 4)
        if how == 0:
            m[at] ^= 1 << rnd.randint(0, 7)
        elif how == 1:
            m[at] = rnd.choice([0, 1, 2, 0x7F, 0x80, 0xFF])
        elif how == 2:
            m[at] = (m[at] + rnd.choice([-2, -1, 1, 2])) & 0xFF
        elif how == 3:
            m[at] ^= 0xFF
        else:
            at -= at % 4
            m[at:at + 4] = struct.pack("<i", rnd.choice([-1, 2**31 - 1, 1, 256]))[:len(m) - at]
    return bytes(m)


def rewired(model: bytes, encoder_format: str, rnd: random.Random) -> bytes:
    """One input of one node (ONNX: emptied or another value's name) or operator (TFLite: another
    tensor) changed, through the format's own library."""
    if encoder_format == "onnx":
        import onnx

        m = onnx.load_from_string(model)
        names = sorted({o for n in m.graph.node for o in n.output} | {i.name for i in m.graph.initializer}
                       | {i.name for i in m.graph.input})
        node = rnd.choice([n for n in m.graph.node if len(n.input)])
        node.input[rnd.randrange(len(node.input))] = rnd.choice(["", rnd.choice(names)])
        return m.SerializeToString()

    def change(m, _schema) -> None:
        sg = m.subgraphs[0]
        op = rnd.choice([o for o in sg.operators if o.inputs is not None and len(o.inputs)])
        inputs = list(op.inputs)
        inputs[rnd.randrange(len(inputs))] = rnd.randrange(len(sg.tensors))
        op.inputs = inputs
    return tflite_rewrite(model, change)


def classify(path: Path, sandbox: Path) -> tuple[str, str]:
    """(outcome, detail) of the CLI on one bundle, as the hostile bench runs and judges it."""
    r = run_cli(path, [TEXT], (), sandbox)
    outcome, detail = judge(MUTATION, r)
    return ("wrote " + ", ".join(r["wrote"]), detail) if r["wrote"] else (outcome, detail)


def run(bundle: Path, runs: int, seed: int, keep: Path, aimed: bool = False) -> list[tuple[Path, str, str]]:
    """Mutate (``aimed``: rewire) ``bundle``'s model ``runs`` times; returns the findings (file,
    outcome, the CLI's first line)."""
    doc = bs.decode(bundle.read_bytes())
    encoder = doc[Key.ENCODER]
    where = structure(encoder[Key.MODEL], encoder[Key.FORMAT])
    rnd = random.Random(seed)
    tally: collections.Counter[str] = collections.Counter()
    findings = []
    keep.mkdir(parents=True, exist_ok=True)
    for i in range(runs):
        path = keep / f"{bundle.stem}-{seed}-{i}.dpedge"
        model = (rewired(encoder[Key.MODEL], encoder[Key.FORMAT], rnd) if aimed
                 else mutated(encoder[Key.MODEL], where, rnd))
        path.write_bytes(bs.seal({**doc, Key.ENCODER: {**encoder, Key.MODEL: model}}))
        outcome, detail = classify(path, keep / "sandbox")
        tally[outcome] += 1
        if outcome in EXPECTED:
            path.unlink()
        else:
            findings.append((path, outcome, detail))
    kind = "rewirings" if aimed else "mutations"
    print(f"{bundle.name}: {runs} {kind} (seed {seed}) of {len(where)} structural bytes: "
          + ", ".join(f"{n} {k}" for k, n in tally.most_common()))
    return findings


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bundle", type=Path)
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--aimed", action="store_true", help="rewire one input through the format's library instead")
    ap.add_argument("--keep", type=Path,
                    help="where mutated bundles that are findings stay (default: a temporary folder)")
    args = ap.parse_args(argv)
    findings = run(args.bundle, args.runs, args.seed, args.keep or Path(tempfile.mkdtemp(prefix="engine-mutations-")),
                   aimed=args.aimed)
    for path, outcome, detail in findings:
        print(f"finding: {path}: {outcome}: {detail}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
