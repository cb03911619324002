"""The three pfslayout.io/v1alpha1 kinds, as OpenAPI v3 schemas with CEL rules.

Field names here are the contract with the operator (`operator/src/pfslayout/`), the chart and the docs.
Run `python crds/generate.py` after an edit; it rewrites `crds/*.yaml`, the chart's copies and
`docs/crd-reference.md`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypedDict

from schema_parts import (
    DNS_LABEL,
    LAYOUTS,
    MAX_SERVERS,
    Schema,
    array,
    boolean,
    conditions,
    immutable,
    integer,
    layout,
    layout_fields,
    layout_rules,
    node_selector,
    number,
    obj,
    object_ref,
    observed_generation,
    quantity,
    resources,
    rule,
    string,
    strip_size,
    tolerations,
)

GROUP = "pfslayout.io"
VERSION = "v1alpha1"

# No image field has a schema default: an object that names no image gets the operator's, which the chart
# sets once for a release (values `images.orangefs`, `images.mpi`; operator settings PFSLAYOUT_ORANGEFS_IMAGE,
# PFSLAYOUT_MPI_IMAGE; pfslayout.images holds their defaults). A schema default would be stored in every
# object at creation and outlive a change of the release's images.
def _image(description: str) -> Schema:
    return string(description, minLength=1, maxLength=512, pattern=r"^[^\s]+$")


PULL_POLICY = string("When the kubelet pulls the image.", enum=["Always", "IfNotPresent", "Never"],
                     default="IfNotPresent")


# ---------------------------------------------------------------------------------------------------
# OrangeFSCluster
# ---------------------------------------------------------------------------------------------------

def orangefs_cluster_spec() -> Schema:
    servers = obj(
        "The OrangeFS server pods (a StatefulSet `<name>-server` behind the headless Service "
        "`<name>-server`). Every server stores data; `metadataCount` of them also store metadata.", {
            "count": integer("Number of OrangeFS servers (n in the cost model). Scaling up adds servers "
                             "to `fs.conf`; scaling down is reported in the `Ready` condition when data "
                             "would be lost.", minimum=1, maximum=MAX_SERVERS, default=4),
            "metadataCount": integer("How many servers (the first ordinals) also serve metadata; omitted "
                                     "means all. File stuffing is enabled only when every server serves "
                                     "metadata.", minimum=1, maximum=MAX_SERVERS),
            "resources": resources("CPU and memory for each server container."),
            "spread": string("How the servers spread over nodes: pod anti-affinity between this cluster's "
                             "server pods on `kubernetes.io/hostname`. `Required`: each server on a node of "
                             "its own; servers that find none stay Pending (the `ServersSpread` condition "
                             "says so). `Preferred`: the scheduler spreads them as far as it can and lets "
                             "them share nodes. `Auto`: `Required` when at least `count` nodes are eligible "
                             "(matching `nodeSelector`, not cordoned, every NoSchedule/NoExecute taint "
                             "tolerated by `tolerations`), else `Preferred`. Auto is resolved when the "
                             "servers are first created and again only when `count`, `spread`, "
                             "`nodeSelector` or `tolerations` change, so a node lost later restarts no "
                             "server; `status.placement.spread` shows the outcome.",
                             enum=["Auto", "Required", "Preferred"], default="Auto"),
        }, rules=[rule("!has(self.metadataCount) || self.metadataCount <= self.count",
                       "metadataCount must not exceed count", ".metadataCount")], default={})

    storage = obj(
        "Where each server keeps its data and metadata (Trove storage space). Fixed when the cluster is "
        "created.", {
            "type": string("`pvc`: a PersistentVolumeClaim per server from a volumeClaimTemplate; "
                           "`hostPath`: a directory on the node (`hostPath.path/<pod name>`), held by a "
                           "PersistentVolume `pfslayout.<namespace>.<name>.server-<i>` per server that keeps "
                           "the server on that node; `emptyDir`: scratch space lost with the pod (tests, "
                           "demos).",
                           enum=["pvc", "hostPath", "emptyDir"], default="pvc",
                           **{"x-kubernetes-validations": [immutable("storage.type")]}),
            "size": quantity("Capacity per server: the PVC request for `pvc`, the `sizeLimit` for "
                             "`emptyDir`; forbidden for `hostPath`. Required for `pvc`. At least 64Mi."),
            "storageClassName": string("StorageClass of the PVCs (`pvc` only); omitted uses the cluster "
                                       "default.", maxLength=253, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"),
            "hostPath": obj("Node directory for `hostPath` storage (required then, forbidden otherwise).", {
                "path": string("Absolute directory on the node; each server uses `<path>/<pod name>`.",
                               minLength=2, maxLength=4096, pattern=r"^/[^\x00]*[^/\x00]$"),
            }, required=["path"]),
            "medium": string("`emptyDir` medium: empty for node disk, `Memory` for tmpfs.",
                             enum=["", "Memory"]),
        }, rules=[
            rule("self.type == 'pvc' ? has(self.size) : true", "size is required for storage type pvc",
                 ".size"),
            rule("self.type == 'hostPath' ? !has(self.size) : true",
                 "size is forbidden for storage type hostPath (the node directory is not sized)", ".size"),
            rule("!has(self.size) || (isQuantity(string(self.size)) && "
                 "quantity(string(self.size)).compareTo(quantity('64Mi')) >= 0)",
                 "size must be a quantity of at least 64Mi, e.g. 10Gi", ".size"),
            rule("self.type == 'hostPath' ? has(self.hostPath) : !has(self.hostPath)",
                 "hostPath is required for storage type hostPath and forbidden otherwise", ".hostPath"),
            rule("self.type == 'pvc' || !has(self.storageClassName)",
                 "storageClassName is only valid with storage type pvc", ".storageClassName"),
            rule("self.type == 'emptyDir' || !has(self.medium)",
                 "medium is only valid with storage type emptyDir", ".medium"),
            rule("has(self.size) == has(oldSelf.size) && (!has(self.size) || self.size == oldSelf.size)",
                 "storage.size is immutable (StatefulSet volume claims cannot change); create a new "
                 "OrangeFSCluster instead", ".size"),
            rule("has(self.storageClassName) == has(oldSelf.storageClassName) && "
                 "(!has(self.storageClassName) || self.storageClassName == oldSelf.storageClassName)",
                 "storage.storageClassName is immutable", ".storageClassName"),
            rule("!has(oldSelf.hostPath) || (has(self.hostPath) && self.hostPath.path == oldSelf.hostPath.path)",
                 "storage.hostPath.path is immutable: the data lives there", ".hostPath"),
        ])

    fs = obj("The file system's identity, written into `fs.conf` and every client's `pvfs2tab`, and its "
             "`fs.conf` options.", {
        "name": string("File-system name (`Name` in `fs.conf`, the last part of `tcp://host:port/<name>`).",
                       minLength=1, maxLength=32, pattern=r"^[a-z][a-z0-9_-]*$", default="orangefs",
                       **{"x-kubernetes-validations": [immutable("fs.name")]}),
        "id": integer("File-system ID (`ID` in `fs.conf`); omitted derives a fixed one from the object's "
                      "namespace and name, shown in `status.fsId`. Cannot be set or changed later.",
                      minimum=1, maximum=2147483647),
        "fileStuffing": {"type": "boolean", "description": "`FileStuffing` in `fs.conf`: a new file stays on "
                         "one server until it grows past a strip. Omitted: on when every server holds "
                         "metadata (genconfig's rule). Stuffed files created through directory hints start "
                         "unstriped, so layout experiments turn it off."},
        "syncData": {"type": "boolean", "default": True,
                     "description": "`TroveSyncData` in `fs.conf`: every write is on the server's disk, its "
                     "datafile's new size included, before it is acknowledged. Off (faster small writes) a "
                     "server that is killed or loses its node serves the bytes it acknowledged last as "
                     "zeros after its restart; only for throwaway data."},
    }, rules=[rule("has(self.id) == has(oldSelf.id) && (!has(self.id) || self.id == oldSelf.id)",
                   "fs.id is immutable and cannot be added or removed after creation", ".id")], default={})

    ports = obj("Network ports of the servers.", {
        "tcp": integer("BMI TCP port every server listens on and every alias URL names.",
                       minimum=1024, maximum=65535, default=3334,
                       **{"x-kubernetes-validations": [immutable("ports.tcp")]}),
    }, default={})

    distribution = obj(
        "Default distribution for files created where no directory hint applies (`<Distribution>` in "
        "`fs.conf`). `varstrip_dist` is not offered here: its `strips` parameter is a string, which "
        "`fs.conf` cannot hold; use a LayoutPolicy rule instead.", {
            "name": string("`simple_stripe` (round robin, the 1-DH default), `twod_stripe` (groups of "
                           "servers, 2-D), or `basic_dist` (one datafile per file, 1-DV).",
                           enum=["simple_stripe", "twod_stripe", "basic_dist"], default="simple_stripe"),
            "stripSize": strip_size("`strip_size` of `simple_stripe`/`twod_stripe`."),
            "numGroups": integer("`num_groups` of `twod_stripe` (required for it, forbidden otherwise); "
                                 "must divide `servers.count`.", minimum=1, maximum=MAX_SERVERS),
            "groupStripFactor": integer("`group_strip_factor` of `twod_stripe`: strips written to one "
                                        "group before moving to the next.", minimum=1, maximum=65536),
            "numDatafiles": integer("`DefaultNumDFiles`: datafiles per new file; 0 means one per server.",
                                    minimum=0, maximum=MAX_SERVERS, default=0),
        }, rules=[
            rule("self.name == 'twod_stripe' ? has(self.numGroups) : !has(self.numGroups)",
                 "numGroups is required for twod_stripe and forbidden for other distributions", ".numGroups"),
            rule("self.name == 'twod_stripe' || !has(self.groupStripFactor)",
                 "groupStripFactor is only valid for twod_stripe", ".groupStripFactor"),
        ], default={})

    client = obj("The client toolbox Deployment `<name>-client` (OrangeFS admin tools, `pvfs2tab` "
                 "mounted) used for directory hints and inspection.", {
        "enabled": boolean("Run the toolbox.", default=True),
        "image": _image("Toolbox image; omitted uses `spec.image`."),
        "replicas": integer("Toolbox pods.", minimum=0, maximum=8, default=1),
        "mountPath": string("Mount point clients see in `pvfs2tab` (`/mnt/orangefs` means "
                            "`/mnt/orangefs/dir` resolves to `/dir` in the file system; no kernel mount "
                            "is needed with libpvfs2).", minLength=2, maxLength=1024,
                            pattern=r"^/[^\x00\s]*[^/\x00\s]$", default="/mnt/orangefs"),
        "resources": resources("CPU and memory for the toolbox container."),
    }, default={})

    calibration = obj("Automatic cost-model calibration.", {
        "auto": boolean("Create a CostCalibration `<name>-calibration` when the cluster first becomes "
                        "Ready.", default=True),
        "profile": string("Grid of the automatic calibration (`pfslayout.calibration.PROFILES`, "
                          "`pfslayout calibrate --design --profile`): `quick` (every configuration at 8 KiB, "
                          "1 MiB and 4 MiB, 8 requests per rank, 5 repetitions: minutes; finds the write and "
                          "shared-core terms where the platform shows them) or `standard` (the CostCalibration "
                          "default grid: 4 KiB to 4 MiB, the full factorial, 16 requests per rank, 5 repetitions: "
                          "twice the bytes).",
                          enum=["quick", "standard"], default="quick"),
    }, default={})

    return obj("Desired OrangeFS testbed.", {
        "image": _image("OrangeFS image for the servers (and the toolbox unless `client.image` is set); "
                        "omitted uses the operator's (the chart's `images.orangefs`)."),
        "imagePullPolicy": PULL_POLICY,
        "servers": servers,
        "storage": storage,
        "fs": fs,
        "ports": ports,
        "distribution": distribution,
        "reclaimPolicy": string("What happens to server storage when the OrangeFSCluster is deleted: "
                                "`Retain` keeps PVCs and hostPath data, `Delete` removes them.",
                                enum=["Retain", "Delete"], default="Retain"),
        "client": client,
        "calibration": calibration,
        "nodeSelector": node_selector(),
        "tolerations": tolerations(),
    }, required=["storage"], rules=[
        rule("!has(self.distribution.numGroups) || self.servers.count % self.distribution.numGroups == 0",
             "distribution.numGroups must divide servers.count (e.g. 2 groups of 2 with 4 servers)",
             ".distribution.numGroups"),
        rule("self.distribution.numDatafiles <= self.servers.count",
             "distribution.numDatafiles must not exceed servers.count (0 means all servers)",
             ".distribution.numDatafiles"),
    ])


def orangefs_cluster_status() -> Schema:
    server = obj("One server as clients reach it.", {
        "ordinal": integer("StatefulSet ordinal.", minimum=0),
        "alias": string("OrangeFS alias (`Alias` in `fs.conf`, the `-a` argument of `pvfs2-server`)."),
        "url": string("BMI address, `tcp://<pod>.<service>.<namespace>.svc.<cluster domain>:<port>` (cluster domain "
                      "from the operator's `PFSLAYOUT_CLUSTER_DOMAIN`, default `cluster.local`)."),
        "metadata": boolean("Whether this server also serves metadata."),
        "ready": boolean("Whether the server pod is Ready."),
    })
    return obj("Observed state, written by the operator.", {
        "phase": string("Coarse state: `Pending`, `Provisioning`, `Ready`, `Degraded`, `Failed` or "
                        "`Terminating`.",
                        enum=["Pending", "Provisioning", "Ready", "Degraded", "Failed", "Terminating"]),
        "servers": integer("Servers the operator is running (spec.servers.count once reconciled).",
                           minimum=0),
        "readyServers": integer("Server pods that are Ready.", minimum=0),
        "fsId": integer("The file-system ID in `fs.conf`.", minimum=1, maximum=2147483647),
        "endpoints": obj("How clients reach the file system.", {
            "uri": string("`pvfs2tab` config-server list: `tcp://<server>:<port>/<fs name>` entries "
                          "joined by commas."),
            "mountPath": string("The mount point in `pvfs2tab`."),
            "service": string("Headless Service giving each server pod its DNS name."),
            "fsConfConfigMap": string("ConfigMap holding `fs.conf`."),
            "pvfs2tabConfigMap": string("ConfigMap holding `pvfs2tab` (mount it and set `PVFS2TAB_FILE`)."),
            "servers": array("Every server's alias and address.", server, maxItems=MAX_SERVERS),
        }),
        "placement": obj("Where the servers run (`spec.servers.spread`; the `ServersSpread` condition says "
                         "whether that is what was asked for).", {
            "spread": string("The spreading in force, `Required` or `Preferred` (`Auto` resolved). Absent: "
                             "the servers are not spread, because an operator older than `servers.spread` "
                             "created them (until `count`, `spread`, `nodeSelector` or `tolerations` "
                             "change; never for its hostPath storage, which a moved server would leave "
                             "behind)."),
            "eligibleNodes": integer("Nodes the servers may use: matching `nodeSelector`, not cordoned, every "
                                     "NoSchedule/NoExecute taint tolerated.", minimum=0),
            "servers": array("Each server pod and its node.", obj("One server pod.", {
                "name": string("Pod name (the server's alias)."),
                "node": string("Node the pod runs on (`spec.nodeName`); empty while it is Pending."),
                "ready": boolean("Whether the server pod is Ready."),
            }), maxItems=MAX_SERVERS),
        }),
        "calibrationRef": obj("The CostCalibration whose parameters are current for this cluster: the most "
                              "recently completed Ready one, else the automatic one while it runs.", {
            "name": string("Name of the CostCalibration."),
            "configMapName": string("Its ConfigMap with `params.json` (set once it has published)."),
            "completionTime": string("When its parameters were published.", format="date-time"),
        }),
        "conditions": conditions() | {"description": "Standard conditions, one per `type`: `Ready` (the spec is "
                                      "applied and every server Ready), `ServersAvailable` (every running server "
                                      "Ready), `NodesReady` (False with `NodeNotReady`, and a Warning Event, "
                                      "naming each node under a server that is not Ready and the servers on it), "
                                      "`SpecApplied` (reason `Applied`, else `ScaleDownRefused`, "
                                      "`ImmutableFieldChanged` or `InvalidSpec`), `ServersSpread` (`Distinct` or "
                                      "`SharedNodes`; False with `NotEnoughNodes` or `Unschedulable`, and a Warning "
                                      "Event, when `servers.spread` Required leaves a server without a node of its "
                                      "own)."},
        "observedGeneration": observed_generation(),
    })


# ---------------------------------------------------------------------------------------------------
# CostCalibration
# ---------------------------------------------------------------------------------------------------

def cost_calibration_spec() -> Schema:
    grid = obj("The probe grid (`pfslayout.calibration.design_grid`): probe ranks spread over `nodes` client "
               "nodes, every layout (1-DH, 1-DV, 2-D over each useful g) and process count the server count "
               "allows, crossed with request sizes, operations and patterns; each cell measured `repetitions` "
               "times. The design is checked to identify all five parameters before any Job starts.", {
        "nodes": integer("Client nodes the probe ranks are spread over (m = ranks on one node).", minimum=1,
                         maximum=64, default=2),
        "ranksPerNode": integer("Most probe ranks on one client node.", minimum=1, maximum=64, default=2),
        "requestSizes": array("Request sizes s in bytes (at least two: one size cannot separate the "
                              "per-request and per-byte terms).", integer("Bytes per request.", format="int64",
                              minimum=512, maximum=1 << 30), minItems=2, maxItems=24,
                              default=[4096, 32768, 65536, 1048576, 4194304], **{"x-kubernetes-list-type": "set"}),
        "operations": array("Operations measured. With both, the fit gives writes their own e and β when "
                            "the measurements separate them (`params.e_write`, `params.beta_write`).",
                            string("An operation.", enum=["write", "read"]), minItems=1, maxItems=2,
                            default=["write", "read"], **{"x-kubernetes-list-type": "set"}),
        "patterns": array("Access patterns probed (α is fitted separately for each).",
                          string("An access pattern.", enum=["sequential", "random"]), minItems=1,
                          maxItems=2, default=["sequential", "random"], **{"x-kubernetes-list-type": "set"}),
        "requestsPerRank": integer("Requests each rank issues per measurement.", minimum=1, maximum=65536,
                                   default=16),
        "minBytesPerRank": integer("Raises requestsPerRank for small request sizes so that each rank moves at "
                                   "least this many bytes per measurement (4194304 recommended, the profiles "
                                   "set it): a few small requests last milliseconds and measure mostly noise. "
                                   "Unset or 0: requestsPerRank at every size.", minimum=0, maximum=1 << 30),
        "repetitions": integer("Measurements per grid cell (the papers averaged many; [000] makes it "
                               "configurable).", minimum=1, maximum=10000, default=5),
        "maxConfigs": integer("Measure only this many configurations, chosen greedily for D-optimality, "
                              "instead of the full factorial; at least 5 (five parameters).", minimum=5,
                              maximum=4096),
        "baseline": boolean("Also measure every configuration on the file system's default layout (no hints: "
                            "the cluster's distribution, simple_stripe with 64 KiB strips, on every server), "
                            "in a `default` directory of its own. Never fitted and never chosen: a report "
                            "compares the model's picks with it (what a user gains over doing nothing). "
                            "Adds one cell per configuration.", default=False),
    }, default={})
    return obj("Desired calibration run.", {
        "clusterRef": object_ref("The OrangeFSCluster to calibrate.", "OrangeFSCluster") | {
            "x-kubernetes-validations": [rule("self == oldSelf", "clusterRef is immutable; create a new "
                                              "CostCalibration for another cluster")]},
        "probeImage": _image("Image with `pfsprobe` and MPICH (ROMIO with pvfs2); omitted uses the operator's "
                             "(the chart's `images.mpi`)."),
        "imagePullPolicy": PULL_POLICY,
        "grid": grid,
        "fit": obj("How the parameters are fitted from the measurements (non-negative least squares).", {
            "variant": string("Cost-model variant fitted: `corrected` (max form) or `printed` ([003] Table 2 "
                              "as printed).", enum=["corrected", "printed"], default="corrected"),
            "weighting": string("`relative`: minimise relative errors (small and large requests count "
                                "alike); `absolute`: minimise errors in seconds.",
                                enum=["relative", "absolute"], default="relative"),
            "perServer": boolean("Also fit α and β per server (heterogeneous servers, [002]); they appear in "
                                 "`status.params.servers`.", default=False),
            "minRSquared": number("Fits whose R² in the fit's own weighting (`status.fit.fitRSquared`: of log "
                                  "times with `relative` weighting) is lower set the `Ready` condition to False "
                                  "with reason `PoorFit` (parameters are still published). Default 0.7, from "
                                  "measured fits: 0.98-0.995 on a real node, 0.78-0.92 where clients and servers "
                                  "share one machine's cores (kind on a laptop; docs/operator.md).",
                                  minimum=0, maximum=1, default=0.7),
        }, default={}),
        "backend": string("How `pfsprobe` reaches OrangeFS: `pvfs2` (libpvfs2; the probe realises each "
                          "layout per file with an explicit server list, so placement is exact) or `mpiio` "
                          "(ROMIO's `pvfs2:` driver, as MPI-IO applications do; files follow the directory "
                          "hints the operator sets). Per-server probes (`fit.perServer`) always use `mpiio`.",
                          enum=["pvfs2", "mpiio"], default="pvfs2"),
        "batch": obj("How the grid is cut into probe MPIJobs. Jobs probing the same servers at once disturb "
                     "each other's timings, hence one at a time by default.", {
            "cellsPerJob": integer("Most grid cells one probe MPIJob measures.", minimum=1, maximum=4096,
                                   default=64),
            "maxConcurrentJobs": integer("Most probe MPIJobs running at once.", minimum=1, maximum=16,
                                         default=1),
        }, default={}),
        "timeoutSeconds": integer("Deadline of each probe Job (`activeDeadlineSeconds`).", minimum=10,
                                  maximum=86400, default=1800),
        "configMapName": string("ConfigMap the fitted parameters are written to (key `params.json`, the "
                                "`--params` file format); omitted uses `<name>-params`.", maxLength=253,
                                pattern=DNS_LABEL),
        "historyLimit": integer("Completed runs kept in `status.history` (re-calibrate with a spec change or "
                                "the annotation `pfslayout.io/recalibrate`).", minimum=1, maximum=50,
                                default=5),
        "resources": resources("CPU and memory of each probe container. With a CPU limit, "
                               "`grid.ranksPerNode` may not exceed it: oversubscribed ranks measure CPU "
                               "contention, not I/O."),
        "nodeSelector": node_selector() | {"description": "Node labels the probe pods must match; omitted "
                                           "uses the OrangeFSCluster's `nodeSelector`."},
        "tolerations": tolerations() | {"description": "Tolerations of the probe pods; omitted uses the "
                                        "OrangeFSCluster's `tolerations`."},
    }, required=["clusterRef"])


def params_fields(per_server: bool) -> dict[str, Schema]:
    fields = {
        "e": number("Connection set-up time e, seconds.", minimum=0),
        "v": number("Network transfer time per byte v, seconds/byte.", minimum=0),
        "alpha_seq": number("Storage start-up time α for sequential access, seconds.", minimum=0),
        "alpha_rand": number("Storage start-up time α for random access, seconds.", minimum=0),
        "beta": number("Storage read/write time per byte β, seconds/byte (of reads, when `beta_write` is "
                       "set).", minimum=0),
    }
    if not per_server:
        # per-operation terms (issue 13): set only when the fit separated writes from reads
        fields |= {
            "e_write": number("Connection set-up time of a write, seconds; absent: `e` serves both "
                              "operations.", minimum=0),
            "beta_write": number("Storage time per byte of a write, seconds/byte; absent: `beta` serves both "
                                 "operations.", minimum=0),
            # issue 13: set only when the fit found messages costing more with every process of a round
            "e_shared": number("Time every message of a round costs all ranks together, seconds: clients and "
                               "servers share cores (a kind cluster, the performance lab); absent: no such "
                               "cost.", minimum=0),
            # issue 33: set only when the fit found small split writes costing per byte
            "v_small_write": number("Time per byte of all ranks' data that a write split over two servers or "
                                    "more into pieces below OrangeFS's small-I/O limit (16 KiB) also costs, "
                                    "seconds/byte; absent: no such cost.", minimum=0),
            # issue 33: set only when the fit found network and storage overlapping
            "overlap": boolean("True: a request takes the larger of its network time (e, v terms) and its "
                               "storage time (α, β terms), not their sum — the flows pipeline the two; absent: "
                               "the seeds' sum."),
        }
    if per_server:
        fields = {"index": integer("Server ordinal.", minimum=0, maximum=MAX_SERVERS - 1)} | fields
    return fields


def fit_quality() -> Schema:
    return obj("Fit quality (the `fit` block of `pfslayout calibrate --json`).", {
        "rSquared": number("R² of predicted against measured times."),
        "fitRSquared": number("R² in the fit's own weighting, what `spec.fit.minRSquared` judges: of log times "
                              "with `relative` weighting (every cell counts alike, as in the fit), else "
                              "`rSquared`."),
        "rmseSeconds": number("Root-mean-square residual, seconds.", minimum=0),
        "maxRelativeError": number("Largest |measured − predicted| / measured.", minimum=0),
        "medianRelativeError": number("Median |measured − predicted| / measured.", minimum=0),
        "cells": integer("Grid cells measured and fitted.", minimum=0),
        "clientNodes": integer("Distinct nodes the probe jobs' worker pods ran on (status only): the client "
                               "nodes the fit measured. The workers of a job with several nodes spread over "
                               "distinct nodes where the cluster has them.", minimum=0),
        "rank": integer("Rank of the design matrix (5 when every parameter is identified; up to 9 with "
                        "per-operation write terms, `e_shared` and `v_small_write`).", minimum=0),
        "condition": number("Condition number of the column-scaled design matrix (-1: infinite).", minimum=-1),
        "identified": {"type": "object", "description": "Per parameter, whether the grid identifies it and "
                       "the measurements pin it down (false for a poorly determined one).",
                       "additionalProperties": {"type": "boolean"}},
        "poorlyDetermined": array("Parameters the grid identifies but whose standard error is at least half "
                                  "the fitted value: measure more repetitions or requests per rank.",
                                  string("A parameter name.", enum=["e", "v", "alpha_seq", "alpha_rand", "beta",
                                                                    "e_write", "beta_write", "e_shared",
                                                                    "v_small_write"]),
                                  maxItems=9),
        "standardErrors": {"type": "object", "description": "Per parameter, the linearised 1σ standard "
                           "error (same unit as the parameter; absent when not identified).",
                           "additionalProperties": {"type": "number"}},
        "warnings": array("Fit warnings, e.g. a parameter pinned at 0.", string("One warning."),
                          maxItems=32),
        "writes": string("Why writes did or did not get their own e/β (`e_write`, `beta_write`): which "
                         "per-operation forms the fit tried and why it kept or rejected each.", maxLength=1024),
        "sharedCores": string("Why every message of a round was or was not charged for shared cores "
                              "(`e_shared`).", maxLength=1024),
        "overlap": string("Why a request's network and storage times were taken to overlap (`params.overlap`) "
                          "or to add up.", maxLength=1024),
        "smallWrites": string("Why writes split into pieces below the small-I/O limit were or were not charged "
                              "per byte (`v_small_write`).", maxLength=1024),
    })


def cost_calibration_status() -> Schema:
    run_params = obj("The five parameters of that run.", params_fields(False))
    history = obj("One completed run.", {
        "run": integer("Run number.", minimum=1),
        "observedGeneration": integer("Spec generation the run measured.", minimum=0),
        "completionTime": string("When it was published.", format="date-time"),
        "reason": string("Its `Ready` reason (`Fitted`, `PoorFit`, `ProbeFailed`, …)."),
        "params": run_params,
        "rSquared": number("Fit R²."),
        "fitRSquared": number("Fit R² in the fit's own weighting (what `minRSquared` judged)."),
        "medianRelativeError": number("Median relative error of the fit.", minimum=0),
    })
    return obj("Observed state and the fitted cost-model parameters.", {
        "phase": string("`Pending` (waiting for the cluster), `Running` (probing), `Fitting`, `Succeeded` "
                        "or `Failed`.", enum=["Pending", "Running", "Fitting", "Succeeded", "Failed"]),
        "run": integer("The current run: 1 for the first, +1 for every re-calibration.", minimum=0),
        "servers": integer("The OrangeFSCluster's server count the current run measures. When the cluster is "
                           "scaled to another count, the automatic calibration runs again and one a user made "
                           "gets the condition `Stale`.", minimum=1, maximum=MAX_SERVERS),
        "params": obj("Fitted parameters, in the `--params` file format (seconds and bytes).",
                      params_fields(False) | {
                          "servers": array("Per-server overrides (only with `fit.perServer`).",
                                           obj("One server's parameters.", params_fields(True)),
                                           maxItems=MAX_SERVERS),
                      }),
        "fit": fit_quality(),
        "cells": obj("Grid cells of the current run.", {
            "total": integer("Cells planned.", minimum=0),
            "done": integer("Cells measured so far (kept across operator restarts).", minimum=0),
            "progress": string("`done/total`, for `kubectl get cc`."),
        }),
        "jobs": obj("Probe MPIJobs of the current run.", {
            "total": integer("Jobs planned.", minimum=0),
            "succeeded": integer("Jobs finished successfully.", minimum=0),
            "failed": integer("Jobs that failed.", minimum=0),
            "running": integer("Jobs running now.", minimum=0),
        }),
        "configMapName": string("ConfigMap holding `params.json` for the shim and `pfslayout --params`."),
        "measurementsConfigMap": string("ConfigMap holding the current run's raw `pfsprobe/1` documents, one "
                                        "key per probe job (`pfslayout calibrate --measurements` reads them)."),
        "history": array("The last `spec.historyLimit` completed runs, newest last.", history, maxItems=50),
        "startTime": string("When the current run started.", format="date-time"),
        "completionTime": string("When the current run's fit was published.", format="date-time"),
        "conditions": conditions(),
        "observedGeneration": observed_generation(),
    })


# ---------------------------------------------------------------------------------------------------
# LayoutPolicy
# ---------------------------------------------------------------------------------------------------

def label_selector() -> Schema:
    return obj("MPIJobs in this namespace whose labels match get the shim and the policy's directory "
               "rules injected at admission. Omitted matches no MPIJob (directories are still laid out); "
               "`{}` matches every MPIJob in the namespace.", {
        "matchLabels": {"type": "object", "description": "Labels that must all be present with these values.",
                        "additionalProperties": {"type": "string", "maxLength": 63}, "maxProperties": 32},
        "matchExpressions": array("Set-based requirements, all of which must hold.", obj(
            "One requirement.", {
                "key": string("Label key.", minLength=1, maxLength=316),
                "operator": string("`In`, `NotIn`, `Exists` or `DoesNotExist`.",
                                   enum=["In", "NotIn", "Exists", "DoesNotExist"]),
                "values": array("Values for `In`/`NotIn`; empty for `Exists`/`DoesNotExist`.",
                                string("A label value.", maxLength=63), maxItems=32),
            }, required=["key", "operator"], rules=[
                rule("self.operator in ['In', 'NotIn'] ? (has(self.values) && size(self.values) > 0) : "
                     "(!has(self.values) || size(self.values) == 0)",
                     "values must be non-empty for In/NotIn and empty for Exists/DoesNotExist", ".values")]),
            maxItems=16),
    })


def workload() -> Schema:
    return obj("The expected access pattern, in the terms of the planner's workload description (the cost "
               "model's p, m, s and the α choice).", {
        "processes": integer("Concurrent processes p doing I/O.", minimum=1, maximum=65536),
        "procsPerNode": integer("Processes per client node m.", minimum=1, maximum=1024, default=1),
        "requestSize": integer("The request size s in bytes, when there is one (else `requestSizes`).",
                               format="int64", minimum=1, maximum=1 << 34),
        "requestSizes": array("Request-size histogram, when sizes vary (else `requestSize`).", obj(
            "One histogram bin.", {
                "size": integer("Request size in bytes.", format="int64", minimum=1, maximum=1 << 34),
                "weight": number("Relative share of requests of this size.", minimum=0,
                                 exclusiveMinimum=True),
            }, required=["size", "weight"]), minItems=1, maxItems=32,
            **{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["size"]}),
        "readFraction": number("Share of requests that are reads (with calibrated per-operation parameters "
                               "e and β are mixed by it; hybrid replica routing favours read-mostly data).",
                               minimum=0, maximum=1,
                               default=1.0),
        "randomFraction": number("Share of random accesses (costed with α_rand, the rest with α_seq).",
                                 minimum=0, maximum=1, default=0.0),
        "requestsPerProcess": integer("Requests each process issues (scales the predicted totals).",
                                      format="int64", minimum=1, maximum=1 << 40, default=1),
    }, required=["processes"], rules=[
        rule("self.procsPerNode <= self.processes", "procsPerNode must not exceed processes", ".procsPerNode"),
        rule("has(self.requestSize) != has(self.requestSizes)",
             "give exactly one of requestSize and requestSizes", ".requestSize"),
    ])


def replica() -> Schema:
    fields = {"name": string("Replica name; the copy lives in `<path>/.replica-<name>`.", minLength=1,
                             maxLength=40, pattern=DNS_LABEL)} | layout_fields()
    return obj("One replica and its layout.", fields, required=["name", "layout"], rules=layout_rules())


def policy_rule() -> Schema:
    return obj("Layout rule for one directory and everything created under it.", {
        "path": string("Directory inside the file system (as seen under the client mount path), e.g. "
                       "`/ior/shared`; unique within the policy.", minLength=1, maxLength=1024,
                       pattern=r"^/[^\x00]*$",
                       **{"x-kubernetes-validations": [rule(
                           "!self.matches('(^|/)[.][.]?(/|$)') && !self.contains('//')",
                           "path must be absolute and normalised: no '.' or '..' segments, no '//'")]}),
        "mode": string("`explicit` (the given layout), `auto` (the cost model picks from a workload or "
                       "traces), or `hybrid` (a replica set; the shim routes each request to the cheapest "
                       "copy).", enum=["explicit", "auto", "hybrid"]),
        "fileSharing": string("`perProcess`: each rank writes its own files (1-DV = one datafile per file); "
                              "`shared`: ranks share one file (layouts map to strip sizes).",
                              enum=["perProcess", "shared"], default="perProcess"),
        "migrate": boolean("Re-lay out files that already exist under the directory when their layout is not "
                           "the rule's (hints reach new files only): each is copied through libpvfs2 into a "
                           "new file under the current hints, verified (size, checksum, layout) and renamed "
                           "over the original; a failed copy leaves the original intact. At most 50 files per "
                           "hint Job; the rest follow at the next polls.", default=False),
        "explicit": layout("The layout for `mode: explicit` (required then, forbidden otherwise)."),
        "auto": obj("Inputs for `mode: auto` (required then, forbidden otherwise).", {
            "source": string("`workload`: cost the described access pattern; `trace`: cost the "
                             "recorded requests of earlier traced runs (needs `spec.trace.enabled`).",
                             enum=["workload", "trace"], default="workload"),
            "workload": workload(),
            "candidates": array("Layouts considered; for `2-D` every divisor g of the server count is "
                                "tried.", string("A layout.", enum=LAYOUTS), minItems=1, maxItems=3,
                                default=list(LAYOUTS), **{"x-kubernetes-list-type": "set"}),
            "allowHybrid": boolean("When the best two candidates are within `spec.hybridThreshold`, use "
                                   "both as a hybrid replica set instead of one static layout.", default=False),
        }, rules=[rule("self.source == 'workload' ? has(self.workload) : !has(self.workload)",
                       "workload is required when source is workload and forbidden when it is trace",
                       ".workload")]),
        "hybrid": obj("The replica set for `mode: hybrid` (required then, forbidden otherwise).", {
            "replicas": array("2 to 4 copies with distinct layouts.", replica(), minItems=2, maxItems=4,
                              **{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                                 "x-kubernetes-validations": [rule(
                                     "self.all(a, self.exists_one(b, b.layout == a.layout && "
                                     "b.stripSize == a.stripSize && "
                                     "(has(b.groups) ? b.groups : 0) == (has(a.groups) ? a.groups : 0)))",
                                     "replicas must have distinct layouts (layout, groups and stripSize "
                                     "may not all repeat)")]}),
        }, required=["replicas"]),
    }, required=["path", "mode"], rules=[
        rule("self.mode == 'explicit' ? has(self.explicit) : !has(self.explicit)",
             "explicit is required when mode is explicit and forbidden otherwise", ".explicit"),
        rule("self.mode == 'auto' ? has(self.auto) : !has(self.auto)",
             "auto is required when mode is auto and forbidden otherwise", ".auto"),
        rule("self.mode == 'hybrid' ? has(self.hybrid) : !has(self.hybrid)",
             "hybrid is required when mode is hybrid and forbidden otherwise", ".hybrid"),
    ])


def layout_policy_spec() -> Schema:
    return obj("Desired per-directory layouts and MPIJob injection.", {
        "clusterRef": object_ref("The OrangeFSCluster whose directories this policy lays out.",
                                 "OrangeFSCluster") | {"x-kubernetes-validations": [rule(
                                     "self == oldSelf", "clusterRef is immutable; create a new LayoutPolicy")]},
        "calibrationRef": object_ref("CostCalibration whose parameters the cost model uses; omitted uses "
                                     "the cluster's automatic calibration, else the seeds' Ethernet "
                                     "values ([003] Table 3).", "CostCalibration"),
        "selector": label_selector(),
        "rules": array("Directory rules; paths are unique, the longest matching prefix wins for the shim.",
                       policy_rule(), minItems=1, maxItems=32,
                       **{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["path"]}),
        "hybridThreshold": number("δ: a static layout is chosen when the runner-up's predicted cost exceeds "
                                  "the best by at least this fraction; below it an `auto` rule with "
                                  "`allowHybrid` becomes a replica set (docs/seeds.md §6 B3).", minimum=0,
                                  maximum=10, default=0.1),
        "costModel": obj("Which variant of the [003] Table 2 cost model to evaluate.", {
            "variant": string("`corrected`: the max form, consistent with the serial-count rule; `printed`: "
                              "the table as printed (reproduces the papers).",
                              enum=["corrected", "printed"], default="corrected"),
        }, default={}),
        "shim": obj("The cost-aware MPI-IO shim injected into matching MPIJobs.", {
            "enabled": boolean("Inject `libpfsshim.so` (LD_PRELOAD) and its config.", default=True),
            "image": _image("Image whose init container copies `libpfsshim.so` into the job's pods; omitted "
                            "uses the operator's (the chart's `images.mpi`)."),
            "imagePullPolicy": PULL_POLICY,
            "routePaths": boolean("Route the job's plain MPI-IO paths under the cluster's mount path "
                                  "(`spec.client.mountPath`, e.g. `/mnt/orangefs/run1/f`) through ROMIO's pvfs2 "
                                  "driver, as if the program had written `pvfs2:/mnt/orangefs/run1/f`: an unmodified "
                                  "program reaches OrangeFS without a kernel mount. Paths with a ROMIO prefix and "
                                  "paths elsewhere are left as written.", default=False),
        }, default={}),
        "trace": obj("Per-rank request tracing by the shim (input for `auto` rules with `source: trace`).", {
            "enabled": boolean("Record traces.", default=False),
            "path": string("Directory inside the file system where the shim writes each job's per-rank traces, "
                           "through MPI-IO (`<path>/<namespace>/<job>.rank-NNNNNN.pfstrace`); the operator "
                           "creates `<path>/<namespace>`.", minLength=2, maxLength=1024,
                           pattern=r"^/[^\x00]*$", default="/.pfslayout/traces"),
            "maxRecordsPerRank": integer("Records kept per rank; later requests are counted, not stored.",
                                         format="int64", minimum=1, maximum=1 << 30, default=1 << 20),
            "replan": boolean("Re-plan `auto` rules with `source: trace` when a traced MPIJob matching "
                              "`selector` succeeds.", default=True),
            "replanThreshold": number("Hysteresis of the learning loop: a rule switches to the layout a new "
                                      "trace favours only when the current layout would cost more than "
                                      "(1 + this) times as much for that trace.", minimum=0, maximum=10,
                                      default=0.1),
            "recalibrateAbove": number("Re-run the calibration the policy's parameters come from when the "
                                       "model's I/O time for a traced job's requests is off by more than this "
                                       "(|predicted / measured − 1|, e.g. 0.5 = 50%) for `recalibrateAfter` "
                                       "consecutive judged jobs. Unset: the error is reported, nothing re-run.",
                                       exclusiveMinimum=True, minimum=0, maximum=100),
            "recalibrateAfter": integer("Consecutive traced jobs above `recalibrateAbove` that trigger the "
                                        "recalibration.", minimum=1, maximum=1000, default=3),
            "retain": obj("How many traced runs stay in `<path>/<namespace>` (a run: one job's rank traces and "
                          "stats files). The learning loop's collector deletes the others: beyond the newest "
                          "`runs`, and older than `maxAge` when set.", {
                              "runs": integer("Runs kept, the newest by their files' modification time (the one "
                                              "being collected always stays).", minimum=0, maximum=100000,
                                              default=20),
                              "maxAge": string("Runs older than this are deleted too, e.g. `72h`, `7d` or "
                                               "`1d12h` (units d, h, m, s). Unset: no age limit.",
                                               pattern=r"^([0-9]+[dhms])+$", maxLength=32),
                          }, default={}),
        }, default={}),
    }, required=["clusterRef", "rules"], rules=[
        rule("!(self.trace.enabled && self.trace.replan && has(self.selector)) || self.trace.retain.runs >= 1",
             "trace.retain.runs must be at least 1 while the learning loop reads traces (trace.enabled, "
             "trace.replan and a selector): it would delete the run it learns from", ".trace.retain.runs"),
        rule("!self.rules.exists(r, r.mode == 'auto' && has(r.auto) && r.auto.source == 'trace') || "
             "self.trace.enabled",
             "trace.enabled must be true when a rule uses auto.source: trace", ".trace.enabled"),
        rule("!self.rules.exists(r, r.mode == 'auto' && has(r.auto) && r.auto.source == 'trace') || "
             "has(self.selector)",
             "selector is required when a rule uses auto.source: trace: it names the MPIJobs whose traces the "
             "rule learns from (e.g. matchLabels: {app: ior})", ".selector"),
    ])


def chosen_layout() -> Schema:
    fields = layout_fields()
    fields["stripSize"] = {k: v for k, v in fields["stripSize"].items()
                           if k not in ("default", "x-kubernetes-validations")}
    return obj("A layout the operator applied.", fields | {
        "name": string("Replica name (hybrid only)."),
        "slots": integer("Hybrid, files per process, a copy of fewer datafiles than servers: its files spread "
                         "over this many pinned directories `.replica-<name>/slot-<j>` (layout LIST over "
                         "servers j·d to (j+1)·d − 1, d = the copy's datafiles), the slot given by the number "
                         "in the file's name, instead of OrangeFS's random start per file.", minimum=2,
                         maximum=MAX_SERVERS),
    })


def layout_policy_status() -> Schema:
    candidate = obj("One candidate the cost model evaluated.", {
        "layout": string("The layout.", enum=LAYOUTS),
        "groups": integer("g for `2-D`.", minimum=1),
        "predictedSeconds": number("Predicted total cost of the workload or trace, seconds.", minimum=0),
        "networkSeconds": number("Its network part, T_e + T_x, seconds.", minimum=0),
        "storageSeconds": number("Its storage part, T_s + T_rw, seconds.", minimum=0),
    })
    rule_status = obj("What the operator did for one rule.", {
        "path": string("The rule's directory."),
        "mode": string("The rule's mode.", enum=["explicit", "auto", "hybrid"]),
        "decision": string("`static` (one layout) or `hybrid` (a replica set).", enum=["static", "hybrid"]),
        "layout": chosen_layout(),
        "replicas": array("The replica set when `decision` is `hybrid`.", chosen_layout(), maxItems=4),
        "candidates": array("Every candidate's predicted cost, cheapest first.", candidate,
                            maxItems=MAX_SERVERS + 2),
        "hints": {"type": "object", "description": "OrangeFS directory hints applied, e.g. "
                  "`user.pvfs2.num_dfiles: \"1\"`.", "additionalProperties": {"type": "string"}},
        "margin": number("(runner-up − best) / best predicted cost; compared with `spec.hybridThreshold`."),
        "applied": boolean("Whether the hints are set on the directory (checked after setting)."),
        "appliedAt": string("When the hints were last verified on the file system.", format="date-time"),
        "datafiles": integer("Datafiles of a file created in the directory after the hints were set "
                             "(`pvfs2-viewdist`): what new files really get.", minimum=0),
        "message": string("Why this choice, or what failed."),
        "existingFiles": obj("Files that existed before the layout and do not have it (new files do), as "
                             "the last hint Job found them.", {
            "olderLayout": integer("Files under the directory whose layout differs from a new file's.", minimum=0),
            "scanned": integer("Regular files compared.", minimum=0),
            "files": array("The first of them (paths inside the file system).", string("A file."), maxItems=20),
            "migrated": integer("Files re-laid out by the last Job (`migrate: true`).", minimum=0),
            "migratedTotal": integer("Files re-laid out since the policy was created.", minimum=0),
            "failed": array("Files the last Job could not re-lay out (each kept its layout and content).",
                            obj("One file.", {"path": string("The file."), "reason": string("Why.")}),
                            maxItems=20),
            "incomplete": boolean("Some files could not be read while scanning."),
            "checkedAt": string("When the directory was scanned.", format="date-time"),
            "scanning": obj("A scan in pages under way (a hint Job compares a bounded number of files); the "
                            "figures above are the last complete scan's until it ends.", {
                "after": string("The last file compared, relative to the directory: the next Job resumes after "
                                "it."),
                "olderLayout": integer("Files of an older layout found so far in this scan.", minimum=0),
                "scanned": integer("Files compared so far in this scan.", minimum=0),
                "pages": integer("Hint Jobs this scan has taken so far.", minimum=0),
                "files": array("The first files of an older layout found so far (paths inside the file system).",
                               string("A file."), maxItems=20),
            }),
        }),
        "source": string("Where the decision came from: `spec` (explicit, hybrid), `workload` (the rule's "
                         "workload description) or `trace` (the last traced run).",
                         enum=["spec", "workload", "trace"]),
        "trace": obj("The traced run an `auto` rule with `source: trace` was planned from.", {
            "job": string("The MPIJob whose traces were used."),
            "collectedAt": string("When its traces were collected.", format="date-time"),
            "requests": integer("Its I/O requests under the rule's directory.", minimum=0),
            "ranks": integer("Ranks that made them.", minimum=0),
            "sharing": string("`file-per-process` or `shared`, as the trace shows.",
                              enum=["file-per-process", "shared"]),
            "dominantSize": integer("The most common request size, bytes.", format="int64", minimum=0),
        }),
        "history": array("Decisions of the learning loop for this rule, oldest first (the last 10): each trace "
                         "and what it changed.", obj("One trace and the decision it led to.", {
                             "time": string("When the trace was collected.", format="date-time"),
                             "job": string("The MPIJob traced."),
                             "requests": integer("Requests under the rule's directory.", minimum=0),
                             "ranks": integer("Ranks that made them.", minimum=0),
                             "layout": string("The layout in force after this trace, e.g. `2-D/g2`."),
                             "previous": string("The layout before it."),
                             "predictedSeconds": number("Predicted cost of the trace's requests under `layout`.",
                                                        minimum=0),
                             "bestSeconds": number("Predicted cost under the cheapest allowed layout.", minimum=0),
                             "gain": number("(previous − best) / best for this trace; compared with "
                                            "`spec.trace.replanThreshold`."),
                             "switched": boolean("Whether this trace changed the layout."),
                             "reason": string("Why it switched or kept."),
                         }), maxItems=10),
        "prediction": obj("The model against the last traced job that reached this rule (with "
                          "`spec.trace.enabled`): its I/O time for the job's requests on the layout in place, "
                          "and the time the trace measured.", {
                              "job": string("The MPIJob traced."),
                              "at": string("When its traces were collected.", format="date-time"),
                              "layout": string("The layout in place while it ran, e.g. `2-D/g2`."),
                              "judged": boolean("Whether the job could be judged (a layout of the model in "
                                                "place, enough requests, request times in the trace)."),
                              "reason": string("Why it was not judged."),
                              "predictedSeconds": number("The model's I/O time for the requests (the sum over "
                                                         "requests, every rank's).", minimum=0),
                              "measuredSeconds": number("The trace's: the sum of the requests' durations.",
                                                        minimum=0),
                              "error": number("predicted / measured − 1."),
                          }),
    })
    return obj("Observed state: the chosen layouts and why.", {
        "paramsSource": string("Where the cost parameters came from: `CostCalibration/<name>` or `defaults`."),
        "rules": array("Per-rule outcome, in spec order.", rule_status, maxItems=32),
        "summary": string("Each rule's path and layout, `✓` when applied (`kubectl get lp`)."),
        "appliedRules": string("`applied/total` rules."),
        "hintsDigest": string("Digest of the hints last verified on the file system; an unchanged plan runs "
                              "no Job until the next drift check."),
        "lastCheckTime": string("When the hints were last read back from the file system.", format="date-time"),
        "checks": integer("Hint Jobs run (applies and drift checks).", minimum=0),
        "driftRepairs": integer("Drift checks that found hints changed outside the operator and set them back.",
                                minimum=0),
        "lastDriftRepair": obj("The latest drift repair (also a `DriftRepaired` Warning Event).", {
            "time": string("When the check found and repaired it.", format="date-time"),
            "hints": array("`<directory>: <key>` set back (at most 8).", string("A directory and a key."),
                           maxItems=8),
        }),
        "failedDigest": string("Digest of hints whose Job just failed: retried after a minute, not at every "
                               "poll; empty once hints are verified."),
        "migrationPending": boolean("A migration moved files and left some: the next poll runs another Job."),
        "shimConfigDigest": string("Digest of the shim config last published in ConfigMap `<policy>-shim`: an "
                                   "unchanged config is not read again until the next drift check."),
        "learning": obj("The learning loop (with `spec.trace.enabled`).", {
            "collectedJobs": integer("Succeeded MPIJobs whose traces were collected (or found missing).",
                                     minimum=0),
            "lastJob": string("The MPIJob collected last."),
            "traceDirectory": string("Client path where the shim writes this namespace's traces."),
            "shimConfigMap": string("ConfigMap holding the shim config (`shim.json`) the policy's jobs trace "
                                    "with."),
            "prediction": obj("The model against the traced jobs, over the rules each was judged on.", {
                "job": string("The last judged MPIJob."),
                "at": string("When it was collected.", format="date-time"),
                "error": number("Its error: Σ predicted / Σ measured − 1 over its judged rules."),
                "streak": integer("Consecutive judged jobs with |error| above `spec.trace.recalibrateAbove`.",
                                  minimum=0),
                "recalibrations": integer("Calibrations re-run for it since the policy was created.", minimum=0),
                "lastRecalibration": obj("The last one (also a `Recalibrating` Event).", {
                    "at": string("When.", format="date-time"),
                    "job": string("The job that completed the streak."),
                    "calibration": string("The CostCalibration re-run."),
                    "token": string("The value set on its `pfslayout.io/recalibrate` annotation."),
                    "reason": string("Why."),
                }),
            }),
        }),
        "injectedJobs": integer("MPIJobs the shim was injected into since the policy was created.", minimum=0),
        "lastInjectedJob": string("Name of the most recent MPIJob injected."),
        "recentInjections": array("UIDs of the last MPIJobs counted in `injectedJobs` (at most 64), so a "
                                  "restarted operator counts each job once.", string("An MPIJob's UID."),
                                  maxItems=64),
        "conditions": conditions(),
        "observedGeneration": observed_generation(),
    })


# ---------------------------------------------------------------------------------------------------
# The CRD objects
# ---------------------------------------------------------------------------------------------------

def _ready_column() -> Schema:
    return {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
            "description": "Status of the Ready condition."}


def _age_column() -> Schema:
    return {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}


class Kind(TypedDict):
    """One kind: its names, its schema builders and its `kubectl get` columns."""

    kind: str
    plural: str
    singular: str
    short: list[str]
    file: str
    description: str
    spec: Callable[[], Schema]
    status: Callable[[], Schema]
    columns: list[Schema]


KINDS: list[Kind] = [
    {
        "kind": "OrangeFSCluster", "plural": "orangefsclusters", "singular": "orangefscluster",
        "short": ["ofs"], "file": "orangefsclusters.yaml",
        "description": "An OrangeFS testbed: server StatefulSet, headless Service, generated `fs.conf`, "
                       "client toolbox and a `pvfs2tab` ConfigMap.",
        "spec": orangefs_cluster_spec, "status": orangefs_cluster_status,
        "columns": [
            {"name": "Servers", "type": "integer", "jsonPath": ".spec.servers.count",
             "description": "Desired servers."},
            {"name": "Ready-Servers", "type": "integer", "jsonPath": ".status.readyServers",
             "description": "Servers Ready."},
            {"name": "Phase", "type": "string", "jsonPath": ".status.phase", "description": "Coarse state."},
            {"name": "FS", "type": "string", "jsonPath": ".spec.fs.name", "description": "File-system name."},
            {"name": "Storage", "type": "string", "jsonPath": ".spec.storage.type",
             "description": "Storage type."},
            _ready_column(), _age_column(),
        ],
    },
    {
        "kind": "CostCalibration", "plural": "costcalibrations", "singular": "costcalibration",
        "short": ["cc"], "file": "costcalibrations.yaml",
        "description": "A calibration run: probe Jobs over a grid, then a fit of the cost-model parameters "
                       "(e, v, α_seq, α_rand, β) published in the status and a ConfigMap.",
        "spec": cost_calibration_spec, "status": cost_calibration_status,
        "columns": [
            {"name": "Cluster", "type": "string", "jsonPath": ".spec.clusterRef.name",
             "description": "Calibrated OrangeFSCluster."},
            {"name": "Phase", "type": "string", "jsonPath": ".status.phase", "description": "Run state."},
            {"name": "Cells", "type": "string", "jsonPath": ".status.cells.progress",
             "description": "Cells measured / planned in the current run."},
            {"name": "Run", "type": "integer", "jsonPath": ".status.run", "description": "Current run.",
             "priority": 1},
            {"name": "R2", "type": "number", "jsonPath": ".status.fit.rSquared", "description": "Fit R²."},
            {"name": "Fit-R2", "type": "number", "jsonPath": ".status.fit.fitRSquared",
             "description": "R² in the fit's own weighting (of log times when relative): what minRSquared judges."},
            _ready_column(), _age_column(),
        ],
    },
    {
        "kind": "LayoutPolicy", "plural": "layoutpolicies", "singular": "layoutpolicy",
        "short": ["lp"], "file": "layoutpolicies.yaml",
        "description": "Per-directory layouts (explicit, chosen by the cost model, or hybrid replica sets) "
                       "for an OrangeFSCluster, and shim injection into matching MPIJobs.",
        "spec": layout_policy_spec, "status": layout_policy_status,
        "columns": [
            {"name": "Cluster", "type": "string", "jsonPath": ".spec.clusterRef.name",
             "description": "Target OrangeFSCluster."},
            {"name": "Applied", "type": "string", "jsonPath": ".status.appliedRules",
             "description": "Rules applied / rules."},
            {"name": "Layouts", "type": "string", "jsonPath": ".status.summary",
             "description": "Each rule's path and layout."},
            {"name": "Params", "type": "string", "jsonPath": ".status.paramsSource",
             "description": "Cost parameters used.", "priority": 1},
            {"name": "Injected", "type": "integer", "jsonPath": ".status.injectedJobs",
             "description": "MPIJobs injected.", "priority": 1},
            _ready_column(), _age_column(),
        ],
    },
]


def _materialise(schema: Schema) -> Schema | None:
    """The value the API server would default an absent object to: its children's defaults, recursively."""
    if schema.get("type") != "object" or "properties" not in schema:
        return None
    out = {}
    for name, sub in schema["properties"].items():
        if "default" in sub:
            out[name] = sub["default"]
    return out


def _fill_object_defaults(schema: Schema) -> None:
    # The API server validates a default (CEL rules included) as written, without applying the nested
    # defaults first, so `default: {}` would fail rules such as `self.name == ...`. Spell defaults out.
    for sub in schema.get("properties", {}).values():
        _fill_object_defaults(sub)
    if "items" in schema:
        _fill_object_defaults(schema["items"])
    if schema.get("default") == {}:
        schema["default"] = _materialise(schema)


def crd(kind: Kind) -> Schema:
    schema = obj(kind["description"], {
        "apiVersion": string("Versioned schema of this representation: `pfslayout.io/v1alpha1`."),
        "kind": string(f"`{kind['kind']}`."),
        "metadata": {"type": "object"},  # the API server allows nothing more here
        "spec": kind["spec"](),
        "status": kind["status"](),
    }, required=["spec"])
    _fill_object_defaults(schema)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{kind['plural']}.{GROUP}",
            "labels": {"app.kubernetes.io/part-of": "pfs-layout-operator"},
        },
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"kind": kind["kind"], "listKind": kind["kind"] + "List", "plural": kind["plural"],
                      "singular": kind["singular"], "shortNames": kind["short"], "categories": ["pfslayout"]},
            "versions": [{
                "name": VERSION, "served": True, "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": kind["columns"],
                "schema": {"openAPIV3Schema": schema},
            }],
        },
    }
