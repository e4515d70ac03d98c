"""Edges of the release path's guarantee: nothing the records hold may stop a build (exact values
are clamped, the engine's memory is per session, Ray workers must embed as the driver does),
no error or report line quotes a private value, and the settings a mode ignores are refused."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

from conftest import DATA, build_options
from exporter import privacy
from exporter.__main__ import _print_report, main
from exporter.build import BuildReport, build
from exporter.class_stats import ClassSumCounter
from exporter.dataset import DatasetError, ReadStats, label_digest, read_labels, read_records
from exporter.encoder_export import exporter_embedder
from exporter.fidelity_texts import FIDELITY_TEXTS
from exporter.local_engine import LocalEngine
from exporter.options import BuildError, check_options
from exporter.progress import Timer
from exporter.stages import ENCODER_IS_PUBLIC, ENCODER_STATED_BY_BUILDER
from exporter.units import UnitBound
from noise_hooks import ConstantNoise
from runtime import bundle as bundle_format
from runtime.embedder import Embedder
from runtime.onnx_engine import uses_shared_arena


# --------------------------------------------------------------------------- 1. clamped exact values


@pytest.mark.exporter
def test_a_build_clamps_exact_values_and_reports_them_on_the_console_only(exported_encoder, tmp_path, monkeypatch,
                                                                          capsys):
    """With the noise domain shrunk to 10, the assistant data's class counts (about 80 each) are
    beyond it: the build clamps them instead of stopping, and only the console says so."""
    monkeypatch.setattr(privacy, "MAX_EXACT_VALUE", 10)
    out = tmp_path / "clamped.dpedge"
    report = build(build_options(out), noise_for_tests=ConstantNoise(0))
    b = bundle_format.load(out)
    assert b.class_counts.tolist() == [10] * len(b.labels)
    assert report.clamped_values["class_counts"] == len(b.labels)
    assert "clamp" not in repr((b.privacy, b.releases, b.exporter))  # the bundle's facts do not say it
    _print_report(report)
    assert f"class_counts: {len(b.labels)} exact values were beyond +-" in capsys.readouterr().out


# --------------------------------------------------------------------------- 2. no private value in an error


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("unit,got", [(3.5, "got float"), ("   ", "got a blank string"), (["ana"], "got list")])
def test_a_bad_unit_id_is_named_by_its_field_not_quoted(tmp_path, unit, got):
    p = _jsonl(tmp_path / "d.jsonl", [{"text": "wake me at six", "label": "alarm_timer", "user": unit}])
    with pytest.raises(DatasetError) as err:
        list(read_records(p, read_labels(DATA / "labels.txt"), unit_field="user"))
    assert str(err.value) == f"{p}:1: the unit column 'user' must be a non-empty string or integer, {got}"


def test_the_ray_shard_reader_refuses_and_counts_unknown_labels_without_their_values(tmp_path):
    from exporter import ray_engine  # the reader and the merge need no Ray

    p = _jsonl(tmp_path / "d.jsonl", [{"text": "wake me at six", "label": "alarm_timer"},
                                      {"text": "call Ana Lopez", "label": "secret-project-x"},
                                      {"text": "call Bo", "label": "secret-project-y"},
                                      {"text": "call Cy", "label": "secret-project-x"}])
    labels = read_labels(DATA / "labels.txt")
    with pytest.raises(DatasetError) as err:
        ray_engine.read_shard(ray_engine.ReadSpec(str(p), labels), 0, p.stat().st_size, 1, ReadStats())
    assert str(err.value) == (f"{p}:2: the label (field 'label') is not in the label list (pass "
                              f"--skip-unknown-labels to skip such records)")
    spec = ray_engine.ReadSpec(str(p), labels, skip_unknown_labels=True)
    total = ReadStats()
    for s in ray_engine.plan_shards(p, lines_per_shard=2):  # two shards, as two workers; x is in both
        part = ReadStats()
        ray_engine.read_shard(spec, s["start"], s["end"], s["first_line"], part)
        row = ray_engine._stats_json(part)
        assert "secret" not in row  # what travels from a worker to the driver
        ray_engine._merge(total, json.loads(row))
    assert (total.records, total.skipped_unknown_label, total.distinct_unknown_labels) == (1, 3, "2")
    assert "secret" not in repr(total)


def test_the_build_report_counts_unknown_labels_without_naming_them(capsys):
    stats = ReadStats(records=3, skipped_unknown_label=3)
    stats.add_unknown_labels([label_digest("secret-a"), label_digest("secret-b"), label_digest("secret-a")])
    _print_report(BuildReport(out=Path("b.dpedge"), bundle_bytes=0, stats=stats, privacy={}, summary="s",
                              clipped_cells=0))
    out = capsys.readouterr().out
    assert "unknown labels: 3 records, 2 distinct values" in out and "secret" not in out


# --------------------------------------------------------------------------- 3. the engine's arena per session


def test_the_exporters_encoder_has_its_own_arena_and_the_runtimes_the_shared_cap(exported_encoder):
    spec = exported_encoder.to_bundle_encoder()
    exporter_side, runtime_side = exporter_embedder(spec, workers=2), Embedder(spec, threads=1)
    assert runtime_side.encoder.shared_arena is True  # the runtime's default is unchanged
    assert exporter_side.encoder.shared_arena is False
    session = exporter_side.encoder._runner()._session  # what onnxruntime itself was told
    assert not uses_shared_arena(session.get_session_options())
    assert uses_shared_arena(runtime_side.encoder._runner()._session.get_session_options())
    texts = ["wake me at six", FIDELITY_TEXTS[-1]]
    assert exporter_side.embed(texts).tobytes() == runtime_side.embed(texts).tobytes()  # same embeddings


@pytest.mark.exporter
def test_many_workers_on_long_texts_cannot_fail_a_build(exported_encoder, tmp_path):
    """96 long texts at once need more than the runtime's shared 128 MiB (measured: a shared
    arena fails this build); the exporter's sessions have their own arenas, so it succeeds."""
    labels = read_labels(DATA / "labels.txt").names
    long_texts = [t for t in FIDELITY_TEXTS if len(t) > 500]
    train = _jsonl(tmp_path / "long.jsonl", [{"text": f"{i}: {long_texts[i % len(long_texts)]}",
                                              "label": labels[i % len(labels)]} for i in range(192)])
    report = build(build_options(tmp_path / "long.dpedge", train=train, workers=96), noise_for_tests=ConstantNoise(0))
    assert report.stats.records == 192


# --------------------------------------------------------------------------- 4. Ray workers embed as the driver does


def test_the_probe_comparison_is_bit_for_bit():
    from exporter.ray_engine import probe_mismatch  # needs no Ray

    driver = np.random.default_rng(0).standard_normal((5, 8)).astype(np.float32)
    assert probe_mismatch(driver, driver.copy()) is None
    one_ulp = driver.copy()
    one_ulp[3, 2] = np.nextafter(one_ulp[3, 2], np.float32(np.inf))
    assert probe_mismatch(driver, one_ulp).startswith("1 of the 5 probe texts embed differently (largest difference ")
    zeros = np.zeros((1, 2), np.float32)
    assert probe_mismatch(zeros, -zeros) == "1 of the 1 probe texts embed differently (largest difference 0)"
    assert probe_mismatch(driver, driver[:4]) == "its probe embeddings are (4, 8) float32, the driver's (5, 8) float32"
    assert "float64" in probe_mismatch(driver, driver.astype(np.float64))


def test_the_probe_texts_are_public_and_reach_the_token_limit():
    from exporter.ray_engine import PROBE_TEXTS

    assert set(PROBE_TEXTS) <= set(FIDELITY_TEXTS) and max(map(len, PROBE_TEXTS)) > 1000
    assert len(PROBE_TEXTS) >= 5 and any(not t.isascii() for t in PROBE_TEXTS)


@pytest.mark.exporter
def test_the_driver_probe_is_the_exporters_embedding(exported_encoder):
    from exporter.ray_engine import PROBE_TEXTS, driver_probe

    spec = exported_encoder.to_bundle_encoder()
    probe = driver_probe(spec)
    assert probe.shape == (len(PROBE_TEXTS), spec.dim) and probe.dtype == np.float32
    assert probe.tobytes() == Embedder(spec, threads=1).embed(list(PROBE_TEXTS)).tobytes()


# --------------------------------------------------------------------------- 5. an encoder folder is a promise


@pytest.mark.exporter
def test_an_encoder_folder_is_stated_as_the_builders_promise(exported_encoder, tmp_path, capsys):
    """A folder (here an exported one, used as it is) prints one line and the bundle states the
    builder's promise; an extension keeps that statement; a registered encoder keeps its wording."""
    lines = (DATA / "train.jsonl").read_text(encoding="utf-8").splitlines()
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text("\n".join(lines[::2]) + "\n", encoding="utf-8")
    second.write_text("\n".join(lines[1::2]) + "\n", encoding="utf-8")
    folder = exported_encoder.directory
    build(build_options(tmp_path / "f.dpedge", train=first, encoder_source=str(folder)),
          noise_for_tests=ConstantNoise(0))
    err = capsys.readouterr().err
    assert err.count(f"note: --encoder {folder}: the guarantee assumes this encoder was trained without the private "
                     f"records (a model fine-tuned on them breaks it)") == 1
    stated = bundle_format.load(tmp_path / "f.dpedge").privacy["public_inputs"]
    assert ENCODER_STATED_BY_BUILDER in stated and ENCODER_IS_PUBLIC not in stated

    build(build_options(tmp_path / "g.dpedge", train=second, extend=tmp_path / "f.dpedge", seed=None),
          noise_for_tests=ConstantNoise(0))
    stated = bundle_format.load(tmp_path / "g.dpedge").privacy["public_inputs"]
    assert ENCODER_STATED_BY_BUILDER in stated and ENCODER_IS_PUBLIC not in stated

    build(build_options(tmp_path / "r.dpedge", train=first), noise_for_tests=ConstantNoise(0))
    assert "--encoder" not in capsys.readouterr().err
    stated = bundle_format.load(tmp_path / "r.dpedge").privacy["public_inputs"]
    assert ENCODER_IS_PUBLIC in stated and ENCODER_STATED_BY_BUILDER not in stated


# --------------------------------------------------------------------------- 6. the unit options' help


def test_unit_ids_are_compared_after_stripping_white_space(tmp_path):
    """What --unit-column's help says: " ana", "ana " and "ana" are one person, 7 and "7" another."""
    ids = [" ana", "ana ", "ana", 7, "7", "\tbo\n"]
    p = _jsonl(tmp_path / "d.jsonl", [{"text": f"wake me at {i}", "label": "alarm_timer", "user": u}
                                      for i, u in enumerate(ids)])
    records = list(read_records(p, read_labels(DATA / "labels.txt"), unit_field="user"))
    bound = UnitBound(k=1)
    bound.plan(r.unit for r in records)
    kept = list(bound.keep(records, unit_of=lambda r: r.unit))
    assert bound.stats.units == 3 and sorted(r.unit for r in kept) == ["7", "ana", "bo"]


def test_the_unit_help_gives_every_releases_scale_and_the_stripping(capsys):
    with pytest.raises(SystemExit):
        main(["build", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "after stripping surrounding white space" in text
    assert ("multiplied by K: class counts K, class sums K x round(100 x B) (B: the L1 clip), vote tables K x T"
            in text)


# --------------------------------------------------------------------------- 7. ignored flags are refused


@pytest.mark.parametrize("overrides,flags", [
    (dict(votes_share=0.1), "--votes-share"),
    (dict(basis_dim=16), "--basis-dim"),
    (dict(clip_l1=2.0), "--clip-l1"),
    (dict(public_directions=2), "--public-directions"),
    (dict(votes_share=0.1, basis_dim=16, clip_l1=2.0, public_directions=2),
     "--votes-share, --basis-dim, --clip-l1, --public-directions"),
])
def test_random_hashing_refuses_the_flags_it_would_ignore(tmp_path, overrides, flags):
    opts = build_options(tmp_path / "r.dpedge", hashing="random", **overrides)
    with pytest.raises(BuildError, match=f"only aligned hashing uses {flags}, and --hashing random"):
        check_options(opts, classes=7)
    with pytest.raises(BuildError):  # the build refuses before reading a record
        build(opts)
    assert not (tmp_path / "r.dpedge").exists()


def test_a_bundle_without_vote_tables_refuses_their_size_limit(tmp_path):
    with pytest.raises(BuildError, match="only a bundle with vote tables uses --max-table-mib, and this bundle has "
                                         "none"):
        check_options(build_options(tmp_path / "a.dpedge", max_table_mib=8.0), classes=7)
    check_options(build_options(tmp_path / "a.dpedge", max_table_mib=8.0, votes_share=0.1), classes=7)
    check_options(build_options(tmp_path / "a.dpedge", max_table_mib=8.0, hashing="random"), classes=7)
    with pytest.raises(BuildError, match="over the limit of 0.001 MiB"):  # and it still bounds them
        check_options(build_options(tmp_path / "a.dpedge", max_table_mib=0.001, hashing="random"), classes=7)


@pytest.mark.exporter  # the build gets as far as its privacy budget (OpenDP)
def test_the_cli_leaves_unset_flags_unset(tmp_path, capsys):
    """Defaults in the CLI are the options' "not given", so a default build refuses nothing."""
    rc = main(["build", "--train", str(tmp_path / "missing.jsonl"), "--labels", str(DATA / "labels.txt"),
               "--epsilon", "1", "--hashing", "random", "--out", str(tmp_path / "x.dpedge"), "--quiet"])
    assert rc == 2 and "only aligned hashing" not in capsys.readouterr().err


# --------------------------------------------------------------------------- 8. where raw embeddings sit


@pytest.fixture
def spills(tmp_path, monkeypatch):
    """Every spill file the local engine opens, in a temporary folder of the test's own."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    opened = []
    real = tempfile.TemporaryFile

    def recorded(*args, **kwargs):
        f = real(*args, **kwargs)
        opened.append(f)
        return f

    monkeypatch.setattr(tempfile, "TemporaryFile", recorded)
    return folder, opened


def _engine(tmp_path, embed):
    opts = build_options(tmp_path / "x.dpedge")
    return LocalEngine(opts, read_labels(DATA / "labels.txt"), embed, Timer())


@pytest.mark.parametrize("stop", [KeyboardInterrupt, SystemExit, RuntimeError])
def test_the_spilled_embeddings_are_unnamed_and_gone_when_the_first_pass_stops(tmp_path, spills, stop):
    folder, opened = spills
    seen = []

    def embed(chunk):
        if seen:  # the second chunk: the first one is on disk
            assert opened and os.fstat(opened[0].fileno()).st_nlink == 0  # no name, from the start
            assert not list(folder.iterdir())
            raise stop()
        seen.append(len(chunk))
        return np.ones((len(chunk), 4), np.float32)

    engine = _engine(tmp_path, embed)  # not used as a context manager: the pass closes it itself
    with pytest.raises(stop):
        engine.class_counts(7)
    assert len(opened) == 1 and opened[0].closed and not list(folder.iterdir())


@pytest.mark.exporter
def test_the_spilled_embeddings_are_gone_after_a_build_that_fails_later(exported_encoder, tmp_path, spills,
                                                                        monkeypatch):
    folder, opened = spills

    def fail(self, embeddings, labels):
        raise RuntimeError("stop in pass 2")

    monkeypatch.setattr(ClassSumCounter, "add", fail)
    with pytest.raises(RuntimeError, match="stop in pass 2"):
        build(build_options(tmp_path / "x.dpedge"), noise_for_tests=ConstantNoise(0))
    assert len(opened) == 1 and opened[0].closed and not list(folder.iterdir())
    assert not (tmp_path / "x.dpedge").exists()


@pytest.mark.exporter
def test_the_spilled_embeddings_are_gone_after_a_build(exported_encoder, tmp_path, spills):
    folder, opened = spills
    build(build_options(tmp_path / "x.dpedge"), noise_for_tests=ConstantNoise(0))
    assert len(opened) == 1 and opened[0].closed and not list(folder.iterdir())
