"""The learning loop for real: `policies/learning.yaml` on real OrangeFS server pods. Its `source: trace`
rule waits; the example's MPIJob runs IOR on the real node under the real MPI Operator with the shim
preloaded on every rank, each rank writes its trace onto OrangeFS through MPI-IO, and the operator
collects the traces, plans the rule from the job's own requests and sets the hints (read back with
`pvfs2-xattr`). A second, differently shaped run is learned from too (the history says whether it
switched, by the hysteresis rule), and a selected job that ran without the shim is reported, naming the
rule, the field and the fix, while the learned layout stays."""

from __future__ import annotations

import copy
import json
from typing import Any

import yaml

from pfstestkit import REPO
from pfstestkit.kinds import MOUNT
from pfstestkit.mpijobs import finished, launcher_log, spread_workers, worker_nodes
from pfstestkit.ofs_pods import sh, toolbox, wait_ofs_ready
from pfstestkit.policies import cond, lp_status, read_hint, reasons
from pfstestkit.real import place

IOR_SHARED = "ior -a MPIIO -o pvfs2:/mnt/orangefs/ior/shared -t 1m -b 4m -s 2 -w -r -C -k"


def example() -> dict[str, dict[str, Any]]:
    docs = list(yaml.safe_load_all((REPO / "policies" / "learning.yaml").read_text()))
    return {d["kind"]: d for d in docs}


def suspended(job: dict[str, Any]) -> dict[str, Any]:
    """The example job as it must be submitted where no webhook runs (the operator here is a local
    process): created suspended, injected and resumed by the operator (docs/operator.md)."""
    job = copy.deepcopy(job)
    job["spec"].setdefault("runPolicy", {})["suspend"] = True
    return job


def with_command(job: dict[str, Any], name: str, ior: str | None) -> dict[str, Any]:
    """The example job renamed, running `ior` instead of its IOR line (None: the ranks run `hostname`,
    and the job is not suspended, so nothing gives it the shim: a selected job that leaves no trace)."""
    job = copy.deepcopy(job)
    job["metadata"]["name"] = name
    c = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    assert " ".join(c["args"][3:]) == IOR_SHARED, "the example's IOR line changed: update this test"
    if ior is None:
        c["args"] = ["mpiexec", "-n", "4", "hostname"]
        # what injection would have added for Hydra: workers reach the launcher by address
        c["env"] = [*(c.get("env") or []), {"name": "HYDRA_IFACE", "value": "eth0"}]
        job["spec"]["runPolicy"].pop("suspend", None)
    else:
        c["args"] = c["args"][:3] + ior.split()
    return job


def mpijob_done(cluster, operator, ns: str, name: str) -> None:  # noqa: ANN001
    """The job succeeded on real pods and every rank could write its trace (a timeout reports what the
    job left — conditions, pods, Events, the launcher's log, each pod's processes — and the operator's
    log, which resumes the suspended job)."""
    try:
        got = finished(cluster, ns, name)
    except AssertionError as err:
        raise AssertionError(f"{err}\noperator log:\n{operator.log_tail()}") from None
    log = launcher_log(cluster, ns, name)
    assert got == "Succeeded", f"MPIJob {name} {got}:\n{log[-3000:]}"
    assert "cannot write the trace" not in log, log[-3000:]


def test_a_traced_run_replans_its_rule(cluster, lp_operator, namespace: str) -> None:  # noqa: ANN001
    docs = example()
    ofs, lp, job = (place(docs[k], cluster.mode) for k in ("OrangeFSCluster", "LayoutPolicy", "MPIJob"))
    job = suspended(job)
    ofs["spec"]["reclaimPolicy"] = "Delete"
    # one traced run kept: the second collection's listing marks the first run, the third deletes it
    lp["spec"].setdefault("trace", {})["retain"] = {"runs": 1}
    name = lp["metadata"]["name"]
    cluster.apply(ofs, namespace=namespace)
    cluster.apply(lp, namespace=namespace)
    wait_ofs_ready(cluster, namespace, ofs["metadata"]["name"], 4)

    # Before any run: the rule waits, its directory exists (ROMIO cannot create it), the shim config is out.
    def waiting() -> dict[str, Any] | None:
        st = lp_status(cluster, namespace, name)
        return st if cond(st, "Ready").get("status") == "True" and st.get("learning") else None
    try:
        st = cluster.wait_until(waiting, "the policy ready and waiting", timeout=240, interval=2)
    except AssertionError as err:
        raise AssertionError(f"{err}\n{lp_status(cluster, namespace, name)}\n{lp_operator.log_tail()}") from None
    rule = st["rules"][0]
    assert rule["source"] == "trace" and not rule.get("applied") and "waiting for a traced run" in rule["message"]
    assert cond(st, "Learned")["reason"] == "WaitingForTrace"
    traces = f"{MOUNT}/.pfslayout/traces/{namespace}"
    assert st["learning"]["traceDirectory"] == traces
    shim = cluster.kubectl_json("get", "configmap", "learning-shim", "-n", namespace)["data"]["shim.json"]
    assert json.loads(shim)["trace"]["dir"] == f"pvfs2:{traces}"

    # Run 1: IOR, one shared file, 1 MiB transfers; every rank traces onto OrangeFS.
    def submit(j: dict[str, Any]) -> None:
        if cluster.mode == "kind":  # several real nodes: each job's ranks on two of them (issue 32, item 4)
            spread_workers(j)
        cluster.apply(j, namespace=namespace)

    submit(job)
    mpijob_done(cluster, lp_operator, namespace, "ior-shared")
    if cluster.mode == "kind":
        workers = worker_nodes(cluster, namespace, "ior-shared")
        assert len(set(workers)) == len(workers) == 2, f"the traced job's workers ran on {workers}"
        print(f"the traced job's workers ran on {workers}")
    tool = toolbox(cluster, namespace, ofs["metadata"]["name"])
    listing = sh(cluster, namespace, tool, f"pvfs2-ls {traces}")
    assert sorted(x for x in listing.split() if x.startswith("ior-shared.rank-")) == [
        f"ior-shared.rank-{r:06d}.pfstrace" for r in range(4)], listing

    def learned(job_name: str, runs: int) -> Any:
        def check() -> dict[str, Any] | None:
            s = lp_status(cluster, namespace, name)
            r = s["rules"][0]
            ok = (r.get("trace") or {}).get("job") == job_name and r.get("applied") and \
                len(r.get("history") or []) == runs
            return s if ok else None
        try:
            return cluster.wait_until(check, f"the rule learned from {job_name}", timeout=240, interval=2)
        except AssertionError as err:
            raise AssertionError(f"{err}\n{lp_status(cluster, namespace, name)}\n{lp_operator.log_tail()}") from None

    st = learned("ior-shared", 1)
    rule = st["rules"][0]
    assert rule["trace"]["ranks"] == 4 and rule["trace"]["sharing"] == "shared", rule["trace"]
    assert rule["trace"]["requests"] >= 4 * 8 and rule["trace"]["dominantSize"] == 1 << 20, rule["trace"]
    first = rule["history"][0]
    assert first["job"] == "ior-shared" and not first["switched"] and first["reason"].startswith("first trace")
    assert rule["layout"]["layout"] == rule["candidates"][0]["layout"], rule  # the cheapest, first time
    assert cond(st, "Learned")["status"] == "True" and st["learning"]["lastJob"] == "ior-shared"
    assert read_hint(cluster, namespace, tool, f"{MOUNT}/ior", "user.pvfs2.num_dfiles") == \
        rule["hints"]["user.pvfs2.num_dfiles"]
    assert {"CollectingTrace", "TraceLearned", "LayoutChosen"} <= set(reasons(cluster, namespace, name))

    # Run 2: the same application shape changed (file per process, 64 KiB transfers, each rank reading
    # its own file back: without -C, which would make every file shared by two ranks): learned again; the
    # history says whether it switched, and it did exactly when the gain beat the threshold.
    submit(with_command(job, "ior-fpp", "ior -a MPIIO -o pvfs2:/mnt/orangefs/ior/fpp -F -t 64k -b 1m -w -r -k"))
    mpijob_done(cluster, lp_operator, namespace, "ior-fpp")
    st = learned("ior-fpp", 2)
    rule = st["rules"][0]
    second = rule["history"][1]
    assert rule["trace"]["sharing"] == "file-per-process" and rule["trace"]["dominantSize"] == 64 << 10
    assert second["previous"] == first["layout"] and second["switched"] == (second["gain"] > 0.1), second
    assert second["layout"] == (rule["layout"]["layout"] + (f"/g{rule['layout']['groups']}"
                                                              if rule["layout"].get("groups") else ""))
    assert read_hint(cluster, namespace, tool, f"{MOUNT}/ior", "user.pvfs2.num_dfiles") == \
        rule["hints"]["user.pvfs2.num_dfiles"]

    # A selected job that ran without the shim leaves no trace: a Warning naming the rule, the field and
    # the fix; the learned layout stays applied.
    submit(with_command(job, "no-shim", None))
    mpijob_done(cluster, lp_operator, namespace, "no-shim")

    def refused() -> dict[str, Any] | None:
        s = lp_status(cluster, namespace, name)
        return s if cond(s, "Learned").get("reason") == "TraceUnreadable" else None
    st = cluster.wait_until(refused, "the missing trace reported", timeout=240, interval=2)
    msg = cond(st, "Learned")["message"]
    assert "no-shim" in msg and "no trace files" in msg, msg
    warnings = cluster.kubectl_json("get", "events", "-n", namespace, "--field-selector",
                                    f"involvedObject.name={name},reason=TraceUnreadable")["items"]
    assert any("spec.rules[0].auto.source" in e["message"] and "PFSLAYOUT_SHIM_JOB" in e["message"]
               for e in warnings), [e["message"] for e in warnings]
    assert st["rules"][0]["applied"] and st["rules"][0]["trace"]["job"] == "ior-fpp"

    # Retention (spec.trace.retain.runs: 1): that third collector deleted the first run's traces and stats
    # files before it copied; the second run's stay.
    left = sh(cluster, namespace, tool, f"pvfs2-ls {traces}").split()
    assert not [x for x in left if x.startswith("ior-shared.")], left
    assert sorted(x for x in left if x.startswith("ior-fpp.rank-")) == [
        f"ior-fpp.rank-{r:06d}.pfstrace" for r in range(4)], left
    pruned = cluster.kubectl_json("get", "events", "-n", namespace, "--field-selector",
                                  f"involvedObject.name={name},reason=TracesPruned")["items"]
    assert any("of 1 earlier runs" in e["message"] and "ior-shared" in e["message"] for e in pruned), \
        [e["message"] for e in pruned]


def test_a_model_that_stays_off_is_recalibrated(cluster, lp_operator, namespace: str) -> None:  # noqa: ANN001
    """Predicted against measured, for real (issue 33 item 5): a policy whose parameters came from
    elsewhere — its CostCalibration's measured parameters replaced by thirty times theirs, as a calibration of
    a much slower cluster would give — judges each traced IOR job; after `recalibrateAfter` jobs off by more than
    `recalibrateAbove` the operator re-runs the calibration on this cluster (probe MPIJobs on the real node),
    posts the reason, and the next job's error is smaller."""
    docs = example()
    ofs, job = (place(docs[k], cluster.mode) for k in ("OrangeFSCluster", "MPIJob"))
    ofs["spec"]["reclaimPolicy"] = "Delete"
    cal = {"apiVersion": "pfslayout.io/v1alpha1", "kind": "CostCalibration", "metadata": {"name": "recal"},
           "spec": {"clusterRef": {"name": ofs["metadata"]["name"]}, "probeImage": "pfslayout/mpi:dev",
                    "backend": "pvfs2",
                    "grid": {"nodes": 1, "ranksPerNode": 2, "requestSizes": [8192, 1048576], "requestsPerRank": 8,
                             "minBytesPerRank": 1048576, "repetitions": 3, "maxConfigs": 8},
                    "batch": {"cellsPerJob": 64}, "fit": {"minRSquared": 0}, "timeoutSeconds": 600}}
    lp = {"apiVersion": "pfslayout.io/v1alpha1", "kind": "LayoutPolicy", "metadata": {"name": "recal"},
          "spec": {"clusterRef": {"name": ofs["metadata"]["name"]}, "calibrationRef": {"name": "recal"},
                   "selector": {"matchLabels": {"pfslayout.io/policy": "recal"}},
                   "trace": {"enabled": True, "recalibrateAbove": 1.0, "recalibrateAfter": 2},
                   "rules": [{"path": "/ior", "mode": "explicit", "fileSharing": "shared",
                              "explicit": {"layout": "1-DH", "stripSize": 65536}}]}}
    cluster.apply(ofs, namespace=namespace)
    cluster.apply(place(cal, cluster.mode), namespace=namespace)
    wait_ofs_ready(cluster, namespace, ofs["metadata"]["name"], 4)

    def calibrated(run: int) -> dict[str, Any]:
        def check() -> dict[str, Any] | None:
            st = cluster.kubectl_json("get", "costcalibrations.pfslayout.io", "recal", "-n", namespace).get(
                "status") or {}
            return st if st.get("run", 0) >= run and st.get("phase") == "Succeeded" else None
        try:
            return cluster.wait_until(check, f"calibration run {run}", timeout=600, interval=2)
        except AssertionError as err:
            raise AssertionError(f"{err}\n{lp_operator.log_tail()}") from None

    first = calibrated(1)
    # parameters from elsewhere: thirty times the measured ones, in the ConfigMap the policy reads (predictions
    # scale with them: unless this cluster's own fit predicted under 1/15 of the measured time, the error
    # exceeds the bound of 100%)
    cm = cluster.kubectl_json("get", "configmap", first["configMapName"], "-n", namespace)
    params = json.loads(cm["data"]["params.json"])
    foreign = {k: (v * 30 if k in ("e", "v", "alpha_seq", "alpha_rand", "beta", "e_write", "beta_write", "e_shared")
                   and isinstance(v, (int, float)) else v) for k, v in params.items()}
    cluster.kubectl("patch", "configmap", first["configMapName"], "-n", namespace, "--type", "merge", "-p",
                    json.dumps({"data": {"params.json": json.dumps(foreign)}}))
    cluster.apply(lp, namespace=namespace)

    ior = "ior -a MPIIO -o pvfs2:/mnt/orangefs/ior/recal -t 64k -b 1m -w -r -k"

    def judged_run(run: str, jobs: int) -> dict[str, Any]:
        j = suspended(with_command(job, run, ior))
        j["metadata"]["labels"] = {"pfslayout.io/policy": "recal"}
        cluster.apply(j, namespace=namespace)
        mpijob_done(cluster, lp_operator, namespace, run)

        def check() -> dict[str, Any] | None:
            st = lp_status(cluster, namespace, "recal")
            p = (st.get("rules") or [{}])[0].get("prediction") or {}
            return st if p.get("job") == run and (st.get("learning") or {}).get("collectedJobs") == jobs else None
        try:
            return cluster.wait_until(check, f"MPIJob {run} judged", timeout=240, interval=2)
        except AssertionError as err:
            raise AssertionError(f"{err}\n{lp_status(cluster, namespace, 'recal')}\n{lp_operator.log_tail()}") \
                from None

    st = judged_run("recal-1", 1)
    p1 = st["rules"][0]["prediction"]
    assert p1["judged"] and p1["layout"] == "1-DH" and p1["measuredSeconds"] > 0, p1
    assert p1["error"] > 1.0, p1  # thirty times the parameters: above the bound
    assert st["learning"]["prediction"]["streak"] == 1, st["learning"]
    st = judged_run("recal-2", 2)
    pred = st["learning"]["prediction"]
    assert pred["recalibrations"] == 1 and pred["lastRecalibration"]["calibration"] == "recal", pred
    assert "Recalibrating" in reasons(cluster, namespace, "recal")
    second = calibrated(2)  # re-run for real: new probe jobs, new parameters in the ConfigMap
    assert second["run"] == 2 and json.loads(cluster.kubectl_json(
        "get", "configmap", second["configMapName"], "-n", namespace)["data"]["params.json"]) != foreign
    st = judged_run("recal-3", 3)
    p3 = st["rules"][0]["prediction"]
    print(f"prediction error: {p1['error']:+.0%} with the foreign parameters, {p3['error']:+.0%} after the "
          f"recalibration (predicted {p3['predictedSeconds']:.3g} s, measured {p3['measuredSeconds']:.3g} s)")
    assert abs(p3["error"]) < abs(p1["error"]), (p1, p3)
