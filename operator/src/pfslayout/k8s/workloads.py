"""Reading built-in workloads' status (pure): which StatefulSet pods are Ready, where a Job stands."""

from __future__ import annotations

from dataclasses import dataclass
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


# Container states that will not resolve by waiting (the image cannot be had or started).
STUCK_REASONS = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError",
                           "CreateContainerError", "ErrImageNeverPull", "RunContainerError"})


@dataclass(frozen=True)
class Failure:
    reason: str  # e.g. "DeadlineExceeded", "ImagePullBackOff", "CommandNotFound"
    message: str


def pod_failure(pods: list[dict[str, Any]], not_found_marker: str | None = None) -> Failure | None:
    """A pod that cannot succeed: its image cannot be pulled or started, or its command is missing from
    the image (exit 127, or a termination message carrying `not_found_marker`)."""
    for pod in pods:
        name = pod["metadata"]["name"]
        status = pod.get("status") or {}
        # init containers first: a pod whose init container cannot be pulled never gets to the others
        for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
            state = cs.get("state") or {}
            waiting = state.get("waiting") or {}
            if waiting.get("reason") in STUCK_REASONS:
                return Failure(str(waiting["reason"]), f"pod {name}: {waiting.get('message') or waiting['reason']} "
                               f"(image {cs.get('image')})")
            term = state.get("terminated") or {}
            text = str(term.get("message") or "").strip()
            if term and (term.get("exitCode") == 127 or (not_found_marker and not_found_marker in text)):
                lines = text.splitlines()
                line = next((x for x in lines if not_found_marker and not_found_marker in x),
                            lines[-1] if lines else "")
                return Failure("CommandNotFound", f"pod {name}: {line or 'exit code 127: command not found'} "
                               f"(image {cs.get('image')})")
    return None


def tail(log: str, lines: int = 20) -> str:
    return "\n".join(log.rstrip().splitlines()[-lines:])
