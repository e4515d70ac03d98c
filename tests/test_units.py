"""Per-person contribution bounding: at most K records per unit, chosen without looking at
labels or texts, uniformly among the unit's records."""

from collections import Counter

import numpy as np
import pytest

from exporter.units import UnitBound


def test_keeps_at_most_k_per_unit_and_everything_of_small_units():
    units = ["a"] * 10 + ["b"] * 3 + ["c"]
    bound = UnitBound(k=3)
    bound.plan(units)
    kept = list(bound.keep(list(enumerate(units)), unit_of=lambda r: r[1]))
    per_unit = Counter(u for _, u in kept)
    assert per_unit == {"a": 3, "b": 3, "c": 1}
    assert [i for i, u in kept if u != "a"] == list(range(10, 14))  # small units untouched, order kept
    assert (bound.stats.units, bound.stats.units_over_bound, bound.stats.records_dropped) == (3, 1, 7)


def test_the_choice_is_uniform_over_a_units_records():
    """Each of a unit's 6 records is kept with probability K/6 = 1/3, whatever its position:
    not the first K in file order. 3000 plans; each count is binomial(3000, 1/3): mean 1000,
    sd about 26, so the bound is 5 sd."""
    hits = np.zeros(6)
    for _ in range(3000):
        bound = UnitBound(k=2)
        bound.plan(["u"] * 6)
        for i, _ in bound.keep(list(enumerate(["u"] * 6)), unit_of=lambda r: r[1]):
            hits[i] += 1
    assert np.all(np.abs(hits - 1000) < 130), hits


def test_selection_ignores_labels_and_texts():
    """The keep decision is a function of unit and position only: the same plan applied to
    records with different labels and texts keeps the same positions."""
    units = ["a"] * 8 + ["b"] * 5
    bound = UnitBound(k=2)
    bound.plan(units)
    first = [i for i, _, _ in bound.keep([(i, u, "label-x") for i, u in enumerate(units)], unit_of=lambda r: r[1])]
    second = [i for i, _, _ in bound.keep([(i, u, f"other text {i}") for i, u in enumerate(units)],
                                          unit_of=lambda r: r[1])]
    assert first == second and len(first) == 4


def test_the_cap_holds_whatever_the_second_pass_sees():
    """Defect 1 of issue 16: a unit with at most K records in the first pass (or new in the
    second) used to be kept in full. Now keep never yields more than K of any unit, and says
    the passes disagreed."""
    bound = UnitBound(k=3)
    bound.plan(["a", "a", "b"])
    second = ["a"] * 10 + ["new"] * 5 + ["b"]
    kept = Counter(bound.keep(second, unit_of=lambda u: u))
    assert kept == {"a": 3, "new": 3, "b": 1} and not bound.consistent
    assert list(bound.keep(["a", "a", "b"], unit_of=lambda u: u)) == ["a", "a", "b"] and bound.consistent


def test_k_must_be_positive():
    with pytest.raises(ValueError, match="at least 1"):
        UnitBound(k=0)


# --------------------------------------------------------------------------- through the exporter

import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

from conftest import DATA, ROOT, build_options  # noqa: E402
from exporter.build import BuildError, build  # noqa: E402
from exporter.dataset import DatasetError  # noqa: E402
from noise_hooks import ConstantNoise  # noqa: E402
from runtime import bundle as fmt  # noqa: E402

pytestmark = pytest.mark.exporter


def _with_units(tmp_path, unit_of) -> "Path":
    rows = [json.loads(line) for line in (DATA / "train.jsonl").read_text(encoding="utf-8").splitlines() if line]
    path = tmp_path / "train-units.jsonl"
    path.write_text("".join(json.dumps({**r, "user_id": unit_of(i)}) + "\n" for i, r in enumerate(rows)),
                    encoding="utf-8")
    return path


def test_per_person_build_keeps_k_per_person_and_says_so(exported_encoder, tmp_path):
    """560 records from 8 people (one with 300): at most K = 4 each are counted, and the
    bundle's privacy facts name the unit with sensitivity K*T."""
    train = _with_units(tmp_path, lambda i: "heavy" if i < 300 else f"p{i % 7}")
    report = build(build_options(tmp_path / "u.dpedge", train=train, unit_field="user_id", max_records_per_unit=4,
                                 votes_share=0.1, tables=8, bits=4), noise_for_tests=ConstantNoise(0))
    b = fmt.load(report.out)
    assert b.votes.sum() == 8 * 4 * 8  # 8 people x 4 records, in each of 8 tables
    assert b.class_counts.sum() == 8 * 4
    assert report.units.units == 8 and report.units.records_dropped == 560 - 32
    p = b.privacy
    counts, sums, votes = b.releases.values()
    assert (p["max_records_per_unit"], votes.sensitivity_l1) == (4, 32)
    assert votes.noise_scale == pytest.approx(4 * 8 / votes.epsilon)
    # the class statistics scale with K too: a count per record, the clip per record
    assert counts.sensitivity_l1 == 4 and sums.sensitivity_l1 == 4 * round(100 * sums.clip_l1)
    assert p["privacy_unit"] == "one person, up to 4 records" and "'user_id'" in p["neighbour_relation"]


def test_unit_settings_must_come_together(tmp_path):
    with pytest.raises(BuildError, match="needs --max-records-per-unit"):
        build(build_options(tmp_path / "x.dpedge", unit_field="user_id"))
    with pytest.raises(BuildError, match="needs --unit-column"):
        build(build_options(tmp_path / "x.dpedge", max_records_per_unit=3))
    assert not (tmp_path / "x.dpedge").exists()


def test_a_record_without_its_unit_is_an_error_naming_the_line(exported_encoder, tmp_path):
    train = _with_units(tmp_path, lambda i: "" if i == 41 else f"p{i % 5}")
    with pytest.raises(DatasetError, match=r"train-units.jsonl:42: the unit column 'user_id' must be a non-empty"):
        build(build_options(tmp_path / "x.dpedge", train=train, unit_field="user_id", max_records_per_unit=2))


def test_cli_per_person_flags(exported_encoder, tmp_path):
    train = _with_units(tmp_path, lambda i: f"p{i % 9}")
    r = subprocess.run([sys.executable, "-m", "exporter", "build", "--train", str(train), "--labels",
                        str(DATA / "labels.txt"), "--epsilon", "4", "--unit-column", "user_id",
                        "--max-records-per-unit", "10", "--out", str(tmp_path / "cli.dpedge"), "--quiet"],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "per one person, up to 10 records" in r.stdout and "privacy units: 9" in r.stdout
    bad = subprocess.run([sys.executable, "-m", "exporter", "build", "--train", str(train), "--labels",
                          str(DATA / "labels.txt"), "--epsilon", "4", "--max-records-per-unit", "10",
                          "--out", str(tmp_path / "bad.dpedge")], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert bad.returncode == 2 and "needs --unit-column" in bad.stderr and not (tmp_path / "bad.dpedge").exists()


def _growing_between_passes(monkeypatch, path, extra_rows):
    """The real reader, but the file gains ``extra_rows`` once the first (units-only) pass over
    it has finished: a dataset still being written while the build reads it."""
    import exporter.local_engine as local_engine

    real, calls = local_engine.read_records, []

    def read_records(p, *args, **kwargs):
        calls.append(p)
        yield from real(p, *args, **kwargs)
        if len(calls) == 1:
            with open(path, "a", encoding="utf-8") as f:
                f.writelines(json.dumps(r) + "\n" for r in extra_rows)
    monkeypatch.setattr(local_engine, "read_records", read_records)


@pytest.mark.parametrize("who", ["p1", "newcomer"], ids=["a unit grows", "a unit new in pass 2"])
def test_a_file_that_changes_between_the_passes_is_refused(exported_encoder, tmp_path, monkeypatch, who):
    train = _with_units(tmp_path, lambda i: f"p{i % 7}")
    _growing_between_passes(monkeypatch, train, [{"text": f"set an alarm number {i}", "label": "alarm_timer",
                                                  "user_id": who} for i in range(40)])
    out = tmp_path / "grown.dpedge"
    with pytest.raises(BuildError, match="changed between the passes over it; nothing was written"):
        build(build_options(out, train=train, unit_field="user_id", max_records_per_unit=3))
    assert not out.exists() and not list(tmp_path.glob(".grown.dpedge.*"))
