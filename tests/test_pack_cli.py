"""Statistics bundles (format 1.1) at the command lines, with the corpus's bundles and tiny
packs (seconds, no torch): the sizes `--info` and `exporter inspect` state, whose total is the
file's and never smaller than one of its parts (the encoder in a pack is stated apart), and
the option every command names when the pack a bundle needs is missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import DATA, ROOT
from runtime.classify import OPTION_HINTS

CORPUS = ROOT / "format" / "1" / "corpus"
STATS = CORPUS / "accept" / "statistics.dpedge"
ONE_FILE = CORPUS / "accept" / "default.dpedge"
PACK = CORPUS / "packs" / "tiny-onnx.dpedge-encoder"


def run(*args: str):
    env = {k: v for k, v in os.environ.items() if k not in ("DPEDGE_BUNDLE", "DPEDGE_ENCODER_PACK")}
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, cwd=ROOT,
                          env={**env, "HF_HUB_OFFLINE": "1"}, timeout=300)


def mib(n: int) -> float:
    return round(n / 2**20, 2)


def size_line(stdout: str) -> str:
    [line] = [x for x in stdout.splitlines() if x.startswith("size ")]
    return line[len("size"):].strip()


def check_sizes(line: str, sizes: dict[str, int]) -> None:
    """The line's total is the file's, its parts are the file's parts (each at most the total,
    together about it), and a pack's encoder is stated after them, not as a part."""
    head, _, rest = line.partition(": ")
    total = float(head.split()[0])
    assert total == mib(sizes["file"]), line
    parts_text, _, after = rest.partition("; ")
    parts = {name: float(value) for name, value, unit in (p.split() for p in parts_text.split(", "))}
    assert all(v <= total for v in parts.values()), f"a part larger than the total: {line}"
    assert sum(parts.values()) <= total + 0.005 * len(parts), line
    assert parts == {k: mib(v) for k, v in sizes.items() if k not in ("file", "encoder_pack")}, line
    if "encoder_pack" in sizes:
        assert "in this file" in head and "total" not in head, line
        assert f"{mib(sizes['encoder_pack']):.2f} MiB" in after and "encoder pack" in after, line
    else:
        assert after == "", line


@pytest.mark.check
@pytest.mark.parametrize("bundle,pack", [(ONE_FILE, None), (STATS, PACK)], ids=["one-file", "statistics"])
def test_info_sizes_total_is_the_file_and_a_pack_is_apart(bundle, pack):
    args = ["runtime.classify", "--bundle", str(bundle), "--info"] + ([] if pack is None else ["--encoder-pack", str(pack)])
    r = run(*args)
    assert r.returncode == 0, r.stderr
    j = run(*args, "--json")
    sizes = json.loads(j.stdout)["sizes_bytes"]
    assert ("encoder_pack" in sizes) == (pack is not None) and ("encoder" in sizes) == (pack is None)
    check_sizes(size_line(r.stdout), sizes)


@pytest.mark.exporter  # python -m exporter
def test_inspect_states_the_same_sizes(tmp_path):
    r = run("exporter", "inspect", str(STATS), "--encoder-pack", str(PACK))
    assert r.returncode == 0, r.stderr
    c = run("runtime.classify", "--bundle", str(STATS), "--encoder-pack", str(PACK), "--info")
    assert size_line(r.stdout) == size_line(c.stdout)
    check_sizes(size_line(r.stdout), json.loads(run("exporter", "inspect", str(STATS), "--encoder-pack", str(PACK),
                                                    "--json").stdout)["sizes_bytes"])


@pytest.mark.exporter  # python -m exporter
@pytest.mark.parametrize("command", [
    ["runtime.classify", "--bundle", str(STATS), "hello"],
    ["runtime.classify", "--bundle", str(STATS), "--info"],
    ["exporter", "inspect", str(STATS)],
    ["exporter", "evaluate", "--bundle", str(STATS), "--test", str(DATA / "test.jsonl")],
], ids=["classify", "classify-info", "inspect", "evaluate"])
def test_a_missing_pack_names_the_option_in_every_command(command):
    r = run(*command)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "none was given" in r.stderr and f"({OPTION_HINTS['pack.missing']})" in r.stderr, r.stderr
    assert "--encoder-pack PACK" in r.stderr, r.stderr
