"""Every name the operator derives from a custom object's name (pfslayout.naming), pinned byte for byte
for sample owners: an upgraded operator finds the objects the previous one made by these names, so a
change here orphans them. And the default images (pfslayout.images) are the ones the chart writes down as
literals (YAML cannot import them); the CRDs carry none."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from pfslayout import images, naming
from pfslayout.k8s.meta import Owner
from pfslayout.kinds import LAYOUT_POLICY
from pfslayout.kinds.costcalibration.spec import params_configmap, parse_spec
from pfslayout.kinds.layoutpolicy import learn
from pfslayout.kinds.orangefscluster.hintjob import hint_job_name, hints_digest
from pfslayout.orangefs.dirhints import DirectoryHints

ROOT = Path(__file__).resolve().parents[3]


def test_orangefscluster_names() -> None:
    assert naming.server_statefulset("ofs") == "ofs-server"
    assert naming.server_service("ofs") == "ofs-server"
    assert naming.fs_conf_configmap("ofs") == "ofs-fs-conf"
    assert naming.pvfs2tab_configmap("ofs") == "ofs-pvfs2tab"
    assert naming.client_deployment("ofs") == "ofs-client"
    assert naming.auto_calibration("ofs") == "ofs-calibration"
    assert naming.wipe_job("ofs", "ofs-server-2") == "ofs-wipe-2"
    assert naming.wipe_job("ofs", "ofs-server-12") == "ofs-wipe-12"
    assert naming.server_alias("ofs-server", 0) == "ofs-server-0"
    assert naming.server_volume("ns", "ofs", 3) == "pfslayout.ns.ofs.server-3"
    assert naming.server_host("ofs-server", 1, "ofs-server", "ns") == "ofs-server-1.ofs-server.ns.svc.cluster.local"
    assert naming.server_host("s", 0, "s", "ns", "example.org") == "s-0.s.ns.svc.example.org"
    # The FS ID follows the name: a cluster re-created under the same name serves its retained storage.
    assert naming.derive_fs_id("ns", "ofs") == 186024519
    assert naming.derive_fs_id("ns", "lp") == 350346317


def test_paths_and_volumes_shared_by_pods() -> None:
    assert (naming.PVFS2TAB_DIR, naming.PVFS2TAB_KEY, naming.PVFS2TAB_FILE, naming.PVFS2TAB_VOLUME) == \
        ("/etc/pvfs2tab", "pvfs2tab", "/etc/pvfs2tab/pvfs2tab", "pvfs2tab")
    assert naming.SHIM_VOLUMES == ("pfslayout-shim", "pfslayout-shim-config", "pfslayout-pvfs2tab")
    assert naming.SHIM_COPIER == "pfslayout-shim"


def test_hint_job_names() -> None:
    assert naming.hint_job("cal", "0123456789", 3) == "cal-hints-0123456789-3"
    assert naming.hint_job("h" * 40, "0123456789") == "h" * 36 + "-hints-0123456789-0"
    owner = Owner(LAYOUT_POLICY, "lp", "ns", "uid-1")
    dirs = [DirectoryHints("/a", {"user.pvfs2.num_dfiles": "2"})]
    assert hint_job_name(owner, dirs, 4) == f"lp-hints-{hints_digest(dirs)}-4"
    assert hint_job_name(owner, dirs, 4) == "lp-hints-551970df52-4"


def test_costcalibration_names() -> None:
    assert naming.probe_mpijob("cal", 2, 5) == "cal-r2-j5"
    assert naming.probe_mpijob("c" * 40, 2, 5) == "c" * 25 + "-83ba-r2-j5"  # cut, kept unique by a hash
    assert naming.measurements_configmap("cal") == "cal-measurements"
    assert naming.measurements_configmap("m" * 250) == "m" * 235 + "-6ca6-measurements"
    assert naming.params_configmap("cal") == "cal-params"
    spec = parse_spec({"clusterRef": {"name": "ofs"}})
    assert params_configmap("cal", spec) == "cal-params"
    assert params_configmap("cal", parse_spec({"clusterRef": {"name": "ofs"}, "configMapName": "mine"})) == "mine"


def test_layoutpolicy_names() -> None:
    assert naming.shim_configmap("lp") == "lp-shim"
    assert naming.learned_configmap("lp") == "lp-learned"
    assert naming.trace_collector_job("lp", "abcdef0123456789") == "lp-learn-abcdef0123"
    assert naming.trace_collector_job("p" * 40, "abcdef0123456789") == "p" * 30 + "-learn-abcdef0123"
    owner = Owner(LAYOUT_POLICY, "lp", "ns", "uid-1")
    assert learn.collector_name(owner, {"metadata": {"uid": "job-uid"}}) == "lp-learn-ad554803b8"


def test_mpi_operator_names() -> None:
    assert naming.mpijob_launcher("ior") == "ior-launcher"


def _spec_schema(kind: str) -> dict[str, Any]:
    crd = yaml.safe_load((ROOT / "crds" / f"{kind}.yaml").read_text())
    spec: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return spec["properties"]


def test_default_images_are_the_charts_and_the_crds_carry_none() -> None:
    """The chart's values name the three images once (the operator's settings take them from there); a
    CRD default would be stored in every object at creation and outlive the release's images."""
    values = yaml.safe_load((ROOT / "charts" / "pfs-layout-operator" / "values.yaml").read_text())
    assert f"{values['image']['repository']}:{values['image']['tag']}" == images.DEFAULT_OPERATOR_IMAGE
    assert values["images"] == {"orangefs": images.DEFAULT_ORANGEFS_IMAGE, "mpi": images.DEFAULT_MPI_IMAGE}
    assert "default" not in _spec_schema("orangefsclusters")["image"]
    assert "default" not in _spec_schema("costcalibrations")["probeImage"]
    shim = _spec_schema("layoutpolicies")["shim"]
    assert "default" not in shim["properties"]["image"] and "image" not in shim.get("default", {})
    settings_doc = (ROOT / "docs" / "operator.md").read_text()
    for image in (images.DEFAULT_OPERATOR_IMAGE, images.DEFAULT_ORANGEFS_IMAGE, images.DEFAULT_MPI_IMAGE):
        assert f"`{image}`" in settings_doc, image


def test_server_volume_names_are_unique_across_namespaces_and_valid_at_any_length() -> None:
    """PersistentVolumes are cluster-scoped: the name carries the namespace, and no two (namespace, cluster)
    pairs may meet in one (with dashes, `a-b`/`c` and `a`/`b-c` would: one cluster taking over the other's
    volume)."""
    assert naming.server_volume("a-b", "c", 0) != naming.server_volume("a", "b-c", 0)
    long_one = naming.server_volume("n" * 63, "x." + "c" * 240, 12)
    assert len(long_one) == 253 and long_one.endswith(".server-12")
    assert long_one != naming.server_volume("n" * 63, "x." + "c" * 239 + "d", 12)
    subdomain = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
    assert re.match(subdomain, long_one), long_one
    cut_at_a_dot = naming.server_volume("n" * 63, "c" * 160 + "." + "d" * 50, 0)  # the cut ends on the dot
    assert re.match(subdomain, cut_at_a_dot) and len(cut_at_a_dot) <= 253, cut_at_a_dot
