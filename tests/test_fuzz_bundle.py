"""The bundle reader under fuzzing: CI's short run of benchmarks/fuzz_bundle.py, and regression
cases for what the long runs found (docs/reliability.md).

The reader must either load a bundle that keeps every promise of the format or raise
BundleError with a short message: never another exception, never a hang, never memory out of
proportion to the input.
"""

import copy
import hashlib
import random
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT
from runtime import BundleError
from runtime import bundle as fmt

sys.path.insert(0, str(ROOT / "benchmarks"))
import fuzz_bundle as fz  # noqa: E402

try:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - hypothesis is in the dev extra
    given = None


@pytest.fixture(scope="module")
def tiny(random_bundle) -> fz.Base:
    """The real test bundle with a two-byte model and a short tokenizer (unpack runs neither)."""
    return fz.make_base("tiny", fz.tiny_bundle(random_bundle.read_bytes()))


LIMITS = fz.Limits(max_seconds=2.0, mem_ratio=4.0, mem_slack=4 << 20)


def outcome(blob: bytes) -> fz.Outcome:
    """The reader on one input, timed and with its memory traced."""
    return fz.run_one(blob, LIMITS)


def test_real_bundles_are_valid(random_bundle, tiny):
    fz.check_valid(fmt.load(random_bundle))
    fz.check_valid(fmt.unpack(tiny.data))


def test_header_walker_finds_every_container(tiny):
    hs = fz.headers(tiny.data)
    assert hs[0].offset == 0 and hs[0].length == 4  # the outer map's four keys
    payload_hs = fz.headers(tiny.outer["payload"])
    assert sum(1 for h in payload_hs if 0x80 <= h.code <= 0x8F or h.code in (0xDE, 0xDF)) >= 8  # maps


if given is not None:
    @settings(max_examples=2000, derandomize=True, deadline=None, database=None, print_blob=True,
              suppress_health_check=list(HealthCheck))
    @given(kind=st.sampled_from(fz.KINDS), rnd=st.randoms(use_true_random=True))
    def test_fuzz_smoke(tiny, kind, rnd):
        """2,000 mutated bundles through Hypothesis (deterministic: derandomized, no database)."""
        out = outcome(fz.make_input(rnd, kind, tiny))
        assert not out.finding, f"{kind}: {out.result}: {out.detail}"
else:  # pragma: no cover
    def test_fuzz_smoke():
        pytest.skip("hypothesis is not installed (pip install -e '.[dev]')")


def test_fuzz_script_runs_clean(random_bundle, tmp_path):
    """The benchmark script itself, briefly: both bases, load() on files, and the special files."""
    r = subprocess.run([sys.executable, "benchmarks/fuzz_bundle.py", "--bundle", str(random_bundle), "--inputs", "400",
                        "--seed", "3", "--full-every", "100", "--load-every", "10", "--findings", str(tmp_path)],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    out = r.stdout
    assert "| **total** | 400 |" in out and "findings       0" in out
    for case in ("missing file", "directory", "/dev/zero", "FIFO with no writer"):
        line = next(x for x in out.splitlines() if case in x)
        assert "BundleError" in line and "FINDING" not in line, line


def test_a_finding_is_reported_and_fails_the_run(random_bundle, tmp_path, monkeypatch):
    """The harness is not blind: a reader that leaks a ValueError is caught as 'other'."""
    def broken(data):
        raise ValueError("boom")
    monkeypatch.setattr(fmt, "unpack", broken)
    out = outcome(b"\x80")
    assert out.result == "other" and "ValueError: boom" in out.detail
    monkeypatch.undo()
    assert outcome(b"\x80").result == "BundleError"


# ----------------------------------------------------------------------------- regressions


def reseal(base: fz.Base, payload_bytes: bytes) -> bytes:
    return fz.seal(payload_bytes, {"format": fmt.FORMAT_NAME, "version": list(fmt.FORMAT_VERSION)})


def splice(base: fz.Base, path: tuple, raw: bytes) -> bytes:
    """The payload with raw msgpack bytes at `path`, re-sealed with a correct checksum."""
    return reseal(base, fz.pack_spliced(copy.deepcopy(base.payload), {path: raw}))


def expect_error(blob: bytes, *phrases: str, max_chars: int = 300) -> str:
    out = outcome(blob)
    assert out.result == "BundleError", f"{out.result}: {out.detail}"
    assert len(out.detail) <= max_chars, out.detail
    for phrase in phrases:
        assert phrase in out.detail, out.detail
    return out.detail


@pytest.mark.parametrize("shape", [[0, 2**64 - 1, 7], [0, 2**62, 2**62], [2**63 - 1, 2**31, 0], [0, 2**63, 1]])
@pytest.mark.parametrize("path", [("votes",), ("lsh", "hyperplanes")])
def test_zero_size_array_with_huge_dimensions(tiny, shape, path):
    """Found by fuzzing: no elements passed the byte-length check, then numpy's reshape raised ValueError."""
    p = copy.deepcopy(tiny.payload)
    rec = p[path[0]] if len(path) == 1 else p[path[0]][path[1]]
    rec.update(shape=shape, data=b"")
    expect_error(reseal(tiny, fz.pack(p)), f"field '{'.'.join(path)}.shape' {shape}", "dimension too large")


@pytest.mark.parametrize("path,phrase", [
    (("votes", "shape"), "field 'votes.shape' must be 3 non-negative integers, got [[[[...]]]]"),
    (("lsh", "hyperplanes", "shape"), "field 'lsh.hyperplanes.shape' must be 3 non-negative integers, got [[[[...]]]]"),
    (("encoder", "format"), "field 'encoder.format' is array, expected string"),
])
def test_deeply_nested_value_in_a_message(tiny, path, phrase):
    """Found by fuzzing: repr() of 1,000 nested arrays in an error message raised RecursionError."""
    expect_error(splice(tiny, path, b"\x91" * 1000 + b"\xc0"), phrase)


def test_deeply_nested_outer_fields():
    for key in ("format", "version"):
        outer = {"format": fmt.FORMAT_NAME, "version": [1, 2], "checksum": {}, "payload": b""}
        blob = fz.pack_spliced(outer, {(key,): b"\x91" * 1000 + b"\xc0"})
        expect_error(blob, "[[[[...]]]]")


def test_nesting_past_the_parsers_limit(tiny):
    expect_error(splice(tiny, ("exporter",), b"\x91" * 5000 + b"\xc0"), "nests deeper than the parser allows")
    expect_error(b"\x91" * 100_000, "nests deeper than the parser allows")


def test_deep_nesting_in_free_form_metadata_still_loads(tiny):
    b = fmt.unpack(splice(tiny, ("exporter", "extra"), b"\x81\xa1k" * 900 + b"\xc0"))
    fz.check_valid(b)


@pytest.mark.parametrize("path,value,phrase", [
    (("votes", "dtype"), "x" * 10_000, "field 'votes.dtype' is 'xxxx"),
    (("votes", "shape"), list(range(3_000)), "must be 3 non-negative integers, got [0, 1, 2, 3, 4, 5, 6, 7, ...]"),
    (("encoder", "format"), "f" * 100_000, "encoder format 'ffff"),
    (("encoder", "inputs"), ["input_ids"] + [f"in{i}" for i in range(3_000)], "unsupported inputs ['in0', 'in1'"),
    (("lsh", "family"), "m" * 50_000, "field 'lsh.family' is 'mmm"),
])
def test_huge_values_give_short_messages(tiny, path, value, phrase):
    """Found by fuzzing: a 10,000-character dtype or a 100,000-element shape was echoed whole."""
    expect_error(splice(tiny, path, fz.pack(value)), phrase)


def test_outer_huge_strings_give_short_messages():
    outer = {"format": "z" * 100_000, "version": [1, 2]}
    expect_error(fz.pack(outer), "not a dpedge bundle: field 'format' is 'zzz")
    outer = {"format": fmt.FORMAT_NAME, "version": [1, 2], "checksum": {"algorithm": "a" * 100_000, "digest": b""},
             "payload": b""}
    expect_error(fz.pack(outer), "unsupported checksum algorithm 'aaa")


@pytest.mark.parametrize("unit", [b"\x80", b"\x90", b"\xc0", b"\xa2ab", b"\x81\xa1k\x80"])
@pytest.mark.parametrize("where", ["outer", "payload"])
def test_dense_tiny_containers_are_refused_early(tiny, unit, where):
    """Found by measuring memory: an empty map is 1 byte of msgpack but a 64-byte Python object,
    so 4 MiB of them took 291 MiB before the reader looked at a single field. The parser now
    stops once a document holds more than one value per 64 bytes."""
    per = 1000
    groups = (4 << 20) // (per * len(unit) + 3)
    dense = b"\xdd" + groups.to_bytes(4, "big") + (b"\xdc" + per.to_bytes(2, "big") + unit * per) * groups
    if where == "outer":
        blob = fz.pack_spliced({"format": fmt.FORMAT_NAME, "junk": 0}, {("junk",): dense})
    else:
        blob = splice(tiny, ("exporter", "junk"), dense)
    out = outcome(blob)
    assert out.result == "BundleError" and "msgpack values for its" in out.detail, out.detail
    assert out.peak < 3 * len(blob), f"{out.peak / 2**20:.1f} MiB for {len(blob) / 2**20:.1f} MiB"


def test_a_single_huge_declared_array_is_refused_before_allocation(tiny):
    n = len(tiny.data)  # at most one element per input byte would fit, but each costs 8 bytes up front
    blob = splice(tiny, ("labels",), b"\xdd" + n.to_bytes(4, "big") + b"\xc0" * 10)
    out = outcome(blob)
    assert out.result == "BundleError" and "max_array_len" in out.detail
    assert out.peak < 3 * len(blob)


@pytest.mark.parametrize("raw", [
    b"\xc6\xff\xff\xff\xff" + b"abc",          # bin32 declaring 4 GiB
    b"\xdb\xff\xff\xff\xff" + b"abc",          # str32 declaring 4 GiB
    b"\xdd\xff\xff\xff\xff" + b"\xc0" * 10,    # array32 declaring 4 G elements
    b"\xdf\xff\xff\xff\xff" + b"\xc0" * 10,    # map32 declaring 4 G entries
    b"\xc9\xff\xff\xff\xff\x05" + b"abc",      # ext32 declaring 4 GiB
])
def test_giant_declared_lengths(tiny, raw):
    for blob in (splice(tiny, ("encoder", "model"), raw),
                 fz.pack_spliced({"format": fmt.FORMAT_NAME, "version": [1, 2], "payload": 0}, {("payload",): raw})):
        out = outcome(blob)
        assert out.result == "BundleError" and out.peak < 3 * len(blob) + (1 << 20), (out.result, out.peak, out.detail)


def test_many_labels_still_load(tiny):
    """The value budget leaves room for big label sets: 3,000 labels with descriptions."""
    p = copy.deepcopy(tiny.payload)
    c = 3000
    t, h = p["lsh"]["tables"], p["lsh"]["bits"]
    p["labels"] = [f"label {i}" for i in range(c)]
    p["label_descriptions"] = [f"description {i}" for i in range(c)]
    p["votes"] = {"dtype": "<i2", "shape": [t, 2**h, c], "data": np.zeros((t, 2**h, c), "<i2").tobytes()}
    b = fmt.unpack(reseal(tiny, fz.pack(p)))
    fz.check_valid(b)
    assert len(b.labels) == c


def test_special_files(tmp_path):
    """Found by fuzzing load(): /dev/zero was read until memory ran out (MemoryError) and a FIFO
    with no writer blocked forever. Non-regular files are now refused; each case runs in a child
    process with a memory limit and a timeout, so a regression cannot take the test run down."""
    results = dict(fz.special_files(tmp_path))
    assert results["/dev/zero"].endswith("/dev/zero: is not a regular file, so it cannot be a bundle"), results
    assert "is not a regular file" in results["FIFO with no writer"], results
    assert "no such bundle file" in results["missing file"] and "is a directory" in results["directory"]
    assert all(v.startswith("BundleError") for v in results.values()), results


def test_random_seeded_inputs_reproduce(tiny):
    """Input i of seed s is a pure function of (s, i): `--only I` re-creates a finding exactly."""
    a = [fz.make_input(random.Random(f"5:{i}"), fz.KINDS[i % len(fz.KINDS)], tiny) for i in range(30)]
    b = [fz.make_input(random.Random(f"5:{i}"), fz.KINDS[i % len(fz.KINDS)], tiny) for i in range(30)]
    assert a == b
    assert hashlib.sha256(b"".join(a)).digest() == hashlib.sha256(b"".join(b)).digest()


def test_messages_from_fuzzing_are_one_line(tiny):
    """A fixed sample of the mutators: every BundleError is one short line."""
    msgs = []
    for i in range(300):
        rng = random.Random(f"9:{i}")
        try:
            fmt.unpack(fz.make_input(rng, fz.KINDS[i % len(fz.KINDS)], tiny))
        except BundleError as exc:
            msgs.append(str(exc))
    assert len(msgs) > 150
    assert all(m and "\n" not in m and len(m) <= fz.MAX_MESSAGE_CHARS for m in msgs)
