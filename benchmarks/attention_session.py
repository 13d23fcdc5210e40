"""Write the scripted tune session that submits the kernel in benchmarks/split_kv_attention_flash/.

The session ships one operator file, because the tuning gates read the launch settings
(`TUNING`, `TUNING_SPACE`) from the solution's entry file and a reviewer reads one kernel file
top to bottom: the package's parts (kernels, launch plan, entry point) are joined in that order
under the package's docstring, their imports merged and the imports between them dropped. The
repository imports are then made relative as the vendored solution's are, so
`controller tune run --operator split_kv_attention --agent scripted:SESSION` judges it by every
tuning gate. Run it after editing the kernel: `python benchmarks/attention_session.py`
(`--check` exits 1 when the session file is stale).
"""

import argparse
import ast
import itertools
import json
import sys
from pathlib import Path

import solution_session

BENCHMARKS = Path(__file__).resolve().parent
PACKAGE = BENCHMARKS / "split_kv_attention_flash"
PARTS = ("kernels.py", "launch_plan.py", "attention.py")
"""The package's modules, in the order the shipped file holds them."""
SESSION_FILE = BENCHMARKS / "sessions" / "tune_split_kv_attention.json"
SOLUTION_PATH = "solution/operators/catalog/split_kv_attention.py"
FIRST_PARTY = "operators"


def operator_file_source() -> str:
    """The parts as one module, with the repository's absolute imports (importable as is)."""
    docstring = ast.get_docstring(ast.parse((PACKAGE / "__init__.py").read_text()))
    imports: dict[str, str] = {}
    bodies = []
    for name in PARTS:
        text = (PACKAGE / name).read_text()
        lines = text.splitlines(keepends=True)
        tree = ast.parse(text)
        statements = list(itertools.takewhile(_is_import, tree.body[1:]))  # after the docstring
        for node in statements:
            if isinstance(node, ast.ImportFrom) and node.level:
                continue  # another part: in this file already
            line = "".join(lines[node.lineno - 1 : node.end_lineno])
            imports.setdefault(ast.unparse(node), line)
        body = "".join(lines[statements[-1].end_lineno :]).strip("\n")
        bodies.append(f"{_section_comment(name, ast.get_docstring(tree))}\n\n\n{body}\n")
    return "\n".join([f'"""{docstring}\n"""\n', *_grouped(imports), "\n\n".join(bodies)])


def _is_import(node: ast.stmt) -> bool:
    return isinstance(node, ast.Import | ast.ImportFrom)


def _section_comment(name: str, docstring: str | None) -> str:
    """The part's name and docstring as the comment that opens its section."""
    lines = [f"split_kv_attention_flash/{name}:", *(docstring or "").splitlines()]
    return "\n".join(f"# {line}".rstrip() for line in lines)


def _grouped(imports: dict[str, str]) -> list[str]:
    """Third-party imports, then the repository's, each group sorted as isort sorts them."""

    def module(statement: str) -> str:
        return statement.split()[1]

    third = sorted((s for s in imports if module(s).split(".")[0] != FIRST_PARTY), key=module)
    first = sorted((s for s in imports if module(s).split(".")[0] == FIRST_PARTY), key=module)
    return ["".join(imports[s] for s in third), "".join(imports[s] for s in first)]


def solution_source(operator_source: str) -> str:
    """The operator file as the solution holds it (`solution_session`'s import rewrite)."""
    return solution_session.solution_source(operator_source, "split_kv_attention")


def session_text() -> str:
    """The session file's content: one attempt that writes the whole operator file."""
    action = {
        "tool": "write",
        "path": SOLUTION_PATH,
        "content": solution_source(operator_file_source()),
    }
    return json.dumps({"attempts": [[action]]}, indent=2) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the session is stale")
    args = parser.parse_args()
    text = session_text()
    if args.check:
        current = SESSION_FILE.read_text() if SESSION_FILE.is_file() else ""
        if current != text:
            print(f"{SESSION_FILE} is stale: run python benchmarks/attention_session.py")
            return 1
        return 0
    SESSION_FILE.write_text(text)
    print(f"wrote {SESSION_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
