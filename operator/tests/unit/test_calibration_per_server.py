"""Per-server storage parameters (heterogeneous servers): recovered from probes pinned to each server,
with the network held at the global fit; unprobed servers inherit the global values."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pfslayout.calibration import (
    design_grid,
    fit,
    fit_server,
    parse_probe,
    server_grid,
    simulate_probe,
    with_servers,
)
from pfslayout.costmodel import CostParams
from pfslayout.errors import InputError

MIB = 1 << 20
BASE = CostParams(e=2e-4, v=1 / (400 * MIB), alpha_seq=6e-5, alpha_rand=4e-4, beta=1 / (150 * MIB))
SLOW = BASE.model_copy(update={"beta": 1 / (40 * MIB), "alpha_rand": 1.2e-3})  # an aged disk
FAST = BASE.model_copy(update={"beta": 1 / (900 * MIB), "alpha_seq": 2e-5, "alpha_rand": 5e-5})  # an SSD


def probes(seed: int = 0) -> tuple:
    glob = parse_probe(simulate_probe(design_grid(4, 2, 4), BASE, noise=0.02, seed=seed), "global.json")
    grid = server_grid(4)
    per = {1: parse_probe(simulate_probe(grid, SLOW, noise=0.02, seed=seed + 1), "s1.json"),
           3: parse_probe(simulate_probe(grid, FAST, noise=0.02, seed=seed + 2), "s3.json")}
    return glob, per


def test_server_grid_identifies_storage_given_the_network() -> None:
    grid = server_grid(4)
    assert grid.servers == 1 and grid.design.rank == 3
    assert {c.layout for c in grid.cells} == {"1-DV"} and {c.pattern for c in grid.cells} == {"sequential", "random"}
    assert all(c.m == c.p for c in grid.cells)  # packed on one node


@pytest.mark.parametrize("seed", [0, 10])
def test_heterogeneous_servers_are_recovered(seed: int) -> None:
    glob, per = probes(seed)
    result = fit(glob, per_server=per)
    servers = result.params.servers
    assert servers is not None and len(servers) == 4
    for index, truth in ((1, SLOW), (3, FAST)):
        for name in ("alpha_seq", "alpha_rand", "beta"):
            assert getattr(servers[index], name) == pytest.approx(getattr(truth, name), rel=0.1), (index, name)
    for index in (0, 2):  # not probed: inherit
        assert servers[index].model_dump(exclude_none=True) == {}
        assert result.params.for_server(index).beta == result.params.beta
    assert result.params.heterogeneous and result.warnings == []
    doc = result.to_dict()
    assert [s["index"] for s in doc["servers"]] == [0, 1, 2, 3]
    assert [q["index"] for q in doc["fit"]["servers"]] == [1, 3]
    assert all(q["r2"] > 0.99 for q in doc["fit"]["servers"])
    assert CostParams.model_validate(doc).for_server(1).beta == pytest.approx(SLOW.beta, rel=0.1)


def test_problems_are_named() -> None:
    glob, per = probes()
    with pytest.raises(InputError, match=r"global.json: platform.servers: is 4; a per-server probe targets one"):
        fit_server(0, BASE, glob)
    with pytest.raises(InputError, match=r"server index 7 is outside 0..3"):
        fit(glob, per_server={7: per[1]})
    # a global network far too slow for this server's measurements is called out
    slow_network = BASE.model_copy(update={"e": 0.05})
    assert any("exceed" in w for w in fit_server(1, slow_network, per[1]).warnings)
    # a server whose disk term vanishes keeps the global beta instead of an invalid 0
    zero = fit_server(1, BASE.model_copy(update={"v": 1e-6}), per[1])
    assert zero.values == {"alpha_seq": None, "alpha_rand": None, "beta": None}
    assert "server 1: beta fitted at the bound 0; the server keeps the global value" in zero.warnings
    merged = with_servers(BASE, [zero], 4)
    assert merged.servers is not None and merged.servers[1].beta is None and merged.for_server(1).beta == BASE.beta


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("pfslayout")
    command = [str(script)] if script.exists() else [sys.executable, "-c", "from pfslayout.cli import main; main()"]
    return subprocess.run([*command, *args], capture_output=True, text=True, check=False, timeout=120)


def test_cli_server_measurements(tmp_path: Path) -> None:
    glob = tmp_path / "global.json"
    glob.write_text(json.dumps(simulate_probe(design_grid(4, 2, 4, max_configs=10), BASE, noise=0.01)))
    s1 = tmp_path / "s1.json"
    s1.write_text(json.dumps(simulate_probe(server_grid(4), SLOW, noise=0.01, seed=4)))
    ok = cli("calibrate", "--measurements", str(glob), "--server-measurements", f"1={s1}", "--json")
    assert ok.returncode == 0, ok.stderr
    doc = json.loads(ok.stdout)
    assert doc["servers"][1]["beta"] == pytest.approx(SLOW.beta, rel=0.1) and doc["servers"][0] == {"index": 0}
    bad = cli("calibrate", "--measurements", str(glob), "--server-measurements", f"one={s1}")
    assert bad.returncode == 2 and "--server-measurements: 'one=" in bad.stderr and "Traceback" not in bad.stderr
    wrong = cli("calibrate", "--measurements", str(glob), "--server-measurements", f"0={glob}")
    assert wrong.returncode == 2 and "platform.servers: is 4" in wrong.stderr
