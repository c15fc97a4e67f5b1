"""The documentation stays true: the README is a door (short, two commands, an index of docs/),
every link and anchor in README.md and docs/*.md resolves, every ``arena`` command in their
shell blocks parses with the real parser, every ``make`` target they name exists, every repo
path they name exists, and every TOML example loads with the loader it is written for."""

from __future__ import annotations

import re
import shlex
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from arena.cli import build_parser

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
"""Every page of the manual: the README and docs/."""
LINKING_PAGES = [
    *PAGES,
    *sorted((REPO / "protocol").glob("*.md")),
    *sorted(REPO.glob("bots/*/*.md")),
]
"""Pages whose links into the manual must resolve too (the protocol, the bots' READMEs)."""

MAX_README_LINES = 250

_FENCE = re.compile(r"^```([\w-]*)\n(.*?)^```", re.S | re.M)
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6} (.+)$", re.M)
_REPO_PATH = re.compile(r"`((?:arena|bots|docs|protocol|tests)/[\w./-]*)`")


def _prose(text: str) -> str:
    """The text outside fenced code blocks (a ``# comment`` there is no heading)."""
    return _FENCE.sub("", text)


def _blocks(page: Path, *langs: str) -> list[str]:
    return [body for lang, body in _FENCE.findall(page.read_text()) if lang in langs]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: link text kept, markup and punctuation dropped."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").replace("*", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    for heading in _HEADING.findall(_prose(page.read_text())):
        slug = _slug(heading)
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def _relative_links(page: Path) -> Iterator[str]:
    for target in _LINK.findall(_prose(page.read_text())):
        if not re.match(r"[a-z][a-z+.-]*:", target):  # http:, https:, mailto: ...
            yield target


@dataclass(frozen=True)
class Command:
    page: str
    line: str

    def __str__(self) -> str:
        return f"{self.page}: {self.line}"


def _shell_commands(page: Path) -> Iterator[Command]:
    """Each command line of the page's sh/console blocks, continuations joined."""
    for body in _blocks(page, "sh", "console", "bash", "shell"):
        joined = re.sub(r"\\\n\s*", " ", body)
        for raw in joined.splitlines():
            line = raw.strip().removeprefix("$ ")
            if line and not line.startswith("#"):
                yield Command(page.relative_to(REPO).as_posix(), line)


def _arena_commands() -> list[Command]:
    return [c for page in PAGES for c in _shell_commands(page) if c.line.startswith("arena ")]


# ---------------------------------------------------------------- the README is a door


def test_readme_is_short() -> None:
    lines = README.read_text().count("\n")
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines; move text to docs/"


def test_quickstart_has_exactly_the_two_commands() -> None:
    text = README.read_text()
    quickstart = text[text.index("## Quickstart") :]
    first_block = _FENCE.search(quickstart)
    assert first_block is not None
    commands = [line.split("#")[0].strip() for line in first_block.group(2).splitlines()]
    assert commands == ["make demo", "make test"]


def test_readme_indexes_every_docs_page() -> None:
    linked = {
        (README.parent / target.partition("#")[0]).resolve()
        for target in _relative_links(README)
        if target.startswith("docs/")
    }
    pages = {p.resolve() for p in DOCS.glob("*.md")}
    assert pages, "docs/ has no pages"
    assert pages - linked == set(), "docs pages the README does not link"
    assert {p for p in linked if p.suffix == ".md"} <= pages, "README links missing docs pages"


def test_docs_index_lists_every_page() -> None:
    index = DOCS / "README.md"
    linked = {(DOCS / t.partition("#")[0]).resolve() for t in _relative_links(index)}
    missing = {p.name for p in DOCS.glob("*.md") if p != index and p.resolve() not in linked}
    assert missing == set(), f"docs/README.md does not list {sorted(missing)}"


# ---------------------------------------------------------------- links and paths


def _broken_links(page: Path) -> list[str]:
    broken = []
    for target in _relative_links(page):
        path, _, fragment = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif fragment and resolved.suffix == ".md" and fragment not in _anchors(resolved):
            broken.append(f"{target}: no heading with that anchor")
    return broken


@pytest.mark.parametrize("page", LINKING_PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_relative_links_resolve(page: Path) -> None:
    assert _broken_links(page) == []


def test_link_checker_finds_missing_files_and_anchors(tmp_path: Path) -> None:
    (tmp_path / "b.md").write_text("# Clocks: CPU time or wall time\n")
    page = tmp_path / "a.md"
    page.write_text(
        "# Top: `one`\n\n[ok](#top-one) [ok](b.md#clocks-cpu-time-or-wall-time) "
        "[web](https://example.org/x.md)\n[gone](c.md) [bad](b.md#clocks) [bad](#top)\n"
        "```sh\n[in code](nowhere.md)\n```\n"
    )
    assert _broken_links(page) == [
        "c.md: no such file",
        "b.md#clocks: no heading with that anchor",
        "#top: no heading with that anchor",
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_named_repo_paths_exist(page: Path) -> None:
    """A file the manual names (`arena/play/executors.py`) is where it says."""
    named = _REPO_PATH.findall(_prose(page.read_text()))
    placeholders = re.compile(r"[A-Z]{2,}|my-bot")  # bots/NAME.html, bots/my-bot
    missing = [p for p in named if not placeholders.search(p) and not (REPO / p).exists()]
    assert missing == []


# ---------------------------------------------------------------- commands


def test_every_arena_command_parses() -> None:
    commands = _arena_commands()
    assert len(commands) >= 30, "the manual's shell blocks were not found"
    parser = build_parser()
    failures = []
    for command in commands:
        argv = shlex.split(command.line, comments=True)[1:]
        try:
            args = parser.parse_args(argv)
        except SystemExit:
            failures.append(str(command))
            continue
        if not callable(getattr(args, "run", None)):
            failures.append(f"{command} (no subcommand)")
    assert failures == []


def test_every_subcommand_is_documented() -> None:
    """Every subcommand the parser has appears in some shell block of the manual."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    documented = {shlex.split(c.line, comments=True)[1] for c in _arena_commands()}
    undocumented = set(sub.choices or ()) - documented
    assert undocumented == set()


def test_make_targets_exist() -> None:
    makefile = (REPO / "Makefile").read_text()
    targets = set(re.findall(r"^([\w-]+):", makefile, re.M))
    named = {
        shlex.split(c.line, comments=True)[1]
        for page in PAGES
        for c in _shell_commands(page)
        if c.line.startswith("make ")
    }
    assert {"demo", "test"} <= named
    assert named - targets == set()


# ---------------------------------------------------------------- TOML examples


def _toml_examples() -> list[tuple[str, str]]:
    return [
        (f"{page.relative_to(REPO).as_posix()}#{i}", body)
        for page in PAGES
        for i, body in enumerate(_blocks(page, "toml"))
    ]


@pytest.mark.parametrize(("where", "text"), _toml_examples(), ids=lambda v: str(v)[:40])
def test_every_toml_example_loads(where: str, text: str, tmp_path: Path) -> None:
    """A bot.toml, a tournament file or a competition.toml: each through its real loader."""
    data = tomllib.loads(text)
    if "competition" in data:
        from arena.competition.config import load_competition

        path = tmp_path / "competition.toml"
        path.write_text(text)
        assert load_competition(path).competition.name
    elif "bots" in data:
        from arena.tournament import load_config

        path = tmp_path / "cup.toml"
        path.write_text(text)
        assert load_config(path, {}).bots
    elif "command" in data:
        from arena.referee.manifest import load_bot

        (tmp_path / "bot.toml").write_text(text)
        assert load_bot(tmp_path).name == data["name"]
    else:
        pytest.fail(f"{where}: a TOML example of no known kind (bot, tournament, competition)")


def test_the_toml_examples_cover_all_three_kinds() -> None:
    kinds = {
        next(k for k in ("competition", "bots", "command") if k in tomllib.loads(text))
        for _, text in _toml_examples()
    }
    assert kinds == {"competition", "bots", "command"}
