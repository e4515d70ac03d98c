"""pyproject.toml's metadata as setuptools reads it: the licence is an SPDX expression (PEP 639),
which every setuptools the build may use accepts without a deprecation warning (a table made
each install warn three times)."""

from __future__ import annotations

import re
import warnings

import pytest

from conftest import ROOT

tomllib = pytest.importorskip("tomllib", reason="Python 3.11+ reads TOML itself")

#: The first setuptools with PEP 639's `license` string and `license-files`.
PEP_639_SETUPTOOLS = (77, 0)


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_license_is_an_spdx_expression_and_its_files_exist():
    project = pyproject()["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] and all(list(ROOT.glob(p)) for p in project["license-files"])


def test_the_build_pulls_a_setuptools_that_knows_pep_639():
    [req] = [r for r in pyproject()["build-system"]["requires"] if r.startswith("setuptools")]
    m = re.fullmatch(r"setuptools\s*>=\s*(\d+)(?:\.(\d+))?", req)
    assert m, f"{req}: a minimum version, please"
    assert (int(m[1]), int(m[2] or 0)) >= PEP_639_SETUPTOOLS, req


def test_setuptools_reads_the_metadata_without_a_warning():
    setuptools = pytest.importorskip("setuptools")
    from setuptools.config.pyprojecttoml import apply_configuration
    from setuptools.dist import Distribution

    version = tuple(int(x) for x in setuptools.__version__.split(".")[:2])
    if version < PEP_639_SETUPTOOLS:
        pytest.skip(f"setuptools {setuptools.__version__} predates PEP 639 (the build pulls a newer one)")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a deprecation warning fails the test
        dist = apply_configuration(Distribution(), ROOT / "pyproject.toml")
    assert dist.metadata.license_expression == "Apache-2.0"
    assert [p.rsplit("/", 1)[-1] for p in dist.metadata.license_files] == ["LICENSE"]
