"""The learning loop of a LayoutPolicy (pure): which finished MPIJobs to learn from, the Job that
collects their traces, and the hysteresis that decides whether a
rule switches layout.

* **Which jobs.** MPIJobs in the policy's namespace that match `spec.selector`, have succeeded, and were
  not collected yet (their UIDs are kept in the learned state), oldest completion first, one at a time.
* **Where traces are.** The shim writes `<job>.rank-NNNNNN.pfstrace` through MPI-IO into
  `pvfs2:<mount><spec.trace.path>/<namespace>` (`trace_dir`); the operator creates that directory with
  the policy's other directories. Jobs get the shim config published in ConfigMap `<policy>-shim`
  (shim_configmap.py) and `PFSLAYOUT_SHIM_JOB=<job name>`.
* **The collector** (`collector_job`): an init container from the cluster's client image copies the
  job's trace files out of OrangeFS (`pvfs2-ls`, `pvfs2-cp`) into an emptyDir; the operator's own image
  reduces them to one small summary per `auto`/`trace` rule (`pfslayout summarise`) and prints it as one
  marker line, read back through `pods/log` like the calibration's results.
* **Retention** (`retention`, `listing_runs`, `expired`): the collector also lists the trace directory
  (`pvfs2-ls -l --all-times`, one marker line per entry); from it the operator picks the runs beyond
  `spec.trace.retain` (the newest `runs`, and none older than `maxAge`), and the next collector deletes
  their files before it copies (`collector_script`'s `prune`), printing how many it deleted. So the
  directory stays bounded without a Job of its own, one collection late.
* **Hysteresis** (`choose`): the new trace's cheapest allowed layout replaces the current one only when
  the current layout costs more than `1 + spec.trace.replanThreshold` times as much under the new trace;
  every trace leaves a history entry (kept or switched, with the predicted costs).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pfslayout import naming
from pfslayout.costmodel.params import CostParams
from pfslayout.k8s.meta import Owner, content_hash, object_metadata
from pfslayout.kinds import MANAGED_BY
from pfslayout.kinds.orangefscluster.hintjob import client_container, client_pod
from pfslayout.kinds.orangefscluster.objects import container_security_context
from pfslayout.kinds.orangefscluster.spec import OrangeFSClusterSpec
from pfslayout.planner.models import CandidateCost, Decision
from pfslayout.planner.summary import TraceSummary, plan_summary

MARKER = "PFSLAYOUT-TRACE-SUMMARY"
FILES_MARKER = "PFSLAYOUT-TRACE-FILES"
ENTRY_MARKER = "PFSLAYOUT-TRACE-ENTRY"
PRUNED_MARKER = "PFSLAYOUT-TRACE-PRUNED"
DEFAULT_RETAIN_RUNS = 20
# A run's files as the shim names them: `<job>.rank-NNNNNN.pfstrace` and `<job>.stats.rank-NNNNNN.json` (the
# extension tells them apart: a job may itself be named `x.stats`).
RUN_FILES = (re.compile(r"^(?P<job>[a-z0-9][-a-z0-9.]*)\.rank-[0-9]+\.pfstrace$"),
             re.compile(r"^(?P<job>[a-z0-9][-a-z0-9.]*)\.stats\.rank-[0-9]+\.json$"))
_DURATION = re.compile(r"([0-9]+)([dhms])")
_UNIT_S = {"d": 86400, "h": 3600, "m": 60, "s": 1}
COLLECTOR_COMPONENT = "trace-collector"
HISTORY_LIMIT = 10
COLLECTED_LIMIT = 200
DEFAULT_TRACE_PATH = "/.pfslayout/traces"
DEFAULT_THRESHOLD = 0.1


class TraceError(Exception):
    """A collector's output that cannot be used (no trace files, an unreadable trace)."""


def trace_settings(spec: dict[str, Any]) -> dict[str, Any]:
    return spec.get("trace") or {}


def learning_enabled(spec: dict[str, Any]) -> bool:
    t = trace_settings(spec)
    return bool(t.get("enabled")) and bool(t.get("replan", True)) and spec.get("selector") is not None


def trace_dir(spec: dict[str, Any], mount_path: str, namespace: str) -> str:
    """The client path (below the pvfs2tab mount point) the shim writes this namespace's traces to."""
    path = str(trace_settings(spec).get("path") or DEFAULT_TRACE_PATH).rstrip("/")
    return f"{mount_path.rstrip('/')}{path}/{namespace}"


def label_selector(selector: dict[str, Any]) -> str:
    """A LabelSelector (`matchLabels`, `matchExpressions`) as the API's `labelSelector` string."""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for e in selector.get("matchExpressions") or []:
        key, op, values = e["key"], e["operator"], ",".join(e.get("values") or [])
        parts.append({"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})", "Exists": key,
                      "DoesNotExist": f"!{key}"}[op])
    return ",".join(parts)


def completion(job: dict[str, Any]) -> str | None:
    """When an MPIJob succeeded (its Succeeded condition's time), or None."""
    for c in (job.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Succeeded" and c.get("status") == "True":
            return str(c.get("lastTransitionTime") or (job.get("status") or {}).get("completionTime") or "")
    return None


def next_job(jobs: list[dict[str, Any]], collected: list[str]) -> dict[str, Any] | None:
    """The succeeded job not collected yet that finished first."""
    done = set(collected)
    ready = [j for j in jobs if completion(j) is not None and j["metadata"].get("uid") not in done]
    return min(ready, key=lambda j: (completion(j) or "", j["metadata"]["name"]), default=None)


def collector_name(owner: Owner, job: dict[str, Any]) -> str:
    return naming.trace_collector_job(owner.name, content_hash(job["metadata"]["uid"]))


def collector_script(source_dir: str, job_name: str, prune: list[str] | tuple[str, ...] = ()) -> str:
    """The copy step: the files of the runs in `prune` deleted, the job's rank traces copied to /traces, then
    the directory listed for the next retention decision (`listing_runs`)."""
    q = shlex.quote(source_dir)
    prefix = shlex.quote(f"{job_name}.rank-")
    # one listing for the deletions and the copy (a big directory is listed once, not twice)
    lines = ["set -u", "n=0", f"names=$(pvfs2-ls {q} 2>/dev/null)"]
    if prune:
        # OrangeFS's client tools have no rm: pfs-relayout (the OrangeFS image's libpvfs2 tool) removes them,
        # in one client session for all; what it could not remove it says on stderr, and the next
        # collector's listing still shows
        patterns = "|".join(f"{shlex.quote(j + '.rank-')}*|{shlex.quote(j + '.stats.rank-')}*" for j in prune)
        lines += ["set --", "for f in $names; do",
                  f"  case \"$f\" in {patterns}) set -- \"$@\" {q}/\"$f\" ;; esac", "done",
                  "p=0",
                  'if [ $# -gt 0 ]; then p=$(pfs-relayout remove "$@" | grep -c "^PFSLAYOUT-REMOVED"); fi',
                  f"echo {PRUNED_MARKER} $p"]
    lines += ["for f in $names; do",
              f"  case \"$f\" in {prefix}*.pfstrace)",
              f"    pvfs2-cp {q}/\"$f\" /traces/\"$f\" >/dev/null || {{ echo \"cannot copy $f\" >&2; exit 1; }}",
              "    n=$((n + 1)) ;;", "  esac", "done",
              f"echo {FILES_MARKER} $n",
              # the retention decision's input; a listing that fails only costs the next pruning
              f"pvfs2-ls -l --all-times {q} 2>/dev/null | while read -r line; do echo \"{ENTRY_MARKER} $line\"; done"]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Retention:
    """`spec.trace.retain`: the newest `runs` runs stay, and none older than `max_age_s` (None: no limit)."""

    runs: int
    max_age_s: int | None


def duration_s(text: str) -> int:
    """`72h`, `7d`, `1d12h` (the CRD's pattern) in seconds."""
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"{text!r} is not a duration like 72h, 7d or 1d12h")
    return sum(int(n) * _UNIT_S[u] for n, u in parts)


def retention(spec: dict[str, Any]) -> Retention:
    r = trace_settings(spec).get("retain") or {}
    age = r.get("maxAge")
    return Retention(int(r.get("runs", DEFAULT_RETAIN_RUNS)), duration_s(str(age)) if age else None)


def listing_runs(log: str) -> dict[str, float]:
    """The traced runs in a collector's listing (`pvfs2-ls -l --all-times` lines: mode, links, owner, group,
    size, then mtime, atime and ctime as `YYYY-MM-DD HH:MM:SS +ZZZZ`, then the name): each run's job and its
    newest file's modification time (epoch seconds). Other files and unreadable lines are left out."""
    runs: dict[str, float] = {}
    for line in log.splitlines():
        if not line.startswith(ENTRY_MARKER + " "):
            continue
        words = line.split()[1:]
        m = next((m for r in RUN_FILES if (m := r.match(words[-1]))), None) if len(words) >= 15 else None
        if m is None:
            continue
        try:
            t = datetime.strptime(" ".join(words[5:8]), "%Y-%m-%d %H:%M:%S %z").timestamp()
        except ValueError:
            continue
        runs[m["job"]] = max(runs.get(m["job"], t), t)
    return runs


def expired(runs: dict[str, float], keep: Retention, now: float, current: str) -> list[str]:
    """The runs to delete, oldest first: all but the newest `keep.runs` (the run being collected counts as
    the newest and always stays), and any other older than `keep.max_age_s`."""
    newest_first = sorted(runs, key=lambda j: (j == current, runs[j], j), reverse=True)
    out = set(newest_first[keep.runs:]) - {current}
    if keep.max_age_s is not None:
        out |= {j for j in runs if j != current and now - runs[j] > keep.max_age_s}
    return sorted(out, key=lambda j: (runs[j], j))


def parse_pruned(log: str) -> int | None:
    """How many files the collector deleted for retention (None: it had nothing to delete)."""
    line = next((x for x in reversed(log.splitlines()) if x.startswith(PRUNED_MARKER + " ")), None)
    try:
        return int(line.split()[1]) if line else None
    except (IndexError, ValueError):
        return None


def collector_job(cluster: OrangeFSClusterSpec, cluster_name: str, owner: Owner, job: dict[str, Any],
                  source_dir: str, rule_paths: list[str], operator_image: str, pull_policy: str,
                  labels: dict[str, str], deadline_s: int = 600, prune: list[str] | tuple[str, ...] = ()
                  ) -> dict[str, Any]:
    name = collector_name(owner, job)
    summarise = ["pfslayout", "summarise", "--trace", "/traces", "--format", "shim", "--marker", MARKER]
    for p in rule_paths:
        summarise += ["--path", p]
    run = (f"if ls /traces/*.pfstrace >/dev/null 2>&1; then exec {shlex.join(summarise)}; "
           f"else echo '{MARKER} {{\"files\":0}}'; fi")
    mounts = [{"name": "traces", "mountPath": "/traces"}, {"name": "tmp", "mountPath": "/tmp"}]
    copy = client_container(cluster, "copy", collector_script(source_dir, job["metadata"]["name"], prune), mounts)
    summariser = {
        "name": "summarise", "image": operator_image, "imagePullPolicy": pull_policy,
        "command": ["sh", "-c", run],
        "env": [{"name": "HOME", "value": "/tmp"}],
        "volumeMounts": mounts,
        "securityContext": container_security_context(),
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
    pod_spec = client_pod(cluster, cluster_name, [summariser],
                          [{"name": "traces", "emptyDir": {}}, {"name": "tmp", "emptyDir": {}}], init=[copy])
    all_labels = {**labels, "app.kubernetes.io/component": COLLECTOR_COMPONENT,
                  "app.kubernetes.io/managed-by": MANAGED_BY}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": object_metadata(owner, name, all_labels,
                                        {"pfslayout.io/mpijob": job["metadata"]["name"],
                                         "pfslayout.io/mpijob-uid": job["metadata"]["uid"]}),
            "spec": {"backoffLimit": 1, "activeDeadlineSeconds": deadline_s,
                     "template": {"metadata": {"labels": all_labels}, "spec": pod_spec}}}


def parse_collector_log(log: str) -> tuple[int, dict[str, TraceSummary]]:
    """(trace files, {rule client path: summary}); TraceError when the log holds no usable result."""
    line = next((x for x in reversed(log.splitlines()) if x.startswith(MARKER + " ")), None)
    if line is None:
        raise TraceError(f"the collector printed no {MARKER} line" + (f" ({log.strip()[-300:]})" if log.strip()
                                                                         else ""))
    try:
        doc = json.loads(line[len(MARKER) + 1:])
        if doc.get("files") == 0:
            return 0, {}
        return int(doc.get("ranks") or 0), {p: TraceSummary.model_validate(s)
                                            for p, s in (doc.get("summaries") or {}).items()}
    except (ValueError, TypeError, AttributeError) as err:
        raise TraceError(f"the collector's summary is not valid ({type(err).__name__}: {str(err)[:200]})") from None


@dataclass(frozen=True)
class Choice:
    layout: str
    g: int | None
    decision: Decision  # the planner's view of the trace (all candidates)
    candidates: list[CandidateCost]  # the allowed ones, cheapest first
    entry: dict[str, Any]  # the history entry this trace leaves


def _key(layout: str, g: int | None) -> str:
    return layout + (f"/g{g}" if g else "")


def layout_of_key(key: str) -> dict[str, Any]:
    """``_key``'s inverse, as a status layout: "2-D/g2" → {"layout": "2-D", "groups": 2}."""
    layout, _, g = key.partition("/g")
    return {"layout": layout, **({"groups": int(g)} if g else {})}


def choose(summary: TraceSummary, allowed: list[str], current: dict[str, Any] | None, n: int, params: CostParams,
           variant: str, threshold: float, job: str, at: str) -> Choice:
    """The layout to use after this trace: the cheapest allowed candidate, unless the current one is within
    `threshold` of it (hysteresis: a near-tie never flips the layout back and forth between runs)."""
    decision = plan_summary(summary, n, params, variant).decisions[0]
    cands = sorted((c for c in decision.candidates if c.layout in allowed), key=lambda c: c.total)
    if not cands:
        raise TraceError("no allowed candidate can be realised on this cluster")
    best = cands[0]
    cur = None
    if current:
        cur = next((c for c in cands if c.layout == current.get("layout") and c.g == current.get("groups")), None)
    gain = (cur.total - best.total) / best.total if cur is not None and best.total > 0 else None
    keep = cur is not None and gain is not None and gain <= threshold
    pick = cur if keep and cur is not None else best
    entry: dict[str, Any] = {
        "time": at, "job": job, "requests": summary.requests, "ranks": summary.ranks,
        "layout": _key(pick.layout, pick.g), "predictedSeconds": pick.total, "bestSeconds": best.total,
        "switched": not keep and current is not None and (cur is None or cur is not best),
    }
    if current:
        entry["previous"] = _key(str(current.get("layout")), current.get("groups"))
    if gain is not None:
        entry["gain"] = gain
    if keep:
        entry["reason"] = (f"kept {_key(pick.layout, pick.g)}: {_key(best.layout, best.g)} would be only "
                           f"{gain:.1%} cheaper (threshold {threshold:.0%})")
    elif current is None:
        entry["reason"] = f"first trace: {_key(best.layout, best.g)} is the cheapest allowed layout"
    elif cur is None:
        entry["reason"] = (f"{entry['previous']} is no longer an allowed candidate; "
                           f"{_key(best.layout, best.g)} is the cheapest")
    else:
        entry["reason"] = (f"switched to {_key(best.layout, best.g)}: {gain:.1%} cheaper than "
                           f"{entry['previous']} (threshold {threshold:.0%})")
    return Choice(pick.layout, pick.g, decision, cands, entry)


# ------------------------------------------------------------------------------- predicted vs measured

# A trace with fewer requests under a rule than this, or no request times, is too small to judge the model
# by (a handful of requests measure start-up and noise): reported as such, counted neither way.
MIN_JUDGED_REQUESTS = 64
DEFAULT_RECALIBRATE_AFTER = 3


@dataclass(frozen=True)
class Judgement:
    """How the model did on one rule's requests of one traced job: the I/O time it predicts for them on
    the layout that was in place, the time the trace measured (the sum of the requests' durations, the
    quantity the model's totals stand for), and the relative error predicted / measured − 1 — or why the
    job was not judged (``reason``; the times are None then)."""

    layout: str | None
    predicted: float | None
    measured: float | None
    reason: str | None = None

    @property
    def error(self) -> float | None:
        if self.predicted is None or not self.measured:
            return None
        return self.predicted / self.measured - 1

    def status(self, job: str) -> dict[str, Any]:
        out: dict[str, Any] = {"job": job}
        if self.layout:
            out["layout"] = self.layout
        if self.error is None:
            out["judged"] = False
            out["reason"] = self.reason or "not judged"
            return out
        out.update(judged=True, predictedSeconds=self.predicted, measuredSeconds=self.measured, error=self.error)
        return out


def judge(summary: TraceSummary, layout: dict[str, Any] | None, n: int, params: CostParams,
          variant: str) -> Judgement:
    """The model's prediction for ``summary``'s requests on ``layout`` (a rule's status layout, e.g.
    {"layout": "2-D", "groups": 2}) against what the trace measured."""
    if not layout or not layout.get("layout"):
        return Judgement(None, None, None, "no layout of the model was in place (the directory had the file "
                                           "system's default): nothing to compare")
    key = _key(str(layout["layout"]), layout.get("groups"))
    if summary.requests < MIN_JUDGED_REQUESTS:
        return Judgement(key, None, None, f"{summary.requests} requests, fewer than the {MIN_JUDGED_REQUESTS} a "
                                          "judgement needs")
    if not summary.seconds:
        return Judgement(key, None, None, "the trace has no request times")
    decision = plan_summary(summary, n, params, variant).decisions[0]
    cand = next((c for c in decision.candidates if c.layout == layout["layout"] and c.g == layout.get("groups")),
                None)
    if cand is None:
        return Judgement(key, None, summary.seconds, f"{key} is not a layout the model costs on {n} servers")
    return Judgement(key, cand.total, summary.seconds)


def job_error(judged: list[Judgement]) -> float | None:
    """One traced job's error over the rules it was judged on: Σ predicted / Σ measured − 1 (so a rule's
    weight is its I/O time); None when no rule was judged."""
    ok = [j for j in judged if j.error is not None]
    if not ok:
        return None
    return sum(j.predicted or 0.0 for j in ok) / sum(j.measured or 0.0 for j in ok) - 1


def recalibration_due(streak: int, error: float | None, above: float | None, after: int) -> tuple[int, bool]:
    """The count of consecutive judged jobs with |error| above ``above`` after this job, and whether it
    calls for a recalibration now (the count then starts again). A job not judged leaves it unchanged;
    without ``above`` nothing is ever due."""
    if error is None or above is None:
        return streak, False
    streak = streak + 1 if abs(error) > above else 0
    return (0, True) if streak >= after else (streak, False)
