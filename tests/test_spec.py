"""The specification is a spec: its tables are the schema's, it stays short, and no document
points a reader at something they cannot look up."""

from __future__ import annotations

import re
import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "docs"))
import format_tables  # noqa: E402

DOCS = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md", ROOT / "android_demo" / "README.md"]


def test_the_spec_tables_are_generated_from_the_schema():
    assert format_tables.render(format_tables.SPEC.read_text(encoding="utf-8")) == \
        format_tables.SPEC.read_text(encoding="utf-8"), "run: python docs/format_tables.py"


def test_the_spec_is_at_most_20_kb_and_the_readme_14_kb():
    assert format_tables.SPEC.stat().st_size <= 20_000
    assert (ROOT / "README.md").stat().st_size <= 14_000


def test_no_document_cites_an_issue_number_or_a_fuzz_run_letter():
    cited = re.compile(r"\b[Ii]ssues? #?\d+|#\d{1,3}\b|\bruns? [A-J]\b|\bfinding \d+\b")
    for path in DOCS:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            assert not cited.search(line), f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
