"""No import circles among the project's packages: a module that needs a piece of another
module that needs it back moves the shared piece to where it belongs instead.

Every import counts, those inside functions too, so hiding one in a function does not pass.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("controller", "gates", "operators", "sandbox", "examples")


def project_modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of the packages (a package is its
    `__init__.py`)."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules one module imports: `from a import b` means `a.b` where that is a
    module, else `a`; relative imports are resolved against the module's package."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(parent + ([node.module] if node.module else []))
            for alias in node.names:
                child = f"{base}.{alias.name}"
                if child in modules:
                    found.add(child)
                elif base in modules:
                    found.add(base)
    found.discard(name)
    return found


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    modules = project_modules(root)
    return {name: imported_modules(name, path, modules) for name, path in modules.items()}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def describe(cycle: list[str], graph: dict[str, set[str]]) -> str:
    members = set(cycle)
    edges = "; ".join(f"{name} -> {', '.join(sorted(graph[name] & members))}" for name in cycle)
    return f"import circle among {', '.join(cycle)}: {edges}"


def test_no_import_cycles():
    graph = import_graph()
    assert graph, "no modules found"
    cycles = import_cycles(graph)
    assert not cycles, "\n".join(describe(cycle, graph) for cycle in cycles)


def test_the_checker_sees_a_circle_through_a_function_and_a_package(tmp_path):
    factory = tmp_path / "sandbox"
    factory.mkdir()
    (factory / "__init__.py").write_text("from sandbox.shared import Kind\n")
    (factory / "shared.py").write_text("def pick():\n    from .fence import Fence\n")
    (factory / "fence.py").write_text("from sandbox import Kind\n")
    (factory / "alone.py").write_text("import sandbox.shared\n")
    graph = import_graph(tmp_path)
    assert graph["sandbox.shared"] == {"sandbox.fence"}
    assert import_cycles(graph) == [["sandbox", "sandbox.fence", "sandbox.shared"]]
