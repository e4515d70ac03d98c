"""The specification is a spec: its tables are the contract's data, it stays short, and no document
points a reader at something they cannot look up."""

from __future__ import annotations

import re
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "format" / "tools"))
import gen_spec  # noqa: E402

DOCS = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md", ROOT / "android_demo" / "README.md",
                                               ROOT / "format" / "README.md"]


@pytest.mark.check
def test_the_spec_tables_are_generated_from_the_contract():
    assert gen_spec.render(gen_spec.SPEC.read_text(encoding="utf-8")) == \
        gen_spec.SPEC.read_text(encoding="utf-8"), "run: python format/tools/gen_spec.py"


@pytest.mark.check
def test_the_spec_is_at_most_43_kb_and_the_readme_15_5_kb():
    # The spec holds every normative rule a fourth reader needs (tokenizer, text, error codes).
    # 1.1: packs, head; 1.2: MPNet family, exact arithmetic; 1.3: the person-level head; then the
    # TFLite family's tensor indices and absent fields
    assert gen_spec.SPEC.stat().st_size <= 43_000
    assert (ROOT / "README.md").stat().st_size <= 15_500  # the opt-in head, then the laptop tier, added lines


@pytest.mark.check
def test_no_document_cites_an_issue_number_or_a_fuzz_run_letter():
    cited = re.compile(r"\b[Ii]ssues? #?\d+|#\d{1,3}\b|\bruns? [A-J]\b|\bfinding \d+\b")
    for path in DOCS:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            assert not cited.search(line), f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
