"""The three readers answer the same hostile bundles and strings alike (tests/fuzz/
reader_agreement.py at a fixed small size and seed; its long run is the script itself).

Needs the Java toolchain and the web runtime's packages (web/node_modules): without them it is
skipped, saying what to install, unless DPEDGE_REQUIRE_JAVA or DPEDGE_WEB_REQUIRE says that a
missing toolchain is an error (CI). `make test-web` runs it after the web runtime's own tests;
`make test-runtime` leaves it out (marker `web`): it reads web/'s build, which `make test-web` rewrites.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from fuzz import reader_agreement

pytestmark = [pytest.mark.fuzz, pytest.mark.java, pytest.mark.web]

WEB = Path(reader_agreement.ROOT) / "web"


def _needs(what: str, present: bool, env: str) -> None:
    if present:
        return
    if os.environ.get(env):
        pytest.fail(f"{what} missing")
    pytest.skip(f"{what} missing")


def test_three_readers_agree_on_mutated_bundles_and_strings(capsys):
    _needs("Java toolchain (apt-get install default-jdk-headless junit4)",
           bool(shutil.which("javac")) and Path("/usr/share/java/junit4.jar").is_file(), "DPEDGE_REQUIRE_JAVA")
    _needs("web runtime packages (cd web && npm ci)", (WEB / "node_modules").is_dir() and bool(shutil.which("node")),
           "DPEDGE_WEB_REQUIRE")
    status = reader_agreement.main(["--bundles", "600", "--strings", "3000", "--seed", "7"])
    out, err = capsys.readouterr()
    print(out)
    assert status == 0, err[-5000:]
    rows = [line for line in out.splitlines() if line.startswith(("| java |", "| web |"))]
    assert [r.split("|")[2].strip() for r in rows] == ["600", "600"], out  # both readers answered every bundle
    assert "Python accepts 0," not in out, out  # some bundles were read, tokenized and scored
