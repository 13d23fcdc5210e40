"""The tree is ruff-clean: `ruff check` and `ruff format --check` pass."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_check_is_clean():
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "."], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_clean():
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_source_file_is_over_400_lines():
    """A long file holds more than one concept. Installed profiles are pinned copies of what
    their sessions wrote, kept as they were judged."""
    exempt = ("tuned/",)
    tracked = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "*.py"], capture_output=True, text=True, check=True
    ).stdout.split()
    long_files = []
    for relative in tracked:
        path = ROOT / relative
        if relative.startswith(exempt) or not path.is_file():
            continue
        lines = path.read_text(errors="replace").count("\n")
        if lines > 400:
            long_files.append(f"{relative}: {lines} lines")
    assert long_files == []


def test_every_command_explains_itself_and_its_examples_parse():
    """Every `--help` has a description; a command taking a positional argument shows an
    example, and each example is a command line the parser accepts."""
    import argparse
    import shlex

    from controller.cli import build_parser

    def leaves(parser, words):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            yield words, parser
        for sub in subs:
            for name, child in sub.choices.items():
                yield from leaves(child, [*words, name])

    problems = []
    for words, parser in leaves(build_parser(), []):
        positional = [a for a in parser._actions if not a.option_strings and a.dest != "help"]
        example = (parser.epilog or "").partition("example: ")[2]
        if not parser.description:
            problems.append(f"{' '.join(words)}: no description")
        if positional and not example:
            problems.append(f"{' '.join(words)}: a positional argument and no example")
        if example:
            argv = shlex.split(example)
            assert argv[0] == "controller", example
            try:
                build_parser().parse_args(argv[1:])
            except SystemExit:
                problems.append(f"{' '.join(words)}: the example does not parse: {example}")
    assert problems == []


SNAPSHOT_SCRIPTS = ("gates/registration/registry_snapshot.py", "gates/registration/code_reading.py")


def test_python_is_parsed_under_the_one_lock():
    """CPython 3.11 fails two threads parsing at once ("AST constructor recursion depth
    mismatch"): the controller's code parses through `gates.python_source.parse_python`. The
    registry snapshot and the code reading it loads beside it are exempt: they run alone as a
    fenced script (`python -I`, one thread) that may import nothing of the controller's."""
    tracked = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "controller/*.py", "gates/*.py", "operators/*.py",
         "sandbox/*.py"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    bare = [
        relative
        for relative in tracked
        if relative not in SNAPSHOT_SCRIPTS + ("gates/python_source.py",)
        and "ast.parse(" in (ROOT / relative).read_text()
    ]
    assert bare == []
