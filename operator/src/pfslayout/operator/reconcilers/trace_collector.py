"""The learning loop as I/O: find the policy's finished MPIJobs, collect each one's traces with a Job,
and keep what they taught in ConfigMap `<policy>-learned` (the durable record: which jobs were collected,
per `source: trace` rule the last summary, the layout in force and the history of decisions, and per rule
the model's prediction for the job's requests against what the trace measured).

Predicted against measured: every rule with a layout of the model in place is judged on each collected
job (learn.judge); when the job's error stays above `spec.trace.recalibrateAbove` for
`spec.trace.recalibrateAfter` consecutive judged jobs, the CostCalibration whose parameters the policy
uses is re-run (its `pfslayout.io/recalibrate` annotation) and an Event says why.

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

from pfslayout import metrics, naming
from pfslayout.costmodel.params import CostParams
from pfslayout.k8s.api import Kube
from pfslayout.k8s.meta import Owner, object_metadata, selector_string
from pfslayout.k8s.workloads import job_state, pod_failure, tail
from pfslayout.kinds import COST_CALIBRATION as CC
from pfslayout.kinds import MANAGED_BY
from pfslayout.kinds.costcalibration.objects import RECALIBRATE_ANNOTATION
from pfslayout.kinds.layoutpolicy import children, learn
from pfslayout.kinds.layoutpolicy.rules import Platform, full_path
from pfslayout.kinds.orangefscluster.spec import OrangeFSClusterSpec
from pfslayout.operator.reconcilers.base import Context
from pfslayout.operator.shared.clock import epoch


@dataclass(frozen=True)
class Site:
    """Where the policy's jobs ran and what plans for them: the cluster, its platform and the model."""
    cluster: OrangeFSClusterSpec
    cluster_name: str
    platform: Platform
    params: CostParams
    variant: str
    calibration: str | None = None  # the CostCalibration the parameters come from (None: the seeds')


@dataclass
class Learning:
    rules: dict[str, Any] = field(default_factory=dict)  # spec path -> learned entry
    condition: tuple[bool, str, str] = (False, "Disabled", "spec.trace.enabled is false or spec.selector is unset")
    collected: int = 0
    last_job: str | None = None
    predictions: dict[str, Any] = field(default_factory=dict)  # spec path -> the last judgement (status)
    prediction: dict[str, Any] = field(default_factory=dict)  # the policy's: last job's error, the streak


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
                                            {**children.labels(owner), "app.kubernetes.io/managed-by": MANAGED_BY}),
                "data": {"state.json": json.dumps(state, indent=1, sort_keys=True)}})


def publish_shim_config(kube: Kube, owner: Owner, text: str) -> None:
    """ConfigMap `<policy>-shim`: the shim config (`shim.json`, kinds/layoutpolicy/shim_configmap.py) the
    policy's jobs run with, written when it differs from what the ConfigMap holds."""
    cm = kube.get("ConfigMap", owner.namespace, naming.shim_configmap(owner.name))
    if ((cm or {}).get("data") or {}).get("shim.json") != text:
        kube.apply({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": object_metadata(owner, naming.shim_configmap(owner.name),
                                                {**children.labels(owner), "app.kubernetes.io/managed-by": MANAGED_BY}),
                    "data": {"shim.json": text}})


def _trace_rules(spec: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    return [(i, r) for i, r in enumerate(spec.get("rules") or [])
            if r.get("mode") == "auto" and (r.get("auto") or {}).get("source") == "trace"]


def collect(ctx: Context, body: dict[str, Any], owner: Owner, site: Site, now: str) -> Learning:
    """One step of the policy's learning loop (called by each LayoutPolicy reconcile): what it has learned,
    after starting a collector Job for the next finished MPIJob or learning from the one that finished."""
    spec = body.get("spec") or {}
    if not learn.trace_settings(spec).get("enabled") and not _trace_rules(spec):
        return Learning()  # nothing traced, nothing learned: no record to read
    return Collector(ctx, body, owner, site, now).step()


def _mark(state: dict[str, Any], job: dict[str, Any], now: str) -> None:
    state["collected"] = ([*list(state.get("collected") or []), job["metadata"]["uid"]])[-learn.COLLECTED_LIMIT:]
    state["lastJob"] = job["metadata"]["name"]
    state["lastCollectedTime"] = now


class Collector:
    """One step of one policy's learning loop; `state` is ConfigMap `<policy>-learned`'s record."""

    def __init__(self, ctx: Context, body: dict[str, Any], owner: Owner, site: Site, now: str) -> None:
        self.ctx, self.kube, self.post = ctx, ctx.kube, ctx.post
        self.body, self.owner, self.site, self.now = body, owner, site, now
        self.spec: dict[str, Any] = body.get("spec") or {}
        self.rules = _trace_rules(self.spec)
        self.all_rules = list(enumerate(self.spec.get("rules") or []))  # every rule is judged on the trace
        self.state = _load(self.kube, owner)
        self.out = Learning(rules=dict(self.state.get("rules") or {}), collected=len(self.state.get("collected") or []),
                            last_job=self.state.get("lastJob"), predictions=dict(self.state.get("predictions") or {}),
                            prediction=dict(self.state.get("prediction") or {}))

    @property
    def trace_dir(self) -> str:
        return learn.trace_dir(self.spec, self.site.platform.mount_path, self.owner.namespace)

    def step(self) -> Learning:
        if not learn.learning_enabled(self.spec):
            return self.out
        try:
            # in the operator from its MPIJob watch (a succeeded job also wakes the policy: handlers/wakeups.py)
            jobs = self.ctx.succeeded_mpijobs(self.owner.namespace, self.spec.get("selector") or {})
        except ApiException as err:
            self.out.condition = (False, "MPIJobsUnavailable", f"cannot list MPIJobs ({err.status} {err.reason}); "
                                  "is the MPI Operator installed?")
            return self.out
        self.out.condition = self.standing()
        nxt = learn.next_job(jobs, list(self.state.get("collected") or []))
        # A collector can exist only while a job is left to collect or the last reconcile started one (a job is
        # marked collected in the write that deletes its collector): otherwise no LIST.
        if nxt is None and not self.collecting():
            return self.out
        collectors = self.kube.list("Job", self.owner.namespace, selector_string(
            {children.POLICY_LABEL: self.owner.name, "app.kubernetes.io/component": learn.COLLECTOR_COMPONENT}))
        if collectors:
            return self.finish(collectors[0])
        if nxt is not None:
            self.start(nxt)
        return self.out

    def collecting(self) -> bool:
        """The policy's status says a collector was running."""
        return any(c.get("type") == "Learned" and c.get("reason") == "Collecting"
                   for c in (self.body.get("status") or {}).get("conditions") or [])

    def standing(self) -> tuple[bool, str, str]:
        """The Learned condition as the record leaves it."""
        if self.state.get("lastError"):
            return (False, "TraceUnreadable", str(self.state["lastError"])[:2000])
        if self.state.get("lastJob"):
            return (True, "Learned", f"learned from MPIJob {self.state['lastJob']}; waiting for the next run")
        return (False, "WaitingForTrace", "no MPIJob matching spec.selector has succeeded yet")

    def start(self, mpijob: dict[str, Any]) -> None:
        """A collector Job for a finished MPIJob (with no rule to learn for, the job is only remembered, so
        it is not looked at again)."""
        if not self.all_rules:
            _mark(self.state, mpijob, self.now)
            _save(self.kube, self.owner, self.state)
            return
        s, platform = self.ctx.settings, self.site.platform
        paths = list(dict.fromkeys(full_path(platform, r["path"]) for _, r in self.all_rules))
        self.kube.apply(learn.collector_job(self.site.cluster, self.site.cluster_name, self.owner, mpijob,
                                            self.trace_dir, paths, s.operator_image, s.operator_image_pull_policy,
                                            children.labels(self.owner), prune=list(self.state.get("prune") or [])))
        name = mpijob["metadata"]["name"]
        self.post(self.body, "Normal", "CollectingTrace",
                  f"MPIJob {name} succeeded: collecting its traces from {self.trace_dir}")
        self.out.condition = (self.out.condition[0], "Collecting", f"collecting the traces of MPIJob {name}")
        self.ctx.requeue(self.ctx.settings.layout_poll_s)

    def finish(self, active: dict[str, Any]) -> Learning:
        """The collector Job's outcome: still running, failed or unusable (reported), or learned from."""
        name = active["metadata"]["name"]
        ann = active["metadata"].get("annotations") or {}
        job_name, uid = ann.get("pfslayout.io/mpijob", "?"), ann.get("pfslayout.io/mpijob-uid", "")
        pods = self.kube.list("Pod", self.owner.namespace, selector_string({"job-name": name}))
        jstate, why = job_state(active), ""
        if jstate == "running":
            stuck = pod_failure(pods)
            if stuck is None:
                self.out.condition = (self.out.condition[0], "Collecting",
                                      f"collecting the traces of MPIJob {job_name}")
                self.ctx.requeue(self.ctx.settings.layout_poll_s)
                return self.out
            jstate, why = "failed", stuck.message
        log = "".join(self.kube.pod_log(self.owner.namespace, pod["metadata"]["name"], container) or ""
                      for pod in pods for container in ("summarise", "copy"))
        mpijob = {"metadata": {"name": job_name, "uid": uid}}
        self.retain(log, job_name)
        try:
            if jstate == "failed":
                raise learn.TraceError(f"collector Job {name} failed: {why or tail(log, 6) or 'no log'}")
            files, summaries = learn.parse_collector_log(log)
            if files == 0:
                raise learn.TraceError(f"no trace files {job_name}.rank-*.pfstrace in {self.trace_dir}")
        except learn.TraceError as err:
            return self.unusable(mpijob, name, err)
        told = self.learn_rules(summaries, job_name)
        judged = self.judge_rules(summaries, job_name)
        self.state.pop("lastError", None)
        self.record(mpijob, name)
        self.ctx.requeue(0)  # the next finished job, if any, starts now
        self.post(self.body, "Normal", "TraceLearned", (f"MPIJob {job_name}: {files} rank traces; " + (
            "; ".join(told + judged) or "no request under a rule's directory"))[:1000])
        self.out.rules = dict(self.state.get("rules") or {})
        self.out.predictions = dict(self.state.get("predictions") or {})
        self.out.prediction = dict(self.state.get("prediction") or {})
        if told or (judged and not self.rules):
            self.out.condition = (True, "Learned", f"learned from MPIJob {job_name}: {'; '.join(told + judged)}"[:2000])
        else:
            self.out.condition = (False, "NoMatchingRequests", f"MPIJob {job_name} made no request under the "
                                  f"directories of {self.where}; check the job's paths")
        return self.out

    def retain(self, log: str, job_name: str) -> None:
        """Retention (learn.retention): what this collector deleted, said; from its listing, the runs the next
        one deletes (saved with the rest of the record)."""
        keep = learn.retention(self.spec)
        before = list(self.state.get("prune") or [])
        pruned = learn.parse_pruned(log)
        if before and pruned is not None:
            age = (learn.trace_settings(self.spec).get("retain") or {}).get("maxAge")
            limit = f"the newest {keep.runs}" + (f", none older than {age}" if age else "")
            message = (f"deleted {pruned} trace files of {len(before)} earlier runs from {self.trace_dir} "
                       f"(spec.trace.retain keeps {limit}): {', '.join(before)}")
            self.post(self.body, "Normal", "TracesPruned", message[:1000])
        runs = learn.listing_runs(log)
        self.state["prune"] = learn.expired(runs, keep, epoch(self.now), job_name)

    @property
    def where(self) -> str:
        return ", ".join(f"spec.rules[{i}]" for i, _ in (self.rules or self.all_rules))

    def record(self, mpijob: dict[str, Any], collector: str) -> None:
        """The job marked collected in the same write that records what it taught, then its collector Job
        deleted: a restart in between finds the record, so no job is learned from twice."""
        _mark(self.state, mpijob, self.now)
        _save(self.kube, self.owner, self.state)
        self.kube.delete("Job", self.owner.namespace, collector, propagation="Background")
        self.out.last_job, self.out.collected = mpijob["metadata"]["name"], len(self.state["collected"])

    def unusable(self, mpijob: dict[str, Any], collector: str, err: learn.TraceError) -> Learning:
        """A trace that cannot be learned from: recorded, and a Warning naming the rules and the fix."""
        job_name = mpijob["metadata"]["name"]
        self.state["lastError"] = f"MPIJob {job_name}: {err}"
        self.record(mpijob, collector)
        fix = (f"run the job with the shim's tracing: ConfigMap {naming.shim_configmap(self.owner.name)} as "
               "PFSLAYOUT_SHIM_CONFIG, PFSLAYOUT_SHIM_JOB set to the job's name, LD_PRELOAD of libpfsshim.so on "
               "every rank")
        # the field that wants the trace: the rules that learn from it, else the tracing that judges the model
        field = f"{self.where}.auto.source" if self.rules else "spec.trace.enabled"
        msg = f"{field}: the trace of MPIJob {job_name} cannot be used ({err}); {fix}"
        self.post(self.body, "Warning", "TraceUnreadable", msg[:1000])
        self.out.condition = (False, "TraceUnreadable", msg[:2000])
        return self.out

    def learn_rules(self, summaries: dict[str, Any], job_name: str) -> list[str]:
        """Each `source: trace` rule the job's requests reached: its layout chosen again (hysteresis by the
        policy's replanThreshold), with the decision appended to its history; what was told, per rule."""
        threshold = float(learn.trace_settings(self.spec).get("replanThreshold", learn.DEFAULT_THRESHOLD))
        site, learned, told = self.site, dict(self.state.get("rules") or {}), []
        for i, rule in self.rules:
            summary = summaries.get(full_path(site.platform, rule["path"]))
            if summary is None:
                continue
            prev = learned.get(rule["path"]) or {}
            allowed = list((rule.get("auto") or {}).get("candidates") or ["1-DH", "1-DV", "2-D"])
            try:
                choice = learn.choose(summary, allowed, prev.get("layout"), site.platform.servers, site.params,
                                      site.variant, threshold, job_name, self.now)
            except learn.TraceError as err:
                self.post(self.body, "Warning", "TraceUnreadable", f"spec.rules[{i}].auto.candidates: {err}")
                continue
            layout: dict[str, Any] = {"layout": choice.layout, **({"groups": choice.g} if choice.g else {})}
            learned[rule["path"]] = {"summary": summary.model_dump(mode="json"), "job": job_name, "at": self.now,
                                     "layout": layout, "history": ([*list(prev.get("history") or []),
                                                                    choice.entry])[-learn.HISTORY_LIMIT:]}
            told.append(f"{rule['path']}: {choice.entry['reason']}")
        self.state["rules"] = learned
        return told

    def judge_rules(self, summaries: dict[str, Any], job_name: str) -> list[str]:
        """Every rule the job's requests reached, judged: the model's I/O time for them on the layout the
        rule had in place (its status as the job ran) against the trace's; the job's error counted towards
        a recalibration (spec.trace.recalibrateAbove / recalibrateAfter). What was told, per rule."""
        site = self.site
        in_place = {r.get("path"): r for r in (self.body.get("status") or {}).get("rules") or []}
        learned = dict(self.state.get("rules") or {})
        predictions, told, judged = dict(self.state.get("predictions") or {}), [], []
        for _, rule in self.all_rules:
            summary = summaries.get(full_path(site.platform, rule["path"]))
            if summary is None:
                continue
            layout = _layout_in_place(in_place.get(rule["path"]) or {}, learned.get(rule["path"]), job_name)
            j = learn.judge(summary, layout, site.platform.servers, site.params, site.variant)
            predictions[rule["path"]] = {**j.status(job_name), "at": self.now}
            if j.error is None:
                told.append(f"{rule['path']}: not judged ({j.reason})")
                continue
            judged.append(j)
            metrics.set_prediction(self.owner.namespace, self.owner.name, rule["path"], j.error)
            told.append(f"{rule['path']}: predicted {j.predicted:.3g} s on {j.layout}, measured {j.measured:.3g} s "
                        f"({j.error:+.0%})")
        self.state["predictions"] = predictions
        t = learn.trace_settings(self.spec)
        above = float(t["recalibrateAbove"]) if t.get("recalibrateAbove") is not None else None
        after = int(t.get("recalibrateAfter") or learn.DEFAULT_RECALIBRATE_AFTER)
        prev = dict(self.state.get("prediction") or {})
        error = learn.job_error(judged)
        streak, due = learn.recalibration_due(int(prev.get("streak") or 0), error, above, after)
        prediction = {**prev, "streak": streak}
        if error is not None:
            prediction.update(job=job_name, error=error, at=self.now)
        if due and above is not None:
            prediction["recalibrations"] = int(prev.get("recalibrations") or 0) + 1
            prediction["lastRecalibration"] = self.recalibrate(job_name, error, above, after)
        self.state["prediction"] = prediction
        return told

    def recalibrate(self, job_name: str, error: float | None, above: float, after: int) -> dict[str, Any]:
        """Re-run the CostCalibration the policy's parameters come from (its recalibrate annotation), with
        an Event saying why; with the seeds' parameters there is none to re-run: a Warning says what to set."""
        why = (f"the model's I/O time was off by more than {above:.0%} (spec.trace.recalibrateAbove) for {after} "
               f"consecutive traced jobs (spec.trace.recalibrateAfter), the last MPIJob {job_name} by "
               f"{(error or 0.0):+.0%}")
        name = self.site.calibration
        record: dict[str, Any] = {"at": self.now, "job": job_name, "reason": why}
        if name is None:
            self.post(self.body, "Warning", "RecalibrationImpossible",
                      f"{why}, but the policy uses the seeds' parameters: set spec.calibrationRef or the cluster's "
                      "spec.calibration.auto so there is a CostCalibration to re-run"[:1000])
            return record
        token = f"trace-{job_name}-{self.now}"
        done = self.kube.custom.patch(CC, self.owner.namespace, name,
                                      {"metadata": {"annotations": {RECALIBRATE_ANNOTATION: token}}})
        if done is None:
            self.post(self.body, "Warning", "RecalibrationImpossible",
                      f"{why}, but CostCalibration {name} is gone; create it or fix spec.calibrationRef"[:1000])
            return record
        metrics.RECALIBRATIONS.labels(self.owner.namespace, self.owner.name).inc()
        self.post(self.body, "Normal", "Recalibrating", f"{why}: re-running CostCalibration {name}"[:1000])
        return {**record, "calibration": name, "token": token}


def _layout_in_place(status_rule: dict[str, Any], learned: dict[str, Any] | None, job_name: str
                     ) -> dict[str, Any] | None:
    """The layout a rule's directory had while the job ran: the static decision in its status, applied;
    for a `source: trace` rule the layout learned before this job (the one this job's trace just replaced
    is in its history's last entry)."""
    if learned and learned.get("history"):
        history = list(learned["history"])
        if history[-1].get("job") == job_name:  # learned from this job just now: what was there before
            prev = history[-1].get("previous")
            return learn.layout_of_key(prev) if prev else None
        return dict(learned.get("layout") or {}) or None
    if status_rule.get("decision") == "static" and status_rule.get("applied") and status_rule.get("layout"):
        return dict(status_rule["layout"])
    return None

