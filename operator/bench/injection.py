"""Shim injection at scale, measured in one run and printed (not asserted anywhere): the admission
latency of MPIJob creations through the operator's webhook, and the operator's resident memory with
many LayoutPolicies and MPIJobs.

    eval "$(e2e/harness/cluster.sh env)"      # a running local cluster with its real node (e2e/harness/cluster.sh up)
    python operator/bench/injection.py [--policies 200] [--jobs 1000] [--samples 200]

What it does, on the shared cluster (its namespaces are `pfsbench-*`, removed afterwards; the chart is
installed in-cluster on the real node like e2e/tests/test_real_webhook.py does, and uninstalled):

1. one real OrangeFSCluster and the LayoutPolicy `bench` selecting `app=bench` in `pfsbench-a`; the other
   policies spread over 19 namespaces, pointing at absent clusters; `--replicas` operator replicas (the
   chart's 2: the API server sends each review to either);
2. `--samples` AdmissionReviews sent straight to the webhook over HTTPS, as the API server sends them
   (dry run), timed one by one: the admission latency itself, p50/p99. Then `--samples` creations of a
   selected MPIJob in `pfsbench-a` (injected by the webhook) and as many of an
   unselected one in `pfsbench-free`, outside the webhook's scope (the API server's own cost): client
   wall time of each CREATE over one kept-alive connection, p50/p99; the webhook's share from the API
   server's `apiserver_admission_webhook_admission_duration_seconds` and the operator's own
   `pfslayout_reconcile_duration_seconds{handler="admission"}` histograms (bucket bounds);
3. more jobs until `--jobs` exist, then the operator processes' VmRSS (read from /proc on the real node,
   which is this machine; the larger of the replicas) sampled for 60 s of steady state.

The jobs carry `runPolicy.managedBy: kueue.x-k8s.io/multikueue`, so the MPI Operator leaves them alone
(no pods): the benchmark measures admission and the operator, not the MPI Operator.
Goals (issue 11): p99 <= 50 ms, RSS <= 150 MB; the ratios are printed.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import re
import ssl
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from kubernetes import client, config

from pfslayout.images import DEFAULT_MPI_IMAGE
from pfstestkit.kube import RELEASE, RELEASE_NS, Cluster
from pfstestkit.real import place

GOAL_P99_MS, GOAL_RSS_MB = 50.0, 150.0
WEBHOOK_METRIC = "apiserver_admission_webhook_admission_duration_seconds"
OPERATOR_METRIC = "pfslayout_reconcile_duration_seconds"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def histogram(text: str, metric: str, match: dict[str, str]) -> dict[float, float]:
    """Cumulative bucket counts of one histogram series (summed over series that match)."""
    out: dict[float, float] = {}
    for line in text.splitlines():
        if not line.startswith(metric + "_bucket{"):
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', line.split("{", 1)[1].split("}", 1)[0]))
        if any(labels.get(k) != v for k, v in match.items()):
            continue
        le = float("inf") if labels["le"] == "+Inf" else float(labels["le"])
        out[le] = out.get(le, 0.0) + float(line.rsplit(" ", 1)[1])
    return out


def bucket_quantile(before: dict[float, float], after: dict[float, float], q: float) -> str:
    """The upper bound of the bucket holding the q-quantile of the observations between the two scrapes."""
    diff = {le: after.get(le, 0.0) - before.get(le, 0.0) for le in after}
    total = diff.get(float("inf"), 0.0)
    if total <= 0:
        return "n/a (no observations)"
    for le in sorted(diff):
        if diff[le] >= q / 100 * total:
            return f"<= {le * 1000:g} ms" if le != float("inf") else "> largest bucket"
    return "n/a"


def operator_pids(replicas: int) -> list[int]:
    """The chart's operator processes on this node (the real node), once all `replicas` run; [] before."""
    pids = [int(p) for p in subprocess.run(["pgrep", "-f", "kopf run --peering"], capture_output=True,
                                           text=True, check=False).stdout.split()]
    ours = [p for p in pids if "pfslayout.operator" in Path(f"/proc/{p}/cmdline").read_text(errors="replace")]
    if len(ours) > replicas:
        sys.exit(f"injection bench: expected {replicas} operator processes on this node, found {ours}")
    return ours if len(ours) == replicas else []


def rss_mb(pids: list[int]) -> float:
    """The largest resident set of the replicas (the leader's, normally: the standby only serves admissions)."""
    out = []
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                out.append(int(line.split()[1]) / 1024)
    return max(out, default=float("nan"))


def webhook_latencies(c: Cluster, ns: str, n: int) -> list[float]:
    """The admission latency itself: `n` AdmissionReviews (dry run: no Events) sent the way the API server
    sends them — HTTPS to the webhook Service, the chain verified against the operator's CA bundle — over one
    kept-alive connection; each must come back allowed with a JSON Patch."""
    hook = json.loads(c.k("get", "mutatingwebhookconfiguration", RELEASE, "-o", "json"))["webhooks"][0]
    svc = hook["clientConfig"]["service"]
    ip = json.loads(c.k("get", "service", svc["name"], "-n", svc["namespace"], "-o", "json"))["spec"]["clusterIP"]
    ctx = ssl.create_default_context(cadata=base64.b64decode(hook["clientConfig"]["caBundle"]).decode())
    ctx.check_hostname = False  # dialled by IP; the chain is still verified (the API server checks the name)
    conn = http.client.HTTPSConnection(ip, svc.get("port", 443), context=ctx, timeout=10)
    out = []
    for i in range(n + 10):
        job = mpijob(f"review-{i}", {"app": "bench"})
        job["metadata"]["namespace"] = ns
        gvk = {"group": "kubeflow.org", "version": "v2beta1", "kind": "MPIJob"}
        review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
            "uid": str(uuid.uuid4()), "kind": gvk, "requestKind": gvk,
            "resource": {"group": "kubeflow.org", "version": "v2beta1", "resource": "mpijobs"},
            "requestResource": {"group": "kubeflow.org", "version": "v2beta1", "resource": "mpijobs"},
            "name": job["metadata"]["name"], "namespace": ns, "operation": "CREATE",
            "userInfo": {"username": "injection-bench"}, "object": job, "oldObject": None, "dryRun": True,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}}}
        body = json.dumps(review)
        t0 = time.perf_counter()
        conn.request("POST", svc.get("path", "/inject"), body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        answer = json.loads(resp.read())
        ms = (time.perf_counter() - t0) * 1000
        got = answer.get("response") or {}
        if resp.status != 200 or not got.get("allowed") or got.get("patchType") != "JSONPatch":
            sys.exit(f"injection bench: the webhook did not inject a review: {resp.status} {json.dumps(got)[:300]}")
        if i >= 10:  # the first ten warm the connection and the handler
            out.append(ms)
    conn.close()
    return out


def mpijob(name: str, labels: dict[str, str]) -> dict[str, Any]:
    pod = {"spec": {"containers": [{"name": "c", "image": DEFAULT_MPI_IMAGE, "args": ["true"]}]}}
    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": name, "labels": labels},
            "spec": {"mpiImplementation": "MPICH", "slotsPerWorker": 1,
                     "runPolicy": {"managedBy": "kueue.x-k8s.io/multikueue"},
                     "mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": pod},
                                         "Worker": {"replicas": 1, "template": pod}}}}


def policy(name: str, cluster_name: str, selector: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "pfslayout.io/v1alpha1", "kind": "LayoutPolicy", "metadata": {"name": name},
            "spec": {"clusterRef": {"name": cluster_name}, "selector": {"matchLabels": selector},
                     "rules": [{"path": f"/{name}", "mode": "explicit", "explicit": {"layout": "1-DH"}}]}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--policies", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--replicas", type=int, default=2, help="operator replicas (the chart's default: 2)")
    args = ap.parse_args()
    c = Cluster("injection bench")
    if c.mode != "local":
        sys.exit("injection bench: needs the local cluster (the operator's memory is read from this machine's /proc)")
    config.load_kube_config()
    api = client.CustomObjectsApi()
    spaces = ["pfsbench-a", "pfsbench-free"] + [f"pfsbench-{i}" for i in range(1, 20)]
    t_start = time.monotonic()
    try:
        c.install_chart("--set", f"replicas={args.replicas}")
        pid = c.wait(lambda: (operator_pids(args.replicas) if c.k(
            "get", "mutatingwebhookconfiguration", RELEASE, "-o", "jsonpath={.webhooks[0].clientConfig.caBundle}")
            else []), "the operator serving its webhook", 180)
        rss_idle = rss_mb(pid)
        for ns in spaces:
            c.namespace(ns)
        ofs = place({"apiVersion": "pfslayout.io/v1alpha1", "kind": "OrangeFSCluster", "metadata": {"name": "b"},
                     "spec": {"servers": {"count": 2, "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}},
                              "storage": {"type": "emptyDir", "size": "1Gi"}, "client": {"replicas": 1},
                              "calibration": {"auto": False}, "reclaimPolicy": "Delete"}}, c.mode)
        c.apply([ofs, policy("bench", "b", {"app": "bench"})], "pfsbench-a")
        others = spaces[2:]
        for i in range(args.policies - 1):
            c.apply([policy(f"p{i}", "absent", {"app": f"p{i}"})], others[i % len(others)])

        def ready() -> bool:
            st = json.loads(c.k("get", "layoutpolicies.pfslayout.io", "bench", "-n", "pfsbench-a", "-o", "json"))
            conds = (st.get("status") or {}).get("conditions") or []
            return any(x["type"] == "Ready" and x.get("reason") == "Applied" for x in conds)
        c.wait(ready, "LayoutPolicy bench Applied", 300)

        def scope() -> list[str]:
            hook = json.loads(c.k("get", "mutatingwebhookconfiguration", RELEASE, "-o", "json"))["webhooks"][0]
            return list(hook["namespaceSelector"]["matchExpressions"][0]["values"])
        c.wait(lambda: set(spaces) - {"pfsbench-free"} <= set(scope()), "every policy namespace in scope", 120)
        rss_policies = rss_mb(pid)

        def scrape_apiserver() -> str:
            return c.k("get", "--raw", "/metrics")

        def scrape_operator() -> str:
            """Every replica's metrics, one after the other (each serves admissions; the Service's proxy
            would reach one at random, and two scrapes of different replicas make no difference)."""
            pods = json.loads(c.k("get", "pods", "-n", RELEASE_NS, "-l", "app.kubernetes.io/component=operator",
                                  "-o", "json"))["items"]
            port = lambda p: next(cp["containerPort"] for ct in p["spec"]["containers"]  # noqa: E731
                                  for cp in ct.get("ports") or [] if cp.get("name") == "metrics")
            return "\n".join(c.k("get", "--raw", f"/api/v1/namespaces/{RELEASE_NS}/pods/{p['metadata']['name']}:"
                                  f"{port(p)}/proxy/metrics") for p in pods)

        def create(ns: str, name: str, labels: dict[str, str]) -> float:
            t0 = time.perf_counter()
            api.create_namespaced_custom_object("kubeflow.org", "v2beta1", ns, "mpijobs", mpijob(name, labels))
            return (time.perf_counter() - t0) * 1000

        direct = webhook_latencies(c, "pfsbench-a", args.samples)
        for i in range(10):  # warm the connection and both paths
            create("pfsbench-a", f"warm-{i}", {"app": "bench"})
            create("pfsbench-free", f"warm-{i}", {"app": "bench"})
        hook0, op0 = scrape_apiserver(), scrape_operator()
        selected = [create("pfsbench-a", f"sel-{i}", {"app": "bench"}) for i in range(args.samples)]
        hook1, op1 = scrape_apiserver(), scrape_operator()
        baseline = [create("pfsbench-free", f"free-{i}", {"app": "bench"}) for i in range(args.samples)]
        injected = json.loads(c.k("get", "mpijobs.kubeflow.org", f"sel-{args.samples - 1}", "-n", "pfsbench-a",
                                  "-o", "json"))["metadata"].get("annotations", {}).get("pfslayout.io/injected")
        if injected != "bench":
            sys.exit("injection bench: the measured jobs were not injected: the numbers would not mean anything")

        made = 20 + 2 * args.samples
        i = 0
        while made < args.jobs:  # the rest: half selected in pfsbench-a, half unselected in policy namespaces
            if i % 2 == 0:
                create("pfsbench-a", f"more-{i}", {"app": "bench"})
            else:
                create(others[i % len(others)], f"more-{i}", {"app": "nobody"})
            made += 1
            i += 1
        samples = []
        for _ in range(12):  # a minute of steady state: timers of every policy, watch events of every job
            time.sleep(5)
            samples.append(rss_mb(pid))
        rss_jobs = max(samples)

        p50, p99 = percentile(selected, 50), percentile(selected, 99)
        b50, b99 = percentile(baseline, 50), percentile(baseline, 99)
        hook = {"name": "mpijobs.pfslayout.io"}
        print(f"injection bench: {args.policies} LayoutPolicies in {len(spaces) - 1} namespaces, {made} MPIJobs, "
              f"{args.replicas} operator replicas ({time.monotonic() - t_start:.0f} s)")
        d50, d99 = percentile(direct, 50), percentile(direct, 99)
        print(f"  admission review at the webhook (HTTPS, TLS verified): p50 {d50:6.1f} ms   p99 {d99:6.1f} ms   "
              f"n={len(direct)}")
        print(f"  CREATE of a selected MPIJob (webhook injects):  p50 {p50:6.1f} ms   p99 {p99:6.1f} ms   "
              f"n={len(selected)}")
        print(f"  CREATE outside the webhook's scope (baseline):  p50 {b50:6.1f} ms   p99 {b99:6.1f} ms   "
              f"n={len(baseline)}")
        print(f"  the webhook's share (p50, p99 differences):      {p50 - b50:6.1f} ms       {p99 - b99:6.1f} ms")
        before, after = histogram(hook0, WEBHOOK_METRIC, hook), histogram(hook1, WEBHOOK_METRIC, hook)
        print(f"  API server's webhook call histogram:            p50 {bucket_quantile(before, after, 50)}   "
              f"p99 {bucket_quantile(before, after, 99)}")
        sel = {"kind": "MPIJob", "handler": "admission"}
        before, after = histogram(op0, OPERATOR_METRIC, sel), histogram(op1, OPERATOR_METRIC, sel)
        print(f"  operator's admission handler histogram:         p50 {bucket_quantile(before, after, 50)}   "
              f"p99 {bucket_quantile(before, after, 99)}")
        print(f"  operator RSS: idle {rss_idle:.0f} MB, with the policies {rss_policies:.0f} MB, with the jobs "
              f"{rss_jobs:.0f} MB (max over 60 s; last {samples[-1]:.0f} MB)")
        print(f"  ratios to the goals: admission p99/{GOAL_P99_MS:g} ms = {d99 / GOAL_P99_MS:.2f} "
              f"(end-to-end CREATE: {p99 / GOAL_P99_MS:.2f}), "
              f"RSS/{GOAL_RSS_MB:g} MB = {rss_jobs / GOAL_RSS_MB:.2f}")
    finally:
        for ns in spaces:
            c.k("delete", "namespace", ns, "--wait=false", "--ignore-not-found", check=False)
        # the operator removes its finalizers from the policies and the cluster: uninstalled before the
        # namespaces are gone, they would stay Terminating
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and any(
                c.k("get", "namespace", ns, "--ignore-not-found", "-o", "name", check=False).strip() for ns in spaces):
            time.sleep(2)
        c.run(c.helm, "uninstall", RELEASE, "-n", RELEASE_NS, "--wait", "--timeout", "120s", check=False)


if __name__ == "__main__":
    main()
