"""LayoutPolicy reconciliation: plan every rule with the calibrated model, apply the hints through the one
hint path (a Job from the cluster's image: create, set what differs, read back, check a new file with
`pvfs2-viewdist`), explain each decision in the status, and re-check for drift periodically.

Level-triggered like the calibration: every call plans from scratch (planning is cheap), compares the
digest of the hints with the last verified one, and runs a hint Job only when they differ or a drift
check is due — so an unchanged policy runs no Job. Hint Jobs are numbered by `status.checks`, so a
restarted operator finds the one it started.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
from typing import Any

from pydantic import ValidationError

from pfslayout import naming
from pfslayout.costmodel import SEED_ETHERNET, CostParams
from pfslayout.errors import InputError
from pfslayout.kinds import COST_CALIBRATION as CC
from pfslayout.kinds import LAYOUT_POLICY as LP
from pfslayout.kinds import ORANGEFS_CLUSTER as OFS
from pfslayout.kinds.layoutpolicy import children, existing, learn, shim_configmap
from pfslayout.kinds.layoutpolicy import status as st
from pfslayout.kinds.layoutpolicy.rules import Platform, RuleDecision, decide_rule, summary
from pfslayout.kinds.orangefscluster.hintjob import hints_digest
from pfslayout.kinds.orangefscluster.spec import OrangeFSClusterSpec
from pfslayout.kinds.orangefscluster.spec import parse_spec as parse_cluster_spec
from pfslayout.operator.admission import suspend
from pfslayout.operator.reconcilers import trace_collector
from pfslayout.operator.reconcilers.base import Context, Reconciler
from pfslayout.operator.shared.apply_hints import HintOutcome, ensure_hints, release
from pfslayout.operator.shared.clock import epoch, now
from pfslayout.operator.shared.locks import with_fresh
from pfslayout.orangefs.dirhints import DirectoryHints

DEFAULTS = "defaults"
FAILED_RETRY_S = 60.0  # a hint Job that failed for the same hints is retried after this long
VERIFIED = "every valid rule's hints are verified on the file system"
Ready = tuple[bool, str, str]  # the Ready condition: (status, reason, message)


def load_params(ctx: Context, namespace: str, spec: dict[str, Any], ofs: dict[str, Any]
                ) -> tuple[CostParams, str, tuple[bool, str, str]]:
    """(parameters, paramsSource, Calibrated condition): the policy's CostCalibration, else the cluster's
    current one, else the seeds' Ethernet values."""
    kube = ctx.kube
    explicit = ((spec.get("calibrationRef") or {}).get("name"))
    name = explicit or ((ofs.get("status") or {}).get("calibrationRef") or {}).get("name")
    fallback = "using the seeds' Ethernet defaults ([003] Table 3) until then"
    if not name:
        return SEED_ETHERNET, DEFAULTS, (False, "NoCalibration", f"the cluster has no CostCalibration; {fallback}")
    cc = ctx.custom(CC, namespace, name)
    if cc is None:
        why = (f"spec.calibrationRef.name: no CostCalibration {name!r} in {namespace}; create it or drop "
               "calibrationRef to use the cluster's" if explicit else f"the cluster's CostCalibration {name} is gone")
        return SEED_ETHERNET, DEFAULTS, (False, "CalibrationNotFound", f"{why}; {fallback}")
    cst = cc.get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in cst.get("conditions") or [])
    cm_name = cst.get("configMapName")
    if not ready or not cm_name:
        return SEED_ETHERNET, DEFAULTS, (False, "CalibrationNotReady",
                                         f"CostCalibration {name} is {cst.get('phase') or 'Pending'} and not Ready; "
                                         f"{fallback}")
    cm = kube.get("ConfigMap", namespace, cm_name)
    try:
        params = CostParams.model_validate(json.loads(((cm or {}).get("data") or {})["params.json"]))
    except (KeyError, ValueError, ValidationError) as err:
        return SEED_ETHERNET, DEFAULTS, (False, "CalibrationNotReady",
                                         f"ConfigMap {cm_name} holds no valid params.json ({type(err).__name__}); "
                                         f"{fallback}")
    return params, f"CostCalibration/{name}", (True, "Calibrated",
                                               f"parameters of CostCalibration {name} (ConfigMap {cm_name})")


def _age_s(stamp: str | None) -> float:
    if not stamp:
        return float("inf")
    return dt.datetime.now(dt.UTC).timestamp() - epoch(stamp)


def _spread(meta: dict[str, Any], period_s: float) -> float:
    """A policy's own offset within the first tenth of the drift period, from its UID (stable across
    restarts and replicas)."""
    return int(hashlib.sha256(str(meta.get("uid")).encode()).hexdigest()[:8], 16) / 0xFFFFFFFF * period_s / 10


def reconcile(ctx: Context, body: dict[str, Any]) -> dict[str, Any]:
    """Plan, apply (when needed) and report one LayoutPolicy; returns the status written."""
    return with_fresh(ctx.kube, LP, body, lambda fresh: Reconcile(ctx, fresh).run())


def _settable(d: RuleDecision) -> bool:
    """A valid rule with hints to set now (not a `source: trace` rule still waiting for its first trace)."""
    return d.error is None and bool(d.dirs) and not d.pending


class Reconcile(Reconciler):
    """One pass over a policy: find its cluster, load the model, learn from finished jobs, decide every
    rule, publish the shim config, run the hint Job when the hints changed or a drift check is due, and
    write what was found."""

    resource = LP
    transitions = st.events

    def __init__(self, ctx: Context, body: dict[str, Any]) -> None:
        super().__init__(ctx, body)
        self.spec: dict[str, Any] = body.get("spec") or {}
        self.rule_specs: list[dict[str, Any]] = list(self.spec.get("rules") or [])
        self.cluster_name = str((self.spec.get("clusterRef") or {}).get("name") or "")
        self.previous = {r.get("path"): r for r in self.old.get("rules") or []}
        # Set by run() as the pass goes: the cluster's platform, every rule's decision and status, the
        # digest of the hints wanted and whether it is the one last verified.
        self.platform = Platform(0, "", ())
        self.decisions: list[RuleDecision] = []
        self.rules: list[dict[str, Any]] = []
        self.digest = ""
        self.same = False
        self.cursors: dict[str, str] = {}  # rule directory -> where its scan resumes ("": from the start)
        self.shim_text = ""  # the shim config published (publish_shim_config)

    # ----------------------------------------------------------------------------------------- main

    def run(self) -> dict[str, Any]:
        found = self.find_cluster()
        if isinstance(found, dict):
            return found
        ofs, cluster, platform = found
        params, source, calibrated = load_params(self.ctx, self.owner.namespace, self.spec, ofs)
        variant = str((self.spec.get("costModel") or {}).get("variant") or "corrected")
        calibration = source.split("/", 1)[1] if source.startswith("CostCalibration/") else None
        learned = trace_collector.collect(self.ctx, self.body, self.owner, trace_collector.Site(
            cluster, self.cluster_name, platform, params, variant, calibration), now())
        delta = float(self.spec.get("hybridThreshold", 0.1))
        decisions = [decide_rule(r, i, platform, params, variant, delta, learned.rules.get(str(r.get("path"))))
                     for i, r in enumerate(self.rule_specs)]
        self.platform, self.decisions = platform, decisions
        dirs = self.directories()
        shim_digest = self.publish_shim_config(params)
        self.digest = hints_digest(dirs) if dirs else ""
        self.same = self.old.get("hintsDigest") == self.digest
        dirs = self.resuming(dirs)
        self.rules = self.carried_over()
        for r in self.rules:  # the model against the last traced job that reached the rule
            if (judged := learned.predictions.get(str(r.get("path")))) is not None:
                r["prediction"] = judged
        status: dict[str, Any] = {"paramsSource": source, "rules": self.rules, **self.learning_block(learned),
                                  **({"shimConfigDigest": shim_digest} if shim_digest else {})}
        outcome: HintOutcome | None = None
        if self.due(dirs):
            outcome = ensure_hints(self.kube, cluster, self.cluster_name, self.owner, dirs,
                                   children.labels(self.owner),
                                   nonce=int(self.old.get("checks") or 0) + 1)
            ready = self.hint_job(outcome, status, len(dirs))
            self.check_shim_config(outcome)
        else:
            ready = self.between_checks(bool(dirs))
        written = self.finish(status, ready, calibrated, learned.condition)
        if outcome is not None:
            release(self.kube, self.owner.namespace, outcome)  # only now that the status holds what it found
        self.schedule(bool(dirs), outcome, written)
        return written

    # ---------------------------------------------------------------------------------------- steps

    def find_cluster(self) -> tuple[dict[str, Any], OrangeFSClusterSpec, Platform] | dict[str, Any]:
        """The policy's cluster, parsed, and the platform it offers; else the status written while waiting."""
        ofs = self.ctx.custom(OFS, self.owner.namespace, self.cluster_name)
        ost = (ofs or {}).get("status") or {}
        if ofs is None or ost.get("phase") not in ("Ready", "Degraded"):
            why = (f"spec.clusterRef.name: no OrangeFSCluster {self.cluster_name!r} in {self.owner.namespace}; "
                   "create it or fix clusterRef" if ofs is None else
                   f"waiting for OrangeFSCluster {self.cluster_name} to be Ready (phase {ost.get('phase') or 'none'})")
            return self.waiting(why, "no cluster to calibrate")
        try:
            cluster = parse_cluster_spec(ofs.get("spec"), self.ctx.settings.orangefs_image)
        except InputError as err:
            return self.waiting(f"OrangeFSCluster {self.cluster_name}: {err}", "no usable cluster")
        urls = tuple(str(s.get("url")) for s in (ost.get("endpoints") or {}).get("servers") or [])
        return ofs, cluster, Platform(int(ost.get("servers") or cluster.servers.count), cluster.client.mount_path,
                                      urls)

    def waiting(self, why: str, calibration: str) -> dict[str, Any]:
        return self.write({"conditions": st.conditions((False, "ClusterNotReady", why),
                                                       (False, "NoCalibration", calibration), self.generation,
                                                       now(), self.old)})

    def directories(self) -> list[DirectoryHints]:
        """Every directory to set hints on. A rule's own directory also gets a check file (what a new file
        there really gets) and is scanned for files keeping an older layout (re-laid out with `migrate`)."""
        dirs: list[DirectoryHints] = []
        for d in self.decisions:
            first = not d.pending
            migrate = bool(self.rule_specs[d.index].get("migrate"))
            dirs += [DirectoryHints(x.path, x.xattrs, check=j == 0 and first, scan=j == 0 and first,
                                    migrate=j == 0 and first and migrate) for j, x in enumerate(d.dirs)]
        if learn.trace_settings(self.spec).get("enabled"):
            # where the shim writes the traces of this namespace's jobs (ROMIO cannot create directories)
            dirs.append(DirectoryHints(self.trace_dir, {}))
        return dirs

    def resuming(self, dirs: list[DirectoryHints]) -> list[DirectoryHints]:
        """A scan that stopped at its bound (a big directory: orangefs/relayout.py pages) goes on after the
        file where the last Job stopped, while the hints are the ones it judged against; new hints start
        a new pass."""
        for d in self.decisions:
            if _settable(d):
                before = (self.previous.get(d.path) or {}).get("existingFiles")
                self.cursors[d.dirs[0].path] = existing.resume_after(before) if self.same else ""
        return [dataclasses.replace(x, resume_after=self.cursors.get(x.path, "")) if x.scan or x.migrate else x
                for x in dirs]

    def publish_shim_config(self, params: CostParams) -> str:
        """The config selected jobs run with (tracing, the replica sets of hybrid rules), published when it
        changed since the last reconcile (and read at each drift check: `check_shim_config`); where no
        webhook is served, the suspended jobs that waited for it are injected now (suspend mode). Its digest,
        for the status ("" without a selector or shim)."""
        if self.spec.get("selector") is None or not (self.spec.get("shim") or {}).get("enabled", True):
            return ""
        text = shim_configmap.shim_config(self.spec, self.platform.mount_path, self.owner.namespace, params,
                                          self.platform.servers,
                                          [d.status for d in self.decisions if d.error is None and not d.pending])
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        self.shim_text = text
        if digest != self.old.get("shimConfigDigest"):
            trace_collector.publish_shim_config(self.kube, self.owner, text)
        if self.ctx.settings.webhook is None:
            suspend.retry_waiting(self.kube, self.owner.namespace, self.post, self.ctx.settings.mpi_image)
        return digest

    def check_shim_config(self, outcome: HintOutcome) -> None:
        """A drift check reads the ConfigMap too (one deleted or edited by hand is restored) — once, from the
        reconcile that starts its Job, not from each that follows it until the check is recorded."""
        if self.shim_text and self.same and outcome.state == "created":
            trace_collector.publish_shim_config(self.kube, self.owner, self.shim_text)

    def drift_due(self) -> bool:
        return _age_s(self.old.get("lastCheckTime")) >= self.ctx.settings.layout_recheck_s

    def carried_over(self) -> list[dict[str, Any]]:
        """Each rule's status; with unchanged hints, what the last check verified stays recorded."""
        rules = [d.status for d in self.decisions]
        for d, r in zip(self.decisions, rules):
            if not _settable(d):
                continue
            prev = self.previous.get(d.path) or {}
            if self.same and prev.get("applied"):
                r.update(applied=True, appliedAt=prev.get("appliedAt"))
                r.update({k: prev[k] for k in ("datafiles", "existingFiles") if prev.get(k) is not None})
            else:
                r["applied"] = False
        return rules

    @property
    def trace_dir(self) -> str:
        """Where the shim writes the traces of this namespace's jobs."""
        return learn.trace_dir(self.spec, self.platform.mount_path, self.owner.namespace)

    def learning_block(self, learned: trace_collector.Learning) -> dict[str, Any]:
        if not learn.trace_settings(self.spec).get("enabled"):
            return {}
        return {"learning": {"collectedJobs": learned.collected,
                             "shimConfigMap": naming.shim_configmap(self.owner.name),
                             "traceDirectory": self.trace_dir,
                             **({"lastJob": learned.last_job} if learned.last_job else {}),
                             **({"prediction": learned.prediction} if learned.prediction else {})}}

    def due(self, dirs: list[DirectoryHints]) -> bool:
        """A hint Job runs when the hints changed, a drift check is due or a migration is unfinished — but
        hints that just failed wait FAILED_RETRY_S, not every poll."""
        age = _age_s(self.old.get("lastCheckTime"))
        due = bool(dirs) and (not self.same or self.drift_due() or bool(self.old.get("migrationPending")))
        return due and not (self.old.get("failedDigest") == self.digest and age < FAILED_RETRY_S)

    def schedule(self, any_dirs: bool, outcome: HintOutcome | None, written: dict[str, Any]) -> None:
        """When to be called again if nothing changes before (the policy's daemon, shared/wakeups.py): soon
        while its hint Job runs or a migration has files left (a new Job's pod needs a few seconds to start:
        its first look comes after two polls), after the pause of hints that failed, at the next drift check
        otherwise — each policy a few seconds of its own later (`_spread`), so policies applied together do not
        all run their drift Jobs at once. A cluster, calibration or selected job changing wakes it earlier."""
        s = self.ctx.settings
        if outcome is not None and outcome.state == "created":
            self.ctx.requeue(2 * s.layout_poll_s)
        elif (outcome is not None and outcome.state == "running") or written.get("migrationPending"):
            self.ctx.requeue(s.layout_poll_s)
        elif any_dirs:
            age = _age_s(written.get("lastCheckTime"))
            failed = written.get("failedDigest") == self.digest and bool(self.digest)
            wait = FAILED_RETRY_S - age if failed else s.layout_recheck_s - age + _spread(self.meta, s.layout_recheck_s)
            self.ctx.requeue(max(s.layout_poll_s, wait))

    def hint_job(self, outcome: HintOutcome, status: dict[str, Any], count: int) -> Ready:
        """Where the hint Job over `count` directories stands, recorded in `status`; the Ready condition it
        gives."""
        checks, same = int(self.old.get("checks") or 0), self.same
        if outcome.state in ("created", "running"):
            if outcome.state == "created" and not same:
                self.post(self.body, "Normal", "ApplyingHints", outcome.message)
            # A drift check leaves Ready as it was (and the status unwritten): it is routine, not news.
            return (False, "Applying", f"Job {outcome.job} is setting and reading back the hints") if not same \
                else (bool(self.old.get("hintsDigest")), "Applied", VERIFIED)
        if outcome.state == "failed":
            status.update(checks=checks + 1, lastCheckTime=now(), migrationPending=False, failedDigest=self.digest)
            return (False, "HintJobFailed", outcome.message)
        stamp = now()
        pending = self.record_applied(outcome, stamp)
        status.update(checks=checks + 1, lastCheckTime=stamp, hintsDigest=self.digest, migrationPending=pending,
                      failedDigest="")
        if same and outcome.drifted:
            # In the status too, written with the check: the Event is best effort (queued by Kopf).
            status.update(driftRepairs=int(self.old.get("driftRepairs") or 0) + 1,
                          lastDriftRepair={"time": stamp, "hints": list(outcome.drifted[:8])})
            self.post(self.body, "Warning", "DriftRepaired",
                      f"hints changed outside the operator were set back: {'; '.join(outcome.drifted[:8])}")
        elif not same:
            self.post(self.body, "Normal", "HintsApplied", f"{count} directories verified ({outcome.written} hints "
                      "written, every key read back, a new file in each rule directory checked)")
        return (True, "Applied", VERIFIED)

    def record_applied(self, outcome: HintOutcome, stamp: str) -> bool:
        """What the finished Job verified, per rule: applied, the datafiles a new file gets, the files that
        keep an older layout (Events for what changed); True while a scan has pages left or a `migrate` rule
        has files left."""
        pending = False
        for d, r in zip(self.decisions, self.rules):
            if not _settable(d):
                continue
            r.update(applied=True, appliedAt=stamp if not (self.same and r.get("appliedAt")) else r["appliedAt"])
            primary = d.dirs[0].path
            got = (outcome.datafiles or {}).get(primary)
            if got is not None:
                r["datafiles"] = got
            before = (self.previous.get(d.path) or {}).get("existingFiles")
            if before and not self.cursors.get(primary):  # a pass from the start: the last one's sums go
                before = {k: v for k, v in before.items() if k != "scanning"}
            r["existingFiles"] = existing.files_status(
                outcome.stale.get(primary), outcome.migrated.get(primary, []), primary in outcome.unscanned,
                self.platform.mount_path, stamp, before, outcome.pages.get(primary))
            migrate = bool(self.rule_specs[d.index].get("migrate"))
            for ev in existing.events(d.index, d.path, migrate, r["existingFiles"], before):
                self.post(self.body, ev.type, ev.reason, ev.message[:1000])
            # a scan with pages left, or a migration that moved files and left some: another Job soon
            pending = pending or existing.progress(r["existingFiles"])
        return pending

    def between_checks(self, any_dirs: bool) -> Ready:
        """The Ready condition when no hint Job runs."""
        if self.same and any_dirs:
            return (True, "Applied", VERIFIED)
        if any_dirs:  # the failed-hints pause
            last: dict[str, Any] = next((c for c in self.old.get("conditions") or [] if c.get("type") == "Ready"), {})
            return (False, "HintJobFailed", str(last.get("message")) if last.get("reason") == "HintJobFailed" else
                    f"the hint Job failed; it is retried {FAILED_RETRY_S:.0f} s after the failure")
        return (not any(d.error for d in self.decisions), "Applied", "nothing to lay out")

    def finish(self, status: dict[str, Any], ready: Ready, calibrated: Ready, learned: Ready) -> dict[str, Any]:
        """The Ready condition (a valid rule's success does not hide an invalid one), the summary, written."""
        invalid = [d for d in self.decisions if d.error]
        if invalid and ready[0]:
            ready = (False, "RuleInvalid", "; ".join(str(d.error) for d in invalid)[:2000] +
                     " (the other rules are applied)")
        applied = sum(1 for r in self.rules if r.get("applied"))
        status.update(summary=summary(self.rules), appliedRules=f"{applied}/{len(self.rules)}",
                      conditions=st.conditions(ready, calibrated, self.generation, now(), self.old, learned))
        return self.write(status)
