"""Golden renderings of the example manifests in policies/ (the expected output beside each example).

For every ``policies/<stem>.yaml`` the files under ``policies/expected/<stem>/`` are what the operator
would produce from it: for an OrangeFSCluster its ``fs.conf`` and ``objects.yaml`` (every object one
reconcile applies, as ``pfslayout render manifests`` prints them). A kind the operator does not render
yet gets ``manifest.yaml``, the documents as read, so a change to the example still shows up.

``pfslayout render examples`` rewrites them; ``--check`` (and operator/tests/unit/test_policy_examples.py)
compares. A file holding several documents prefixes each one's files with ``<kind>-<name>.``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pfslayout.errors import InputError
from pfslayout.kinds import ORANGEFS_CLUSTER
from pfslayout.kinds.orangefscluster.desired import desired_for_new
from pfslayout.kinds.orangefscluster.spec import parse_spec

EXPECTED = "expected"
REGENERATE = "pfslayout render examples"
EXAMPLE_UID = "00000000-0000-0000-0000-000000000000"


class _PlainDumper(yaml.SafeDumper):
    """Writes every object in full: builders share sub-dicts (one probe, one mount list), which the
    default dumper would turn into `&id001` anchors that a reader has to chase."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump_objects(objects: list[dict[str, Any]]) -> str:
    return yaml.dump_all(objects, Dumper=_PlainDumper, sort_keys=False)


def _documents(path: Path) -> list[dict[str, Any]]:
    try:
        docs = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]
    except yaml.YAMLError as err:
        raise InputError(str(path), f"is not YAML ({err.__class__.__name__})", "fix the example manifest") from None
    for i, doc in enumerate(docs):
        if not isinstance(doc, dict) or "kind" not in doc:
            raise InputError(f"{path}: document {i}", "is not a Kubernetes object", "give it apiVersion and kind")
    return docs


def _orangefs_cluster(doc: dict[str, Any], where: str) -> dict[str, str]:
    meta = doc.get("metadata") or {}
    name = meta.get("name")
    if not name:
        raise InputError(f"{where}: metadata.name", "is required", "give the OrangeFSCluster a name")
    namespace = meta.get("namespace") or "default"
    spec = parse_spec(doc.get("spec") or {})
    want = desired_for_new(spec, name, namespace, EXAMPLE_UID)
    return {"fs.conf": want.fs_conf_text,
            "objects.yaml": dump_objects(list(want.objects))}


def _as_read(doc: dict[str, Any]) -> dict[str, str]:
    note = f"# {doc['kind']}: the operator renders nothing for this kind yet; this is the manifest as read.\n"
    return {"manifest.yaml": note + yaml.safe_dump(doc, sort_keys=True)}


def render_example(path: Path) -> dict[str, str]:
    """File name (relative to the example's expected directory) -> content."""
    docs = _documents(path)
    out: dict[str, str] = {}
    for i, doc in enumerate(docs):
        where = f"{path}: document {i}"
        files = _orangefs_cluster(doc, where) if doc["kind"] == ORANGEFS_CLUSTER.kind else _as_read(doc)
        if len(docs) > 1:
            prefix = f"{doc['kind'].lower()}-{(doc.get('metadata') or {}).get('name', i)}."
            files = {prefix + k: v for k, v in files.items()}
        out.update(files)
    return out


def examples(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.yaml"))


def expected_dir(example: Path) -> Path:
    return example.parent / EXPECTED / example.stem


def differences(example: Path) -> list[str]:
    """What differs between the committed golden files of one example and a fresh rendering."""
    want = render_example(example)
    where = expected_dir(example)
    problems = []
    if not where.is_dir():
        return [f"{example}: no golden rendering in {where}; run `{REGENERATE}` and commit it"]
    have = {p.name: p.read_text(encoding="utf-8") for p in where.iterdir() if p.is_file()}
    for name in sorted(want.keys() | have.keys()):
        if name not in have:
            problems.append(f"{where / name}: missing; run `{REGENERATE}`")
        elif name not in want:
            problems.append(f"{where / name}: no longer rendered from {example.name}; run `{REGENERATE}`")
        elif have[name] != want[name]:
            problems.append(f"{where / name}: differs from what {example.name} renders; run `{REGENERATE}` "
                            "and review the diff")
    return problems


def stale_directories(directory: Path) -> list[Path]:
    """Golden directories whose example is gone."""
    stems = {p.stem for p in examples(directory)}
    root = directory / EXPECTED
    return sorted(p for p in root.iterdir() if p.is_dir() and p.name not in stems) if root.is_dir() else []


def write_examples(directory: Path) -> list[Path]:
    """Rewrite every example's golden files (and drop directories of removed examples); returns the files."""
    written = []
    for example in examples(directory):
        where = expected_dir(example)
        where.mkdir(parents=True, exist_ok=True)
        files = render_example(example)
        for old in where.iterdir():
            if old.is_file() and old.name not in files:
                old.unlink()
        for name, text in files.items():
            (where / name).write_text(text, encoding="utf-8")
            written.append(where / name)
    for stale in stale_directories(directory):
        for f in stale.iterdir():
            f.unlink()
        stale.rmdir()
    return written
