"""Run one tree's parity drivers in a fresh interpreter and write what the gates compare.

Started as a script with `python -I`, so only the tree under test is importable: BASE's and
the candidate's modules never mix, and the controller never imports candidate code. For each
parity configuration (declared, then hidden: the hidden-parity driver at drawn batch sizes and
seeds) it records the eager ATen sequence, the registry hits per call site and the outputs
(digests plus the tensors), under `kernel_profile=none`. Then it calls each selected call site
directly, on the object and arguments it saw in the first configuration but with random inputs
of drawn leading sizes, and records those outputs and hits too. Last, with everything the
candidate's code does on a call done, it describes every registered operator again
(`registry_snapshot.describe_registry`, loaded from its file before the tree is imported), so
another operator's launch table changed at run time is seen. It imports nothing from the
controller's own packages.
"""

import argparse
import contextlib
import functools
import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import sys
import traceback
from pathlib import Path


def describe(value, torch) -> str:
    """dtype[shape]@(strides) of every tensor in `value`, the part the ATen gate compares."""
    if isinstance(value, torch.Tensor):
        shape = ",".join(str(size) for size in value.shape)
        strides = ""
        if value.layout == torch.strided:
            strides = ",".join(str(stride) for stride in value.stride())
        return f"{str(value.dtype).removeprefix('torch.')}[{shape}]@({strides})"
    if isinstance(value, list | tuple):
        inner = [describe(item, torch) for item in value]
        inner = [item for item in inner if item]
        return "[" + ", ".join(inner) + "]" if inner else ""
    return ""


def make_recorder(torch):
    from torch.utils._python_dispatch import TorchDispatchMode

    class AtenRecorder(TorchDispatchMode):
        """Appends `overload(inputs) -> outputs` for every ATen call, in order, and the call's
        place in the dataflow: its non-tensor arguments and, per tensor argument, the call that
        last produced or wrote that tensor (or, for a tensor no call produced, its contents'
        digest)."""

        def __init__(self):
            super().__init__()
            self.calls: list[str] = []
            self.dataflow: list[dict] = []
            self._producers: dict[int, list] = {}
            self._digests: dict[int, str] = {}
            self._kept: list = []  # every tensor seen stays alive, so no id is reused

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            result = func(*args, **kwargs)
            inputs = [describe(a, torch) for a in list(args) + list(kwargs.values())]
            outputs = describe(result if isinstance(result, tuple) else (result,), torch)
            self.calls.append(f"{func}({', '.join(i for i in inputs if i)}) -> {outputs}")
            self.dataflow.append(self._node(func, args, kwargs, result))
            return result

        def _node(self, func, args, kwargs, result) -> dict:
            values = [*args, *(kwargs[key] for key in sorted(kwargs))]
            node = {
                "label": self.calls[-1],
                "arguments": [self._reference(value) for value in values],
                "keywords": sorted(kwargs),
            }
            index = len(self.dataflow)
            produced = result if isinstance(result, tuple | list) else (result,)
            for position, value in enumerate(produced):
                if isinstance(value, torch.Tensor):
                    self._kept.append(value)
                    self._producers[id(value)] = ["call", index, position]
            for value in _written(func, args, kwargs):  # written in place: produced here now
                if isinstance(value, torch.Tensor):
                    self._producers[id(value)] = ["call", index, -1]
            return node

        def _reference(self, value):
            if isinstance(value, torch.Tensor):
                if id(value) not in self._producers:
                    self._kept.append(value)
                    self._producers[id(value)] = ["input", _contents_digest(value, torch)]
                return self._producers[id(value)]
            if isinstance(value, list | tuple):
                return [self._reference(item) for item in value]
            if value is None or isinstance(value, bool | int | float | str):
                return ["value", repr(value)]
            if isinstance(value, torch.dtype | torch.device | torch.layout | torch.memory_format):
                return ["value", str(value)]
            return ["value", type(value).__name__]  # a generator, say: no address in a name

    return AtenRecorder


def _written(func, args, kwargs) -> list:
    """The arguments an op writes into (`add_`'s self, an `out=` tensor), by its schema."""
    written = []
    for position, argument in enumerate(func._schema.arguments):
        alias = argument.alias_info
        if alias is None or not alias.is_write:
            continue
        if argument.name in kwargs:
            written.append(kwargs[argument.name])
        elif position < len(args):
            written.append(args[position])
    return written


def _contents_digest(tensor, torch) -> str:
    """What a tensor no recorded call produced holds (a parameter, an input): its layout and
    bytes, so the same value fed in another order is the same input."""
    try:
        data = output_digest(tensor, torch)["sha256"][:16]
    except (RuntimeError, TypeError):  # no storage to read (meta): its layout alone
        data = "unreadable"
    return f"{describe(tensor, torch)}#{data}"


def output_digest(tensor, torch) -> dict:
    flat = tensor.detach().cpu().contiguous().reshape(-1)
    digest = hashlib.sha256(flat.view(torch.uint8).numpy().tobytes()).hexdigest()
    return {"dtype": str(tensor.dtype), "shape": list(tensor.shape), "sha256": digest}


def relative(path: str, tree: Path) -> str:
    try:
        return Path(path).resolve().relative_to(tree).as_posix()
    except ValueError:
        return path


def declaration_info(runtime, operator: str, tree: Path) -> dict:
    registry = runtime.REGISTRY
    info = {"registered": sorted(registry.names()), "operator": None}
    if operator and operator in registry:
        declaration = registry.declaration(operator)
        reference = declaration.reference
        info["operator"] = {
            "reference_file": relative(inspect.getsourcefile(reference) or "", tree),
            "reference_qualname": getattr(reference, "__qualname__", ""),
            "has_preferred": declaration.preferred is not None,
        }
    return info


def run_configuration(call, index: int, runtime, out: Path, tree: Path) -> dict:
    """Run `call()` (one driver) under the recorder and save its outputs as outputs-<index>.pt."""
    import torch

    recorder = make_recorder(torch)()
    torch.manual_seed(0)
    record_calls = getattr(runtime, "record_registry_calls", contextlib.nullcontext)
    with (
        runtime.use_kernel_profile("none"),
        runtime.record_registry_hits() as hits,
        record_calls() as calls,
        recorder,
    ):
        outputs = call()
    if not isinstance(outputs, dict) or not all(
        isinstance(v, torch.Tensor) for v in outputs.values()
    ):
        raise TypeError(f"the driver must return dict[str, Tensor], got {type(outputs).__name__}")
    tensors_file = out / f"outputs-{index}.pt"
    torch.save({k: v.detach().cpu() for k, v in outputs.items()}, tensors_file)
    return {
        "aten": recorder.calls,
        "dataflow": recorder.dataflow,
        "calls": [
            [op, relative(file, tree), qualname, list(arguments), list(keywords), list(results), n]
            for (op, file, qualname, arguments, keywords, results), n in (calls or {}).items()
        ],
        "hits": [
            [op, relative(file, tree), qualname, n] for (op, file, qualname), n in hits.items()
        ],
        "outputs": {name: output_digest(value, torch) for name, value in outputs.items()},
        "tensors": tensors_file.name,
        "error": None,
    }


def driver_call(driver: str, **arguments):
    module_name, _, function_name = driver.partition(":")
    function = getattr(importlib.import_module(module_name), function_name)
    return functools.partial(function, **arguments)


class CallCapture:
    """Replaces each call site's function by a wrapper that keeps its first call's arguments."""

    def __init__(self, sites: list[str]) -> None:
        self.sites = sites
        self.seen: dict[str, tuple] = {}
        self.errors: dict[str, str] = {}
        self.installed: list[tuple] = []

    def __enter__(self):
        for site in self.sites:
            try:
                owner, name, original = _site_function(site)
            except Exception as error:
                self.errors[site] = f"cannot be located: {_last_line(error)}"
                continue
            setattr(owner, name, self._wrapper(site, original))
            self.installed.append((owner, name, original))
        return self

    def __exit__(self, *exc) -> None:
        for owner, name, original in self.installed:
            setattr(owner, name, original)

    def _wrapper(self, site: str, original):
        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            if site not in self.seen:
                self.seen[site] = (original, args, kwargs)
            return original(*args, **kwargs)

        return wrapper


def _site_function(site: str):
    path, _, qualname = site.rpartition(":")
    module_name = path.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
    owner = importlib.import_module(module_name)
    parts = qualname.split(".")
    for part in parts[:-1]:
        owner = getattr(owner, part)
    original = vars(owner)[parts[-1]]
    if not inspect.isfunction(original):
        raise TypeError(f"{qualname} is not a plain function or method")
    return owner, parts[-1], original


def direct_calls(capture: CallCapture, plan: dict, runtime, out: Path, tree: Path) -> dict:
    """Call each captured call site on drawn inputs; outputs and registry hits per size."""
    import torch

    results: dict[str, list] = {site: [{"error": e}] for site, e in capture.errors.items()}
    for site_index, site in enumerate(capture.sites):
        if site not in capture.seen:
            results.setdefault(site, [{"error": "was never called by the first configuration"}])
            continue
        original, args, kwargs = capture.seen[site]
        results[site] = []
        # what the site was first called with (a registration that moves work changes it)
        layouts = describe([*args, *(kwargs[name] for name in sorted(kwargs))], torch)
        arguments = f"{len(args)} arguments, keywords {sorted(kwargs)}: {layouts}"
        for size_index, size in enumerate(plan.get("call_sizes", [])):
            seed = plan.get("input_seed", 0) + 1000 * site_index + size_index
            entry: dict = {"size": size, "arguments": arguments}
            try:
                new_args, new_kwargs = DRAWN.drawn_inputs(args, kwargs, size, seed, torch)
                torch.manual_seed(seed)
                with (
                    torch.inference_mode(),
                    runtime.use_kernel_profile("none"),
                    runtime.record_registry_hits() as hits,
                ):
                    value = original(*new_args, **new_kwargs)
                flat = DRAWN.tensors_in(value, torch)
                tensors_file = out / f"direct-{site_index}-{size_index}.pt"
                torch.save([t.detach().cpu() for t in flat], tensors_file)
                entry["outputs"] = [output_digest(t, torch) for t in flat]
                # whether each output holds a finite value: one that holds none compares nothing
                entry["finite"] = [bool(torch.isfinite(t).any()) for t in flat]
                entry["tensors"] = tensors_file.name
                entry["hits"] = [[op, relative(f, tree), q, n] for (op, f, q), n in hits.items()]
            except Exception as error:
                entry["error"] = _last_line(error)
            results[site].append(entry)
    return results


def load_module(path: str | Path):
    """A module loaded from its file and kept out of `sys.modules`: the registry describer the
    plan names, or the gates' own helper beside this script (the controller's packages are
    not importable here)."""
    spec = importlib.util.spec_from_file_location(f"_probe_{Path(path).stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


DRAWN = load_module(Path(__file__).with_name("drawn_inputs.py"))


def registry_after_run(describer, runtime, tree: Path) -> dict | None:
    """Every operator described after the runs, or why that failed."""
    if describer is None:
        return None
    try:
        return describer.describe_registry(runtime, tree)
    except Exception as error:  # candidate code may raise anything; report it, do not crash
        return {"failure": f"describing the registry after the run failed: {_last_line(error)}"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--plan", required=True, type=Path, help="JSON: what to run")
    arguments = parser.parse_args(argv)
    plan = json.loads(arguments.plan.read_text())
    tree = arguments.tree.resolve()
    sys.path.insert(0, str(tree))
    os.chdir(tree)
    os.environ.setdefault("CONTROLLER_KERNEL_PROFILE", "none")
    out = arguments.out
    out.mkdir(parents=True, exist_ok=True)
    script = plan.get("snapshot_script")
    describer = load_module(script) if script else None
    result: dict = {"declaration": None, "import_error": None, "configurations": {}}
    try:
        import torch

        torch.set_num_threads(1)
        importlib.import_module(plan["registry_module"])
        runtime = importlib.import_module(plan["registry_module"].split(".")[0])
        result["declaration"] = declaration_info(runtime, plan.get("operator", ""), tree)
    except Exception as error:  # candidate code may raise anything; report it, do not crash
        result["import_error"] = _last_line(error)
        runtime = None
    runs = [(driver, driver, {}) for driver in plan.get("configurations", [])]
    runs += [
        (h["label"], h["driver"], {"batch": h["batch"], "seed": h["seed"]})
        for h in plan.get("hidden", [])
    ]
    capture = CallCapture(plan.get("call_sites", []))
    for index, (name, driver, driver_arguments) in enumerate(runs if runtime else []):
        try:
            call = driver_call(driver, **driver_arguments)
            if index == 0:
                with capture:
                    entry = run_configuration(call, index, runtime, out, tree)
            else:
                entry = run_configuration(call, index, runtime, out, tree)
            result["configurations"][name] = entry
        except Exception as error:
            result["configurations"][name] = {"error": _last_line(error)}
    if runtime is not None:
        result["direct_calls"] = direct_calls(capture, plan, runtime, out, tree)
        result["registry_after_run"] = registry_after_run(describer, runtime, tree)
    temporary = out / "probe.json.tmp"
    temporary.write_text(json.dumps(result, indent=1))
    temporary.replace(out / "probe.json")
    return 0


def _last_line(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    where = f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{type(error).__name__}: {error}{where}"


if __name__ == "__main__":
    sys.exit(main())
