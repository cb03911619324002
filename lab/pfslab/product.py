"""The product's CLI as the lab uses it: ``pfslayout`` in a child process with this interpreter, the way
a user runs it, so the lab exercises the same commands (render, calibrate) and their one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from pfslab.net import LabError


def pfslayout_json(*args: str, timeout: float = 300) -> Any:
    """Run ``pfslayout ARGS`` (which must print one JSON document) and return the document; a failure is
    a LabError quoting the CLI's own message."""
    done = subprocess.run([sys.executable, "-c", "from pfslayout.cli import main; main()", *args],
                          capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise LabError(f"pfslayout {' '.join(args[:2])} failed: {done.stderr.strip()}")
    return json.loads(done.stdout)
