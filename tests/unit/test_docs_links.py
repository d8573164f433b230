"""README.md and docs/*.md: every relative link resolves, and the README's exit codes are the code's.

A link is ``[text](target)`` or ``![alt](target)`` outside code (fenced blocks and inline code
spans). A relative target must name an existing file or directory; a ``#fragment`` on a Markdown
file (or alone, for the same file) must be the anchor GitHub gives one of its headings.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import mirrorspark.errors as errors_module
from mirrorspark.errors import MirrorsparkError

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"(`+).*?\1")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def _prose_lines(text: str) -> list[tuple[int, str]]:
    """The lines outside fenced code blocks, numbered from 1."""
    out, fenced = [], False
    for number, line in enumerate(text.split("\n"), start=1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append((number, line))
    return out


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its text
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)  # \w keeps letters, digits and '_' (Unicode too)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading anchor of a Markdown page, with GitHub's -1, -2 … suffixes for repeats."""
    seen: dict[str, int] = {}
    out = set()
    for _, line in _prose_lines(page.read_text()):
        m = _HEADING.match(line)
        if not m:
            continue
        base = anchor(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(page: Path) -> list[tuple[int, str]]:
    """``(line, target)`` of every link of ``page`` outside code."""
    found = []
    for number, line in _prose_lines(page.read_text()):
        for m in _LINK.finditer(_CODE_SPAN.sub("", line)):
            found.append((number, m.group(1)))
    return found


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    """A description of every relative link of ``page`` (under ``root``) that does not resolve."""
    broken = []
    for number, target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):  # https:, mailto: …
            continue
        path_part, _, fragment = target.partition("#")
        dest = (page.parent / path_part).resolve() if path_part else page
        where = f"{page.relative_to(root)}:{number}: {target}"
        if not dest.exists():
            broken.append(f"{where}: no such file")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            broken.append(f"{where}: no heading with anchor '#{fragment}' in {dest.relative_to(root)}")
    return broken


def test_the_anchor_rule_is_githubs() -> None:
    assert anchor("What a flow does (MM2's `MirrorSourceConnector`, on Spark)") == (
        "what-a-flow-does-mm2s-mirrorsourceconnector-on-spark"
    )
    assert anchor("ACLs: what the replicator needs") == "acls-what-the-replicator-needs"
    assert anchor("Monitoring: `mirrorspark service`") == "monitoring-mirrorspark-service"


def test_the_checker_finds_broken_links(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    (tmp_path / "there.md").write_text("# There\n\n## A part\n")
    page.write_text(
        "# Page\n\n[ok](there.md#a-part) [gone](nowhere.md) [bad](there.md#no-part) [self](#page)\n"
        "`[code](nowhere.md)`\n```\n[fenced](nowhere.md)\n```\n[web](https://example.com/x)\n"
    )
    found = broken_links(page, root=tmp_path)
    assert len(found) == 2
    assert "nowhere.md" in found[0]
    assert "#no-part" in found[1]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_the_readme_links_every_page_of_docs() -> None:
    linked = {(ROOT / t.partition("#")[0]).resolve() for _, t in links(ROOT / "README.md")}
    missing = [p.name for p in sorted((ROOT / "docs").glob("*.md")) if p.resolve() not in linked]
    assert missing == [], f"README.md links no line to docs/{missing}"


# --------------------------------------------------------------------------------------
# The README's exit codes
# --------------------------------------------------------------------------------------

EXITS_OUTSIDE_THE_TREE = {
    1: "placement finish",  # typer.Exit(1) while partitions still move (cli/placement.py)
    2: "usage error",  # click's UsageError (a bad option), besides ConfigError
    10: "plan: changes",  # typer.Exit(CHANGES_EXIT_CODE) when a run would write something (cli/plan.py)
    11: "verify: divergence",  # typer.Exit(DIVERGENCE_EXIT_CODE) when a record diverges (cli/verify.py)
    130: "Ctrl-C",  # typer: KeyboardInterrupt; mirrorspark run: the second Ctrl-C (cli/app.py)
}


def readme_exit_codes() -> dict[int, str]:
    """The README's exit-code table: ``| code | meaning |`` rows under the heading ``Exit codes``."""
    text = (ROOT / "README.md").read_text()
    section = text.split("### Exit codes", 1)[1].split("\n#", 1)[0]
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"^\|\s*(\d+)\s*\|(.*)\|\s*$", section, re.MULTILINE)}


def test_the_readme_lists_every_exit_code_and_no_other() -> None:
    classes = [c for c in vars(errors_module).values() if isinstance(c, type) and issubclass(c, MirrorsparkError)]
    in_code = {c.exit_code for c in classes} | set(EXITS_OUTSIDE_THE_TREE)
    assert set(readme_exit_codes()) == in_code | {0}


def test_the_readme_names_each_errors_code_with_its_exit_status() -> None:
    listed = readme_exit_codes()
    classes = [c for c in vars(errors_module).values() if isinstance(c, type) and issubclass(c, MirrorsparkError)]
    for cls in classes:
        if cls is MirrorsparkError:
            continue
        assert f"`{cls.code}`" in listed[cls.exit_code], f"README: exit {cls.exit_code} should name `{cls.code}`"
