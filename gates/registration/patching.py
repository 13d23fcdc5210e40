"""Static tripwire: changed source must not patch other modules at run time.

A registration adds functions and routes calls; it never needs to reassign another module's
attributes, call `setattr`/`delattr` on them, reach into `sys.modules`, `builtins` or
`gc`, or import dynamically. Such code could fake a registry hit, silence the ATen recorder
or swap a kernel only while a gate watches, so the scope gate refuses it in sources and tests
alike (a new test module could otherwise turn `torch.testing.assert_close` into a no-op). The
one exception: pytest's `monkeypatch` fixture aimed at the new operator's own module.
"""

import ast

from gates.python_source import parse_python

FORBIDDEN_CALLS = {
    "setattr",
    "delattr",
    "__import__",
    "exec",
    "eval",
    "compile",
    "globals",
    "vars",
}
DUNDER_HANDLES = {
    "__dict__",
    "__globals__",
    "__code__",
    "__builtins__",
    "__setattr__",
    "__class__",
    "__subclasses__",
}
FORBIDDEN_MODULES = {"builtins", "gc", "importlib", "ctypes", "inspect", "mock"}
FORBIDDEN_SUBMODULES = {"unittest.mock"}
MONKEYPATCH_CALLS = {"setattr", "delattr", "setitem", "delitem", "syspath_prepend", "context"}


def patching_violations(path: str, source: str, own_module: str | None = None) -> list[str]:
    """One line per construct that could patch other code at run time; `own_module` is the
    module a test's `monkeypatch` may target (None: no monkeypatch at all)."""
    try:
        tree = parse_python(source)
    except SyntaxError as error:
        return [f"{path}: does not parse ({error.msg}, line {error.lineno})"]
    modules = _imported_module_names(tree)
    found = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            module = getattr(node, "module", None) or ""
            names.append(module)
            names += [f"{module}.{alias.name}" for alias in node.names] if module else []
            bad = sorted({n.split(".")[0] for n in names} & FORBIDDEN_MODULES)
            bad += sorted({n for n in names if n in FORBIDDEN_SUBMODULES})
            if bad:
                found.append(f"{path}:{line}: imports {bad[0]} (a registration never needs it)")
        elif _is_monkeypatch(node):
            if not _targets_module(node, own_module, _module_bindings(tree)):
                where = own_module or "the new operator's module"
                call = f"monkeypatch.{node.func.attr}"
                found.append(f"{path}:{line}: {call} outside {where} (runtime patching)")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in FORBIDDEN_CALLS:
                found.append(f"{path}:{line}: calls {node.func.id}() (runtime patching)")
        elif isinstance(node, ast.Attribute) and node.attr in DUNDER_HANDLES:
            found.append(f"{path}:{line}: uses {node.attr} (runtime patching)")
        elif isinstance(node, ast.Attribute) and node.attr == "modules":
            if isinstance(node.value, ast.Name) and node.value.id == "sys":
                found.append(f"{path}:{line}: touches sys.modules (runtime patching)")
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
            targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
            for target in targets:
                root = _attribute_root(target)
                if root in modules:
                    found.append(f"{path}:{line}: assigns to an attribute of module {root}")
    return found


def _imported_module_names(tree: ast.Module) -> set[str]:
    """Local names bound to modules by `import x`, `import x as y` or `from pkg import module`."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            # A from-import may bind a module (from operators import ops); treat every bound
            # name as a possible module: assigning attributes of imported objects is patching too.
            names.update(alias.asname or alias.name for alias in node.names)
    return names


def _is_monkeypatch(node: ast.AST) -> bool:
    """`monkeypatch.setattr(...)` and friends (the fixture, or anything named like it)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in MONKEYPATCH_CALLS
        and isinstance(node.func.value, ast.Name)
        and "monkeypatch" in node.func.value.id
    )


def _targets_module(call: ast.Call, own_module: str | None, bindings: dict[str, str]) -> bool:
    if own_module is None or not call.args or call.func.attr not in ("setattr", "delattr"):
        return False
    target = call.args[0]
    if isinstance(target, ast.Constant) and isinstance(target.value, str):
        return target.value.startswith(own_module + ".") and len(call.args) <= 2
    return isinstance(target, ast.Name) and bindings.get(target.id) == own_module


def _module_bindings(tree: ast.Module) -> dict[str, str]:
    """Local name -> dotted path for `import a.b as c` and `from a import b`."""
    bindings = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bindings[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                bindings[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return bindings


def _attribute_root(target: ast.expr) -> str | None:
    """`a.b.c = ...` -> "a"; subscripts and plain names -> None."""
    if not isinstance(target, ast.Attribute):
        return None
    node = target.value
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None
