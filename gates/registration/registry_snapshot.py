"""Describe every operator one tree's registry resolves, as canonical JSON, in a fresh interpreter.

Started as a script with `python -I`, so only the tree under test is importable; it imports
nothing from the controller's own packages. For each registered operator it writes the
declaration's data, a content identity of its reference and preferred kernel (code, the globals
and closures they read, recursively through everything defined in the tree), what it resolves
to under every kernel profile, and the tree files those depend on. The controller compares two
snapshots and digests the listed files itself, so no judgement happens in this process.
"""

import argparse
import hashlib
import importlib
import importlib.util
import json
import os
import sys
import traceback
import types
from pathlib import Path


def _load_beside(name: str):
    """A module beside this file, loaded by path and kept out of `sys.modules`: this script
    runs with `python -I`, where only the tree under test is importable."""
    spec = importlib.util.spec_from_file_location(
        f"_registry_snapshot_{name}", Path(__file__).with_name(f"{name}.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


code_reading = _load_beside("code_reading")

MAX_ITEMS = 256
MAX_DEPTH = 24
BASE_PROFILES = ("none", "torch", "auto")
IMPLEMENTATIONS = ("reference", "preferred", "stock")
"""A declaration's callables, each described by identity (any other callable field is
described under `other_implementations`, never dumped as data)."""
RUN_CACHES = ("kernel_launch._bound",)
"""State the runtime fills while kernels run (compiled kernels bound per argument layout),
relative to the runtime package: described by where it lives, not by what it holds, so a
description taken after a run is comparable with one taken after the import."""


class Describer:
    """Turns objects into JSON-ready descriptions that are equal exactly when, as far as the
    tree's code is concerned, the objects behave the same; in-tree objects are followed."""

    def __init__(self, tree: Path, run_caches: dict[int, str] | None = None) -> None:
        self.tree = tree
        self.run_caches = run_caches or {}
        self.files: set[str] = set()
        self._seen: dict[int, int] = {}
        self._keep: list[object] = []

    def relative_file(self, path: str | None) -> str | None:
        if not path:
            return None
        try:
            relative = Path(path).resolve().relative_to(self.tree)
        except (ValueError, OSError):
            return None
        if relative.parts[0].startswith(".") or "site-packages" in relative.parts:
            return None  # an environment inside the tree is not the tree's code
        return relative.as_posix()

    def module_file(self, module_name: str | None) -> str | None:
        module = sys.modules.get(module_name or "")
        return self.relative_file(getattr(module, "__file__", None)) if module else None

    def describe(self, value, depth: int = 0):
        if value is None or isinstance(value, bool | int | str):
            return value
        if isinstance(value, float):
            return {"float": repr(value)}
        if depth > MAX_DEPTH:
            return {"too_deep": type(value).__qualname__}
        key = id(value)
        if key in self.run_caches:
            return {"run_cache": self.run_caches[key]}
        if key in self._seen:
            return {"ref": self._seen[key]}
        self._seen[key] = len(self._seen)
        self._keep.append(value)  # ids stay unique while the walk lasts
        return self._describe_new(value, depth + 1)

    def _describe_new(self, value, depth: int):
        if isinstance(value, tuple | list):
            items = [self.describe(item, depth) for item in list(value)[:MAX_ITEMS]]
            return {type(value).__name__: items, "length": len(value)}
        if isinstance(value, dict):
            items = sorted(value.items(), key=lambda item: repr(item[0]))[:MAX_ITEMS]
            return {"dict": [[repr(k), self.describe(v, depth)] for k, v in items]}
        if isinstance(value, set | frozenset):
            return {"set": sorted(repr(item) for item in value)[:MAX_ITEMS]}
        if isinstance(value, types.ModuleType):
            return {"module": value.__name__, "file": self._note(getattr(value, "__file__", None))}
        if isinstance(value, types.FunctionType):
            return self._function(value, depth)
        if isinstance(value, types.MethodType):
            return {"method": self._function(value.__func__, depth)}
        if isinstance(value, type):
            return self._class(value, depth)
        tensor = _tensor_description(value)
        if tensor is not None:
            return tensor
        module = type(value).__module__ or ""
        if hasattr(value, "fn") and module.split(".")[0] == "triton":
            described = {"triton": type(value).__qualname__, "fn": self.describe(value.fn, depth)}
            if hasattr(value, "configs"):
                described["configs"] = [str(config) for config in value.configs]
            return described
        if hasattr(value, "func") and hasattr(value, "keywords"):  # functools.partial
            return {
                "partial": self.describe(value.func, depth),
                "args": self.describe(tuple(value.args), depth),
                "keywords": self.describe(dict(value.keywords), depth),
            }
        if self.module_file(module) is not None and hasattr(value, "__dict__"):
            return {
                "instance": self._class(type(value), depth),
                "state": self.describe(dict(vars(value)), depth),
            }
        if callable(value):
            return {"external": f"{module}.{getattr(value, '__qualname__', type(value).__name__)}"}
        return {"object": f"{module}.{type(value).__qualname__}", "repr": _plain_repr(value)}

    def _note(self, path: str | None) -> str | None:
        relative = self.relative_file(path)
        if relative is not None:
            self.files.add(relative)
        return relative

    def _function(self, function: types.FunctionType, depth: int):
        code = function.__code__
        file = self._note(code.co_filename)
        name = f"{function.__module__}.{function.__qualname__}"
        if file is None:
            return {"external": name}
        names = code_reading.names_read(code)
        scope = function.__globals__
        globals_read = {}
        for global_name in sorted(names):
            if global_name not in scope:
                continue
            value = scope[global_name]
            globals_read[global_name] = self.describe(value, depth)
            if isinstance(value, types.ModuleType) and self.relative_file(
                getattr(value, "__file__", None)
            ):
                for attribute in sorted(names):
                    if attribute != global_name and hasattr(value, attribute):
                        key = f"{global_name}.{attribute}"
                        globals_read[key] = self.describe(getattr(value, attribute), depth)
            elif isinstance(value, types.ModuleType):  # a library's: what the tree set on it
                for key, planted in self._planted(global_name, value, names):
                    globals_read[key] = self.describe(planted, depth)
        closure = [self.describe(_cell(cell), depth) for cell in function.__closure__ or ()]
        package = code_reading.package_of(function)
        imported = {
            module: self._found_file(module)
            for module in sorted(code_reading.modules_imported(code, package))
        }
        defaulted = code_reading.defaulted_parameters(function)
        lookups = code_reading.runtime_lookups(names)
        return {
            **({"imports": imported} if imported else {}),
            **({"lookups": lookups} if lookups else {}),
            **({"defaulted": defaulted} if defaulted else {}),
            "function": name,
            "file": file,
            "code": code_reading.code_digest(code),
            "defaults": self.describe(function.__defaults__, depth),
            "keyword_defaults": self.describe(function.__kwdefaults__, depth),
            "closure": closure,
            "globals": globals_read,
            "attributes": self.describe(dict(vars(function)), depth),
        }

    def _planted(self, prefix: str, module, names: set[str], depth: int = 0):
        """(dotted name, value) of each attribute chain the code names that leads from a
        library module to an object of the tree (a function, a class or an instance the tree
        set on the library), read from the modules' own dictionaries (no lazy import runs)."""
        for attribute in sorted(names):
            value = vars(module).get(attribute)
            if value is None:
                continue
            key = f"{prefix}.{attribute}"
            if isinstance(value, types.ModuleType):
                if depth < 3 and not self.relative_file(getattr(value, "__file__", None)):
                    yield from self._planted(key, value, names, depth + 1)
            elif self._of_tree(value):
                yield key, value

    def _of_tree(self, value) -> bool:
        code = getattr(value, "__code__", None)
        if code is not None:
            return self.relative_file(code.co_filename) is not None
        kind = value if isinstance(value, type) else type(value)
        return self.module_file(getattr(kind, "__module__", None)) is not None

    def _found_file(self, module_name: str) -> str | None:
        """The tree file a module imported inside a function comes from (None: not the
        tree's); found without importing it where it is not imported yet."""
        module = sys.modules.get(module_name)
        if module is not None:
            return self.relative_file(getattr(module, "__file__", None))
        try:
            spec = importlib.util.find_spec(module_name)
        except (ImportError, ValueError):
            return None
        return self.relative_file(getattr(spec, "origin", None)) if spec else None

    def _class(self, cls: type, depth: int):
        name = f"{cls.__module__}.{cls.__qualname__}"
        file = self._note(getattr(sys.modules.get(cls.__module__), "__file__", None))
        if file is None:
            return {"external_class": name}
        own = {
            key: self.describe(value, depth)
            for key, value in sorted(vars(cls).items())
            if not key.startswith("__") and not key.startswith("_abc")
        }
        return {"class": name, "file": file, "attributes": own}


def _cell(cell):
    try:
        return cell.cell_contents
    except ValueError:
        return {"empty_cell": True}


def _tensor_description(value):
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(value, torch.Tensor):
        return None
    flat = value.detach().cpu().contiguous().reshape(-1)
    digest = hashlib.sha256(flat.view(torch.uint8).numpy().tobytes()).hexdigest()
    return {"tensor": str(value.dtype), "shape": list(value.shape), "sha256": digest}


def _plain_repr(value) -> str | None:
    try:
        text = repr(value)
    except Exception:
        return None
    return None if " at 0x" in text else text[:200]


def bound_in(declaration, tree: Path, describer: Describer) -> list[str]:
    """`module:name` of every tree module global that holds `declaration`."""
    places = []
    for name, module in sorted(sys.modules.items()):
        file = describer.relative_file(getattr(module, "__file__", None))
        if file is None:
            continue
        for attribute, value in sorted(vars(module).items()):
            if value is declaration and not attribute.startswith("_"):
                places.append(f"{name}:{attribute}")
                describer.files.add(file)
    return places


def profile_names(runtime) -> list[str]:
    """`none`, `torch`, `auto` and every profile installed in the runtime's tuned folder."""
    names = list(BASE_PROFILES)
    profiles = sys.modules.get(f"{runtime.__name__}.profiles")
    root = getattr(profiles, "TUNED_ROOT", None)
    if root is not None and Path(root).is_dir():
        names += sorted(p.name for p in Path(root).iterdir() if (p / "profile.json").is_file())
    return names


def run_caches(runtime) -> dict[int, str]:
    """The runtime's run caches (`RUN_CACHES`) by object identity, with their dotted names."""
    found = {}
    for dotted in RUN_CACHES:
        module_name, _, attribute = dotted.rpartition(".")
        module = sys.modules.get(f"{runtime.__name__}.{module_name}")
        if module is not None and hasattr(module, attribute):
            found[id(getattr(module, attribute))] = f"{module.__name__}.{attribute}"
    return found


def describe_registry(runtime, tree: Path) -> dict:
    """Every registered operator of `runtime` described, with the profiles resolved; also
    called by the parity probe and the kernel runner after the candidate's code has run."""
    profiles = profile_names(runtime)
    operators = {}
    for name in sorted(runtime.REGISTRY.names()):
        declaration = runtime.REGISTRY.declaration(name)
        operators[name] = describe_operator(runtime, declaration, profiles, tree)
    return {"profiles": profiles, "operators": operators}


def describe_operator(runtime, declaration, profiles: list[str], tree: Path) -> dict:
    describer = Describer(tree, run_caches(runtime))
    implementations = {
        name
        for name in type(declaration).model_fields
        if callable(getattr(declaration, name, None))
    }
    data = declaration.model_dump(mode="json", exclude=implementations | set(IMPLEMENTATIONS))
    snapshot = {
        "declaration": data,
        **{name: describer.describe(getattr(declaration, name, None)) for name in IMPLEMENTATIONS},
        "other_implementations": {
            name: describer.describe(getattr(declaration, name))
            for name in sorted(implementations - set(IMPLEMENTATIONS))
        },
        "bound_in": bound_in(declaration, tree, describer),
        "resolved": {},
    }
    for profile in profiles:
        try:
            resolved = runtime.KernelSelection(profile).resolve(declaration.name)
            snapshot["resolved"][profile] = describer.describe(resolved)
        except Exception as error:  # a profile that refuses to load is part of the answer
            snapshot["resolved"][profile] = {"error": _last_line(error, tree)}
    snapshot["files"] = sorted(code_reading.import_closure(tree, describer.files))
    return snapshot


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--registry-module", required=True)
    parser.add_argument(
        "--also-import",
        action="append",
        default=[],
        help="a module imported before describing (the parity drivers': what they change at "
        "import time is seen)",
    )
    arguments = parser.parse_args(argv)
    tree = arguments.tree.resolve()
    sys.path.insert(0, str(tree))
    os.chdir(tree)
    os.environ.setdefault("CONTROLLER_KERNEL_PROFILE", "none")
    arguments.out.mkdir(parents=True, exist_ok=True)
    result: dict = {"import_error": None, "operators": {}}
    try:
        importlib.import_module(arguments.registry_module)
        runtime = importlib.import_module(arguments.registry_module.split(".")[0])
        for module in arguments.also_import:
            importlib.import_module(module)
        result.update(describe_registry(runtime, tree))
    except Exception as error:  # candidate code may raise anything; report it, do not crash
        result["import_error"] = _last_line(error)
        result["operators"] = {}
    temporary = arguments.out / "snapshot.json.tmp"
    temporary.write_text(json.dumps(result, indent=1, sort_keys=True))
    temporary.replace(arguments.out / "snapshot.json")
    return 0


def _last_line(error: BaseException, tree: Path | None = None) -> str:
    """The error in one line; with `tree`, paths inside it are written relative to it, so the
    same refusal reads the same from BASE's copy of the tree and from the candidate's."""
    frames = traceback.extract_tb(error.__traceback__)
    where = f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    line = f"{type(error).__name__}: {error}{where}"
    if tree is not None:
        line = line.replace(str(tree) + os.sep, "").replace(str(tree), ".")
    return line


if __name__ == "__main__":
    sys.exit(main())
