"""LayoutPolicy reconciliation: plan every rule with the calibrated model, apply the hints through the one
hint path (a Job from the cluster's image: create, set what differs, read back, check a new file with
`pvfs2-viewdist`), explain each decision in the status, and re-check for drift periodically.

Level-triggered like the calibration: every call plans from scratch (planning is cheap), compares the
digest of the hints with the last verified one, and runs a hint Job only when they differ or a drift
check is due — so an unchanged policy runs no Job. Hint Jobs are numbered by `status.checks`, so a
restarted operator finds the one it started.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from pydantic import ValidationError

from pfslayout import naming
from pfslayout.costmodel import SEED_ETHERNET, CostParams
from pfslayout.errors import InputError
from pfslayout.k8s.api import Kube
from pfslayout.k8s.meta import owner_of
from pfslayout.kinds import COST_CALIBRATION as CC
from pfslayout.kinds import LAYOUT_POLICY as LP
from pfslayout.kinds import ORANGEFS_CLUSTER as OFS
from pfslayout.kinds.layoutpolicy import existing, learn, shim_configmap
from pfslayout.kinds.layoutpolicy import status as st
from pfslayout.kinds.layoutpolicy.rules import Platform, decide_rule, summary
from pfslayout.kinds.orangefscluster.hintjob import hints_digest
from pfslayout.kinds.orangefscluster.spec import parse_spec as parse_cluster_spec
from pfslayout.operator import settings
from pfslayout.operator.admission import suspend
from pfslayout.operator.reconcilers import trace_collector
from pfslayout.operator.shared.apply_hints import HintOutcome, ensure_hints, release
from pfslayout.operator.shared.clock import now
from pfslayout.operator.shared.events import Post, post_all
from pfslayout.operator.shared.locks import with_fresh
from pfslayout.orangefs.dirhints import DirectoryHints

DEFAULTS = "defaults"
FAILED_RETRY_S = 60.0  # a hint Job that failed for the same hints is retried after this long


def load_params(kube: Kube, namespace: str, spec: dict[str, Any], ofs: dict[str, Any]
                ) -> tuple[CostParams, str, tuple[bool, str, str]]:
    """(parameters, paramsSource, Calibrated condition): the policy's CostCalibration, else the cluster's
    current one, else the seeds' Ethernet values."""
    explicit = ((spec.get("calibrationRef") or {}).get("name"))
    name = explicit or ((ofs.get("status") or {}).get("calibrationRef") or {}).get("name")
    fallback = "using the seeds' Ethernet defaults ([003] Table 3) until then"
    if not name:
        return SEED_ETHERNET, DEFAULTS, (False, "NoCalibration", f"the cluster has no CostCalibration; {fallback}")
    cc = kube.custom.get(CC, namespace, name)
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
    then = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return (dt.datetime.now(dt.UTC) - then).total_seconds()


def reconcile(kube: Kube, body: dict[str, Any], post: Post, recheck_s: float) -> dict[str, Any]:
    """Plan, apply (when needed) and report one LayoutPolicy; returns the status written."""
    return with_fresh(kube, LP, body, lambda fresh: _reconcile(kube, fresh, post, recheck_s))


def _write(kube: Kube, post: Post, body: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    meta = body["metadata"]
    old = dict(body.get("status") or {})
    status = {**status, "observedGeneration": int(meta.get("generation") or 0)}
    kube.custom.replace_status(LP, meta["namespace"], meta["name"], old, status)
    post_all(post, body, st.events(old, status))
    return {**old, **status}


def _reconcile(kube: Kube, body: dict[str, Any], post: Post, recheck_s: float) -> dict[str, Any]:
    owner = owner_of(LP, body)
    spec = body.get("spec") or {}
    generation = int(body["metadata"].get("generation") or 0)
    old = dict(body.get("status") or {})
    cluster_name = str((spec.get("clusterRef") or {}).get("name") or "")
    ofs = kube.custom.get(OFS, owner.namespace, cluster_name)
    ost = (ofs or {}).get("status") or {}
    if ofs is None or ost.get("phase") not in ("Ready", "Degraded"):
        why = (f"spec.clusterRef.name: no OrangeFSCluster {cluster_name!r} in {owner.namespace}; create it or fix "
               "clusterRef" if ofs is None else
               f"waiting for OrangeFSCluster {cluster_name} to be Ready (phase {ost.get('phase') or 'none'})")
        cal = (False, "NoCalibration", "no cluster to calibrate")
        return _write(kube, post, body, {"conditions": st.conditions((False, "ClusterNotReady", why), cal, generation,
                                                                      now(), old)})
    try:
        cluster = parse_cluster_spec(ofs.get("spec"))
    except InputError as err:
        return _write(kube, post, body, {"conditions": st.conditions(
            (False, "ClusterNotReady", f"OrangeFSCluster {cluster_name}: {err}"),
            (False, "NoCalibration", "no usable cluster"), generation, now(), old)})
    urls = tuple(str(s.get("url")) for s in (ost.get("endpoints") or {}).get("servers") or [])
    platform = Platform(int(ost.get("servers") or cluster.servers.count), cluster.client.mount_path, urls)
    params, source, calibrated = load_params(kube, owner.namespace, spec, ofs)
    variant = str((spec.get("costModel") or {}).get("variant") or "corrected")
    delta = float(spec.get("hybridThreshold", 0.1))
    learned = trace_collector.step(kube, body, owner, cluster, cluster_name, platform, params, variant, now(),
                                   post)
    decisions = [decide_rule(r, i, platform, params, variant, delta, learned.rules.get(str(r.get("path"))))
                 for i, r in enumerate(spec.get("rules") or [])]
    dirs: list[DirectoryHints] = []
    for d in decisions:
        # the rule's own directory gets a check file: what a new file there really gets
        # and is scanned for files keeping an older layout (re-laid out with `migrate: true`)
        rule = (spec.get("rules") or [])[d.index]
        dirs += [DirectoryHints(x.path, x.xattrs, check=(j == 0) and not d.pending, scan=(j == 0) and not d.pending,
                                migrate=(j == 0) and not d.pending and bool(rule.get("migrate")))
                 for j, x in enumerate(d.dirs)]
    if learn.trace_settings(spec).get("enabled"):
        # where the shim writes the traces of this namespace's jobs (ROMIO cannot create directories)
        dirs.append(DirectoryHints(learn.trace_dir(spec, platform.mount_path, owner.namespace), {}))
    if spec.get("selector") is not None and (spec.get("shim") or {}).get("enabled", True):
        # the config selected jobs run with: tracing, and the replica sets of hybrid rules
        trace_collector.publish_shim_config(kube, owner, shim_configmap.shim_config(
            spec, platform.mount_path, owner.namespace, params, platform.servers,
            [d.status for d in decisions if d.error is None and not d.pending]))
        if settings.current().webhook is None:  # suspend mode runs only where the webhook is not served
            suspend.retry_waiting(kube, owner.namespace, post)
    digest = hints_digest(dirs) if dirs else ""
    checks = int(old.get("checks") or 0)
    previous = {r.get("path"): r for r in old.get("rules") or []}
    rules = [d.status for d in decisions]
    same = old.get("hintsDigest") == digest
    for d, r in zip(decisions, rules):
        prev = previous.get(d.path) or {}
        if d.error is None and d.dirs and not d.pending and same and prev.get("applied"):
            r.update(applied=True, appliedAt=prev.get("appliedAt"))
            for key in ("datafiles", "existingFiles"):
                if prev.get(key) is not None:
                    r[key] = prev[key]
        elif d.error is None and d.dirs and not d.pending:
            r["applied"] = False
    invalid = [d for d in decisions if d.error]
    status: dict[str, Any] = {"paramsSource": source, "rules": rules}
    if learn.trace_settings(spec).get("enabled"):
        status["learning"] = {"collectedJobs": learned.collected,
                              "shimConfigMap": naming.shim_configmap(owner.name),
                              "traceDirectory": learn.trace_dir(spec, platform.mount_path, owner.namespace),
                              **({"lastJob": learned.last_job} if learned.last_job else {})}
    due = dirs and (not same or _age_s(old.get("lastCheckTime")) >= recheck_s or bool(old.get("migrationPending")))
    if due and old.get("failedDigest") == digest and _age_s(old.get("lastCheckTime")) < FAILED_RETRY_S:
        due = False  # the same hints just failed: retry after a pause, not at every poll
    ready: tuple[bool, str, str]
    outcome: HintOutcome | None = None
    if due:
        outcome = ensure_hints(kube, cluster, cluster_name, owner, dirs,
                               {"app.kubernetes.io/name": "layoutpolicy", "app.kubernetes.io/instance": owner.name,
                                "pfslayout.io/layoutpolicy": owner.name}, nonce=checks + 1)
        if outcome.state in ("created", "running"):
            if outcome.state == "created" and not same:
                post(body, "Normal", "ApplyingHints", outcome.message)
            ready = (False, "Applying", f"Job {outcome.job} is setting and reading back the hints") if not same \
                else (bool(old.get("hintsDigest")), "Applied", "hints applied; drift check running")
        elif outcome.state == "failed":
            status.update(checks=checks + 1, lastCheckTime=now(), migrationPending=False, failedDigest=digest)
            ready = (False, "HintJobFailed", outcome.message)
        else:
            stamp = now()
            pending = False
            for d, r in zip(decisions, rules):
                if d.error is None and d.dirs and not d.pending:
                    r.update(applied=True, appliedAt=stamp if not (same and r.get("appliedAt")) else r["appliedAt"])
                    primary = d.dirs[0].path
                    got = (outcome.datafiles or {}).get(primary)
                    if got is not None:
                        r["datafiles"] = got
                    before = (previous.get(d.path) or {}).get("existingFiles")
                    r["existingFiles"] = existing.files_status(
                        outcome.stale.get(primary), outcome.migrated.get(primary, []), primary in outcome.unscanned,
                        platform.mount_path, stamp, before)
                    rule = (spec.get("rules") or [])[d.index]
                    for ev in existing.events(d.index, d.path, bool(rule.get("migrate")), r["existingFiles"], before):
                        post(body, ev.type, ev.reason, ev.message[:1000])
                    pending = pending or (bool(rule.get("migrate")) and existing.progress(r["existingFiles"]))
            status.update(checks=checks + 1, lastCheckTime=stamp, hintsDigest=digest, migrationPending=pending,
                          failedDigest="")
            if same and outcome.drifted:
                # In the status too, written with the check: the Event is best effort (queued by Kopf).
                status.update(driftRepairs=int(old.get("driftRepairs") or 0) + 1,
                              lastDriftRepair={"time": stamp, "hints": list(outcome.drifted[:8])})
                post(body, "Warning", "DriftRepaired",
                     f"hints changed outside the operator were set back: {'; '.join(outcome.drifted[:8])}")
            elif not same:
                post(body, "Normal", "HintsApplied", f"{len(dirs)} directories verified ({outcome.written} hints "
                     "written, every key read back, a new file in each rule directory checked)")
            ready = (True, "Applied", "every valid rule's hints are verified on the file system")
    else:
        last: dict[str, Any] = next((c for c in old.get("conditions") or [] if c.get("type") == "Ready"), {})
        if same and dirs:
            ready = (True, "Applied", "every valid rule's hints are verified on the file system")
        elif dirs:  # the failed-hints pause
            ready = (False, "HintJobFailed", str(last.get("message")) if last.get("reason") == "HintJobFailed" else
                     f"the hint Job failed; it is retried {FAILED_RETRY_S:.0f} s after the failure")
        else:
            ready = (not invalid, "Applied", "nothing to lay out")
    if invalid and ready[0]:
        ready = (False, "RuleInvalid", "; ".join(str(d.error) for d in invalid)[:2000] +
                 " (the other rules are applied)")
    applied = sum(1 for r in rules if r.get("applied"))
    status.update(summary=summary(rules), appliedRules=f"{applied}/{len(rules)}",
                  conditions=st.conditions(ready, calibrated, generation, now(), old, learned.condition))
    written = _write(kube, post, body, status)
    if outcome is not None:
        release(kube, owner.namespace, outcome)  # only now that the status holds what it found
    return written
