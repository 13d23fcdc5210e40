"""What a model really asks of each operator: every registry call's argument layouts, scalar
parameters, aliasing and output layouts, counted per layout, with the first real inputs kept.

`controller capture-ops` fills a `CallCapture` through `record_registry_calls`' observer and
writes it as a folder (capture.json plus one safetensors fixture per layout), which
`controller generate --captured` turns into weighted workloads.
"""

import contextlib
import hashlib
import inspect
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from operators.errors import OperatorError
from operators.layouts import TensorLayout, layout_of
from operators.ops import record_registry_calls
from operators.registry import REGISTRY
from operators.safetensors_file import load_tensors, save_tensors
from operators.write_recency import WriteRecency

CAPTURE_FILE = "capture.json"
FIXTURES_FOLDER = "fixtures"
Scalar = float | int | bool | str | None


class CapturedLayout(BaseModel):
    """One operator called with one argument layout: how often, and what it looked like."""

    model_config = ConfigDict(frozen=True)

    operator: str
    key: str = Field(description="digest of operator, input layouts, scalars and aliasing")
    inputs: dict[str, TensorLayout] = Field(description="tensor arguments by parameter name")
    scalars: dict[str, Scalar] = Field(description="non-tensor arguments by parameter name")
    aliases: list[list[str]] = Field(description="groups of arguments sharing one storage")
    outputs: list[TensorLayout] = Field(description="what the model's implementation returned")
    production_outputs: list[TensorLayout] | None = Field(
        default=None, description="what the production kernel returns on the same inputs"
    )
    count: int = Field(ge=1, description="calls with this layout in the measured steps")
    just_written_calls: int | None = Field(
        default=None,
        ge=0,
        description="calls whose inputs (most of their bytes) the ops just before had written; "
        "None when writes were not watched",
    )
    fixture: str = Field(description="safetensors file of the first call's inputs")

    @property
    def production_layout_differs(self) -> bool:
        """The baseline must copy into the model's output layout to match this call."""
        return self.production_outputs is not None and self.production_outputs != self.outputs

    @property
    def inputs_just_written(self) -> bool | None:
        """Whether most calls found their inputs just written (warm); None when unknown."""
        if self.just_written_calls is None:
            return None
        return 2 * self.just_written_calls >= self.count


class Capture(BaseModel):
    """Every layout the measured steps of one driver called, with where they came from."""

    model_config = ConfigDict(frozen=True)

    driver: str
    arguments: list[str]
    steps: int
    device: str
    torch_version: str
    layouts: list[CapturedLayout]

    def counts_by_operator(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for layout in self.layouts:
            counts[layout.operator] = counts.get(layout.operator, 0) + layout.count
        return counts


class CallCapture:
    """The observer `record_registry_calls` calls: counts layouts, keeps first inputs."""

    def __init__(self, check_production: bool = True) -> None:
        self.check_production = check_production
        self._layouts: dict[str, dict] = {}
        self._fixtures: dict[str, dict[str, torch.Tensor]] = {}
        self._writes: WriteRecency | None = None
        self._starts: list[bool] = []  # per registry call in progress: inputs just written

    @contextlib.contextmanager
    def recording(self) -> Iterator["CallCapture"]:
        """Observe every registry call inside the block, and every op's writes, so each
        layout also counts the calls whose inputs were just written."""
        self._writes = WriteRecency()
        try:
            with record_registry_calls(observer=self), self._writes:
                yield self
        finally:
            self._writes = None

    def call_starting(self, name: str, args: tuple, kwargs: dict) -> None:
        """Before a registry call runs: were its inputs just written (when writes are watched)."""
        if self._writes is not None:
            tensors = [value for value in args if isinstance(value, torch.Tensor)]
            tensors += [value for value in kwargs.values() if isinstance(value, torch.Tensor)]
            self._starts.append(self._writes.call_started(tensors))

    def __call__(self, name: str, args: tuple, kwargs: dict, result: Any) -> None:
        writes = self._writes
        if writes is None:
            self._observe(name, args, kwargs, result, None)
            return
        try:
            self._observe(name, args, kwargs, result, self._starts.pop())
        finally:
            writes.call_finished(result)

    def _observe(self, name, args, kwargs, result, just_written: bool | None) -> None:
        tensors, scalars = _bind(name, args, kwargs)
        inputs = {arg: layout_of(value) for arg, value in tensors.items()}
        aliases = _alias_groups(tensors)
        key = _layout_key(name, inputs, scalars, aliases)
        if key in self._layouts:
            layout = self._layouts[key]
            layout["count"] += 1
            if just_written is not None and layout["just_written_calls"] is not None:
                layout["just_written_calls"] += int(just_written)
            return
        outputs = result if isinstance(result, tuple | list) else (result,)
        self._layouts[key] = {
            "operator": name,
            "key": key,
            "inputs": inputs,
            "scalars": scalars,
            "aliases": aliases,
            "outputs": [layout_of(output) for output in outputs],
            "production_outputs": self._production_outputs(name, args, kwargs),
            "count": 1,
            "just_written_calls": None if just_written is None else int(just_written),
            "fixture": f"{FIXTURES_FOLDER}/{name}-{key}.safetensors",
        }
        self._fixtures[key] = {arg: value.detach().clone() for arg, value in tensors.items()}

    def _production_outputs(self, name: str, args: tuple, kwargs: dict):
        if not self.check_production or name not in REGISTRY:
            return None
        preferred = REGISTRY.declaration(name).preferred
        if preferred is None:
            return None
        copies = [_layout_preserving_copy(a) if isinstance(a, torch.Tensor) else a for a in args]
        result = preferred(*copies, **kwargs)
        outputs = result if isinstance(result, tuple | list) else (result,)
        return [layout_of(output) for output in outputs]

    def layouts(self) -> list[CapturedLayout]:
        ordered = sorted(self._layouts.values(), key=lambda item: (item["operator"], item["key"]))
        return [CapturedLayout(**item) for item in ordered]

    def write(self, folder: Path, driver: str, arguments: list[str], steps: int) -> Capture:
        """Write capture.json and the fixtures into `folder` (made; must not hold a capture)."""
        folder = Path(folder)
        if (folder / CAPTURE_FILE).exists():
            raise OperatorError(f"{folder} already holds a capture; choose another --output")
        devices = {
            layout.device_type
            for item in self._layouts.values()
            for layout in item["inputs"].values()
        }
        capture = Capture(
            driver=driver,
            arguments=list(arguments),
            steps=steps,
            device=",".join(sorted(devices)) or "none",
            torch_version=torch.__version__,
            layouts=self.layouts(),
        )
        (folder / FIXTURES_FOLDER).mkdir(parents=True, exist_ok=True)
        for layout in capture.layouts:
            metadata = {"operator": layout.operator, "layout": layout.key}
            save_tensors(folder / layout.fixture, self._fixtures[layout.key], metadata)
        staged = folder / f".{CAPTURE_FILE}.tmp"
        staged.write_text(capture.model_dump_json(indent=2) + "\n")
        os.replace(staged, folder / CAPTURE_FILE)
        return capture


def load_capture(folder: Path) -> Capture:
    """A capture folder's description; its fixtures load with `load_fixture`."""
    path = Path(folder) / CAPTURE_FILE
    if not path.is_file():
        raise OperatorError(f"{folder} holds no {CAPTURE_FILE}; run `controller capture-ops`")
    try:
        return Capture.model_validate_json(path.read_text())
    except ValidationError as error:
        first = str(error).splitlines()[0]
        raise OperatorError(
            f"{path} is not a capture `controller capture-ops` wrote ({first}); capture again"
        ) from None


def load_fixture(folder: Path, layout: CapturedLayout) -> dict[str, torch.Tensor]:
    """The first call's inputs of one layout, laid out again with the captured strides."""
    tensors = load_tensors(Path(folder) / layout.fixture)
    return {name: with_layout(tensors[name], layout.inputs[name]) for name in tensors}


def with_layout(tensor: torch.Tensor, layout: TensorLayout) -> torch.Tensor:
    """`tensor`'s values in a fresh tensor on its device whose strides are the captured ones
    (size-one and empty dimensions' strides, recorded as 0, are free: the row-major one is used)."""
    strides = concrete_strides(layout)
    extent = 1 + sum(
        (size - 1) * stride for size, stride in zip(layout.shape, strides, strict=True) if size > 0
    )
    if tensor.numel() == 0:
        return torch.empty_strided(layout.shape, strides, dtype=tensor.dtype, device=tensor.device)
    dense = torch.zeros(extent, dtype=tensor.dtype, device=tensor.device)
    dense = dense.as_strided(layout.shape, strides)
    target, source = dense, tensor
    for dim, (size, stride) in enumerate(zip(layout.shape, strides, strict=True)):
        if size > 1 and stride == 0:  # a broadcast dimension holds one value
            target, source = target.narrow(dim, 0, 1), source.narrow(dim, 0, 1)
    target.copy_(source)
    return dense


def in_declared_shape(layout: TensorLayout, shape: tuple[int, ...]) -> TensorLayout:
    """The layout a captured tensor has once viewed in the operator's declared shape, as the
    evaluator passes it (a (batch, tokens, hidden) input of a row-wise operator seen as (rows,
    hidden)); row-major where no view can merge its dimensions, as a reshape then copies."""
    dtype = getattr(torch, layout.dtype)
    meta = torch.empty_strided(layout.shape, concrete_strides(layout), dtype=dtype, device="meta")
    try:
        viewed = meta.view(shape)
    except RuntimeError:
        viewed = torch.empty(shape, dtype=dtype, device="meta")
    return layout_of(viewed).model_copy(update={"device_type": layout.device_type})


def concrete_strides(layout: TensorLayout) -> tuple[int, ...]:
    """The captured strides, with each free one (a size-one or empty dimension's) set as a
    row-major tensor has it; a broadcast dimension keeps its stride 0."""
    empty = 0 in layout.shape
    strides, running = [0] * len(layout.shape), 1
    for index in reversed(range(len(layout.shape))):
        free = empty or layout.shape[index] <= 1
        strides[index] = running if free else layout.strides[index]
        running = max(running, strides[index] * max(layout.shape[index], 1))
    return tuple(strides)


def _layout_preserving_copy(tensor: torch.Tensor) -> torch.Tensor:
    """A copy of the memory `tensor` spans, viewed with its strides (clone would lay a sliced
    or broadcast tensor out row-major), so the production kernel sees the model's layouts."""
    extent = 1 + sum(
        (size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride(), strict=True)
    )
    if tensor.numel() == 0:
        return tensor.clone()
    span = torch.as_strided(tensor, (extent,), (1,), tensor.storage_offset()).clone()
    return span.as_strided(tensor.shape, tensor.stride())


def _bind(name: str, args: tuple, kwargs: dict) -> tuple[dict, dict[str, Scalar]]:
    """Arguments by the reference's parameter names (positions where it is not registered)."""
    named: dict[str, Any] = {f"arg{index}": value for index, value in enumerate(args)}
    named.update(kwargs)
    if name in REGISTRY:
        try:
            bound = inspect.signature(REGISTRY.declaration(name).reference).bind(*args, **kwargs)
            named = dict(bound.arguments)
        except TypeError:
            pass
    tensors = {k: v for k, v in named.items() if isinstance(v, torch.Tensor)}
    scalars = {k: _scalar(v) for k, v in named.items() if not isinstance(v, torch.Tensor)}
    return tensors, scalars


def _scalar(value: Any) -> Scalar:
    return value if value is None or isinstance(value, bool | int | float | str) else repr(value)


def _alias_groups(tensors: dict[str, torch.Tensor]) -> list[list[str]]:
    """Arguments that are one tensor, or views of one storage, grouped by name."""
    groups: dict[tuple, list[str]] = {}
    for name, tensor in tensors.items():
        storage = tensor.untyped_storage()
        identity = (
            (storage.data_ptr(), storage.nbytes()) if storage.nbytes() else ("id", id(tensor))
        )
        groups.setdefault(identity, []).append(name)
    return sorted(sorted(group) for group in groups.values() if len(group) > 1)


def _layout_key(name: str, inputs: dict, scalars: dict, aliases: list) -> str:
    document = {
        "operator": name,
        "inputs": {k: v.model_dump(mode="json") for k, v in inputs.items()},
        "scalars": scalars,
        "aliases": aliases,
    }
    encoded = json.dumps(document, sort_keys=True, default=repr).encode()
    return hashlib.sha256(encoded).hexdigest()[:12]
