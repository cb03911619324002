"""Every citation of the seed papers resolves inside the repository.

Code, tests and guides cite `docs/seeds.md §N.M` (a section) or `§6 A3` (a resolved typo, an item of
seeds.md §6). This test finds each such citation in the tracked text files and checks that seeds.md has
that heading or item, and that nothing cites a document that is not in the repository.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SEEDS = ROOT / "docs" / "seeds.md"

# "seeds.md §2.9", "[seeds.md](seeds.md) §6 A3", "seeds.md §3.6(b)", "seeds.md §6 A1–A3"
CITATION = re.compile(r"seeds\.md(?:\]\(seeds\.md\))?\s+§(\d+(?:\.\d+)?)(?:\s+([A-D]\d+))?")
# a typo item cited on its own, e.g. "(§6 B3)" in a file that cites seeds.md
ITEM = re.compile(r"§6 ([A-D]\d+)")
TEXT_SUFFIXES = {".py", ".c", ".h", ".md", ".yaml", ".json", ".sh", ".txt", ".toml"}


def _tracked_text_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    paths = [ROOT / p for p in out.decode().split("\0") if p]
    return [p for p in paths if p.suffix in TEXT_SUFFIXES and p.is_file()]


def _seeds_anchors() -> tuple[set[str], set[str]]:
    text = SEEDS.read_text(encoding="utf-8")
    sections = set(re.findall(r"^#{2,3} (\d+(?:\.\d+)?)[. ]", text, flags=re.M))
    items = set(re.findall(r"^\* \*\*([A-D]\d+)\.", text, flags=re.M))
    return sections, items


def test_seeds_page_has_its_sections() -> None:
    sections, items = _seeds_anchors()
    assert {"1", "2.2", "2.9", "3.2", "6", "7"} <= sections
    assert {"A1", "A2", "A3", "B2", "B3", "C3", "D4"} <= items


def test_every_seeds_citation_resolves() -> None:
    sections, items = _seeds_anchors()
    unresolved = []
    for path in _tracked_text_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        if "seeds.md" not in text:
            continue
        rel = path.relative_to(ROOT)
        for lineno, line in enumerate(text.splitlines(), 1):
            for sec, item in CITATION.findall(line):
                if sec not in sections:
                    unresolved.append(f"{rel}:{lineno}: §{sec}")
                if item and item not in items:
                    unresolved.append(f"{rel}:{lineno}: §{sec} {item}")
            unresolved += [f"{rel}:{lineno}: §6 {it}" for it in ITEM.findall(line) if it not in items]
    assert unresolved == [], "citations with no matching heading or item in docs/seeds.md"


def test_no_citation_of_documents_outside_the_repository() -> None:
    # spelled in pieces so that this file does not match itself (nor `git grep` for the old name)
    banned = re.compile("|".join(["DI" + "GEST", re.escape("../" + "shared"), "shared" + "/seeds", "/wo" + "rk/"]))
    hits = []
    for path in _tracked_text_files():
        for lineno, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if banned.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{lineno}")
    assert hits == [], "cites a document that is not in the repository (use docs/seeds.md §…)"
