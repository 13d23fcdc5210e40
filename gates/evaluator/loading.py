"""Import a solution from its sources as a private package, never from the repository.

Each solution (baseline, candidate, incumbent: a tag) is imported as its own package, so two
solutions and the live `operators` package never collide. The package is named as
`controller install` names a profile's operator (`_tuned_<profile>_<operator>`, with a
profile name drawn at random per tag and process), and `deployment_folder` places the sources
as a profile holds them (`tuned/<profile>/<operator>/solution/`): a solution's `__name__` and
`__file__` look the same while judged as after `install`, so they cannot tell it it is judged.
"""

import importlib
import importlib.util
import os
import secrets
import sys
from collections.abc import Callable
from pathlib import Path

from gates.tasks.solution import Solution

DEPLOYED_PREFIX = "_tuned_"  # as `operators.tuned_solution` names an installed operator
_PROFILES: dict[str, str] = {}  # tag -> the random profile name it is imported under
_IMPORTED: dict[str, str] = {}  # tag -> its imported package


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


def deployment_folder(root: Path, tag: str, solution: Solution) -> Path:
    """Where `tag`'s sources go under `root`: the path an installed profile gives them."""
    return Path(root) / "tuned" / _profile(tag) / solution.definition / "solution"


def package_name(tag: str, solution: Solution) -> str:
    """The package `tag`'s solution is imported as (`_tuned_<profile>_<operator>`)."""
    return f"{DEPLOYED_PREFIX}{_profile(tag)}_{solution.definition}"


def _profile(tag: str) -> str:
    """A profile name for `tag`, fixed for this process and unguessable from outside it."""
    if tag not in _PROFILES:
        _PROFILES[tag] = f"p{secrets.token_hex(3)}"
    return _PROFILES[tag]


def import_entry(solution: Solution, folder: Path, tag: str) -> Callable:
    """Import the entry file as part of `tag`'s package (`package_name`) and return the
    function."""
    name = package_name(tag, solution)
    spec = importlib.util.spec_from_file_location(
        name, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    package = importlib.util.module_from_spec(spec)
    package.__path__ = [str(folder)]
    sys.modules[name] = package
    _IMPORTED[tag] = name
    entry_file = solution.spec.entry_file
    module_name = name + "." + entry_file.removesuffix(".py").replace("/", ".")
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
    """Every imported module of `tag`'s solution package."""
    return [sys.modules[name] for name in _module_names(tag)]


def forget(tag: str) -> None:
    """Drop `tag`'s modules (a screening imports hundreds of points in one process)."""
    for name in _module_names(tag):
        del sys.modules[name]
    _IMPORTED.pop(tag, None)
    _PROFILES.pop(tag, None)


def _module_names(tag: str) -> list[str]:
    prefix = _IMPORTED.get(tag)
    if prefix is None:
        return []
    return sorted(n for n in list(sys.modules) if n == prefix or n.startswith(prefix + "."))


def _describe(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"
