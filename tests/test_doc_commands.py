"""The documents' commands, run word for word where a fresh clone can run them.

A fenced block preceded by a marker comment is run as the reader would run it:

    <!-- run: fresh-clone -->         a shell block, in a fresh clone of the repository
    <!-- run: app -->                 a shell block, in an empty app folder (a package.json only)
    <!-- run: app, as NAME beside a bundle FILE -->
                                      a JavaScript block written to NAME in the app folder, with
                                      the committed corpus's default bundle as FILE, run by Node

in the order they appear in their document, with `/path/to/dpedge` standing for the clone. A
block that fails fails the test, with its document, line and output. The clone is of the
committed tree (`git clone`), so what passes here is what a new user gets, not the working tree.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow  # a fresh clone and npm installs: not the bare runtime's tier

DOCS = ["web/README.md"]
MARKED = re.compile(r"<!-- run: ([^>]*?) -->\n```(\w+)\n(.*?)\n```", re.S)
AS_FILE = re.compile(r"app, as (\S+) beside a bundle (\S+)")
CORPUS_BUNDLE = ROOT / "format" / "1" / "corpus" / "accept" / "default.dpedge"


def marked_blocks(doc: str) -> list[tuple[int, str, str, str]]:
    """(line, marker, language, text) of each marked block of a document, in order."""
    text = (ROOT / doc).read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 1, m[1].strip(), m[2], m[3]) for m in MARKED.finditer(text)]


def run(cmd: list[str], cwd: Path, where: str) -> str:
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"{where} failed (exit {r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed (Node 20 and npm: the web package's commands)")
    path = tmp_path_factory.mktemp("fresh") / "dpedge"
    run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(path)], ROOT, "git clone")
    return path


def test_every_marker_is_one_this_test_runs():
    markers = [(doc, line, marker) for doc in DOCS for line, marker, _, _ in marked_blocks(doc)]
    assert markers, "no marked block: the documents' commands are no longer run"
    for doc, line, marker in markers:
        assert marker in ("fresh-clone", "app") or AS_FILE.fullmatch(marker), f"{doc}:{line}: unknown marker {marker!r}"


def test_npm_pack_before_npm_ci_says_what_to_run(clone):
    # What a new user who skips `npm ci` sees: the command to run, not Node's "Cannot find package".
    r = subprocess.run(["npm", "pack", "--dry-run"], cwd=clone / "web", capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    assert "run `npm ci` in web/ first" in r.stderr and "Cannot find package" not in r.stderr


@pytest.mark.parametrize("doc", DOCS)
def test_a_documents_marked_commands_run_from_a_fresh_clone(doc, clone, tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    (app / "package.json").write_text('{"name": "app", "private": true, "type": "module"}\n', encoding="utf-8")
    for line, marker, language, text in marked_blocks(doc):
        where = f"{doc}:{line} ({marker})"
        text = text.replace("/path/to/dpedge", str(clone))
        if marker in ("fresh-clone", "app"):
            assert language in ("bash", "sh"), where
            run(["bash", "-euo", "pipefail", "-c", text], clone if marker == "fresh-clone" else app, where)
            continue
        name, bundle = AS_FILE.fullmatch(marker).groups()
        assert language == "js", where
        (app / name).write_text(text + "\n", encoding="utf-8")
        shutil.copyfile(CORPUS_BUNDLE, app / bundle)
        out = run(["node", name], app, where)
        (app / "labels.mjs").write_text('import { readFileSync } from "node:fs"; import { readBundle } from "dpedge";\n'
                                        "console.log(JSON.stringify((await readBundle(readFileSync(process.argv[2]))).labels));\n")
        labels = json.loads(run(["node", "labels.mjs", bundle], app, "reading the bundle's labels"))
        assert any(out.startswith(f"{label} ") for label in labels), f"{where}: printed {out!r}, not a label of {bundle}"


def test_make_web_package_writes_the_tarball_the_readme_installs(clone):
    # Runs after the document's blocks (module order): make web-package ran in the clone.
    version = json.loads((ROOT / "web" / "package.json").read_text(encoding="utf-8"))["version"]
    assert (clone / "web" / f"dpedge-{version}.tgz").is_file()
    assert f"/path/to/dpedge/web/dpedge-{version}.tgz" in (ROOT / "web" / "README.md").read_text(encoding="utf-8")
