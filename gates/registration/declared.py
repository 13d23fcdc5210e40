"""Which operators a tree's catalog declares, read from its source without importing it.

Used to refuse, before any run starts, a registration of an operator that already exists.
"""

import ast
from pathlib import Path

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
            module = ast.parse(file.read_text())
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
