"""Edges of the release path's guarantee: nothing the records hold may stop a build (exact values
are clamped, the engine's memory is per session, Ray workers must embed as the driver does),
no error or report line quotes a private value, and the settings a mode ignores are refused."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import build_options
from exporter import privacy
from exporter.__main__ import _print_report
from exporter.build import build
from noise_hooks import ConstantNoise
from runtime import bundle as bundle_format


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
