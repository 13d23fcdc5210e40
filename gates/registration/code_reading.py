"""What a function's code names, read from its code object and its module's source without
running either: the globals it reads, the modules it imports inside, the names through which it
looks objects up as it runs, its defaulted parameters, a digest of its bytecode, and the tree
files a set of files imports.

`registry_snapshot.py` loads this file beside it by path: it runs with `python -I`, where only
the tree under test is importable, so neither imports the controller's packages.
"""

import ast
import dis
import hashlib
import importlib.util
import sys
import types
from pathlib import Path


def package_of(function: types.FunctionType) -> str | None:
    module = sys.modules.get(function.__module__)
    return getattr(module, "__package__", None) if module else None


def defaulted_parameters(function: types.FunctionType) -> list[str]:
    """The names of the parameters that have defaults, in the signature's order."""
    code = function.__code__
    positional = code.co_varnames[: code.co_argcount]
    count = len(function.__defaults__ or ())
    return list(positional[len(positional) - count :]) + list(function.__kwdefaults__ or {})


def modules_imported(code: types.CodeType, package: str | None) -> set[str]:
    """The modules an `import` inside this code (or code nested in it) names, a relative one
    resolved against `package` (the code's module's)."""
    names, constants = set(), []
    for instruction in dis.get_instructions(code):
        if instruction.opname == "IMPORT_NAME":
            level = constants[-2] if len(constants) > 1 and isinstance(constants[-2], int) else 0
            name = instruction.argval
            if level:
                try:
                    name = importlib.util.resolve_name("." * level + name, package)
                except (ImportError, ValueError):
                    name = "." * level + name  # unresolvable: named as written
            names.add(name)
        constants = [*constants, instruction.argval] if instruction.opname == "LOAD_CONST" else []
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= modules_imported(constant, package)
    return names


RUNTIME_LOOKUPS = frozenset(
    {
        "__builtins__", "__dict__", "__getattr__", "__getattribute__", "__globals__",
        "__import__", "__subclasses__", "attrgetter", "eval", "exec", "exec_module",
        "find_spec", "getattr", "getmembers", "getmembers_static", "globals", "import_module",
        "load_module", "locals", "locate", "methodcaller", "module_from_spec", "modules",
        "reload", "resolve_name", "run_module", "run_path", "vars",
    }
)  # fmt: skip
"""Names through which code reaches an object by a name computed as it runs (`getattr`,
`sys.modules[...]`, `importlib.import_module`, `globals()[...]`, ...): what it reaches then is
in no description read from the code."""


def runtime_lookups(names: set[str]) -> list[str]:
    """The RUNTIME_LOOKUPS among `names`, what `names_read` found in a code object."""
    return sorted(names & RUNTIME_LOOKUPS)


def names_read(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= names_read(constant)
    return names


def code_digest(code: types.CodeType) -> str:
    """The code's bytecode, constants and names (not its file or line numbers), recursively."""
    digest = hashlib.sha256()

    def feed(part: types.CodeType) -> None:
        digest.update(part.co_code)
        shape = (
            part.co_names,
            part.co_varnames,
            part.co_freevars,
            part.co_cellvars,
            part.co_argcount,
            part.co_posonlyargcount,
            part.co_kwonlyargcount,
            part.co_flags,
        )
        digest.update(repr(shape).encode())
        for constant in part.co_consts:
            if isinstance(constant, types.CodeType):
                feed(constant)
            elif isinstance(constant, frozenset):
                digest.update(repr(sorted(repr(item) for item in constant)).encode())
            else:
                digest.update(repr(constant).encode())

    feed(code)
    return digest.hexdigest()


def import_closure(tree: Path, files: set[str]) -> set[str]:
    """`files` plus every tree module they import by name, transitively (a package's
    `__init__` only where it is imported itself, not for each of its submodules)."""
    found, pending = set(), sorted(files)
    while pending:
        relative = pending.pop()
        if relative in found or not relative.endswith(".py"):
            continue
        found.add(relative)
        try:
            module = ast.parse((tree / relative).read_text())
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        package = Path(relative).parent.as_posix().replace("/", ".")
        for node in ast.walk(module):
            for target in _imported_files(tree, node, package):
                if target not in found:
                    pending.append(target)
    return found


def _imported_files(tree: Path, node: ast.AST, package: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [f for alias in node.names if (f := _module_path(tree, alias.name))]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        parts = package.split(".") if package and package != "." else []
        parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
        base = ".".join(parts + ([node.module] if node.module else []))
    targets = []
    for alias in node.names:
        submodule = _module_path(tree, f"{base}.{alias.name}") if base else None
        targets.append(submodule or _module_path(tree, base))
    return [target for target in targets if target]


def _module_path(tree: Path, dotted: str) -> str | None:
    if not dotted:
        return None
    path = Path(*dotted.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if (tree / candidate).is_file():
            return candidate.as_posix()
    return None
