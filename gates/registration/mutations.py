"""Perturb an operator's reference by rewriting its syntax tree, to see if the tests notice.

Two mutations: scale every returned value by (1 + 1e-3), and drop the last operation of each
returned expression (`F.gelu(x, ...)` becomes `x`, `a.to(t)` becomes `a`, `a * b` becomes `a`).
A reference that returns a tuple literal is perturbed one output at a time, so a test that
checks only some outputs is caught; any other returned tuple, list, named tuple or dict is
scaled item by item at run time (multiplying the container itself would raise, which any test
would "notice").
"""

import ast

from gates.python_source import parse_python
from gates.registration.call_sites import FunctionNode, find_function

SCALE = 1.0 + 1e-3
SCALED_HELPER = "_scaled_by_the_effectiveness_gate"
_HELPER_SOURCE = f"""
def {SCALED_HELPER}(value):
    if isinstance(value, dict):
        return {{key: {SCALED_HELPER}(item) for key, item in value.items()}}
    if isinstance(value, (tuple, list)):
        items = [{SCALED_HELPER}(item) for item in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    return value * {SCALE!r}
"""


class MutationError(Exception):
    """The reference cannot be mutated this way (not found, or nothing to drop)."""


def returned_outputs(source: str, qualname: str) -> int | None:
    """How many outputs every return of the function spells out as one tuple literal (each
    is then perturbed alone), or None where a return gives one value or a computed tuple."""
    _, _, returns = _returns(source, qualname)
    lengths = {len(r.value.elts) if isinstance(r.value, ast.Tuple) else None for r in returns}
    return lengths.pop() if len(lengths) == 1 else None


def mutate(source: str, qualname: str, mutation: str, output: int | None = None) -> str:
    """The module source with the function at `qualname` rewritten by `mutation`, applied to
    the returned tuple's item `output` alone where given (see `returned_outputs`)."""
    module, function, returns = _returns(source, qualname)
    for statement in returns:
        if output is None:
            statement.value = _mutated(function, statement.value, mutation)
        else:
            items = statement.value.elts
            items[output] = _mutated(function, items[output], mutation)
    if SCALED_HELPER in ast.unparse(function):
        module.body.extend(parse_python(_HELPER_SOURCE).body)
    return ast.unparse(ast.fix_missing_locations(module)) + "\n"


def _mutated(function: FunctionNode, value: ast.expr, mutation: str) -> ast.expr:
    """One returned expression rewritten by `mutation`."""
    if mutation == "scaled":
        if _plainly_one_value(value):
            return ast.BinOp(value, ast.Mult(), ast.Constant(SCALE))
        return ast.Call(ast.Name(SCALED_HELPER, ast.Load()), [value], [])
    if mutation == "last_operation_dropped":
        return _drop_last_operation(function, value)
    raise MutationError(f"unknown mutation {mutation!r}")


def _returns(source: str, qualname: str) -> tuple[ast.Module, FunctionNode, list[ast.Return]]:
    """The parsed module, the function at `qualname` in it, and its own return statements."""
    module = parse_python(source)
    function = find_function(module, qualname)
    if function is None:
        raise MutationError(f"{qualname} is not a function in its module")
    returns = list(_own_returns(function))
    if not returns or any(r.value is None for r in returns):
        raise MutationError(f"{qualname} has no return value to perturb")
    return module, function, returns


def _plainly_one_value(value: ast.expr) -> bool:
    """Whether the returned expression is an arithmetic operation, which gives one value; a
    name, a call or a container may hold a tuple, a list or a dict, so those are scaled by the
    helper at run time."""
    return isinstance(value, ast.BinOp | ast.UnaryOp | ast.Constant)


def _own_returns(function: FunctionNode):
    """Return statements of this function, not of functions or classes nested in it."""
    pending = list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Return):
            yield node
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            pending.extend(ast.iter_child_nodes(node))


def _drop_last_operation(function: FunctionNode, value: ast.expr) -> ast.expr:
    """The returned expression without its last operation, or unchanged where the operation
    dropped is in the assignment of the name it returns."""
    local = _local_names(function)
    dropped = _without_last_operation(value, local)
    if dropped is not None:
        return dropped
    if isinstance(value, ast.Name):
        assignment = _last_assignment(function, value.id)
        if assignment is not None:
            dropped = _without_last_operation(assignment.value, local)
            if dropped is not None:
                assignment.value = dropped
                return value
    raise MutationError(f"cannot find a last operation in `return {ast.unparse(value)}`")


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
