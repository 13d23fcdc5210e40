"""Perturb an operator's reference by rewriting its syntax tree, to see if the tests notice.

Two mutations: scale every returned value by (1 + 1e-3), and drop the last operation of each
returned expression (`F.gelu(x, ...)` becomes `x`, `a.to(t)` becomes `a`, `a * b` becomes `a`).
"""

import ast

from gates.python_source import parse_python
from gates.registration.call_sites import FunctionNode, find_function

SCALE = 1.0 + 1e-3


class MutationError(Exception):
    """The reference cannot be mutated this way (not found, or nothing to drop)."""


def mutate(source: str, qualname: str, mutation: str) -> str:
    """The module source with the function at `qualname` rewritten by `mutation`."""
    module = parse_python(source)
    function = find_function(module, qualname)
    if function is None:
        raise MutationError(f"{qualname} is not a function in its module")
    returns = list(_own_returns(function))
    if not returns or any(r.value is None for r in returns):
        raise MutationError(f"{qualname} has no return value to perturb")
    for statement in returns:
        if mutation == "scaled":
            statement.value = ast.BinOp(statement.value, ast.Mult(), ast.Constant(SCALE))
        elif mutation == "last_operation_dropped":
            _drop_last_operation(function, statement)
        else:
            raise MutationError(f"unknown mutation {mutation!r}")
    return ast.unparse(ast.fix_missing_locations(module)) + "\n"


def _own_returns(function: FunctionNode):
    """Return statements of this function, not of functions or classes nested in it."""
    pending = list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Return):
            yield node
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            pending.extend(ast.iter_child_nodes(node))


def _drop_last_operation(function: FunctionNode, statement: ast.Return) -> None:
    local = _local_names(function)
    dropped = _without_last_operation(statement.value, local)
    if dropped is not None:
        statement.value = dropped
        return
    if isinstance(statement.value, ast.Name):
        assignment = _last_assignment(function, statement.value.id)
        if assignment is not None:
            dropped = _without_last_operation(assignment.value, local)
            if dropped is not None:
                assignment.value = dropped
                return
    raise MutationError(f"cannot find a last operation in `return {ast.unparse(statement.value)}`")


def _without_last_operation(expression: ast.expr, local: set[str]) -> ast.expr | None:
    if isinstance(expression, ast.Call):
        callee = expression.func
        is_method = isinstance(callee, ast.Attribute) and not (
            isinstance(callee.value, ast.Name) and callee.value.id not in local
        )
        if is_method:
            return callee.value
        return expression.args[0] if expression.args else None
    if isinstance(expression, ast.BinOp):
        return expression.left
    if isinstance(expression, ast.UnaryOp):
        return expression.operand
    return None


def _local_names(function: FunctionNode) -> set[str]:
    names = {a.arg for a in function.args.args + function.args.kwonlyargs}
    names |= {
        n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    return names


def _last_assignment(function: FunctionNode, name: str) -> ast.Assign | None:
    found = None
    for node in function.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            found = node
    return found
