"""Reading built-in workloads' status (pure): which StatefulSet pods are Ready and where they run, where a
Job stands."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def pods_by_ordinal(pods: list[dict[str, Any]], statefulset_name: str) -> dict[int, dict[str, Any]]:
    """Map each StatefulSet pod's ordinal (from its name `<sts>-<i>`) to the pod; pods being deleted left out."""
    out: dict[int, dict[str, Any]] = {}
    prefix = f"{statefulset_name}-"
    for pod in pods:
        meta = pod.get("metadata") or {}
        name = meta.get("name", "")
        if not name.startswith(prefix) or not name[len(prefix):].isdigit() or meta.get("deletionTimestamp"):
            continue
        out[int(name[len(prefix):])] = pod
    return out


def _condition(pod: dict[str, Any], type_: str) -> dict[str, Any]:
    return next((x for x in (pod.get("status") or {}).get("conditions") or [] if x.get("type") == type_), {})


def pod_ready(pod: dict[str, Any]) -> bool:
    return _condition(pod, "Ready").get("status") == "True"


def pods_ready_by_ordinal(pods: list[dict[str, Any]], statefulset_name: str) -> dict[int, bool]:
    """Map each pod's ordinal (from its name `<sts>-<i>`) to its Ready condition."""
    return {i: pod_ready(pod) for i, pod in pods_by_ordinal(pods, statefulset_name).items()}


def pod_node(pod: dict[str, Any]) -> str:
    """The node the scheduler bound the pod to; '' while it is Pending."""
    return str((pod.get("spec") or {}).get("nodeName") or "")


def unschedulable(pod: dict[str, Any]) -> str | None:
    """The scheduler's reason for not placing the pod (`PodScheduled=False`, reason `Unschedulable`), e.g.
    `0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules`; None otherwise."""
    cond = _condition(pod, "PodScheduled")
    if pod_node(pod) or cond.get("status") != "False" or cond.get("reason") != "Unschedulable":
        return None
    return str(cond.get("message") or "Unschedulable")


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
