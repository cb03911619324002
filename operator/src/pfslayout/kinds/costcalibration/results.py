"""Reading what a probe MPIJob did (pure): its state, why it failed, and its `pfsprobe/1` documents.

The documents come from the launcher's log, between `PFSLAYOUT-PROBE-BEGIN <key>` and
`PFSLAYOUT-PROBE-END <key>` lines the launcher's shell prints after `mpiexec` returned (so no rank's
output can interleave). Each is validated with the calibration core's strict reader before it is kept.
"""

from __future__ import annotations

import json
from typing import Any

from pfslayout.calibration import parse_probe
from pfslayout.errors import InputError
from pfslayout.k8s.workloads import Failure
from pfslayout.kinds.costcalibration.objects import BEGIN, END

TAIL_LINES = 20


class ProbeOutputError(Exception):
    """The launcher succeeded but its log does not hold valid documents for every key."""


def mpijob_state(job: dict[str, Any] | None) -> str:
    """`missing`, `running`, `succeeded` or `failed`, from an MPIJob's conditions."""
    if not job:
        return "missing"
    conds = {c.get("type"): c for c in (job.get("status") or {}).get("conditions") or []}
    if (conds.get("Succeeded") or {}).get("status") == "True":
        return "succeeded"
    if (conds.get("Failed") or {}).get("status") == "True":
        return "failed"
    return "running"


def job_failure(job: dict[str, Any]) -> Failure:
    cond: dict[str, Any] = next((c for c in (job.get("status") or {}).get("conditions") or []
                 if c.get("type") == "Failed" and c.get("status") == "True"), {})
    return Failure(str(cond.get("reason") or "MPIJobFailed"), str(cond.get("message") or "the MPIJob failed"))


def extract(log: str, keys: tuple[str, ...], servers: dict[str, int]) -> dict[str, str]:
    """{key: compact pfsprobe/1 JSON} for every key, each validated; ProbeOutputError otherwise.
    `servers` gives each key's expected `platform.servers` (n, or 1 for a per-server probe)."""
    found: dict[str, list[str]] = {}
    current: str | None = None
    buf: list[str] = []
    for line in log.splitlines():
        parts = line.strip().split()
        if len(parts) == 2 and parts[0] == BEGIN:
            current, buf = parts[1], []
        elif len(parts) == 2 and parts[0] == END and current == parts[1]:
            found[current] = buf
            current = None
        elif current is not None:
            buf.append(line)
    out: dict[str, str] = {}
    for key in keys:
        if key not in found:
            raise ProbeOutputError(f"{key}: no pfsprobe/1 document in the launcher's log")
        try:
            doc = json.loads("\n".join(found[key]))
        except json.JSONDecodeError as err:
            raise ProbeOutputError(f"{key}: the launcher printed invalid JSON ({err.msg})") from None
        try:
            measured = parse_probe(doc, key)
        except InputError as err:
            raise ProbeOutputError(str(err)) from None
        if measured.servers != servers[key]:
            raise ProbeOutputError(f"{key}: platform.servers is {measured.servers}, expected {servers[key]}")
        out[key] = json.dumps(doc, separators=(",", ":"))
    return out
