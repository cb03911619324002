"""images/build/fetch-source.sh, the one door for source archives: a missing or corrupt archive fails
with one line naming the file, the expected content hash and the setting to fix; a good one is verified
by its content hash (whatever compressed it) and stamped in the cache, never in the mirror."""

from __future__ import annotations

import io
import os
import re
import subprocess
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FETCH = ROOT / "images" / "build" / "fetch-source.sh"


def pins() -> dict[str, str]:
    text = (ROOT / "images" / "sources.env").read_text()
    return dict(re.findall(r"^([A-Z0-9_]+)=(\S*)$", text, re.M))


def fetch(name: str, mirror: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PFSLAYOUT_SOURCE_MIRROR=str(mirror), PFSLAYOUT_CACHE=str(cache))
    return subprocess.run([str(FETCH), name], env=env, capture_output=True, text=True, timeout=600)


def test_a_missing_archive_is_one_line_naming_file_hash_and_setting(tmp_path: Path) -> None:
    p = pins()
    proc = fetch("orangefs", tmp_path / "mirror", tmp_path / "cache")
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert str(tmp_path / "mirror" / p["ORANGEFS_ARCHIVE"]) in line
    assert p["ORANGEFS_CONTENT_SHA256"] in line and "PFSLAYOUT_SOURCE_MIRROR" in line, line


def test_a_corrupt_archive_is_refused_with_its_hash_and_the_expected_one(tmp_path: Path) -> None:
    p = pins()
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    # A well-formed archive of the wrong tree: only the content hash can tell.
    with tarfile.open(mirror / p["IOR_ARCHIVE"], "w:gz") as tar:
        data = b"not ior\n"
        info = tarfile.TarInfo("ior-4.0.0/README")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    proc = fetch("ior", mirror, tmp_path / "cache")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert str(mirror / p["IOR_ARCHIVE"]) in lines[0] and f"expected {p['IOR_CONTENT_SHA256']}" in lines[0]
    assert "PFSLAYOUT_SOURCE_MIRROR" in lines[0]
    assert not list(mirror.glob("*.verified")) and sorted(os.listdir(mirror)) == [p["IOR_ARCHIVE"]]


@pytest.mark.skipif(not os.environ.get("PFSLAYOUT_SOURCE_MIRROR"),
                    reason="PFSLAYOUT_SOURCE_MIRROR is not set: no pre-downloaded archives to verify here")
def test_the_mirror_archives_verify_and_the_mirror_stays_untouched(tmp_path: Path) -> None:
    mirror = Path(os.environ["PFSLAYOUT_SOURCE_MIRROR"])
    before = sorted(os.listdir(mirror))
    for name in ("orangefs", "ior"):
        proc = fetch(name, mirror, tmp_path / "cache")
        assert proc.returncode == 0, proc.stderr
        assert Path(proc.stdout.strip()).resolve().parent == mirror.resolve()
    assert sorted(os.listdir(mirror)) == before
    assert len(list((tmp_path / "cache" / "sources" / "verified").iterdir())) == 2
