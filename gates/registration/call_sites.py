"""Call sites named `PATH:QUALNAME`, found in a tree by parsing, never by importing."""

import ast
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from gates.errors import GateError
from gates.python_source import parse_python

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


class CallSite(BaseModel):
    """One function of the target whose math a registration routes through the registry."""

    model_config = ConfigDict(frozen=True)

    path: str
    qualname: str

    @classmethod
    def parse(cls, text: str) -> "CallSite":
        path, separator, qualname = text.rpartition(":")
        if not separator or not path.endswith(".py") or not qualname:
            raise GateError(f"call site {text!r} is not PATH.py:QUALNAME")
        return cls(path=path, qualname=qualname)

    def __str__(self) -> str:
        return f"{self.path}:{self.qualname}"


def find_function(module: ast.Module, qualname: str) -> FunctionNode | None:
    """The function or method at `qualname` (`Class.method`, `outer.inner`), or None."""
    scope: list[ast.stmt] = module.body
    node: ast.AST | None = None
    for part in qualname.split("."):
        if part == "<locals>":
            continue
        node = next(
            (
                child
                for child in scope
                if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                and child.name == part
            ),
            None,
        )
        if node is None:
            return None
        scope = node.body
    return node if isinstance(node, FunctionNode) else None


def parse_file(tree: Path, path: str) -> ast.Module | None:
    """The module at `tree/path`, or None when it is missing or does not parse."""
    file = Path(tree) / path
    if not file.is_file():
        return None
    try:
        return parse_python(file.read_text(), filename=str(file))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return None


def locate(tree: Path, site: CallSite) -> FunctionNode | None:
    module = parse_file(tree, site.path)
    return find_function(module, site.qualname) if module else None


def require_call_sites(tree: Path, sites: list[CallSite]) -> None:
    """Refuse call sites that BASE does not define, with the first one named."""
    for site in sites:
        if locate(tree, site) is None:
            raise GateError(f"unknown call site {site}: no such function in {tree}")
