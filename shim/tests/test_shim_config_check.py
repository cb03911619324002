"""Every config pfslayout renders is accepted by the shim's own parser (`pfsshim-check`), and what the
typed model refuses the shim refuses too, naming the same field — in both MPI builds of shim/build.sh."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pfstestkit.shim import BUILD_DIR, FLAVOURS

ROOT = Path(__file__).resolve().parents[2]
# The shared vectors, as the C tests read them: rendered by pfslayout.shimconfig, and kept equal to what
# the generator writes by operator/tests/unit/test_shimconfig.py.
VECTORS = json.loads((ROOT / "operator" / "tests" / "vectors" / "shim-configs.json").read_text())


@pytest.fixture(params=FLAVOURS)
def checker(request: pytest.FixtureRequest) -> Path:
    path = BUILD_DIR / request.param / "src" / "pfsshim-check"
    if not path.exists():
        pytest.skip(f"{path} is not built; run shim/build.sh (e2e/test-all.sh does)")
    return path


def _check(checker: Path, text: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "shim.json"
    config.write_text(text)
    return subprocess.run([str(checker), str(config)], capture_output=True, text=True, timeout=30, check=False)


def test_every_rendered_config_is_accepted(checker: Path, tmp_path: Path) -> None:
    configs = VECTORS["accepted"]
    assert len(configs) >= 20
    for case in configs:
        res = _check(checker, case["text"], tmp_path)
        ok = res.returncode == 0 and res.stdout.count("\n") == 1 and ": ok (" in res.stdout
        assert ok, (case["name"], res.stdout)


def test_what_the_model_refuses_the_shim_refuses(checker: Path, tmp_path: Path) -> None:
    for case in VECTORS["refused"]:
        res = _check(checker, case["text"], tmp_path)
        assert res.returncode == 2, (case["name"], res.stdout)
        assert res.stdout.count("\n") == 1 and f"shim.json: {case['field']}: " in res.stdout, (case["name"], res.stdout)
