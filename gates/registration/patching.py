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
FORBIDDEN_MODULES = {"builtins", "gc", "importlib", "ctypes", "inspect", "mock", "operator"}
FORBIDDEN_SUBMODULES = {"unittest.mock"}
MONKEYPATCH_CALLS = {"setattr", "delattr", "setitem", "delitem", "syspath_prepend", "context"}
# Methods that change a container in place: called on another module's data, they patch it as
# surely as an assignment does (a launch-settings dict, a table of kernels, a list of hooks).
MUTATING_METHODS = {
    "update",
    "setdefault",
    "pop",
    "popitem",
    "clear",
    "append",
    "extend",
    "insert",
    "remove",
    "discard",
    "__setitem__",
    "__delitem__",
    "__iadd__",
    "__ior__",
}


def patching_violations(path: str, source: str, own_module: str | None = None) -> list[str]:
    """One line per construct that could patch other code at run time; `own_module` is the
    module a test's `monkeypatch` may target (None: no monkeypatch at all)."""
    try:
        tree = parse_python(source)
    except SyntaxError as error:
        return [f"{path}: does not parse ({error.msg}, line {error.lineno})"]
    modules = _imported_module_names(tree)
    from_imported = _from_imported_names(tree)
    aliases = _imported_aliases(tree, modules)
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
                elif (held := _item_root(target, modules, aliases)) is not None:
                    found.append(f"{path}:{line}: changes an item of {held}, imported data")
        elif _mutates_imported(node, modules, from_imported, aliases):
            found.append(f"{path}:{line}: calls .{node.func.attr}() on imported data")
    return found


def _imported_aliases(tree: ast.Module, modules: set[str]) -> set[str]:
    """Local names bound to imported objects (`table = other.TABLE`): mutating them mutates
    the original, so they count as imported. Followed to a fixed point over the whole file."""
    aliases: set[str] = set()
    while True:
        found = set(aliases)
        for node in ast.walk(tree):
            value = getattr(node, "value", None) if isinstance(node, ast.Assign) else None
            if value is not None and _chain_root(value) in modules | aliases:
                found.update(t.id for t in node.targets if isinstance(t, ast.Name))
        if found == aliases:
            return aliases
        aliases = found


def _chain_root(node: ast.expr) -> str | None:
    """The name under a chain of attributes and subscripts (`a.b[1].c` -> "a"), or None when
    a call or anything else makes the result a new object."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _item_root(target: ast.expr, modules: set[str], aliases: set[str]) -> str | None:
    """For `x[k] = v` or `del x[k]` where x reaches imported data: the root's name. A
    subscript of `getattr(...)` counts too (the object was fetched by name)."""
    if not isinstance(target, ast.Subscript):
        return None
    inner = target.value
    while isinstance(inner, ast.Attribute | ast.Subscript):
        inner = inner.value
    if isinstance(inner, ast.Call) and getattr(inner.func, "id", None) == "getattr":
        return "getattr(...)"
    root = _chain_root(target.value)
    return root if root in modules | aliases else None


def _mutates_imported(
    node: ast.AST, modules: set[str], from_imported: set[str], aliases: set[str]
) -> bool:
    """`other.TABLE.update(...)`, `TABLE.append(...)` with TABLE imported or aliased. A method
    called on a module itself (`numpy.append`) is a function, not a mutation."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in MUTATING_METHODS
    ):
        return False
    receiver = node.func.value
    root = _chain_root(receiver)
    if root in aliases:
        return True
    if isinstance(receiver, ast.Attribute | ast.Subscript):
        return root in modules
    return root in from_imported


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


def _from_imported_names(tree: ast.Module) -> set[str]:
    """Local names bound by `from module import name`: objects, not only modules."""
    return {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


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
