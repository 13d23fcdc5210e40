"""Cases from a captured task: each captured layout is called on its fixture (the model's
first real inputs) and on inputs drawn from the nonce, both laid out with the captured strides.

Both evaluator processes build the same inputs from the package and the nonce. A captured
tensor of higher rank than the declaration (a (batch, tokens, hidden) row-wise input) is
viewed in the declared rank, keeping its strides where a view can. A captured case's outputs
must take the layouts the model's own implementation produced, viewed the same way.
"""

import hashlib
import json
from pathlib import Path

import torch
from pydantic import BaseModel, ConfigDict, Field

from gates.tasks.captured import LAYOUTS_FILE
from operators.call_capture import concrete_strides, in_declared_shape, with_layout
from operators.declaration import OperatorDeclaration, Workload
from operators.layouts import TensorLayout, layout_of
from operators.safetensors_file import load_tensors


class CapturedWorkload(BaseModel):
    """One captured layout as the evaluator calls it."""

    model_config = ConfigDict(frozen=True)

    uuid: str
    axes: dict[str, int]
    inputs: dict[str, TensorLayout]
    fixture: str
    count: int = Field(1, ge=1, description="calls with this layout: the workload's weight")
    outputs: list[TensorLayout] = Field(
        default_factory=list, description="what the model's own implementation returned"
    )
    inputs_just_written: bool | None = Field(
        default=None, description="the model had just written its inputs: timed warm, else cold"
    )


def load_captured(task_folder: Path) -> list[CapturedWorkload]:
    """The captured workloads of a package; none for a package made from the catalog."""
    folder = Path(task_folder)
    path = folder / LAYOUTS_FILE
    if not path.is_file():
        return []
    definition = json.loads((folder / "definition.json").read_text())
    const = {
        name: axis["value"]
        for name, axis in definition["axes"].items()
        if axis.get("type") == "const"
    }
    var_axes = {}
    for line in (folder / "workloads.jsonl").read_text().splitlines():
        if line.strip():
            workload = json.loads(line)["workload"]
            var_axes[workload["uuid"]] = workload["axes"]
    return [
        CapturedWorkload(
            uuid=item["workload"],
            axes={**const, **var_axes[item["workload"]]},
            inputs=item["inputs"],
            fixture=item["fixture"],
            count=item.get("count", 1),
            outputs=item.get("outputs", []),
            inputs_just_written=item.get("inputs_just_written"),
        )
        for item in json.loads(path.read_text())["workloads"]
    ]


def captured_case_specs(captured: list[CapturedWorkload], nonce: str) -> list[dict]:
    """Per captured workload: its fixture, and one input set drawn from the nonce."""
    specs = []
    for workload in captured:
        for source in ("fixture", "normal"):
            key = f"{workload.uuid}/{source}"
            digest = hashlib.sha256(f"{nonce}:{key}".encode()).digest()
            specs.append(
                {
                    "key": key,
                    "workload": workload.uuid,
                    "axes": workload.axes,
                    "seed": int.from_bytes(digest[:4], "little") & 0x7FFFFFFF,
                    "distribution": "normal",
                    "captured": workload.uuid,
                    "fixture": source == "fixture",
                }
            )
    return specs


def captured_inputs(
    declaration: OperatorDeclaration,
    workload: CapturedWorkload,
    task_folder: Path,
    fixture: bool,
    seed: int,
    device: torch.device,
) -> list[torch.Tensor]:
    """One case's inputs in the captured layouts, viewed in the declared rank."""
    plain = Workload(name=workload.uuid, axes=workload.axes)
    if fixture:
        stored = load_tensors(Path(task_folder) / workload.fixture)
        values = [stored[spec.name] for spec in declaration.inputs]
    else:
        values = [t.cpu() for t in declaration.make_inputs(plain, seed, "normal", "cpu")]
    return [
        _on_device(
            _captured_layout(declaration, spec, value, workload.inputs[spec.name], plain), device
        )
        for spec, value in zip(declaration.inputs, values, strict=True)
    ]


def _captured_layout(declaration, spec, value: torch.Tensor, layout: TensorLayout, workload):
    """`value` laid out with the captured strides, viewed in the declared shape."""
    laid_out = with_layout(value.reshape(layout.shape), layout)
    declared = declaration.shape_of(spec, workload)
    try:
        return laid_out.view(declared)
    except RuntimeError:  # leading dimensions that no view can merge
        return laid_out.reshape(declared)


class CapturedTiming:
    """The declaration as timing sees a captured task: the captured workloads (every axis at
    its captured size, weight = call count), their inputs drawn in the captured layouts, so
    the baseline and candidates are timed on what the model runs; `promotion_figures` says
    which figure each workload's promotion uses where the capture knows (warm when the model
    had just written its inputs)."""

    def __init__(self, declaration: OperatorDeclaration, captured: list["CapturedWorkload"]):
        self._declaration = declaration
        names = [item.uuid.removeprefix(f"{declaration.name}-") for item in captured]  # as traces
        self.workloads = tuple(
            Workload(name=name, axes=item.axes, weight=float(item.count))
            for name, item in zip(names, captured, strict=True)
        )
        self._layouts = {name: item.inputs for name, item in zip(names, captured, strict=True)}
        self.promotion_figures = {
            name: "warm" if item.inputs_just_written else "cold"
            for name, item in zip(names, captured, strict=True)
            if item.inputs_just_written is not None
        }

    def __getattr__(self, name: str):
        return getattr(self._declaration, name)

    def make_input_sets(self, workload, count, seed, distribution="normal", device="cpu"):
        """`count` input sets as the declaration draws them, each laid out as captured."""
        declaration, layouts = self._declaration, self._layouts[workload.name]
        drawn = declaration.make_input_sets(workload, count, seed, distribution, device)
        return [
            [
                _captured_layout(declaration, spec, value, layouts[spec.name], workload)
                for spec, value in zip(declaration.inputs, inputs, strict=True)
            ]
            for inputs in drawn
        ]


def timed_declaration(declaration: OperatorDeclaration, captured: list["CapturedWorkload"]):
    """What timing runs: a captured task's workloads (`CapturedTiming`), else the declaration."""
    return CapturedTiming(declaration, captured) if captured else declaration


def _on_device(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A copy on `device` with the same strides (over a storage of the same extent)."""
    if tensor.device == device:
        return tensor
    storage_size = tensor.untyped_storage().nbytes() // tensor.element_size()
    base = torch.as_strided(tensor, (storage_size,), (1,), 0).to(device)
    return base.as_strided(tensor.shape, tensor.stride(), tensor.storage_offset())


def case_inputs(declaration, case, device, request, captured: list[CapturedWorkload]):
    """A case's inputs: drawn from its seed, or for a captured case in its captured layouts."""
    if case.captured is None:
        return declaration.make_inputs(case.as_workload(), case.seed, case.distribution, device)
    workload = next(item for item in captured if item.uuid == case.captured)
    return captured_inputs(
        declaration, workload, Path(request.task), case.fixture, case.seed, device
    )


def output_layout_mismatch(
    declaration: OperatorDeclaration, case, produced: list[torch.Tensor], captured: list
) -> str | None:
    """Why a captured case's outputs do not take the layouts the model's own implementation
    produced (viewed in the declared rank), or None when they do. `produced` are the candidate
    process's CPU copies, which keep any dense layout's strides; a layout with gaps cannot
    survive that copy, so such an output is held to what the copy makes of it."""
    if case.captured is None:
        return None
    workload = next(item for item in captured if item.uuid == case.captured)
    plain = Workload(name=workload.uuid, axes=workload.axes)
    for spec, layout, got in zip(declaration.outputs, workload.outputs, produced, strict=False):
        wanted = in_declared_shape(layout, declaration.shape_of(spec, plain))
        if layout_of(got).strides != _as_copied(wanted).strides:
            return (
                f"{case.key}: output {spec.name} has strides {layout_of(got).strides}, the "
                f"captured layout has {wanted.strides} (size-one dimensions as 0)"
            )
    return None


def _as_copied(layout: TensorLayout) -> TensorLayout:
    """The layout a copy of a tensor in `layout` has (dense layouts keep their strides)."""
    dtype = getattr(torch, layout.dtype)
    meta = torch.empty_strided(layout.shape, concrete_strides(layout), dtype=dtype, device="meta")
    return layout_of(meta.clone())
