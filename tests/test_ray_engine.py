"""The Ray Data engine (exporter/ray_engine.py) on a local Ray instance: with the noise switched
off through the test-only hook, its counts (random hashing) and its class statistics,
hyperplanes, offsets and vote tables (aligned hashing, two passes) equal the single-machine
path's exactly."""

from __future__ import annotations

import builtins

import numpy as np
import pytest

from conftest import DATA, build_options
from exporter.build import BuildError, build
from exporter.dataset import DatasetError, ReadStats, read_labels, read_records
from noise_hooks import ConstantGaussian, ConstantNoise
from runtime import bundle as bundle_format

ray = pytest.importorskip("ray", reason="needs pip install 'dpedge[ray]'")
from exporter import ray_engine  # noqa: E402

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray instance for the module (the engine uses it and leaves it running)."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


def test_plan_shards_covers_every_line(tmp_path):
    f = tmp_path / "x.jsonl"
    f.write_bytes(b"a\nbb\n\nccc\nd")  # last line without newline
    shards = ray_engine.plan_shards(f, lines_per_shard=2)
    assert [(s["start"], s["end"], s["first_line"]) for s in shards] == [(0, 5, 1), (5, 10, 3), (10, 11, 5)]


def test_shard_reader_matches_read_records(tmp_path):
    labels = read_labels(DATA / "labels.txt")
    spec = ray_engine.ReadSpec(str(DATA / "train.jsonl"), labels)
    texts, classes, stats = [], [], ReadStats()
    for s in ray_engine.plan_shards(DATA / "train.jsonl", lines_per_shard=37):
        t, c = ray_engine.read_shard(spec, s["start"], s["end"], s["first_line"], stats)
        texts += t
        classes += c
    ref = list(read_records(DATA / "train.jsonl", labels))
    assert texts == [r.text for r in ref] and classes == [r.label for r in ref]


def test_ray_counts_equal_local_counts(local_ray, exported_encoder, tmp_path, monkeypatch):
    monkeypatch.setattr(ray_engine, "DEFAULT_LINES_PER_SHARD", 100)  # 6 shards over 2 actors
    assert len(ray_engine.plan_shards(DATA / "train.jsonl", 100)) == 6
    out = tmp_path / "ray.dpedge"
    report = build(build_options(out, engine="ray", hashing="random"), noise_for_tests=ConstantNoise(0))
    exact_bundle = tmp_path / "local.dpedge"
    build(build_options(exact_bundle, hashing="random"), noise_for_tests=ConstantNoise(0))
    ray_b, local_b = bundle_format.load(out), bundle_format.load(exact_bundle)
    assert report.stats.records == 560
    assert np.array_equal(ray_b.votes, local_b.votes)
    assert ray_b.votes.sum() == 560 * ray_b.tables
    assert np.array_equal(ray_b.hyperplanes, local_b.hyperplanes)
    assert ray_b.privacy == local_b.privacy and ray_b.releases == local_b.releases


def test_ray_aligned_build_equals_local(local_ray, exported_encoder, exact_bundle, tmp_path, monkeypatch):
    """Class statistics and vote tables: the driver's class counts, pass 2's exact partial class
    sums and pass 3's partial votes add up to the local engine's, so the releases, the
    subspace, H, the hyperplanes and the offsets are all identical."""
    monkeypatch.setattr(ray_engine, "DEFAULT_LINES_PER_SHARD", 100)  # 6 shards over 2 actors
    out = tmp_path / "ray-aligned.dpedge"
    report = build(build_options(out, engine="ray", votes_share=0.1), noise_for_tests=ConstantNoise(0))
    ray_b, local_b = bundle_format.load(out), bundle_format.load(exact_bundle)  # same data, seed 1234
    assert report.stats.records == 560
    assert ray_b.class_sums is not None and ray_b.offsets is not None and ray_b.prior is not None
    for field in ("origin", "projection", "class_sums", "class_counts"):
        assert np.array_equal(getattr(ray_b, field), getattr(local_b, field)), field
    assert ray_b.class_counts.sum() == 560
    assert np.array_equal(ray_b.hyperplanes, local_b.hyperplanes)
    assert np.array_equal(ray_b.offsets, local_b.offsets)
    assert np.array_equal(ray_b.prior, local_b.prior)
    assert np.array_equal(ray_b.votes, local_b.votes)
    assert ray_b.votes.sum() == 560 * ray_b.tables and ray_b.seed == local_b.seed
    assert ray_b.privacy == local_b.privacy and ray_b.releases == local_b.releases and ray_b.scoring == local_b.scoring


def test_a_head_on_ray_equals_the_local_head_bit_for_bit(local_ray, exported_encoder, tmp_path, monkeypatch):
    """--engine ray --delta: with every record in every step (560 records, below the expected
    batch: q = 1, so both engines take the same sample) and the noise pinned to zero through the
    test hooks, each step's sum (every worker's exact integer sum over its shards, added on the
    driver) is the local engine's bit for bit, and so is the head after its 100 steps."""
    monkeypatch.setattr(ray_engine, "DEFAULT_LINES_PER_SHARD", 100)  # 6 shards over 2 actors
    pinned = dict(noise_for_tests=ConstantNoise(0), gaussian_for_tests=ConstantGaussian(0))
    out, local = tmp_path / "ray-head.dpedge", tmp_path / "local-head.dpedge"
    report = build(build_options(out, engine="ray", seed=None, delta=1e-5), **pinned)
    build(build_options(local, seed=None, delta=1e-5), **pinned)
    ray_b, local_b = bundle_format.load(out), bundle_format.load(local)
    assert report.stats.records == 560 and ray_b.head.sample_rate == 1.0 and ray_b.head.steps == 100
    for part in ("weights", "bias", "origin"):
        assert np.array_equal(getattr(ray_b.head, part), getattr(local_b.head, part)), part
    assert np.array_equal(ray_b.class_counts, local_b.class_counts)
    assert ray_b.privacy == local_b.privacy


def test_a_ray_heads_steps_are_the_sum_of_its_workers(local_ray, exported_encoder, tmp_path, monkeypatch):
    """One step on Ray is the sum of the workers' exact sums: the same step through one process
    (exporter.head.InMemory over the same embeddings, in file order) gives the same integers."""
    from exporter.encoder_export import exporter_embedder
    from exporter.head import InMemory
    from exporter.progress import Timer

    monkeypatch.setattr(ray_engine, "DEFAULT_LINES_PER_SHARD", 100)  # 6 shards over 2 actors
    labels = read_labels(DATA / "labels.txt")
    spec = exported_encoder.to_bundle_encoder()
    engine = ray_engine.RayEngine(build_options(tmp_path / "x.dpedge", engine="ray", seed=None, delta=1e-5), labels,
                                  spec, Timer())
    try:
        engine.class_counts(len(labels))
        origin = np.full(spec.dim, 0.01, np.float32)
        records = engine.head_records(origin)
        assert len(records.actors) == 2
        rng = np.random.default_rng(5)  # public test weights, not noise
        w, b = rng.standard_normal((len(labels), spec.dim)), rng.standard_normal(len(labels))
        on_ray = records(w, b, sample_rate=1.0, clip_l2=0.5, grid=2**20)
        rows = list(read_records(DATA / "train.jsonl", labels))
        emb = exporter_embedder(spec).embed([r.text for r in rows])
        here = InMemory(emb, np.asarray([r.label for r in rows]), origin)(w, b, sample_rate=1.0, clip_l2=0.5,
                                                                          grid=2**20)
        assert on_ray.dtype == np.int64 and np.array_equal(on_ray, here)
        assert np.abs(on_ray).sum() > 0
    finally:
        engine.close()


def test_ray_class_sums_partials_sum_exactly(local_ray, exported_encoder):
    """The class-sums pass alone: the summed partials are the very integers a ClassSumCounter
    accumulates over the whole file in one go (any sharding)."""
    from exporter.class_stats import ClassSumCounter
    from exporter.public_basis import PublicBasis
    from runtime.encoder import TextEncoder
    from runtime.tokenizer import TextTokenizer

    enc = exported_encoder.to_bundle_encoder()
    labels = read_labels(DATA / "labels.txt")
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.standard_normal((enc.dim, 16)))
    basis = PublicBasis(rng.standard_normal(enc.dim).astype(np.float32) * 0.01, q.T.astype(np.float32))
    spec = ray_engine.ReadSpec(str(DATA / "train.jsonl"), labels)
    total, stats = ray_engine.class_sums_with_ray(spec, enc, basis, 2.0, lines_per_shard=77)
    records = list(read_records(DATA / "train.jsonl", labels))
    ref = ClassSumCounter(basis, len(labels), 2.0)
    tok, te = TextTokenizer(enc.tokenizer_json, enc.max_length, enc.text_prefix), TextEncoder(enc, threads=1)
    ref.add(te.embed(tok.encode([r.text for r in records])), np.array([r.label for r in records]))
    assert stats.records == 560
    assert total.sums.dtype == np.int64 and np.array_equal(total.sums, ref.sums)


def test_malformed_line_names_file_and_line(local_ray, exported_encoder, tmp_path):
    lines = (DATA / "train.jsonl").read_text(encoding="utf-8").splitlines()[:300]
    lines[249] = '{"text": "broken", "label": '
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as ray_err:
        build(build_options(tmp_path / "b.dpedge", train=bad, engine="ray", hashing="random"), noise_for_tests=ConstantNoise(0))
    with pytest.raises(DatasetError) as local_err:
        list(read_records(bad, read_labels(DATA / "labels.txt")))
    assert str(ray_err.value) == str(local_err.value)
    assert str(ray_err.value).startswith(f"{bad}:250: not valid JSON")
    assert not (tmp_path / "b.dpedge").exists()
    with pytest.raises(DatasetError) as aligned_err:  # aligned: pass 1 stops first, nothing released
        build(build_options(tmp_path / "b.dpedge", train=bad, engine="ray"), noise_for_tests=ConstantNoise(0))
    assert str(aligned_err.value) == str(local_err.value)
    assert not (tmp_path / "b.dpedge").exists()


def test_cli_engine_ray(local_ray, exported_encoder, tmp_path, capsys):
    from exporter.__main__ import main

    out = tmp_path / "cli.dpedge"
    rc = main(["build", "--train", str(DATA / "train.jsonl"), "--labels", str(DATA / "labels.txt"),
               "--epsilon", "8", "--bits", "4", "--out", str(out), "--quiet", "--engine", "ray", "--hashing", "random",
               "--models-dir", str(DATA.parents[1] / "models")])
    assert rc == 0, capsys.readouterr().err
    assert "records counted: 560" in capsys.readouterr().out
    assert bundle_format.load(out).privacy["epsilon"] == 8


def test_ray_refuses_unit_column_and_csv(tmp_path):
    with pytest.raises(BuildError, match="--unit-column"):
        build(build_options(tmp_path / "u.dpedge", engine="ray", hashing="random", unit_field="user",
                                   max_records_per_unit=2))
    with pytest.raises(BuildError, match="JSONL only"):
        build(build_options(tmp_path / "c.dpedge", engine="ray", hashing="random", fmt="csv"))
    with pytest.raises(BuildError, match="--unit-column"):  # also under the default aligned hashing
        build(build_options(tmp_path / "a.dpedge", engine="ray", unit_field="user", max_records_per_unit=2))


def test_ray_not_installed_is_a_clear_error(tmp_path, monkeypatch):
    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray" or name.startswith("ray."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(BuildError, match=r"pip install 'dpedge\[ray\]'"):
        build(build_options(tmp_path / "n.dpedge", engine="ray", hashing="random"))


@pytest.mark.parametrize("settings", [dict(hashing="random"), dict(hashing="aligned"), dict(seed=None, delta=1e-5)],
                         ids=["random", "aligned", "head"])
def test_a_worker_that_embeds_otherwise_stops_the_build(local_ray, exported_encoder, tmp_path, monkeypatch, settings):
    """The driver's probe embeddings with one bit flipped stand for a worker on another CPU: every
    worker differs from them, so the build stops naming a worker's node, and writes nothing."""
    real = ray_engine.driver_probe

    def one_bit_off(encoder):
        probe = real(encoder).copy()
        probe.view(np.uint32)[0, 0] ^= 1
        return probe

    monkeypatch.setattr(ray_engine, "driver_probe", one_bit_off)
    out = tmp_path / "p.dpedge"
    with pytest.raises(BuildError) as err:
        build(build_options(out, engine="ray", **settings), noise_for_tests=ConstantNoise(0),
              gaussian_for_tests=ConstantGaussian(0))
    message = str(err.value)
    assert message.startswith("the Ray worker on node ") and "(host " in message and ", pid " in message
    assert (f"embeds the public probe texts differently from the driver: 1 of the {len(ray_engine.PROBE_TEXTS)} "
            f"probe texts embed differently (largest difference ") in message
    assert "nothing was written" in message and not out.exists()
