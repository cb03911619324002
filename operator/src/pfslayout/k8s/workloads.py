"""Reading built-in workloads' status (pure): which StatefulSet pods are Ready, where a Job stands."""

from __future__ import annotations

from typing import Any


def pods_ready_by_ordinal(pods: list[dict[str, Any]], statefulset_name: str) -> dict[int, bool]:
    """Map each pod's ordinal (from its name `<sts>-<i>`) to its Ready condition."""
    out: dict[int, bool] = {}
    prefix = f"{statefulset_name}-"
    for pod in pods:
        meta = pod.get("metadata") or {}
        name = meta.get("name", "")
        if not name.startswith(prefix) or not name[len(prefix):].isdigit() or meta.get("deletionTimestamp"):
            continue
        conds = (pod.get("status") or {}).get("conditions") or []
        out[int(name[len(prefix):])] = any(x.get("type") == "Ready" and x.get("status") == "True" for x in conds)
    return out


def job_state(job: dict[str, Any] | None) -> str:
    """`missing`, `suspended`, `running`, `succeeded` or `failed`, from a batch/v1 Job."""
    if not job:
        return "missing"
    st = job.get("status") or {}
    for cond in st.get("conditions") or []:
        if cond.get("status") == "True" and cond.get("type") in ("Complete", "SuccessCriteriaMet"):
            return "succeeded"
        if cond.get("status") == "True" and cond.get("type") in ("Failed", "FailureTarget"):
            return "failed"
    if int(st.get("succeeded") or 0) >= 1:
        return "succeeded"
    if (job.get("spec") or {}).get("suspend"):
        return "suspended"
    return "running"
