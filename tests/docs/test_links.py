"""The docs hold together after pages move: every relative link in the project's Markdown
reaches a file (and a heading, when it names one), every `docs/…` path the code, scripts and
manifests mention exists, and docs/README.md lists every page under docs/.

docs/benchmarks.md is being rewritten by the lead and still links benchmarks-log.md, which
moved to docs/dev/: its link test is an xfail naming that until the page is fixed.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from .prose import FENCE, ROOT

SKIP_PARTS = {".git", ".venv", ".bin", ".build", ".apis", ".kind", ".run", "node_modules", ".pytest_cache"}
PAGES = sorted(p for p in [*ROOT.glob("*.md"), *(ROOT / "docs").rglob("*.md"), *(ROOT / "e2e").rglob("*.md")]
               if not SKIP_PARTS & set(p.relative_to(ROOT).parts))
STALE_LINKS: dict[str, str] = {}
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*\*|\*|_(?=\W)|\[|\]\([^)]*\)", "", heading.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in FENCE.sub("", page.read_text()).splitlines():
        m = re.match(r"#{1,6}\s+(.*)", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        out.add(base if n == 0 else f"{base}-{n}")
        seen[base] = n + 1
    return out


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in LINK.findall(FENCE.sub("", page.read_text())):
        if re.match(r"[a-z]+:", target) or target.startswith("#") and not target[1:]:
            continue  # a URL (http:, mailto:)
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.name}")
    return broken


@pytest.mark.parametrize("page", [pytest.param(p, id=rel(p), marks=pytest.mark.xfail(reason=STALE_LINKS[rel(p)], strict=False))
                                  if rel(p) in STALE_LINKS else pytest.param(p, id=rel(p)) for p in PAGES])
def test_every_relative_link_reaches_its_file_and_heading(page: Path):
    assert broken_links(page) == []


def tracked_text_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.decode()
    keep = (".md", ".py", ".sh", ".yaml", ".yml", ".toml", ".json", ".conf", "Makefile", "Dockerfile")
    return [ROOT / f for f in out.split("\0") if f.endswith(keep) and not f.startswith("bench/results/")]


def test_every_docs_path_the_project_mentions_exists():
    """A page, a dev/ page or an image under docs/, named by path in code, scripts, manifests
    and pages: a page that moved leaves no such path behind (Volcano's own docs/design/… are
    not ours)."""
    missing = set()
    for f in tracked_text_files():
        if not f.exists():
            continue  # deleted in the working tree
        for m in re.finditer(r"(?<![\w/.])docs/(?:dev/|images/)?[\w.-]+\.(?:md|png)\b", f.read_text(errors="replace")):
            if not (ROOT / m.group(0)).exists():
                missing.add(f"{rel(f)}: {m.group(0)}")
    assert sorted(missing) == []


def test_the_docs_index_lists_every_page():
    index = ROOT / "docs" / "README.md"
    listed = {(index.parent / t.partition("#")[0]).resolve() for t in LINK.findall(index.read_text())}
    pages = {p.resolve() for p in (ROOT / "docs").rglob("*") if p.is_file() and p != index}
    assert sorted(rel(p) for p in pages - listed) == []


def test_the_link_checker_sees_a_broken_link(tmp_path: Path):
    (tmp_path / "a.md").write_text("# Title: `here`\n\n[ok](#title-here) [b](b.md) [c](a.md#nowhere) [web](https://example.org)\n")
    assert broken_links(tmp_path / "a.md") == ["b.md: no such file", "a.md#nowhere: no heading #nowhere in a.md"]
