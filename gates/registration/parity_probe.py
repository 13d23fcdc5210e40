"""Run one tree's parity drivers in a fresh interpreter and write what the gates compare.

Started as a script with `python -I`, so only the tree under test is importable: BASE's and
the candidate's modules never mix, and the controller never imports candidate code. For each
parity configuration it records the eager ATen sequence, the registry hits per call site and
the outputs (digests plus the tensors), under `kernel_profile=none`. It imports nothing from
the controller's own packages.
"""

import argparse
import hashlib
import importlib
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
        """Appends `overload(inputs) -> outputs` for every ATen call, in order."""

        def __init__(self):
            super().__init__()
            self.calls: list[str] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            result = func(*args, **kwargs)
            inputs = [describe(a, torch) for a in list(args) + list(kwargs.values())]
            outputs = describe(result if isinstance(result, tuple) else (result,), torch)
            self.calls.append(f"{func}({', '.join(i for i in inputs if i)}) -> {outputs}")
            return result

    return AtenRecorder


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


def run_configuration(driver: str, index: int, runtime, out: Path, tree: Path) -> dict:
    import torch

    module_name, _, function_name = driver.partition(":")
    recorder = make_recorder(torch)()
    torch.manual_seed(0)
    function = getattr(importlib.import_module(module_name), function_name)
    with runtime.use_kernel_profile("none"), runtime.record_registry_hits() as hits, recorder:
        outputs = function()
    if not isinstance(outputs, dict) or not all(
        isinstance(v, torch.Tensor) for v in outputs.values()
    ):
        raise TypeError(f"{driver} must return dict[str, Tensor], got {type(outputs).__name__}")
    tensors_file = out / f"outputs-{index}.pt"
    torch.save({k: v.detach().cpu() for k, v in outputs.items()}, tensors_file)
    return {
        "aten": recorder.calls,
        "hits": [
            [op, relative(file, tree), qualname, n] for (op, file, qualname), n in hits.items()
        ],
        "outputs": {name: output_digest(value, torch) for name, value in outputs.items()},
        "tensors": tensors_file.name,
        "error": None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--registry-module", required=True)
    parser.add_argument("--operator", default="")
    parser.add_argument("--configuration", action="append", default=[])
    arguments = parser.parse_args(argv)
    tree = arguments.tree.resolve()
    sys.path.insert(0, str(tree))
    os.chdir(tree)
    os.environ.setdefault("CONTROLLER_KERNEL_PROFILE", "none")
    arguments.out.mkdir(parents=True, exist_ok=True)
    result: dict = {"declaration": None, "import_error": None, "configurations": {}}
    try:
        import torch

        torch.set_num_threads(1)
        importlib.import_module(arguments.registry_module)
        runtime = importlib.import_module(arguments.registry_module.split(".")[0])
        result["declaration"] = declaration_info(runtime, arguments.operator, tree)
    except Exception as error:  # candidate code may raise anything; report it, do not crash
        result["import_error"] = _last_line(error)
        runtime = None
    for index, driver in enumerate(arguments.configuration if runtime else []):
        try:
            result["configurations"][driver] = run_configuration(
                driver, index, runtime, arguments.out, tree
            )
        except Exception as error:
            result["configurations"][driver] = {"error": _last_line(error)}
    temporary = arguments.out / "probe.json.tmp"
    temporary.write_text(json.dumps(result, indent=1))
    temporary.replace(arguments.out / "probe.json")
    return 0


def _last_line(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    where = f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{type(error).__name__}: {error}{where}"


if __name__ == "__main__":
    sys.exit(main())
