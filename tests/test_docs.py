"""The front page and the docs pages hold together: every relative link of README.md and docs/*.md resolves (the
file or folder exists; an ``#anchor`` names a heading of the page it points into), and every command they show
parses with the parser that would read it: ``seal-hub ...`` lines in code blocks with the CLI's own parser
(`seal_hub.cli.build_parser`, or for ``seal-hub train`` the training script's, `seal_hub.scripts.seal.make_parser`),
and the flags after ``recipes/seal.py`` / ``-m seal_hub.scripts.seal`` with the training script's. Commands are
parsed, never run: a renamed flag or subcommand fails here, a slow or GPU-only command costs nothing.

Conventions the examples follow: a trailing backslash continues a line; ``[...]`` around flags or a ``@revision``
marks an optional part, parsed as if given; ``# ...`` ends a line's command. `--config FILE` is not a flag of the
parser (TrlParser reads it first), so it is taken out; a ``recipes/...`` config it names must exist.

Not covered: links to the web (no network in the tests), and what a command would do when run.
"""

from __future__ import annotations

import argparse
import re
import shlex
from functools import cache
from pathlib import Path

import pytest
from helpers.paths import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^ *```.*?^ *```[ \t]*$", re.S | re.M)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
OPTIONAL = re.compile(r"\[((?:--?|@)[^\[\]]*)\]")  # `[--flag VALUE]`, `NS/RUN[@iter-k]`
TRAINING_ENTRIES = ("recipes/seal.py", "seal_hub.scripts.seal")
LAUNCH = re.compile(r"^(?:\w+=\S+ +)*(?:accelerate|python3?|torchrun) ")  # a training launch, env settings first
SHELL = ("", "bash", "sh", "shell")


def prose(text: str) -> str:
    """The page without its code blocks and inline code: what renders as text, links and headings."""
    return re.sub(r"`[^`\n]*`", "", FENCE.sub("", text))


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, each space a hyphen."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading anchor of a page, with GitHub's ``-1``, ``-2`` suffixes for repeated headings."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for line in FENCE.sub("", page.read_text("utf-8")).splitlines():
        match = re.match(r"^#{1,6} +(.+?) *#* *$", line)
        if match:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> list[str]:
    """The page's link targets that point into the repository (no scheme, no protocol-relative URL)."""
    targets = LINK.findall(prose(page.read_text("utf-8")))
    return [t for t in targets if not re.match(r"^[a-z][a-z0-9+.-]*:|^//", t)]


def broken(page: Path, target: str) -> str | None:
    """Why `target`, a link on `page`, does not resolve; None when it does."""
    path, _, anchor = target.partition("#")
    dest = (page.parent / path).resolve() if path else page
    if not dest.exists():
        return f"{target}: no such file"
    if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
        return f"{target}: no heading #{anchor} in {dest.name}"
    return None


def code_lines(page: Path) -> list[str]:
    """The lines of the page's shell code blocks (no language, or bash/sh/shell), continuation lines joined."""
    lines: list[str] = []
    for block in FENCE.findall(page.read_text("utf-8")):
        opening, *body = block.strip().splitlines()
        if opening.strip("` ") not in SHELL:
            continue
        pending = ""
        for line in body[:-1]:
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            lines.append((pending + line).strip())
            pending = ""
    return lines


def words(line: str) -> list[str]:
    """A shell line's words, the optional parts kept (their brackets dropped), the comment left out."""
    return shlex.split(OPTIONAL.sub(r"\1", line), comments=True)


def without_config(flags: list[str]) -> list[str]:
    """`flags` without ``--config FILE``, which TrlParser reads before parsing; a ``recipes/`` file must exist."""
    flags = list(flags)
    for i, flag in enumerate(flags):
        if flag == "--config" or flag.startswith("--config="):
            path = flags[i + 1] if flag == "--config" else flag.split("=", 1)[1]
            assert not path.startswith("recipes/") or (ROOT / path).is_file(), f"{path}: no such config"
            return [*flags[:i], *flags[i + (2 if flag == "--config" else 1) :]]
    return flags


@cache
def training_parser() -> argparse.ArgumentParser:
    """The training script's parser (built once: three large dataclasses); parsing leaves it unchanged."""
    from seal_hub.scripts.seal import make_parser

    return make_parser("seal-hub train")


@cache
def cli_parser() -> argparse.ArgumentParser:
    from seal_hub.cli import build_parser

    return build_parser()


def training_flags(flags: list[str]) -> None:
    """Parse a training command's flags as `seal-hub train` / the recipe would (argparse, no dataclass built)."""
    argparse.ArgumentParser.parse_args(training_parser(), without_config(flags))


def parse(argv: list[str]) -> None:
    """Parse `argv` (a ``seal-hub`` command without its name) as the CLI would, and nothing more."""
    if argv[:1] == ["train"]:
        training_flags(argv[1:])
    else:
        cli_parser().parse_args(argv)


def commands() -> list[tuple[str, str]]:
    """(page, line) for every command line the pages show to a user: `seal-hub ...` and the training entries."""
    found = []
    for page in PAGES:
        for line in code_lines(page):
            launch = LAUNCH.match(line) and any(entry in line for entry in TRAINING_ENTRIES)
            if line.startswith("seal-hub ") or launch:
                found.append((str(page.relative_to(ROOT)), line))
    return found


def check(line: str) -> str | None:
    """Why `line` does not parse; None when it does (``--help``'s exit 0 counts as parsed)."""
    argv = words(line)
    try:
        if argv[0] == "seal-hub":
            parse(argv[1:])
        else:
            entry = next(i for i, w in enumerate(argv) if w.endswith(TRAINING_ENTRIES))
            training_flags(argv[entry + 1 :])
    except SystemExit as exc:
        return None if exc.code == 0 else f"exit {exc.code}"
    except AssertionError as exc:
        return str(exc)
    return None


def test_every_relative_link_of_the_readme_and_the_docs_resolves():
    problems = [f"{page.relative_to(ROOT)}: {why}" for page in PAGES for t in links(page) if (why := broken(page, t))]
    assert problems == []


def test_the_pages_show_commands_and_links_to_check():
    """The checks above and below look at something: the front page links into docs/, the pages show commands."""
    assert any(t.startswith("docs/") for t in links(ROOT / "README.md"))
    shown = commands()
    assert sum(line.startswith("seal-hub ") for _, line in shown) >= 20
    assert any(page == "README.md" for page, _ in shown)


def test_every_command_the_pages_show_parses(capsys):
    failures = [f"{page}: {line}\n  {why}" for page, line in commands() if (why := check(line))]
    assert failures == [], capsys.readouterr().err[-3000:]


@pytest.mark.parametrize(
    ("line", "parses"),
    [
        ("seal-hub hub list", True),
        ("seal-hub hub lisst", False),
        ("seal-hub space --run NS/RUN [--revision iter-2] [--port 7860]   # a comment", True),
        ("seal-hub eval --model tiny --no_such_flag 1", False),
        ("seal-hub train --suite bfcl-single --max_steps 4", True),
        ("seal-hub train --max_stepz 4", False),
        ("accelerate launch recipes/seal.py --config recipes/configs/missing.yaml", False),
        ("CUDA_VISIBLE_DEVICES=0 accelerate launch recipes/seal.py --config recipes/configs/paper_full_ft.yaml", True),
    ],
)
def test_the_command_check_tells_a_parsing_command_from_a_broken_one(line, parses):
    assert (check(line) is None) == parses


def test_slugs_and_anchors_follow_githubs_rule(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# A `b` c\n\n## Will it fit? Memory\n\n## N + 1 (SLURM)\n\n## A b c\n\n```\n# no heading\n```\n")
    assert anchors(page) == {"a-b-c", "will-it-fit-memory", "n--1-slurm", "a-b-c-1"}
    (tmp_path / "q.md").write_text("[x](p.md#will-it-fit-memory) [y](p.md#nope) [z](#a-b-c) [w](missing.md)\n")
    found = {t: broken(tmp_path / "q.md", t) for t in links(tmp_path / "q.md")}
    assert [t for t, why in found.items() if why] == ["p.md#nope", "#a-b-c", "missing.md"]
