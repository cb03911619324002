"""The product in the loop (issue 13 item 7), measured in one run and written as a report (not asserted):
does the operator itself — its CostCalibration and the `auto` rules of its LayoutPolicies — pick the
layout that measured fastest on real OrangeFS with shaped server links?

    eval "$(e2e/harness/cluster.sh env)"        # a running local cluster with its real node (e2e/harness/cluster.sh up)
    python lab/bench/product_loop.py [--servers 4] [--rate 200mbit]

On the shared cluster, in the namespace `pfsbench-loop` (removed afterwards; the chart is installed in-cluster on
the real node as operator/bench/injection.py does, and uninstalled):

1. an OrangeFSCluster (tmpfs storage) on the real node; each server pod's link is shaped as the lab shapes
   its server links (pfslab.net: tbf at `--rate` with a 17 kB burst in both directions, GSO 16 KiB), from
   the host, through the server process's network namespace;
2. a CostCalibration `loop-cal` (the probe over the `--profile`'s grid — default: the profile an
   OrangeFSCluster's automatic calibration gets — on one client node of `--ranks` ranks, the operator's fit);
3. LayoutPolicies with one `auto` rule per held-out configuration (`--holdout-sizes`, every p, pattern and
   operation of the same client node): the operator plans each with `loop-cal`'s parameters; their
   picks are read from `status.rules[].layout`, then the policies are deleted;
4. CostCalibrations `loop-holdout-r<i>` over the held-out sizes, full factorial, for their measurements
   only: every layout of every configuration, measured by the same probe jobs, and the file system's
   default layout beside them (spec.grid.baseline) — what the operator's picks gained over doing nothing.
   `--rounds` of them, one repetition per cell each, pooled per cell, as `lab validate` measures: the
   layouts of a configuration are measured interleaved in time rather than back to back, so a slow spell of
   the shared 2 cores spreads over all of them instead of deciding a contest (with 3 repetitions back to
   back, one cell's sequential and random contests — equal on tmpfs — named different winners);
5. the operator's picks scored on those measurements as `lab validate` scores the model (pfslab.score),
   beside the model's own picks with the same parameters and the baselines. Report:
   docs/results/lab-loop.json (with loop-cal's parameters, fit and measured cells, so a model change can be
   refitted and scored offline on the same two sets) and the `lab-loop` section of docs/results.md.

Needs root (nsenter, tc) and the local cluster (the servers' processes are on this machine).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from pfslab import loop
from pfslab.grids import VALIDATION_SIZES_ARG
from pfslab.loop import holdout_configs
from pfslab.net import BURST, GSO_MAX, validate_rate
from pfslab.report import build_report, gain_line, replace_marked, results_markdown
from pfslab.score import gain, group_cells, score
from pfslayout.calibration import merge_measurements, parse_probe
from pfslayout.calibration.profiles import DEFAULT_PROFILE, PROFILES, get_profile
from pfslayout.costmodel import CostParams
from pfslayout.errors import InputError
from pfslayout.kinds.costcalibration.spec import parse_spec as parse_cc_spec
from pfslayout.units import parse_size, parse_sizes
from pfstestkit.kube import RELEASE, RELEASE_NS, REPO, Cluster
from pfstestkit.real import place

NS = "pfsbench-loop"  # served by the e2e installs (crd_release.WATCH)
OFS_NAME = "loop"
SECTION = "lab-loop"  # the marker of the report's section in docs/results.md (--section: another setup's)


def log(msg: str) -> None:
    print(f"product-loop: {msg}", file=sys.stderr, flush=True)


def fail(msg: str) -> None:
    sys.exit(f"product-loop: {msg}")


# ------------------------------------------------------------------------------------------- shaping


def pods(c: Cluster) -> str:
    """What runs in the benchmark's namespace, for a timeout's message."""
    return c.k("get", "pods,mpijobs", "-n", NS, "-o", "wide", check=False)


def sh(*argv: str) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        fail(f"`{' '.join(argv)}` failed: {(done.stderr or done.stdout).strip()}")
    return done.stdout


def server_pid(pod: str) -> int:
    """The host PID of the `pvfs2-server` whose alias (`-a`) is the pod's name."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"pvfs2-server") and pod.encode() in argv:
            found.append(int(entry.name))
    if len(found) != 1:
        fail(f"expected one pvfs2-server process with alias {pod} on this machine, found {found}")
    return found[0]


def host_veth(pid: int) -> str:
    """The host end of the pod's eth0: the interface whose index is eth0's peer index."""
    inside = json.loads(sh("nsenter", "-t", str(pid), "-n", "ip", "-j", "link", "show", "eth0"))[0]
    peer = inside.get("link_index")
    for link in json.loads(sh("ip", "-j", "link", "show")):
        if link.get("ifindex") == peer:
            return str(link["ifname"])
    fail(f"no host interface with index {peer} (the peer of pid {pid}'s eth0)")
    return ""


def shape(pid: int, veth: str, rate: str) -> None:
    tbf = ["tbf", "rate", rate, "burst", BURST, "latency", "50ms"]
    sh("ip", "link", "set", "dev", veth, "gso_max_size", str(GSO_MAX))
    sh("tc", "qdisc", "replace", "dev", veth, "root", *tbf)
    sh("nsenter", "-t", str(pid), "-n", "ip", "link", "set", "dev", "eth0", "gso_max_size", str(GSO_MAX))
    sh("nsenter", "-t", str(pid), "-n", "tc", "qdisc", "replace", "dev", "eth0", "root", *tbf)


def shaped_rate(veth: str) -> str:
    """The tbf rate the kernel reports on ``veth`` (read back, not assumed)."""
    for q in json.loads(sh("tc", "-j", "qdisc", "show", "dev", veth)):
        if q.get("kind") == "tbf":
            return str(q.get("options", {}).get("rate"))
    return ""


def unshape(veths: list[str]) -> None:
    for veth in veths:
        subprocess.run(["tc", "qdisc", "del", "dev", veth, "root"], capture_output=True, check=False)


# ------------------------------------------------------------------------------------------- the loop


def bring_up(c: Cluster, servers: int, rate: str, veths: list[str]) -> dict[str, Any]:
    """The chart, the namespace and a Ready OrangeFSCluster of ``servers`` on tmpfs, each server's link shaped
    at ``rate`` (its host veth appended to ``veths`` as soon as shaped, so ``tear_down`` undoes a partial
    run); returns the cluster's status."""
    c.install_chart()
    c.namespace(NS)
    c.apply([place(loop.cluster_manifest(OFS_NAME, servers), c.mode)], NS)

    def ready() -> dict[str, Any] | None:
        st = c.get("orangefsclusters.pfslayout.io", OFS_NAME, "-n", NS).get("status") or {}
        ok = any(x["type"] == "Ready" and x["status"] == "True" for x in st.get("conditions") or [])
        return st if ok and st.get("readyServers") == servers else None
    ofs: dict[str, Any] = c.wait(ready, "the OrangeFSCluster Ready", 300, context=lambda: pods(c))
    for server in ofs["endpoints"]["servers"]:
        pid = server_pid(server["alias"])
        veth = host_veth(pid)
        shape(pid, veth, rate)
        veths.append(veth)
        log(f"{server['alias']}: pid {pid}, host link {veth} shaped at {shaped_rate(veth)} both ways")
    return ofs


def tear_down(c: Cluster, veths: list[str], keep: bool = False) -> None:
    """The links unshaped; unless ``keep``, the namespace deleted and the chart uninstalled."""
    unshape(veths)
    if not keep:
        c.k("delete", "namespace", NS, "--wait=true", "--timeout=300s", "--ignore-not-found", check=False)
        c.run(c.helm, "uninstall", RELEASE, "-n", RELEASE_NS, "--wait", check=False)


def wait_cc(c: Cluster, name: str, timeout: float) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        st = c.get("costcalibrations.pfslayout.io", name, "-n", NS).get("status") or {}
        return st if st.get("phase") in ("Succeeded", "Failed") else None
    st: dict[str, Any] = c.wait(done, f"CostCalibration {name}", timeout, interval=5, context=lambda: pods(c))
    if st["phase"] != "Succeeded":
        fail(f"CostCalibration {name} failed: {json.dumps(st.get('conditions'))[:600]}")
    return st




def measurements(c: Cluster, status: dict[str, Any], servers: int) -> Any:
    data = c.get("configmap", status["measurementsConfigMap"], "-n", NS).get("data") or {}
    # the probe documents are the j<NNN>-s<size> keys (the ConfigMap also holds the run's jobs.json index)
    docs = [parse_probe(json.loads(text), key) for key, text in sorted(data.items()) if re.match(r"j\d+-", key)]
    if not docs:
        fail(f"the measurements ConfigMap {status['measurementsConfigMap']} has no probe documents")
    m = merge_measurements(docs)
    if m.servers != servers:
        fail(f"the holdout measurements are for {m.servers} servers, not {servers}")
    return m


def run_seconds(status: dict[str, Any]) -> float | None:
    """How long a finished CostCalibration's run took, start to completion (status.startTime,
    status.completionTime; whole seconds): the probing time issue 33 item 1 bounds."""
    try:
        start, end = (datetime.fromisoformat(str(status[k]).replace("Z", "+00:00"))
                      for k in ("startTime", "completionTime"))
    except (KeyError, ValueError):
        return None
    return (end - start).total_seconds()


def calibration_cell(cell: Any) -> dict[str, Any]:
    """One measured calibration cell as the report keeps it: its configuration, median and repetitions."""
    return {"layout": cell.layout, "g": cell.g, "op": cell.op, "pattern": cell.pattern, "p": cell.p, "m": cell.m,
            "request_size": cell.request_size, "requests_per_rank": cell.requests_per_rank,
            "sharing": cell.sharing, "time": cell.time, "times": list(cell.times)}


def sizes_arg(text: str, option: str = "--holdout-sizes") -> list[int]:
    try:
        return parse_sizes(text, option)
    except InputError as err:
        fail(str(err))
        raise  # unreachable: fail exits


def holdout_manifest(name: str, holdout: list[int], args: argparse.Namespace, min_bytes: int) -> dict[str, Any]:
    """One round's CostCalibration over the held-out sizes: every layout, one repetition, and the default."""
    return loop.calibration_manifest(name, OFS_NAME, holdout, ranks=args.ranks, max_configs=None,
                                     requests=args.requests, repetitions=1, min_bytes=min_bytes, baseline=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--servers", type=int, default=4)
    ap.add_argument("--rate", default="200mbit")
    ap.add_argument("--ranks", type=int, default=4, help="probe ranks on the one client node (p = 1, 2, 4)")
    ap.add_argument("--profile", default=DEFAULT_PROFILE, choices=sorted(PROFILES),
                    help="the calibration profile loop-cal runs (default: the automatic calibration's)")
    # the lab's validation sizes, none of either profile's: it scores configurations no calibration measured
    ap.add_argument("--holdout-sizes", default=VALIDATION_SIZES_ARG)
    ap.add_argument("--requests", type=int, default=8, help="requests per rank in the held-out cells")
    ap.add_argument("--rounds", type=int, default=5, help="held-out repetitions, each a round over the whole "
                    "held-out grid (one CostCalibration of one repetition per cell): `lab validate --rounds`")
    ap.add_argument("--min-bytes", default="4M", help="bytes each rank moves per repetition at least, in both "
                    "CostCalibrations (spec.grid.minBytesPerRank; the lab's --min-bytes); 0: requests alone")
    ap.add_argument("--report", type=Path, default=REPO / "docs" / "results" / "lab-loop.json")
    ap.add_argument("--results-md", type=Path, default=REPO / "docs" / "results.md")
    ap.add_argument("--section", default=SECTION, help="the marked section of --results-md to write (a second "
                    "setup's report beside the first: e.g. lab-loop-8s-100mbit, with its own --report)")
    ap.add_argument("--keep", action="store_true", help="leave the namespace and the chart (debugging)")
    args = ap.parse_args()
    args.report = args.report.resolve()  # the command line it prints names it relative to the repository
    validate_rate(args.rate)
    c = Cluster("product-loop")
    if c.mode != "local" or os.geteuid() != 0:
        fail("needs root and the local cluster (the server pods' processes are shaped from this machine)")
    profile = get_profile(args.profile)
    holdout = sizes_arg(args.holdout_sizes)
    if set(holdout) & set(profile.sizes):
        fail(f"--holdout-sizes share {sorted(set(holdout) & set(profile.sizes))} with the calibration's")
    try:
        min_bytes = parse_size(args.min_bytes, "--min-bytes", minimum=0)  # "0": requests per rank alone
    except InputError as err:
        fail(str(err))
        raise  # unreachable: fail exits
    if args.rounds < 1:
        fail(f"--rounds {args.rounds}: at least 1")
    # Checked by the operator's own spec parser before the calibration's 20 minutes, not refused by the API
    # server after them (one held-out size was: requestSizes needs two).
    try:
        parse_cc_spec(holdout_manifest("loop-holdout-r0", holdout, args, min_bytes)["spec"])
    except InputError as err:
        fail(f"--holdout-sizes {args.holdout_sizes}: the held-out CostCalibration would be refused: {err}")
    configs = holdout_configs(args.servers, holdout, args.ranks, args.requests, 1, min_bytes)
    veths: list[str] = []
    t0 = time.monotonic()
    try:
        ofs = bring_up(c, args.servers, args.rate, veths)
        first = ofs["endpoints"]["servers"][0]["alias"]
        version = c.k("exec", "-n", NS, first, "--", "pvfs2-server", "--version", check=False).strip() or "unknown"

        cal = loop.calibration_manifest("loop-cal", OFS_NAME, profile.sizes, ranks=args.ranks,
                                        max_configs=profile.max_configs, requests=profile.requests_per_rank,
                                        repetitions=profile.repetitions, min_bytes=min_bytes)
        c.apply([place(cal, c.mode)], NS)
        log("calibrating (CostCalibration loop-cal)")
        cal_status = wait_cc(c, "loop-cal", 1800)
        params = CostParams.model_validate(cal_status["params"])
        # loop-cal's own measurements go into the report: the namespace is deleted afterwards, and with them
        # the next model change can be refitted and scored offline on both sets (calibration and held out)
        cal_cells = [calibration_cell(x) for x in measurements(c, cal_status, args.servers).cells]
        log(f"loop-cal: {json.dumps(cal_status['params'])}; R² {cal_status['fit'].get('rSquared')}; "
            f"{run_seconds(cal_status)} s from start to completion; {cal_status['fit'].get('overlap')}")

        policies = loop.policy_manifests("loop", OFS_NAME, configs)
        c.apply(policies, NS)

        def decided() -> list[str] | None:
            sts = [c.get("layoutpolicies.pfslayout.io", p["metadata"]["name"], "-n", NS).get("status") or {}
                   for p in policies]
            got = loop.picks_from_status(sts, len(configs))
            return [g for g in got if g] if all(got) else None
        picks: list[str] = c.wait(decided, "every auto rule decided", 600, context=lambda: pods(c))
        log(f"the operator decided {len(picks)} held-out configurations")
        for p in policies:
            c.k("delete", "layoutpolicies.pfslayout.io", p["metadata"]["name"], "-n", NS, "--wait=true")

        rounds = []
        for r in range(args.rounds):
            name = f"loop-holdout-r{r}"
            c.apply([place(holdout_manifest(name, holdout, args, min_bytes), c.mode)], NS)
            log(f"measuring the held-out configurations, round {r + 1} of {args.rounds} (CostCalibration {name})")
            rounds.append(measurements(c, wait_cc(c, name, 3600), args.servers))
        # group_cells pools a layout's repetitions over the rounds and takes the median of the pool
        cells = group_cells(merge_measurements(rounds))
        scored, scored_picks = loop.matched(cells, configs, picks)
        if not scored:
            fail("no held-out configuration was both measured for every layout and decided")
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=False).stdout.strip()
        setup = {"servers": args.servers, "rate": args.rate, "client_namespaces": "one probe pod (real node)",
                 "profile": args.profile,
                 "orangefs": version, "commit": commit, "where": "the operator on the test cluster's real node",
                 "min_bytes_per_rank": min_bytes, "rounds": args.rounds}
        report = build_report(scored, args.servers, params, setup)
        operator = score(scored, scored_picks)
        model_picks = [row["pick"] for row in report["per_cell"]]
        for row, pick in zip(report["per_cell"], scored_picks):
            row["operator_pick"] = pick
        report["operator"] = operator.as_dict()
        operator_gain = gain(scored, scored_picks)
        report["operator_gain"] = operator_gain.as_dict() if operator_gain else None
        report["operator_agrees_with_model"] = sum(a == b for a, b in zip(scored_picks, model_picks)) / len(scored)
        report["calibration"] = {"params": cal_status["params"], "fit": cal_status.get("fit"), "cells": cal_cells,
                                 "seconds": run_seconds(cal_status)}
        report["wall_s"] = round(time.monotonic() - t0, 1)
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
        cmd = (f"python lab/bench/product_loop.py --servers {args.servers} --rate {args.rate} --ranks {args.ranks} "
               f"--min-bytes {args.min_bytes} --profile {args.profile} --rounds {args.rounds}"
               + (f" --report {args.report.relative_to(REPO) if args.report.is_relative_to(REPO) else args.report}"
                  f" --section {args.section}"
                  if args.section != SECTION else ""))
        md = results_markdown(report, cmd)
        rate = operator.correct_decisive_rate
        section = (f"## The product in the loop: the operator's picks on the real node ({args.servers} servers, "
                   f"{args.rate})\n\n"
                   f"The operator's `auto` rules, planned with its own CostCalibration, on {len(scored)} held-out "
                   f"configurations measured by its probe jobs: right in {operator.correct_decisive}/"
                   f"{operator.decisive} decisive cells"
                   + (f" ({rate:.0%})" if rate is not None else "")
                   + f", within 3% of the best in {operator.within_3pct:.0%} of all cells, worst regret "
                   f"{operator.worst_regret:.1%}; the operator's pick equals the fitted model's in "
                   f"{report['operator_agrees_with_model']:.0%} of them. loop-cal: "
                   f"{cal_status['fit'].get('cells')} cells in {run_seconds(cal_status)} s from start to "
                   f"completion, R² {cal_status['fit'].get('rSquared', float('nan')):.3f}; "
                   f"{cal_status['fit'].get('overlap') or 'network and storage add up'}."
                   + (" " + gain_line(report["operator_gain"], "the operator's pick")
                      if report["operator_gain"] else "")
                   + "\n\n" + md.split("\n", 1)[1])
        replace_marked(args.results_md, f"<!-- {args.section}: begin -->", f"<!-- {args.section}: end -->", section)
        log(f"report {args.report}; operator {json.dumps(operator.as_dict())}")
    finally:
        tear_down(c, veths, keep=args.keep)


if __name__ == "__main__":
    main()
