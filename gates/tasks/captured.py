"""Task packages from a capture: the model's real calls as workloads, weighted by call count.

Each captured layout becomes one workload whose tensor inputs are the first real call's
fixture (copied into the package, so its identity covers them) and whose weight is how often
the measured steps made that call (promotion weighs it by that count over the steps, the calls
per forward). Whether the model's producing op had just written its inputs decides the figure
its promotion uses (warm when it had, cold when not). `captured_layouts.json` carries each
workload's strides, aliasing and output layouts, and the definition names every non-row-major
layout. Where the production kernel's outputs do not take the layout the model's own
implementation produced, the baseline places them in it (`operators.layout_copy`), so the
baseline and every candidate are judged and timed producing what the model needs. Where
`controller calibrate` measured the operator on this capture, its calibrated contract rides
along (`calibrated_contract.json`) and the judge holds candidates to the FP64 oracle as well.
"""

import json
from pathlib import Path

from gates.calibration.contract_file import PACKAGE_FILE, current_calibration
from gates.errors import GateError
from gates.tasks.definition import ConstAxis, Definition, TraceTensor, VarAxis
from gates.tasks.generation import render_package
from gates.tasks.solution import Solution, SourceFile
from gates.tasks.trace import Trace
from gates.tasks.vendoring import vendor_module_of
from gates.tasks.workload import SafetensorsInput, ScalarInput, Workload
from operators.call_capture import (
    CapturedLayout,
    concrete_strides,
    in_declared_shape,
    load_capture,
)
from operators.declaration import OperatorDeclaration
from operators.declaration import Workload as CallSizes
from operators.layout_copy import layout_signature, placed_in
from operators.layouts import TensorLayout
from operators.registry import REGISTRY

LAYOUTS_FILE = "captured_layouts.json"
CAPTURED_ENTRY_SUFFIX = "_captured"  # the placing baseline's entry: `<operator>_captured`


def render_captured_package(
    declaration: OperatorDeclaration, capture_folder: Path
) -> dict[str, bytes]:
    """The operator's package with the capture's workloads, fixtures and layouts."""
    capture = load_capture(capture_folder)
    layouts = [layout for layout in capture.layouts if layout.operator == declaration.name]
    if not layouts:
        raise GateError(f"the capture in {capture_folder} holds no call of {declaration.name}")
    files = render_package(declaration)
    definition = Definition.model_validate_json(files["definition.json"])
    axes = _captured_axes(definition, declaration, layouts)
    definition = definition.model_copy(update={"axes": axes})
    var_axes = [name for name, axis in axes.items() if axis.type == "var"]
    traces, described = [], []
    for layout in layouts:
        uuid = f"{declaration.name}-captured-{layout.key}"
        fixture = f"fixtures/{layout.key}.safetensors"
        files[fixture] = (Path(capture_folder) / layout.fixture).read_bytes()
        traces.append(_workload_trace(declaration, layout, uuid, fixture, var_axes))
        described.append(_described(layout, uuid, fixture))
    files = with_captured_baseline(declaration, files, described)
    files["definition.json"] = _json_bytes(
        _with_layouts(definition, described).model_dump(mode="json", exclude_none=True)
    )
    files["workloads.jsonl"] = "".join(
        trace.model_dump_json(exclude_none=True) + "\n" for trace in traces
    ).encode()
    files[LAYOUTS_FILE] = _json_bytes(
        {
            "driver": capture.driver,
            "arguments": capture.arguments,
            "steps": capture.steps,
            "workloads": described,
        }
    )
    calibration = current_calibration(capture_folder, declaration)
    if calibration is not None:
        files[PACKAGE_FILE] = _json_bytes(calibration.model_dump(mode="json"))
    return files


def captured_operators(capture_folder: Path, requested: list[str] | None = None) -> list[str]:
    """The operators whose tasks a capture makes: each of `requested` (which the capture must
    hold), or every operator it holds that has a production kernel, in registry order. A
    capture naming an operator the registry lacks was made against another registry, so it is
    refused whole."""
    counts = load_capture(capture_folder).counts_by_operator()
    unknown = sorted(name for name in counts if name not in REGISTRY)
    if unknown:
        raise GateError(
            f"the capture in {capture_folder} names operator {unknown[0]!r}, which is not "
            f"registered here; capture again against this target's registry"
        )
    if not requested:
        return [
            name
            for name in REGISTRY.names()
            if name in counts and REGISTRY.declaration(name).preferred is not None
        ]
    for name in requested:
        if name not in counts:
            held = ", ".join(sorted(counts))
            raise GateError(
                f"the capture in {capture_folder} holds no call of {name!r}; it holds: {held}"
            )
    return list(requested)


def captured_package_is_current(task, declaration: OperatorDeclaration) -> bool:
    """Whether what the declaration decides (contract, settings, baseline, reference) still
    matches a captured package; its workloads and layouts come from the capture."""
    described = json.loads((task.folder / LAYOUTS_FILE).read_text())["workloads"]
    fresh = with_captured_baseline(declaration, render_package(declaration), described)
    for path, content in fresh.items():
        if path in ("definition.json", "workloads.jsonl"):
            continue
        if not (task.folder / path).is_file() or (task.folder / path).read_bytes() != content:
            return False
    reference = Definition.model_validate_json(fresh["definition.json"]).reference
    return task.definition.reference == reference


def with_captured_baseline(
    declaration: OperatorDeclaration, files: dict[str, bytes], described: list[dict]
) -> dict[str, bytes]:
    """`files` whose baseline places its outputs in the model's layouts for the captured calls
    where the production kernel returns others; unchanged where it returns them all."""
    placements = _placements(declaration, described)
    if not placements:
        return files
    baseline = Solution.model_validate_json(files["solution/solution.json"])
    entry_file, production = baseline.spec.entry_file, baseline.spec.entry_function
    copy_file, copy_sources = vendor_module_of(placed_in)
    sources = {source.path: source.content for source in baseline.sources}
    sources.update(copy_sources)
    sources[entry_file] += _placing_source(
        declaration.name, production, entry_file, copy_file, placements
    )
    files = dict(files)
    for path, text in sources.items():
        files[f"solution/{path}"] = text.encode()
    spec = baseline.spec.model_copy(
        update={"entry_point": f"{entry_file}::{declaration.name}{CAPTURED_ENTRY_SUFFIX}"}
    )
    placing = baseline.model_copy(
        update={
            "spec": spec,
            "sources": [SourceFile(path=path, content=sources[path]) for path in sorted(sources)],
            "description": baseline.description + "; outputs placed in the captured layouts "
            "where the production kernel returns others",
        }
    )
    files["solution/solution.json"] = _json_bytes(
        placing.model_dump(mode="json", exclude_none=True)
    )
    return files


def _placements(declaration: OperatorDeclaration, described: list[dict]) -> dict[str, tuple]:
    """For each captured call whose production output layout differs: the signature of its
    inputs as the evaluator passes them (declared rank) and the strides its outputs need."""
    placements = {}
    for item in described:
        if not item.get("production_layout_differs"):
            continue
        inputs = {name: TensorLayout(**value) for name, value in item["inputs"].items()}
        workload = CallSizes(
            name=item["workload"], axes=captured_axis_sizes(declaration, inputs, item["workload"])
        )
        if len(item["outputs"]) != len(declaration.outputs):
            raise GateError(
                f"{item['workload']}: {len(item['outputs'])} outputs captured, "
                f"{len(declaration.outputs)} declared"
            )
        arguments = [
            in_declared_shape(inputs[spec.name], declaration.shape_of(spec, workload))
            for spec in declaration.inputs
        ]
        outputs = [
            in_declared_shape(TensorLayout(**value), declaration.shape_of(spec, workload))
            for spec, value in zip(declaration.outputs, item["outputs"], strict=True)
        ]
        key = layout_signature([(a.shape, a.strides, a.dtype) for a in arguments])
        placements[key] = tuple(concrete_strides(output) for output in outputs)
    return placements


def _placing_source(
    operator: str, production: str, entry_file: str, copy_file: str, placements: dict
) -> str:
    """The entry point appended to the vendored production file: the placements by argument
    layout, and a function that places the production kernel's outputs (imports relative, as
    vendored sources import each other)."""
    depth = len(Path(entry_file).parts) - 1
    module = "." * (depth + 1) + copy_file.removesuffix(".py").replace("/", ".")
    rows = "".join(f'    "{key}": {strides!r},\n' for key, strides in sorted(placements.items()))
    return (
        "\n\n# The captured calls whose output layouts the production kernel does not produce: "
        "the\n# model's own implementation returned these strides (keyed by the layout "
        "signature of\n# the tensor arguments), so the baseline places its outputs in them.\n"
        f"from {module} import placed_in  # noqa: E402\n\n"
        f"CAPTURED_OUTPUT_STRIDES = {{\n{rows}}}\n\n\n"
        f"def {operator}{CAPTURED_ENTRY_SUFFIX}(*args, **kwargs):\n"
        '    """The production kernel, its outputs placed in the strides the model produced."""\n'
        f"    outputs = {production}(*args, **kwargs)\n"
        "    return placed_in(outputs, args, CAPTURED_OUTPUT_STRIDES)\n"
    )


def _workload_trace(
    declaration, layout: CapturedLayout, uuid: str, fixture: str, var_axes: list[str]
) -> Trace:
    inputs: dict = {}
    for spec in declaration.inputs:
        inputs[spec.name] = SafetensorsInput(path=fixture, tensor_key=spec.name)
    for name, default in declaration.params.items():
        value = layout.scalars.get(name, default)
        if not isinstance(value, int | float | bool):
            raise GateError(f"{uuid}: scalar {name!r} was {value!r}, not a number")
        inputs[name] = ScalarInput(value=value)
    sizes = captured_axis_sizes(declaration, layout.inputs, uuid)
    axes = {axis: sizes[axis] for axis in var_axes}
    workload = Workload(uuid=uuid, axes=axes, inputs=inputs)
    return Trace(definition=declaration.name, workload=workload, weight=float(layout.count))


def captured_axis_sizes(
    declaration: OperatorDeclaration, inputs: dict[str, TensorLayout], uuid: str
) -> dict:
    """Each axis's size read off one layout's captured input shapes."""
    sizes: dict[str, int] = {}
    for spec in declaration.inputs:
        if spec.name not in inputs:
            raise GateError(f"{uuid}: the capture has no tensor {spec.name!r}")
        shape = _folded(inputs[spec.name].shape, len(spec.shape))
        if len(shape) != len(spec.shape):
            raise GateError(f"{uuid}: {spec.name} has {len(shape)} dims, declared {spec.shape}")
        for axis, size in zip(spec.shape, shape, strict=True):
            if sizes.setdefault(axis, size) != size:
                raise GateError(f"{uuid}: axis {axis} is {sizes[axis]} and {size} at once")
    return sizes


def _folded(shape: tuple[int, ...], rank: int) -> tuple[int, ...]:
    """Leading dimensions folded into the first, as a row-wise operator sees (batch, tokens)."""
    if rank < 1 or len(shape) <= rank:
        return tuple(shape)
    extra = len(shape) - rank
    leading = 1
    for size in shape[: extra + 1]:
        leading *= size
    return (leading, *shape[extra + 1 :])


def _captured_axes(definition: Definition, declaration, layouts: list[CapturedLayout]) -> dict:
    """The definition's axes as the model ran them: a const axis takes the captured size
    (the model's own configuration), or turns var where its calls disagree."""
    seen: dict[str, set[int]] = {}
    for layout in layouts:
        sizes = captured_axis_sizes(declaration, layout.inputs, f"{declaration.name}-{layout.key}")
        for axis, size in sizes.items():
            seen.setdefault(axis, set()).add(size)
    axes = {}
    for name, axis in definition.axes.items():
        values = seen.get(name, set())
        if axis.type == "const" and len(values) == 1:
            axes[name] = ConstAxis(value=values.pop(), description=axis.description)
        elif axis.type == "const" and values:
            axes[name] = VarAxis(description=axis.description)
        else:
            axes[name] = axis
    return axes


def _described(layout: CapturedLayout, uuid: str, fixture: str) -> dict:
    return {
        "workload": uuid,
        "count": layout.count,
        "fixture": fixture,
        "inputs": {name: value.model_dump(mode="json") for name, value in layout.inputs.items()},
        "scalars": layout.scalars,
        "aliases": layout.aliases,
        "outputs": [value.model_dump(mode="json") for value in layout.outputs],
        "production_outputs": (
            None
            if layout.production_outputs is None
            else [value.model_dump(mode="json") for value in layout.production_outputs]
        ),
        "production_layout_differs": layout.production_layout_differs,
        "inputs_just_written": layout.inputs_just_written,
    }


def _with_layouts(definition: Definition, described: list[dict]) -> Definition:
    """The definition whose input and output descriptions name each captured non-row-major
    layout (an output's is the one the evaluator holds a solution to)."""
    inputs = {
        name: _noted(tensor, [(item["workload"], item["inputs"].get(name)) for item in described])
        for name, tensor in definition.inputs.items()
    }
    outputs = {}
    for index, (name, tensor) in enumerate(definition.outputs.items()):
        layouts = [(item["workload"], _at(item["outputs"], index)) for item in described]
        outputs[name] = _noted(tensor, layouts)
    tags = [*(definition.tags or []), "captured"]
    return Definition.model_validate(
        {**definition.model_dump(), "inputs": inputs, "outputs": outputs, "tags": tags}
    )


def _noted(tensor: TraceTensor, layouts: list[tuple[str, dict | None]]) -> TraceTensor:
    notes = [
        f"strides {tuple(layout['strides'])} in {workload}"
        for workload, layout in layouts
        if layout is not None and not _row_major(TensorLayout(**layout))
    ]
    text = tensor.description or ""
    if notes:
        text = (text + "; " if text else "") + "captured " + ", ".join(notes)
    return TraceTensor(shape=tensor.shape, dtype=tensor.dtype, description=text or None)


def _at(values: list, index: int):
    return values[index] if index < len(values) else None


def _row_major(layout: TensorLayout) -> bool:
    expected, running = [], 1
    for size in reversed(layout.shape):
        expected.append(0 if size <= 1 or 0 in layout.shape else running)
        running *= max(size, 1)
    return tuple(reversed(expected)) == layout.strides


def _json_bytes(data) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()
