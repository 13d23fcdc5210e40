"""Where a new reference branches on its inputs: conditions a reviewer should read.

Parity runs the declared shapes only, so a reference with a branch that only a shape outside
its declared axes (or a rare value) reaches passes every gate. The structure gate lists each
condition in the new reference that reads an input, directly or through a local computed from
one, and the register report shows them; it refuses nothing.
"""

import ast
from typing import Literal

from pydantic import BaseModel, ConfigDict

SHAPE_READS = frozenset(
    {"shape", "size", "dim", "ndim", "numel", "stride", "dtype", "device", "is_contiguous"}
)
"""Attribute and method names whose result depends on an input's layout, not its values."""


class InputBranch(BaseModel):
    """One condition of the reference that reads an input."""

    model_config = ConfigDict(frozen=True)

    line: int
    kind: Literal["if", "while", "conditional expression", "assert", "match"]
    condition: str
    reads: Literal["shape", "values"]


def input_branches(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[InputBranch]:
    """The conditions in `function` that read one of its parameters or a local derived from
    one, in source order."""
    derived = _derived_names(function)
    found = []
    for node in ast.walk(function):
        condition = _condition(node)
        if condition is None:
            continue
        kind, test = condition
        if _reads(test, derived):
            found.append(
                InputBranch(
                    line=test.lineno,
                    kind=kind,
                    condition=ast.unparse(test),
                    reads=_what_it_reads(test, derived),
                )
            )
    return sorted(found, key=lambda branch: branch.line)


def _derived_names(function) -> dict[str, str]:
    """Parameters (`values`) and every local assigned from an expression that reads one, to a
    fixed point, each marked `shape` where it reads only layouts (`rows = x.shape[0]; wide =
    rows > 64` marks both) and `values` otherwise."""
    arguments = function.args
    names = {
        a.arg: "values"
        for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs
        if a.arg not in ("self", "cls")
    }
    names |= {a.arg: "values" for a in (arguments.vararg, arguments.kwarg) if a is not None}
    assignments = [_assignment(node) for node in ast.walk(function)]
    assignments = [pair for pair in assignments if pair is not None]
    changed = True
    while changed:
        changed = False
        for targets, value in assignments:
            if not _reads(value, names):
                continue
            reads = _what_it_reads(value, names)
            for target in targets:
                for name in ast.walk(target):
                    if not isinstance(name, ast.Name) or names.get(name.id) in (reads, "values"):
                        continue
                    names[name.id] = reads if name.id not in names else "values"
                    changed = True
    return names


def _what_it_reads(node: ast.AST, names: dict[str, str]) -> str:
    """`shape` when every input `node` reads is read through its layout, else `values`."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Attribute) and inner.attr in SHAPE_READS:
            continue
        if (
            isinstance(inner, ast.Name)
            and names.get(inner.id) == "values"
            and not _under_layout_read(node, inner)
        ):
            return "values"
    return "shape"


def _under_layout_read(root: ast.AST, name: ast.Name) -> bool:
    """Whether `name` appears only as the object of a layout read (`x.shape`, `len(x)`)."""
    for inner in ast.walk(root):
        if isinstance(inner, ast.Attribute) and inner.attr in SHAPE_READS and inner.value is name:
            return True
        if (
            isinstance(inner, ast.Call)
            and isinstance(inner.func, ast.Name)
            and inner.func.id == "len"
            and name in inner.args
        ):
            return True
    return False


def _assignment(node: ast.AST) -> tuple[list[ast.expr], ast.expr] | None:
    """(targets, value) of a statement or expression that binds names, else None."""
    if isinstance(node, ast.Assign):
        return node.targets, node.value
    if isinstance(node, ast.AugAssign | ast.AnnAssign | ast.NamedExpr) and node.value is not None:
        return [node.target], node.value
    if isinstance(node, ast.For | ast.comprehension):
        return [node.target], node.iter
    return None


def _condition(node: ast.AST) -> tuple[str, ast.expr] | None:
    if isinstance(node, ast.If):
        return "if", node.test
    if isinstance(node, ast.While):
        return "while", node.test
    if isinstance(node, ast.IfExp):
        return "conditional expression", node.test
    if isinstance(node, ast.Assert):
        return "assert", node.test
    if isinstance(node, ast.Match):
        return "match", node.subject
    return None


def _reads(node: ast.AST, names) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node))


def branches_markdown(branches: list[dict]) -> list[str]:
    """Report lines for the register report (an empty list when the reference has none)."""
    if not branches:
        return []
    lines = [
        "Conditions in the new reference that read an input (the parity runs exercise only the "
        "declared shapes; a reviewer should check what the others do):",
        "",
        "| line | kind | reads | condition |",
        "| ---: | --- | --- | --- |",
    ]
    for branch in branches:
        condition = branch["condition"].replace("|", "\\|")
        lines.append(f"| {branch['line']} | {branch['kind']} | {branch['reads']} | `{condition}` |")
    return lines
