"""The test tiers: which folder holds which tier, what each tier needs built, and the test command's plan
for a set of pytest arguments. The one place these facts live — the root conftest.py marks every
collected test from it, and e2e/test-all.sh asks it (``python -m pfstestkit.tiers plan ARGS``) what to
build before pytest starts, so `-m unit` builds nothing and a bad tier or path fails before any build.
"""

from __future__ import annotations

import ast
import itertools
import shlex
import sys
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pfstestkit import REPO

# tier -> what it is (the pytest marker's description)
TIERS: dict[str, str] = {
    "unit": "pure logic and checks of the repository's own files; needs nothing built",
    "integration": "real processes: the shim and probe under real mpirun, helm over the chart, libFuzzer",
    "orangefs": "real pvfs2-servers on loopback, started from the rendered fs.conf",
    "e2e": "a real API server and real pods on the test cluster (e2e/harness/cluster.sh)",
    "multinode": "real pods on several real nodes: the kind cluster (PFSLAYOUT_E2E_MODE=kind e2e/harness/cluster.sh)",
    "lab": "the performance lab's smoke runs: real servers in network namespaces behind shaped links",
}

# The folders of the tests, most specific first: a test's tier is that of the first folder holding it.
FOLDERS: tuple[tuple[str, str], ...] = (
    ("operator/tests/unit/", "unit"),
    ("operator/tests/tooling/", "unit"),
    ("operator/tests/integration/", "integration"),
    ("operator/tests/orangefs/", "orangefs"),
    ("shim/tests/orangefs/", "orangefs"),
    ("shim/tests/", "integration"),
    ("lab/tests/unit/", "unit"),
    ("lab/tests/", "lab"),
    ("e2e/tests/multinode/", "multinode"),
    ("e2e/tests/", "e2e"),
)

# What e2e/test-all.sh builds before pytest for a tier to run (each step cached by content under ~/.cache):
#   orangefs — OrangeFS and MPICH with ROMIO's pvfs2 driver (images/build/host.sh)
#   shim     — the C shim and probe for both MPIs, with the C unit tests (shim/build.sh --test)
#   helm     — Helm alone (e2e/harness/cluster.sh build helm)
#   cluster  — Helm, the Kubernetes binaries and the real node's images (e2e/harness/cluster.sh build)
#   kind     — kind and its node image, beside what `cluster` builds (PFSLAYOUT_E2E_MODE=kind ... build)
NEEDS: dict[str, tuple[str, ...]] = {
    "unit": (),
    "integration": ("orangefs", "shim", "helm"),
    "orangefs": ("orangefs", "shim"),
    "e2e": ("orangefs", "shim", "cluster", "kind"),
    "lab": ("orangefs", "shim"),
    "multinode": ("cluster", "kind"),
}
STEPS = ("orangefs", "shim", "helm", "cluster", "kind")


def tier_of(path: str | Path) -> str | None:
    """The tier of a test file (a path relative to the repository or absolute), None outside every folder."""
    rel = Path(path).resolve()
    try:
        text = rel.relative_to(REPO).as_posix()
    except ValueError:
        return None
    return next((tier for folder, tier in FOLDERS if text.startswith(folder)), None)


class PlanError(ValueError):
    """Arguments the test command cannot run: the message is the one line it prints."""


def _names(node: ast.expr, expr: str) -> set[str]:
    """The marker names of a `-m` expression (pytest's grammar: names, and/or/not, parentheses)."""
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.BoolOp):
        return set().union(*(_names(v, expr) for v in node.values))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _names(node.operand, expr)
    raise PlanError(f"-m {expr!r}: only marker names, and, or, not and parentheses")


def _holds(node: ast.expr, on: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in on
    if isinstance(node, ast.BoolOp):
        values = (_holds(v, on) for v in node.values)
        return all(values) if isinstance(node.op, ast.And) else any(values)
    assert isinstance(node, ast.UnaryOp)
    return not _holds(node.operand, on)


def tiers_of_expression(expr: str) -> set[str]:
    """The tiers a `-m` expression can select; a name that is neither a tier nor a marker fails naming it.
    Plain Python (no pytest), so the test command checks its arguments before it installs anything."""
    try:
        tree = ast.parse(expr.strip(), mode="eval").body
    except SyntaxError:
        raise PlanError(f"-m {expr!r}: not an expression of marker names") from None
    names = _names(tree, expr)
    unknown = sorted(n for n in names if n not in MARKERS)
    if unknown:
        raise PlanError(f"-m {expr!r}: unknown tier {unknown[0]!r}; the tiers are {', '.join(TIERS)}")
    others = sorted(names & ORDERING_MARKERS)
    selected = set()
    for tier in TIERS:
        # A test of the tier may carry any of the other markers or none: the tier is in if one combination is.
        for flags in itertools.product((False, True), repeat=len(others)):
            if _holds(tree, {tier} | {m for m, f in zip(others, flags) if f}):
                selected.add(tier)
                break
    return selected


# Markers that order, group or place tests inside a tier (not tiers; `-m` may name them too).
ORDERING_MARKERS = frozenset({"serial", "stops_cluster", "node_audit", "restarts_control_plane", "local_cluster"})
MARKERS: dict[str, str] = {
    **TIERS,
    "serial": "restarts, kills or reconfigures a part every test shares: runs alone, after the parallel tests",
    "stops_cluster": "stops the shared test cluster, so it runs after every other test",
    "node_audit": "checks what the session's pods ran with on the real node, so it runs after the tests that run them",
    "restarts_control_plane": "restarts the shared API server or etcd, so it runs after the other pod-running tests",
    "local_cluster": "needs the local control plane's own parts on this machine (its API server and etcd "
                     "processes, the real node's directories and containers, kwok's pod Stages, the host's route "
                     "to Service IPs): the test command runs these e2e tests there, the others on kind",
}


@dataclass(frozen=True)
class Plan:
    tiers: frozenset[str]
    steps: tuple[str, ...]
    paths: tuple[str, ...]
    markexpr: str | None = None  # the arguments' `-m` expressions, joined with `and`
    rest: tuple[str, ...] = ()  # the arguments without their `-m` options


def split_session(plan: Plan, tiers: str) -> str:
    """The `-m` expression of one of the test command's sessions: the arguments' own, narrowed to `tiers`."""
    return f"({plan.markexpr}) and ({tiers})" if plan.markexpr else tiers


def _option_value(args: Sequence[str], i: int, name: str) -> tuple[str | None, int]:
    arg = args[i]
    if arg == name:
        if i + 1 >= len(args):
            raise PlanError(f"{name} needs a value")
        return args[i + 1], i + 2
    if arg.startswith(name + "="):
        return arg.split("=", 1)[1], i + 1
    return None, i


# pytest options that take a separate value: their value is never a test path.
_VALUED = ("-k", "-n", "-p", "-c", "-o", "--maxfail", "--durations", "--junitxml", "--timeout", "--dist",
           "--basetemp", "--rootdir", "--deselect", "--ignore", "--log-level", "-W", "--tb")


def plan(args: Sequence[str]) -> Plan:
    """What the test command runs and builds for pytest arguments `args`."""
    tiers: set[str] = set(TIERS)
    paths: list[str] = []
    exprs: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        expr, j = _option_value(args, i, "-m")
        if expr is not None:
            tiers &= tiers_of_expression(expr)
            exprs.append(expr)
            i = j
            continue
        arg = args[i]
        if arg in _VALUED:
            rest += args[i:i + 2]
            i += 2
            continue
        rest.append(arg)
        if not arg.startswith("-"):
            path = arg.split("::", 1)[0]
            if not (REPO / path).exists() and not Path(path).exists():
                raise PlanError(f"no such test path: {path}")
            paths.append(arg)
        i += 1
    if paths:
        of_paths = set()
        for p in paths:
            target = Path(p.split("::", 1)[0])
            target = target if target.is_absolute() else (Path.cwd() / target)
            if target.is_dir():
                # the tiers of the folders inside it, and of the most specific folder holding it
                inside = [t for folder, t in FOLDERS if (REPO / folder).resolve().is_relative_to(target.resolve())]
                holding = next((t for folder, t in FOLDERS
                                if target.resolve().is_relative_to((REPO / folder).resolve())), None)
                of_paths.update(inside + ([holding] if holding else []))
            else:
                tier = tier_of(target)
                if tier is None:
                    raise PlanError(f"{p} is in no tier's folder ({', '.join(f for f, _ in FOLDERS)})")
                of_paths.add(tier)
        tiers &= of_paths
    steps = tuple(s for s in STEPS if any(s in NEEDS[t] for t in tiers))
    markexpr = (exprs[0] if len(exprs) == 1 else " and ".join(f"({e})" for e in exprs)) if exprs else None
    return Plan(frozenset(tiers), steps, tuple(paths), markexpr, tuple(rest))


def test_paths() -> tuple[str, ...]:
    """Every tier's top folders: pytest's `testpaths` (the root pyproject.toml), where a run given no test
    path collects."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    return tuple(config["tool"]["pytest"]["ini_options"]["testpaths"])


def main(argv: Iterable[str]) -> int:
    args = list(argv)
    if not args or args[0] != "plan":
        print("usage: python -m pfstestkit.tiers plan [PYTEST ARGS...]", file=sys.stderr)
        return 2
    try:
        p = plan(args[1:])
    except PlanError as err:
        print(f"test-all: {err}", file=sys.stderr)
        return 2
    # shell-readable: eval "$(python -m pfstestkit.tiers plan "$@")"
    print(f"TIERS={shlex.quote(' '.join(sorted(p.tiers)))}")
    print(f"STEPS={shlex.quote(' '.join(p.steps))}")
    # The three sessions a run splits into (e2e/test-all.sh): the tiers without a cluster; on the local
    # cluster the e2e tests that need it; on kind the rest of the e2e tier with the multinode tier.
    print(f"OTHER_TIERS={shlex.quote(split_session(p, 'not e2e and not multinode'))}")
    print(f"LOCAL_E2E={shlex.quote(split_session(p, 'e2e and local_cluster'))}")
    print(f"KIND_E2E={shlex.quote(split_session(p, '(e2e and not local_cluster) or multinode'))}")
    print(f"REST=({' '.join(shlex.quote(a) for a in p.rest)})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
