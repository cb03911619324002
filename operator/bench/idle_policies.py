"""API requests of idle LayoutPolicies, measured in one run and printed (not asserted anywhere): with
`--policies` policies applied on one real OrangeFS cluster and nothing changing, how many requests per
minute the operator sends the API server, per policy (goal, issue 34: at most 1), and what they are.

    PFSLAYOUT_E2E_AUDIT_LOG=/tmp/pfs-audit.log e2e/harness/cluster.sh restart kube-apiserver   # or `up`
    eval "$(e2e/harness/cluster.sh env)"
    python operator/bench/idle_policies.py --audit-log /tmp/pfs-audit.log [--policies 200] [--minutes 25]

The requests are counted from the API server's audit log (e2e/harness/cluster/local.sh writes one when
PFSLAYOUT_E2E_AUDIT_LOG is set): every request whose user is the operator's ServiceAccount, completed in
the measured window, watches excepted (a watch is one long request, counted when it ends). Each policy has
one explicit rule on its own directory and selects its own jobs (so its shim ConfigMap is published),
like a user's; none has tracing. The window starts once every policy is Applied and `--settle` seconds
have passed (by default one drift period: `--recheck`, the operator's PFSLAYOUT_LAYOUT_RECHECK_SECONDS, its
default when not given), so it holds the steady state: drift checks, nothing else. A window of one drift
period holds one drift check per policy. The chart is installed in-cluster on the real node
(like operator/bench/injection.py) and uninstalled afterwards; the namespace is `pfsbench-idle`.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import signal
import time
from pathlib import Path
from typing import Any

from pfslayout.operator import settings
from pfstestkit.kube import BENCH, RELEASE, RELEASE_NS, Cluster
from pfstestkit.real import place

NS = "pfsbench-idle"
GOAL_PER_POLICY_MIN = 1.0


def policy(name: str) -> dict[str, Any]:
    return {"apiVersion": "pfslayout.io/v1alpha1", "kind": "LayoutPolicy", "metadata": {"name": name},
            "spec": {"clusterRef": {"name": "idle"}, "selector": {"matchLabels": {"app": name}},
                     "rules": [{"path": f"/idle/{name}", "mode": "explicit", "explicit": {"layout": "1-DH"}}]}}


def stamp(text: str) -> float:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def requests(log: Path, user: str, start: float, end: float) -> list[dict[str, Any]]:
    """The operator's completed non-watch requests received in [start, end) (the rotated file too)."""
    out = []
    for f in (log.with_name(log.name.replace(".log", "") + "-*"), log):
        for path in sorted(log.parent.glob(f.name)) if "*" in f.name else [f]:
            for line in path.read_text(errors="replace").splitlines():
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                if e.get("stage") != "ResponseComplete" or (e.get("user") or {}).get("username") != user:
                    continue
                if e.get("verb") == "watch" or not start <= stamp(e["requestReceivedTimestamp"]) < end:
                    continue
                out.append(e)
    return out


def what(e: dict[str, Any]) -> str:
    ref = e.get("objectRef") or {}
    sub = f"/{ref['subresource']}" if ref.get("subresource") else ""
    return f"{e.get('verb')} {ref.get('resource', e.get('requestURI', '?'))}{sub}"


def _interrupted(signum: int, frame: Any) -> None:
    """`kill` (SIGTERM) cleans up like Ctrl-C: a bench started in the background ignores SIGINT."""
    raise KeyboardInterrupt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--audit-log", type=Path, required=True)
    ap.add_argument("--policies", type=int, default=200)
    ap.add_argument("--minutes", type=float, default=25.0, help="the measured window")
    ap.add_argument("--recheck", type=float, default=None,
                    help="PFSLAYOUT_LAYOUT_RECHECK_SECONDS for the operator (its default when not given)")
    ap.add_argument("--settle", type=float, default=None,
                    help="seconds between the last policy Applied and the window (default: one drift period)")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, _interrupted)
    c = Cluster("idle-policies bench")
    if not args.audit_log.exists():
        c.fail(f"no audit log at {args.audit_log}: restart the API server with PFSLAYOUT_E2E_AUDIT_LOG set "
               "(see this script's docstring)")
    recheck = args.recheck or settings.load({}).layout_recheck_s
    user = f"system:serviceaccount:{BENCH.service_account}"
    extra = [] if args.recheck is None else [
        "--set", "operator.extraEnv[0].name=PFSLAYOUT_LAYOUT_RECHECK_SECONDS",
        "--set-string", f"operator.extraEnv[0].value={args.recheck:g}"]
    t0 = time.monotonic()
    try:
        c.install_chart(*extra)
        c.namespace(NS)
        ofs = place({"apiVersion": "pfslayout.io/v1alpha1", "kind": "OrangeFSCluster", "metadata": {"name": "idle"},
                     "spec": {"servers": {"count": 2, "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}},
                              "storage": {"type": "emptyDir", "size": "1Gi"}, "client": {"replicas": 1},
                              "calibration": {"auto": False}, "reclaimPolicy": "Delete"}}, c.mode)
        c.apply([ofs], NS)
        c.wait(lambda: (c.get("orangefsclusters.pfslayout.io", "idle", "-n", NS).get("status") or {}).get(
            "phase") == "Ready", "OrangeFSCluster idle Ready", 600, interval=3)
        for i in range(0, args.policies, 50):
            c.apply([policy(f"p{j:03d}") for j in range(i, min(i + 50, args.policies))], NS)

        def applied() -> int:
            items = c.get("layoutpolicies.pfslayout.io", "-n", NS)["items"]
            return sum(1 for p in items if any(x["type"] == "Ready" and x.get("reason") == "Applied"
                                               for x in (p.get("status") or {}).get("conditions") or []))
        c.wait(lambda: applied() >= args.policies, f"{args.policies} LayoutPolicies Applied", 3600, interval=10,
               context=lambda: f"{applied()} Applied")
        settled = time.monotonic()
        settle = recheck if args.settle is None else args.settle
        print(f"idle-policies bench: {args.policies} policies Applied after {settled - t0:.0f} s; waiting {settle:g} s "
              f"(drift period {recheck:g} s), then measuring {args.minutes:g} min", flush=True)
        time.sleep(settle)
        start = time.time()
        time.sleep(args.minutes * 60)
        end = time.time()
        time.sleep(5)  # requests received before the end, completed just after
        got = requests(args.audit_log, user, start, end)
        if not got:  # an operator sends keep-alives at least: the log is not being written
            c.fail(f"{args.audit_log} holds no request of {user} in the window: was the API server restarted "
                   "without PFSLAYOUT_E2E_AUDIT_LOG (e2e/harness/cluster.sh restart kube-apiserver)?")
        minutes = (end - start) / 60
        per_min = len(got) / minutes
        per_policy = per_min / args.policies
        checks = sum(1 for e in got if what(e) == "patch jobs")  # a hint Job is applied (server-side)
        print(f"idle-policies bench: {len(got)} requests from {user} in {minutes:.1f} min "
              f"(drift period {recheck:g} s, {args.policies} policies)")
        print(f"  {per_min:.1f} requests/min, {per_policy:.3f} per policy per minute; hint Jobs started: {checks} "
              f"({checks / max(1, args.policies) / minutes * recheck / 60:.2f} per policy per drift period)")
        for name, n in collections.Counter(what(e) for e in got).most_common(12):
            print(f"  {n:7d}  {n / minutes / args.policies:6.3f}/policy/min  {name}")
        print(f"  ratio to the goal ({GOAL_PER_POLICY_MIN:g} per policy per minute): "
              f"{per_policy / GOAL_PER_POLICY_MIN:.2f}")
    finally:
        c.k("delete", "namespace", NS, "--wait=false", "--ignore-not-found", check=False)
        deadline = time.monotonic() + 600  # the operator removes its finalizers first
        while time.monotonic() < deadline and c.k("get", "namespace", NS, "--ignore-not-found", "-o", "name",
                                                  check=False).strip():
            time.sleep(3)
        c.run(c.helm, "uninstall", RELEASE, "-n", RELEASE_NS, "--wait", "--timeout", "120s", check=False)


if __name__ == "__main__":
    main()
