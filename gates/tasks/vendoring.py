"""Vendor the production kernel's module, and the repository modules it imports, as sources.

Files keep their repository paths inside the solution; the only rewrite turns absolute
imports of repository packages into relative ones, so the solution imports its own copies
and not the live repository. The kernel runtime (the interpreter switch and the launcher) is
always vendored, so a solution for an operator whose production path is plain PyTorch (a
fusion registered for tuning) can launch Triton kernels the way the catalog's kernels do.
"""

import ast
import inspect
from pathlib import Path, PurePosixPath

from gates.errors import GateError
from gates.python_source import parse_python

REPOSITORY_PACKAGES = ("operators",)
KERNEL_RUNTIME = ("operators/triton_runtime.py", "operators/kernel_launch.py")


def repository_root() -> Path:
    """The folder holding the top-level packages (`operators`, `gates`, ...)."""
    return Path(__file__).resolve().parent.parent.parent


def vendor_module_of(function, root: Path | None = None) -> tuple[str, dict[str, str]]:
    """The entry file path and {path: rewritten source} for the function's module closure."""
    root = root or repository_root()
    source_file = inspect.getsourcefile(function)
    if source_file is None:
        raise GateError(f"cannot find the source of {function.__qualname__}")
    entry = Path(source_file).resolve().relative_to(root).as_posix()
    runtime = [path for path in KERNEL_RUNTIME if (root / path).is_file()]
    pending, sources = [entry, *runtime], {}
    while pending:
        relative = pending.pop()
        if relative in sources:
            continue
        text = (root / relative).read_text()
        dependencies, rewritten = _rewrite_imports(relative, text, root)
        sources[relative] = rewritten
        pending.extend(dependencies)
    return entry, dict(sorted(sources.items()))


def _rewrite_imports(relative: str, text: str, root: Path) -> tuple[list[str], str]:
    tree = parse_python(text)
    lines = text.splitlines(keepends=True)
    package_depth = len(PurePosixPath(relative).parts) - 1
    dependencies, edits = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in REPOSITORY_PACKAGES:
                    raise GateError(
                        f"{relative}:{node.lineno}: 'import {alias.name}' cannot be vendored; "
                        "use 'from ... import ...'"
                    )
        if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
            continue
        if node.module.split(".")[0] not in REPOSITORY_PACKAGES:
            continue
        dependencies.extend(_module_files(node, root))
        edits.append((node, "." * (package_depth + 1) + node.module))
    for node, relative_module in sorted(edits, key=lambda e: (e[0].lineno, e[0].col_offset)):
        line = lines[node.lineno - 1]
        old = f"from {node.module}"
        start = line.find(old, node.col_offset)
        if start < 0:
            raise GateError(f"{relative}:{node.lineno}: cannot rewrite a split import line")
        lines[node.lineno - 1] = line[:start] + f"from {relative_module}" + line[start + len(old) :]
    return dependencies, "".join(lines)


def _module_files(node: ast.ImportFrom, root: Path) -> list[str]:
    base = PurePosixPath(*node.module.split("."))
    files = []
    module_file = base.with_suffix(".py")
    if (root / module_file).is_file():
        files.append(module_file.as_posix())
    elif (root / base / "__init__.py").is_file():
        for alias in node.names:
            submodule = base / f"{alias.name}.py"
            if (root / submodule).is_file():
                files.append(submodule.as_posix())
            else:
                files.append((base / "__init__.py").as_posix())
    else:
        raise GateError(f"cannot find repository module {node.module}")
    return files
