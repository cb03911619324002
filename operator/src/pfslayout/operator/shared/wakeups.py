"""When each object is next reconciled: one alarm per LayoutPolicy and CostCalibration, kept by its Kopf
daemon (handlers/leveltriggered.py) and rung by what changes it (handlers/wakeups.py).

An object nobody touches is reconciled once per period (the drift check); something that changes it —
its cluster, its calibration, a selected MPIJob finishing — rings its alarm at once; a reconcile that
waits on work in flight (a hint Job, a probe job, a trace collector) asks to be called again after a
few seconds (`Context.requeue`). So idle objects cost the API server nothing between periods, which a
fixed 5 s timer per object did not (issue 34: 40 reconciles a second at 200 policies).

Thread-safe: Kopf runs sync handlers in its thread pool; an alarm is rung on the daemon's event loop.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

Key = tuple[str, str, str]  # (plural, namespace, name)


@dataclass
class Alarm:
    """When the object's daemon reconciles next (time.monotonic()), and the event that wakes it early."""

    loop: asyncio.AbstractEventLoop
    body: Any  # Kopf's live view of the object: what wake_where's predicates read
    due: float
    event: asyncio.Event = field(default_factory=asyncio.Event)

    def ring_at(self, when: float) -> None:
        """Due no later than `when` (an earlier alarm stays)."""
        if when < self.due:
            self.due = when
            self.loop.call_soon_threadsafe(self.event.set)


class Wakeups:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._alarms: dict[Key, Alarm] = {}
        self._guard = threading.Lock()

    def attach(self, key: Key, body: Any, first_in_s: float) -> Alarm:
        """The alarm of a daemon starting now (the running loop's), first due in `first_in_s`."""
        alarm = Alarm(asyncio.get_running_loop(), body, self.clock() + first_in_s)
        with self._guard:
            self._alarms[key] = alarm
        return alarm

    def detach(self, key: Key, alarm: Alarm) -> None:
        with self._guard:
            if self._alarms.get(key) is alarm:
                del self._alarms[key]

    def after(self, key: Key, seconds: float) -> None:
        """`key` reconciled within `seconds` (nothing when it has no daemon: not ours, or gone)."""
        with self._guard:
            alarm = self._alarms.get(key)
        if alarm is not None:
            alarm.ring_at(self.clock() + max(0.0, seconds))

    def wake(self, key: Key) -> None:
        self.after(key, 0.0)

    def wake_where(self, plural: str, namespace: str, wanted: Callable[[Any], bool]) -> list[Key]:
        """Wake the objects of `plural` in `namespace` whose body `wanted` accepts; the keys woken."""
        with self._guard:
            found = [(k, a) for k, a in self._alarms.items() if k[0] == plural and k[1] == namespace]
        woken = []
        for key, alarm in found:
            if wanted(alarm.body):
                alarm.ring_at(self.clock())
                woken.append(key)
        return woken

    def keys(self) -> Iterator[Key]:
        with self._guard:
            return iter(list(self._alarms))


WAKEUPS = Wakeups()  # the operator process's: one event loop (Kopf's), one registry
