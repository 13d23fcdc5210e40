"""An installed tuned kernel: the exported solution imported as its own package, used only on
the argument layouts the evaluator verified.

`controller install` writes `tuned/<profile>/<op>/kernel.py`, which calls `installed_kernel`;
`profile.json` (whose digests `load_profile` checks first) names the entry point and layouts.
"""

import importlib
import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from operators.errors import ProfileError
from operators.layouts import ArgumentSignature, TensorLayout, VerifiedLayouts

SOLUTION_FOLDER = "solution"


def installed_kernel(kernel_file: str) -> tuple[Callable[..., Any], Callable[..., bool]]:
    """(kernel, applies) for the operator whose folder holds `kernel_file`."""
    folder = Path(kernel_file).resolve().parent
    profile_folder, operator = folder.parent, folder.name
    entry = json.loads((profile_folder / "profile.json").read_text())["operators"][operator]
    package = f"_tuned_{profile_folder.name}_{operator}"
    kernel = import_solution_entry(folder / SOLUTION_FOLDER, entry["entry_point"], package)
    layouts = VerifiedLayouts([signature_from_json(item) for item in entry["layouts"]])
    return kernel, layouts.applies


def import_solution_entry(folder: Path, entry_point: str, package: str) -> Callable[..., Any]:
    """Import `file.py::function` of the sources in `folder` as package `package`."""
    entry_file, function_name = entry_point.split("::", 1)
    spec = importlib.util.spec_from_file_location(
        package, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    if spec is None:
        raise ProfileError(f"cannot import the tuned solution in {folder}")
    module = importlib.util.module_from_spec(spec)
    module.__path__ = [str(folder)]
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
        del sys.modules[name]  # a reinstalled profile imports its new sources
    sys.modules[package] = module
    entry = importlib.import_module(
        package + "." + entry_file.removesuffix(".py").replace("/", ".")
    )
    function = getattr(entry, function_name, None)
    if not callable(function):
        raise ProfileError(f"{folder / entry_file} defines no callable {function_name!r}")
    return function


def signature_to_json(signature: ArgumentSignature) -> list:
    return [
        item.model_dump(mode="json") if isinstance(item, TensorLayout) else item
        for item in signature
    ]


def signature_from_json(items: list) -> ArgumentSignature:
    return tuple(TensorLayout(**item) if isinstance(item, dict) else item for item in items)
