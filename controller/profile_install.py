"""`controller install`: an export becomes one operator of a kernel profile in `tuned/NAME/`.

The export is checked first (every file against `checksums.json`, its sources for a read of
where they run that the task's baseline does not make, as the evaluator refuses them, the
environment it was verified in against this one, its task against the operator as declared
now); then the
profile folder is staged whole, with `<op>/solution/` (the exported sources), `<op>/kernel.py`
(which imports them) and `profile.json` (environment, every file's digest, and per operator
the run and task identities, the entry point and the argument layouts the evaluator verified),
and renamed into place, unverified: the profile loads for deployment only once `controller
verify` has passed it as it is now.
"""

import json
import os
import shutil
from pathlib import Path
from typing import Any

from controller.errors import ControllerError
from controller.flows.tune_export import CHECKSUMS, checksums
from controller.runs.store import write_atomic, write_json_atomic

KERNEL_FILE = "kernel.py"
KERNEL_TEMPLATE = '''"""Tuned {operator}, written by `controller install`.

From run {run_id}, attempt {attempt}.
Its files are pinned by the digests in ../profile.json, and it runs
only on the argument layouts the evaluator verified.
"""

from operators.tuned_solution import installed_kernel

kernel, applies = installed_kernel(__file__)
'''


def install_export(export: Path, profile: str, tuned_root: Path, replace: bool = False) -> Path:
    """Install `export` into `tuned_root/profile`; returns the operator's installed folder."""
    from operators.environment import KernelEnvironment, current_kernel_environment
    from operators.profile_verification import VERIFIED_FILE, clear_verification
    from operators.profiles import PROFILE_FILE, file_digest

    export = Path(export).resolve()
    described = read_export(export)
    operator = described["operator"]
    here = current_kernel_environment()
    verified = KernelEnvironment(
        **{f: described["environment"][f] for f in KernelEnvironment.model_fields}
    )
    difference = verified.first_difference(here)
    if difference is not None:
        raise ControllerError(
            f"export {export} was verified in another environment ({difference}, export != "
            "this machine); install it where it was tuned, or tune again here"
        )
    folder = Path(tuned_root) / profile
    document = _existing_profile(folder, profile, here, operator, replace)
    staging = Path(tuned_root) / f".{profile}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    if folder.is_dir():
        shutil.copytree(folder, staging, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        staging.mkdir(parents=True)
    clear_verification(staging)  # a changed profile is unverified until `verify` passes it
    installed = staging / operator
    shutil.rmtree(installed, ignore_errors=True)
    shutil.copytree(export / "solution", installed / "solution")
    write_atomic(installed / KERNEL_FILE, KERNEL_TEMPLATE.format(**described))
    document["operators"][operator] = {
        "source": f"{operator}/{KERNEL_FILE}",
        "entry_point": described["entry_point"],
        "run_id": described["run_id"],
        "attempt": described["attempt"],
        "task_digest": described["task_digest"],
        "weighted_speedup": described.get("weighted_speedup"),
        "device": described["device"],
        "layouts": described["layouts"],
        "owns": described["owns"],
        "declines": described.get("declines", {}),
    }
    document["files"] = {
        path.relative_to(staging).as_posix(): file_digest(path)
        for path in sorted(staging.rglob("*"))
        if path.is_file()
        and path.name not in (PROFILE_FILE, VERIFIED_FILE)
        and "__pycache__" not in path.parts
    }
    write_json_atomic(staging / PROFILE_FILE, document)
    _swap_into_place(staging, folder)
    return folder / operator


def read_export(export: Path) -> dict[str, Any]:
    """What the export says about itself, after checking every file's checksum."""
    from controller.flows.tune import current_task_digest, given_task_digest
    from gates.tasks.captured import LAYOUTS_FILE
    from gates.tasks.solution import load_solution

    if not (export / "export.json").is_file() or not (export / CHECKSUMS).is_file():
        raise ControllerError(
            f"{export} is not a tune run's export (no export.json / {CHECKSUMS}); pass the "
            "`export/` folder of a finished tune run"
        )
    recorded = json.loads((export / CHECKSUMS).read_text())
    actual = checksums(export)
    for path in sorted(set(recorded) | set(actual)):
        if recorded.get(path) != actual.get(path):
            state = "is missing" if path not in actual else "does not match its checksum"
            if path not in recorded:
                state = "is not in checksums.json"
            raise ControllerError(f"export {export}: {path} {state}; export the run again")
    described = json.loads((export / "export.json").read_text())
    operator = described["operator"]
    task = export.parent / "prepared" / "task"  # the run's own copy of its task package
    captured = (task / LAYOUTS_FILE).is_file()
    now = given_task_digest(operator, task) if captured else current_task_digest(operator)
    if now != described["task_digest"]:
        raise ControllerError(
            f"export {export} was tuned for {operator!r} as it was declared then (task digest "
            "differs from the catalog's now); tune it again"
        )
    solution = load_solution(export / "solution")
    _refuse_environment_reads(export, solution, _task_baseline(operator, task, captured))
    evaluation = _promoting_evaluation(export)
    device = evaluation.get("device", "cpu")
    owns = won_workloads(evaluation)
    chosen = set(owns) if evaluation.get("timing") else None
    return {
        **described,
        "environment": described.get("environment") or _run_environment(export),
        "entry_point": solution.spec.entry_point,
        "device": device,
        "layouts": verified_layouts(operator, device, task if captured else None, chosen),
        "owns": owns or {"*": "verified on every workload, not timed (no CUDA)"},
        "declines": declined_workloads(evaluation),
    }


def won_workloads(evaluation: dict) -> dict[str, str]:
    """The workloads the promotion verdict gave the kernel (faster than production, slower
    than no role it was timed against on either figure), each with its figure: an installed
    kernel applies only there, and elsewhere the call runs production."""
    return _workload_figures(evaluation, won=True)


def declined_workloads(evaluation: dict) -> dict[str, str]:
    """The timed workloads the kernel does not own (slower, or within noise), each with its
    figure: there the call runs production."""
    return _workload_figures(evaluation, won=False)


def _workload_figures(evaluation: dict, won: bool) -> dict[str, str]:
    promotion = (evaluation.get("timing") or {}).get("promotion") or {}
    against = promotion.get("against") or {}
    role = "incumbent" if "incumbent" in against else "baseline"
    rows = (against.get(role) or {}).get("workloads") or {}
    owns = promotion.get("owns")
    if owns is None:  # a verdict from before ownership was recorded: as the rule now reads
        from gates.evaluator.promotion import owned_workloads

        base = (against.get("baseline") or {}).get("workloads") or {}
        owns = owned_workloads(
            {name: (row or {}).get("high", 0) for name, row in base.items()},
            {name for comparison in against.values() for name in comparison.get("worse") or []},
            list(rows),
        )
    figures = {}
    for name, row in sorted(rows.items()):
        if not row.get("ratio") or not row.get("low") or not row.get("high"):
            continue
        if (name in owns) == won:
            figures[name] = (
                f"x{1 / row['ratio']:.3f} [{1 / row['high']:.3f}, {1 / row['low']:.3f}] "
                f"against the {role}"
            )
    return figures


def _refuse_environment_reads(export: Path, solution, baseline) -> None:
    """The evaluator's static environment-inspection check again, before anything is copied:
    an export edited or assembled after its evaluation must not reach a profile asking where
    it runs (a kernel that is honest only while judged)."""
    from gates.evaluator.detectors.environment_probes import source_probes

    texts = {source.path: source.content for source in solution.sources}
    known = {source.path: source.content for source in baseline.sources}
    found = source_probes(texts, known)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise ControllerError(
            f"export {export}: solution/{found[0]}{more}: a kernel may not ask where or when it "
            "runs (loaded modules, hooks, environment, frames, clocks, randomness, torch's "
            "counters, a module beyond a kernel's imports); tune it again without that read"
        )


def _task_baseline(operator: str, task: Path, captured: bool):
    """The baseline solution of the task the export was tuned on (the run's captured package,
    else the one `controller generate` writes now)."""
    from gates.tasks.generation import render_package
    from gates.tasks.package import load_task
    from gates.tasks.solution import Solution
    from operators import REGISTRY

    if captured:
        return load_task(task).baseline
    files = render_package(REGISTRY.declaration(operator))
    return Solution.model_validate_json(files["solution/solution.json"])


def verified_layouts(
    operator: str,
    device: str,
    captured_task: Path | None = None,
    workloads: set[str] | None = None,
) -> list[list]:
    """Each workload's argument signature: a catalog task's workloads as contiguous tensors on
    `device`, or a captured task's layouts as the evaluator passed them (only those it judged),
    then the params positionally, by keyword (sorted), and left out where they are the
    defaults. `workloads`: only these (the ones the kernel won), by their timing names."""
    import inspect

    import torch

    from operators import REGISTRY
    from operators.layouts import layout_of
    from operators.tuned_solution import signature_to_json

    declaration = REGISTRY.declaration(operator)
    defaults = _defaults(inspect.signature(declaration.preferred or declaration.reference))
    signatures: list[list] = []
    argument_layouts = []
    for workload in declaration.workloads if captured_task is None else ():
        if workloads is not None and workload.name not in workloads:
            continue
        tensors = []
        for spec in declaration.inputs:
            meta = torch.empty(
                declaration.shape_of(spec, workload), dtype=spec.torch_dtype, device="meta"
            )
            tensors.append(layout_of(meta))
        argument_layouts.append(tensors)
    if captured_task is not None:
        argument_layouts += _captured_argument_layouts(declaration, captured_task, workloads)
    for layouts in argument_layouts:
        tensors = [layout.model_copy(update={"device_type": device}) for layout in layouts]
        params = declaration.params
        variants = [
            (*tensors, *params.values()),
            (*tensors, *(params[key] for key in sorted(params))),
        ]
        if all(defaults.get(key, object()) == value for key, value in params.items()):
            variants.append(tuple(tensors))
        for variant in variants:
            encoded = signature_to_json(variant)
            if encoded not in signatures:
                signatures.append(encoded)
    return signatures


def _captured_argument_layouts(declaration, task: Path, chosen: set[str] | None) -> list[list]:
    """Per captured workload (of `chosen`, by timing name), its input layouts viewed in the
    declared shapes (its cases)."""
    from gates.evaluator.captured_cases import load_captured
    from operators.call_capture import in_declared_shape
    from operators.declaration import Workload

    layouts = []
    for workload in load_captured(task):
        if chosen is not None and workload.uuid.split("-", 1)[-1] not in chosen:
            continue
        plain = Workload(name=workload.uuid, axes=workload.axes)
        layouts.append(
            [
                in_declared_shape(workload.inputs[spec.name], declaration.shape_of(spec, plain))
                for spec in declaration.inputs
            ]
        )
    return layouts


def _defaults(signature) -> dict[str, Any]:
    return {
        name: parameter.default
        for name, parameter in signature.parameters.items()
        if parameter.default is not parameter.empty
    }


def _promoting_evaluation(export: Path) -> dict:
    evaluations = sorted((export / "evaluations").glob("*.json"))
    if not evaluations:
        raise ControllerError(f"export {export} holds no evaluation; export the run again")
    return json.loads(evaluations[-1].read_text())


def _run_environment(export: Path) -> dict[str, str]:
    """The environment frozen in the manifest of the run the export sits in."""
    manifest = export.parent / "manifest.json"
    if not manifest.is_file():
        raise ControllerError(
            f"export {export} does not say which environment verified it (no environment in "
            "export.json and no run manifest beside it)"
        )
    return json.loads(manifest.read_text())["manifest"]["environment"]


def _existing_profile(folder: Path, name: str, here, operator: str, replace: bool) -> dict:
    """profile.json as it stands (or a new one); refuses a reinstall without `replace`."""
    from operators.profiles import read_profile, verify_files

    if not (folder / "profile.json").is_file():
        return {"name": name, "environment": here.model_dump(), "operators": {}, "files": {}}
    installed = read_profile(folder)
    verify_files(folder, installed)  # what is installed must be intact before adding to it
    difference = installed.environment.first_difference(here)
    if difference is not None:
        raise ControllerError(
            f"profile {name!r} was installed for another environment ({difference}); "
            "install into a new profile name"
        )
    document = json.loads((folder / "profile.json").read_text())
    if operator in document["operators"] and not replace:
        raise ControllerError(
            f"profile {name!r} already has {operator!r}; pass --replace to install over it"
        )
    return document


def _swap_into_place(staging: Path, folder: Path) -> None:
    """Rename the staged profile in; an old one is moved aside first and then removed."""
    retired = folder.with_name(f".{folder.name}.retired")
    shutil.rmtree(retired, ignore_errors=True)
    if folder.exists():
        os.replace(folder, retired)
    os.replace(staging, folder)
    shutil.rmtree(retired, ignore_errors=True)
