"""The lint command (e2e/lint.sh) can fail, and says where: each check's own command line
(pfstestkit.lint, the one place they are written) run on a small file made to fail names the file, the
line and the rule, and exits non-zero. Also: which files the checks cover, and the command's usage and
its stop at the first check with a finding. Builds nothing; seconds."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pfstestkit import REPO, lint

LINT_SH = REPO / "e2e" / "lint.sh"


def run(cmd: list[str]) -> lint.Outcome:
    outcome = lint.run(cmd)
    print(outcome.output)  # shown when an assertion fails
    return outcome


def test_ruff_names_file_line_and_rule(tmp_path: Path) -> None:
    bad = tmp_path / "unused.py"
    bad.write_text('"""A module."""\n\nimport os\n')
    outcome = run(lint.ruff_command([str(bad)]))
    assert not outcome.ok
    assert f"{bad}:3:8: F401 " in outcome.output


def test_shellcheck_names_file_line_and_rule(tmp_path: Path) -> None:
    bad = tmp_path / "unquoted.sh"
    bad.write_text('#!/usr/bin/env bash\nset -euo pipefail\nrm -f $1\n')
    outcome = run(lint.shellcheck_command([str(bad)]))
    assert not outcome.ok
    assert f"{bad}:3:7: " in outcome.output and "[SC2086]" in outcome.output


def test_shellcheck_follows_a_sourced_file_beside_the_script(tmp_path: Path) -> None:
    """`source-path=SCRIPTDIR`: a `# shellcheck source=` directive names the file beside the script, whatever
    the working directory, and a variable it sets counts as set."""
    (tmp_path / "settings.env").write_text("NAME=x\n")
    script = tmp_path / "uses.sh"
    script.write_text('#!/usr/bin/env bash\nhere=$(dirname "$0")\n# shellcheck source=settings.env\n'
                      '. "$here/settings.env"\necho "$NAME"\n')
    assert run(lint.shellcheck_command([str(script)])).ok


def test_actionlint_names_file_line_and_rule_in_steps_and_run_scripts(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    steps:\n"
                   "      - run: echo ${{ github.event.nope.x }} $1\n        shell: bash\n"
                   "      - uses: actions/checkout@v4\n        with: {bogus: 1}\n")
    outcome = run(lint.actionlint_command([str(bad)]))
    assert not outcome.ok
    assert f"{bad}:9:" in outcome.output and "[action]" in outcome.output, outcome.output  # an unknown input
    assert "[shellcheck]" in outcome.output and "SC2086" in outcome.output, outcome.output  # the run: script


def test_the_workflows_are_found() -> None:
    found = lint.workflows()
    assert ".github/workflows/release.yaml" in found and ".github/workflows/pull-request.yaml" in found, found


def test_hadolint_names_file_line_and_rule(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM debian:latest\nRUN apt-get update && apt-get install -y curl\n")
    outcome = run(lint.hadolint_command([str(bad)]))
    assert not outcome.ok
    assert f"{bad}:1 DL3007 " in outcome.output


@pytest.mark.parametrize("like", ["shim/src/config.c", "shim/src/init.c", "shim/probe/grid.c",
                                  "shim/tests/programs/mpiio_rw.c", "shim/tests/fuzz/fuzz_config.c"])
def test_the_c_check_names_file_line_and_warning(tmp_path: Path, like: str) -> None:
    """A source compiled as LIKE is (its rule's compiler and flags) with an unused variable."""
    bad = tmp_path / "unused.c"
    bad.write_text("int main(void)\n{\n    int unused;\n    return 0;\n}\n")
    rule = lint.c_rule(like)
    assert rule is not None
    outcome = run(lint.c_command(str(bad), rule))
    assert not outcome.ok
    assert f"{bad}:3:9: error: unused variable" in outcome.output
    assert "unused-variable]" in outcome.output  # gcc: [-Werror=unused-variable], clang: [-Werror,-Wunused-variable]


def test_mypy_names_file_line_and_code(tmp_path: Path) -> None:
    bad = tmp_path / "mistyped.py"
    # Content of its own each run: mypy's cache (shared with the lint) replays the findings of an unchanged
    # module with the path it had when they were found.
    bad.write_text(f'"""{tmp_path}"""\n\n\ndef count() -> int:\n    return "three"\n')
    outcome = run(lint.mypy_command([str(bad)]))
    assert not outcome.ok
    assert f"{bad}:5: error: " in outcome.output and "[return-value]" in outcome.output


def test_every_c_source_has_its_flags_and_only_the_orangefs_ones_need_a_tree() -> None:
    sources = lint.c_sources()
    assert "shim/src/init.c" in sources and "shim/tools/relayout/main.c" in sources
    commands, unknown, skipped = lint.c_plan(sources, None)
    assert unknown == []
    assert skipped and all(s == "shim/probe/backend_pvfs2.c" or s.startswith("shim/tools/relayout/") for s in skipped)
    assert len(commands) == len(sources) - len(skipped)
    # a source in a folder no rule knows is a finding, not silently skipped
    assert lint.c_plan(["shim/newpart/x.c"], None)[1] == ["shim/newpart/x.c"]


def test_shell_scripts_are_found_by_name_or_shebang() -> None:
    scripts = lint.shell_scripts()
    for path in ("e2e/lint.sh", "lab/lab", "lab/netns-launch", ".ci/run", "e2e/harness/cluster/lib.sh"):
        assert path in scripts
    assert not any(s.endswith((".py", ".md", ".yaml")) for s in scripts)


def test_every_python_file_is_in_one_of_the_two_mypy_runs() -> None:
    """The strict run's `files` (pyproject.toml) and the test profile's paths together cover every Python
    file of the repository: a new folder is type-checked, or this says where to add it."""
    strict = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]["files"]
    roots = [*strict, *lint.MYPY_LOOSE_PATHS]
    uncovered = [f for f in lint.repo_files() if f.endswith(".py")
                 and not any(f == r or f.startswith(r.rstrip("/") + "/") for r in roots)]
    assert uncovered == []


def test_bad_usage_is_one_line_and_exit_2() -> None:
    for args in (["--bogus"], ["--only", "nope"], ["--only"]):
        proc = subprocess.run([str(LINT_SH), *args], capture_output=True, text=True, timeout=60, check=False)
        assert proc.returncode == 2, (args, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1 and proc.stdout == "", (args, proc.stderr)
    proc = subprocess.run([str(LINT_SH), "--help"], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0 and "ruff" in proc.stdout and "mypy" in proc.stdout


def test_the_first_check_with_a_finding_stops_the_run(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    ran: list[str] = []

    def fake(name: str, ok: bool) -> lint.Outcome:
        ran.append(name)
        return lint.Outcome(ok, f"{name}.txt:1: finding [X1]\n")

    runners = {name: (lambda name=name: fake(name, name != "shellcheck")) for name in lint.CHECKS}
    monkeypatch.setattr(lint, "RUNNERS", runners)
    assert lint.main([]) == 1
    assert ran == ["ruff", "shellcheck"]
    out = capsys.readouterr()
    assert "==> ruff\n==> shellcheck\nshellcheck.txt:1: finding [X1]\n" in out.out
    assert "ruff.txt" not in out.out and "shellcheck has findings" in out.err

    ran.clear()
    assert lint.main(["--only", "hadolint,ruff"]) == 0
    assert ran == ["ruff", "hadolint"]
    assert capsys.readouterr().out.splitlines()[-1].startswith("lint: clean (ruff, hadolint) in ")


def test_tools_come_from_this_interpreters_venv() -> None:
    assert Path(lint.tool("ruff")).parent == Path(sys.executable).parent


def test_the_workflows_run_the_repositorys_own_scripts() -> None:
    """The workflows are thin callers: every repository path a `run:` step starts is an executable script
    here (the commands the test command runs: images/build.sh --push, charts/push.sh, e2e/lint.sh, …)."""
    import yaml

    called = []
    for wf in lint.workflows():
        for job in yaml.safe_load((REPO / wf).read_text())["jobs"].values():
            for step in job["steps"]:
                for line in str(step.get("run", "")).splitlines():
                    for word in line.split():
                        if re.fullmatch(r"(?:images|charts|e2e|lab|shim|operator)/[\w./-]+\.sh|e2e/[\w./-]+", word):
                            called.append(word)
    assert {"images/build.sh", "charts/push.sh", "e2e/lint.sh", "e2e/test-all.sh"} <= set(called), called
    for path in called:
        assert (REPO / path).is_file() and os.access(REPO / path, os.X_OK), path
