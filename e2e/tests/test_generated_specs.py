"""Generated input for the three kinds and for MPIJobs (issue 14, item 3): hypothesis mutates the valid
examples of policies/ — a field removed, retyped, set to an edge value, an unknown field added — and
sends each object to the real API server. Every object is either refused with a message that names a
field, or accepted; every accepted one is then created and must be handled by the operator without a
handler exception (Kopf's "failed with an exception", a Python traceback) and get a status.

The counts of one run are written to `<state>/generated-specs.txt` and quoted in docs/reliability.md.
"""

from __future__ import annotations

import copy
import math
import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from pfstestkit import REPO
from pfstestkit.crd_release import crd_namespace
from pfstestkit.local_operator import Operator

EXAMPLES = {"OrangeFSCluster": "orangefs-small.yaml", "CostCalibration": "costcalibration.yaml",
            "LayoutPolicy": "layoutpolicy.yaml", "MPIJob": "learning.yaml"}
PLURAL = {"OrangeFSCluster": "orangefsclusters.pfslayout.io", "CostCalibration": "costcalibrations.pfslayout.io",
          "LayoutPolicy": "layoutpolicies.pfslayout.io", "MPIJob": "mpijobs.kubeflow.org"}
EXAMPLES_PER_KIND = 60
# A field path as the API server writes it: spec.servers.count, spec.rules[0].path, spec.grid.requestSizes[1]
FIELD = re.compile(r"\bspec(\.[A-Za-z0-9_]+|\[\d+\])*\b")
HANDLER_CRASH = re.compile(r"failed with an exception|Traceback \(most recent call last\)")

EDGE_VALUES = [None, True, False, 0, -1, 1, 2**31, -(2**31) - 1, 2**53 + 1, 0.5, -0.0, 1e308, "", "0", "-1",
               "x" * 300, "1Gi", "abc", "default", "1-DV", "/", "..", [], {}, [1, "a"], {"a": 1}]
# Finite floats only: JSON, the API's wire format, has no infinity or NaN, so kubectl refuses such a
# document before any request, naming no field (a run drew 1e308 and then doubled it).
VALUES = st.one_of(st.sampled_from(EDGE_VALUES), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                   st.text(max_size=40), st.lists(st.integers(-3, 3), max_size=3))


def example(kind: str) -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all((REPO / "policies" / EXAMPLES[kind]).read_text()) if d]
    return next(d for d in docs if d["kind"] == kind)


def paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += paths(v, (*prefix, i))
    return out


def at(doc: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def nudged(old: Any) -> st.SearchStrategy[Any]:
    if isinstance(old, bool):
        return st.just(not old)
    if isinstance(old, int):
        return st.sampled_from([old + 1, old - 1, old * 2, old // 2, 0, 1])
    if isinstance(old, float):
        return st.sampled_from([v for v in (old * 2, old / 2, 0.0, 1.0, old + 0.1) if math.isfinite(v)])
    if isinstance(old, str):
        return st.one_of(st.sampled_from([old.upper(), old + "x", old[:-1], "/" + old]),
                         st.text(alphabet="abc/-_.0123", max_size=12))
    if isinstance(old, list) and old:
        return st.sampled_from([old[:-1], old + old[-1:], list(reversed(old))])
    return st.just(old)


@st.composite
def mutated(draw: st.DrawFn, kind: str) -> tuple[dict[str, Any], list[str]]:
    """One example with 1-3 mutations of its spec, and what was done (for the report and failures)."""
    doc = copy.deepcopy(example(kind))
    done = []
    for _ in range(draw(st.integers(1, 3))):
        choices = paths(doc["spec"])
        if not choices:
            break
        path = draw(st.sampled_from(choices))
        parent, key = at(doc["spec"], path[:-1]), path[-1]
        op = draw(st.sampled_from(["delete", "set", "nudge", "nudge", "unknown"]))
        where = "spec." + ".".join(str(p) for p in path)
        if op == "delete" and isinstance(parent, dict):
            del parent[key]
            done.append(f"delete {where}")
        elif op == "unknown" and isinstance(at(doc["spec"], path), dict):
            name = draw(st.sampled_from(["extra", "stripsize", "Servers", "x-y"]))
            at(doc["spec"], path)[name] = draw(VALUES)
            done.append(f"add {where}.{name}")
        elif op == "nudge":
            # A value of the same type near the old one: mostly valid, so the operator gets work.
            value = draw(nudged(parent[key]))
            parent[key] = value
            done.append(f"nudge {where} = {value!r:.60}")
        else:
            value = draw(VALUES)
            parent[key] = value
            done.append(f"set {where} = {value!r:.60}")
    return doc, done


class Run:
    def __init__(self, cluster: Any, ns: str) -> None:
        self.cluster, self.ns = cluster, ns
        self.counts: dict[str, dict[str, int]] = {}
        self.accepted: list[tuple[str, str, list[str]]] = []
        self.unnamed: list[str] = []

    def send(self, kind: str, doc: dict[str, Any], done: list[str]) -> None:
        n = sum(self.counts.get(kind, {}).values())
        doc["metadata"] = {"name": f"gen-{kind.lower()}-{n}", "labels": (doc.get("metadata") or {}).get("labels", {})}
        tally = self.counts.setdefault(kind, {"generated": 0, "rejected": 0, "accepted": 0})
        tally["generated"] += 1
        proc = self.cluster.kubectl("create", "-n", self.ns, "-f", "-", "-o", "name", input=yaml.safe_dump(doc),
                                    check=False)
        message = proc.stdout + proc.stderr
        assert "Traceback" not in message and "panic" not in message, message
        if proc.returncode == 0:
            tally["accepted"] += 1
            self.accepted.append((kind, doc["metadata"]["name"], done))
            return
        tally["rejected"] += 1
        if not FIELD.search(message) and "unknown field" not in message:
            self.unnamed.append(f"{kind} {done}: {message.strip()[:300]}")


@pytest.fixture(scope="module")
def run(cluster: Any, operator: Operator) -> Any:
    with crd_namespace(cluster, "generated") as ns:
        # The learning example's cluster and policy: the generated MPIJobs carry its label, so the policy
        # selects every accepted one and the operator's injection handles it.
        docs = [d for d in yaml.safe_load_all((REPO / "policies" / "learning.yaml").read_text())
                if d and d["kind"] != "MPIJob"]
        cluster.kubectl("apply", "-n", ns, "-f", "-", input=yaml.safe_dump_all(docs))
        yield Run(cluster, ns)


def _generate(run: Run, kind: str) -> None:
    @seed(14)  # the same objects every run: a failure reproduces
    @settings(max_examples=EXAMPLES_PER_KIND, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(mutated(kind))
    def send(case: tuple[dict[str, Any], list[str]]) -> None:
        run.send(kind, *case)
    send()


@pytest.mark.parametrize("kind", list(EXAMPLES))
def test_generated_objects_are_refused_naming_a_field_or_accepted(run: Run, kind: str) -> None:
    _generate(run, kind)
    tally = run.counts[kind]
    assert tally["generated"] >= EXAMPLES_PER_KIND // 2, tally
    assert not run.unnamed, "refused without naming a field:\n" + "\n".join(run.unnamed)


def test_every_accepted_object_is_handled_without_a_handler_exception(run: Run, operator: Operator,
                                                                       cluster: Any) -> None:
    assert run.counts, "run the generation tests first (they are this module's earlier tests)"
    ours = [(k, n, d) for k, n, d in run.accepted if k != "MPIJob"]

    def unhandled() -> list[tuple[str, str, list[str]]]:
        left = []
        for kind, name, done in ours:
            obj = cluster.kubectl_json("get", PLURAL[kind], name, "-n", run.ns)
            if not (obj.get("status") or {}).get("conditions"):
                left.append((kind, name, done))
        return left
    deadline = time.monotonic() + 120
    while (left := unhandled()) and time.monotonic() < deadline:
        time.sleep(2)
    log = operator.log.read_text(errors="replace") if operator.log else operator.log_tail(100000)
    crashes = [line for line in log.splitlines() if HANDLER_CRASH.search(line) and f"[{run.ns}/" in line]
    summary = "; ".join(f"{k}: {v['generated']} generated, {v['rejected']} refused, {v['accepted']} accepted"
                        for k, v in run.counts.items())
    (Path(cluster.state_dir) / "generated-specs.txt").write_text(
        f"{summary}; {len(ours)} custom objects handled, {len(left)} without status, {len(crashes)} handler "
        f"exceptions\n")
    assert not crashes, "handler exceptions:\n" + "\n".join(crashes[:20]) + f"\n{operator.log_tail()}"
    assert not left, "accepted but never given a status: " + "; ".join(f"{k} {n} ({d})" for k, n, d in left)
    assert run.accepted and any(v["rejected"] for v in run.counts.values()), summary
