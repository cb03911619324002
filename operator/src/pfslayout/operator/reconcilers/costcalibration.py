"""CostCalibration reconciliation: wait for the cluster, plan, set the probe directories' hints, run the
probe MPIJobs in bounded batches, collect their documents, fit, publish (docs/operator.md).

Level-triggered: every call looks at what exists and takes the next step, so the Kopf handlers can call
it on any cause (create, update, resume, a timer) and an operator killed at any point resumes where the
cluster stands. The durable record of a run is its measurements ConfigMap: its annotations say which
run (and for which spec generation and `pfslayout.io/recalibrate` value) it holds, and it keeps every
document already collected — written before the MPIJob that produced it is deleted, so nothing is lost
and nothing is probed twice. MPIJob names are derived from the run and the job index, so a restarted
operator finds its jobs instead of creating duplicates.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pfslayout import naming
from pfslayout.errors import InputError
from pfslayout.k8s.meta import selector_string
from pfslayout.k8s.workloads import Failure, pod_failure, tail
from pfslayout.kinds import COST_CALIBRATION as CC
from pfslayout.kinds import MPIJOB
from pfslayout.kinds import ORANGEFS_CLUSTER as OFS
from pfslayout.kinds.costcalibration import objects as objs
from pfslayout.kinds.costcalibration import platform, probe_slot
from pfslayout.kinds.costcalibration import status as st
from pfslayout.kinds.costcalibration.probe_plan import PlanRefused, ProbeJob, ProbePlan, make_plan
from pfslayout.kinds.costcalibration.results import ProbeOutputError, extract, job_failure, mpijob_state
from pfslayout.kinds.costcalibration.spec import CostCalibrationSpec, params_configmap, parse_spec
from pfslayout.kinds.orangefscluster.spec import OrangeFSClusterSpec
from pfslayout.kinds.orangefscluster.spec import parse_spec as parse_cluster_spec
from pfslayout.operator import scope
from pfslayout.operator.reconcilers.base import Context, Reconciler
from pfslayout.operator.reconcilers.orangefscluster import refresh_calibration_ref
from pfslayout.operator.shared.apply_hints import ensure_hints, release
from pfslayout.operator.shared.clock import now
from pfslayout.operator.shared.locks import with_fresh
from pfslayout.orangefs.dirhints import DirectoryHints

HINTS_KEY = "hints.json"
FAILED_KEY = "failed.json"
TERMINAL = ("Succeeded", "Failed")


@dataclass
class Run:
    """The current run as its measurements ConfigMap records it."""

    number: int
    run_for: str
    digest: str
    data: dict[str, str]

    @property
    def index(self) -> dict[str, Any]:
        return dict(json.loads(self.data.get(objs.INDEX_KEY) or "{}"))


def pod_role(pod: dict[str, Any]) -> str:
    return str((pod["metadata"].get("labels") or {}).get("training.kubeflow.org/job-role", ""))


def worker_nodes(pods: list[dict[str, Any]]) -> list[str]:
    """The nodes a probe job's worker pods ran on, sorted (a pod the scheduler never placed has none)."""
    return sorted({str((p.get("spec") or {}).get("nodeName")) for p in pods
                   if pod_role(p) == "worker" and (p.get("spec") or {}).get("nodeName")})


def run_for(body: dict[str, Any]) -> str:
    """What a run answers: the spec generation and the on-demand annotation's value."""
    meta = body["metadata"]
    token = (meta.get("annotations") or {}).get(objs.RECALIBRATE_ANNOTATION, "")
    return f"{int(meta.get('generation') or 0)}/{token}"


def _read_run(cm: dict[str, Any] | None) -> Run | None:
    if cm is None:
        return None
    ann = (cm.get("metadata") or {}).get("annotations") or {}
    try:
        number = int(ann.get(objs.RUN_ANNOTATION, "0"))
    except ValueError:
        return None
    return Run(number, ann.get(objs.RUN_FOR_ANNOTATION, ""), ann.get(objs.PLAN_ANNOTATION, ""),
               dict(cm.get("data") or {}))


class Reconcile(Reconciler):
    """The next step of one CostCalibration's run: wait for the cluster, plan, hints, probe, publish."""

    resource = CC
    transitions = st.events

    def refuse(self, phase: str, reason: str, message: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.write({"phase": phase, **(extra or {}),
                           "conditions": st.ready(False, reason, message, self.generation, now(), self.old)})

    # ------------------------------------------------------------------------------------------- steps

    def cluster(self, spec: CostCalibrationSpec) -> tuple[dict[str, Any], OrangeFSClusterSpec] | str:
        name = spec.cluster_ref.name
        ofs = self.ctx.custom(OFS, self.owner.namespace, name)
        if ofs is None:
            return (f"spec.clusterRef.name: no OrangeFSCluster {name!r} in namespace {self.owner.namespace}; "
                    "create it or point clusterRef at an existing one (waiting)")
        ost = ofs.get("status") or {}
        ready: dict[str, Any] = next((c for c in ost.get("conditions") or [] if c.get("type") == "Ready"), {})
        if ost.get("phase") != "Ready" or ready.get("status") != "True":
            return (f"waiting for OrangeFSCluster {name} to be Ready (phase {ost.get('phase') or 'none'}, "
                    f"{ost.get('readyServers', 0)}/{ost.get('servers', '?')} servers Ready)")
        try:
            return ofs, parse_cluster_spec(ofs.get("spec"), self.ctx.settings.orangefs_image)
        except InputError as err:
            return f"OrangeFSCluster {name} has an invalid spec ({err})"

    def finished(self, spec: CostCalibrationSpec, found: tuple[dict[str, Any], OrangeFSClusterSpec] | str
                 ) -> dict[str, Any] | None:
        """A finished run's status, with `Stale` when the cluster's server count (`found`: `cluster()`'s answer)
        is no longer the one it measured (kinds/costcalibration/platform.py); None when it must run again (an
        automatic calibration of a scaled cluster), which the caller then starts."""
        if isinstance(found, str):
            return self.old  # a cluster not Ready (scaling, say) is judged once it is Ready again
        ofs, cluster = found
        servers = int((ofs.get("status") or {}).get("servers") or cluster.servers.count)
        measured = self.old.get("servers")
        name = spec.cluster_ref.name
        decision = platform.decide(measured, servers, platform.automatic(self.body, name))
        if decision == platform.RERUN:
            self.post(self.body, "Normal", "ServersChanged", f"run {self.old.get('run')} measured {measured} servers; "
                      f"OrangeFSCluster {name} now has {servers}: calibrating again")
            return None
        conditions = list(self.old.get("conditions") or [])
        mine = next((c for c in conditions if c.get("type") == platform.STALE_CONDITION), None)
        if decision == platform.CURRENT and mine is None:
            return self.old
        flag = platform.stale(decision == platform.STALE, measured, servers, name, int(self.old.get("run") or 0),
                              self.generation, now(), conditions)
        if mine is not None and all(mine.get(k) == flag.get(k) for k in ("status", "reason", "message")):
            return self.old
        if decision == platform.STALE and (mine or {}).get("status") != "True":
            self.post(self.body, "Warning", "Stale", flag["message"])
        rest = [c for c in conditions if c.get("type") != platform.STALE_CONDITION]
        return self.write({**self.old, "conditions": [*rest, flag]})

    def start_run(self, spec: CostCalibrationSpec, plan: ProbePlan, previous: Run | None) -> Run:
        number = max(int(self.old.get("run") or 0), previous.number if previous else 0) + 1
        for job in self.kube.custom.list(MPIJOB, self.owner.namespace,
                                         selector_string({objs.CALIBRATION_LABEL: self.owner.name})):
            self.kube.custom.delete(MPIJOB, self.owner.namespace, job["metadata"]["name"])
        run = Run(number, run_for(self.body), plan.digest, {})
        self.save(run)
        self.post(self.body, "Normal", "RunStarted",
                  f"run {number}: {plan.total_cells} cells in {len(plan.jobs)} probe jobs on {plan.servers} servers, "
                  f"{len(plan.dirs)} probe directories")
        # a new run measures the cluster as it is now: a Stale condition of the last one no longer applies
        fresh = [c for c in self.old.get("conditions") or [] if c.get("type") != platform.STALE_CONDITION]
        self.write({"phase": "Running", "run": number, "startTime": now(), "servers": plan.servers,
                    "conditions": fresh,
                    "cells": st.progress(0, plan.total_cells),
                    "jobs": {"total": len(plan.jobs), "succeeded": 0, "failed": 0, "running": 0},
                    "measurementsConfigMap": naming.measurements_configmap(self.owner.name),
                    "configMapName": params_configmap(self.owner.name, spec)})
        return run

    def identity(self, run: Run) -> dict[str, Any]:
        """What names the run in the status, in every status write of it: the operator can be killed between
        start_run's save of the measurements and its first status write, and the run then resumes from the
        ConfigMap without start_run (a published run once lacked measurementsConfigMap that way)."""
        started = self.old.get("startTime") if self.old.get("run") == run.number else None
        return {"run": run.number, "startTime": started or now(),
                "measurementsConfigMap": naming.measurements_configmap(self.owner.name)}

    def save(self, run: Run) -> None:
        self.kube.apply(objs.measurements_configmap(self.owner, run.number, run.run_for, run.digest, run.data))

    def fail_run(self, run: Run, plan: ProbePlan, failure: Failure, where: str) -> dict[str, Any]:
        # Recorded first, so a restart after the clean-up still knows why the run ended.
        run.data[FAILED_KEY] = json.dumps({"reason": failure.reason, "message": failure.message, "where": where})
        self.save(run)
        return self.finish_failed(run, plan)

    def finish_failed(self, run: Run, plan: ProbePlan) -> dict[str, Any]:
        failed = json.loads(run.data[FAILED_KEY])
        for job in self.kube.custom.list(MPIJOB, self.owner.namespace,
                                         selector_string({objs.CALIBRATION_LABEL: self.owner.name})):
            self.kube.custom.delete(MPIJOB, self.owner.namespace, job["metadata"]["name"])
        done = self.done_jobs(run, plan)
        message = f"{failed['where']}: {failed['reason']}: {failed['message']}"
        return self.refuse("Failed", "ProbeFailed", message[:4000], {
            **self.identity(run), "cells": st.progress(sum(j.cells for j in plan.jobs if j.index in done),
                                                    plan.total_cells),
            "jobs": {"total": len(plan.jobs), "succeeded": len(done), "failed": 1, "running": 0}})

    @staticmethod
    def done_jobs(run: Run, plan: ProbePlan) -> set[int]:
        return {j.index for j in plan.jobs if all(k in run.data for k in j.keys)}

    def hints(self, ofs: dict[str, Any], cluster: OrangeFSClusterSpec, run: Run, plan: ProbePlan
              ) -> bool | dict[str, Any]:
        """True when the probe directories carry their hints; else the status written while waiting."""
        dirs = [DirectoryHints(d.path, d.xattrs) for d in plan.dirs]
        recorded = json.loads(run.data.get(HINTS_KEY) or "{}")
        if recorded.get("plan") == plan.digest:
            return True
        outcome = ensure_hints(self.kube, cluster, ofs["metadata"]["name"], self.owner, dirs,
                               objs.labels(self.owner.name, "hints", {objs.RUN_LABEL: str(run.number)}),
                               nonce=run.number)
        if outcome.state == "failed":
            failed = self.fail_run(run, plan, Failure("HintsNotApplied", outcome.message), "probe directories")
            release(self.kube, self.owner.namespace, outcome)  # recorded: the Job may go
            return failed
        if outcome.state == "applied":
            run.data[HINTS_KEY] = json.dumps({"plan": plan.digest, "job": outcome.job, "written": outcome.written,
                                              "directories": [d.path for d in plan.dirs]})
            self.save(run)
            release(self.kube, self.owner.namespace, outcome)
            self.post(self.body, "Normal", "HintsApplied",
                      f"{len(dirs)} probe directories ready ({outcome.written} hints written, all read back)")
            return True
        if outcome.state == "created":
            self.post(self.body, "Normal", "SettingHints", outcome.message)
        return self.write({"phase": "Running", "conditions": st.ready(
            False, "Probing", f"run {run.number}: creating {len(dirs)} probe directories and their hints "
            f"(Job {outcome.job})", self.generation, now(), self.old)})

    def collect(self, run: Run, plan: ProbePlan, job: ProbeJob, mpijob: dict[str, Any]) -> Failure | None:
        name = mpijob["metadata"]["name"]
        pods = self.kube.list("Pod", self.owner.namespace, selector_string({"training.kubeflow.org/job-name": name}))
        log = ""
        for pod in pods:
            if pod_role(pod) == "launcher":
                log = self.kube.pod_log(self.owner.namespace, pod["metadata"]["name"]) or log
        expect = {inv.key: inv.servers for inv in job.invocations}
        try:
            docs = extract(log, job.keys, expect)
        except ProbeOutputError as err:
            return Failure("ProbeOutputInvalid", f"MPIJob {name}: {err}; launcher log tail:\n{tail(log, 12)}")
        run.data.update(docs)
        index = run.index
        # the nodes its ranks ran on: the fit says how many client nodes it measured (st.client_nodes)
        index[str(job.index)] = {"mpijob": name, "uid": mpijob["metadata"].get("uid"), "collected": now(),
                                 "keys": list(job.keys), "nodes": worker_nodes(pods)}
        run.data[objs.INDEX_KEY] = json.dumps(index, sort_keys=True)
        self.save(run)  # before the delete: a restart in between finds the documents, not the job
        self.kube.custom.delete(MPIJOB, self.owner.namespace, name)
        return None

    def failure_of(self, mpijob: dict[str, Any]) -> Failure | None:
        name = mpijob["metadata"]["name"]
        pods = self.kube.list("Pod", self.owner.namespace, selector_string({"training.kubeflow.org/job-name": name}))
        state = mpijob_state(mpijob)
        if state == "failed":
            failure = job_failure(mpijob)
            launcher = [p for p in pods if (p["metadata"].get("labels") or {}).get(
                "training.kubeflow.org/job-role") == "launcher"]
            log = ""
            for pod in launcher:
                log = self.kube.pod_log(self.owner.namespace, pod["metadata"]["name"]) or log
            stuck = pod_failure(pods, objs.NO_PROBE)
            if stuck is not None and stuck.reason == "CommandNotFound":
                failure = Failure("NoProbeInImage", stuck.message)
            return Failure(failure.reason, f"MPIJob {name}: {failure.message}" +
                           (f"; launcher log tail:\n{tail(log, 12)}" if log.strip() else ""))
        stuck = pod_failure(pods, objs.NO_PROBE)
        if stuck is None:
            return None
        reason = "NoProbeInImage" if stuck.reason == "CommandNotFound" else stuck.reason
        return Failure(reason, f"MPIJob {name}: {stuck.message}; fix spec.probeImage")

    def publish(self, spec: CostCalibrationSpec, run: Run, plan: ProbePlan) -> dict[str, Any]:
        docs = {k: v for k, v in run.data.items() if k not in (objs.INDEX_KEY, HINTS_KEY, FAILED_KEY)}
        result = st.fit_run(spec, docs)
        ok, reason, message = st.verdict(spec, result)
        completion = str(self.old.get("completionTime")) if self.old.get("run") == run.number and \
            self.old.get("phase") in TERMINAL and self.old.get("completionTime") else now()
        cm_name = params_configmap(self.owner.name, spec)
        fit_json = json.dumps(_finite_only(result.to_dict()), sort_keys=True, allow_nan=False)
        self.kube.apply(objs.params_configmap(self.owner, cm_name, st.params_json(result, self.owner.name, run.number,
                                                                                   completion), fit_json))
        history = st.with_history(list(self.old.get("history") or []),
                                  st.history_entry(run.number, self.generation, completion, reason, result),
                                  spec.history_limit)
        status = self.write({
            "phase": "Succeeded", **self.identity(run), "params": st.params_block(result),
            "fit": st.fit_block(result, st.client_nodes(run.index)),
            "cells": st.progress(plan.total_cells, plan.total_cells),
            "jobs": {"total": len(plan.jobs), "succeeded": len(plan.jobs), "failed": 0, "running": 0},
            "configMapName": cm_name, "completionTime": completion, "history": history,
            "conditions": st.ready(ok, reason, message, self.generation, now(), self.old)})
        refresh_calibration_ref(self.ctx, self.owner.namespace, spec.cluster_ref.name)
        return status

    def slot_taken(self, run: Run) -> str | None:
        """The calibration this run must let probe first (probe_slot.py), or None to go ahead."""
        settings = self.ctx.settings
        if settings.calibration_probing != "exclusive":
            return None

        def served(obj: dict[str, Any]) -> bool:
            return scope.served(str(obj["metadata"].get("namespace") or ""), settings.watch_namespaces)

        probing = {f"{j['metadata']['namespace']}/{(j['metadata'].get('labels') or {})[objs.CALIBRATION_LABEL]}"
                   for j in self.kube.custom.list_all(MPIJOB, objs.CALIBRATION_LABEL) if served(j)}
        me = probe_slot.Claim(str(self.identity(run)["startTime"]), self.owner.namespace, self.owner.name)
        others = [c for body in self.kube.custom.list_all(CC) if served(body)
                  and (c := probe_slot.claim_of(body)) is not None and c.ref != me.ref]
        return probe_slot.waiting_for(me, others, probing)

    # -------------------------------------------------------------------------------------------- main

    def run(self) -> dict[str, Any]:
        try:
            spec = parse_spec(self.body.get("spec"), self.ctx.settings.mpi_image)
        except InputError as err:
            return self.refuse("Failed", "InvalidSpec", str(err))
        cm = self.kube.get("ConfigMap", self.owner.namespace, naming.measurements_configmap(self.owner.name))
        current = _read_run(cm)
        found = self.cluster(spec)
        # this run is over; a spec change, the annotation or (automatic ones) a scaled cluster starts the next
        if current is not None and current.run_for == run_for(self.body) and self.old.get("run") == current.number \
                and self.old.get("phase") in TERMINAL and self.old.get("observedGeneration") == self.generation \
                and (over := self.finished(spec, found)) is not None:
            return over
        if isinstance(found, str):
            return self.refuse("Pending", "ClusterNotReady", found)
        ofs, cluster = found
        ost = ofs.get("status") or {}
        urls = [str(s.get("url")) for s in (ost.get("endpoints") or {}).get("servers") or []]
        try:
            plan = make_plan(spec, self.owner.name, int(ost.get("servers") or cluster.servers.count),
                             cluster.client.mount_path, urls)
        except PlanRefused as refused:
            return self.refuse("Failed", refused.reason, str(refused))
        run = current
        if run is None or run.run_for != run_for(self.body) or run.digest != plan.digest:
            run = self.start_run(spec, plan, current)
        if FAILED_KEY in run.data:
            return self.finish_failed(run, plan)
        ready = self.hints(ofs, cluster, run, plan)
        if ready is not True:
            return ready if isinstance(ready, dict) else self.old
        return self.probe(spec, cluster, ofs, run, plan)

    def probe(self, spec: CostCalibrationSpec, cluster: OrangeFSClusterSpec, ofs: dict[str, Any], run: Run,
              plan: ProbePlan) -> dict[str, Any]:
        existing = {int((j["metadata"].get("labels") or {}).get(objs.JOB_LABEL, "-1")): j
                    for j in self.kube.custom.list(MPIJOB, self.owner.namespace, selector_string(
                        {objs.CALIBRATION_LABEL: self.owner.name, objs.RUN_LABEL: str(run.number)}))}
        done = self.done_jobs(run, plan)
        by_index = {j.index: j for j in plan.jobs}
        running = 0
        for index, mpijob in sorted(existing.items()):
            job = by_index.get(index)
            if job is None or index in done:
                self.kube.custom.delete(MPIJOB, self.owner.namespace, mpijob["metadata"]["name"])
                continue
            failure = self.failure_of(mpijob)
            if failure is not None:
                return self.fail_run(run, plan, failure, f"probe job {index + 1}/{len(plan.jobs)}")
            if mpijob_state(mpijob) == "succeeded":
                failure = self.collect(run, plan, job, mpijob)
                if failure is not None:
                    return self.fail_run(run, plan, failure, f"probe job {index + 1}/{len(plan.jobs)}")
                done.add(index)
                cells = sum(j.cells for j in plan.jobs if j.index in done)
                self.post(self.body, "Normal", "ProbeJobSucceeded",
                          f"probe job {index + 1}/{len(plan.jobs)} ({job.cells} cells) measured; "
                          f"{cells}/{plan.total_cells} cells done")
            else:
                running += 1
        if len(done) == len(plan.jobs):
            return self.publish(spec, run, plan)
        if running == 0 and (holder := self.slot_taken(run)) is not None:
            return self.write_progress(run, plan, done, 0, "Queued", lambda cells: (
                f"run {run.number}: waiting for CostCalibration {holder} to finish probing ({cells}/"
                f"{plan.total_cells} cells measured): calibrations probe one at a time, else each measures the "
                "other (PFSLAYOUT_CALIBRATION_PROBING)"))
        selector = spec.node_selector if spec.node_selector is not None else cluster.node_selector
        tolerations = spec.tolerations if spec.tolerations is not None else cluster.tolerations
        for job in plan.jobs:
            if running >= spec.batch.max_concurrent_jobs:
                break
            if job.index in done or job.index in existing:
                continue
            created = self.kube.custom.create(MPIJOB, self.owner.namespace, objs.probe_mpijob(
                spec, self.owner, ofs["metadata"]["name"], run.number, job, selector, list(tolerations)))
            running += 1
            if created is not None:
                self.post(self.body, "Normal", "ProbeJobCreated",
                          f"probe job {job.index + 1}/{len(plan.jobs)}: MPIJob {created['metadata']['name']}, "
                          f"{job.cells} cells, {spec.grid.nodes}x{spec.grid.ranks_per_node} ranks")
        return self.write_progress(run, plan, done, running, "Probing", lambda cells: (
            f"run {run.number}: {len(done)}/{len(plan.jobs)} probe jobs done, {running} running, "
            f"{cells}/{plan.total_cells} cells measured"))

    def write_progress(self, run: Run, plan: ProbePlan, done: set[int], running: int, reason: str,
                       message: Callable[[int], str]) -> dict[str, Any]:
        """The status of a run under way: cells and jobs so far, `Ready=False` with ``reason`` and the
        message made from the cells measured."""
        cells = sum(j.cells for j in plan.jobs if j.index in done)
        return self.write({
            "phase": "Running", **self.identity(run), "cells": st.progress(cells, plan.total_cells),
            "jobs": {"total": len(plan.jobs), "succeeded": len(done), "failed": 0, "running": running},
            "conditions": st.ready(False, reason, message(cells), self.generation, now(), self.old)})


def _finite_only(doc: Any) -> Any:
    """JSON has no NaN or infinity: such values (an undefined R², an infinite condition) become null."""
    if isinstance(doc, dict):
        return {k: _finite_only(v) for k, v in doc.items()}
    if isinstance(doc, (list, tuple)):
        return [_finite_only(v) for v in doc]
    if isinstance(doc, float) and not math.isfinite(doc):
        return None
    return doc


def reconcile(ctx: Context, body: dict[str, Any]) -> dict[str, Any]:
    """Take the next step of one CostCalibration; returns the status written. While its probe jobs run (or
    wait for the probing slot) it is called again every PFSLAYOUT_CALIBRATION_POLL_SECONDS; otherwise only
    a change wakes it (its spec or annotation, its cluster: handlers/wakeups.py) or the resync period."""
    status = with_fresh(ctx.kube, CC, body, lambda fresh: Reconcile(ctx, fresh).run())
    if status.get("phase") in ("Running", "Fitting"):
        ctx.requeue(ctx.settings.calibration_poll_s)
    return status
