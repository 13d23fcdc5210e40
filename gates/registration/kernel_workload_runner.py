"""Run named operators' preferred kernels and references on planned cases, in a fresh interpreter.

Started as a script with `python -I`, so only the tree under test is importable; it imports
nothing from the controller's own packages. For every case of the request it draws the inputs
the declaration describes, runs the reference and the preferred kernel each on its own copy,
and saves both outputs (with the FP64 oracle's and the stock formulation's, for a contract
judged against them); the controller applies the contract. Then it describes every
registered operator again (`registry_snapshot.describe_registry`, loaded from its file before
the tree is imported), so another operator changed by the kernels' run is seen.
"""

import argparse
import importlib
import importlib.util
import json
import os
import sys
import traceback
from pathlib import Path


def run_case(declaration, case: dict, out_file: Path, oracle=None) -> str | None:
    """Save the reference's, the preferred kernel's and (with the FP64 `oracle` module) the
    FP64 and stock formulation's outputs for one case; the error, if any."""
    import torch

    workload_type = type(declaration.workloads[0])
    workload = workload_type(name=case["workload"], axes=case["axes"])
    inputs = declaration.make_inputs(workload, seed=case["seed"], distribution=case["distribution"])
    expected = _as_tuple(declaration.reference(*_copies(inputs), **declaration.params))
    got = _as_tuple(declaration.preferred(*_copies(inputs), **declaration.params))
    saved = {"expected": [_plain(t) for t in expected], "got": [_plain(t) for t in got]}
    if oracle is not None:
        exact = oracle.fp64_outputs(declaration.reference, _copies(inputs), declaration.params)
        stock = getattr(declaration, "stock", None) or declaration.reference
        saved["exact"] = [_plain(t) for t in exact]
        terms = oracle.fp64_terms(declaration.reference, _copies(inputs), declaration.params)
        saved["terms"] = [_plain(t) for t in terms]
        saved["stock"] = [
            _plain(t) for t in _as_tuple(stock(*_copies(inputs), **declaration.params))
        ]
    torch.save(saved, out_file)
    return None


def _copies(inputs):
    return [tensor.clone() for tensor in inputs]


def _as_tuple(result):
    return tuple(result) if isinstance(result, tuple | list) else (result,)


def _plain(value):
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().cpu().clone()
    return torch.tensor(float("nan"))  # not a tensor: the contract names the wrong type


def load_describer(script: Path | None, name: str = "_registry_description"):
    """A controller script (the snapshot, the FP64 oracle) as a module, loaded from its file
    and kept out of `sys.modules`."""
    if script is None:
        return None
    spec = importlib.util.spec_from_file_location(name, script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--registry-module", required=True)
    parser.add_argument("--request", required=True, type=Path)
    parser.add_argument("--snapshot-script", type=Path, help="describe the registry after")
    parser.add_argument("--oracle-script", type=Path, help="the FP64 oracle's source file")
    arguments = parser.parse_args(argv)
    describer = load_describer(arguments.snapshot_script)
    tree = arguments.tree.resolve()
    request = json.loads(arguments.request.read_text())
    sys.path.insert(0, str(tree))
    os.chdir(tree)
    os.environ.setdefault("CONTROLLER_KERNEL_PROFILE", "none")
    result: dict = {"import_error": None, "operators": {}}
    try:
        import torch

        torch.set_num_threads(1)
        oracle = load_describer(arguments.oracle_script, "_fp64_oracle")
        importlib.import_module(arguments.registry_module)
        runtime = importlib.import_module(arguments.registry_module.split(".")[0])
    except Exception as error:  # candidate code may raise anything; report it, do not crash
        result["import_error"] = _last_line(error)
        runtime = None
    for name, cases in sorted(request["operators"].items()) if runtime else []:
        folder = arguments.out / name
        folder.mkdir(parents=True, exist_ok=True)
        ran = []
        for index, case in enumerate(cases):
            out_file = folder / f"case-{index}.pt"
            try:
                declaration = runtime.REGISTRY.declaration(name)
                error = run_case(declaration, case, out_file, oracle)
            except Exception as raised:
                error = _last_line(raised)
            ran.append({"key": case["key"], "file": out_file.name, "error": error})
        result["operators"][name] = ran
    if runtime is not None and describer is not None:
        try:
            result["registry_after_run"] = describer.describe_registry(runtime, tree)
        except Exception as error:  # candidate code may raise anything; report it
            failure = f"describing the registry after the kernels ran failed: {_last_line(error)}"
            result["registry_after_run"] = {"failure": failure}
    temporary = arguments.out / "result.json.tmp"
    temporary.write_text(json.dumps(result, indent=1))
    temporary.replace(arguments.out / "result.json")
    return 0


def _last_line(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    where = f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{type(error).__name__}: {error}{where}"


if __name__ == "__main__":
    sys.exit(main())
