"""Every example manifest in policies/ has its golden rendering in policies/expected/<name>/, and the
operator still renders exactly that. New examples are picked up automatically: one without a golden
rendering fails here, naming the command that writes it (`pfslayout render examples`)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pfslayout.kinds import examples

POLICIES = Path(__file__).resolve().parents[3] / "policies"
EXAMPLES = examples.examples(POLICIES)


def test_there_are_examples() -> None:
    assert EXAMPLES, f"no *.yaml in {POLICIES}"


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_golden_rendering_matches(example: Path) -> None:
    problems = examples.differences(example)
    assert problems == [], "\n".join(problems)


def test_no_golden_rendering_without_its_example() -> None:
    stale = examples.stale_directories(POLICIES)
    assert stale == [], f"golden directories of removed examples: {stale}; run `{examples.REGENERATE}`"


def test_orangefs_cluster_goldens_are_what_the_operator_applies() -> None:
    small = examples.render_example(POLICIES / "orangefs-small.yaml")
    assert set(small) == {"fs.conf", "objects.yaml"}
    objs = list(yaml.safe_load_all(small["objects.yaml"]))
    kinds = [o["kind"] for o in objs]
    assert kinds == ["ConfigMap", "ConfigMap", "Service", "StatefulSet", "Deployment"]
    assert objs[0]["data"]["fs.conf"] == small["fs.conf"]  # the ConfigMap holds exactly the golden fs.conf


def test_a_missing_golden_names_the_regenerate_command(tmp_path: Path) -> None:
    (tmp_path / "new.yaml").write_text((POLICIES / "orangefs-small.yaml").read_text())
    (problem,) = examples.differences(tmp_path / "new.yaml")
    assert "no golden rendering" in problem and examples.REGENERATE in problem
    examples.write_examples(tmp_path)
    assert examples.differences(tmp_path / "new.yaml") == []
    (tmp_path / "expected" / "new" / "fs.conf").write_text("changed\n")
    (problem,) = examples.differences(tmp_path / "new.yaml")
    assert "fs.conf: differs" in problem and examples.REGENERATE in problem


def test_kinds_without_a_renderer_keep_the_manifest_as_read(tmp_path: Path) -> None:
    (tmp_path / "two.yaml").write_text(
        "apiVersion: pfslayout.io/v1alpha1\nkind: CostCalibration\nmetadata: {name: cc}\nspec: {clusterRef: x}\n"
        "---\n" + (POLICIES / "orangefs-small.yaml").read_text())
    files = examples.render_example(tmp_path / "two.yaml")
    assert set(files) == {"costcalibration-cc.manifest.yaml", "orangefscluster-small.fs.conf",
                          "orangefscluster-small.objects.yaml"}
    assert "renders nothing for this kind yet" in files["costcalibration-cc.manifest.yaml"]
