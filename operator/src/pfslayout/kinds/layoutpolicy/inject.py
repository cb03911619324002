"""What an MPIJob selected by a LayoutPolicy gets (pure): the policy that selects it, the refusals, and
the job's new `mpiReplicaSpecs`.

Everything is appended, never replaced: the MPI Operator rewrites `containers[0]` of each template
(hostfile, ssh keys, its own environment), so the injector only adds list entries to it and to the pod.
Launcher and worker templates alike get:

* an init container from `spec.shim.image` that copies the `libpfsshim.so` built for the job's MPI
  (`spec.mpiImplementation`: Open MPI's ABI, or MPICH's for MPICH and Intel MPI) into an emptyDir
  mounted at `/pfslayout/lib` (the user's image needs nothing but that MPI);
* the policy's shim config (ConfigMap `<policy>-shim`, `shim.json`, rendered by the operator from the
  policy and validated by the model the C parser mirrors) at `/etc/pfslayout`, and the cluster's
  `pvfs2tab` at `/etc/pvfs2tab`;
* the environment, on the launcher, in the form each MPI forwards to ranks it starts over ssh (ranks do
  not inherit a pod's environment): MPICH and Intel MPI (Hydra) pass the launcher's environment to every
  rank, so the variables are set there, `LD_PRELOAD` with a full path; Open MPI starts `orted` on each
  worker over ssh with its launch agent's command, so the variables travel as `env VAR=value ... orted`
  in `OMPI_MCA_orte_launch_agent` (and `PRTE_MCA_prte_launch_agent` for Open MPI 5) and `LD_PRELOAD` is
  not set on the launcher itself. Workers get the same variables but `LD_PRELOAD` (their container runs sshd).

A user's own `LD_PRELOAD` (e.g. Darshan's `libdarshan.so`) is kept: the shim is put first, so its
MPI-IO wrappers run first and call the next interposer through PMPI (the order is documented in
docs/shim.md).
"""

from __future__ import annotations

import copy
import re
from typing import Any

from pfslayout import naming
from pfslayout.images import DEFAULT_MPI_IMAGE
from pfslayout.kinds import MPI_IMAGE_UID as MPI_UID

SHIM_DIR = "/pfslayout/lib"
SHIM_LIB = f"{SHIM_DIR}/libpfsshim.so"
# Where the project's MPI image keeps the shim, per MPI ABI: an interposer must be built against the
# MPI it wraps (MPICH and Intel MPI share one ABI; Open MPI's handles are pointers).
IMAGE_SHIM = {"OpenMPI": "/usr/local/lib/openmpi/libpfsshim.so"}
IMAGE_SHIM_DEFAULT = "/usr/local/lib/libpfsshim.so"
CONFIG_DIR = "/etc/pfslayout"
CONFIG_FILE = f"{CONFIG_DIR}/shim.json"
INJECTED = "pfslayout.io/injected"  # annotation: the policy whose shim the job got
# suspend mode: the annotation says why the job stays suspended; the label of the same name ("true")
# lets the policy's retry LIST only those jobs
REFUSED = "pfslayout.io/injection-refused"


# Open MPI starts orted (PRRTE's prted in Open MPI 5) on each worker with its launch agent's command, which is
# how the shim's variables reach the workers' ranks. The agent a user sets in the launcher's environment is
# chained (``env VAR=value ... <their agent>``); one given on mpirun's command line overrides ours, so the
# workers' ranks would run without the shim, silently — such a job is refused.
AGENT_ENV = {"OMPI_MCA_orte_launch_agent": "orted", "PRTE_MCA_prte_launch_agent": "prted"}
# the MCA parameter in any spelling (--mca, -mca, an exported OMPI_MCA_ variable in a shell line) and
# mpirun's own --launch-agent / -launch-agent
AGENT_OPTION = re.compile(r"(?:orte|prte)_launch_agent\b|(?<![\w-])--?launch-agent\b")


class Refusal(Exception):
    """A selected job that must not run without the shim: names the policy, the field and the fix."""

    def __init__(self, message: str, policy: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.policy = policy


def _expression(e: dict[str, Any], labels: dict[str, str]) -> bool:
    key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    return key not in labels  # DoesNotExist


def selects(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """LabelSelector semantics; an absent selector matches nothing, `{}` everything."""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    return all(_expression(e, labels) for e in selector.get("matchExpressions") or [])


def selecting(job: dict[str, Any], policies: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The policy (same namespace, shim enabled) whose selector matches the job; Refusal when several do."""
    labels = (job.get("metadata") or {}).get("labels") or {}
    hits = [p for p in policies if ((p.get("spec") or {}).get("shim") or {}).get("enabled", True)
            and selects((p.get("spec") or {}).get("selector"), labels)]
    if len(hits) > 1:
        names = ", ".join(sorted(p["metadata"]["name"] for p in hits))
        raise Refusal(f"LayoutPolicies {names} all select this MPIJob (spec.selector); narrow their selectors or "
                      "the job's labels so exactly one does")
    return hits[0] if hits else None


def _cond(policy: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in (policy.get("status") or {}).get("conditions") or [] if c.get("type") == kind), {})


def check_policy(policy: dict[str, Any]) -> None:
    """Refusal when the policy cannot give the job what it promises."""
    name = policy["metadata"]["name"]
    if not (policy.get("status") or {}).get("conditions"):
        raise Refusal(f"LayoutPolicy {name} has not been reconciled yet (no status); wait until it reports "
                      "Ready, then resubmit the job")
    ready = _cond(policy, "Ready")
    if ready.get("reason") in ("ClusterNotReady", "RuleInvalid"):
        raise Refusal(f"LayoutPolicy {name} is not usable ({ready.get('reason')}: {ready.get('message')}); fix the "
                      "policy, then resubmit the job")
    cal = _cond(policy, "Calibrated")
    if (policy.get("spec") or {}).get("calibrationRef") and cal.get("reason") == "CalibrationNotFound":
        raise Refusal(f"LayoutPolicy {name}: spec.calibrationRef names a CostCalibration that does not exist "
                      f"({cal.get('message')}); create it or drop calibrationRef")


def _templates(job: dict[str, Any]) -> dict[str, dict[str, Any]]:
    specs = (job.get("spec") or {}).get("mpiReplicaSpecs") or {}
    out = {}
    for role in ("Launcher", "Worker"):
        pod = ((specs.get(role) or {}).get("template") or {}).get("spec") or {}
        if not pod.get("containers"):
            raise Refusal(f"spec.mpiReplicaSpecs.{role}.template.spec.containers is empty: there is no MPI "
                          "container to give the shim; add the launcher and worker containers")
        out[role] = pod
    return out


def _agents(container: dict[str, Any]) -> dict[str, str]:
    """The launch agents the user's launcher container sets (Open MPI), to chain the shim's variables into;
    Refusal for one the injector cannot see or keep: on mpirun's command line, or from a reference."""
    for field in ("command", "args"):
        for word in container.get(field) or []:
            if match := AGENT_OPTION.search(str(word)):
                raise Refusal(
                    f"spec.mpiReplicaSpecs.Launcher.template.spec.containers[0].{field} sets Open MPI's launch "
                    f"agent ({match.group(0)}), which would start the workers' ranks without the shim; remove it "
                    "and set the agent as env OMPI_MCA_orte_launch_agent (PRTE_MCA_prte_launch_agent for Open "
                    "MPI 5) on that container instead: the operator then runs it with the shim's variables")
    agents = {}
    for entry in container.get("env") or []:
        name = entry.get("name")
        if name not in AGENT_ENV:
            continue
        if entry.get("value") is None or not str(entry["value"]).strip():
            raise Refusal(f"spec.mpiReplicaSpecs.Launcher.template.spec.containers[0].env {name} has no value "
                          "(valueFrom or empty): the operator chains the shim into the launch agent and must "
                          "read it; set it as a value")
        agents[name] = str(entry["value"]).strip()
    return agents


def environment(impl: str, job_name: str, user_preload: str | None, agents: dict[str, str] | None = None
                ) -> tuple[list[dict[str, str]], dict[str, str]]:
    """(launcher env entries, the variables every rank must see). ``agents``: the user's own launch agents
    (Open MPI; ``_agents``), which the shim's variables are chained into."""
    # a shim the user preloads already (by hand, from this image) would be a second copy: ours replaces it
    theirs = [p for p in (user_preload or "").replace(" ", ":").split(":") if p and not p.endswith("/libpfsshim.so")]
    preload = ":".join([SHIM_LIB, *theirs])
    ranks = {"LD_PRELOAD": preload, "PFSLAYOUT_SHIM_CONFIG": CONFIG_FILE, "PFSLAYOUT_SHIM_JOB": job_name,
             "PVFS2TAB_FILE": naming.PVFS2TAB_FILE}
    if impl == "OpenMPI":
        # Ranks on workers are children of orted, which mpirun starts over ssh with the launch agent's
        # command: `env VAR=value ... orted` hands orted, and so every rank, the variables. Not
        # OMPI_MCA_mca_base_env_list: Open MPI refuses it beside a user's own `-x` ("does not support
        # mixing these two methods"). PRRTE's name of the same parameter covers Open MPI 5. The launcher
        # gets the variables but LD_PRELOAD (mpirun is no MPI program), for ranks it forks itself.
        # A user's own agent (a wrapper, orted at another path) is kept: `env` runs it with the variables.
        agent = "env " + " ".join(f"{k}={v}" for k, v in ranks.items())
        local = [{"name": k, "value": v} for k, v in ranks.items() if k != "LD_PRELOAD"]
        return [{"name": k, "value": f"{agent} {(agents or {}).get(k, daemon)}"} for k, daemon in AGENT_ENV.items()] \
            + local, ranks
    # Hydra: the workers' proxies reach the launcher by the pod interface's address, not by a DNS name
    # that may not exist yet when they start (they would fail and mpiexec would wait forever).
    hydra = [{"name": "HYDRA_IFACE", "value": "eth0"}] if impl == "MPICH" else []
    return [{"name": k, "value": v} for k, v in ranks.items()] + hydra, ranks


def inject(job: dict[str, Any], policy: dict[str, Any], cluster_name: str, shim_image: str = DEFAULT_MPI_IMAGE
           ) -> dict[str, Any]:
    """The job's `spec.mpiReplicaSpecs` with the shim added (the input is not modified). `shim_image`: the
    shim's image when the policy names none (`spec.shim.image`): the operator's (Settings.mpi_image)."""
    job = copy.deepcopy(job)
    pods = _templates(job)
    name = job["metadata"]["name"]
    shim = (policy.get("spec") or {}).get("shim") or {}
    impl = str((job.get("spec") or {}).get("mpiImplementation") or "OpenMPI")
    for role, pod in pods.items():
        taken = {v.get("name") for v in pod.get("volumes") or []}
        clash = taken & set(naming.SHIM_VOLUMES)
        if clash:
            raise Refusal(f"spec.mpiReplicaSpecs.{role}.template.spec.volumes already has {sorted(clash)[0]}: "
                          "was the job injected already? rename that volume")
        first = pod["containers"][0]
        user_env = {e.get("name"): e.get("value") for e in first.get("env") or []}
        agents = _agents(first) if impl == "OpenMPI" and role == "Launcher" else {}
        launcher_env, ranks = environment(impl, name, user_env.get("LD_PRELOAD"), agents)
        # Workers get the variables but not LD_PRELOAD: their container runs sshd, which must not load an
        # MPI library; ranks get LD_PRELOAD from the launcher through the MPI's own forwarding.
        add_env = launcher_env if role == "Launcher" else [{"name": k, "value": v} for k, v in ranks.items()
                                                            if k != "LD_PRELOAD"]
        first["env"] = [e for e in first.get("env") or [] if e.get("name") not in {x["name"] for x in add_env}] \
            + add_env
        mounts = [{"name": naming.SHIM_VOLUME, "mountPath": SHIM_DIR, "readOnly": True},
                  {"name": naming.SHIM_CONFIG_VOLUME, "mountPath": CONFIG_DIR, "readOnly": True},
                  {"name": naming.SHIM_PVFS2TAB_VOLUME, "mountPath": naming.PVFS2TAB_DIR, "readOnly": True}]
        first["volumeMounts"] = [*(first.get("volumeMounts") or []), *mounts]
        copier = {"name": naming.SHIM_COPIER, "image": shim.get("image") or shim_image,
                  "imagePullPolicy": shim.get("imagePullPolicy") or "IfNotPresent",
                  "command": ["cp", IMAGE_SHIM.get(impl, IMAGE_SHIM_DEFAULT), SHIM_LIB],
                  "volumeMounts": [{"name": naming.SHIM_VOLUME, "mountPath": SHIM_DIR}],
                  # Hardened whatever the user's pod allows: it only copies a file into an emptyDir.
                  "securityContext": {"runAsNonRoot": True, "runAsUser": MPI_UID, "runAsGroup": MPI_UID,
                                      "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                      "capabilities": {"drop": ["ALL"]},
                                      "seccompProfile": {"type": "RuntimeDefault"}}}
        pod["initContainers"] = [*(pod.get("initContainers") or []), copier]
        volumes = [{"name": naming.SHIM_VOLUME, "emptyDir": {}},
                   {"name": naming.SHIM_CONFIG_VOLUME,
                    "configMap": {"name": naming.shim_configmap(policy["metadata"]["name"])}},
                   {"name": naming.SHIM_PVFS2TAB_VOLUME,
                    "configMap": {"name": naming.pvfs2tab_configmap(cluster_name)}}]
        pod["volumes"] = [*(pod.get("volumes") or []), *volumes]
    return dict(job["spec"]["mpiReplicaSpecs"])


def decide(job: dict[str, Any], policies: list[dict[str, Any]], shim_image: str = DEFAULT_MPI_IMAGE
           ) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(the selecting policy, the job's new `mpiReplicaSpecs`), or None when no policy selects the job.
    Refusal (carrying the policy when there is one) when the job must not run as it is."""
    policy = selecting(job, policies)
    if policy is None:
        return None
    name = policy["metadata"]["name"]
    try:
        if not (job.get("metadata") or {}).get("name"):
            raise Refusal("metadata.name is empty (only generateName is set): the shim names each rank's trace "
                          "after the job; give the MPIJob a name")
        check_policy(policy)
        cluster = str(((policy.get("spec") or {}).get("clusterRef") or {}).get("name"))
        replicas = inject(job, policy, cluster, shim_image)
    except Refusal as err:
        text = str(err)
        raise Refusal(text if text.startswith(f"LayoutPolicy {name}") else
                      f"LayoutPolicy {name} selects this MPIJob, but {text}", policy) from None
    return policy, replicas


def suspended(job: dict[str, Any]) -> bool:
    return bool(((job.get("spec") or {}).get("runPolicy") or {}).get("suspend"))


def json_patch(job: dict[str, Any], replicas: dict[str, Any], policy: str, resume: bool) -> list[dict[str, Any]]:
    """RFC 6902 operations: the new templates, the marker annotation, and (suspend mode) the resume."""
    ops: list[dict[str, Any]] = [{"op": "test", "path": "/metadata/resourceVersion",
                                  "value": job["metadata"]["resourceVersion"]},
                                 {"op": "replace", "path": "/spec/mpiReplicaSpecs", "value": replicas}]
    if not (job["metadata"].get("annotations")):
        ops.append({"op": "add", "path": "/metadata/annotations", "value": {INJECTED: policy}})
    else:
        ops.append({"op": "add", "path": f"/metadata/annotations/{INJECTED.replace('/', '~1')}", "value": policy})
    if resume:
        ops.append({"op": "replace", "path": "/spec/runPolicy/suspend", "value": False})
    return ops
