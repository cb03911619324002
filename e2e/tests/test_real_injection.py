"""Shim injection without a webhook, for real: a user creates an MPIJob suspended (`runPolicy.suspend:
true`) with `kubectl apply`; the operator, as a local process, finds the LayoutPolicy selecting it, adds
the shim (init container, config, pvfs2tab, the MPICH launcher environment) to both templates and
resumes it. The job then runs IOR on the real node under the real MPI Operator on two worker pods, and
every rank — started over ssh, so only the forwarded environment reaches it — writes its trace onto
OrangeFS: the shim was loaded in each — and created its file on the servers the model assumes (the
policy's 2-D rule, file per process: rank k's two datafiles on servers 2k, 2k+1 mod 4, the shim's spread
through ROMIO's `romio_pvfs2_server_list`, seen with `pvfs2-viewdist`). A job no policy selects runs
untouched (its templates as written, no annotation), and a job two policies select stays suspended with
the reason."""

from __future__ import annotations

import copy
import re
from typing import Any

from pfstestkit.kinds import MOUNT
from pfstestkit.mpijobs import finished, get_job, launcher_log, mpijob
from pfstestkit.ofs_pods import datafile_servers, sh, toolbox, wait_ofs_ready
from pfstestkit.policies import cond, lp_status, reasons
from pfstestkit.real import place


def ofs() -> dict[str, Any]:
    return {"apiVersion": "pfslayout.io/v1alpha1", "kind": "OrangeFSCluster", "metadata": {"name": "inj"},
            "spec": {"servers": {"count": 4, "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}},
                     "storage": {"type": "emptyDir", "size": "1Gi"}, "client": {"replicas": 1},
                     "calibration": {"auto": False}, "reclaimPolicy": "Delete"}}


def policy(name: str = "inject") -> dict[str, Any]:
    return {"apiVersion": "pfslayout.io/v1alpha1", "kind": "LayoutPolicy", "metadata": {"name": name},
            "spec": {"clusterRef": {"name": "inj"}, "selector": {"matchLabels": {"pfslayout.io/policy": "inject"}},
                     "trace": {"enabled": True},
                     "rules": [{"path": "/ior", "mode": "explicit", "fileSharing": "perProcess",
                                "explicit": {"layout": "2-D", "groups": 2}}]}}










def test_suspended_jobs_get_the_shim_in_every_rank(cluster, lp_operator, namespace: str) -> None:  # noqa: ANN001
    fs = place(ofs(), cluster.mode)
    cluster.apply(fs, namespace=namespace)
    cluster.apply(policy(), namespace=namespace)
    wait_ofs_ready(cluster, namespace, "inj", 4)
    cluster.wait_until(lambda: cond(lp_status(cluster, namespace, "inject"), "Ready").get("status") == "True" or None,
                       "the policy Ready", timeout=240, interval=2)

    # The unselected job: not suspended, no label; nobody touches it.
    plain = place(mpijob("plain", "mpiexec -n 2 hostname", {}, suspend=False), cluster.mode)
    cluster.apply(plain, namespace=namespace)
    created = get_job(cluster, namespace, "plain")

    # The selected job, as a user writes it: IOR through ROMIO's pvfs2 driver, a file per rank, nothing else.
    # Its image (Debian + MPICH) holds no libjansson: the shim copied into the pod needs only libc and libmpi
    # (the launcher prints what its loader has and what the shim loads).
    ior = ("echo \"jansson libraries: $(ldconfig -p | grep -c libjansson || true)\"; ldd /pfslayout/lib/libpfsshim.so\n"
           "mpiexec -n 4 ior -a MPIIO -F -o pvfs2:/mnt/orangefs/ior/fpp -t 1m -b 2m -w -r -k")
    job = place(mpijob("ior-injected", ior, {"pfslayout.io/policy": "inject"}, suspend=True), cluster.mode)
    cluster.apply(job, namespace=namespace)
    assert finished(cluster, namespace, "ior-injected") == "Succeeded", launcher_log(cluster, namespace,
                                                                                     "ior-injected")
    got = get_job(cluster, namespace, "ior-injected")
    assert got["metadata"]["annotations"]["pfslayout.io/injected"] == "inject"
    assert got["spec"]["runPolicy"]["suspend"] is False
    for role in ("Launcher", "Worker"):
        spec = got["spec"]["mpiReplicaSpecs"][role]["template"]["spec"]
        assert [c["name"] for c in spec["initContainers"]] == ["pfslayout-shim"]
        assert spec["containers"][0]["args"] == job["spec"]["mpiReplicaSpecs"][role]["template"]["spec"][
            "containers"][0]["args"]  # the user's container is the user's
    log = launcher_log(cluster, namespace, "ior-injected")
    assert "Summary of all tests" in log and "cannot write the trace" not in log, log[-3000:]
    assert "jansson libraries: 0" in log and re.search(r"libmpi\.so\.12 => /opt/mpich/lib/libmpi\.so\.12", log), \
        log[:3000]
    loads = log.split("jansson libraries: 0", 1)[1].split("IOR-", 1)[0]  # ldd's lines, before IOR's banner
    assert "libc.so.6" in loads and "jansson" not in loads and "not found" not in loads, loads
    # Every rank loaded the shim: each wrote its trace onto OrangeFS through MPI-IO.
    tool = toolbox(cluster, namespace, "inj")
    listing = sh(cluster, namespace, tool, f"pvfs2-ls {MOUNT}/.pfslayout/traces/{namespace}")
    assert sorted(x for x in listing.split() if x.startswith("ior-injected.rank-")) == [
        f"ior-injected.rank-{r:06d}.pfstrace" for r in range(4)], f"{listing}\n{log[-4000:]}"
    # Each rank's file where the model puts it: 2-D with g = 2 on 4 servers is 2 datafiles per file, file k
    # (rank k, its first create) on servers 2k, 2k+1 mod 4, in the order the cluster lists its servers.
    order = [s["url"] for s in cluster.kubectl_json("get", "orangefsclusters.pfslayout.io", "inj", "-n",
                                                    namespace)["status"]["endpoints"]["servers"]]
    for k in range(4):
        where = datafile_servers(sh(cluster, namespace, tool, f"pvfs2-viewdist -f {MOUNT}/ior/fpp.{k:08d}"))
        assert [order.index(a) for a in where] == [(2 * k) % 4, (2 * k + 1) % 4], (k, where, order)
    st = lp_status(cluster, namespace, "inject")
    assert st.get("injectedJobs", 0) >= 1 and st.get("lastInjectedJob") == "ior-injected", st
    assert "ShimInjected" in reasons(cluster, namespace, "inject")

    # The unselected job ran as written.
    assert finished(cluster, namespace, "plain") == "Succeeded"
    after = get_job(cluster, namespace, "plain")
    assert after["spec"]["mpiReplicaSpecs"] == created["spec"]["mpiReplicaSpecs"]
    assert "pfslayout.io/injected" not in (after["metadata"].get("annotations") or {})

    # Two policies select the next job: it stays suspended, annotated and reported, never run without the shim.
    cluster.apply(policy("inject-too"), namespace=namespace)
    twice = place(copy.deepcopy(job), cluster.mode)
    twice["metadata"]["name"] = "ior-twice"
    cluster.apply(twice, namespace=namespace)

    def refused() -> dict[str, Any] | None:
        j = get_job(cluster, namespace, "ior-twice")
        return j if "pfslayout.io/injection-refused" in (j["metadata"].get("annotations") or {}) else None
    j = cluster.wait_until(refused, "the ambiguous job refused", timeout=60, interval=1)
    why = j["metadata"]["annotations"]["pfslayout.io/injection-refused"]
    assert "inject, inject-too" in why and "spec.selector" in why, why
    assert j["spec"]["runPolicy"]["suspend"] is True
    pods = cluster.kubectl_json("get", "pods", "-n", namespace, "-l", "training.kubeflow.org/job-name=ior-twice")
    assert pods["items"] == []
