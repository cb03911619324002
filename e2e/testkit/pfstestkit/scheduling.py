"""How pytest-xdist hands the suite to its workers (`pytest_xdist_make_scheduler` in the root conftest).

A unit of work is an e2e lane (the `xdist_group` the e2e conftest gives each test from
pfstestkit.lanes) or, elsewhere, one test file — so a file's module and session fixtures are set up on one
worker. Lanes go out first, longest first (their measured minutes, lanes.MINUTES), then the files with
the most tests; the serial lane waits until no other unit is queued and every other worker has finished
and left, then runs on one worker alone: its tests restart the API server, stop the cluster or audit what
every other lane ran on the real node.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import pytest
from _pytest.nodeid import coerce_node_id
from xdist.scheduler import LoadGroupScheduling

from pfstestkit.lanes import MINUTES, SERIAL


def join_group(item: pytest.Item, group: str) -> None:
    """Puts a test in an xdist group the way `--dist loadgroup` expects: its node id ends in `@<group>`.
    pytest-xdist 3.8 does that for `xdist_group` marks by setting `item._nodeid`, which pytest 9 no longer
    reads (the id is `item._id`), so its groups fall apart into single tests; this sets the id pytest reads.
    Only in a worker of a loadgroup run (pytest-xdist sets `option.loadgroup` there and nowhere else: a run
    with `-n0` or without pytest-xdist has no such option): elsewhere ids stay as they are."""
    item.add_marker(pytest.mark.xdist_group(group))
    if getattr(item.config.option, "loadgroup", False) and not item.nodeid.endswith(f"@{group}"):
        item._id = coerce_node_id(f"{item.nodeid}@{group}")


class LaneScheduling(LoadGroupScheduling):  # type: ignore[misc]  # pytest-xdist is untyped: its classes are Any
    def _split_scope(self, nodeid: str) -> str:
        group = super()._split_scope(nodeid)
        return group if group != nodeid else nodeid.split("::", 1)[0]

    def _order(self, units: dict[str, dict[str, bool]]) -> OrderedDict[str, dict[str, bool]]:
        def key(item: tuple[str, dict[str, bool]]) -> tuple[int, float]:
            scope, tests = item
            if scope == SERIAL:
                return (2, 0.0)
            if scope in MINUTES:
                return (0, -MINUTES[scope])
            return (1, -float(len(tests)))
        return OrderedDict(sorted(units.items(), key=key))

    _serial_runner: Any = None

    def _assign_work_unit(self, node: Any) -> None:
        scope = next((s for s in self.workqueue if s != SERIAL), None)
        if scope is None:
            self._release_serial(node)
        else:
            self._send(node, scope)

    def _send(self, node: Any, scope: str) -> None:
        work_unit = self.workqueue.pop(scope)
        self.assigned_work.setdefault(node, {})[scope] = work_unit
        collection = self.registered_collections[node]
        node.send_runtest_some([collection.index(nodeid) for nodeid, done in work_unit.items() if not done])

    def _release_serial(self, asking: Any) -> None:
        """Only the serial unit is left. A worker runs the last test it was sent only once it gets more work
        or a shutdown (pytest needs the next item to finish the last one's fixtures), so no worker ever
        reaches zero pending on its own: the first to ask becomes the serial runner, every other worker
        down to its last test is shut down (it runs that test and exits), and the serial unit goes to the
        runner once none of them has anything pending."""
        if SERIAL not in self.workqueue:
            return
        if self._serial_runner is None:
            self._serial_runner = asking
        others = [(node, work) for node, work in self.assigned_work.items() if node is not self._serial_runner]
        for node, work in others:
            if not node.shutting_down and self._pending_of(work) <= 1:
                node.shutdown()
        if not any(self._pending_of(work) for _, work in others):
            self._send(self._serial_runner, SERIAL)

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        super().mark_test_complete(node, item_index, duration)
        # A worker that is shutting down no longer reaches _reschedule: its last test may be the one the
        # serial unit waits for.
        if self._serial_runner is not None:
            self._release_serial(self._serial_runner)

    def schedule(self) -> None:
        if self.collection is None and self.collection_is_completed and self._check_nodes_have_same_collection():
            # The first call: the queue in our order; the base class then fills in the same units, and an
            # OrderedDict keeps the position of a key it already holds, so ours stands.
            collection = list(next(iter(self.registered_collections.values())))
            units: dict[str, dict[str, bool]] = {}
            for nodeid in collection:
                units.setdefault(self._split_scope(nodeid), {})[nodeid] = False
            self.workqueue = self._order(units)
        super().schedule()
