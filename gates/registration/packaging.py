"""Whether a new operator's reference can travel in a task package.

`controller generate` writes the reference as standalone source (`gates.tasks.rendering`): the
imports of the libraries it reads, the number and string constants and the helper functions
of its own module (helpers with their defaults), the reference without its defaults, and a
`run` that passes the declared inputs and params. Nothing else travels. A registration whose
reference reads a helper of another module passes every parity gate and then cannot be tuned,
and there are many roads to that helper: imported by name, through a module of the repository
(`parts.helper(x)`), through a class read by name, by an import inside the function, as a
value the function closes over, as a helper's default, set by the repository on a library
module (`torch.helper = ...`), or looked up by a name computed as it runs (`getattr`,
`sys.modules[...]`, `importlib.import_module`). Each is refused here, as is a defaulted
parameter `run` does not pass.

This reads the registry snapshot's description of the reference (its globals, described in
the candidate's fenced process), so nothing of the candidate runs here.
"""

from typing import Any

TRAVELLING = ("module", "float", "ref")
"""Described globals the package carries: installed libraries' modules (one of the repository
is refused first) and floats; `ref` is a value already described (and judged) where it was
first read."""


def packaging_problems(reference: Any, passed: set[str]) -> list[str]:
    """Each global the reference (or a helper of its module it calls) reads that a task package
    cannot carry, named with what it is. `passed`: the declaration's inputs and params, what
    the package's `run` passes (it writes the reference without its defaults)."""
    if not isinstance(reference, dict) or "function" not in reference:
        return [f"the reference is not a plain function ({_what(reference)})"]
    problems = [
        f"`{name}`, a parameter with a default that is neither an input nor a param of the "
        "declaration (the package's `run` would not pass it)"
        for name in reference.get("defaulted") or []
        if name not in passed
    ]
    _walk(reference, reference.get("file"), problems, set(), top=True)
    return problems


def _walk(
    function: dict, file: str | None, problems: list[str], seen: set[str], top: bool = False
) -> None:
    if function["function"] in seen:
        return
    seen.add(function["function"])
    read = dict(function.get("globals") or {})
    if not top:  # a helper is written with its defaults, which the package must carry too
        read.update(_defaults(function))
    if function.get("lookups"):
        names = ", ".join(f"`{name}`" for name in function["lookups"])
        problems.append(
            f"{function['function']} looks objects up by names computed as it runs ({names}): "
            "what it reaches then is not described, and a package carries only what the code "
            "names (write the module and attribute out)"
        )
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
    for name, value in sorted(read.items()):
        if "." in name:  # an attribute of a module: judged with the module, unless the tree
            if _of_tree(value):  # set it there (a package imports the library, not the tree)
                problems.append(
                    f"`{name}` ({_what(value)}, set by the repository on a module), read by "
                    f"{function['function']}"
                )
            continue
        if isinstance(value, bool | int | str):
            continue  # a constant
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


def _of_tree(value: Any) -> bool:
    """A described value defined in the repository, which no module a package imports holds
    (the snapshot describes a library module's attribute only when the tree set it there)."""
    if not isinstance(value, dict):
        return False
    if "function" in value or "class" in value:
        return bool(value.get("file"))
    return "instance" in value


def _defaults(function: dict) -> dict[str, Any]:
    """A helper's described default values, by a name that says whose they are."""
    values = (function.get("defaults") or {}).get("tuple") or []
    keywords = (function.get("keyword_defaults") or {}).get("dict") or []
    owner = function["function"].rsplit(".", 1)[-1]  # no dot: a dotted name is an attribute
    named = {f"default {index} of {owner}": value for index, value in enumerate(values)}
    named.update({f"default {key} of {owner}": value for key, value in keywords})
    return {  # None is written as itself; a library's function, through its module or refused
        name: value  # by `generate` in one line
        for name, value in named.items()
        if value is not None and not (isinstance(value, dict) and "external" in value)
    }


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
