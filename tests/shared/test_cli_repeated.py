"""``memory save`` / ``update`` with many ``--tag`` / ``--entity`` (shared/cli/repeated.py).

argparse looks through every remaining option string at each option, so 10,000 ``--tag`` took
2-5 s to parse. The verbs now gather those options in one pass before argparse: these tests
check the parse is argparse's own (same namespace, same errors) and that argparse is handed no
``--tag`` at all, so its cost no longer grows with them (the wall time is a line of
``python -m bench.cli``)."""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
from contextlib import redirect_stderr
from pathlib import Path
from typing import Any

import pytest

from shared.cli import build_parser, run
from shared.cli.repeated import gathered, split

MAIN = "import sys; from shared.cli import main; sys.exit(main())"


def _verb(gather: bool) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="save", exit_on_error=True)
    p.add_argument("text")
    p.add_argument("--title")
    p.add_argument("--tag", action="append", dest="tags")
    p.add_argument("--entity", action="append", dest="entities")
    if gather:
        gathered(p, "--tag", "--entity")
    return p


def _parse(p: argparse.ArgumentParser, argv: list[str]) -> Any:
    err = io.StringIO()
    with redirect_stderr(err):
        try:
            return vars(p.parse_args(argv))
        except SystemExit as e:
            return ("exit", e.code, err.getvalue())


@pytest.mark.parametrize(
    "argv",
    [
        ["note"],
        ["note", "--tag", "a"],
        ["--tag", "a", "note", "--tag", "b", "--entity", "x", "--tag=c"],
        ["note", "--tag", "a", "--tag", "a"],  # repeats kept, as append keeps them
        ["note", "--tag=", "--tag", "b c"],  # an empty value, a value with a space
        ["note", "--tag", "-x"],  # a value like an option: argparse's error
        ["note", "--tag", "a", "--tag", "-5"],  # argparse's own reading, order kept
        ["note", "--ta", "a", "--tag", "b"],  # an abbreviation: argparse's own reading
        ["note", "--tag"],  # no value: argparse's error
        ["note", "--title", "--tag", "x"],  # --title without its value: argparse's error
        ["--tag", "a", "--", "--tag"],  # after --, a positional
        ["note", "--title=--tag", "--tag", "a"],
    ],
)
def test_the_gathered_parse_is_argparses_own(argv: list[str]) -> None:
    assert _parse(_verb(True), argv) == _parse(_verb(False), argv)


def test_argparse_is_handed_no_tag_for_10000_tags() -> None:
    """What made it slow: each option string argparse sees costs a look through all the rest."""
    words = ["note"]
    for n in range(10_000):
        words += ["--tag", f"t{n}", "--entity", f"e{n}"]
    rest, values = split(words, {"--tag": "tags", "--entity": "entities"})
    assert rest == ["note"]
    assert values["tags"] == [f"t{n}" for n in range(10_000)]
    assert values["entities"] == [f"e{n}" for n in range(10_000)]


@pytest.mark.parametrize("verb", ["save", "update"])
def test_the_memory_verbs_gather_their_tags_and_entities(verb: str) -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert sub.choices[verb].parse_known_args.__qualname__.startswith("_gathering.")
    tags = [w for n in range(1000) for w in ("--tag", f"t{n}")]
    args = parser.parse_args([verb, "x", *tags, "--entity", "e", "--entity=f"])
    assert args.tags == [f"t{n}" for n in range(1000)] and args.entities == ["e", "f"]


def test_save_with_10000_tags_answers_with_the_stores_refusal(tmp_path: Path) -> None:
    tags = [w for n in range(10_000) for w in ("--tag", f"t{n}")]
    out, err = io.StringIO(), io.StringIO()
    code = run(["--data-dir", str(tmp_path / "d"), "save", "x", *tags], out=out, err=err)
    assert code == 2 and "tags: at most" in err.getvalue()


def test_save_with_10000_tags_as_a_process(tmp_path: Path) -> None:
    tags = [w for n in range(10_000) for w in ("--tag", f"t{n}")]
    done = subprocess.run(
        [sys.executable, "-c", MAIN, "--data-dir", str(tmp_path / "d"), "save", "x", *tags],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "tags: at most" in done.stderr
