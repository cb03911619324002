"""The test command itself (e2e/test-all.sh), run for real: a tier expression narrows the pytest session it
runs. Collect-only, so it builds and runs nothing; but the set-up steps and the session are the real ones."""

from __future__ import annotations

import re
import subprocess

from pfstestkit import REPO, tiers


def test_a_tier_expression_collects_that_tier_only() -> None:
    """`-m unit` once ran every tier, e2e included (the tier expression never reached the session that runs
    without the cluster), and so built the cluster's images and brought a cluster up for a 'unit' run."""
    done = subprocess.run([str(REPO / "e2e" / "test-all.sh"), "-m", "unit", "--co", "-q"], capture_output=True,
                          text=True, timeout=600, check=False, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    ids = [line for line in done.stdout.splitlines() if "::" in line]
    outside = sorted({i.split("::")[0] for i in ids if tiers.tier_of(REPO / i.split("::")[0]) != "unit"})
    assert len(ids) > 1000 and outside == [], outside[:10]
    summary = re.search(r"(\d+)/(\d+) tests collected \((\d+) deselected\)", done.stdout)
    assert summary and int(summary.group(1)) == len(ids) and int(summary.group(3)) > 0, done.stdout[-500:]
    # nothing built: only the set-up every run needs, then the one session
    steps = [re.sub(r" \(\d\d:\d\d:\d\d\)$", "", line[4:]) for line in done.stderr.splitlines()
             if line.startswith("==> ")]
    assert steps == ["host packages", "python environment", "pytest: unit"], steps
