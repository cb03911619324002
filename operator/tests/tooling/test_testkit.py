"""The test harness itself: the test command's plan for its arguments (tiers from folders, what each tier
builds, bad tiers and paths refused in one line before anything is installed), the xdist scheduler that
runs the serial lane alone and last, and the rules that keep the test tree honest — every test file in a
tier's folder, every e2e module in a lane, no test importing another test module, no sys.path edits."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pfstestkit import REPO, lanes, node_audit, tiers
from pfstestkit.scheduling import LaneScheduling, join_group


def test_every_test_file_is_in_a_tiers_folder() -> None:
    files = [p for root in tiers.test_paths() for p in (REPO / root).rglob("test_*.py")]
    assert len(files) > 90
    assert [p for p in files if tiers.tier_of(p) is None] == []
    assert tiers.tier_of(REPO / "operator/tests/unit/test_units.py") == "unit"
    assert tiers.tier_of(REPO / "shim/tests/orangefs/test_probe_orangefs.py") == "orangefs"
    assert tiers.tier_of(REPO / "shim/tests/test_shim_mpi.py") == "integration"
    assert tiers.tier_of(REPO / "lab/tests/unit/test_lab_score.py") == "unit"
    assert tiers.tier_of(REPO / "lab/tests/test_lab_smoke.py") == "lab"
    assert tiers.tier_of(REPO / "e2e/tests/test_real_node.py") == "e2e"


def test_every_e2e_module_has_a_lane_and_every_lane_entry_a_module() -> None:
    modules = {p.name for p in (REPO / "e2e" / "tests").rglob("test_*.py")}
    assert modules == set(lanes.MODULES)
    assert set(lanes.MINUTES) <= set(lanes.MODULES.values()) - {lanes.SERIAL}


def test_lane_minutes_add_up_each_lanes_reports_and_nothing_else() -> None:
    from types import SimpleNamespace

    def rep(nodeid: str, seconds: float) -> SimpleNamespace:
        return SimpleNamespace(nodeid=nodeid, duration=seconds)
    reports = [rep("e2e/tests/test_real_calibration.py::test_x@d", 300.0),
               rep("e2e/tests/test_real_calibration.py::test_x@d", 60.0),  # its teardown
               rep("e2e/tests/test_real_node.py::test_y@a", 90.0),
               rep("e2e/tests/test_real_upgrade.py::test_z@s", 30.0),
               rep("operator/tests/unit/test_a.py::test_b[user@host]", 500.0),  # no lane: a parameter's @
               rep("operator/tests/unit/test_a.py::test_c", 500.0),
               SimpleNamespace(nodeid="e2e/tests/test_real_node.py::test_y@a")]  # a warning: no duration
    assert lanes.minutes_by_lane(reports) == {"d": 6.0, "a": 1.5, "s": 0.5}
    assert list(lanes.minutes_by_lane(reports)) == ["d", "a", "s"]


def test_lanes_own_disjoint_namespaces_and_releases() -> None:
    names = sorted(set(lanes.MODULES.values()))
    owned = [lanes.Lane(n) for n in names]
    prefixes = [lane.prefix for lane in owned]
    assert len(set(prefixes)) == len(prefixes)
    assert not any(a != b and a.startswith(b) for a in prefixes for b in prefixes)
    private = [lane for lane in owned if not lane.shared]
    assert len({lane.release for lane in private} | {lanes.RELEASE}) == len(private) + 1
    for lane in private:
        assert lane.watch == (f"e2e-{lane.name}-*",)
        assert "crds.install=false" in lane.chart_values and "webhook.enabled=false" in lane.chart_values
        assert lane.service_account == f"{lanes.RELEASE_NS}-{lane.name}:{lanes.RELEASE}-{lane.name}"
    assert lanes.Lane("r").release == lanes.RELEASE and "pfsbench-*" in lanes.Lane("r").watch


@pytest.mark.parametrize(("args", "tiers_", "steps"), [
    (["-m", "unit"], {"unit"}, ()),
    (["-m", "unit or lab"], {"unit", "lab"}, ("orangefs", "shim")),
    (["-m", "not e2e"], {"unit", "integration", "orangefs", "lab", "multinode"},
     ("orangefs", "shim", "helm", "cluster", "kind")),
    (["-m", "not e2e and not multinode"], {"unit", "integration", "orangefs", "lab"}, ("orangefs", "shim", "helm")),
    (["e2e/tests/multinode"], {"multinode"}, ("cluster", "kind")),
    (["operator/tests/unit/test_units.py"], {"unit"}, ()),
    (["operator/tests/unit/test_units.py::test_parse_size"], {"unit"}, ()),
    (["lab/tests"], {"unit", "lab"}, ("orangefs", "shim")),
    (["-k", "e2e/tests", "shim/tests"], {"integration", "orangefs"}, ("orangefs", "shim", "helm")),
    ([], set(tiers.TIERS), ("orangefs", "shim", "helm", "cluster", "kind")),
    (["-m", "e2e and not serial"], {"e2e"}, ("orangefs", "shim", "cluster", "kind")),
    (["-m", "e2e and local_cluster"], {"e2e"}, ("orangefs", "shim", "cluster", "kind")),
])
def test_the_plan_builds_what_the_selected_tiers_need(args: list[str], tiers_: set[str],
                                                       steps: tuple[str, ...]) -> None:
    plan = tiers.plan(args)
    assert set(plan.tiers) == tiers_
    assert plan.steps == steps


def test_a_run_with_the_e2e_tier_splits_into_two_sessions_that_keep_the_arguments() -> None:
    plan = tiers.plan(["-m", "unit or e2e", "-x", "-k", "real"])
    assert tiers.split_session(plan, "not e2e") == "(unit or e2e) and (not e2e)"
    assert tiers.split_session(plan, "e2e") == "(unit or e2e) and (e2e)"
    assert plan.rest == ("-x", "-k", "real")
    assert tiers.split_session(tiers.plan([]), "e2e") == "e2e"


def test_the_e2e_tier_splits_between_the_local_cluster_and_kind(capsys: pytest.CaptureFixture[str]) -> None:
    """Every e2e test runs on exactly one of the two clusters: the `local_cluster` ones on the local
    control plane, the rest on kind with the multinode tier (e2e/test-all.sh evaluates these lines)."""
    assert tiers.main(["plan", "-m", "not lab"]) == 0
    lines = dict(line.split("=", 1) for line in capsys.readouterr().out.splitlines())
    assert lines["LOCAL_E2E"] == "'(not lab) and (e2e and local_cluster)'"
    assert lines["KIND_E2E"] == "'(not lab) and ((e2e and not local_cluster) or multinode)'"


@pytest.mark.parametrize(("args", "message"), [
    (["-m", "units"],
     "-m 'units': unknown tier 'units'; the tiers are unit, integration, orangefs, e2e, multinode, lab"),
    (["-m", "unit or fast"], "unknown tier 'fast'"),
    (["-m", "unit +"], "-m 'unit +': "),
    (["operator/tests/unit/test_nothing.py"], "no such test path: operator/tests/unit/test_nothing.py"),
    (["-m"], "-m needs a value"),
    (["docs/cost-model.md"], "docs/cost-model.md is in no tier's folder"),
])
def test_bad_arguments_fail_in_one_line_before_anything_is_installed(args: list[str], message: str) -> None:
    # The command the test command runs first: the system's python3, nothing but the standard library.
    done = subprocess.run([sys.executable, "-m", "pfstestkit.tiers", "plan", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=60, check=False, env={"PYTHONPATH": str(REPO / "e2e" / "testkit")})
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith("test-all: ")
    assert message in done.stderr


def test_the_test_command_refuses_a_bad_tier_before_any_set_up() -> None:
    done = subprocess.run([str(REPO / "e2e" / "test-all.sh"), "-m", "unitt"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 2
    assert done.stderr.strip() == ("test-all: -m 'unitt': unknown tier 'unitt'; the tiers are unit, integration, "
                                   "orangefs, e2e, multinode, lab")
    assert "==>" not in done.stderr  # no step started


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_no_test_or_bench_imports_a_file_of_another_tree_by_name() -> None:
    """Tests and benches import installed packages only: a bare `import test_x` or `import helper` works
    only through pytest's rootdir insertion or a sys.path edit, which is how helpers ended up in test files."""
    local = {p.stem for root in (*tiers.test_paths(), "operator/bench", "shim/bench", "lab/bench")
             for p in (REPO / root).rglob("*.py")}
    offenders = {}
    for root in (*tiers.test_paths(), "shim/bench", "lab/bench"):
        for path in (REPO / root).rglob("*.py"):
            bad = _imports(path) & local
            if bad:
                offenders[str(path.relative_to(REPO))] = sorted(bad)
    assert offenders == {}


def _edits_sys_path(tree: ast.AST) -> bool:
    """A call of a method of `sys.path` (insert, append, extend, ...) anywhere in the module."""
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
               and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "path"
               and isinstance(node.func.value.value, ast.Name) and node.func.value.value.id == "sys"
               for node in ast.walk(tree))


def test_nothing_edits_sys_path() -> None:
    assert _edits_sys_path(ast.parse("import sys\nsys.path.append('x')\n"))  # the check can fail
    tracked = subprocess.run(["git", "ls-files", "*.py"], cwd=REPO, capture_output=True, text=True, check=True)
    hits = [f for f in tracked.stdout.split() if _edits_sys_path(ast.parse((REPO / f).read_text()))]
    assert hits == []


# ---------------------------------------------------------------------------------- the xdist scheduler


@dataclass
class FakeNode:
    """A worker as the scheduler sees it: the tests it was sent."""

    name: str
    done: set[int]  # every test any worker has finished, shared by the fake workers of one run
    sent: list[list[int]] = field(default_factory=list)
    done_when_sent: list[set[int]] = field(default_factory=list)
    shutting_down: bool = False

    @property
    def gateway(self) -> Any:
        return type("Gateway", (), {"id": self.name})()

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.append(indices)
        self.done_when_sent.append(set(self.done))

    def shutdown(self) -> None:
        self.shutting_down = True

    def __hash__(self) -> int:
        return hash(self.name)


@dataclass
class FakeOption:
    loadscopereorder: bool = True
    maxworkerrestart: Any = None


@dataclass
class FakeConfig:
    option: FakeOption = field(default_factory=FakeOption)
    workers: int = 2

    def getvalue(self, name: str) -> Any:
        if name == "tx":
            return ["popen"] * self.workers
        raise ValueError(f"no option named {name!r}")  # as pytest's Config.getvalue


COLLECTION = [
    "operator/tests/unit/test_a.py::test_1", "operator/tests/unit/test_a.py::test_2",
    "operator/tests/unit/test_b.py::test_1",
    "e2e/tests/test_x.py::test_1@a", "e2e/tests/test_x.py::test_2@a",
    "e2e/tests/test_y.py::test_1@r",
    "e2e/tests/test_z.py::test_1@s", "e2e/tests/test_z.py::test_2@s",
]


def _complete(sched: LaneScheduling, node: FakeNode) -> None:
    """The node runs what it was sent as an xdist worker does: the last test waits until more work or a
    shutdown arrives (pytest runs a test only once it knows the next one)."""
    while True:
        todo = [i for batch in node.sent for i in batch if i not in node.done]
        runnable = todo if node.shutting_down else todo[:-1]
        if not runnable:
            return
        for index in runnable:
            node.done.add(index)
            sched.mark_test_complete(node, index)


def _sent(node: FakeNode) -> set[int]:
    return {i for batch in node.sent for i in batch}


def test_the_serial_lane_waits_for_every_worker_and_runs_alone() -> None:
    sched = LaneScheduling(FakeConfig())
    done: set[int] = set()
    gw0, gw1 = FakeNode("gw0", done), FakeNode("gw1", done)
    for node in (gw0, gw1):
        sched.add_node(node)
        sched.add_node_collection(node, COLLECTION)
    sched.schedule()
    # The lanes went out first, the longest (lanes.MINUTES) first: r and a, one per worker; then files.
    assert {frozenset(gw0.sent[0]), frozenset(gw1.sent[0])} == {frozenset({5}), frozenset({3, 4})}
    serial = {6, 7}
    # gw0 runs what it can; when only the serial lane is left it becomes its runner, while gw1 still works.
    _complete(sched, gw0)
    assert "s" in sched.workqueue and _sent(gw0) & serial == set()
    # gw1 is shut down at its last test, runs it and leaves; only then gw0 gets the serial lane.
    _complete(sched, gw1)
    assert gw1.shutting_down and _sent(gw1) & serial == set()
    assert sorted(gw0.sent[-1]) == [6, 7] and not gw0.shutting_down
    assert gw0.done_when_sent[-1] >= _sent(gw1)  # every test of the other worker had finished: alone
    gw0.shutdown()
    _complete(sched, gw0)
    assert done == set(range(len(COLLECTION)))
    assert not sched.workqueue


def test_a_lone_worker_runs_the_serial_lane_after_the_rest() -> None:
    sched = LaneScheduling(FakeConfig(workers=1))
    done: set[int] = set()
    gw0 = FakeNode("gw0", done)
    sched.add_node(gw0)
    sched.add_node_collection(gw0, COLLECTION)
    sched.schedule()
    _complete(sched, gw0)
    assert sorted(gw0.sent[-1]) == [6, 7]
    gw0.shutdown()
    _complete(sched, gw0)
    assert done == set(range(len(COLLECTION)))


# ---------------------------------------------------------------------------------- the shared node audit


def _bundle(task: Path, cid: str, pod: str) -> None:
    """What containerd keeps for a running task: the OCI spec runc enforces (no process: not running)."""
    (task / cid).mkdir(parents=True)
    (task / cid / "config.json").write_text(json.dumps({
        "annotations": {"io.kubernetes.cri.container-type": "container", "io.kubernetes.cri.sandbox-namespace": "ns",
                        "io.kubernetes.cri.sandbox-name": pod, "io.kubernetes.cri.container-name": "c"},
        "process": {"user": {"uid": 1000}, "noNewPrivileges": True, "capabilities": {"effective": []}},
        "linux": {"seccomp": {}}, "root": {"readonly": True}}))


def _wait(check: Any, what: str) -> None:
    deadline = time.monotonic() + 60  # the scanners poll every 10 ms, but the machine may be busy
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_one_session_scans_for_the_run_and_another_takes_over_when_it_leaves(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PFSLAYOUT_E2E_AUDIT_DIR", str(tmp_path / "audit"))
    task = tmp_path / "task"
    task.mkdir()
    labels = lambda ns, pod: {"app.kubernetes.io/managed-by": "pfs-layout-operator"}  # noqa: E731
    # The second session starts once the first holds the run's lock: which of two sessions started together
    # wins it is up to the scheduler, and this test is about the one that is left waiting.
    first = node_audit.start(task, labels)
    _wait(lambda: first.scanning, "the first session takes the run's scanner lock")
    second = node_audit.start(task, labels)
    try:
        _bundle(task, "a1", "early")
        _wait(lambda: "a1" in first.seen, "the first session's scanner sees the container")
        assert second.seen == {} and not second.scanning  # only one scanner at a time
        first.stop()
        _bundle(task, "b2", "late")  # a pod of the serial lane, after the first worker left
        _wait(lambda: "b2" in second.seen, "the second session takes over")
        second.label()
        shared = node_audit.record(None, labels)
        assert shared is not None and set(shared.seen) == {"a1", "b2"}
        assert shared.labels[("ns", "late")] == {"app.kubernetes.io/managed-by": "pfs-layout-operator"}
    finally:
        first.stop()
        second.stop()


@dataclass
class FakeItem:
    """What join_group touches of a pytest item: its config, node id and markers."""
    config: Any
    nodeid: str
    marks: list[Any] = field(default_factory=list)

    def add_marker(self, mark: Any) -> None:
        self.marks.append(mark)


def test_join_group_renames_only_in_a_loadgroup_worker() -> None:
    """Outside a worker of a `--dist loadgroup` run (`-n0`, or pytest without pytest-xdist) the option does
    not exist: the test keeps its id (before, reading it failed the whole collection)."""
    plain = FakeItem(FakeConfig(), "e2e/tests/test_x.py::test_1")
    join_group(plain, "a")  # type: ignore[arg-type]  # the fake has what join_group reads
    assert not hasattr(plain, "_id") and [m.kwargs for m in plain.marks] == [{}] and \
        [m.args for m in plain.marks] == [("a",)]
    option = FakeOption()
    option.loadgroup = True  # type: ignore[attr-defined]  # what pytest-xdist sets in its workers
    worker = FakeItem(FakeConfig(option=option), "e2e/tests/test_x.py::test_1")
    join_group(worker, "a")  # type: ignore[arg-type]
    assert str(worker._id) == "e2e/tests/test_x.py::test_1@a"  # type: ignore[attr-defined]


PRIORITY_PROBE = """
import os, subprocess, threading
from pfstestkit.priority import measuring
tid = threading.get_native_id()
def child():
    return subprocess.run(["sh", "-c", "nice; ionice"], capture_output=True, text=True).stdout.split()
print(os.getpriority(os.PRIO_PROCESS, tid), *child())
with measuring():
    print(os.getpriority(os.PRIO_PROCESS, tid), *child())
print(os.getpriority(os.PRIO_PROCESS, tid), *child())
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="lowering a niceness needs CAP_SYS_NICE (the test command runs as root)")
def test_measuring_gives_normal_priority_back_to_the_thread_and_its_children() -> None:
    """A process at nice 19 and ionice idle (as the test command runs the tiers but e2e) measures at
    normal priority inside measuring(), its child processes too, and returns to the lowest afterwards."""
    out = subprocess.run(["nice", "-n", "19", "ionice", "-c", "3", sys.executable, "-c", PRIORITY_PROBE],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert [line.split() for line in out] == [["19", "19", "idle"], ["0", "0", "best-effort:", "prio", "4"],
                                              ["19", "19", "idle"]], out


def test_poll_delays_grow_from_the_interval_to_the_ceiling() -> None:
    from itertools import islice, pairwise

    from pfstestkit.cluster import poll_delays

    short = list(islice(poll_delays(0.25), 8))
    assert short[0] == 0.25
    assert all(b >= a for a, b in pairwise(short))
    assert short[-1] == 1.0 and sum(short[:4]) < 2.1  # four answers within about two seconds
    assert list(islice(poll_delays(2.0), 3)) == [2.0, 2.0, 2.0]  # a longer interval is kept as given


def test_a_dev_null_no_one_may_write_is_named_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    import stat as st

    from pfstestkit import ofs_loopback

    real = os.stat

    def fake(path: object, *args: object, **kwargs: object) -> os.stat_result:
        got = real(path, *args, **kwargs)  # type: ignore[arg-type]
        if path != "/dev/null":
            return got
        fields = list(got)
        fields[0] = st.S_IFCHR  # mode 000, as found on this machine once
        return os.stat_result(fields)

    assert ofs_loopback._null_hint() == "" or "chmod 666" in ofs_loopback._null_hint()
    monkeypatch.setattr(os, "stat", fake)
    assert "/dev/null is mode 000" in ofs_loopback._null_hint() and "chmod 666 /dev/null" in ofs_loopback._null_hint()
