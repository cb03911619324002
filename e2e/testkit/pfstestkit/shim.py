"""Helpers for the shim's MPI integration tests: the two builds of shim/build.sh and real mpirun."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pfstestkit import REPO

SHIM_DIR = REPO / "shim"
BUILD_DIR = SHIM_DIR / "build"
FLAVOURS = ("openmpi", "mpich")
CONFIG_FORMAT = "pfsshim-config/1"


@dataclass(frozen=True)
class MpiBuild:
    """One tree of shim/build.sh (libpfsshim + test programs built with one MPI) and its launcher."""

    flavour: str
    root: Path

    @property
    def lib(self) -> Path:
        return self.root / "src" / "libpfsshim.so"

    def program(self, name: str) -> Path:
        return self.root / "tests" / "programs" / name

    def command(self, np: int, argv: Sequence[str | Path], env: dict[str, str]) -> list[str]:
        # The variables go to the ranks only: the launcher itself must not preload the shim.
        if self.flavour == "openmpi":
            cmd = ["mpirun.openmpi", "--allow-run-as-root", "--oversubscribe", "-np", str(np)]
            for key, value in env.items():
                cmd += ["-x", f"{key}={value}"]
        else:
            cmd = ["mpirun.mpich", "-launcher", "fork", "-np", str(np)]
            for key, value in env.items():
                cmd += ["-env", key, value]
        return cmd + [str(a) for a in argv]

    def run(self, np: int, argv: Sequence[str | Path], env: dict[str, str] | None = None,
            timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(self.command(np, argv, env or {}), capture_output=True, text=True,
                              timeout=timeout, env=launcher_env())
        if check and proc.returncode != 0:
            raise AssertionError(f"{self.flavour} mpirun -np {np} {argv} exited {proc.returncode}\n"
                                 f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
        return proc

    def shim_env(self, config: Path | None = None, **extra: str) -> dict[str, str]:
        env = {"LD_PRELOAD": str(self.lib)}
        if config is not None:
            env["PFSLAYOUT_SHIM_CONFIG"] = str(config)
        env.update(extra)
        return env


def launcher_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "PFSLAYOUT_SHIM_CONFIG")}
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    return env


def write_config(path: Path, rules: list[dict[str, Any]] | None = None, **top: Any) -> Path:
    doc: dict[str, Any] = {"format": CONFIG_FORMAT}
    doc.update(top)
    if rules is not None:
        doc["rules"] = rules
    path.write_text(json.dumps(doc, indent=1))
    return path


def pfslayout_cmd() -> list[str]:
    """The pfslayout CLI of the interpreter running the tests (the project's venv)."""
    script = Path(sys.executable).parent / "pfslayout"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from pfslayout.cli import main; main()"]
