"""The bundle reader under fuzzing: CI's short run of benchmarks/fuzz_bundle.py, and regression
cases for what the long runs found (docs/reliability.md).

The reader must either load a bundle that keeps every promise of the format, can be described
and scores finitely in every mode, or raise BundleError with a short message: never another
exception, never a hang, never memory out of proportion to the input. Every format the
exporter writes is fuzzed: 1.2 (`random_bundle`, --hashing random), 3.0 without vote tables
(`dp_bundle`, the default) and 3.0 with them (`tables_bundle`, --votes-share); the `format2`
and `format3` mutators graft 3.0's class statistics onto 1.2 first.

What the format-2.1 runs found in runtime code (docs/reliability.md, R1-R3) is fixed; each
finding has a regression case at the end of this file.
"""

import copy
import hashlib
import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT
from runtime import BundleError
from runtime import bundle as fmt
from runtime.bundle.schema import Statistic

sys.path.insert(0, str(ROOT / "benchmarks"))
import fuzz_bundle as fz  # noqa: E402

try:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - hypothesis is in the dev extra
    given = None


@pytest.fixture(scope="module")
def tiny(random_bundle) -> fz.Base:
    """The real format-1.2 test bundle with a two-byte model and a short tokenizer (unpack runs neither)."""
    return fz.make_base("tiny", fz.tiny_bundle(random_bundle.read_bytes()))


@pytest.fixture(scope="module")
def tiny3(dp_bundle) -> fz.Base:
    """The same for the default format-4.0 bundle (class statistics, prior, scoring, releases; no vote tables)."""
    return fz.make_base("tiny", fz.tiny_bundle(dp_bundle.read_bytes()))


@pytest.fixture(scope="module")
def tiny3v(tables_bundle) -> fz.Base:
    """The same for the format-4.0 bundle with vote tables (--votes-share: offsets and a votes release too)."""
    return fz.make_base("tiny", fz.tiny_bundle(tables_bundle.read_bytes()))


LIMITS = fz.Limits(max_seconds=2.0, mem_ratio=4.0, mem_slack=4 << 20)


def outcome(blob: bytes) -> fz.Outcome:
    """The reader on one input, timed and with its memory traced; an accepted bundle is also
    described and scored in every mode."""
    return fz.run_one(blob, LIMITS)


def assert_no_finding(out: fz.Outcome, blob: bytes, what: str) -> None:
    assert not out.finding, f"{what}: {out.result}: {out.detail}"


def test_real_bundles_are_valid(random_bundle, dp_bundle, tables_bundle, tiny, tiny3, tiny3v):
    for b in (fmt.load(random_bundle), fmt.unpack(tiny.data), fmt.load(dp_bundle), fmt.unpack(tiny3.data),
              fmt.load(tables_bundle), fmt.unpack(tiny3v.data)):
        fz.check_valid(b)
        assert fz.check_scoring(b) == ""
    assert (tiny.version, tiny.format2, tiny.tables) == ("1.2", False, True)
    assert (tiny3.version, tiny3.format2, tiny3.tables) == ("4.0", True, False)
    assert (tiny3v.version, tiny3v.format2, tiny3v.tables) == ("4.0", True, True)
    b3, b3v = fmt.unpack(tiny3.data), fmt.unpack(tiny3v.data)
    assert b3.votes is None and b3.lsh is None and b3.class_stats.projection.shape[0] == 8
    assert b3v.offsets.shape == (4, 4) and b3v.class_stats.projection.shape[0] == 8
    for b in (b3, b3v):
        assert (b.scoring["centroid_rule"], b.scoring["prior_boost_rule"]) == ("cosine_public", "linear")
    assert [r["statistic"] for r in b3.privacy["releases"]] == ["class_counts", "class_sums"]
    assert [r["statistic"] for r in b3v.privacy["releases"]] == ["class_counts", "class_sums", "votes"]
    assert b3.privacy["noise_scale"] == b3.privacy["releases"][1]["noise_scale"]   # the headline: class_sums
    assert b3v.privacy["noise_scale"] == b3v.privacy["releases"][2]["noise_scale"]  # the headline: votes
    assert len(tiny3.arrays) == 6 and len(tiny3v.arrays) == 9
    assert ("scoring", "prior_records_per_class") in tiny3.numeric and ("lsh", "tables") not in tiny3.numeric
    assert ("privacy", "releases", 1, "epsilon") in tiny3.numeric


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
        """2,000 mutated format-1.2 bundles through Hypothesis (deterministic: derandomized, no database)."""
        blob = fz.make_input(rnd, kind, tiny)
        assert_no_finding(outcome(blob), blob, kind)

    @settings(max_examples=1000, derandomize=True, deadline=None, database=None, print_blob=True,
              suppress_health_check=list(HealthCheck))
    @given(kind=st.sampled_from(fz.KINDS), rnd=st.randoms(use_true_random=True))
    def test_fuzz_smoke_format3(tiny3, kind, rnd):
        """1,000 mutated default format-4.0 bundles (no vote tables), each accepted one scored in every mode."""
        blob = fz.make_input(rnd, kind, tiny3)
        assert_no_finding(outcome(blob), blob, kind)

    @settings(max_examples=500, derandomize=True, deadline=None, database=None, print_blob=True,
              suppress_health_check=list(HealthCheck))
    @given(kind=st.sampled_from(fz.KINDS), rnd=st.randoms(use_true_random=True))
    def test_fuzz_smoke_format3_tables(tiny3v, kind, rnd):
        """500 mutated format-4.0 bundles with vote tables."""
        blob = fz.make_input(rnd, kind, tiny3v)
        assert_no_finding(outcome(blob), blob, kind)
else:  # pragma: no cover
    def test_fuzz_smoke():
        pytest.skip("hypothesis is not installed (pip install -e '.[dev]')")


@pytest.mark.parametrize("which,version", [("random_bundle", "1.2"), ("dp_bundle", "4.0"), ("tables_bundle", "4.0")])
def test_fuzz_script_runs_clean(which, version, request, tmp_path):
    """The benchmark script itself, briefly, on a format-1.2 bundle and the two 4.0 ones: both bases,
    load() on files, scoring of every accepted bundle, and the special files. Zero findings,
    apart from the open runtime findings R1-R3, each re-run here from its saved input."""
    bundle = request.getfixturevalue(which)
    found = tmp_path / "findings"
    r = subprocess.run([sys.executable, "benchmarks/fuzz_bundle.py", "--bundle", str(bundle), "--inputs", "400",
                        "--seed", "3", "--full-every", "100", "--load-every", "10", "--findings", str(found)],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    out = r.stdout
    assert f"(format {version}," in out and "scoring on" in out, out[:500]
    assert "| **total** | 400 |" in out and "harness errors" not in out, out[-4000:] + r.stderr[-2000:]
    assert "accepted bundles scored in 4 modes" in out
    saved = sorted(found.glob("*.dpedge")) if found.exists() else []
    n = int(re.search(r"^findings +(\d+)", out, re.M).group(1))
    assert n == len(saved), out[-4000:]
    assert r.returncode == (1 if saved else 0), out[-4000:] + r.stderr[-2000:]
    for path in saved:  # every finding must be a known runtime finding, reproduced in this process
        blob = path.read_bytes()
        assert_no_finding(outcome(blob), blob, path.name)
    for case in ("missing file", "directory", "/dev/zero", "FIFO with no writer"):
        line = next(x for x in out.splitlines() if case in x)
        assert "BundleError" in line and "FINDING" not in line, line


def _mutated(base: fz.Base, kind: str, n: int) -> tuple[list[str], list[fmt.Bundle]]:
    """n inputs of one mutator: the reader's messages, and the bundles it accepted (each valid
    and scoring cleanly in every mode)."""
    messages, accepted = [], []
    for i in range(n):
        blob = fz.make_input(random.Random(f"{kind}:{i}"), kind, base)
        try:
            b = fmt.unpack(blob)
        except BundleError as exc:
            messages.append(str(exc))
            continue
        fz.check_valid(b)
        problem = fz.check_scoring(b)
        assert not problem, problem
        accepted.append(b)
    return messages, accepted


@pytest.mark.parametrize("base_name", ["tiny", "tiny3", "tiny3v"])
def test_format2_mutator_reaches_every_format2_field(base_name, request):
    """`format2` on every base (grafting 3.0's class statistics onto 1.2 first): inputs that load
    and inputs refused for each field format 2 added (3.0 kept them all), and the accepted ones
    score cleanly."""
    base = request.getfixturevalue(base_name)
    messages, accepted = _mutated(base, "format2", 300)
    assert 50 < len(accepted) < 250, len(accepted)
    text = "\n".join(messages)
    fields = ["scoring", "releases", "class_stats", "prior.embeddings"] + (["lsh.offsets"] if base.tables else [])
    for field_name in fields:
        assert field_name in text, field_name


@pytest.mark.parametrize("base_name", ["tiny", "tiny3", "tiny3v"])
def test_format3_mutator_reaches_every_format3_rule(base_name, request):
    """`format3` on every base: refusals for each rule 3.0 added (vote tables optional but
    together, something to classify with, class_counts and class_sums listed, the headline
    release's facts at the top, the prior boost rule, majors 1 and 2 requiring tables, a newer
    major) and valid bundles of both shapes, with and without vote tables."""
    base = request.getfixturevalue(base_name)
    messages, accepted = _mutated(base, "format3", 400)
    assert 100 < len(accepted) < 300, len(accepted)
    text = "\n".join(messages)
    for phrase in ("missing field 'lsh'", "missing field 'votes'", "must list every released statistic",
                   "release's (", "field 'scoring.prior_boost_rule' must be one of max, linear, got",
                   "field 'scoring.centroid_rule' must be one of cosine, gaussian, cosine_public, got",
                   "newer than this runtime supports", "the releases spend epsilon",
                   "must be a positive finite number", "needs noise scale"):
        assert phrase in text, phrase
    if base.tables:
        assert "is 'linear', which needs the released class counts of 'class_stats'" in text
        assert "must be the votes release's" in text
        assert "encoder produces" in text
    else:
        assert "must hold 'class_stats': it has nothing to classify with" in text
        assert "must be the class_sums release's" in text
        assert "field 'class_stats.projection' must " in text  # sized by D, here encoder.dim
    # Both shapes load: tables added to (or dropped from) the base, and the base's own shape.
    assert {b.votes is None for b in accepted} == {True, False}
    assert {(b.scoring or {}).get("prior_boost_rule", "max") for b in accepted} >= {"max", "linear"}
    assert any(Statistic.CLASS_STATS in [r["statistic"] for r in b.privacy["releases"]] for b in accepted)


def test_scoring_findings_are_reported(tiny3, tiny3v, monkeypatch):
    """The scoring stage is not blind: NaN scores, an exception, a wrong shape, and a refusal of a
    mode the bundle supports are findings; refusing a mode it lacks statistics for is not."""
    assert outcome(tiny3v.data).result == "valid"
    for fake, phrase in [
        (lambda self, x: np.full((len(x), 7), np.nan), "returned NaN scores"),
        (lambda self, x: np.full((len(x), 7), np.inf), "returned infinite scores"),
        (lambda self, x: np.zeros((len(x), 3)), "returned shape (7, 3)"),
        (lambda self, x: 1 / 0, "ZeroDivisionError"),
    ]:
        monkeypatch.setattr(fz.Scorer, "scores", fake)
        out = outcome(tiny3v.data)
        assert out.result == "score" and phrase in out.detail, out.detail
    monkeypatch.undo()

    def refuse(cls, b, mode="blend"):
        raise ValueError("no")
    monkeypatch.setattr(fz.Scorer, "from_bundle", classmethod(refuse))
    out = outcome(tiny3v.data)
    assert out.result == "score" and "refused an accepted bundle" in out.detail
    monkeypatch.undo()
    # The default bundle has no vote tables: its votes mode is refused, as it should be.
    with pytest.raises(ValueError, match="no vote tables"):
        fz.Scorer.from_bundle(fmt.unpack(tiny3.data), mode="votes")
    assert outcome(tiny3.data).result == "valid"
    p = copy.deepcopy(tiny3v.payload)  # no class statistics or prior: those modes are refused, as they should be
    del p["class_stats"], p["prior"], p["scoring"]["prior_boost_rule"]  # (the linear boost needs class counts)
    p["privacy"]["releases"] = [r for r in p["privacy"]["releases"] if r["statistic"] == "votes"]
    p["privacy"]["epsilon"] = p["privacy"]["releases"][0]["epsilon"]  # the votes' share is now all of it
    for mode in ("centroids", "prior"):
        with pytest.raises(ValueError):
            fz.Scorer.from_bundle(fmt.unpack(fz.seal(fz.pack(p))), mode=mode)
    assert outcome(fz.seal(fz.pack(p))).result == "valid"
    assert fz.Limits(score=False).score is False


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


@pytest.mark.parametrize("base,path,phrase", [
    ("tiny", ("votes", "shape"), "field 'votes.shape' must be 3 non-negative integers, got [[[[...]]]]"),
    ("tiny", ("lsh", "hyperplanes", "shape"),
     "field 'lsh.hyperplanes.shape' must be 3 non-negative integers, got [[[[...]]]]"),
    ("tiny", ("encoder", "format"), "field 'encoder.format' is array, expected string"),
    ("tiny3", ("privacy", "releases", 0, "max_records_per_unit"),
     "field 'privacy.releases[0].max_records_per_unit' is [[[[...]]]], but field"),
])
def test_deeply_nested_value_in_a_message(request, base, path, phrase):
    """Found by fuzzing: repr() of 1,000 nested arrays in an error message raised RecursionError
    (reliability findings 2 and, in the person-bound check, 9)."""
    expect_error(splice(request.getfixturevalue(base), path, b"\x91" * 1000 + b"\xc0"), phrase)


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
    assert out.result == "BundleError" and "msgpack values for its" in out.detail
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


# ----------------------------------------------------------------------------- fixed runtime findings (format 2)
# Found by fuzzing format-2.1 bundles (docs/reliability.md, R1-R3), fixed in runtime/bundle.py:
# R1 the reader checks privacy.releases[i].noise_scale is a number; R2/R3 the reader bounds the
# scoring numbers (at most 1e6, temperatures at least 1e-6) and runtime.scoring.prior_boost
# caps the prior's boost at 1e6, so the blend stays finite. Re-run on the default 3.0 bundle,
# whose releases are class_counts and class_sums.


def format2_variant(base: fz.Base, change) -> bytes:
    p = copy.deepcopy(base.payload)
    change(p)
    return fz.seal(fz.pack(p))


def releases_scaled(p: dict, eps: float) -> None:
    """Epsilon replaced, each share scaled alike and each noise scale following (sensitivity /
    share; the top level's the headline release's, here the last)."""
    factor = eps / p["privacy"]["epsilon"]
    p["privacy"]["epsilon"] = eps
    for rel in p["privacy"]["releases"]:
        rel["epsilon"] = rel["epsilon"] * factor
        rel["noise_scale"] = rel["sensitivity_l1"] / rel["epsilon"]
    p["privacy"]["noise_scale"] = p["privacy"]["releases"][-1]["noise_scale"]


FIXED = [
    ("R1", "noise_scale str", lambda p: p["privacy"]["releases"][1].update(noise_scale="20 per cell")),
    ("R1", "noise_scale nil", lambda p: p["privacy"]["releases"][1].update(noise_scale=None)),
    ("R1", "noise_scale bin", lambda p: p["privacy"]["releases"][0].update(noise_scale=b"\x01")),
    ("R1", "noise_scale array", lambda p: p["privacy"]["releases"][0].update(noise_scale=[82.0])),
    ("R2", "centroid_temperature 5e-324", lambda p: p["scoring"].update(centroid_temperature=5e-324)),
    ("R2", "centroid_temperature 1e-320", lambda p: p["scoring"].update(centroid_temperature=1e-320)),
    ("R2", "prior_temperature 1e-310", lambda p: p["scoring"].update(prior_temperature=1e-310)),
    ("R3", "votes weight 1e308", lambda p: p["scoring"].update(votes=1e308)),
    ("R3", "epsilon 1e-310", lambda p: releases_scaled(p, 1e-310)),
    ("R3", "epsilon 1e-300", lambda p: releases_scaled(p, 1e-300)),
    ("R3", "epsilon 1e-300, prior weight 1e12", lambda p: (releases_scaled(p, 1e-300),
                                                            p["scoring"].update(prior=1e12))),
]


@pytest.mark.parametrize("finding,case,change", FIXED, ids=[f"{f}-{c}" for f, c, _ in FIXED])
def test_fixed_findings_are_refused_or_load_cleanly(tiny3, finding, case, change):
    """Each former finding is now refused with a short BundleError, or loads, describes and
    scores finitely in every mode."""
    out = outcome(format2_variant(tiny3, change))
    assert not out.finding, f"{finding} ({case}): {out.result}: {out.detail}"
    # A tiny epsilon is a valid (if useless) bundle: it loads and the capped boost keeps the
    # scores finite (the linear boost, R C K / (epsilon N) = 1e303, is capped at 1e6); every other
    # case breaks a rule of the format and is refused (epsilon 1e-310 too since format 2.1's
    # consistency rule: no finite noise scale is sensitivity / 5e-312).
    expected = "valid" if case == "epsilon 1e-300" else "BundleError"
    assert out.result == expected, f"{finding} ({case}): expected {expected}, got {out.result}: {out.detail}"


def test_max_records_per_unit_nil_scores_as_one_record(dp_bundle):
    """Found by fuzzing format 3.0: a nil privacy.max_records_per_unit loads (the reader reads
    nil as absent: one record per person), but the scorer took int(None) for the linear prior
    boost's K and raised TypeError, so Classifier.load crashed on an accepted bundle."""
    data = dp_bundle.read_bytes()
    outer = fz.msgpack.unpackb(data, raw=False)
    p = fz.msgpack.unpackb(outer["payload"], raw=False)
    assert p["privacy"]["max_records_per_unit"] == 1 and p["scoring"]["prior_boost_rule"] == "linear"
    p["privacy"]["max_records_per_unit"] = None
    b = fmt.unpack(fz.seal(fz.pack(p), {"format": outer["format"], "version": outer["version"]}))
    assert b.privacy["max_records_per_unit"] is None
    base = fz.Scorer.from_bundle(fmt.unpack(data))
    assert fz.Scorer.from_bundle(b).prior_boost == base.prior_boost > 0
