"""Typed OrangeFSCluster spec, mirroring `crds/orangefsclusters.yaml` (the CRD schema is the contract).

The API server already applied the schema's defaults and CEL rules before the operator sees an object;
the same defaults live here so the CLI and the tests build identical specs without a cluster, and the
few cross-field rules are checked again (an operator must not trust a CRD that could be older than it).
Unknown fields are ignored, so a newer CRD does not break an older operator.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from pfslayout.images import DEFAULT_ORANGEFS_IMAGE
from pfslayout.kinds.specs import parse_model
from pfslayout.orangefs import handles


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore", frozen=True)


class Resources(_Model):
    requests: dict[str, int | str] | None = None
    limits: dict[str, int | str] | None = None

    def as_k8s(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.requests:
            out["requests"] = {k: str(v) for k, v in self.requests.items()}
        if self.limits:
            out["limits"] = {k: str(v) for k, v in self.limits.items()}
        return out


# How the servers are spread over nodes (placement.py): `Auto` is resolved to one of the other two.
Spread = Literal["Required", "Preferred"]


class Servers(_Model):
    count: int = Field(4, ge=1, le=handles.MAX_SERVERS)
    metadata_count: int | None = Field(None, alias="metadataCount", ge=1, le=handles.MAX_SERVERS)
    resources: Resources | None = None
    spread: Literal["Auto", "Required", "Preferred"] = "Auto"

    @property
    def effective_metadata_count(self) -> int:
        return self.count if self.metadata_count is None else self.metadata_count


class HostPath(_Model):
    path: str


class Storage(_Model):
    type: Literal["pvc", "hostPath", "emptyDir"] = "pvc"
    size: int | str | None = None
    storage_class_name: str | None = Field(None, alias="storageClassName")
    host_path: HostPath | None = Field(None, alias="hostPath")
    medium: Literal["", "Memory"] | None = None


class FsIdentity(_Model):
    name: str = Field("orangefs", min_length=1, max_length=32, pattern=r"^[a-z][a-z0-9_-]*$")
    id: int | None = Field(None, ge=1, le=2**31 - 1)
    file_stuffing: bool | None = Field(None, alias="fileStuffing")
    sync_data: bool = Field(True, alias="syncData")


class Ports(_Model):
    tcp: int = Field(3334, ge=1024, le=65535)


class DistributionSpec(_Model):
    name: Literal["simple_stripe", "twod_stripe", "basic_dist"] = "simple_stripe"
    strip_size: int = Field(65536, alias="stripSize", ge=4096, le=64 * 1024 * 1024)
    num_groups: int | None = Field(None, alias="numGroups", ge=1, le=handles.MAX_SERVERS)
    group_strip_factor: int | None = Field(None, alias="groupStripFactor", ge=1, le=65536)
    num_datafiles: int = Field(0, alias="numDatafiles", ge=0, le=handles.MAX_SERVERS)


class Client(_Model):
    enabled: bool = True
    image: str | None = None
    replicas: int = Field(1, ge=0, le=8)
    mount_path: str = Field("/mnt/orangefs", alias="mountPath", pattern=r"^/[^\x00\s]*[^/\x00\s]$")
    resources: Resources | None = None


class Toleration(_Model):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = Field(None, alias="tolerationSeconds")

    def as_k8s(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)


class Calibration(_Model):
    auto: bool = True
    profile: Literal["quick", "standard"] = "quick"


class OrangeFSClusterSpec(_Model):
    image: str = DEFAULT_ORANGEFS_IMAGE
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] = Field("IfNotPresent", alias="imagePullPolicy")
    servers: Servers = Servers()
    storage: Storage = Storage(size="1Gi")
    fs: FsIdentity = FsIdentity()
    ports: Ports = Ports()
    distribution: DistributionSpec = DistributionSpec()
    reclaim_policy: Literal["Retain", "Delete"] = Field("Retain", alias="reclaimPolicy")
    client: Client = Client()
    calibration: Calibration = Calibration()
    node_selector: dict[str, str] = Field(default_factory=dict, alias="nodeSelector")
    tolerations: list[Toleration] = Field(default_factory=list)

    @model_validator(mode="after")
    def _cross_field(self) -> OrangeFSClusterSpec:
        # The CRD's CEL rules, repeated: a clear InputError beats a server that refuses its config.
        n = self.servers.count
        if self.servers.effective_metadata_count > n:
            raise ValueError("servers.metadataCount: must not exceed servers.count")
        d = self.distribution
        if d.name == "twod_stripe" and (d.num_groups is None or n % d.num_groups):
            raise ValueError("distribution.numGroups: twod_stripe needs numGroups dividing servers.count")
        if d.name != "twod_stripe" and (d.num_groups is not None or d.group_strip_factor is not None):
            raise ValueError("distribution.numGroups: only twod_stripe takes numGroups/groupStripFactor")
        if d.num_datafiles > n:
            raise ValueError("distribution.numDatafiles: must not exceed servers.count")
        if d.strip_size & (d.strip_size - 1):
            raise ValueError("distribution.stripSize: must be a power of two")
        st = self.storage
        if st.type == "pvc" and st.size is None:
            raise ValueError("storage.size: required for storage type pvc")
        if (st.type == "hostPath") != (st.host_path is not None):
            raise ValueError("storage.hostPath: required for storage type hostPath and forbidden otherwise")
        return self


def parse_spec(raw: dict[str, Any] | None, image: str = DEFAULT_ORANGEFS_IMAGE) -> OrangeFSClusterSpec:
    """Build the typed spec from a CR's `.spec`, turning any violation into one InputError line. `image`
    is the image of a spec that names none: the operator's (Settings.orangefs_image, the chart's
    `images.orangefs`)."""
    if "image" not in (raw or {}):
        raw = {**(raw or {}), "image": image}
    return parse_model(OrangeFSClusterSpec, raw, "OrangeFSCluster")
