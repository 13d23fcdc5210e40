"""Task packages from a capture: the model's real calls as workloads, weighted by call count.

Each captured layout becomes one workload whose tensor inputs are the first real call's
fixture (copied into the package, so its identity covers them) and whose weight is how often
the measured steps made that call. `captured_layouts.json` carries each workload's strides,
aliasing and output layouts, and the definition names every non-row-major layout.
"""

import json
from pathlib import Path

from gates.errors import GateError
from gates.tasks.definition import ConstAxis, Definition, TraceTensor, VarAxis
from gates.tasks.generation import render_package
from gates.tasks.trace import Trace
from gates.tasks.workload import SafetensorsInput, ScalarInput, Workload
from operators.call_capture import CapturedLayout, load_capture
from operators.declaration import OperatorDeclaration
from operators.layouts import TensorLayout
from operators.registry import REGISTRY

LAYOUTS_FILE = "captured_layouts.json"


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
    files["definition.json"] = _json_bytes(
        _with_layouts(definition, described).model_dump(mode="json", exclude_none=True)
    )
    files["workloads.jsonl"] = "".join(
        trace.model_dump_json(exclude_none=True) + "\n" for trace in traces
    ).encode()
    files[LAYOUTS_FILE] = _json_bytes(
        {"driver": capture.driver, "arguments": capture.arguments, "workloads": described}
    )
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
    fresh = render_package(declaration)
    for path, content in fresh.items():
        if path in ("definition.json", "workloads.jsonl"):
            continue
        if not (task.folder / path).is_file() or (task.folder / path).read_bytes() != content:
            return False
    reference = Definition.model_validate_json(fresh["definition.json"]).reference
    return task.definition.reference == reference


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
    sizes = _axis_sizes(declaration, layout, uuid)
    axes = {axis: sizes[axis] for axis in var_axes}
    workload = Workload(uuid=uuid, axes=axes, inputs=inputs)
    return Trace(definition=declaration.name, workload=workload, weight=float(layout.count))


def _axis_sizes(declaration: OperatorDeclaration, layout: CapturedLayout, uuid: str) -> dict:
    """Each axis's size read off one layout's captured shapes."""
    sizes: dict[str, int] = {}
    for spec in declaration.inputs:
        if spec.name not in layout.inputs:
            raise GateError(f"{uuid}: the capture has no tensor {spec.name!r}")
        shape = _folded(layout.inputs[spec.name].shape, len(spec.shape))
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
        sizes = _axis_sizes(declaration, layout, f"{declaration.name}-{layout.key}")
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
        "production_layout_differs": layout.production_layout_differs,
    }


def _with_layouts(definition: Definition, described: list[dict]) -> Definition:
    """The definition whose input descriptions name each captured non-row-major layout."""
    inputs = {}
    for name, tensor in definition.inputs.items():
        notes = [
            f"strides {tuple(item['inputs'][name]['strides'])} in {item['workload']}"
            for item in described
            if name in item["inputs"] and not _row_major(TensorLayout(**item["inputs"][name]))
        ]
        text = tensor.description or ""
        if notes:
            text = (text + "; " if text else "") + "captured " + ", ".join(notes)
        inputs[name] = TraceTensor(shape=tensor.shape, dtype=tensor.dtype, description=text or None)
    tags = [*(definition.tags or []), "captured"]
    return Definition.model_validate({**definition.model_dump(), "inputs": inputs, "tags": tags})


def _row_major(layout: TensorLayout) -> bool:
    expected, running = [], 1
    for size in reversed(layout.shape):
        expected.append(0 if size <= 1 or 0 in layout.shape else running)
        running *= max(size, 1)
    return tuple(reversed(expected)) == layout.strides


def _json_bytes(data) -> bytes:
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()
