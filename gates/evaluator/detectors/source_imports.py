"""What a solution's sources may import: an allow-list, because a deny-list of "ways to ask the
host" is never complete (`os.times`, `platform.node`, `socket.gethostname`, a libc clock
through `ctypes`, `/proc/self/stat` through `pathlib`, `psutil`, ...).

A kernel needs tensors, Triton and a little of the standard library; every other module is a
way to ask where or when it runs, or to reach the process around it. The solution's own files
(relative imports that stay inside the solution) are each held to the same rule. Torch itself
answers such questions too (allocator counters, RNG offsets, capture state): those reads are
refused by name, in `torch_probes.py`.
"""

import ast
from pathlib import PurePosixPath

ALLOWED_MODULES = frozenset(
    {
        "__future__",
        "torch",
        "torch.nn",
        "torch.nn.functional",
        "torch.library",  # the vendored launch layer registers its kernels as custom ops
        "torch._subclasses.fake_tensor",  # ... with fake-tensor shapes for the compiler
        "triton",
        "math",
        "functools",
        "itertools",
        "operator",
        "typing",
        "dataclasses",
        "enum",
        "abc",
        "numbers",
        "contextlib",
    }
)
"""Modules a kernel may import by name."""
ALLOWED_PACKAGES = frozenset({"triton.language", "collections"})
"""Packages a kernel may import with any of their submodules (`triton.language.extra`,
`collections.abc`)."""
ALLOWED_SUMMARY = (
    "torch, torch.nn.functional, triton, triton.language, math, functools, itertools, "
    "operator, typing, dataclasses, enum, abc, numbers, collections, contextlib"
)


def refused_imports(node: ast.Import | ast.ImportFrom, path: str, own_package: str | None):
    """What the import statement `node` in the file `path` (relative to the solution's root, or
    to the repository's for an operator) reaches beyond the allow-list, one line each.
    `own_package` is a package the sources may also import by name (the registration target's
    runtime package, whose changed files are checked by the same rule)."""
    if isinstance(node, ast.ImportFrom) and node.level > 0:
        if node.level > len(PurePosixPath(path).parts):
            dots = "." * node.level
            return [f"imports {dots}{node.module or ''} (from outside the solution)"]
        return []
    if isinstance(node, ast.Import):
        modules = [alias.name for alias in node.names]
    else:
        modules = [node.module]
    return [
        f"imports {module} (a kernel may import only {ALLOWED_SUMMARY}, and its own files)"
        for module in modules
        if not allowed_module(module or "", own_package)
    ]


def allowed_module(module: str, own_package: str | None = None) -> bool:
    """Whether a kernel may import `module` by its absolute name."""
    if module in ALLOWED_MODULES:
        return True
    packages = ALLOWED_PACKAGES | ({own_package} if own_package else set())
    return any(module == package or module.startswith(f"{package}.") for package in packages)
