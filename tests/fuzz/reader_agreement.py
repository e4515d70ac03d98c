"""Differential fuzzing of the three readers: the same hostile bundles and strings, asked of the
Python runtime, the Java core and the web runtime; any answer that differs is a finding.

    python tests/fuzz/reader_agreement.py [--bundles 2000] [--strings 2000] [--seed 1] [--keep DIR]

The committed corpus (format/1/corpus) checks each reader against expectations someone wrote
down; this checks the readers against each other on inputs nobody wrote down. Each bundle is a
corpus `accept` bundle: six in ten mutated by tests/bundle_strategies.mutate (the mutations of
the Hypothesis properties and the atheris target: fields dropped, retyped, out of bounds,
repeated keys, lying msgpack headers, look-alike labels, drifting privacy facts, tokenizer JSON
edits, model bytes flipped; then sealed, truncated or bit-flipped), a quarter given a tokenizer
variant (`tokenizer_variant`), the rest as it is, each with four random texts; a statistics
bundle (format 1.1) is read with the corpus's encoder pack, and one bundle in ten with its own
encoder is given that pack too (a refusal). Strategies aimed at edges: two faults in one sealed
file (`bs.mutate` with count 2), a head's epsilon at the accountant's bound or one double
below it (`accountant_edge`), and classes tied in real arithmetic (`tie`), where only the
contract's exact arithmetic and order give one answer. Each reader answers, per bundle,
either its refusal (code and path) or its labels, the token ids and `has_token` of a set of
texts, and the scores of a unit vector; per string, the text rules (escape, escape_json, key,
unprintable, unassigned, shows_something). Answers must be equal; scores within the corpus's
tolerance. Engines are not run: the corpus runs them end to end.

The readers answer from the folder of questions: Python in this process, Java through
`android_demo/core/run-tests.sh --answers DIR` (the test class org.dpedge.core.Answers), the
web runtime through `node web/scripts/answers.mjs DIR` (its built dist/). It prints a table
and exits 1 on any disagreement, or 2 when a reader cannot run. tests/fuzz/
test_reader_agreement.py runs it at a small fixed size; this is the long run.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(ROOT), str(HERE.parent), str(ROOT / "format" / "tools")]

import bundle_strategies as bs  # noqa: E402 - after the path above
import cases  # noqa: E402 - format/tools: the accountant's edge
from runtime import bundle as fmt  # noqa: E402
from runtime.bundle.tokenizer_family import check_tokenizer_json  # noqa: E402
from runtime.errors import BundleError  # noqa: E402
from runtime.scoring import Scorer  # noqa: E402
from runtime.text import escape, escape_json, label_key, shows_something, unassigned, unprintable  # noqa: E402
from runtime.tokenizer import TextTokenizer  # noqa: E402

CORPUS = ROOT / "format" / "1" / "corpus"
SCORE_TOLERANCE = json.loads((CORPUS / "cases.json").read_text(encoding="utf-8"))["tolerance"]["scores"]

#: Texts every accepted bundle tokenizes: cased and accented Latin, Greek final sigma, Turkish
#: dotted I, ligatures, CJK (with a supplementary ideograph), Hangul, stacked and newer combining
#: marks, the tokenizer's own special tokens, controls and zero-width characters, a word past
#: max_input_chars_per_word, fullwidth forms and curly punctuation.
TEXTS = ["wake me up at 6:30 tomorrow", "Café crème, naïve ΣΑΣ İstanbul ﬁle ß", "东京明天 𠮷野家 한국어",
         "e\u0301 x\u0323\u0301 \u1ac1 \U000105c9", "[CLS] a [SEP] mid[UNK]word ##x", "tabs\tand\nnew \x01\x7f \u200b\ufeff",
         "a" * 120, "ＡＢＣ！？ don't—“quoted”", "", "\u200b\u0301"]

#: Code-point ranges random strings are drawn from, each equally likely: where the text rules and
#: the tokenizer have their cases (controls, marks, format characters, unassigned and private-use
#: code points, noncharacters, blanks, look-alikes, CJK, emoji). No surrogates: a string of the
#: contract is Unicode scalar values.
RANGES = [(0x20, 0x7E), (0x00, 0x1F), (0x7F, 0x9F), (0xA0, 0x24F), (0x300, 0x36F), (0x370, 0x3FF), (0x400, 0x4FF),
          (0x590, 0x6FF), (0x900, 0x97F), (0x1100, 0x11FF), (0x1AB0, 0x1AFF), (0x2000, 0x206F), (0x2070, 0x2BFF),
          (0x2800, 0x28FF), (0x3000, 0x30FF), (0x3130, 0x318F), (0x4E00, 0x4EFF), (0xAC00, 0xAC7F),
          (0xD7B0, 0xD7FF), (0xE000, 0xE0FF), (0xFB00, 0xFB4F), (0xFDD0, 0xFDEF), (0xFE00, 0xFE6F),
          (0xFF00, 0xFFFF), (0x10000, 0x107FF), (0x1D400, 0x1D7FF), (0x1F300, 0x1FAFF), (0x20000, 0x2A6DF),
          (0x2FFF0, 0x3134F), (0xE0000, 0xE01EF), (0xF0000, 0xF00FF), (0x10FFF0, 0x10FFFF)]


def random_string(rng: random.Random) -> str:
    """0 to 12 code points, each from a random one of RANGES (runs of one range half the time)."""
    out: list[str] = []
    lo, hi = rng.choice(RANGES)
    for _ in range(rng.randint(0, 12)):
        if rng.random() < 0.5:
            lo, hi = rng.choice(RANGES)
        out.append(chr(rng.randint(lo, hi)))
    return "".join(out)


def unit_vector(rng: random.Random, dim: int) -> list[float]:
    """A float32 unit vector as JSON floats (exact: every float32 is a float64)."""
    x = np.array([rng.gauss(0.0, 1.0) for _ in range(dim)], dtype=np.float32)
    x /= np.float32(np.linalg.norm(x)) or np.float32(1.0)
    return [float(v) for v in x]


#: The corpus's encoder packs (format 1.1) by digest: a bundle that names one is given it; one
#: bundle in ten with its own encoder is given the first (a refusal).
PACKS = {p.read_bytes()[-32:]: p for p in sorted((CORPUS / "packs").glob("*.dpedge-encoder"))}
PACK = CORPUS / "packs" / "tiny-onnx.dpedge-encoder"


def bases() -> list[dict[str, Any]]:
    """The documents of the corpus's accepted bundles the mutations start from."""
    docs = []
    for path in sorted((CORPUS / "accept").rglob("*.dpedge")):
        try:
            docs.append(bs.decode(path.read_bytes()))
        except Exception:  # noqa: BLE001 - a bundle Python's msgpack cannot round-trip (nesting at the limit)
            continue
    return docs


def tokenizer_variant(doc: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """A copy of ``doc`` whose tokenizer stays in the family but differs: random normalizer
    flags and max_input_chars_per_word, up to 40 vocabulary entries renamed to random strings
    (whole words or ``##`` pieces), so that the readers' tokenizers meet odd vocabularies; the
    post-processor in the other form (BERT's template as RobertaProcessing, or back), and added
    tokens matched in the normalized text where the family allows it (1.2: MPNet's shapes)."""
    doc = copy.deepcopy(doc)
    if "encoder" not in doc:  # a statistics bundle: its tokenizer is its pack's
        return doc
    tok = json.loads(doc["encoder"]["tokenizer_json"])
    norm = tok["normalizer"]
    for flag in ("clean_text", "handle_chinese_chars", "lowercase"):
        norm[flag] = rng.random() < 0.5
    norm["strip_accents"] = rng.choice([None, True, False])
    tok["model"]["max_input_chars_per_word"] = rng.choice([1, 2, 3, 5, 8, 100, rng.randint(1, 100)])
    special = {t["content"] for t in tok.get("added_tokens", [])} | {tok["model"]["unk_token"]}
    entries = list(tok["model"]["vocab"].items())
    for _ in range(rng.randint(0, 40)):
        i = rng.randrange(len(entries))
        new = rng.choice(["", "##"]) + random_string(rng)[:6]
        if entries[i][0] not in special and new.strip() and new not in tok["model"]["vocab"]:
            entries[i] = (new, entries[i][1])
    tok["model"]["vocab"] = dict(entries)
    post = tok["post_processor"]
    if rng.random() < 0.3:  # the same two ids in the other post-processor form
        first, last = _ends(post, tok["model"]["vocab"])
        tok["post_processor"] = {"type": "RobertaProcessing", "sep": last, "cls": first, "trim_offsets": True,
                                 "add_prefix_space": rng.random() < 0.5} if post["type"] == "TemplateProcessing" else {
            "type": "TemplateProcessing", "single": [{"SpecialToken": {"id": first[0], "type_id": 0}},
                                                     {"Sequence": {"id": "A", "type_id": 0}},
                                                     {"SpecialToken": {"id": last[0], "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}],
            "special_tokens": {t: {"id": t, "ids": [i], "tokens": [t]} for t, i in (first, last)}}
    vocab = tok["model"]["vocab"]
    lower = [t for t in vocab if t.isascii() and t.isprintable() and " " not in t and t == t.lower() and t][:200]
    for _ in range(rng.randint(0, 3) if lower else 0):  # words and pieces matched as added tokens, after lower-casing
        content = rng.choice(lower)
        tok["added_tokens"].append({"id": vocab[content], "content": content, "single_word": False,
                                    "lstrip": rng.random() < 0.5, "rstrip": rng.random() < 0.5, "normalized": True,
                                    "special": True})
    for t in tok["added_tokens"]:
        t["lstrip"], t["rstrip"] = t["lstrip"] or rng.random() < 0.2, t["rstrip"] or rng.random() < 0.2
    doc["encoder"]["tokenizer_json"] = json.dumps(tok, ensure_ascii=rng.random() < 0.5)
    return doc


def _ends(post: dict[str, Any], vocab: dict[str, int]) -> tuple[list[Any], list[Any]]:
    """The post-processor's first and last special tokens as [token, id]."""
    if post["type"] == "RobertaProcessing":
        return post["cls"], post["sep"]
    name = lambda piece: piece["SpecialToken"]["id"]  # noqa: E731
    return [[t, vocab[t]] for t in (name(post["single"][0]), name(post["single"][2]))]


def accountant_edge(doc: dict[str, Any], rng: random.Random) -> tuple[str, dict[str, Any]]:
    """A head bundle whose epsilon is the least its numbers allow, or one double less: random
    noise multiplier, sample rate, steps and delta (cases.at_edge). A reader whose bound differs
    from the contract's in the last bit answers the other way."""
    doc = copy.deepcopy(doc)
    edge = (rng.uniform(0.3, 60.0), rng.choice([1.0, rng.uniform(1e-3, 1.0)]), rng.randint(1, 3000),
            10.0 ** rng.uniform(-12, -3))
    accepted = rng.random() < 0.5
    cases.at_edge(doc, edge, accepted=accepted)
    return f"accountant edge ({'at' if accepted else 'one double below'} the bound)", doc


def tie(doc: dict[str, Any], rng: random.Random) -> tuple[str, dict[str, Any], list[float]]:
    """A blend whose classes 0 and 1 tie in real arithmetic for a query of equal coordinates
    (`cases.tie`, a random pattern): rounding alone picks the label, so only the contract's
    order gives Python's answer."""
    doc = copy.deepcopy(doc)
    cases.tie(doc, np.random.default_rng(rng.getrandbits(32)), pull=rng.random() < 0.5)
    dim = doc["subspace"]["origin"]["shape"][0]
    return "tie in real arithmetic", cases.composed(doc), [float(np.float32(1.0 / np.sqrt(dim)))] * dim


def questions(folder: Path, n_bundles: int, n_strings: int, seed: int) -> dict[str, Any]:
    """Writes the mutated bundles into ``folder`` and returns the questions (the texts, the
    strings, and per bundle its file and, once Python has read it, its vector)."""
    rng = random.Random(seed)
    docs = bases()
    heads = [d for d in docs if "head" in d.get("releases", {})]
    blends = [d for d in docs if "class_sums" in d.get("releases", {}) and "subspace" in d]
    rows = []
    for i in range(n_bundles):
        doc, kind, x = rng.choice(docs), rng.random(), None
        if kind < 0.5:  # hostile: most are refused, each with a code and a path every reader must name
            how, blob = bs.mutate(doc, bs.Dice(rng))
        elif kind < 0.58:  # two faults in one sealed file: every reader must name the same one
            how, blob = bs.mutate(doc, bs.Dice(rng), count=2, ending="seal")
            how = f"two faults: {how}"
        elif kind < 0.66 and heads:  # the accountant's edge
            how, edged = accountant_edge(rng.choice(heads), rng)
            blob = bs.seal(edged)
        elif kind < 0.74 and blends:  # an exact tie in real arithmetic
            how, tied, x = tie(rng.choice(blends), rng)
            blob = bs.seal(tied)
        elif kind < 0.9:  # accepted, with a tokenizer of its own
            how, blob = "tokenizer variant", bs.seal(tokenizer_variant(doc, rng))
        else:  # accepted as it is: new texts and vectors
            how, blob = "as it is", bs.seal(doc)
        name = f"b{i:05d}.dpedge"
        (folder / name).write_bytes(blob)
        named = doc.get("encoder_pack")
        given = PACKS.get(bytes(named), PACK) if isinstance(named, bytes) else PACK if rng.random() < 0.1 else None
        rows.append({"file": name, "how": how, "texts": [random_string(rng) for _ in range(4)],
                     "pack": None if given is None else str(given), **({} if x is None else {"x": x})})
    strings = [random_string(rng) for _ in range(n_strings)] + TEXTS
    return {"texts": TEXTS, "strings": strings, "bundles": rows, "seed": seed}


def python_answers(folder: Path, q: dict[str, Any]) -> dict[str, Any]:
    """The Python runtime's answers; fills in each accepted bundle's vector ``x`` in ``q``."""
    rng = random.Random(q["seed"] + 1)
    packs = {str(p): fmt.load_pack(p) for p in PACKS.values()}
    out = []
    for row in q["bundles"]:
        try:
            b = fmt.unpack((folder / row["file"]).read_bytes(), pack=packs[row["pack"]] if row["pack"] else None)
            tok = TextTokenizer(check_tokenizer_json(b.encoder.tokenizer_json), b.encoder.max_length,
                                b.encoder.text_prefix)
            texts = q["texts"] + row["texts"]
            x = unit_vector(rng, b.encoder.dim)  # drawn for every bundle: the sequence stays the seed's
            row["x"] = row.get("x", x)
            scores = Scorer(b).scores(np.asarray(row["x"], np.float32)[None, :])[0]
            out.append({"labels": list(b.labels), "ids": [tok.encode_one(t) for t in texts],
                        "has": [tok.has_token(t) for t in texts], "scores": [float(s) for s in scores]})
        except BundleError as e:
            out.append({"code": e.code, "path": e.path})
    rules = [{"escaped": escape(s), "escaped_json": escape_json(json.dumps(s, ensure_ascii=False)),
              "key": label_key(s), "unprintable": None if unprintable(s) is None else ord(unprintable(s)),
              "unassigned": None if unassigned(s) is None else ord(unassigned(s)),
              "shows_something": shows_something(s)} for s in q["strings"]]
    return {"bundles": out, "strings": rules}


def _run(command: list[str], answers: Path) -> dict[str, Any]:
    r = subprocess.run(command, capture_output=True, text=True, timeout=3600, cwd=ROOT)
    if r.returncode != 0 or not answers.is_file():
        sys.exit(f"reader_agreement: {' '.join(command)} failed ({r.returncode}):\n{(r.stdout + r.stderr)[-3000:]}")
    return json.loads(answers.read_text(encoding="utf-8"))


def java_answers(folder: Path) -> dict[str, Any]:
    return _run(["bash", str(ROOT / "android_demo" / "core" / "run-tests.sh"), "--answers", str(folder)],
                folder / "answers-java.json")


def _dist_is_stale() -> bool:
    """Whether web/dist is missing or older than a source it is built from (format/ or web/src/):
    a stale build would answer for code that is no longer there."""
    built = ROOT / "web" / "dist" / "index.js"
    if not built.is_file():
        return True
    sources = [*(ROOT / "web" / "src").rglob("*.ts"), *(ROOT / "format" / "1").glob("*.json")]
    return max(p.stat().st_mtime for p in sources) > built.stat().st_mtime


def web_answers(folder: Path) -> dict[str, Any]:
    if _dist_is_stale():
        subprocess.run(["npm", "run", "-s", "build"], cwd=ROOT / "web", check=True, capture_output=True)
    return _run(["node", str(ROOT / "web" / "scripts" / "answers.mjs"), str(folder)], folder / "answers-web.json")


def differs(want: dict[str, Any], got: dict[str, Any]) -> str | None:
    """How one reader's answer differs from Python's, or None."""
    if ("code" in want) != ("code" in got):
        return f"python {'refuses' if 'code' in want else 'accepts'}: {_short(want)}; this reader: {_short(got)}"
    for key in want:
        if key == "scores":
            if len(want[key]) != len(got[key]) or any(abs(a - b) > SCORE_TOLERANCE for a, b in zip(want[key], got[key])):
                return f"scores {want[key]} vs {got[key]}"
        elif want[key] != got.get(key):
            return f"{key}: {str(want[key])[:200]} vs {str(got.get(key))[:200]}"
    return None


def _short(a: dict[str, Any]) -> str:
    return f"{a['code']} at '{a['path']}'" if "code" in a else f"labels {a['labels']}"


READERS: dict[str, Callable[[Path], dict[str, Any]]] = {"java": java_answers, "web": web_answers}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bundles", type=int, default=2000)
    p.add_argument("--strings", type=int, default=2000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--readers", default="java,web", help="which readers besides Python (java,web)")
    p.add_argument("--keep", type=Path, help="write the bundles and answers here and keep them")
    args = p.parse_args(argv)
    folder = args.keep or Path(tempfile.mkdtemp(prefix="dpedge-agreement-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        q = questions(folder, args.bundles, args.strings, args.seed)
        want = python_answers(folder, q)
        (folder / "questions.json").write_text(json.dumps(q), encoding="utf-8")
        refused = [a for a in want["bundles"] if "code" in a]
        print(f"{args.bundles} bundles (seed {args.seed}): Python accepts {args.bundles - len(refused)}, refuses "
              f"{len(refused)} with {len({a['code'] for a in refused})} codes; {len(q['strings'])} strings\n")
        print(f"| reader | bundles answered | bundle disagreements | strings answered | string disagreements |")
        print("|---|---|---|---|---|")
        bad = 0
        for name in args.readers.split(","):
            got = READERS[name](folder)
            found = [(r["file"], r["how"], d) for r, w, g in zip(q["bundles"], want["bundles"], got["bundles"])
                     if (d := differs(w, g))]
            texts = [(s, f"{w} vs {g}") for s, w, g in zip(q["strings"], want["strings"], got["strings"]) if w != g]
            if len(got["bundles"]) != len(want["bundles"]) or len(got["strings"]) != len(want["strings"]):
                found.append(("-", "-", "a different number of answers"))
            print(f"| {name} | {len(got['bundles'])} | {len(found)} | {len(got['strings'])} | {len(texts)} |")
            for f, how, d in found[:10]:
                print(f"  {name} {f} ({how}): {escape(d)}", file=sys.stderr)
            for s, d in texts[:10]:
                print(f"  {name} string {escape(json.dumps(s))}: {escape(d)}", file=sys.stderr)
            bad += len(found) + len(texts)
        return 1 if bad else 0
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
