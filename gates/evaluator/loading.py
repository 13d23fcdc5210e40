"""Import a solution from its sources as a private package, never from the repository.

Sources are written under a fresh folder and imported as `_solution_<tag>`, so two
solutions (baseline and candidate) and the live `operators` package never collide.
"""

import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path

from gates.tasks.solution import Solution


class SolutionImportError(Exception):
    """The solution's sources could not be imported or lack the entry point."""


def write_sources(solution: Solution, folder: Path) -> Path:
    """Materialise the sources; returns the real path of the package folder."""
    folder = Path(os.path.realpath(folder))
    folder.mkdir(parents=True, exist_ok=True)
    for source in solution.sources:
        path = folder / source.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source.content)
    return folder


def import_entry(solution: Solution, folder: Path, tag: str) -> Callable:
    """Import the entry file as part of package `_solution_<tag>` and return the function."""
    package_name = f"_solution_{tag}"
    spec = importlib.util.spec_from_file_location(
        package_name, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    package = importlib.util.module_from_spec(spec)
    package.__path__ = [str(folder)]
    sys.modules[package_name] = package
    entry_file = solution.spec.entry_file
    module_name = package_name + "." + entry_file.removesuffix(".py").replace("/", ".")
    try:
        module = importlib.import_module(module_name)
    except Exception as error:
        raise SolutionImportError(f"importing {entry_file} failed: {_describe(error)}") from error
    function = getattr(module, solution.spec.entry_function, None)
    if not callable(function):
        raise SolutionImportError(
            f"{entry_file} defines no callable {solution.spec.entry_function!r}"
        )
    return function


def solution_modules(tag: str) -> list:
    """Every imported module of the solution package `_solution_<tag>`."""
    prefix = f"_solution_{tag}"
    return [m for n, m in sorted(sys.modules.items()) if n == prefix or n.startswith(prefix + ".")]


def _describe(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"
