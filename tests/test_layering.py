"""The layers import only downwards: operators and sandbox never reach gates or controller."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

FORBIDDEN = {
    "operators": {"gates", "controller", "sandbox"},
    "sandbox": {"gates", "controller", "operators", "torch"},
    "gates": {"controller"},
}


def imported_top_levels(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_only_lower_layers(package):
    violations = []
    for path in sorted((ROOT / package).rglob("*.py")):
        bad = imported_top_levels(path) & FORBIDDEN[package]
        if bad:
            violations.append(f"{path.relative_to(ROOT)} imports {sorted(bad)}")
    assert not violations, "\n".join(violations)


def test_checker_sees_a_violation(tmp_path):
    planted = tmp_path / "bad.py"
    planted.write_text("from controller.cli import main\nimport gates.errors\n")
    assert imported_top_levels(planted) == {"controller", "gates"}
