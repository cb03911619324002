#!/usr/bin/env python3
"""Writes OCI image archives (an OCI image layout packed as one tar) that `ctr images import`, buildah
(`oci-archive:`) and `docker load` all accept, with no registry and no Docker engine.

  oci.py rootfs ROOTFS_TAR ARCHIVE --name NAME [--entrypoint JSON] [--cmd JSON] [--env K=V]... [--user U]
      one uncompressed layer: the root filesystem tar as it is (mmdebstrap's output, or the pause binary)
  oci.py rootfs-files ARCHIVE --name NAME --file SRC:DEST:MODE ... [same config options]
      the same, with a layer made of the given files only (the pause image)
  oci.py annotate LAYOUT_DIR ARCHIVE --name NAME
      packs an OCI layout directory (`buildah push IMAGE oci:DIR`) as an archive carrying the name
  oci.py check ARCHIVE --name NAME [--entrypoint JSON] [--cmd JSON]
      fails (one line, exit 2) unless the archive is such an image: that name, that Entrypoint and Cmd

Every archive's index.json names its one manifest twice: `io.containerd.image.name` (the full name,
which `ctr images import` uses; without it ctr drops names that lack its import prefix) and
`org.opencontainers.image.ref.name` (the tag, the OCI layout convention). The archive is written
byte-for-byte deterministically (sorted entries, zero mtimes, root ownership) and atomically.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import platform
import shutil
import sys
import tarfile
import tempfile
import time
from pathlib import Path

MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"
LAYER = "application/vnd.oci.image.layer.v1.tar"
ARCH = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
CHUNK = 1 << 20


def die(msg: str) -> None:
    print(f"oci.py: {msg}", file=sys.stderr)
    sys.exit(2)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def split_name(name: str) -> str:
    """The tag of NAME (docker.io/pfslayout/mpi:dev -> dev); `latest` when it has none."""
    last = name.rsplit("/", 1)[-1]
    if "@" in last:
        die(f"{name}: digests are not names")
    return last.split(":", 1)[1] if ":" in last else "latest"


class Blobs:
    """Blobs of a layout being written: files under DIR/blobs/sha256/."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "blobs" / "sha256").mkdir(parents=True, exist_ok=True)

    def add_bytes(self, data: bytes, media_type: str) -> dict:
        digest = hashlib.sha256(data).hexdigest()
        (self.root / "blobs" / "sha256" / digest).write_bytes(data)
        return {"mediaType": media_type, "digest": f"sha256:{digest}", "size": len(data)}

    def add_file(self, path: Path, media_type: str) -> dict:
        digest = sha256_file(path)
        dest = self.root / "blobs" / "sha256" / digest
        try:
            os.link(path, dest)
        except OSError:
            shutil.copyfile(path, dest)
        return {"mediaType": media_type, "digest": f"sha256:{digest}", "size": path.stat().st_size}


def image_config(args: argparse.Namespace, diff_id: str) -> bytes:
    cfg: dict = {"Env": args.env or ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}
    if args.entrypoint:
        cfg["Entrypoint"] = json.loads(args.entrypoint)
    if args.cmd:
        cfg["Cmd"] = json.loads(args.cmd)
    if args.user:
        cfg["User"] = args.user
    if args.workdir:
        cfg["WorkingDir"] = args.workdir
    if args.stop_signal:  # systemd as PID 1 (the kind node) stops on SIGRTMIN+3, not SIGTERM
        cfg["StopSignal"] = args.stop_signal
    config = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "architecture": ARCH,
        "os": "linux",
        "config": cfg,
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created_by": args.history or "pfs-layout-operator images/build/oci.py"}],
    }
    return json.dumps(config, sort_keys=True, separators=(",", ":")).encode()


def write_index(root: Path, manifest: dict, name: str) -> None:
    desc = dict(manifest)
    desc["platform"] = {"architecture": ARCH, "os": "linux"}
    desc["annotations"] = {"io.containerd.image.name": name,
                           "org.opencontainers.image.ref.name": split_name(name)}
    index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [desc]}
    (root / "index.json").write_text(json.dumps(index, sort_keys=True, indent=2) + "\n")
    (root / "oci-layout").write_text('{"imageLayoutVersion":"1.0.0"}\n')


def single_layer_layout(root: Path, layer_tar: Path, args: argparse.Namespace) -> None:
    blobs = Blobs(root)
    layer = blobs.add_file(layer_tar, LAYER)
    config = blobs.add_bytes(image_config(args, layer["digest"]), CONFIG)
    manifest = {"schemaVersion": 2, "mediaType": MANIFEST, "config": config, "layers": [layer]}
    manifest_desc = blobs.add_bytes(json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode(), MANIFEST)
    write_index(root, manifest_desc, args.name)


def pack(root: Path, archive: Path) -> None:
    """ROOT (a layout directory) -> ARCHIVE, deterministic, written to a temporary file then renamed."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{archive.name}.", dir=archive.parent)
    os.close(fd)
    try:
        with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as tar:
            for path in sorted(root.rglob("*"), key=lambda p: p.relative_to(root).as_posix()):
                rel = path.relative_to(root).as_posix()
                info = tarfile.TarInfo(rel)
                info.mtime = 0
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                if path.is_dir():
                    info.type = tarfile.DIRTYPE
                    info.mode = 0o755
                    tar.addfile(info)
                else:
                    info.size = path.stat().st_size
                    info.mode = 0o644
                    with path.open("rb") as f:
                        tar.addfile(info, f)
        os.chmod(tmp, 0o644)
        os.replace(tmp, archive)
    except BaseException:
        os.unlink(tmp)
        raise


def files_layer(specs: list[str], dest: Path) -> None:
    with tarfile.open(dest, "w", format=tarfile.PAX_FORMAT) as tar:
        for spec in specs:
            try:
                src, target, mode = spec.split(":")
            except ValueError:
                die(f"--file {spec}: expected SRC:DEST:MODE")
            data = Path(src).read_bytes()
            info = tarfile.TarInfo(target.lstrip("/"))
            info.size, info.mode, info.mtime = len(data), int(mode, 8), 0
            tar.addfile(info, io.BytesIO(data))


def cmd_rootfs(args: argparse.Namespace) -> None:
    src = Path(args.rootfs)
    if not src.is_file():
        die(f"{src}: no such root filesystem tar")
    with tempfile.TemporaryDirectory(dir=Path(args.archive).parent) as tmp:
        single_layer_layout(Path(tmp), src, args)
        pack(Path(tmp), Path(args.archive))


def cmd_rootfs_files(args: argparse.Namespace) -> None:
    Path(args.archive).parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=Path(args.archive).parent) as tmp:
        layer = Path(tmp) / "layer.tar"
        files_layer(args.file, layer)
        layout = Path(tmp) / "layout"
        single_layer_layout(layout, layer, args)
        pack(layout, Path(args.archive))


def cmd_annotate(args: argparse.Namespace) -> None:
    root = Path(args.layout)
    try:
        index = json.loads((root / "index.json").read_text())
    except (OSError, ValueError) as e:
        die(f"{root}/index.json: {e}")
    manifests = index.get("manifests") or []
    if len(manifests) != 1:
        die(f"{root}/index.json lists {len(manifests)} manifests, expected 1")
    desc = {k: v for k, v in manifests[0].items() if k != "annotations"}
    write_index(root, desc, args.name)
    pack(root, Path(args.archive))


def cmd_check(args: argparse.Namespace) -> None:
    """An archive as the scripts that load it expect: an OCI layout whose one manifest carries ``--name``,
    with the config's Entrypoint and Cmd as given (JSON; ``null`` for none)."""
    try:
        with tarfile.open(args.archive) as t:
            names = set(t.getnames())
            for need in ("index.json", "oci-layout"):
                if need not in names:
                    die(f"{args.archive}: no {need}")

            def blob(desc: dict) -> dict:
                member = t.extractfile("blobs/sha256/" + desc["digest"].split(":", 1)[1])
                assert member is not None
                return json.load(member)

            index_file = t.extractfile("index.json")
            assert index_file is not None
            manifests = json.load(index_file)["manifests"]
            if len(manifests) != 1:
                die(f"{args.archive}: {len(manifests)} manifests, expected 1")
            got = (manifests[0].get("annotations") or {}).get("io.containerd.image.name")
            if got != args.name:
                die(f"{args.archive}: io.containerd.image.name is {got}, not {args.name}")
            manifest = blob(manifests[0])
            config = blob(manifest["config"])["config"]
    except (OSError, tarfile.TarError, KeyError, ValueError) as e:
        die(f"{args.archive}: not a readable OCI archive ({e})")
    for key, want in (("Entrypoint", args.entrypoint), ("Cmd", args.cmd)):
        if config.get(key) != json.loads(want):
            die(f"{args.archive}: {key} is {json.dumps(config.get(key))}, not {want}")
    print(f"oci.py: {args.archive}: {args.name}, Entrypoint {args.entrypoint}, Cmd {args.cmd}", file=sys.stderr)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    def config_opts(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--name", required=True, help="full image name, e.g. localhost/pfslayout/pause:3.10")
        sp.add_argument("--entrypoint", help="JSON list")
        sp.add_argument("--cmd", help="JSON list")
        sp.add_argument("--env", action="append", help="K=V (repeatable; default: the usual PATH)")
        sp.add_argument("--user")
        sp.add_argument("--workdir")
        sp.add_argument("--stop-signal", help="e.g. SIGRTMIN+3")
        sp.add_argument("--history", help="created_by of the one history entry")

    r = sub.add_parser("rootfs")
    r.add_argument("rootfs")
    r.add_argument("archive")
    config_opts(r)
    r.set_defaults(func=cmd_rootfs)
    f = sub.add_parser("rootfs-files")
    f.add_argument("archive")
    f.add_argument("--file", action="append", required=True, help="SRC:DEST:MODE (octal)")
    config_opts(f)
    f.set_defaults(func=cmd_rootfs_files)
    a = sub.add_parser("annotate")
    a.add_argument("layout")
    a.add_argument("archive")
    a.add_argument("--name", required=True)
    a.set_defaults(func=cmd_annotate)
    c = sub.add_parser("check")
    c.add_argument("archive")
    c.add_argument("--name", required=True)
    c.add_argument("--entrypoint", default="null", help="JSON list, or null")
    c.add_argument("--cmd", default="null", help="JSON list, or null")
    c.set_defaults(func=cmd_check)
    args = p.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
