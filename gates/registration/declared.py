"""Which operators a tree's catalog declares, read from its source without importing it.

Used to refuse, before any run starts, a registration of an operator that already exists.
"""

import ast
from pathlib import Path

from gates.python_source import parse_python
from gates.target import TargetConfig


def declared_operators(tree: Path, config: TargetConfig) -> set[str]:
    """Names given to `OperatorDeclaration(name=...)` anywhere under the registry package."""
    package = Path(tree, *config.registry_module.split("."))
    files = sorted(package.rglob("*.py")) if package.is_dir() else [package.with_suffix(".py")]
    names: set[str] = set()
    for file in files:
        if not file.is_file():
            continue
        try:
            module = parse_python(file.read_text())
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(module):
            if isinstance(node, ast.Call) and _callee_name(node).endswith("OperatorDeclaration"):
                for keyword in node.keywords:
                    if keyword.arg == "name" and isinstance(keyword.value, ast.Constant):
                        names.add(str(keyword.value.value))
    return names


def _callee_name(call: ast.Call) -> str:
    callee = call.func
    if isinstance(callee, ast.Name):
        return callee.id
    return callee.attr if isinstance(callee, ast.Attribute) else ""


def reference_location(tree: Path, config: TargetConfig, operator: str) -> tuple[str, str] | None:
    """(file, function name) of `operator`'s reference when its declaration names a function
    defined in the same module; None when only importing the registry could tell."""
    package = Path(tree, *config.registry_module.split("."))
    for file in sorted(package.rglob("*.py")) if package.is_dir() else []:
        try:
            module = parse_python(file.read_text())
        except (SyntaxError, UnicodeDecodeError):
            continue
        defined = {node.name for node in module.body if isinstance(node, ast.FunctionDef)}
        for node in ast.walk(module):
            if not (isinstance(node, ast.Call) and _callee_name(node).endswith("Declaration")):
                continue
            keywords = {k.arg: k.value for k in node.keywords if k.arg}
            name, reference = keywords.get("name"), keywords.get("reference")
            if (
                isinstance(name, ast.Constant)
                and name.value == operator
                and isinstance(reference, ast.Name)
                and reference.id in defined
            ):
                return file.relative_to(tree).as_posix(), reference.id
    return None
