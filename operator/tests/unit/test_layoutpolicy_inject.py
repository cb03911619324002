"""What an MPIJob selected by a LayoutPolicy gets (kinds/layoutpolicy/inject.py): selection, refusals
naming the policy, the field and the fix, and templates where everything is appended, nothing replaced."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pfslayout import naming
from pfslayout.images import DEFAULT_MPI_IMAGE
from pfslayout.kinds.layoutpolicy import inject


def policy(name: str = "lp", selector: dict[str, Any] | None = None, ready: str = "Applied",
           shim: dict[str, Any] | None = None, calibrated: str = "NoCalibration",
           calibration_ref: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"clusterRef": {"name": "fs"}, "selector": selector if selector is not None else
                            {"matchLabels": {"app": "ior"}}, "shim": shim or {"enabled": True,
                                                                           "image": "pfslayout/mpi:dev"}}
    if calibration_ref:
        spec["calibrationRef"] = {"name": "cal"}
    return {"metadata": {"name": name}, "spec": spec, "status": {"conditions": [
        {"type": "Ready", "status": "True" if ready == "Applied" else "False", "reason": ready, "message": "m"},
        {"type": "Calibrated", "status": "False", "reason": calibrated, "message": "c"}]}}


def job(impl: str = "MPICH", labels: dict[str, str] | None = None, env: list[dict[str, Any]] | None = None
        ) -> dict[str, Any]:
    def pod(role: str) -> dict[str, Any]:
        return {"spec": {"containers": [{"name": role, "image": "user/app:1", "command": ["run"],
                                         "env": list(env or []),
                                         "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                         "volumes": [{"name": "data", "emptyDir": {}}]}}
    return {"metadata": {"name": "j1", "namespace": "ns", "resourceVersion": "7",
                         "labels": labels if labels is not None else {"app": "ior"}},
            "spec": {"mpiImplementation": impl, "runPolicy": {"suspend": True},
                     "mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": pod("launcher")},
                                         "Worker": {"replicas": 2, "template": pod("worker")}}}}


def env_of(c: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in c.get("env") or []}


def test_selection_follows_label_selectors() -> None:
    assert inject.selecting(job(), [policy()])["metadata"]["name"] == "lp"  # type: ignore[index]
    assert inject.selecting(job(labels={"app": "other"}), [policy()]) is None
    assert inject.selecting(job(), [policy(selector={})]) is not None  # {} selects every job
    no_selector = policy()
    del no_selector["spec"]["selector"]
    assert inject.selecting(job(), [no_selector]) is None
    assert inject.selecting(job(), [policy(shim={"enabled": False})]) is None
    expr = {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]},
                                 {"key": "skip", "operator": "DoesNotExist"}]}
    assert inject.selecting(job(labels={"tier": "a"}), [policy(selector=expr)]) is not None
    assert inject.selecting(job(labels={"tier": "a", "skip": "1"}), [policy(selector=expr)]) is None
    with pytest.raises(inject.Refusal, match="LayoutPolicies a, b all select"):
        inject.selecting(job(), [policy("a"), policy("b")])


@pytest.mark.parametrize(("pol", "match"), [
    (policy(ready="RuleInvalid"), "LayoutPolicy lp is not usable \\(RuleInvalid"),
    (policy(ready="ClusterNotReady"), "ClusterNotReady"),
    ({"metadata": {"name": "lp"}, "spec": {}}, "has not been reconciled yet"),
    (policy(calibration_ref=True, calibrated="CalibrationNotFound"), "spec.calibrationRef names a CostCalibration"),
])
def test_policies_that_cannot_serve_are_refusals(pol: dict[str, Any], match: str) -> None:
    with pytest.raises(inject.Refusal, match=match):
        inject.check_policy(pol)


def test_mpich_gets_the_shim_in_the_launcher_environment_and_everything_is_appended() -> None:
    original = job(env=[{"name": "LD_PRELOAD", "value": "/opt/darshan/lib/libdarshan.so"},
                        {"name": "KEEP", "value": "1"}])
    before = copy.deepcopy(original)
    out = inject.inject(original, policy(), "fs")
    assert original == before  # the input is left alone
    launcher = out["Launcher"]["template"]["spec"]
    first = launcher["containers"][0]
    env = env_of(first)
    # the shim first, the user's interposer after it; the user's other variables kept
    assert env["LD_PRELOAD"] == f"{inject.SHIM_LIB}:/opt/darshan/lib/libdarshan.so" and env["KEEP"] == "1"
    assert env["PFSLAYOUT_SHIM_CONFIG"] == "/etc/pfslayout/shim.json" and env["PFSLAYOUT_SHIM_JOB"] == "j1"
    assert env["PVFS2TAB_FILE"] == "/etc/pvfs2tab/pvfs2tab"
    assert [m["name"] for m in first["volumeMounts"]] == ["data", "pfslayout-shim", "pfslayout-shim-config",
                                                          "pfslayout-pvfs2tab"]
    assert first["image"] == "user/app:1" and first["command"] == ["run"]
    assert [c["name"] for c in launcher["initContainers"]] == ["pfslayout-shim"]
    assert launcher["initContainers"][0]["command"] == ["cp", "/usr/local/lib/libpfsshim.so", inject.SHIM_LIB]
    vols = {v["name"]: v for v in launcher["volumes"]}
    assert vols["pfslayout-shim-config"]["configMap"]["name"] == "lp-shim"
    assert vols["pfslayout-pvfs2tab"]["configMap"]["name"] == "fs-pvfs2tab" and "data" in vols
    worker = out["Worker"]["template"]["spec"]
    wenv = env_of(worker["containers"][0])
    assert "LD_PRELOAD" not in wenv or wenv["LD_PRELOAD"] == "/opt/darshan/lib/libdarshan.so"  # sshd runs there
    assert wenv["PFSLAYOUT_SHIM_CONFIG"] == "/etc/pfslayout/shim.json"
    assert [c["name"] for c in worker["initContainers"]] == ["pfslayout-shim"]
    assert out["Worker"]["replicas"] == 2


def test_the_injected_copier_is_hardened_even_in_a_root_pod() -> None:
    """A user's pod may run as root (many MPI images do, for sshd): the container the operator adds does
    not, and holds nothing it does not need to copy one file into an emptyDir."""
    root = job()
    for role in ("Launcher", "Worker"):
        root["spec"]["mpiReplicaSpecs"][role]["template"]["spec"]["securityContext"] = {"runAsUser": 0}
    out = inject.inject(root, policy(), "fs")
    for role in ("Launcher", "Worker"):
        pod = out[role]["template"]["spec"]
        assert pod["securityContext"] == {"runAsUser": 0}  # the user's choice for their own containers
        (copier,) = pod["initContainers"]
        assert copier["securityContext"] == {
            "runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001, "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"}}


def test_open_mpi_gets_the_variables_through_orteds_launch_agent() -> None:
    out = inject.inject(job("OpenMPI"), policy(), "fs")
    env = env_of(out["Launcher"]["template"]["spec"]["containers"][0])
    assert "LD_PRELOAD" not in env  # not into mpirun itself
    assert "OMPI_MCA_mca_base_env_list" not in env  # Open MPI refuses it beside a user's -x
    agent = env["OMPI_MCA_orte_launch_agent"].split()
    assert agent[0] == "env" and agent[-1] == "orted"
    listed = dict(x.split("=", 1) for x in agent[1:-1])
    assert listed["LD_PRELOAD"] == inject.SHIM_LIB and listed["PFSLAYOUT_SHIM_JOB"] == "j1"
    assert env["PRTE_MCA_prte_launch_agent"].split()[-1] == "prted"  # Open MPI 5
    assert env["PFSLAYOUT_SHIM_JOB"] == "j1"  # ranks mpirun forks itself
    assert "LD_PRELOAD" not in env_of(out["Worker"]["template"]["spec"]["containers"][0])
    for role in ("Launcher", "Worker"):  # the shim built against Open MPI's ABI
        assert out[role]["template"]["spec"]["initContainers"][0]["command"][1] == \
            "/usr/local/lib/openmpi/libpfsshim.so"


def test_unpatchable_jobs_are_refusals() -> None:
    bad = job()
    bad["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"] = []
    with pytest.raises(inject.Refusal, match=r"Worker\.template\.spec\.containers is empty"):
        inject.inject(bad, policy(), "fs")
    twice = {"metadata": job()["metadata"], "spec": {**job()["spec"],
                                                     "mpiReplicaSpecs": inject.inject(job(), policy(), "fs")}}
    with pytest.raises(inject.Refusal, match="already has pfslayout-"):
        inject.inject(twice, policy(), "fs")


def test_the_patch_is_guarded_and_resumes() -> None:
    j = job()
    ops = inject.json_patch(j, inject.inject(j, policy(), "fs"), "lp", resume=True)
    assert ops[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "7"}
    assert {"op": "add", "path": "/metadata/annotations", "value": {inject.INJECTED: "lp"}} in ops
    assert ops[-1] == {"op": "replace", "path": "/spec/runPolicy/suspend", "value": False}
    j["metadata"]["annotations"] = {"x": "y"}
    ops = inject.json_patch(j, {}, "lp", resume=False)
    assert {"op": "add", "path": "/metadata/annotations/pfslayout.io~1injected", "value": "lp"} in ops
    assert not any(o["path"] == "/spec/runPolicy/suspend" for o in ops)


def test_decide_is_none_for_unselected_jobs_and_names_the_policy_in_refusals() -> None:
    assert inject.decide(job(labels={"app": "other"}), [policy()]) is None
    chosen, replicas = inject.decide(job(), [policy()])  # type: ignore[misc]
    assert chosen["metadata"]["name"] == "lp" and set(replicas) == {"Launcher", "Worker"}
    nameless = job()
    nameless["metadata"]["name"] = ""
    nameless["metadata"]["generateName"] = "j-"
    with pytest.raises(inject.Refusal, match=r"LayoutPolicy lp selects this MPIJob, but metadata.name") as err:
        inject.decide(nameless, [policy()])
    assert err.value.policy is not None
    empty = job()
    empty["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"] = []
    with pytest.raises(inject.Refusal, match=r"LayoutPolicy lp selects this MPIJob, but spec.mpiReplicaSpecs.Worker"):
        inject.decide(empty, [policy()])
    with pytest.raises(inject.Refusal, match=r"^LayoutPolicy lp is not usable"):
        inject.decide(job(), [policy(ready="ClusterNotReady")])


def test_a_users_own_preload_is_kept_after_the_shim_and_a_second_shim_is_dropped() -> None:
    env, _ = inject.environment("MPICH", "j", "/opt/darshan/lib/libdarshan.so /usr/local/lib/libpfsshim.so")
    assert {e["name"]: e["value"] for e in env}["LD_PRELOAD"] == \
        "/pfslayout/lib/libpfsshim.so:/opt/darshan/lib/libdarshan.so"


def test_the_shims_image_is_the_policys_else_the_operators() -> None:
    """A policy naming no `spec.shim.image` gets the operator's (Settings.mpi_image, the chart's images.mpi):
    the CRD stores none, so a release's registry is set once."""
    def copier(pol: dict[str, Any], **kw: str) -> str:
        decided = inject.decide(job(), [pol], **kw)
        assert decided is not None
        pods = decided[1]["Launcher"]["template"]["spec"]
        return str(next(c for c in pods["initContainers"] if c["name"] == naming.SHIM_COPIER)["image"])

    assert copier(policy(shim={"enabled": True}), shim_image="reg.example/pfs/mpi:1") == "reg.example/pfs/mpi:1"
    assert copier(policy(shim={"enabled": True})) == DEFAULT_MPI_IMAGE
    assert copier(policy(shim={"enabled": True, "image": "mine/mpi:2"}), shim_image="reg.example/pfs/mpi:1") \
        == "mine/mpi:2"


@pytest.mark.parametrize("words", [
    ["mpirun", "--mca", "orte_launch_agent", "/opt/ompi/bin/orted", "ior"],
    ["mpirun", "-mca", "prte_launch_agent", "prted", "ior"],
    ["mpirun", "--launch-agent", "/opt/ompi/bin/orted", "ior"],
    ["mpirun", "-launch-agent", "orted", "ior"],
    ["sh", "-c", "export OMPI_MCA_orte_launch_agent=orted; mpirun ior"],
])
@pytest.mark.parametrize("field", ["command", "args"])
def test_an_open_mpi_launch_agent_on_the_command_line_is_refused(words: list[str], field: str) -> None:
    # it would override the agent the shim's variables travel in: the workers' ranks would run without it
    j = job("OpenMPI")
    j["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0][field] = words
    with pytest.raises(inject.Refusal) as err:
        inject.decide(j, [policy()])
    text = str(err.value)
    assert text.startswith("LayoutPolicy lp selects this MPIJob, but "), text
    assert f"Launcher.template.spec.containers[0].{field}" in text and "launch" in text, text
    assert "set the agent as env OMPI_MCA_orte_launch_agent" in text, text  # the fix


@pytest.mark.parametrize("words", [["mpirun", "--mca", "plm_rsh_agent", "ssh", "ior"],
                                   ["mpirun", "-x", "MY_LAUNCH_AGENTS=1", "ior", "--my-launch-agent"]])
def test_other_options_are_not_taken_for_a_launch_agent(words: list[str]) -> None:
    j = job("OpenMPI")
    j["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["args"] = words
    assert inject.decide(j, [policy()]) is not None


def test_an_open_mpi_launch_agent_in_the_environment_is_chained() -> None:
    own = [{"name": "OMPI_MCA_orte_launch_agent", "value": " /opt/ompi/bin/orted --debug-daemons "}]
    out = inject.inject(job("OpenMPI", env=own), policy(), "fs")
    env = env_of(out["Launcher"]["template"]["spec"]["containers"][0])
    agent = env["OMPI_MCA_orte_launch_agent"].split()
    assert agent[0] == "env" and agent[-2:] == ["/opt/ompi/bin/orted", "--debug-daemons"]  # theirs, run by env
    assert f"LD_PRELOAD={inject.SHIM_LIB}" in agent
    assert env["PRTE_MCA_prte_launch_agent"].split()[-1] == "prted"  # the one they did not set: the default
    names = [e["name"] for e in out["Launcher"]["template"]["spec"]["containers"][0]["env"]]
    assert names.count("OMPI_MCA_orte_launch_agent") == 1
    # MPICH jobs have no launch agent: a variable of that name is theirs, untouched
    mpich = inject.inject(job("MPICH", env=own), policy(), "fs")
    assert env_of(mpich["Launcher"]["template"]["spec"]["containers"][0])["OMPI_MCA_orte_launch_agent"] == \
        own[0]["value"]


def test_a_launch_agent_from_a_reference_is_refused() -> None:
    own = [{"name": "PRTE_MCA_prte_launch_agent", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}}]
    with pytest.raises(inject.Refusal, match=r"containers\[0\]\.env PRTE_MCA_prte_launch_agent has no value"):
        inject.decide(job("OpenMPI", env=own), [policy()])
