"""An inference driver named on the command line: `module:function [ARGS]` (ARGS as Python
literals, else strings) or `path/to/script.py [ARGS]` (run as `__main__` with those argv)."""

import ast
import importlib
import runpy
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controller.errors import ControllerError


def add_driver_argument(parser) -> None:
    """The trailing DRIVER of `capture-ops` and `profile`, the form `load_driver` reads."""
    parser.add_argument(
        "driver",
        nargs="+",
        metavar="DRIVER",
        help="after `--`: module:function [ARGS] or script.py [ARGS], e.g. "
        "`-- controller.profiling.example_driver:forward pi05 1` (the example model at pi05 "
        "size, batch 1)",
    )


def load_driver(driver: list[str]) -> Callable[[], Any]:
    """A function that runs one step of the driver; bad names are one-line errors."""
    if not driver:
        raise ControllerError("no driver given; pass `-- module:function [ARGS]` or `-- script.py`")
    name, arguments = driver[0], driver[1:]
    if name.endswith(".py"):
        script = Path(name)
        if not script.is_file():
            raise ControllerError(f"driver script {name} does not exist")
        return lambda: _run_script(script, arguments)
    module_name, _, function_name = name.partition(":")
    if not module_name or not function_name:
        raise ControllerError(f"driver {name!r}: give module:function or a .py script")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ControllerError(f"driver {name!r}: cannot import {module_name} ({error})") from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise ControllerError(f"driver {name!r}: {module_name} has no function {function_name}")
    values = [_literal(argument) for argument in arguments]
    return lambda: function(*values)


def _run_script(script: Path, arguments: list[str]) -> Any:
    saved = sys.argv
    sys.argv = [str(script), *arguments]
    try:
        return runpy.run_path(str(script), run_name="__main__")
    finally:
        sys.argv = saved


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
