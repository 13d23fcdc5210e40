"""Whether a new operator's reference can travel in a task package.

`controller generate` writes the reference as standalone source (`gates.tasks.rendering`): it
carries the imports of the libraries the reference reads, and the number and string constants
and helper functions of its own module, nothing else: no class it reads by name. A reference
that reads a helper of another module passes every parity gate and then cannot be tuned; a
registration did exactly that. A module of the repository itself (`parts.helper(x)` after
`from pkg import parts`) is the same helper by another road, and so is one imported inside
the function, or a value the function closes over: the package would name what it does not
carry.

This reads the registry snapshot's description of the reference (its globals, described in
the candidate's fenced process), so nothing of the candidate runs here.
"""

from typing import Any

TRAVELLING = ("module", "float", "ref")
"""Described globals the package carries: installed libraries' modules (one of the repository
is refused first) and floats; `ref` is a value already described (and judged) where it was
first read. A class read by name is not carried (its staticmethod would be a helper of another
module by a third road)."""


def packaging_problems(reference: Any) -> list[str]:
    """Each global the reference (or a helper of its module it calls) reads that a task package
    cannot carry, named with what it is."""
    if not isinstance(reference, dict) or "function" not in reference:
        return [f"the reference is not a plain function ({_what(reference)})"]
    problems: list[str] = []
    _walk(reference, reference.get("file"), problems, set())
    return problems


def _walk(function: dict, file: str | None, problems: list[str], seen: set[str]) -> None:
    if function["function"] in seen:
        return
    seen.add(function["function"])
    if function.get("closure"):
        problems.append(
            f"{function['function']} closes over {len(function['closure'])} value(s) of the "
            "function that made it (a package writes the function alone)"
        )
    for module, module_file in sorted((function.get("imports") or {}).items()):
        if module_file:
            problems.append(
                f"module {module} of the repository ({module_file}), imported inside "
                f"{function['function']}"
            )
    for name, value in sorted((function.get("globals") or {}).items()):
        if "." in name or isinstance(value, bool | int | str):
            continue  # an attribute of a module read (judged with the module), or a constant
        if isinstance(value, dict) and "module" in value and value.get("file"):
            problems.append(
                f"`{name}` (module {value['module']} of the repository, {value['file']}), "
                f"read by {function['function']}"
            )
            continue
        if isinstance(value, dict) and any(key in value for key in TRAVELLING):
            continue
        if isinstance(value, dict) and "function" in value and value.get("file") == file:
            _walk(value, file, problems, seen)
            continue
        problems.append(f"`{name}` ({_what(value)}), read by {function['function']}")


def _what(value: Any) -> str:
    if isinstance(value, dict):
        if "function" in value:
            return f"function {value['function']} of another module"
        if "external" in value:
            return f"{value['external']}, imported by name"
        if "class" in value or "external_class" in value:
            return f"class {value.get('class') or value['external_class']}, read by name"
        return next(iter(value), "an object")
    return type(value).__name__
