"""`pfslayout render fs-conf|pvfs2tab`: the operator's exact bytes, JSON, and one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pfslayout import naming
from pfslayout.kinds.orangefscluster import meta as c
from pfslayout.kinds.orangefscluster.decisions import decide
from pfslayout.kinds.orangefscluster.desired import desired
from pfslayout.kinds.orangefscluster.spec import parse_spec
from pfslayout.orangefs.fsconf import parse_fs_conf

REPO = Path(__file__).resolve().parents[3]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from pfslayout.cli import main; main()", *args],
                          capture_output=True, text=True, timeout=60, check=False)


def operator_configmaps(name: str, namespace: str, raw_spec: dict) -> tuple[str, str]:
    spec = parse_spec(raw_spec)
    d = desired(c.BuildInputs(spec, c.owner(name, namespace, "uid")), decide(spec, namespace, name, None))
    objs = {o["metadata"]["name"]: o for o in d.objects}
    return objs[f"{name}-fs-conf"]["data"]["fs.conf"], objs[f"{name}-pvfs2tab"]["data"]["pvfs2tab"]


def test_fs_conf_is_what_the_operator_puts_into_its_configmap() -> None:
    result = cli("render", "fs-conf", "--name", "demo", "--servers", "3", "--service", "demo-server",
                 "--namespace", "lab")
    assert result.returncode == 0, result.stderr
    fs_conf, _ = operator_configmaps("demo", "lab", {"servers": {"count": 3}, "storage": {"type": "emptyDir"}})
    assert result.stdout == fs_conf


def test_from_manifest_matches_the_operator_for_the_example_policy() -> None:
    path = REPO / "policies" / "orangefs-small.yaml"
    doc = yaml.safe_load(path.read_text())
    fs_conf, tab = operator_configmaps("small", "team", doc["spec"])
    result = cli("render", "fs-conf", "--from", str(path), "--namespace", "team")
    assert result.returncode == 0, result.stderr
    assert result.stdout == fs_conf
    result = cli("render", "pvfs2tab", "--from", str(path), "--namespace", "team")
    assert result.returncode == 0, result.stderr
    assert result.stdout == tab


def test_json_document() -> None:
    result = cli("render", "fs-conf", "--name", "demo", "--servers", "2", "--namespace", "lab",
                 "--metadata-servers", "1", "--strip-size", "1048576", "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["fsId"] == naming.derive_fs_id("lab", "demo") and doc["fsName"] == "orangefs"
    assert doc["fileStuffing"] is False
    assert [s["metadata"] for s in doc["servers"]] == [True, False]
    assert doc["servers"][0]["url"] == "tcp://demo-server-0.demo-server.lab.svc.cluster.local:3334"
    parsed = parse_fs_conf(doc["fsConf"])
    assert parsed.distribution["params"] == {"strip_size": 1048576}
    assert doc["pvfs2tab"].endswith("/mnt/orangefs pvfs2 defaults,noauto 0 0\n")
    # the lab's options: stuffing forced either way, a log file per server
    on = json.loads(cli("render", "fs-conf", "--name", "demo", "--servers", "2", "--metadata-servers", "1",
                        "--file-stuffing", "--log-file", "/var/log/ofs.log", "--json").stdout)
    assert on["fileStuffing"] is True and parse_fs_conf(on["fsConf"]).filesystem["FileStuffing"] == "yes"
    assert parse_fs_conf(on["fsConf"]).defaults["LogFile"] == "/var/log/ofs.log"
    off = json.loads(cli("render", "fs-conf", "--name", "demo", "--no-file-stuffing", "--json").stdout)
    assert parse_fs_conf(off["fsConf"]).filesystem["FileStuffing"] == "no"
    # writes synced by default; the lab's throwaway servers turn it off
    assert on["syncData"] is True and parse_fs_conf(on["fsConf"]).filesystem["StorageHints.TroveSyncData"] == "yes"
    lab = json.loads(cli("render", "fs-conf", "--name", "demo", "--no-sync-data", "--json").stdout)
    assert lab["syncData"] is False and parse_fs_conf(lab["fsConf"]).filesystem["StorageHints.TroveSyncData"] == "no"


def test_service_and_addresses_change_only_the_urls() -> None:
    other = json.loads(cli("render", "fs-conf", "--name", "d", "--servers", "2", "--service", "ofs",
                           "--namespace", "n", "--cluster-domain", "hpc.local", "--json").stdout)
    assert other["servers"][1]["url"] == "tcp://d-server-1.ofs.n.svc.hpc.local:3334"
    loop = json.loads(cli("render", "fs-conf", "--name", "d", "--address", "127.0.0.1:5000",
                          "--address", "127.0.0.1:5001", "--storage-root", "/tmp/s", "--json").stdout)
    assert [s["url"] for s in loop["servers"]] == ["tcp://127.0.0.1:5000", "tcp://127.0.0.1:5001"]
    assert parse_fs_conf(loop["fsConf"]).server_options["d-server-0"]["DataStorageSpace"] == "/tmp/s/d-server-0/data"


@pytest.mark.parametrize(("args", "needle"), [
    (["--servers", "2"], "--name"),
    (["--name", "x", "--servers", "0"], "spec.servers.count"),
    (["--name", "x", "--servers", "65"], "spec.servers.count"),
    (["--name", "x", "--strip-size", "1000"], "spec.distribution.stripSize"),
    (["--name", "x", "--distribution", "twod_stripe", "--num-groups", "3"], "spec.distribution.numGroups"),
    (["--name", "x", "--fs-name", "bad name"], "spec.fs.name"),
    (["--name", "x", "--servers", "2", "--address", "127.0.0.1:1"], "--address"),
    (["--name", "x", "--address", "nohostport"], "--address"),
    (["--from", "/nonexistent/file.yaml"], "/nonexistent/file.yaml"),
    (["--name", "x", "--log-file", "ofs.log"], "logFile"),
])
def test_bad_input_is_one_line_and_exit_2(args: list[str], needle: str) -> None:
    result = cli("render", "fs-conf", *args)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and needle in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_from_a_file_without_an_orangefscluster(tmp_path: Path) -> None:
    path = tmp_path / "cm.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    result = cli("render", "fs-conf", "--from", str(path))
    assert result.returncode == 2 and "holds no OrangeFSCluster" in result.stderr


def test_manifests_are_the_objects_the_operator_applies() -> None:
    path = REPO / "policies" / "orangefs-small.yaml"
    result = cli("render", "manifests", "--from", str(path), "--namespace", "team", "--uid", "u-1")
    assert result.returncode == 0, result.stderr
    docs = list(yaml.safe_load_all(result.stdout))
    spec = parse_spec(yaml.safe_load(path.read_text())["spec"])
    d = desired(c.BuildInputs(spec, c.owner("small", "team", "u-1")), decide(spec, "team", "small", None))
    assert docs == [json.loads(json.dumps(o)) for o in d.objects]
    listed = json.loads(cli("render", "manifests", "--from", str(path), "--json").stdout)
    assert listed["kind"] == "List" and [o["kind"] for o in listed["items"]] == [
        "ConfigMap", "ConfigMap", "Service", "StatefulSet", "Deployment"]
    assert listed["items"][0]["metadata"]["namespace"] == "default"
