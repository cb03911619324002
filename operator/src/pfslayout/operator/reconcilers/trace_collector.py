"""The learning loop as I/O: find the policy's finished MPIJobs, collect each one's traces with a Job,
and keep what they taught in ConfigMap `<policy>-learned` (the durable record: which jobs were collected,
and per `source: trace` rule the last summary, the layout in force and the history of decisions).

Level-triggered like the rest of the policy: the collector Job's name derives from the MPIJob's UID, so a
restarted operator finds the Job it started; a job is marked collected in the same ConfigMap write that
records what it taught, so it is learned from exactly once. Pure decisions live in
kinds/layoutpolicy/learn.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client.exceptions import ApiException

from pfslayout import naming
from pfslayout.costmodel.params import CostParams
from pfslayout.k8s.api import Kube
from pfslayout.k8s.meta import Owner, object_metadata, selector_string
from pfslayout.k8s.workloads import job_state, pod_failure, tail
from pfslayout.kinds import MANAGED_BY, MPIJOB
from pfslayout.kinds.layoutpolicy import learn
from pfslayout.kinds.layoutpolicy.rules import Platform, full_path
from pfslayout.kinds.orangefscluster.spec import OrangeFSClusterSpec
from pfslayout.operator import settings
from pfslayout.operator.shared.events import Post


@dataclass
class Learning:
    rules: dict[str, Any] = field(default_factory=dict)  # spec path -> learned entry
    condition: tuple[bool, str, str] = (False, "Disabled", "spec.trace.enabled is false or spec.selector is unset")
    collected: int = 0
    last_job: str | None = None


def _labels(owner: Owner) -> dict[str, str]:
    return {"app.kubernetes.io/name": "layoutpolicy", "app.kubernetes.io/instance": owner.name,
            "pfslayout.io/layoutpolicy": owner.name}


def _load(kube: Kube, owner: Owner) -> dict[str, Any]:
    cm = kube.get("ConfigMap", owner.namespace, naming.learned_configmap(owner.name))
    try:
        state = json.loads(((cm or {}).get("data") or {}).get("state.json") or "{}")
    except ValueError:
        state = {}
    return state if isinstance(state, dict) else {}


def _save(kube: Kube, owner: Owner, state: dict[str, Any]) -> None:
    kube.apply({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": object_metadata(owner, naming.learned_configmap(owner.name),
                                            {**_labels(owner), "app.kubernetes.io/managed-by": MANAGED_BY}),
                "data": {"state.json": json.dumps(state, indent=1, sort_keys=True)}})


def publish_shim_config(kube: Kube, owner: Owner, text: str) -> None:
    """ConfigMap `<policy>-shim`: the shim config (`shim.json`, kinds/layoutpolicy/shim_configmap.py) the
    policy's jobs run with."""
    cm = kube.get("ConfigMap", owner.namespace, naming.shim_configmap(owner.name))
    if ((cm or {}).get("data") or {}).get("shim.json") != text:
        kube.apply({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": object_metadata(owner, naming.shim_configmap(owner.name),
                                                {**_labels(owner), "app.kubernetes.io/managed-by": MANAGED_BY}),
                    "data": {"shim.json": text}})


def _trace_rules(spec: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    return [(i, r) for i, r in enumerate(spec.get("rules") or [])
            if r.get("mode") == "auto" and (r.get("auto") or {}).get("source") == "trace"]


def step(kube: Kube, body: dict[str, Any], owner: Owner, cluster: OrangeFSClusterSpec, cluster_name: str,
         platform: Platform, params: CostParams, variant: str, now: str, post: Post) -> Learning:
    spec = body.get("spec") or {}
    state = _load(kube, owner)
    out = Learning(rules=dict(state.get("rules") or {}), collected=len(state.get("collected") or []),
                   last_job=state.get("lastJob"))
    if not learn.learning_enabled(spec):
        return out
    rules = _trace_rules(spec)
    try:
        jobs = kube.custom.list(MPIJOB, owner.namespace, learn.label_selector(spec.get("selector") or {}))
    except ApiException as err:
        out.condition = (False, "MPIJobsUnavailable", f"cannot list MPIJobs ({err.status} {err.reason}); is the "
                         "MPI Operator installed?")
        return out
    collectors = kube.list("Job", owner.namespace, selector_string(
        {"pfslayout.io/layoutpolicy": owner.name, "app.kubernetes.io/component": learn.COLLECTOR_COMPONENT}))
    active = collectors[0] if collectors else None
    if state.get("lastError"):
        out.condition = (False, "TraceUnreadable", str(state["lastError"])[:2000])
    elif state.get("lastJob"):
        out.condition = (True, "Learned", f"learned from MPIJob {state['lastJob']}; waiting for the next run")
    else:
        out.condition = (False, "WaitingForTrace", "no MPIJob matching spec.selector has succeeded yet")
    if active is None:
        nxt = learn.next_job(jobs, list(state.get("collected") or []))
        if nxt is None:
            return out
        if not rules:  # nothing to learn for: remember the job so it is not looked at again
            _mark(state, nxt, now)
            _save(kube, owner, state)
            return out
        src = learn.trace_dir(spec, platform.mount_path, owner.namespace)
        image, policy = settings.current().operator_image, settings.current().operator_image_pull_policy
        kube.apply(learn.collector_job(cluster, cluster_name, owner, nxt, src,
                                       [full_path(platform, r["path"]) for _, r in rules], image, policy,
                                       _labels(owner)))
        post(body, "Normal", "CollectingTrace", f"MPIJob {nxt['metadata']['name']} succeeded: collecting its "
             f"traces from {src}")
        out.condition = (out.condition[0], "Collecting", f"collecting the traces of MPIJob {nxt['metadata']['name']}")
        return out
    return _finish(kube, body, owner, spec, active, jobs, state, rules, platform, params, variant, now, post, out)


def _mark(state: dict[str, Any], job: dict[str, Any], now: str) -> None:
    state["collected"] = ([*list(state.get("collected") or []), job["metadata"]["uid"]])[-learn.COLLECTED_LIMIT:]
    state["lastJob"] = job["metadata"]["name"]
    state["lastCollectedTime"] = now


def _finish(kube: Kube, body: dict[str, Any], owner: Owner, spec: dict[str, Any], active: dict[str, Any],
            jobs: list[dict[str, Any]], state: dict[str, Any], rules: list[tuple[int, dict[str, Any]]],
            platform: Platform, params: CostParams, variant: str, now: str, post: Post, out: Learning) -> Learning:
    name = active["metadata"]["name"]
    ann = active["metadata"].get("annotations") or {}
    job_name, uid = ann.get("pfslayout.io/mpijob", "?"), ann.get("pfslayout.io/mpijob-uid", "")
    pods = kube.list("Pod", owner.namespace, selector_string({"job-name": name}))
    jstate = job_state(active)
    if jstate == "running":
        stuck = pod_failure(pods)
        if stuck is None:
            out.condition = (out.condition[0], "Collecting", f"collecting the traces of MPIJob {job_name}")
            return out
        jstate, why = "failed", stuck.message
    else:
        why = ""
    log = ""
    for pod in pods:
        for container in ("summarise", "copy"):
            text = kube.pod_log(owner.namespace, pod["metadata"]["name"], container) or ""
            log += text
    where = ", ".join(f"spec.rules[{i}]" for i, _ in rules)
    fix = (f"run the job with the shim's tracing: ConfigMap {naming.shim_configmap(owner.name)} as "
           "PFSLAYOUT_SHIM_CONFIG, PFSLAYOUT_SHIM_JOB set to the job's name, LD_PRELOAD of libpfsshim.so on "
           "every rank")
    mpijob = {"metadata": {"name": job_name, "uid": uid}}
    try:
        if jstate == "failed":
            raise learn.TraceError(f"collector Job {name} failed: {why or tail(log, 6) or 'no log'}")
        files, summaries = learn.parse_collector_log(log)
        if files == 0:
            raise learn.TraceError(f"no trace files {job_name}.rank-*.pfstrace in "
                                   f"{learn.trace_dir(spec, platform.mount_path, owner.namespace)}")
    except learn.TraceError as err:
        _mark(state, mpijob, now)
        state["lastError"] = f"MPIJob {job_name}: {err}"
        _save(kube, owner, state)
        kube.delete("Job", owner.namespace, name, propagation="Background")
        msg = f"{where}.auto.source: the trace of MPIJob {job_name} cannot be used ({err}); {fix}"
        post(body, "Warning", "TraceUnreadable", msg[:1000])
        out.condition = (False, "TraceUnreadable", msg[:2000])
        out.last_job, out.collected = job_name, len(state["collected"])
        return out
    threshold = float(learn.trace_settings(spec).get("replanThreshold", learn.DEFAULT_THRESHOLD))
    learned = dict(state.get("rules") or {})
    told = []
    for i, rule in rules:
        summary = summaries.get(full_path(platform, rule["path"]))
        if summary is None:
            continue
        prev = learned.get(rule["path"]) or {}
        allowed = list((rule.get("auto") or {}).get("candidates") or ["1-DH", "1-DV", "2-D"])
        try:
            choice = learn.choose(summary, allowed, prev.get("layout"), platform.servers, params, variant, threshold,
                                  job_name, now)
        except learn.TraceError as err:
            post(body, "Warning", "TraceUnreadable", f"spec.rules[{i}].auto.candidates: {err}")
            continue
        layout: dict[str, Any] = {"layout": choice.layout, **({"groups": choice.g} if choice.g else {})}
        learned[rule["path"]] = {"summary": summary.model_dump(mode="json"), "job": job_name, "at": now,
                                 "layout": layout,
                                 "history": ([*list(prev.get("history") or []), choice.entry])[-learn.HISTORY_LIMIT:]}
        told.append(f"{rule['path']}: {choice.entry['reason']}")
    state["rules"] = learned
    state.pop("lastError", None)
    _mark(state, mpijob, now)
    _save(kube, owner, state)
    kube.delete("Job", owner.namespace, name, propagation="Background")
    post(body, "Normal", "TraceLearned", (f"MPIJob {job_name}: {files} rank traces; " + ("; ".join(told) or
         "no request under a source: trace rule's directory"))[:1000])
    out.rules, out.last_job, out.collected = learned, job_name, len(state["collected"])
    out.condition = ((True, "Learned", f"learned from MPIJob {job_name}: {'; '.join(told)}"[:2000]) if told else
                     (False, "NoMatchingRequests", f"MPIJob {job_name} made no request under the directories of "
                      f"{where}; check the job's paths"))
    return out
